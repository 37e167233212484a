"""The ZeroMQ master/worker runtime of ffcode (installed as ffcode.runtime).

It drives the core (field, codes, decoder) and is never imported by it.
"""
