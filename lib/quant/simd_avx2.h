// Internal: small AVX2 helpers shared by the SIMD kernels. Include only inside
// `#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)`.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace inlay::quant::simd {

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// hsum of four vectors at once: lane k is hsum(v[k]) bitwise, the same additions paired
// the same way (lo + hi, then (0 + 2) + (1 + 3)), with the four rows transposed.
inline __m128 hsum4(__m256 a, __m256 b, __m256 c, __m256 d) {
    const __m256 ac = _mm256_add_ps(_mm256_permute2f128_ps(a, c, 0x20), _mm256_permute2f128_ps(a, c, 0x31));
    const __m256 bd = _mm256_add_ps(_mm256_permute2f128_ps(b, d, 0x20), _mm256_permute2f128_ps(b, d, 0x31));
    // Per 128-bit half: (a0 + a2, b0 + b2, a1 + a3, b1 + b3 | the same for c, d).
    const __m256 s = _mm256_add_ps(_mm256_unpacklo_ps(ac, bd), _mm256_unpackhi_ps(ac, bd));
    const __m128 lo = _mm256_castps256_ps128(s), hi = _mm256_extractf128_ps(s, 1);
    return _mm_add_ps(_mm_movelh_ps(lo, hi), _mm_movehl_ps(hi, lo));
}

inline int32_t hsum(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i load16(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// Sums of four adjacent products u[i] * s[i] (u unsigned, s signed) per int32 lane.
// The maddubs intermediate saturates at +-32767: callers keep 2*max|u*s| below that.
inline __m256i dot_u8_i8(__m256i u, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

// acc + dot_u8_i8(u, s) (one instruction with VNNI).
inline __m256i dot_u8_i8_add(__m256i acc, __m256i u, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(acc, u, s);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

// Sums of four adjacent products a[i] * b[i] of signed bytes per int32 lane (a != -128).
inline __m256i dot_i8_i8(__m256i a, __m256i b) {
    return dot_u8_i8(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
}

// Pairs of int16 products (maddubs) weighted by int16 scales, summed into int32 lanes.
inline __m256i scaled_pairs(__m256i u, __m256i s, __m256i scale16) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), scale16);
}

// Bits 32k..32k+31 of the 128 bits in `bits128` (16 bytes broadcast to both lanes) ->
// 32 bytes: byte i is 2 when bit 32k+i is set, 0 when it is clear.
template <int K>
inline __m256i bits_to_twos(__m256i bits128) {
    const __m256i shuffle = _mm256_setr_epi8(4 * K, 4 * K, 4 * K, 4 * K, 4 * K, 4 * K, 4 * K, 4 * K,  //
                                             4 * K + 1, 4 * K + 1, 4 * K + 1, 4 * K + 1, 4 * K + 1, 4 * K + 1,
                                             4 * K + 1, 4 * K + 1,  //
                                             4 * K + 2, 4 * K + 2, 4 * K + 2, 4 * K + 2, 4 * K + 2, 4 * K + 2,
                                             4 * K + 2, 4 * K + 2,  //
                                             4 * K + 3, 4 * K + 3, 4 * K + 3, 4 * K + 3, 4 * K + 3, 4 * K + 3,
                                             4 * K + 3, 4 * K + 3);
    const __m256i select = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
    const __m256i spread = _mm256_and_si256(_mm256_shuffle_epi8(bits128, shuffle), select);
    return _mm256_and_si256(_mm256_cmpeq_epi8(spread, select), _mm256_set1_epi8(2));
}

// Packs four vectors of eight int32 (each in -128..127) into 32 int8 in order.
inline __m256i pack_i32_to_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i ab = _mm256_packs_epi32(a, b);  // a0-3 b0-3 | a4-7 b4-7
    const __m256i cd = _mm256_packs_epi32(c, d);
    const __m256i abcd = _mm256_packs_epi16(ab, cd);  // a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7
    return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// The row kernels ask for their weights this many bytes ahead of use. The hardware
// prefetcher alone leaves them waiting on memory when a matrix does not fit in cache
// (measured on the 2-core EPYC: Q4_K rows of 4096 from DRAM at 4.9 GB/s without, 17.7
// with; bench_kernels vec_dot_rows). A prefetch never faults, so reading ahead past the
// end of a matrix is harmless.
inline constexpr size_t kPrefetchBytes = 8192;

// Where the block formats' prefetches put their lines: L1 (T0) on AMD, L2 (T1) on Intel
// (cpu_tuning.h; this is its block_prefetch_to_l2).
// Zen 4 lost with L2 (bench_kernels vec_dot_rows 151936 x 1024 from DRAM, one thread: Q8_0
// 8.4 -> 9.4-10.5 ms). A 2-core AMX Xeon (Sapphire Rapids or later) under KVM gained: the
// same rows from DRAM, three alternations, Q8_0 7.4-7.8 -> 8.3-8.4 GB/s, Q4_0 7.4-7.7 ->
// 9.0-9.2, Q4_K 6.8-7.2 -> 8.0-8.2, Q6_K 7.0-7.3 -> 7.6-7.9, tiles of one or two tokens
// 1.16-1.34x, larger tiles and in-cache shapes within +-5%; decode with 2 threads, three
// alternations, Qwen3-0.6B-shape Q4_K_M 36.0-36.9 -> 43.1-44.0 tokens/s, Q1_0 65.7-65.9 ->
// 72.9-74.2. (Likely why: an L1 prefetch holds one of the core's few L1 fill buffers until
// its line arrives, an L2 prefetch does not.)
extern const bool kBlockPrefetchToL2;

// prefetch_rows' levels: into L1 (prefetcht0), into L2 (prefetcht1), or the block
// formats' level above.
inline constexpr int kPrefetchL1 = 3, kPrefetchL2 = 2, kBlockPrefetch = -1;

template <int Level>
inline void prefetch_line(const void* p) {
    if constexpr (Level == kBlockPrefetch) {
        if (kBlockPrefetchToL2)
            __builtin_prefetch(p, 0, kPrefetchL2);
        else
            __builtin_prefetch(p, 0, kPrefetchL1);
    } else {
        static_assert(Level == kPrefetchL1 || Level == kPrefetchL2);
        __builtin_prefetch(p, 0, Level);
    }
}

// Prefetches the `Bytes` bytes at p + kPrefetchBytes (every cache line they touch), at the
// block formats' level. The address is computed as an integer: it may lie past the end
// of the matrix.
template <size_t Bytes>
inline void prefetch_ahead(const void* p) {
    const uintptr_t ahead = reinterpret_cast<uintptr_t>(p) + kPrefetchBytes;
    for (size_t o = 0; o < Bytes; o += 64) prefetch_line<kBlockPrefetch>(reinterpret_cast<const void*>(ahead + o));
}

// Prefetches for R consecutive rows (stride bytes apart) read side by side, at `at` bytes
// into each row, `step` bytes a call. One row: its bytes kPrefetchBytes on (prefetch_ahead).
// Several: the group's rows are one contiguous span, and the prefetches walk it linearly,
// R * step bytes a call, at least kPrefetchBytes and one group ahead (the walk continues
// into the following groups without a gap; two groups ahead held Q8_0 pairs of rows of
// 4096 at 17 GB/s from DRAM against 19-21). Asking instead for each row's bytes
// kPrefetchBytes on at every block (a few scattered lines at a time, each asked for up to
// three times) held groups of short rows from DRAM at half the bandwidth of a single row
// (Zen 4, bench_kernels vec_dot_rows 151936 x 1024: Q4_0 9.5 -> 20 GB/s, Q5_0 9.4 -> 18.3).
//
// Level: the block formats' (kBlockPrefetch, above) by default; L2 for the float kernels
// on every CPU, whose tiles walk a group of rows once per few tokens (F32 4 x 4 tiles, so
// 5 to 8 tokens are two walks):
// lines brought into L1 ahead evicted the group's rows between walks, and the walks after
// the first ask for nothing new, so DRAM idled while they ran. Zen 4, bench_kernels
// 151936 x 1024 from DRAM, one thread, T0 -> T1: F32 tiles 5 tokens 57 -> 35 ms, 8 tokens
// 66 -> 51, F16 2 tokens 28 -> 17, 5 tokens 31 -> 21; F32 rows 34 -> 30.
template <int R, int Level = kBlockPrefetch>
inline void prefetch_rows(const void* w0, size_t stride, size_t at, size_t step) {
    const size_t ahead = R == 1 ? kPrefetchBytes : std::max(kPrefetchBytes, R * stride);
    const uintptr_t p = reinterpret_cast<uintptr_t>(w0) + ahead + at * R;  // may lie past the end
    for (size_t o = 0; o < R * step; o += 64) prefetch_line<Level>(reinterpret_cast<const void*>(p + o));
}

// Prefetches part [begin, end) of `parts` equal parts of the `span` bytes at p into L2: a
// kernel that walks a group of rows chunk by chunk asks for the next group's bytes in step
// with its progress through its own (p may lie past the end of the matrix). Into L2, not
// L1: the row-per-lane tiles' regrouped blocks fill most of L1, and lines brought there
// evicted them (Zen 4, bench_kernels 151936 x 1024 from DRAM, 16 tokens, one thread, T0 ->
// T1: Q8_0 47.4 -> 33.5 ms, Q4_0 35.6 -> 27.8, Q4_K 36.4 -> 32.0, Q6_K 44.8 -> 37.5; the
// x86-64-v3 build's eight-row tiles Q4_K 47.5 -> 34.0, Q6_K 56.1 -> 43.5).
inline void prefetch_span_part(const void* p, size_t span, int64_t begin, int64_t end, int64_t parts) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(p);
    const size_t from = span * static_cast<size_t>(begin) / static_cast<size_t>(parts) / 64 * 64;
    const size_t to = span * static_cast<size_t>(end) / static_cast<size_t>(parts);
    for (size_t o = from; o < to; o += 64) prefetch_line<kPrefetchL2>(reinterpret_cast<const void*>(base + o));
}

inline uint32_t load_u32(const void* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}

// 8 x 8 transpose of 32-bit lanes: out[k] lane i = in[i] lane k.
inline void transpose8x32(const __m256i (&in)[8], __m256i (&out)[8]) {
    __m256i a[8], b[8];
    for (int i = 0; i < 8; i += 2) {
        a[i] = _mm256_unpacklo_epi32(in[i], in[i + 1]);
        a[i + 1] = _mm256_unpackhi_epi32(in[i], in[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        b[i] = _mm256_unpacklo_epi64(a[i], a[i + 2]);
        b[i + 1] = _mm256_unpackhi_epi64(a[i], a[i + 2]);
        b[i + 2] = _mm256_unpacklo_epi64(a[i + 1], a[i + 3]);
        b[i + 3] = _mm256_unpackhi_epi64(a[i + 1], a[i + 3]);
    }
    for (int i = 0; i < 4; ++i) {
        out[i] = _mm256_permute2x128_si256(b[i], b[i + 4], 0x20);
        out[i + 4] = _mm256_permute2x128_si256(b[i], b[i + 4], 0x31);
    }
}

}  // namespace inlay::quant::simd
