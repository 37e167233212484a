"""ffcode.fingerprints.of_bytes (the digest kernel): r^T M s over GF(2**61 - 1) of raw bytes,
against the same form computed on Python ints, at every length near a word and row edge, for
every layout of the buffer; and its bad input refused."""
import math

import numpy as np
import pytest

from ffcode import fingerprints
from ffcode._ext import digest

P = 2**61 - 1
MASK = 2**64 - 1


def mix(x):
    """splitmix64's output, as the kernel computes it."""
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def element(key, i):
    return mix((key + i * 0xD1B54A32D192ED03) & MASK) % P


def reference(data, width, row_key, col_key):
    """The kernel's form on Python ints: 32-bit words, then the length, ``width`` a row."""
    size = len(data)
    words = [int.from_bytes(data[at:at + 4].ljust(4, b"\0"), "little")
             for at in range(0, size, 4)] + [size]
    height = -(-len(words) // width)
    words += [0] * (height * width - len(words))
    s = [element(col_key, j) for j in range(width)]
    return sum(element(row_key, i) * sum(words[i * width + j] * s[j] for j in range(width))
               for i in range(height)) % P


@pytest.mark.parametrize("size", [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1001,
                                  4096, 4099])
def test_the_kernel_is_the_form(size):
    rng = np.random.default_rng(size)
    data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
    words = (size + 3) // 4
    for width in sorted({1, 2, 3, 5, max(1, math.isqrt(words + 1)), words + 2}):
        row_key, col_key = (int(k) for k in rng.integers(0, 2**64, 2, dtype=np.uint64))
        assert digest.bilinear_bytes(data, width, row_key, col_key) == \
            reference(data, width, row_key, col_key), (size, width)


def test_extreme_words_and_keys():
    """All-ones words (the largest products) and the keys' extremes."""
    data = b"\xff" * 4000
    for row_key, col_key in ((0, 0), (MASK, MASK), (1, MASK)):
        assert digest.bilinear_bytes(data, 32, row_key, col_key) == \
            reference(data, 32, row_key, col_key)


def test_of_bytes_reads_any_buffer_alike():
    """bytes, bytearray, memoryview and a 2-D uint64 array of the same bytes: one print."""
    a = np.arange(40, dtype=np.uint64).reshape(5, 8)
    raw = a.tobytes()
    key = 2**127 + 12345
    expected = fingerprints.of_bytes(raw, key)
    for view in (bytearray(raw), memoryview(raw), a, a.view(np.uint8)):
        assert fingerprints.of_bytes(view, key) == expected
    width = max(1, math.isqrt(len(raw) // 4 + 1))
    assert expected == reference(raw, width, key >> 64, key & MASK)


def test_of_bytes_tells_every_change():
    """One bit flipped anywhere, a zero byte appended or the last byte dropped: another print
    (each escapes with probability 2 / P, for any of these keys)."""
    rng = np.random.default_rng(1)
    value = rng.integers(0, 256, 257, dtype=np.uint8).tobytes()
    for key in (0, 1, 2**100 + 7):
        base = fingerprints.of_bytes(value, key)
        for at in (0, 1, 128, 255, 256):
            flipped = bytearray(value)
            flipped[at] ^= 1 << (at % 8)
            assert fingerprints.of_bytes(flipped, key) != base
        assert fingerprints.of_bytes(value + b"\0", key) != base
        assert fingerprints.of_bytes(value[:-1], key) != base


def test_of_bytes_refuses_bad_input():
    with pytest.raises(TypeError, match="'key' must be an int"):
        fingerprints.of_bytes(b"x", 1.0)
    with pytest.raises(TypeError, match="'key' must be an int"):
        fingerprints.of_bytes(b"x", True)
    with pytest.raises(ValueError, match=r"'key' must be in \[0, 2\*\*128\)"):
        fingerprints.of_bytes(b"x", 2**128)
    with pytest.raises(ValueError, match=r"'key' must be in"):
        fingerprints.of_bytes(b"x", -1)
    with pytest.raises(TypeError, match="bytes-like"):
        fingerprints.of_bytes("text", 1)
    with pytest.raises(ValueError, match="C-contiguous"):
        fingerprints.of_bytes(np.arange(10, dtype=np.uint64)[::2], 1)
