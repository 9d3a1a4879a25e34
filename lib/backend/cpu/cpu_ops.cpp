// CpuBackend's element-wise and row-wise ops: embedding lookup, RMSNorm (alone and
// fused with the residual add), RoPE, SiLU-gating, residual add and row gathering.
#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "backend/common/op_checks.h"
#include "backend/cpu/cpu_backend.h"
#include "core/argmax.h"
#include "core/error.h"
#include "quant/interleaved_rows.h"
#include "quant/quantize.h"
#include "sampling/penalties.h"

namespace inlay {
namespace {

void require_size(const CpuBackend::Buffer& b, int64_t n, const char* op, const char* what) {
    if (n < 0 || b.size() < static_cast<size_t>(n))
        fail(INLAY_ERR_INTERNAL, "CpuBackend::{}: {} holds {} floats, needs {}", op, what, b.size(), n);
}

void require_norm_weight(const CpuBackend::Weight& weight, int64_t dim, const char* op) {
    require_f32_vector(weight.type, weight.n_cols * weight.n_rows, dim, op);
}

// y = x / rms(x) * w for one row; y may be x.
void norm_row(const float* xr, const CpuBackend::Weight& weight, float eps, int64_t dim, float* yr) {
    const auto* w = reinterpret_cast<const float*>(weight.data);
    // Float squares summed in double, as ggml does, in sixteen running sums (element i
    // into sum i % 16) added in a fixed order: the compiler keeps them in vectors of any
    // width with the same result, and sixteen chains instead of one take the sum off the
    // serial path between decode regions (576 dependent adds were ~0.6 us on Zen 5). The
    // float result is ggml's single running sum's but where the ~1e-16 relative
    // difference of the double sums straddles a float rounding boundary.
    constexpr int64_t kSums = 16;
    double sums[kSums] = {};
    const int64_t body = dim / kSums * kSums;
    for (int64_t i = 0; i < body; i += kSums)
        for (int64_t j = 0; j < kSums; ++j) sums[j] += static_cast<double>(xr[i + j] * xr[i + j]);
    for (int64_t i = body; i < dim; ++i) sums[i - body] += static_cast<double>(xr[i] * xr[i]);
    for (int64_t width = kSums / 2; width > 0; width /= 2)
        for (int64_t j = 0; j < width; ++j) sums[j] += sums[j + width];
    const double sum = sums[0];
    const float scale = 1.0f / std::sqrt(static_cast<float>(sum / static_cast<double>(dim)) + eps);
    for (int64_t i = 0; i < dim; ++i) yr[i] = xr[i] * scale * w[i];
}

#if defined(__AVX2__) && defined(__FMA__)
// exp(v) for v clamped to [-87, 88] (all finite normals): v = k ln2 + r with
// |r| <= ln2 / 2 (ln2 split in two for an exact k ln2), exp(r) by its Taylor series to
// r^7 (truncation below 6e-9 relative), times 2^k built in the exponent bits. Within
// 2 ulp of std::exp; vectorised where std::exp is a libm call per element.
inline __m256 exp8(__m256 v) {
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
    const __m256 k = _mm256_round_ps(_mm256_mul_ps(v, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693145751953125f), v);  // ln2's high bits: k * hi is exact
    r = _mm256_fnmadd_ps(k, _mm256_set1_ps(1.42860682030941723212e-6f), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    const __m256i two_k = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(two_k));
}

// g[i] = silu(g[i]) * u[i] for 8 elements.
inline void silu_mul8(float* g, const float* u) {
    const __m256 x = _mm256_loadu_ps(g);
    const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
    const __m256 silu = _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    _mm256_storeu_ps(g, _mm256_mul_ps(silu, _mm256_loadu_ps(u)));
}
#endif

}  // namespace

// Every element takes the same arithmetic wherever it sits (a short tail goes through
// the vector code in a padded copy), so a token's result does not depend on its batch
// or on how the rows were split.
void silu_mul_range(float* g, const float* u, size_t n) {
#if defined(__AVX2__) && defined(__FMA__)
    size_t i = 0;
    for (; i + 8 <= n; i += 8) silu_mul8(g + i, u + i);
    if (i < n) {
        float gt[8] = {}, ut[8] = {};
        std::copy(g + i, g + n, gt);
        std::copy(u + i, u + n, ut);
        silu_mul8(gt, ut);
        std::copy(gt, gt + (n - i), g + i);
    }
#else
    for (size_t i = 0; i < n; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
#endif
}

void CpuBackend::embed(const Weight& table, const Batch& batch, Buffer& out) {
    const int64_t dim = table.n_cols;
    const std::vector<int32_t>& ids = batch.tokens;
    require_size(out, static_cast<int64_t>(ids.size()) * dim, "embed", "out");
    for (const int32_t id : ids)  // the batch was validated against the model's vocabulary; this is the table's
        if (id < 0 || id >= table.n_rows)
            fail(INLAY_ERR_INVALID_TOKEN, "token id {} is outside the vocabulary [0, {})", id, table.n_rows);
    pool_.parallel_for(ids.size(), [&](size_t b, size_t e) {
        // A table kept interleaved (its stored pages handed back) gives its rows from the
        // records: touching the stored rows would map them in again.
        thread_local std::vector<std::byte> stored;
        if (table.interleaved) stored.resize(table.row_stride);
        for (size_t t = b; t < e; ++t) {
            const std::byte* row = table.row(ids[t]);
            if (table.interleaved) {
                quant::interleaved_stored_row(table.type, dim, table.interleaved, ids[t], stored.data());
                row = stored.data();
            }
            quant::dequantize_row(table.type, row, out.ptr() + t * static_cast<size_t>(dim), dim);
        }
    });
}

void CpuBackend::rms_norm(const Buffer& x, const Weight& weight, float eps, int64_t n_rows, int64_t dim, Buffer& out) {
    require_size(x, n_rows * dim, "rms_norm", "x");
    require_size(out, n_rows * dim, "rms_norm", "out");
    require_norm_weight(weight, dim, "rms_norm");
    auto body = [&](size_t b, size_t e) {
        for (size_t r = b; r < e; ++r) norm_row(x.ptr() + r * static_cast<size_t>(dim), weight, eps, dim, out.ptr() + r * static_cast<size_t>(dim));
    };
    if (n_rows * dim < kInPlaceFloats) body(0, static_cast<size_t>(n_rows));
    else pool_.parallel_for(static_cast<size_t>(n_rows), body);
}

void CpuBackend::add_rms_norm(Buffer& x, const Buffer& y, const Weight& weight, float eps, int64_t n_rows, int64_t dim,
                              Buffer& out) {
    require_size(x, n_rows * dim, "add_rms_norm", "x");
    require_size(y, n_rows * dim, "add_rms_norm", "y");
    require_size(out, n_rows * dim, "add_rms_norm", "out");
    require_norm_weight(weight, dim, "add_rms_norm");
    // Row by row: the sum, then the norm of that row, the same float operations as add
    // followed by rms_norm, with each row read while it is in cache.
    auto body = [&](size_t b, size_t e) {
        for (size_t r = b; r < e; ++r) {
            float* xr = x.ptr() + r * static_cast<size_t>(dim);
            const float* yr = y.ptr() + r * static_cast<size_t>(dim);
            for (int64_t i = 0; i < dim; ++i) xr[i] += yr[i];
            norm_row(xr, weight, eps, dim, out.ptr() + r * static_cast<size_t>(dim));
        }
    };
    if (n_rows * dim < kInPlaceFloats) body(0, static_cast<size_t>(n_rows));
    else pool_.parallel_for(static_cast<size_t>(n_rows), body);
}

void CpuBackend::rope(Buffer& x, int64_t n_heads, int64_t head_dim, const Batch& batch, const RopeParams& rope,
                      const Weight* freq_factors) {
    const int64_t n_tokens = batch.n_tokens();
    require_size(x, n_tokens * n_heads * head_dim, "rope", "x");
    if (rope.n_rot == 0) return;  // no rotation
    if (rope.n_rot < 0 || rope.n_rot > head_dim || rope.n_rot % 2 != 0)
        fail(INLAY_ERR_INTERNAL, "rope: n_rot {} invalid for head_dim {}", rope.n_rot, head_dim);
    const int64_t half = rope.n_rot / 2;
    if (freq_factors && (freq_factors->type != DType::F32 || freq_factors->n_cols * freq_factors->n_rows != half))
        fail(INLAY_ERR_INTERNAL, "rope: {} frequency factors for {} rotated pairs",
             freq_factors->n_cols * freq_factors->n_rows, half);
    const float* factors = freq_factors ? reinterpret_cast<const float*>(freq_factors->data) : nullptr;
    const Batch::RopeAngles& angles = rope_angles(batch, rope, factors, half);
    pool_.parallel_for(static_cast<size_t>(n_tokens), [&](size_t b, size_t e) {
        for (size_t t = b; t < e; ++t) {
            const float* cos_t = angles.cos.data() + t * static_cast<size_t>(half);
            const float* sin_t = angles.sin.data() + t * static_cast<size_t>(half);
            for (int64_t h = 0; h < n_heads; ++h) {
                float* v = x.ptr() + (t * static_cast<size_t>(n_heads) + static_cast<size_t>(h)) * static_cast<size_t>(head_dim);
                for (int64_t i = 0; i < half; ++i) {
                    const int64_t i0 = rope.style == RopeStyle::normal ? 2 * i : i;
                    const int64_t i1 = rope.style == RopeStyle::normal ? 2 * i + 1 : i + half;
                    const float x0 = v[i0], x1 = v[i1];
                    const float c = cos_t[i], s = sin_t[i];
                    v[i0] = x0 * c - x1 * s;
                    v[i1] = x0 * s + x1 * c;
                }
            }
        }
    });
}

const CpuBackend::Batch::RopeAngles& CpuBackend::rope_angles(const Batch& batch, const RopeParams& rope,
                                                             const float* factors, int64_t half) {
    Batch::RopeAngles& a = batch.rope_angles;
    const auto n_pairs = static_cast<size_t>(half);
    const bool same = a.n_rot == rope.n_rot && a.freq_base == rope.freq_base && a.freq_scale == rope.freq_scale &&
                      (factors ? a.factors.size() == n_pairs && std::equal(factors, factors + half, a.factors.begin())
                               : a.factors.empty());
    if (same) return a;
    const size_t n_tokens = batch.positions.size();
    a.n_rot = -1;  // until the tables are whole
    a.cos.resize(n_tokens * n_pairs);
    a.sin.resize(n_tokens * n_pairs);
    if (factors) a.factors.assign(factors, factors + half);
    else a.factors.clear();
    const float theta_scale = std::pow(rope.freq_base, -2.0f / static_cast<float>(rope.n_rot));
    pool_.parallel_for(n_tokens, [&](size_t b, size_t e) {
        for (size_t t = b; t < e; ++t) {
            // Angles in float by repeated multiplication, as ggml computes them, so that
            // rotated q/k round to f16 in the KV cache exactly as llama.cpp's do.
            float theta = static_cast<float>(batch.positions[t]);
            for (size_t i = 0; i < n_pairs; ++i) {
                const float ff = factors ? factors[i] : 1.0f;
                const float angle = rope.freq_scale * (theta / ff);
                a.cos[t * n_pairs + i] = std::cos(angle);
                a.sin[t * n_pairs + i] = std::sin(angle);
                theta *= theta_scale;
            }
        }
    });
    a.n_rot = rope.n_rot;
    a.freq_base = rope.freq_base;
    a.freq_scale = rope.freq_scale;
    return a;
}

void CpuBackend::silu_mul(Buffer& gate, const Buffer& up, int64_t n) {
    require_size(gate, n, "silu_mul", "gate");
    require_size(up, n, "silu_mul", "up");
    auto body = [&](size_t b, size_t e) { silu_mul_range(gate.ptr() + b, up.ptr() + b, e - b); };
    if (n < kInPlaceFloats) body(0, static_cast<size_t>(n));
    else pool_.parallel_for(static_cast<size_t>(n), body, 16);
}

void CpuBackend::add(Buffer& x, const Buffer& y, int64_t n) {
    require_size(x, n, "add", "x");
    require_size(y, n, "add", "y");
    float* a = x.ptr();
    const float* b = y.ptr();
    for (int64_t i = 0; i < n; ++i) a[i] += b[i];
}

void CpuBackend::gather_logit_rows(const Buffer& x, const Batch& batch, int64_t row_length, Buffer& out) {
    const std::vector<int32_t>& rows = batch.logit_rows;
    require_size(out, static_cast<int64_t>(rows.size()) * row_length, "gather_logit_rows", "out");
    const auto len = static_cast<size_t>(row_length);
    for (size_t i = 0; i < rows.size(); ++i) {
        if (rows[i] < 0 || (static_cast<size_t>(rows[i]) + 1) * len > x.size())
            fail(INLAY_ERR_INTERNAL, "gather_logit_rows: row {} outside the buffer", rows[i]);
        std::memcpy(out.ptr() + i * len, x.ptr() + static_cast<size_t>(rows[i]) * len, len * sizeof(float));
    }
}

namespace {

// The scratch slot the next ids go to (INLAY_ERR_INTERNAL when kMaxUnreadIds are unread).
std::span<int32_t> next_ids(CpuBackend::Scratch& scratch, int64_t n_rows, const char* op) {
    if (scratch.unread == kMaxUnreadIds)
        fail(INLAY_ERR_INTERNAL, "{}: the ids of {} earlier steps are not read yet", op, kMaxUnreadIds);
    auto& slot = scratch.ids[static_cast<size_t>(scratch.next_ids)];
    if (n_rows > static_cast<int64_t>(slot.size()))
        fail(INLAY_ERR_INTERNAL, "{}: {} rows, the scratch holds {}", op, n_rows, slot.size());
    return {slot.data(), static_cast<size_t>(n_rows)};
}

void push_ids(CpuBackend::Scratch& scratch, int64_t n_rows) {
    scratch.id_rows[static_cast<size_t>(scratch.next_ids)] = n_rows;
    scratch.next_ids = (scratch.next_ids + 1) % kMaxUnreadIds;
    ++scratch.unread;
}

}  // namespace

void CpuBackend::argmax_rows(const Buffer& x, int64_t n_rows, int64_t n_cols, Scratch& scratch) {
    require_shape(n_rows, n_cols, "argmax_rows");
    require_size(x, n_rows * n_cols, "argmax_rows", "x");
    const std::span<int32_t> ids = next_ids(scratch, n_rows, "argmax_rows");
    for (int64_t r = 0; r < n_rows; ++r)
        ids[static_cast<size_t>(r)] = argmax(std::span<const float>(x.ptr() + r * n_cols, static_cast<size_t>(n_cols)));
    push_ids(scratch, n_rows);
}

void CpuBackend::read_ids(Scratch& scratch, int64_t n_rows, int32_t* ids) {
    if (scratch.unread == 0) fail(INLAY_ERR_INTERNAL, "read_ids: no ids are waiting");
    const int oldest = (scratch.next_ids - scratch.unread + kMaxUnreadIds) % kMaxUnreadIds;
    const int64_t rows = scratch.id_rows[static_cast<size_t>(oldest)];
    --scratch.unread;  // read or refused: the slot is free again either way
    if (rows != n_rows) fail(INLAY_ERR_INTERNAL, "read_ids: {} rows asked, the step had {}", n_rows, rows);
    std::copy_n(scratch.ids[static_cast<size_t>(oldest)].data(), rows, ids);
}

void CpuBackend::feed_tokens(Batch& batch, const Scratch& scratch) {
    if (batch.fed_rows.empty()) return;
    // The latest ids: the slot written last (prepare_batch checked the rows against their count).
    const auto& latest = scratch.ids[static_cast<size_t>((scratch.next_ids + kMaxUnreadIds - 1) % kMaxUnreadIds)];
    for (size_t t = 0; t < batch.tokens.size(); ++t)
        if (const int32_t r = batch.fed_rows[t]; r >= 0) batch.tokens[t] = std::max(latest[static_cast<size_t>(r)], 0);
}

void CpuBackend::sample_rows(Buffer& logits, int64_t n_rows, int64_t n_cols, const SampleRows& rows,
                             Scratch& scratch) {
    require_shape(n_rows, n_cols, "sample_rows");
    require_size(logits, n_rows * n_cols, "sample_rows", "logits");
    validate_sample_rows(rows, n_rows, n_cols);
    const std::span<int32_t> ids = next_ids(scratch, n_rows, "sample_rows");
    for (int64_t r = 0; r < n_rows; ++r) {
        const RowSampling& row = rows.rows[static_cast<size_t>(r)];
        const std::span<float> values(logits.ptr() + r * n_cols, static_cast<size_t>(n_cols));
        for (const PenaltyEntry& e : rows.penalties.subspan(static_cast<size_t>(row.penalty_begin),
                                                            static_cast<size_t>(row.penalty_count))) {
            float& v = values[static_cast<size_t>(e.token)];
            v = penalized_logit(v, e.count, row.repeat_penalty, row.frequency_penalty, row.presence_penalty);
        }
        if (row.temperature <= 0.0f) {
            ids[static_cast<size_t>(r)] = argmax(values);
            continue;
        }
        SamplingParams chain;
        chain.temperature = row.temperature;
        chain.top_k = row.top_k;
        chain.top_p = row.top_p;
        chain.min_p = row.min_p;
        ids[static_cast<size_t>(r)] = scratch.chain.pick(values, chain, row.u);
    }
    push_ids(scratch, n_rows);
}

}  // namespace inlay
