// embed_rows: out[t] = dequantized row ids[t] of a table in any weight format; and
// dequantize_rows_f16: rows 0.. of a table as binary16, for a tensor-core GEMM.
#include "inlay_cuda_kernels.h"
#include "launch_util.h"
#include "saturate_half.cuh"
#include "weight_decode.cuh"

namespace inlay::cuda {
namespace {

constexpr int kThreads = 256;

struct EmbedArgs {
    const unsigned char* table;
    long long n_rows;
    long long n_cols;
    long long row_stride;  // bytes
    const int* ids;  // null: row t for token t
    long long n_tokens;
    void* out;
    long long out_stride;
    int* error_flag;
    bool wide;
};

__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(__half* p, float v) { *p = dev::saturate_to_f16(v); }

// Thread (blockIdx.x * kThreads + threadIdx.x) decodes one unit of the row (or, past the
// units, one tail element of a float row) for tokens blockIdx.y, + gridDim.y, ...
template <class F, class Out>
__global__ void __launch_bounds__(kThreads) embed_kernel(const EmbedArgs a) {
    constexpr int kW = F::kRuns * F::kRunLen;
    const long long u = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
    const long long n_units = a.n_cols / F::kBlockElems * F::kUnits;
    for (long long t = blockIdx.y; t < a.n_tokens; t += gridDim.y) {
        long long id = a.ids ? __ldg(a.ids + t) : t;
        if (id < 0 || id >= a.n_rows) {
            if (a.error_flag && u == 0) *a.error_flag = 1;
            id = id < 0 ? 0 : a.n_rows - 1;
        }
        const unsigned char* row = a.table + id * a.row_stride;
        Out* o = static_cast<Out*>(a.out) + t * a.out_stride;
        if (u < n_units) {
            const long long blk = u / F::kUnits;
            const int ui = static_cast<int>(u % F::kUnits);
            float w[kW];
            dev::decode_unit<F>(row + blk * F::kBlockBytes, ui, a.wide, w);
            Out* ob = o + blk * F::kBlockElems;
#pragma unroll
            for (int r = 0; r < F::kRuns; ++r) {
#pragma unroll
                for (int i = 0; i < F::kRunLen; ++i) store(ob + F::run_col(ui, r) + i, w[r * F::kRunLen + i]);
            }
        } else if constexpr (F::kScalarTail) {
            const long long c = n_units * F::kBlockElems + (u - n_units);
            if (c < a.n_cols) store(o + c, F::elem(row, c));
        }
    }
}

template <class F, class Out>
cudaError_t launch(const EmbedArgs& a, cudaStream_t stream) {
    const long long n_units = a.n_cols / F::kBlockElems * F::kUnits;
    const long long items = n_units + (F::kScalarTail ? a.n_cols % F::kBlockElems : 0);
    const dim3 grid(detail::blocks_for(items, kThreads),
                    static_cast<unsigned>(a.n_tokens < detail::kMaxGridYZ ? a.n_tokens : detail::kMaxGridYZ));
    embed_kernel<F, Out><<<grid, kThreads, 0, stream>>>(a);
    return detail::launch_status();
}

// Checks the table arguments common to both entry points and fills them into `a` (ids,
// out and the token count are the caller's).
cudaError_t table_args(const void* table, WeightFormat format, int64_t n_rows, int64_t n_cols, size_t row_stride_bytes,
                       int64_t out_stride, EmbedArgs& a) {
    if (!table || n_rows <= 0 || n_cols < 0 || out_stride < n_cols) return cudaErrorInvalidValue;
    const int64_t block_elems = weight_block_elems(format);
    if (block_elems <= 0 || n_cols % block_elems != 0) return cudaErrorInvalidValue;
    const size_t row_bytes =
        static_cast<size_t>(n_cols / block_elems) * static_cast<size_t>(weight_block_bytes(format));
    const auto elem_align = static_cast<size_t>(format == WeightFormat::f32 ? 4 : 2);
    if (row_stride_bytes < row_bytes || row_stride_bytes % elem_align != 0 || !detail::aligned(table, elem_align))
        return cudaErrorInvalidValue;
    a.table = static_cast<const unsigned char*>(table);
    a.n_rows = n_rows;
    a.n_cols = n_cols;
    a.row_stride = static_cast<long long>(row_stride_bytes);
    a.out_stride = out_stride;
    a.wide = detail::aligned(table, 16) && row_stride_bytes % 16 == 0;
    return cudaSuccess;
}

template <class Out>
cudaError_t launch_format(WeightFormat format, const EmbedArgs& a, cudaStream_t stream) {
    switch (format) {
        case WeightFormat::f32:
            return launch<dev::FmtF32, Out>(a, stream);
        case WeightFormat::f16:
            return launch<dev::FmtF16, Out>(a, stream);
        case WeightFormat::bf16:
            return launch<dev::FmtBF16, Out>(a, stream);
        case WeightFormat::q8_0:
            return launch<dev::FmtQ8_0, Out>(a, stream);
        case WeightFormat::q4_0:
            return launch<dev::FmtQ4_0, Out>(a, stream);
        case WeightFormat::q4_k:
            return launch<dev::FmtQ4_K, Out>(a, stream);
        case WeightFormat::q5_k:
            return launch<dev::FmtQ5_K, Out>(a, stream);
        case WeightFormat::q6_k:
            return launch<dev::FmtQ6_K, Out>(a, stream);
        case WeightFormat::q1_0:
            return launch<dev::FmtQ1_0, Out>(a, stream);
    }
    return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t embed_rows(const void* table, WeightFormat format, int64_t n_rows, int64_t n_cols, size_t row_stride_bytes,
                       const int32_t* ids, int64_t n_tokens, float* out, int64_t out_stride, int* error_flag,
                       cudaStream_t stream) {
    if (!ids || !out || n_tokens < 0) return cudaErrorInvalidValue;
    EmbedArgs a{};
    if (const cudaError_t e = table_args(table, format, n_rows, n_cols, row_stride_bytes, out_stride, a); e != cudaSuccess)
        return e;
    if (n_tokens == 0 || n_cols == 0) return cudaSuccess;
    a.ids = ids;
    a.n_tokens = n_tokens;
    a.out = out;
    a.error_flag = error_flag;
    return launch_format<float>(format, a, stream);
}

cudaError_t dequantize_rows_f16(const void* table, WeightFormat format, int64_t n_rows, int64_t n_cols,
                                size_t row_stride_bytes, void* out, int64_t out_stride, cudaStream_t stream) {
    if (!out || !detail::aligned(out, 2)) return cudaErrorInvalidValue;
    EmbedArgs a{};
    if (const cudaError_t e = table_args(table, format, n_rows, n_cols, row_stride_bytes, out_stride, a); e != cudaSuccess)
        return e;
    if (n_cols == 0) return cudaSuccess;
    a.ids = nullptr;
    a.n_tokens = n_rows;
    a.out = out;
    a.error_flag = nullptr;
    return launch_format<__half>(format, a, stream);
}

}  // namespace inlay::cuda
