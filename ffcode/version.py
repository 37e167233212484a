"""ffcode's version, one place for the package, its reports and its command line.

>>> from ffcode.version import __version__
>>> __version__.count(".")
2
"""
__version__ = "0.1.0"
