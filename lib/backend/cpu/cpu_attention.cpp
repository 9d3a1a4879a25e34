// CpuBackend's paged KV cache writes and causal grouped-query attention.
//
// Attention runs one (token, query head) pair per work item over the sequence's
// blocks with an online softmax (running max and sum), so no score array of the
// context length is needed and K/V are read once, block by block.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define INLAY_ATTN_AVX2 1
#endif

#include "backend/common/op_checks.h"
#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/half.h"

namespace inlay {
namespace {

// f32 path: dot(q, k) and acc = acc * scale + p * v, all in f32.
float dot_f32(const float* q, const float* k, int64_t n) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; ++i) s += q[i] * k[i];
    return s;
}

void scale_add_f32(float* acc, float scale, float p, const float* v, int64_t n) {
    for (int64_t i = 0; i < n; ++i) acc[i] = acc[i] * scale + p * v[i];
}

// f16 path, rounding where llama.cpp's CPU flash attention rounds (so that logits agree
// to ~1e-4 rather than ~3e-3): q is rounded to f16, q.k sums exact f16 products in f32,
// and the V accumulator itself is f16, rounded after every scale and every add.
float dot_f16(const uint16_t* q, const uint16_t* k, int64_t n) {
    int64_t i = 0;
    float s = 0.0f;
#if INLAY_ATTN_AVX2
    __m256 acc = _mm256_setzero_ps();
    for (; i + 8 <= n; i += 8) {
        const __m256 kv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k + i)));
        const __m256 qv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + i)));
        acc = _mm256_fmadd_ps(qv, kv, acc);
    }
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    s = _mm_cvtss_f32(r);
#endif
    for (; i < n; ++i) s += f16_to_f32(q[i]) * f16_to_f32(k[i]);
    return s;
}

void scale_f16(uint16_t* acc, float scale, int64_t n) {
    int64_t i = 0;
#if INLAY_ATTN_AVX2
    const __m256 vs = _mm256_set1_ps(scale);
    for (; i + 8 <= n; i += 8) {
        auto* p = reinterpret_cast<__m128i*>(acc + i);
        const __m256 a = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(p)), vs);
        _mm_storeu_si128(p, _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT));
    }
#endif
    for (; i < n; ++i) acc[i] = f32_to_f16(f16_to_f32(acc[i]) * scale);
}

void mad_f16(uint16_t* acc, const uint16_t* v, float p, int64_t n) {
    int64_t i = 0;
#if INLAY_ATTN_AVX2
    const __m256 vp = _mm256_set1_ps(p);
    for (; i + 8 <= n; i += 8) {
        auto* a = reinterpret_cast<__m128i*>(acc + i);
        const __m256 vv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i)));
        const __m256 r = _mm256_fmadd_ps(vv, vp, _mm256_cvtph_ps(_mm_loadu_si128(a)));
        _mm_storeu_si128(a, _mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT));
    }
#endif
    for (; i < n; ++i) acc[i] = f32_to_f16(f16_to_f32(acc[i]) + f16_to_f32(v[i]) * p);
}


void require_batch_fits(const CpuBackend::KvStorage& kv, const CpuBackend::Batch& batch, const char* op) {
    inlay::require_batch_fits(batch.block_size, batch.n_blocks, kv.geometry(), kv.n_blocks(), op);
}

}  // namespace

void CpuBackend::kv_store(KvStorage& kv, int64_t layer, const Buffer& k, const Buffer& v, const Batch& batch) {
    const KvGeometry& g = kv.geometry();
    const int64_t n_tokens = batch.n_tokens();
    const int64_t row = g.n_kv_heads * g.head_dim;
    require_batch_fits(kv, batch, "kv_store");
    if (layer < 0 || layer >= g.n_layers) fail(INLAY_ERR_INTERNAL, "kv_store: layer {} of {}", layer, g.n_layers);
    if (k.size() < static_cast<size_t>(n_tokens * row) || v.size() < static_cast<size_t>(n_tokens * row))
        fail(INLAY_ERR_INTERNAL, "kv_store: K/V buffers too small");
    const bool f16 = g.dtype == DType::F16;
    const size_t elem = f16 ? 2 : 4;
    for (int64_t t = 0; t < n_tokens; ++t) {
        // Slots were resolved (and validated) once for the step by prepare_batch.
        const int64_t block = batch.slot_block[static_cast<size_t>(t)];
        const size_t slot_offset = static_cast<size_t>(batch.slot_index[static_cast<size_t>(t)] * g.head_dim) * elem;
        for (int which = 0; which < 2; ++which) {
            const float* src = (which == 0 ? k : v).ptr() + static_cast<size_t>(t * row);
            for (int64_t h = 0; h < g.n_kv_heads; ++h) {
                std::byte* dst = kv.slab(block, layer, which, h) + slot_offset;
                const float* s = src + h * g.head_dim;
                if (f16) {
                    auto* d = reinterpret_cast<uint16_t*>(dst);
                    for (int64_t i = 0; i < g.head_dim; ++i) d[i] = f32_to_f16(s[i]);
                } else {
                    std::memcpy(dst, s, static_cast<size_t>(g.head_dim) * sizeof(float));
                }
            }
        }
    }
}

void CpuBackend::rope_kv_append(Buffer& q, Buffer& k, const Buffer& v, const Weight* q_norm, const Weight* k_norm,
                                float eps, const RopeParams& rope_params, const Weight* freq_factors, KvStorage& kv,
                                int64_t layer, int64_t n_heads, const Batch& batch) {
    const KvGeometry& g = kv.geometry();
    const int64_t n = batch.n_tokens();
    // The parts in order, each the same arithmetic as alone: on the CPU the fusion buys
    // nothing worth a second implementation of each part (a GPU saves launches and
    // round trips through memory).
    if (q_norm) rms_norm(q, *q_norm, eps, n * n_heads, g.head_dim, q);
    if (k_norm) rms_norm(k, *k_norm, eps, n * g.n_kv_heads, g.head_dim, k);
    rope(q, n_heads, g.head_dim, batch, rope_params, freq_factors);
    rope(k, g.n_kv_heads, g.head_dim, batch, rope_params, freq_factors);
    kv_store(kv, layer, k, v, batch);
}

void CpuBackend::attention(const Buffer& q, const KvStorage& kv, int64_t layer, const Batch& batch, int64_t n_heads,
                           float scale, Buffer& out, Scratch& /*scratch*/) {
    const KvGeometry& g = kv.geometry();
    const int64_t n_tokens = batch.n_tokens();
    const int64_t hd = g.head_dim;
    require_batch_fits(kv, batch, "attention");
    if (layer < 0 || layer >= g.n_layers) fail(INLAY_ERR_INTERNAL, "attention: layer {} of {}", layer, g.n_layers);
    if (n_heads % g.n_kv_heads != 0) fail(INLAY_ERR_INTERNAL, "attention: {} heads over {} KV heads", n_heads, g.n_kv_heads);
    if (q.size() < static_cast<size_t>(n_tokens * n_heads * hd) || out.size() < static_cast<size_t>(n_tokens * n_heads * hd))
        fail(INLAY_ERR_INTERNAL, "attention: buffers too small");
    const int64_t group = n_heads / g.n_kv_heads;
    const bool f16 = g.dtype == DType::F16;

    pool_.parallel_for(static_cast<size_t>(n_tokens * n_heads), [&](size_t b, size_t e) {
        std::vector<float> scores(static_cast<size_t>(g.block_size));
        std::vector<uint16_t> q16(static_cast<size_t>(hd)), acc16(static_cast<size_t>(hd));
        for (size_t item = b; item < e; ++item) {
            const auto t = static_cast<int64_t>(item) / n_heads;
            const auto h = static_cast<int64_t>(item) % n_heads;
            const int32_t* table = batch.block_table(batch.seq_of_token[static_cast<size_t>(t)]);
            const int64_t n_visible = batch.positions[static_cast<size_t>(t)] + 1;  // causal
            const int64_t kvh = h / group;
            const float* qv = q.ptr() + static_cast<size_t>(item) * static_cast<size_t>(hd);
            float* out_row = out.ptr() + static_cast<size_t>(item) * static_cast<size_t>(hd);
            float running_max = -std::numeric_limits<float>::infinity();
            float running_sum = 0.0f;
            if (f16) {
                // One position at a time with an online softmax, exactly as llama.cpp.
                for (int64_t i = 0; i < hd; ++i) q16[static_cast<size_t>(i)] = f32_to_f16(qv[i]);
                std::fill(acc16.begin(), acc16.end(), uint16_t{0});
                for (int64_t p0 = 0; p0 < n_visible; p0 += g.block_size) {
                    const int64_t block = table[p0 / g.block_size];
                    const int64_t n = std::min(g.block_size, n_visible - p0);
                    const auto* kb = reinterpret_cast<const uint16_t*>(kv.slab(block, layer, 0, kvh));
                    const auto* vb = reinterpret_cast<const uint16_t*>(kv.slab(block, layer, 1, kvh));
                    for (int64_t s = 0; s < n; ++s) {
                        const float score = dot_f16(q16.data(), kb + s * hd, hd) * scale;
                        float ms = 1.0f, vs = 1.0f;
                        if (score > running_max) {
                            ms = std::exp(running_max - score);
                            running_max = score;
                            scale_f16(acc16.data(), ms, hd);
                        } else {
                            vs = std::exp(score - running_max);
                        }
                        mad_f16(acc16.data(), vb + s * hd, vs, hd);
                        running_sum = running_sum * ms + vs;
                    }
                }
                const float inv = 1.0f / running_sum;
                for (int64_t i = 0; i < hd; ++i) out_row[i] = f16_to_f32(acc16[static_cast<size_t>(i)]) * inv;
                continue;
            }
            // f32 cache: block by block, full precision.
            std::fill(out_row, out_row + hd, 0.0f);
            for (int64_t p0 = 0; p0 < n_visible; p0 += g.block_size) {
                const int64_t block = table[p0 / g.block_size];
                const int64_t n = std::min(g.block_size, n_visible - p0);
                const auto* kb = reinterpret_cast<const float*>(kv.slab(block, layer, 0, kvh));
                const auto* vb = reinterpret_cast<const float*>(kv.slab(block, layer, 1, kvh));
                float block_max = running_max;
                for (int64_t s = 0; s < n; ++s) {
                    scores[static_cast<size_t>(s)] = dot_f32(qv, kb + s * hd, hd) * scale;
                    block_max = std::max(block_max, scores[static_cast<size_t>(s)]);
                }
                const float rescale = std::exp(running_max - block_max);  // 0 on the first block
                running_sum *= rescale;
                for (int64_t s = 0; s < n; ++s) {
                    const float p = std::exp(scores[static_cast<size_t>(s)] - block_max);
                    running_sum += p;
                    scale_add_f32(out_row, s == 0 ? rescale : 1.0f, p, vb + s * hd, hd);
                }
                running_max = block_max;
            }
            const float inv = 1.0f / running_sum;
            for (int64_t i = 0; i < hd; ++i) out_row[i] *= inv;
        }
    });
}

}  // namespace inlay
