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

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/half.h"

namespace inlay {
namespace {

// dot(q, k) with k stored as f16 or f32.
float dot_kv(const float* q, const std::byte* k, int64_t n, bool f16) {
    if (!f16) {
        const auto* kf = reinterpret_cast<const float*>(k);
        float s = 0.0f;
        for (int64_t i = 0; i < n; ++i) s += q[i] * kf[i];
        return s;
    }
    const auto* kh = reinterpret_cast<const uint16_t*>(k);
    int64_t i = 0;
    float s = 0.0f;
#if INLAY_ATTN_AVX2
    __m256 acc = _mm256_setzero_ps();
    for (; i + 8 <= n; i += 8) {
        const __m256 kv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kh + i)));
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), kv, acc);
    }
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    s = _mm_cvtss_f32(r);
#endif
    for (; i < n; ++i) s += q[i] * f16_to_f32(kh[i]);
    return s;
}

// acc = acc * scale + p * v, with v stored as f16 or f32.
void scale_add_kv(float* acc, float scale, float p, const std::byte* v, int64_t n, bool f16) {
    int64_t i = 0;
    if (f16) {
        const auto* vh = reinterpret_cast<const uint16_t*>(v);
#if INLAY_ATTN_AVX2
        const __m256 vs = _mm256_set1_ps(scale), vp = _mm256_set1_ps(p);
        for (; i + 8 <= n; i += 8) {
            const __m256 vv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(vh + i)));
            _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(vp, vv, _mm256_mul_ps(_mm256_loadu_ps(acc + i), vs)));
        }
#endif
        for (; i < n; ++i) acc[i] = acc[i] * scale + p * f16_to_f32(vh[i]);
        return;
    }
    const auto* vf = reinterpret_cast<const float*>(v);
    for (; i < n; ++i) acc[i] = acc[i] * scale + p * vf[i];
}

}  // namespace

void CpuBackend::kv_store(KvStorage& kv, int64_t layer, const Buffer& k, const Buffer& v, const BatchLayout& layout) {
    const KvGeometry& g = kv.geometry();
    const int64_t n_tokens = layout.n_tokens();
    const int64_t row = g.n_kv_heads * g.head_dim;
    if (k.size() < static_cast<size_t>(n_tokens * row) || v.size() < static_cast<size_t>(n_tokens * row))
        fail(INLAY_ERR_INTERNAL, "kv_store: K/V buffers too small");
    const bool f16 = g.dtype == DType::F16;
    const size_t elem = f16 ? 2 : 4;
    for (int64_t t = 0; t < n_tokens; ++t) {
        const BatchSequence& seq = layout.sequences[static_cast<size_t>(layout.seq_of_token[static_cast<size_t>(t)])];
        const int64_t pos = layout.positions[static_cast<size_t>(t)];
        const int64_t bi = pos / g.block_size;
        if (pos < 0 || bi >= static_cast<int64_t>(seq.block_table.size()))
            fail(INLAY_ERR_INTERNAL, "kv_store: position {} has no block", pos);
        const int64_t block = seq.block_table[static_cast<size_t>(bi)];
        if (block < 0 || block >= kv.n_blocks()) fail(INLAY_ERR_INTERNAL, "kv_store: block {} outside storage", block);
        const size_t slot_offset = static_cast<size_t>((pos % g.block_size) * g.head_dim) * elem;
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

void CpuBackend::attention(const Buffer& q, const KvStorage& kv, int64_t layer, const BatchLayout& layout,
                           int64_t n_heads, Buffer& out) {
    const KvGeometry& g = kv.geometry();
    const int64_t n_tokens = layout.n_tokens();
    const int64_t hd = g.head_dim;
    if (n_heads % g.n_kv_heads != 0) fail(INLAY_ERR_INTERNAL, "attention: {} heads over {} KV heads", n_heads, g.n_kv_heads);
    if (q.size() < static_cast<size_t>(n_tokens * n_heads * hd) || out.size() < static_cast<size_t>(n_tokens * n_heads * hd))
        fail(INLAY_ERR_INTERNAL, "attention: buffers too small");
    for (int64_t t = 0; t < n_tokens; ++t) {
        const auto& seq = layout.sequences[static_cast<size_t>(layout.seq_of_token[static_cast<size_t>(t)])];
        const int64_t pos = layout.positions[static_cast<size_t>(t)];
        if (pos < 0 || pos >= seq.n_kv || (pos / g.block_size) >= static_cast<int64_t>(seq.block_table.size()))
            fail(INLAY_ERR_INTERNAL, "attention: position {} outside the sequence's {} cached tokens", pos, seq.n_kv);
    }
    const int64_t group = n_heads / g.n_kv_heads;
    const bool f16 = g.dtype == DType::F16;
    const size_t elem = f16 ? 2 : 4;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

    pool_.parallel_for(static_cast<size_t>(n_tokens * n_heads), [&](size_t b, size_t e) {
        std::vector<float> scores(static_cast<size_t>(g.block_size));
        for (size_t item = b; item < e; ++item) {
            const auto t = static_cast<int64_t>(item) / n_heads;
            const auto h = static_cast<int64_t>(item) % n_heads;
            const auto& seq = layout.sequences[static_cast<size_t>(layout.seq_of_token[static_cast<size_t>(t)])];
            const int64_t n_visible = layout.positions[static_cast<size_t>(t)] + 1;  // causal
            const int64_t kvh = h / group;
            const float* qv = q.ptr() + static_cast<size_t>(item) * static_cast<size_t>(hd);
            float* acc = out.ptr() + static_cast<size_t>(item) * static_cast<size_t>(hd);
            std::fill(acc, acc + hd, 0.0f);
            float running_max = -std::numeric_limits<float>::infinity();
            float running_sum = 0.0f;
            for (int64_t p0 = 0; p0 < n_visible; p0 += g.block_size) {
                const int64_t block = seq.block_table[static_cast<size_t>(p0 / g.block_size)];
                const int64_t n = std::min(g.block_size, n_visible - p0);
                const std::byte* kb = kv.slab(block, layer, 0, kvh);
                const std::byte* vb = kv.slab(block, layer, 1, kvh);
                float block_max = running_max;
                for (int64_t s = 0; s < n; ++s) {
                    scores[static_cast<size_t>(s)] = dot_kv(qv, kb + static_cast<size_t>(s * hd) * elem, hd, f16) * scale;
                    block_max = std::max(block_max, scores[static_cast<size_t>(s)]);
                }
                const float rescale = std::exp(running_max - block_max);  // 0 on the first block
                running_sum *= rescale;
                for (int64_t s = 0; s < n; ++s) {
                    const float p = std::exp(scores[static_cast<size_t>(s)] - block_max);
                    running_sum += p;
                    scale_add_kv(acc, s == 0 ? rescale : 1.0f, p, vb + static_cast<size_t>(s * hd) * elem, hd, f16);
                }
                running_max = block_max;
            }
            const float inv = 1.0f / running_sum;
            for (int64_t i = 0; i < hd; ++i) acc[i] *= inv;
        }
    });
}

}  // namespace inlay
