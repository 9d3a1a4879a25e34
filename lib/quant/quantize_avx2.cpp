// AVX2 activation quantizers. Each writes exactly the bytes of the scalar
// quantize_activations_reference (tests compare them): Q8_0 / Q8_1 with the operations
// of llama.cpp's x86 quantize_row_q8_0 / _q8_1 in the same order (codec_activations.cpp
// explains them), Q8_K, F16 and BF16 as quantize_row (same scale expressions, rounding
// half to even, and a max-magnitude search that returns the same element).
#include "quant/kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)

#include <bit>

#include "core/half.h"
#include "quant/blocks.h"
#include "quant/quantize.h"
#include "quant/simd_avx2.h"

namespace inlay::quant::detail {
namespace {

using namespace simd;

inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

inline float hmax(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

inline __m256 clamp(__m256 v, float lo, float hi) {
    // max first: a NaN in v becomes lo, as in the scalar code.
    return _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(lo)), _mm256_set1_ps(hi));
}

// One 32-element block as llama.cpp's x86 code quantizes it: the maximum magnitude
// folded in its lane order (maxps keeps the second operand on NaN, so the order decides
// non-finite cases), multiplier 127 / amax, round half to even, saturating packs.
// Returns d (unrounded); q[k] are the four int32 vectors before packing.
inline float quantize_block32(const float* x, __m256i q[4]) {
    __m256 v[4];
    for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(x + 8 * k);
    __m256 amax = abs_ps(v[0]);
    for (int k = 1; k < 4; ++k) amax = _mm256_max_ps(amax, abs_ps(v[k]));
    __m128 m = _mm_max_ps(_mm256_extractf128_ps(amax, 1), _mm256_castps256_ps128(amax));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    const float max_abs = _mm_cvtss_f32(m);
    const __m256 mul = _mm256_set1_ps(max_abs != 0.0f ? 127.0f / max_abs : 0.0f);
    for (int k = 0; k < 4; ++k) {
        const __m256 scaled = _mm256_mul_ps(v[k], mul);
        q[k] = _mm256_cvtps_epi32(_mm256_round_ps(scaled, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    return max_abs / 127.0f;
}

void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK8_0; ++b, x += kQK8_0) {
        __m256i q[4];
        y[b].d = f32_to_f16(quantize_block32(x, q));
        _mm256_storeu_si256(static_cast<__m256i*>(static_cast<void*>(y[b].qs)), pack_i32_to_i8(q[0], q[1], q[2], q[3]));
    }
}

void quantize_q8_1(const float* x, BlockQ8_1* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK8_1; ++b, x += kQK8_1) {
        __m256i q[4];
        const float d = quantize_block32(x, q);
        y[b].d = f32_to_f16(d);
        // The sum of the unsaturated int32 values (wrapping), as llama.cpp sums them.
        const int32_t sum = hsum(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
        y[b].s = f32_to_f16(d * static_cast<float>(sum));
        _mm256_storeu_si256(static_cast<__m256i*>(static_cast<void*>(y[b].qs)), pack_i32_to_i8(q[0], q[1], q[2], q[3]));
    }
}

void quantize_q8_k(const float* x, BlockQ8_K* y, int64_t n) {
    for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
        __m256 amax_v = _mm256_setzero_ps();
        for (int k = 0; k < kQK_K / 8; ++k) amax_v = _mm256_max_ps(abs_ps(_mm256_loadu_ps(x + 8 * k)), amax_v);
        const float amax = hmax(amax_v);
        BlockQ8_K& out = y[b];
        if (!(amax > 0.0f)) {
            // Zero block, or NaNs everywhere (max_ps drops NaN): the scalar path decides.
            quantize_row(DType::Q8_K, x, &out, kQK_K);
            continue;
        }
        // The scalar search keeps the first element of largest magnitude (sign included).
        float max = 0.0f;
        const __m256 target = _mm256_set1_ps(amax);
        for (int k = 0; k < kQK_K / 8; ++k) {
            const int hit = _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(_mm256_loadu_ps(x + 8 * k)), target, _CMP_EQ_OQ));
            if (hit != 0) {
                max = x[8 * k + std::countr_zero(static_cast<unsigned>(hit))];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m256 is = _mm256_set1_ps(iscale);
        const __m256i ones8 = _mm256_set1_epi8(1);
        for (int g = 0; g < kQK_K / 32; ++g) {
            __m256i q[4];
            for (int k = 0; k < 4; ++k) {
                const __m256 scaled = clamp(_mm256_mul_ps(is, _mm256_loadu_ps(x + 32 * g + 8 * k)), -128.0f, 127.0f);
                q[k] = _mm256_cvtps_epi32(_mm256_round_ps(scaled, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            }
            const __m256i packed = pack_i32_to_i8(q[0], q[1], q[2], q[3]);
            _mm256_storeu_si256(static_cast<__m256i*>(static_cast<void*>(out.qs + 32 * g)), packed);
            // Sums of 4 bytes per int32 lane; lanes 0-3 cover bytes 0-15, lanes 4-7 bytes 16-31.
            const __m256i quads = dot_u8_i8(ones8, packed);
            const __m128i lo = _mm256_castsi256_si128(quads);
            const __m128i hi = _mm256_extracti128_si256(quads, 1);
            const __m128i pair = _mm_hadd_epi32(lo, hi);  // lo01 lo23 hi01 hi23
            const __m128i sums = _mm_hadd_epi32(pair, pair);
            out.bsums[2 * g] = static_cast<int16_t>(_mm_cvtsi128_si32(sums));
            out.bsums[2 * g + 1] = static_cast<int16_t>(_mm_extract_epi32(sums, 1));
        }
        out.d = 1.0f / iscale;
    }
}

void quantize_f16(const float* x, uint16_t* y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128(static_cast<__m128i*>(static_cast<void*>(y + i)), h);
    }
    for (; i < n; ++i) y[i] = f32_to_f16(x[i]);
}

void quantize_bf16(const float* x, uint16_t* y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i r[2];
        for (int k = 0; k < 2; ++k) {
            const __m256 v = _mm256_loadu_ps(x + i + 8 * k);
            const __m256i bits = _mm256_castps_si256(v);
            // Round to nearest even: add 0x7fff plus the lowest kept bit, keep the top half.
            const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
            const __m256i rounded =
                _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)), 16);
            const __m256i quiet_nan = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
            const __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
            r[k] = _mm256_blendv_epi8(rounded, quiet_nan, is_nan);
        }
        // packus works per 128-bit lane: r0 lo, r1 lo, r0 hi, r1 hi -> reorder the 64-bit quarters.
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r[0], r[1]), _MM_SHUFFLE(3, 1, 2, 0));
        _mm256_storeu_si256(static_cast<__m256i*>(static_cast<void*>(y + i)), packed);
    }
    for (; i < n; ++i) y[i] = f32_to_bf16(x[i]);
}

}  // namespace

bool quantize_activations_avx2(DType act_type, const float* x, void* out, int64_t n) {
    switch (act_type) {
        case DType::Q8_0: quantize_q8_0(x, static_cast<BlockQ8_0*>(out), n); return true;
        case DType::Q8_1: quantize_q8_1(x, static_cast<BlockQ8_1*>(out), n); return true;
        case DType::Q8_K: quantize_q8_k(x, static_cast<BlockQ8_K*>(out), n); return true;
        case DType::F16: quantize_f16(x, static_cast<uint16_t*>(out), n); return true;
        case DType::BF16: quantize_bf16(x, static_cast<uint16_t*>(out), n); return true;
        default: return false;
    }
}

}  // namespace inlay::quant::detail

#else

namespace inlay::quant::detail {
bool quantize_activations_avx2(DType, const float*, void*, int64_t) { return false; }
}  // namespace inlay::quant::detail

#endif
