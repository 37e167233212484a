"""Compiled GF(p) kernels. Private: always called through ffcode's validating Python API."""
