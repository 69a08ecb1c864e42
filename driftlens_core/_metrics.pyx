# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled kernels of :mod:`driftlens_core.metrics` and :mod:`driftlens_core.sequences`
(documentation lives there; the pure-Python twins are in :mod:`driftlens_core._metrics_python`).

Every function here trusts its caller: :mod:`driftlens_core.metrics` validates the
input (non-negative int32 symbols below ``K``, monotone offsets) before calling in.

How ``pair_drift`` reaches tens of millions of pairs per second on one core:

* Pairs are taken in chunks of ``CHUNK``; a chunk's symbols are narrowed to bytes in
  one streaming pass, so everything the chunk touches afterwards stays in cache.
* Within a chunk, pairs whose lengths are both in 1..127 (alphabet of at most 255
  symbols) are counting-sorted by shape ``(n, m)`` and processed 32 at a time, one
  pair per byte lane; equal shapes waste no lanes. 16×16 byte transposes gather the
  32 sequences into rows (``dl_gather``); the DTW and Levenshtein dynamic programmes
  of the 32 pairs then advance together, one byte vector per cell
  (``pminub``/``paddb``/``pcmpeqb``; values stay below 255 because n, m ≤ 127), and
  the symbol histograms of the 32 lanes are counted with byte compares.
* The kernels exist as AVX2 (32 lanes per vector) and SSE2 (two halves of 16)
  intrinsics and as plain C for other CPUs; ``dl_init`` picks the widest the CPU
  runs when the module is imported (``simd_level()`` says which). No ``-march``
  flag is needed, so one build runs on any x86-64.
* The Jensen–Shannon distance from integer counts needs only look-ups of
  ``x log x`` for integers up to 2nm (see ``_js_finish``); nearly equal histograms,
  where that formula would lose digits, are recomputed with ``log1p`` terms.
* Everything else (empty sequences, longer sequences, bigger alphabets) takes a
  scalar path: Myers/Hyyrö bit-parallel Levenshtein when the shorter sequence has at
  most 64 symbols (a one-row DP beyond), one rolling row for DTW, sparse histograms
  for the JSD.
"""

import numpy as np

from cpython.list cimport PyList_GET_SIZE
from cpython.object cimport PyObject
from cpython.tuple cimport PyTuple_GET_SIZE
from libc.math cimport INFINITY, log, log1p, sqrt
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memset

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #if defined(__SSE2__)
    #include <emmintrin.h>
    #endif
    #if defined(_MSC_VER) && !defined(__clang__)
    #define restrict __restrict
    #endif
    #define DL_LANES 32
    #define DL_LANE_MAX 127
    #define DL_MIN(a, b) ((a) < (b) ? (a) : (b))

    /* DTW (0/1 cost) and Levenshtein of up to 32 pairs at once, one pair per byte lane.
       S is [NN][32] and T is [MM][32] (lane l holds pair l's symbols, padded with 255);
       lanes are sorted by n ascending and lane l's answer sits in cell (n[l]-1, m[l]-1):
       it is read out when row n[l]-1 is complete. Values stay below 255 because
       n, m <= 127 (DTW_raw <= max(n, m), Levenshtein <= max(n, m)). */
    static void dl_lane_dp_generic(const uint8_t *restrict S, const uint8_t *restrict T,
                           int NN, int MM, const int32_t *n, const int32_t *m, int nl,
                           int32_t *dtw_out, int32_t *lev_out)
    {
        uint8_t D[DL_LANE_MAX][DL_LANES], L[DL_LANE_MAX][DL_LANES];
        uint8_t dd[DL_LANES], dl[DL_LANES], ld[DL_LANES], ll[DL_LANES];
        int i, j, l, p = 0;
        for (j = 0; j < MM; j++)
            for (l = 0; l < DL_LANES; l++) { D[j][l] = 255; L[j][l] = (uint8_t)(j + 1); }
        for (i = 0; i < NN; i++) {
            const uint8_t *s = S + (size_t)i * DL_LANES;
            for (l = 0; l < DL_LANES; l++) {
                dd[l] = i ? 255 : 0;        /* D[i-1][-1] */
                dl[l] = 255;                /* D[i][-1]   */
                ld[l] = (uint8_t)i;         /* L[i-1][-1] */
                ll[l] = (uint8_t)(i + 1);   /* L[i][-1]   */
            }
            for (j = 0; j < MM; j++) {
                const uint8_t *t = T + (size_t)j * DL_LANES;
                for (l = 0; l < DL_LANES; l++) {
                    /* eq is 0xFF (= -1 mod 256) on a match: "+ 1 + eq" adds the 0/1 cost */
                    uint8_t eq = s[l] == t[l] ? 0xFF : 0;
                    uint8_t du = D[j][l], lu = L[j][l];
                    uint8_t d = (uint8_t)(DL_MIN(DL_MIN(dd[l], du), dl[l]) + 1 + eq);
                    uint8_t a = (uint8_t)(DL_MIN(lu, ll[l]) + 1);
                    uint8_t b = (uint8_t)(ld[l] + 1 + eq);
                    uint8_t lv = DL_MIN(a, b);
                    dd[l] = du; ld[l] = lu;
                    D[j][l] = d; L[j][l] = lv;
                    dl[l] = d; ll[l] = lv;
                }
            }
            while (p < nl && n[p] - 1 == i) {
                dtw_out[p] = D[m[p] - 1][p];
                lev_out[p] = L[m[p] - 1][p];
                p++;
            }
        }
    }

    /* cnt[k][l] = number of k in lane l's column of S ([rows][32]); padding 255 never counts. */
    static void dl_lane_counts_generic(const uint8_t *restrict S, int rows, int K, uint8_t *restrict cnt)
    {
        int i, k, l;
        for (k = 0; k < K; k++) {
            const uint8_t kk = (uint8_t)k;  /* a byte, so the compare stays a byte compare */
            uint8_t acc[DL_LANES] = {0};
            for (i = 0; i < rows; i++) {
                const uint8_t *s = S + (size_t)i * DL_LANES;
                for (l = 0; l < DL_LANES; l++) acc[l] = (uint8_t)(acc[l] + (s[l] == kk ? 1 : 0));
            }
            memcpy(cnt + (size_t)k * DL_LANES, acc, DL_LANES);
        }
    }

    /* The same two kernels with explicit x86 intrinsics: W lanes per vector (32 with AVX2,
       16 with SSE2, which then runs each group as two halves). The 0/1 cost c = 1 + eq is
       computed off the dependency chain, so each cell's chain is one add and one min. */
    #if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    #include <immintrin.h>
    #define DL_X86 1

    #define DL_DP_KERNEL(NAME, ATTR, VT, W, LOAD, MIN, ADD, ADDS, EQ, SET1)                      \
    ATTR static void NAME(const uint8_t *restrict S, const uint8_t *restrict T, int NN, int MM, \
                          const int32_t *n, const int32_t *m, int nl,                         \
                          int32_t *dtw_out, int32_t *lev_out)                                 \
    {                                                                                         \
        VT D[DL_LANE_MAX], L[DL_LANE_MAX];                                                    \
        const VT one = SET1(1), inf = SET1(255);                                              \
        int h, i, j, p;                                                                       \
        for (h = 0; h * (W) < nl; h++) {                                                      \
            const int lo = h * (W), hi = nl < lo + (W) ? nl : lo + (W);                       \
            p = lo;                                                                           \
            for (j = 0; j < MM; j++) { D[j] = inf; L[j] = SET1(j + 1); }                      \
            for (i = 0; i < NN && p < hi; i++) {                                              \
                const VT s = LOAD(S + (size_t)i * DL_LANES + lo);                             \
                VT dd = i ? inf : SET1(0), dl = inf, ld = SET1(i), ll = SET1(i + 1);         \
                for (j = 0; j < MM; j++) {                                                    \
                    const VT c = ADD(one, EQ(s, LOAD(T + (size_t)j * DL_LANES + lo)));       \
                    const VT du = D[j], lu = L[j];                                            \
                    const VT d = MIN(ADDS(MIN(dd, du), c), ADDS(dl, c)); /* 255 = inf sticks */\
                    const VT lv = MIN(MIN(ADD(lu, one), ADD(ld, c)), ADD(ll, one));           \
                    dd = du; ld = lu; D[j] = d; L[j] = lv; dl = d; ll = lv;                   \
                }                                                                             \
                for (; p < hi && n[p] - 1 == i; p++) {                                        \
                    dtw_out[p] = ((const uint8_t *)&D[m[p] - 1])[p - lo];                     \
                    lev_out[p] = ((const uint8_t *)&L[m[p] - 1])[p - lo];                     \
                }                                                                             \
            }                                                                                 \
        }                                                                                     \
    }

    /* Four bins at a time so that four independent accumulators stay in registers;
       cnt has room for K rounded up to 4 (K <= 32). */
    #define DL_COUNT_KERNEL(NAME, ATTR, VT, W, LOAD, STORE, SUB, EQ, SET1, ZERO)             \
    ATTR static void NAME(const uint8_t *restrict S, int rows, int K, uint8_t *restrict cnt) \
    {                                                                                         \
        int h, i, k;                                                                          \
        for (h = 0; h * (W) < DL_LANES; h++) {                                                \
            const int lo = h * (W);                                                           \
            for (k = 0; k < K; k += 4) {                                                      \
                VT a0 = ZERO(), a1 = ZERO(), a2 = ZERO(), a3 = ZERO();                        \
                const VT k0 = SET1(k), k1 = SET1(k + 1), k2 = SET1(k + 2), k3 = SET1(k + 3);  \
                for (i = 0; i < rows; i++) {                                                  \
                    const VT s = LOAD(S + (size_t)i * DL_LANES + lo);                         \
                    a0 = SUB(a0, EQ(s, k0)); a1 = SUB(a1, EQ(s, k1));                         \
                    a2 = SUB(a2, EQ(s, k2)); a3 = SUB(a3, EQ(s, k3));                         \
                }                                                                             \
                STORE(cnt + (size_t)k * DL_LANES + lo, a0);                                   \
                STORE(cnt + (size_t)(k + 1) * DL_LANES + lo, a1);                             \
                STORE(cnt + (size_t)(k + 2) * DL_LANES + lo, a2);                             \
                STORE(cnt + (size_t)(k + 3) * DL_LANES + lo, a3);                             \
            }                                                                                 \
        }                                                                                     \
    }

    #define DL_L256(p) _mm256_loadu_si256((const __m256i *)(p))
    #define DL_S256(p, v) _mm256_storeu_si256((__m256i *)(p), (v))
    #define DL_B256(x) _mm256_set1_epi8((char)(x))
    #define DL_L128(p) _mm_loadu_si128((const __m128i *)(p))
    #define DL_S128(p, v) _mm_storeu_si128((__m128i *)(p), (v))
    #define DL_B128(x) _mm_set1_epi8((char)(x))
    DL_DP_KERNEL(dl_lane_dp_avx2, __attribute__((target("avx2"))), __m256i, 32, DL_L256,
                 _mm256_min_epu8, _mm256_add_epi8, _mm256_adds_epu8, _mm256_cmpeq_epi8, DL_B256)
    DL_DP_KERNEL(dl_lane_dp_sse2, , __m128i, 16, DL_L128,
                 _mm_min_epu8, _mm_add_epi8, _mm_adds_epu8, _mm_cmpeq_epi8, DL_B128)
    DL_COUNT_KERNEL(dl_lane_counts_avx2, __attribute__((target("avx2"))), __m256i, 32, DL_L256,
                    DL_S256, _mm256_sub_epi8, _mm256_cmpeq_epi8, DL_B256, _mm256_setzero_si256)
    DL_COUNT_KERNEL(dl_lane_counts_sse2, , __m128i, 16, DL_L128,
                    DL_S128, _mm_sub_epi8, _mm_cmpeq_epi8, DL_B128, _mm_setzero_si128)
    #endif

    /* Square root without the errno branch (arguments are never negative here). */
    #if defined(__SSE2__)
    static inline double dl_sqrt(double x) { return _mm_cvtsd_f64(_mm_sqrt_sd(_mm_setzero_pd(), _mm_set_sd(x))); }
    #else
    #include <math.h>
    static inline double dl_sqrt(double x) { return sqrt(x); }
    #endif

    /* Gather 32 byte sequences into lane rows: S[i][l] = symbol i of lane l, 255 past its
       end (and for lanes l >= nl), for i < rows rounded up to 16. Lane l's bytes start at
       base + start[l]; up to 15 bytes past a sequence's end are read (the buffer is padded).
       With SSE2 each block of 16 lanes x 16 symbols is one 16x16 byte transpose. */
    #if defined(__SSE2__)
    static inline void dl_transpose16(__m128i *a)
    {
        __m128i b[16], c[16], d[2][4][2];
        int k, q, o, blk, h;
        for (k = 0; k < 8; k++) {          /* 16-bit units: lanes (2k, 2k+1) at symbol j */
            b[2 * k] = _mm_unpacklo_epi8(a[2 * k], a[2 * k + 1]);      /* j 0..7  */
            b[2 * k + 1] = _mm_unpackhi_epi8(a[2 * k], a[2 * k + 1]);  /* j 8..15 */
        }
        for (q = 0; q < 4; q++) {          /* 32-bit units: lanes 4q..4q+3 at symbol j */
            c[4 * q + 0] = _mm_unpacklo_epi16(b[4 * q], b[4 * q + 2]);          /* j 0..3   */
            c[4 * q + 1] = _mm_unpackhi_epi16(b[4 * q], b[4 * q + 2]);          /* j 4..7   */
            c[4 * q + 2] = _mm_unpacklo_epi16(b[4 * q + 1], b[4 * q + 3]);      /* j 8..11  */
            c[4 * q + 3] = _mm_unpackhi_epi16(b[4 * q + 1], b[4 * q + 3]);      /* j 12..15 */
        }
        for (o = 0; o < 2; o++)            /* 64-bit units: lanes 8o..8o+7 at symbol j */
            for (blk = 0; blk < 4; blk++) {
                d[o][blk][0] = _mm_unpacklo_epi32(c[8 * o + blk], c[8 * o + 4 + blk]);
                d[o][blk][1] = _mm_unpackhi_epi32(c[8 * o + blk], c[8 * o + 4 + blk]);
            }
        for (blk = 0; blk < 4; blk++)      /* rows: lanes 0..15 at symbol j */
            for (h = 0; h < 2; h++) {
                a[4 * blk + 2 * h] = _mm_unpacklo_epi64(d[0][blk][h], d[1][blk][h]);
                a[4 * blk + 2 * h + 1] = _mm_unpackhi_epi64(d[0][blk][h], d[1][blk][h]);
            }
    }
    #endif

    static void dl_gather_generic(const uint8_t *base, const int64_t *start, const int32_t *len,
                                  int nl, int rows, uint8_t *S)
    {
        int rows16 = (rows + 15) & ~15, l, i;
        memset(S, 255, (size_t)rows16 * DL_LANES);
        for (l = 0; l < nl; l++)
            for (i = 0; i < len[l]; i++)
                S[(size_t)i * DL_LANES + l] = base[start[l] + i];
    }

    #if defined(__SSE2__)
    static void dl_gather_sse2(const uint8_t *base, const int64_t *start, const int32_t *len,
                               int nl, int rows, uint8_t *S)
    {
        int rb, l, i;
        const __m128i all = _mm_set1_epi8((char)0xFF);
        const __m128i idx = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        int half;
        for (rb = 0; rb < rows; rb += 16) {
            for (half = 0; half < 2; half++) {
                __m128i a[16];
                for (i = 0; i < 16; i++) {
                    int rem;
                    l = 16 * half + i;
                    rem = l < nl ? len[l] - rb : 0;
                    if (rem <= 0) {
                        a[i] = all;
                    } else {
                        __m128i v = _mm_loadu_si128((const __m128i *)(base + start[l] + rb));
                        __m128i keep = _mm_cmplt_epi8(idx, _mm_set1_epi8((char)(rem > 16 ? 16 : rem)));
                        a[i] = _mm_or_si128(v, _mm_andnot_si128(keep, all));
                    }
                }
                dl_transpose16(a);
                for (i = 0; i < 16; i++)
                    _mm_storeu_si128((__m128i *)(S + (size_t)(rb + i) * DL_LANES + 16 * half), a[i]);
            }
        }
    }
    #endif

    /* Ask for the chunk's bytes ahead of the (shape-ordered, so random) reads. */
    static void dl_prefetch(const uint8_t *p, int64_t n)
    {
        int64_t i;
    #if defined(__GNUC__)
        for (i = 0; i < n; i += 64) __builtin_prefetch(p + i);
    #else
        (void)p; (void)n; (void)i;
    #endif
    }

    /* Narrow symbols known to be below 256 to bytes. */
    static void dl_narrow(const int32_t *restrict src, uint8_t *restrict dst, int64_t n)
    {
        int64_t i;
        for (i = 0; i < n; i++) dst[i] = (uint8_t)src[i];
    }

    typedef void (*dl_dp_fn)(const uint8_t *, const uint8_t *, int, int, const int32_t *,
                             const int32_t *, int, int32_t *, int32_t *);
    typedef void (*dl_count_fn)(const uint8_t *, int, int, uint8_t *);
    typedef void (*dl_gather_fn)(const uint8_t *, const int64_t *, const int32_t *, int, int,
                                 uint8_t *);
    static dl_dp_fn dl_lane_dp = dl_lane_dp_generic;
    static dl_count_fn dl_lane_counts = dl_lane_counts_generic;
    static dl_gather_fn dl_gather = dl_gather_generic;
    static const char *dl_simd = "generic";

    /* Pick the widest kernels this CPU runs (called once at import). */
    static void dl_init(int max_level)  /* 0 generic C, 1 up to SSE2, 2 up to AVX2 */
    {
        dl_lane_dp = dl_lane_dp_generic;
        dl_lane_counts = dl_lane_counts_generic;
        dl_gather = dl_gather_generic;
        dl_simd = "generic";
    #if defined(__SSE2__)
        if (max_level >= 1) dl_gather = dl_gather_sse2;
    #endif
    #if defined(DL_X86)
        if (max_level < 1) return;
        __builtin_cpu_init();
        if (max_level >= 2 && __builtin_cpu_supports("avx2")) {
            dl_lane_dp = dl_lane_dp_avx2;
            dl_lane_counts = dl_lane_counts_avx2;
            dl_simd = "avx2";
        } else if (__builtin_cpu_supports("sse2")) {
            dl_lane_dp = dl_lane_dp_sse2;
            dl_lane_counts = dl_lane_counts_sse2;
            dl_simd = "sse2";
        }
    #endif
    }
    """
    void dl_lane_dp(const uint8_t *S, const uint8_t *T, int NN, int MM,
                    const int32_t *n, const int32_t *m, int nl,
                    int32_t *dtw_out, int32_t *lev_out) noexcept nogil
    void dl_lane_counts(const uint8_t *S, int rows, int K, uint8_t *cnt) noexcept nogil
    void dl_init(int max_level) noexcept nogil
    const char *dl_simd
    double dl_sqrt(double x) noexcept nogil
    void dl_narrow(const int32_t *src, uint8_t *dst, int64_t n) noexcept nogil
    void dl_prefetch(const uint8_t *p, int64_t n) noexcept nogil
    void dl_gather(const uint8_t *base, const int64_t *start, const int32_t *len,
                   int nl, int rows, uint8_t *S) noexcept nogil

cdef enum:
    LANES = 32  # pairs per lane group (must match DL_LANES)
    LANE_MAX = 127  # longest sequence of the lane path (byte-sized DP values)
    DENSE_BINS = 32  # histograms with at most this many bins are counted with lane vectors
    INF32 = 1073741824
    CHUNK = 4096  # pairs sorted and gathered at a time (their bytes stay in cache)

# Below this squared distance the x·log x table formula loses digits; use the log1p form.
cdef double PRECISE_BELOW = 1e-3

cdef double LOG2 = log(2.0)

dl_init(2)


def simd_level():
    """The lane kernels in use: ``"avx2"``, ``"sse2"`` or ``"generic"`` (plain C)."""
    return dl_simd.decode()


def _limit_simd(str level):
    """Use lane kernels no wider than ``level`` (tests run every variant); returns the choice."""
    dl_init({"generic": 0, "sse2": 1, "avx2": 2}[level])
    return simd_level()


# ---------------------------------------------------------------- scalar kernels


cdef inline int32_t _min3(int32_t a, int32_t b, int32_t c) noexcept nogil:
    if b < a:
        a = b
    return c if c < a else a


cdef int32_t _dtw01_raw(const int32_t *a, Py_ssize_t n, const int32_t *b, Py_ssize_t m,
                        int32_t *row) noexcept nogil:
    """DTW_raw under the 0/1 cost with one rolling row (``row`` holds ``m`` ints)."""
    cdef Py_ssize_t i, j
    cdef int32_t diag, left, up, v, s
    for j in range(m):
        row[j] = INF32
    for i in range(n):
        diag = 0 if i == 0 else INF32
        left = INF32
        s = a[i]
        for j in range(m):
            up = row[j]
            v = _min3(diag, up, left) + (s != b[j])
            diag = up
            row[j] = v
            left = v
    return row[m - 1]


cdef int32_t _lev_myers(const int32_t *p, Py_ssize_t np_, const int32_t *t, Py_ssize_t nt,
                        uint64_t *peq) noexcept nogil:
    """Myers/Hyyrö bit-parallel edit distance; ``1 <= np_ <= 64``; ``peq`` zeroed on entry and exit."""
    cdef Py_ssize_t i
    cdef uint64_t pv = ~(<uint64_t>0), mv = 0, eq, xv, xh, ph, mh
    cdef uint64_t last = (<uint64_t>1) << (np_ - 1)
    cdef int32_t score = <int32_t>np_
    for i in range(np_):
        peq[p[i]] |= (<uint64_t>1) << i
    for i in range(nt):
        eq = peq[t[i]]
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | ~(xh | pv)
        mh = pv & xh
        if ph & last:
            score += 1
        elif mh & last:
            score -= 1
        ph = (ph << 1) | 1
        mh = mh << 1
        pv = mh | ~(xv | ph)
        mv = ph & xv
    for i in range(np_):
        peq[p[i]] = 0
    return score


cdef int32_t _lev_dp(const int32_t *a, Py_ssize_t n, const int32_t *b, Py_ssize_t m,
                     int32_t *row) noexcept nogil:
    """Levenshtein by the textbook DP with one row of ``m + 1`` ints."""
    cdef Py_ssize_t i, j
    cdef int32_t diag, v, s
    for j in range(m + 1):
        row[j] = <int32_t>j
    for i in range(n):
        diag = row[0]
        row[0] = <int32_t>(i + 1)
        s = a[i]
        for j in range(m):
            v = _min3(row[j + 1] + 1, row[j] + 1, diag + (s != b[j]))
            diag = row[j + 1]
            row[j + 1] = v
    return row[m]


cdef int32_t _lev(const int32_t *a, Py_ssize_t n, const int32_t *b, Py_ssize_t m,
                  uint64_t *peq, int32_t *row) noexcept nogil:
    """Edit distance; the shorter sequence is the bit-parallel pattern when it fits a word."""
    if n == 0:
        return <int32_t>m
    if m == 0:
        return <int32_t>n
    if n > m:
        a, b = b, a
        n, m = m, n
    if n <= 64:
        return _lev_myers(a, n, b, m, peq)
    return _lev_dp(b, m, a, n, row)


cdef inline double _xlogx(int64_t x, const double *xl, Py_ssize_t nxl) noexcept nogil:
    if x < nxl:
        return xl[x]
    return <double>x * log(<double>x)


cdef inline double _js_term_precise(int64_t a, int64_t b) noexcept nogil:
    """``a log(2a/w) + b log(2b/w)`` with ``w = a + b``, accurate when ``a ≈ b``."""
    cdef double w = <double>(a + b)
    if a == 0:
        return <double>b * LOG2
    if b == 0:
        return <double>a * LOG2
    return <double>a * log1p(<double>(a - b) / w) + <double>b * log1p(<double>(b - a) / w)


cdef inline double _js_finish(double g_sum, int64_t n, int64_t m) noexcept nogil:
    """Squared JS distance from ``Σ_k [w log w - a log a - b log b]`` (a = m·cS, b = n·cT).

    With p = cS/n, q = cT/m and h = (p + q)/2, 2nm·JS_nats = Σ_k [a log(2a/w) + b log(2b/w)]
    = 2nm·log 2 - Σ_k g_k, so d² = JS_nats / log 2 = 1 - Σ_k g_k / (2nm log 2).
    """
    return 1.0 - g_sum / (<double>(2 * n * m) * LOG2)


cdef double _js_sparse(const int32_t *a, Py_ssize_t n, const int32_t *b, Py_ssize_t m,
                       int32_t *cs, int32_t *ct, const double *xl, Py_ssize_t nxl) noexcept nogil:
    """JS distance of two non-empty sequences with scratch histograms ``cs``/``ct`` (zero on entry and exit).

    A visited symbol of ``a`` gets its count negated, so each distinct symbol counts once.
    """
    cdef Py_ssize_t i
    cdef int32_t s, c
    cdef int64_t x, y
    cdef double g = 0.0, d2 = 0.0
    cdef bint differ = False
    for i in range(n):
        cs[a[i]] += 1
    for i in range(m):
        ct[b[i]] += 1
    for i in range(n):
        s = a[i]
        c = cs[s]
        if c <= 0:
            continue
        cs[s] = -c
        x = m * <int64_t>c
        y = n * <int64_t>ct[s]
        if x != y:
            differ = True
        if y != 0:  # symbols on one side only contribute g = 0
            g += _xlogx(x + y, xl, nxl) - _xlogx(x, xl, nxl) - _xlogx(y, xl, nxl)
    for i in range(m):
        if cs[b[i]] == 0:
            differ = True  # a symbol of b missing from a
    if differ:
        d2 = _js_finish(g, n, m)
    if differ and d2 < PRECISE_BELOW:
        g = 0.0
        for i in range(n):
            s = a[i]
            c = cs[s]
            if c >= 0:
                continue
            g += _js_term_precise(-m * <int64_t>c, n * <int64_t>ct[s])
            cs[s] = 0
            ct[s] = 0
        for i in range(m):
            s = b[i]
            if ct[s] == 0:
                continue
            g += _js_term_precise(0, n * <int64_t>ct[s])
            ct[s] = 0
        d2 = g / (<double>(2 * n * m) * LOG2)
    else:
        for i in range(n):
            cs[a[i]] = 0
            ct[a[i]] = 0
        for i in range(m):
            ct[b[i]] = 0
    return dl_sqrt(d2) if d2 > 0.0 else 0.0


cdef double _js_dense(const uint8_t *cnt_s, const uint8_t *cnt_t, int lane, int K,
                      int64_t n, int64_t m, const double *xl) noexcept nogil:
    """JS distance of lane ``lane`` from byte-vector histograms ``[K][32]`` (table covers 2nm).

    No test for equal histograms is needed: they give d² ≈ 0 in the table formula, so
    they take the log1p form, whose terms are exactly 0 for equal bins.
    """
    cdef int k
    cdef int64_t x, y
    cdef double g = 0.0, d2
    for k in range(K):
        x = m * cnt_s[k * LANES + lane]
        y = n * cnt_t[k * LANES + lane]
        g += xl[x + y] - xl[x] - xl[y]
    d2 = _js_finish(g, n, m)
    if d2 < PRECISE_BELOW:
        g = 0.0
        for k in range(K):
            x = m * cnt_s[k * LANES + lane]
            y = n * cnt_t[k * LANES + lane]
            if x != 0 or y != 0:
                g += _js_term_precise(x, y)
        d2 = g / (<double>(2 * n * m) * LOG2)
    return dl_sqrt(d2) if d2 > 0.0 else 0.0


cdef double[::1] _xlogx_table(Py_ssize_t size):
    t = np.arange(size, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = t * np.log(t)
    if size > 0:
        t[0] = 0.0
    return t


# ---------------------------------------------------------------- single pairs


def levenshtein(const int32_t[::1] a, const int32_t[::1] b, Py_ssize_t K):
    """Edit distance of two validated sequences with symbols below ``K``."""
    cdef uint64_t[::1] peq = np.zeros(max(K, 1), dtype=np.uint64)
    cdef int32_t[::1] row = np.empty(min(a.shape[0], b.shape[0]) + 2, dtype=np.int32)
    cdef int32_t r
    with nogil:
        r = _lev(&a[0] if a.shape[0] else NULL, a.shape[0],
                 &b[0] if b.shape[0] else NULL, b.shape[0], &peq[0], &row[0])
    return int(r)


def dtw01(const int32_t[::1] a, const int32_t[::1] b):
    """Normalised DTW under the 0/1 cost of two non-empty validated sequences."""
    cdef Py_ssize_t n = a.shape[0], m = b.shape[0]
    cdef int32_t[::1] row = np.empty(m, dtype=np.int32)
    cdef int32_t r
    with nogil:
        r = _dtw01_raw(&a[0], n, &b[0], m, &row[0])
    return r / <double>(n if n > m else m)


def js(const int32_t[::1] a, const int32_t[::1] b, Py_ssize_t K):
    """Jensen–Shannon distance of two non-empty validated sequences with symbols below ``K``."""
    cdef Py_ssize_t n = a.shape[0], m = b.shape[0]
    cdef int32_t[::1] cs = np.zeros(K, dtype=np.int32)
    cdef int32_t[::1] ct = np.zeros(K, dtype=np.int32)
    cdef Py_ssize_t nxl = min(2 * n * m + 1, 1 << 16)
    cdef double[::1] xl = _xlogx_table(nxl)
    cdef double r
    with nogil:
        r = _js_sparse(&a[0], n, &b[0], m, &cs[0], &ct[0], &xl[0], nxl)
    return r


def dtw_cost(const int32_t[::1] a, const int32_t[::1] b, const double[:, ::1] cost):
    """Normalised DTW with local cost ``cost[a_i, b_j]`` (non-empty validated sequences)."""
    cdef Py_ssize_t n = a.shape[0], m = b.shape[0], i, j
    cdef double[::1] row = np.empty(m, dtype=np.float64)
    cdef double diag, left, up, v
    with nogil:
        for j in range(m):
            row[j] = INFINITY
        for i in range(n):
            diag = 0.0 if i == 0 else INFINITY
            left = INFINITY
            for j in range(m):
                up = row[j]
                v = diag
                if up < v:
                    v = up
                if left < v:
                    v = left
                v = v + cost[a[i], b[j]]
                diag = up
                row[j] = v
                left = v
    return row[m - 1] / <double>(n if n > m else m)


def dtw_embed(const int32_t[::1] a, const int32_t[::1] b, const double[:, ::1] emb):
    """Normalised DTW with local cost ``‖emb[a_i] − emb[b_j]‖₂`` (non-empty validated sequences)."""
    cdef Py_ssize_t n = a.shape[0], m = b.shape[0], i, j, k, dim = emb.shape[1]
    cdef double[::1] row = np.empty(m, dtype=np.float64)
    cdef double diag, left, up, v, c, t
    with nogil:
        for j in range(m):
            row[j] = INFINITY
        for i in range(n):
            diag = 0.0 if i == 0 else INFINITY
            left = INFINITY
            for j in range(m):
                c = 0.0
                for k in range(dim):
                    t = emb[a[i], k] - emb[b[j], k]
                    c = c + t * t
                up = row[j]
                v = diag
                if up < v:
                    v = up
                if left < v:
                    v = left
                v = v + sqrt(c)
                diag = up
                row[j] = v
                left = v
    return row[m - 1] / <double>(n if n > m else m)


# ---------------------------------------------------------------- batched pairs


cdef void _lane_groups(const uint8_t *b8, const uint8_t *o8, Py_ssize_t b0, Py_ssize_t o0,
                       const int32_t *bsym, const int64_t *boff,
                       const int32_t *osym, const int64_t *ooff,
                       const int64_t *order, Py_ssize_t nlane, int K, double alpha,
                       const double *xl, Py_ssize_t nxl, int32_t *cs, int32_t *ct,
                       double *out_dtw, double *out_lev, double *out_jsd,
                       double *out_sri) noexcept nogil:
    """Lane path for pairs ``order[:nlane]`` (sorted by shape) of one chunk.

    ``b8``/``o8`` hold the chunk's symbols as bytes, starting at symbol ``b0``/``o0``.
    """
    cdef uint8_t S[(LANE_MAX + 1) * LANES]
    cdef uint8_t T[(LANE_MAX + 1) * LANES]
    cdef uint8_t cnt_s[DENSE_BINS * LANES]
    cdef uint8_t cnt_t[DENSE_BINS * LANES]
    cdef int32_t ln[LANES]
    cdef int32_t lm[LANES]
    cdef int32_t dtw_raw[LANES]
    cdef int32_t lev_raw[LANES]
    cdef int64_t lp[LANES]
    cdef int64_t bst[LANES]
    cdef int64_t ost[LANES]
    cdef Py_ssize_t g, p
    cdef int l, nl, NN, MM, n, m, mx
    cdef double dj, dl_
    cdef bint dense = K <= DENSE_BINS
    g = 0
    while g < nlane:
        nl = LANES if nlane - g >= LANES else <int>(nlane - g)
        NN = 0
        MM = 0
        for l in range(nl):
            p = order[g + l]
            lp[l] = p
            ln[l] = <int32_t>(boff[p + 1] - boff[p])
            lm[l] = <int32_t>(ooff[p + 1] - ooff[p])
            bst[l] = boff[p] - b0
            ost[l] = ooff[p] - o0
            if ln[l] > NN:
                NN = ln[l]
            if lm[l] > MM:
                MM = lm[l]
        dl_gather(b8, bst, ln, nl, NN, S)
        dl_gather(o8, ost, lm, nl, MM, T)
        dl_lane_dp(S, T, NN, MM, ln, lm, nl, dtw_raw, lev_raw)
        if dense:
            dl_lane_counts(S, NN, K, cnt_s)
            dl_lane_counts(T, MM, K, cnt_t)
        for l in range(nl):
            p = lp[l]
            n = ln[l]
            m = lm[l]
            mx = n if n > m else m
            if dense:
                dj = _js_dense(cnt_s, cnt_t, l, K, n, m, xl)
            else:
                dj = _js_sparse(bsym + boff[p], n, osym + ooff[p], m, cs, ct, xl, nxl)
            dl_ = lev_raw[l] / <double>mx
            out_dtw[p] = dtw_raw[l] / <double>mx
            out_lev[p] = dl_
            out_jsd[p] = dj
            out_sri[p] = alpha * dl_ + (1.0 - alpha) * dj
        g += nl


cdef inline bint _lane_pair(Py_ssize_t n, Py_ssize_t m, bint lanes_ok) noexcept nogil:
    return lanes_ok and 1 <= n <= LANE_MAX and 1 <= m <= LANE_MAX


def pair_drift(const int32_t[::1] bsym, const int64_t[::1] boff,
               const int32_t[::1] osym, const int64_t[::1] ooff,
               Py_ssize_t K, double alpha,
               const uint8_t[::1] bbytes=None, const uint8_t[::1] obytes=None):
    """DTW, normalised Levenshtein, JS distance and SRI of every pair ``(base_i, other_i)``.

    Returns four new float64 arrays. Inputs are packed, validated sequences with symbols
    below ``K`` (see :class:`driftlens_core.sequences.PackedSequences`); ``bbytes`` and
    ``obytes`` may give the same symbols as bytes (K <= 255) followed by 16 bytes of
    padding, which saves narrowing them here.

    Pairs are taken in chunks of ``CHUNK`` so that the chunk's symbols (as bytes) and
    results stay in cache while the chunk is counting-sorted by shape and gathered into
    lane groups.
    """
    cdef Py_ssize_t N = boff.shape[0] - 1
    if N < 0 or ooff.shape[0] - 1 != N:
        raise ValueError("offsets of base and other must describe the same number of sequences")
    if N > 0 and (boff[N] > bsym.shape[0] or ooff[N] > osym.shape[0]):
        raise ValueError("offsets point past the end of the symbols")
    dtw_a = np.empty(N, dtype=np.float64)
    lev_a = np.empty(N, dtype=np.float64)
    jsd_a = np.empty(N, dtype=np.float64)
    sri_a = np.empty(N, dtype=np.float64)
    if N == 0:
        return dtw_a, lev_a, jsd_a, sri_a
    cdef double[::1] vdtw = dtw_a, vlev = lev_a, vjsd = jsd_a, vsri = sri_a
    cdef Py_ssize_t p, n, m, nlane = 0, maxn = 0, maxm = 0, maxlen = 0, nscalar = 0, key
    cdef Py_ssize_t c0, c1, bspan = 0, ospan = 0
    cdef bint lanes_ok = K <= 255
    cdef bint have_bytes = bbytes is not None and obytes is not None and lanes_ok
    if have_bytes and (bbytes.shape[0] < bsym.shape[0] + 16 or obytes.shape[0] < osym.shape[0] + 16):
        raise ValueError("byte copies of the symbols must be padded with 16 bytes")
    with nogil:
        for p in range(N):
            n = boff[p + 1] - boff[p]
            m = ooff[p + 1] - ooff[p]
            if _lane_pair(n, m, lanes_ok):
                nlane += 1
                if n > maxn:
                    maxn = n
                if m > maxm:
                    maxm = m
            else:
                nscalar += 1
                if n > maxlen:
                    maxlen = n
                if m > maxlen:
                    maxlen = m
        if nlane and not have_bytes:
            c0 = 0
            while c0 < N:
                c1 = c0 + CHUNK if c0 + CHUNK < N else N
                if boff[c1] - boff[c0] > bspan:
                    bspan = boff[c1] - boff[c0]
                if ooff[c1] - ooff[c0] > ospan:
                    ospan = ooff[c1] - ooff[c0]
                c0 = c1
    cdef int64_t[::1] order = np.empty(CHUNK, dtype=np.int64)
    cdef int64_t[::1] bucket = np.empty(maxn * maxm + 1, dtype=np.int64)
    # + 16: dl_gather reads up to 15 bytes past a sequence
    cdef const uint8_t[::1] b8 = bbytes if have_bytes else np.zeros(bspan + 16, dtype=np.uint8)
    cdef const uint8_t[::1] o8 = obytes if have_bytes else np.zeros(ospan + 16, dtype=np.uint8)
    # x log x for every integer the lane path can meet (a + b <= 2nm)
    cdef Py_ssize_t nxl = max(2 * maxn * maxm + 1, min(2 * maxlen * maxlen + 1, 1 << 16))
    cdef double[::1] xl = _xlogx_table(nxl)
    cdef Py_ssize_t kk = K if K > 0 else 1
    cdef int32_t[::1] cs = np.zeros(kk, dtype=np.int32)
    cdef int32_t[::1] ct = np.zeros(kk, dtype=np.int32)
    cdef uint64_t[::1] peq = np.zeros(kk if nscalar else 1, dtype=np.uint64)
    cdef int32_t[::1] row = np.empty(maxlen + 2, dtype=np.int32)
    cdef Py_ssize_t total, c, nchunk, i, b0, o0
    cdef double dd, dl_, dj
    with nogil:
        if nlane:
            c1 = 0
            while c1 < N:
                c0 = c1
                c1 = c0 + CHUNK if c0 + CHUNK < N else N
                # counting sort of the chunk's lane pairs by shape (n, m)
                memset(&bucket[0], 0, (maxn * maxm + 1) * sizeof(int64_t))
                nchunk = 0
                for p in range(c0, c1):
                    n = boff[p + 1] - boff[p]
                    m = ooff[p + 1] - ooff[p]
                    if _lane_pair(n, m, lanes_ok):
                        bucket[(n - 1) * maxm + (m - 1) + 1] += 1
                        nchunk += 1
                if nchunk == 0:
                    continue
                total = 0
                for key in range(maxn * maxm + 1):
                    total += bucket[key]
                    bucket[key] = total
                for p in range(c0, c1):
                    n = boff[p + 1] - boff[p]
                    m = ooff[p + 1] - ooff[p]
                    if _lane_pair(n, m, lanes_ok):
                        key = (n - 1) * maxm + (m - 1)
                        c = bucket[key]
                        order[c] = p
                        bucket[key] = c + 1
                if have_bytes:
                    b0 = 0
                    o0 = 0
                    dl_prefetch(&b8[0] + boff[c0], boff[c1] - boff[c0])
                    dl_prefetch(&o8[0] + ooff[c0], ooff[c1] - ooff[c0])
                else:
                    # one streaming pass: the chunk's symbols as bytes (all below K <= 255)
                    b0 = boff[c0]
                    o0 = ooff[c0]
                    dl_narrow(&bsym[0] + b0, <uint8_t *>&b8[0], boff[c1] - b0)
                    dl_narrow(&osym[0] + o0, <uint8_t *>&o8[0], ooff[c1] - o0)
                _lane_groups(&b8[0], &o8[0], b0, o0,
                             &bsym[0] if bsym.shape[0] else NULL, &boff[0],
                             &osym[0] if osym.shape[0] else NULL, &ooff[0],
                             &order[0], nchunk, <int>K, alpha, &xl[0], nxl, &cs[0], &ct[0],
                             &vdtw[0], &vlev[0], &vjsd[0], &vsri[0])
        if nscalar:
            for p in range(N):
                n = boff[p + 1] - boff[p]
                m = ooff[p + 1] - ooff[p]
                if _lane_pair(n, m, lanes_ok):
                    continue
                if n == 0 and m == 0:
                    vdtw[p] = 0.0
                    vlev[p] = 0.0
                    vjsd[p] = 0.0
                    vsri[p] = 0.0
                    continue
                if n == 0 or m == 0:
                    vdtw[p] = 1.0
                    vlev[p] = 1.0
                    vjsd[p] = 1.0
                    vsri[p] = 1.0
                    continue
                dd = _dtw01_raw(&bsym[boff[p]], n, &osym[ooff[p]], m, &row[0]) / <double>(
                    n if n > m else m)
                dl_ = _lev(&bsym[boff[p]], n, &osym[ooff[p]], m, &peq[0], &row[0]) / <double>(
                    n if n > m else m)
                dj = _js_sparse(&bsym[boff[p]], n, &osym[ooff[p]], m, &cs[0], &ct[0], &xl[0], nxl)
                vdtw[p] = dd
                vlev[p] = dl_
                vjsd[p] = dj
                vsri[p] = alpha * dl_ + (1.0 - alpha) * dj
    return dtw_a, lev_a, jsd_a, sri_a


# ---------------------------------------------------------------- packing


cdef extern from "Python.h":
    # PyObject* versions, so the loop below touches no reference counts
    bint _is_int "PyLong_Check" (PyObject *o)
    long long _as_long_long "PyLong_AsLongLongAndOverflow" (PyObject *o, int *overflow)
    PyObject **_fast_items "PySequence_Fast_ITEMS" (object o)


def pack_lists(list seqs, long long max_symbol):
    """Pack a list of lists/tuples of plain ints into (int32 symbols, int64 offsets).

    Returns ``None`` as soon as anything is not a list/tuple of ints in
    ``[0, max_symbol]``; the caller then takes its careful path, which names the problem.
    """
    cdef Py_ssize_t n = len(seqs), i, j, size, total = 0, pos = 0
    cdef object seq
    cdef PyObject **items
    cdef long long v
    cdef int overflow = 0
    offsets = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] off = offsets
    off[0] = 0
    for i in range(n):
        seq = seqs[i]
        if type(seq) is list:
            size = PyList_GET_SIZE(seq)
        elif type(seq) is tuple:
            size = PyTuple_GET_SIZE(seq)
        else:
            return None
        total += size
        off[i + 1] = total
    symbols = np.empty(total, dtype=np.int32)
    cdef int32_t[::1] sym = symbols
    for i in range(n):
        seq = seqs[i]
        size = off[i + 1] - off[i]
        if type(seq) is list:
            if PyList_GET_SIZE(seq) != size:
                return None
        elif type(seq) is not tuple or PyTuple_GET_SIZE(seq) != size:
            return None
        items = _fast_items(seq)
        for j in range(size):
            if not _is_int(items[j]):
                return None
            v = _as_long_long(items[j], &overflow)
            if overflow or v < 0 or v > max_symbol:
                return None
            sym[pos] = <int32_t>v
            pos += 1
    return symbols, offsets
