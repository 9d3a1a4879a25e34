#include "quant/vec_dot.h"

#include "core/error.h"
#include "quant/amx_common.h"
#include "quant/interleaved_rows.h"
#include "quant/kernels.h"
#include "quant/quantize.h"
#include "quant/row_codecs.h"

namespace inlay::quant {
namespace {

void check_known(DType type, const char* what) {
    if (!dtype_from_id(static_cast<uint32_t>(type))) {
        fail(INLAY_ERR_INVALID_ARGUMENT, "{}: unknown type {}", what, static_cast<uint32_t>(type));
    }
    if (type == DType::Q8_K || type == DType::Q8_1) {
        fail(INLAY_ERR_UNSUPPORTED, "{}: {} is an activation type, not a weight type", what, dtype_name(type));
    }
}

void check_activation_row(DType act_type, const float* x, const void* out, int64_t n, const char* what) {
    if (!dtype_from_id(static_cast<uint32_t>(act_type))) {
        fail(INLAY_ERR_INVALID_ARGUMENT, "{}: unknown type {}", what, static_cast<uint32_t>(act_type));
    }
    const int64_t block = dtype_traits(act_type).block_elems;
    if (n < 0 || n % block != 0) {
        fail(INLAY_ERR_INVALID_ARGUMENT, "{}: {} elements is not a multiple of {}'s block of {}", what, n,
             dtype_name(act_type), block);
    }
    if (n > 0 && (x == nullptr || out == nullptr)) fail(INLAY_ERR_INVALID_ARGUMENT, "{}: null pointer", what);
}

}  // namespace

DType vec_dot_type(DType weight) {
    check_known(weight, "vec_dot_type");
    switch (weight) {
        case DType::F32:
        case DType::F16:
        case DType::BF16: return weight;
        case DType::Q8_0:
        case DType::Q4_0:
        case DType::Q5_0:
        case DType::Q1_0: return DType::Q8_0;
        case DType::Q4_1:
        case DType::Q5_1: return DType::Q8_1;
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K: return DType::Q8_K;
        case DType::Q8_1:
        case DType::Q8_K: break;
    }
    fail(INLAY_ERR_INTERNAL, "vec_dot_type: unhandled type {}", dtype_name(weight));
}

void quantize_activations(DType act_type, const float* x, void* out, int64_t n) {
    check_activation_row(act_type, x, out, n, "quantize_activations");
    if (n == 0) return;
    if (detail::quantize_activations_avx2(act_type, x, out, n)) return;
    quantize_activations_reference(act_type, x, out, n);
}

void quantize_activations_reference(DType act_type, const float* x, void* out, int64_t n) {
    check_activation_row(act_type, x, out, n, "quantize_activations_reference");
    if (n == 0) return;
    switch (act_type) {
        case DType::Q8_0: detail::quantize_activations_q8_0(x, static_cast<BlockQ8_0*>(out), n); return;
        case DType::Q8_1: detail::quantize_activations_q8_1(x, static_cast<BlockQ8_1*>(out), n); return;
        default: quantize_row(act_type, x, out, n); return;
    }
}

VecDotFn vec_dot_kernel(DType weight) {
    check_known(weight, "vec_dot_kernel");
    if (VecDotFn fast = detail::avx2_kernel(weight)) return fast;
    return detail::reference_kernel(weight);
}

VecDotFn vec_dot_kernel_reference(DType weight) {
    check_known(weight, "vec_dot_kernel_reference");
    return detail::reference_kernel(weight);
}

namespace {

void check_rows(DType weight, int64_t n, int64_t n_rows, const void* result, const void* w, const void* x,
                const char* what) {
    check_known(weight, what);
    const int64_t block = dtype_traits(weight).block_elems;
    if (n <= 0 || n % block != 0) {
        fail(INLAY_ERR_INVALID_ARGUMENT, "{}: {} elements is not a positive multiple of {}'s block of {}", what, n,
             dtype_name(weight), block);
    }
    if (n_rows < 0) fail(INLAY_ERR_INVALID_ARGUMENT, "{}: negative row count {}", what, n_rows);
    if (n_rows > 0 && (result == nullptr || w == nullptr || x == nullptr))
        fail(INLAY_ERR_INVALID_ARGUMENT, "{}: null pointer", what);
}

// vec_dot_rows after its checks.
void rows_unchecked(DType weight, int64_t n, int64_t n_rows, float* result, const void* w, size_t w_stride,
                    const void* x_row) {
    if (detail::VecDotRowsFn rows = detail::avx2_rows_kernel(weight)) {
        rows(n, n_rows, result, w, w_stride, x_row);
        return;
    }
    const VecDotFn kernel = vec_dot_kernel(weight);
    const auto* base = static_cast<const std::byte*>(w);
    for (int64_t r = 0; r < n_rows; ++r) kernel(n, result + r, base + static_cast<size_t>(r) * w_stride, x_row);
}

}  // namespace

void vec_dot_rows(DType weight, int64_t n, int64_t n_rows, float* result, const void* w, size_t w_stride,
                  const void* x_row) {
    check_rows(weight, n, n_rows, result, w, x_row, "vec_dot_rows");
    if (n_rows == 0) return;
    rows_unchecked(weight, n, n_rows, result, w, w_stride, x_row);
}

namespace {

// Which matrix-unit kernel, if any, serves a product of n_tokens tokens. Q8_0 tiles read
// the weights as they are stored; the others unpack each weight row once per call, which
// pays off from about 8 tokens on (K-quants: at 4 the vector tiles are 1.6x faster, at 16
// the matrix unit is 2x; bench_kernels). (Every path gives the same bits, so the choice
// never changes a result.)
enum class AmxPath { none, q8_0, widened, q1_0, kquant };
constexpr int64_t kAmxUnpackMinTokens = 8;

AmxPath amx_path(DType weight, int64_t n, int64_t n_tokens) {
    if (n_tokens < 2 || n <= 0 || !detail::amx_usable()) return AmxPath::none;
    if (weight == DType::Q8_0 && n % 32 == 0) return AmxPath::q8_0;
    if ((weight == DType::Q4_0 || weight == DType::Q5_0) && n % 32 == 0 && n_tokens >= kAmxUnpackMinTokens)
        return AmxPath::widened;
    if (weight == DType::Q1_0 && n % 128 == 0 && n_tokens >= kAmxUnpackMinTokens) return AmxPath::q1_0;
    if (detail::amx_kquant_type(weight) && n % 256 == 0 && n_tokens >= kAmxUnpackMinTokens) return AmxPath::kquant;
    return AmxPath::none;
}

// Whether the sixteen-row tiles serve this product (AVX-512 VNNI without AMX).
bool rows16_path(DType weight, int64_t n, int64_t n_tokens) {
    return n_tokens >= detail::kRows16MinTokens && n > 0 && n % (weight == DType::Q1_0 ? 128 : 32) == 0 &&
           detail::avx512_rows16_tile_kernel(weight) != nullptr;
}

}  // namespace

TilePack::TilePack(DType weight, int64_t n, int64_t n_tokens, const void* x, size_t x_stride) {
    assign(weight, n, n_tokens, x, x_stride);
}

void TilePack::assign(DType weight, int64_t n, int64_t n_tokens, const void* x, size_t x_stride) {
    weight_ = weight;
    n_ = n;
    n_tokens_ = n_tokens;
    widened_ = false;
    bytes_.clear();  // keeps the capacity
    const AmxPath path = amx_path(weight, n, n_tokens);
    if (path == AmxPath::none && rows16_path(weight, n, n_tokens)) {
        if (x == nullptr) fail(INLAY_ERR_INVALID_ARGUMENT, "TilePack: null activations");
        bytes_.resize(detail::rows16_pack_bytes(n, n_tokens) + detail::kAmxAlign - 1);
        detail::rows16_pack(n, n_tokens, x, x_stride, detail::amx_aligned(bytes_.data()));
        return;
    }
    if (path == AmxPath::none && n_tokens >= 2 && n > 0 && detail::avx512_tile_kernel_widened(weight)) {
        if (x == nullptr) fail(INLAY_ERR_INVALID_ARGUMENT, "TilePack: null activations");
        bytes_.resize(static_cast<size_t>(n_tokens) * static_cast<size_t>(n) * sizeof(float) + detail::kAmxAlign - 1);
        auto* out = reinterpret_cast<float*>(detail::amx_aligned(bytes_.data()));
        const auto* xb = static_cast<const std::byte*>(x);
        for (int64_t t = 0; t < n_tokens; ++t)  // exact: every 16-bit float is an f32
            dequantize_row(weight, xb + static_cast<size_t>(t) * x_stride, out + static_cast<size_t>(t * n), n);
        widened_ = true;
        return;
    }
    if (path == AmxPath::none) return;
    if (x == nullptr) fail(INLAY_ERR_INVALID_ARGUMENT, "TilePack: null activations");
    const bool q8_k = path == AmxPath::kquant;
    const size_t size = q8_k ? detail::amx_pack_q8_k_bytes(n, n_tokens) : detail::amx_pack_q8_0_bytes(n, n_tokens);
    bytes_.resize(size + detail::kAmxAlign - 1);
    std::byte* out = detail::amx_aligned(bytes_.data());
    if (q8_k) detail::amx_pack_q8_k(n, n_tokens, x, x_stride, out);
    else detail::amx_pack_q8_0(n, n_tokens, x, x_stride, out);
}

void TilePack::require_made_for(DType weight, int64_t n, int64_t n_tokens, const char* caller) const {
    if (weight_ != weight || n_ != n || n_tokens_ != n_tokens)
        fail(INLAY_ERR_INVALID_ARGUMENT, "{}: the pack was made for {} x {} of {}, not {} x {} of {}", caller, n_tokens_,
             n_, dtype_name(weight_), n_tokens, n, dtype_name(weight));
}

void vec_dot_tile(DType weight, int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride,
                  const void* w, size_t w_stride, const void* x, size_t x_stride, const TilePack* pack) {
    check_rows(weight, n, n_rows, result, w, x, "vec_dot_tile");
    if (n_tokens < 0) fail(INLAY_ERR_INVALID_ARGUMENT, "vec_dot_tile: negative token count {}", n_tokens);
    if (pack) pack->require_made_for(weight, n, n_tokens, "vec_dot_tile");
    if (n_rows == 0 || n_tokens == 0) return;
    const auto* xb = static_cast<const std::byte*>(x);
    if (const AmxPath path = amx_path(weight, n, n_tokens); path != AmxPath::none) {
        TilePack own;
        if (!pack) {
            own = TilePack(weight, n, n_tokens, x, x_stride);
            pack = &own;
        }
        const std::byte* packed = detail::amx_aligned(pack->bytes_.data());
        if (path == AmxPath::q8_0) detail::amx_tile_q8_0(n, n_rows, n_tokens, result, result_stride, w, w_stride, packed);
        else if (path == AmxPath::widened)
            detail::amx_tile_widened(weight, n, n_rows, n_tokens, result, result_stride, w, w_stride, packed);
        else if (path == AmxPath::q1_0)
            detail::amx_tile_q1_0(n, n_rows, n_tokens, result, result_stride, w, w_stride, packed);
        else detail::amx_tile_kquant(weight, n, n_rows, n_tokens, result, result_stride, w, w_stride, packed);
        return;
    }
    if (rows16_path(weight, n, n_tokens)) {
        TilePack own;
        if (!pack) {
            own = TilePack(weight, n, n_tokens, x, x_stride);
            pack = &own;
        }
        detail::avx512_rows16_tile_kernel(weight)(n, n_rows, n_tokens, result, result_stride, w, w_stride,
                                                  detail::amx_aligned(pack->bytes_.data()));
        return;
    }
    if (pack && pack->widened_) {
        detail::avx512_tile_kernel_widened(weight)(n, n_rows, n_tokens, result, result_stride, w, w_stride,
                                                   detail::amx_aligned(pack->bytes_.data()),
                                                   static_cast<size_t>(n) * sizeof(float));
        return;
    }
    // One token: the row kernels, tuned for decoding a single sequence.
    detail::VecDotTileFn tile = nullptr;
    if (n_tokens > 1) {
        tile = detail::avx512_tile_kernel(weight);
        if (!tile && n_tokens >= detail::rows8_min_tokens(weight)) tile = detail::avx2_rows8_tile_kernel(weight);
        if (!tile) tile = detail::avx2_tile_kernel(weight);
        if (!tile && n_tokens >= detail::rows8_kquant_min_tokens(weight)) tile = detail::avx2_rows8_kquant_tile_kernel(weight);
        if (!tile) tile = detail::avx2_kquant_tile_kernel(weight);
    }
    if (tile) {
        tile(n, n_rows, n_tokens, result, result_stride, w, w_stride, x, x_stride);
        return;
    }
    for (int64_t t = 0; t < n_tokens; ++t)
        rows_unchecked(weight, n, n_rows, result + static_cast<size_t>(t) * result_stride, w, w_stride,
                       xb + static_cast<size_t>(t) * x_stride);
}

void vec_dot_interleaved(DType weight, int64_t n, int64_t n_rows, int64_t n_tokens, float* result, size_t result_stride,
                         const void* w16, const void* x, size_t x_stride, const TilePack* pack) {
    if (!interleaved_rows_supported(weight, n, n_rows) || n_tokens < 0 ||
        (n_tokens > 0 && (result == nullptr || w16 == nullptr || x == nullptr)))
        fail(INLAY_ERR_INVALID_ARGUMENT, "vec_dot_interleaved: {} rows of {} {} x {} tokens not supported here", n_rows,
             n, dtype_name(weight), n_tokens);
    if (pack) pack->require_made_for(weight, n, n_tokens, "vec_dot_interleaved");
    if (n_tokens == 0) return;
    if (n_tokens > kStreamedTokens) {
        if (detail::VecDotTileFn kquant = detail::avx512_rows16_kquant_interleaved_kernel(weight)) {
            kquant(n, n_rows, n_tokens, result, result_stride, w16, 0, x, x_stride);
            return;
        }
    }
    if (n_tokens > kStreamedTokens && rows16_path(weight, n, n_tokens)) {
        TilePack own;
        if (!pack) {
            own = TilePack(weight, n, n_tokens, x, x_stride);
            pack = &own;
        }
        detail::avx512_rows16_interleaved_kernel(weight)(n, n_rows, n_tokens, result, result_stride, w16, 0,
                                                         detail::amx_aligned(pack->bytes_.data()));
        return;
    }
    detail::interleaved_tiles(weight, n, n_rows, n_tokens, result, result_stride, w16, x, x_stride);
}

}  // namespace inlay::quant
