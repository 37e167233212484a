# Random bilinear fingerprints of raw bytes over GF(2**61 - 1): r^T M s, where M lays out the
# bytes' little-endian 32-bit words (the last one zero-padded) and then their byte count,
# row by row, ``width`` to a row. Two byte strings that differ (in any byte, or in length)
# give a nonzero M - M', which escapes uniformly random r and s with probability at most
# 2 / (2**61 - 1). r and s come from two 64-bit keys through splitmix64, so one call reads
# the bytes once and needs no table the size of the data.
#
# Each word times an s_j (< 2**32 * 2**61) goes into a 128-bit sum, two lanes per row so
# that the adds of one do not wait for the other's; a row's sum is reduced once, with the
# Mersenne fold. Single-threaded, like every kernel here.
from libc.stdint cimport uint8_t, uint64_t

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>

    typedef unsigned __int128 digest_u128;
    #define DIGEST_P ((((uint64_t)1) << 61) - 1)

    static inline uint64_t digest_mix(uint64_t x) {          /* splitmix64's output */
        x += 0x9E3779B97F4A7C15ULL;
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
        return x ^ (x >> 31);
    }

    static inline uint64_t digest_fold(digest_u128 x) {      /* x mod 2**61 - 1 */
        uint64_t lo = (uint64_t)x & DIGEST_P;
        digest_u128 hi = x >> 61;
        uint64_t t = lo + (uint64_t)(hi & DIGEST_P) + (uint64_t)(hi >> 61);
        t = (t & DIGEST_P) + (t >> 61);
        return t >= DIGEST_P ? t - DIGEST_P : t;
    }

    static inline uint64_t digest_element(uint64_t key, uint64_t index) {
        return digest_fold((digest_u128)digest_mix(key + index * 0xD1B54A32D192ED03ULL));
    }

    /* the word at t of n words of data (size bytes), the byte count at n, 0 past it */
    static inline uint64_t digest_word(const uint8_t *data, size_t size, size_t n, size_t t) {
        uint32_t w = 0;
        if (t + 1 < n || (t + 1 == n && (size & 3) == 0)) {
            memcpy(&w, data + 4 * t, 4);
            return w;
        }
        if (t + 1 == n) {
            memcpy(&w, data + 4 * t, size & 3);
            return w;
        }
        return t == n ? (uint64_t)size : 0;
    }

    static uint64_t digest_bilinear(const uint8_t *data, size_t size, size_t width,
                                    uint64_t *s, uint64_t row_key, uint64_t col_key) {
        size_t n = (size + 3) / 4, height = (n + 1 + width - 1) / width, i, j;
        size_t full = ((size & 3) ? n - 1 : n) / width;     /* rows of whole words only */
        uint64_t total = 0;
        for (j = 0; j < width; j++)
            s[j] = digest_element(col_key, j);
        for (i = 0; i < height; i++) {
            digest_u128 a = 0, b = 0;
            if (i < full) {
                const uint8_t *row = data + 4 * i * width;
                for (j = 0; j + 1 < width; j += 2) {
                    uint32_t w0, w1;
                    memcpy(&w0, row + 4 * j, 4);
                    memcpy(&w1, row + 4 * j + 4, 4);
                    a += (digest_u128)w0 * s[j];
                    b += (digest_u128)w1 * s[j + 1];
                }
                if (j < width) {
                    uint32_t w0;
                    memcpy(&w0, row + 4 * j, 4);
                    a += (digest_u128)w0 * s[j];
                }
            } else {
                for (j = 0; j < width; j++)
                    a += (digest_u128)digest_word(data, size, n, i * width + j) * s[j];
            }
            uint64_t row_value = digest_fold(a + b);
            total = digest_fold((digest_u128)total
                                + (digest_u128)digest_element(row_key, i) * row_value);
        }
        return total;
    }
    """
    uint64_t digest_bilinear(const uint8_t *data, size_t size, size_t width, uint64_t *s,
                             uint64_t row_key, uint64_t col_key) noexcept nogil

from libc.stdlib cimport free, malloc


def bilinear_bytes(const uint8_t[::1] data, Py_ssize_t width, uint64_t row_key,
                   uint64_t col_key):
    """r^T M s mod 2**61 - 1 of the bytes laid out ``width`` words to a row (see above)."""
    cdef uint64_t *s = <uint64_t *>malloc(width * sizeof(uint64_t))
    cdef uint64_t out
    if s == NULL:
        raise MemoryError()
    try:
        with nogil:
            out = digest_bilinear(&data[0] if data.shape[0] else <const uint8_t *>s,
                                  data.shape[0], width, s, row_key, col_key)
    finally:
        free(s)
    return out
