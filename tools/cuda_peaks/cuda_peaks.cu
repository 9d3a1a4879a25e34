// inlay-cuda-peaks: the ceilings the GPU benchmark is judged against, measured on the
// device in the same run (issue 9: decode against the measured memory bandwidth, prompts
// against the measured cuBLAS F16 GEMM rate):
//   - read bandwidth: a kernel streaming a 4 GiB buffer once (16-byte loads, one sum
//     per CTA written), as decode reads its weights; and cudaMemcpy device to device
//     (bytes read + written);
//   - cuBLAS GEMM rates: F16 and BF16 operands with F32 accumulation (cublasGemmEx, as
//     inlay's prompt path calls it) and SGEMM, at 8192^3 and at Llama-3-8B's prompt shapes
//     for 2048 tokens.
// Best of 10 timed repetitions after 2 warm-ups, CUDA events. Prints a table, or one JSON
// object with --json. Exits 77 (skipped) without a CUDA device, 1 on any CUDA or cuBLAS
// error (named on stderr).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

bool ok(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return true;
    std::fprintf(stderr, "inlay-cuda-peaks: %s: %s\n", what, cudaGetErrorString(e));
    return false;
}
bool ok(cublasStatus_t s, const char* what) {
    if (s == CUBLAS_STATUS_SUCCESS) return true;
    std::fprintf(stderr, "inlay-cuda-peaks: %s: cuBLAS status %d\n", what, static_cast<int>(s));
    return false;
}

__global__ void read_kernel(const uint4* __restrict__ p, long long n, unsigned* out) {
    unsigned acc = 0;
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const uint4 v = __ldg(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    // One word per CTA (so the loads are not dead code), from lane 0 of warp 0.
    for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
    if (threadIdx.x == 0) out[blockIdx.x] = acc;
}

// Operands of uniform values in [-1, 1) from a hash of the index (GEMM rates are lower on
// random data than on constants: more bits toggle).
__global__ void fill_kernel(void* p, long long n, int type) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned long long z = static_cast<unsigned long long>(i) * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull;
        const float v = static_cast<float>(static_cast<int>((z >> 40) & 0xffffff) - 0x800000) / 8388608.0f;
        if (type == 0) static_cast<float*>(p)[i] = v;
        else if (type == 1) static_cast<__half*>(p)[i] = __float2half_rn(v);
        else static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
    }
}

// Best time in ms of `reps` runs of f after `warm` untimed ones.
template <class F>
float best_ms(F&& f, int warm = 2, int reps = 10) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int i = 0; i < warm; ++i) f();
    float best = 1e30f;
    for (int i = 0; i < reps; ++i) {
        cudaEventRecord(a);
        f();
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        best = std::min(best, ms);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return best;
}

struct Gemm {
    const char* name;
    int m, n, k;
    cudaDataType type;  // operands; CUDA_R_32F: SGEMM
    double tflops = 0;
};

}  // namespace

int main(int argc, char** argv) {
    const bool json = argc > 1 && std::strcmp(argv[1], "--json") == 0;
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        // A GPU run (INLAY_TEST_EXPECT_GPU=1, scripts/gpu-check.sh) fails instead.
        const char* expect = std::getenv("INLAY_TEST_EXPECT_GPU");
        const bool expected = expect != nullptr && std::strcmp(expect, "1") == 0;
        std::printf("inlay-cuda-peaks: no CUDA device (%s)\n", expected ? "one was expected" : "skipped");
        return expected ? 1 : 77;
    }
    cudaDeviceProp prop{};
    if (!ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties")) return 1;

    // Read bandwidth.
    const size_t bytes = size_t{4} << 30;
    void* buf = nullptr;
    void* dst = nullptr;
    unsigned* sink = nullptr;
    if (!ok(cudaMalloc(&buf, bytes), "cudaMalloc (4 GiB)") || !ok(cudaMalloc(&dst, bytes / 2), "cudaMalloc (2 GiB)") ||
        !ok(cudaMalloc(&sink, sizeof(unsigned) * 65536), "cudaMalloc (sink)"))
        return 1;
    if (!ok(cudaMemset(buf, 1, bytes), "cudaMemset")) return 1;
    const int blocks = prop.multiProcessorCount * 8;
    const float read_ms = best_ms([&] {
        read_kernel<<<blocks, 256>>>(static_cast<const uint4*>(buf), static_cast<long long>(bytes / 16), sink);
    });
    const float copy_ms = best_ms([&] { cudaMemcpyAsync(dst, buf, bytes / 2, cudaMemcpyDeviceToDevice); });
    if (!ok(cudaGetLastError(), "read kernel / copy")) return 1;
    const double read_gbs = static_cast<double>(bytes) / (read_ms * 1e-3) / 1e9;
    const double copy_gbs = static_cast<double>(bytes) / (copy_ms * 1e-3) / 1e9;  // half read + half written
    cudaFree(dst);

    // GEMM rates: column-major C[m][n] = A^T B with A k x m (OP_T), as inlay calls it.
    cublasHandle_t h = nullptr;
    if (!ok(cublasCreate(&h), "cublasCreate")) return 1;
    std::vector<Gemm> gemms = {{"f16 8192^3", 8192, 8192, 8192, CUDA_R_16F},
                               {"bf16 8192^3", 8192, 8192, 8192, CUDA_R_16BF},
                               {"f32 8192^3 (SGEMM)", 8192, 8192, 8192, CUDA_R_32F},
                               {"f16 qkv-o 4096x2048x4096", 4096, 2048, 4096, CUDA_R_16F},
                               {"f16 gate/up 14336x2048x4096", 14336, 2048, 4096, CUDA_R_16F},
                               {"f16 down 4096x2048x14336", 4096, 2048, 14336, CUDA_R_16F}};
    // Operands carved from the 4 GiB buffer, filled for each type.
    auto* base = static_cast<char*>(buf);
    for (Gemm& g : gemms) {
        const size_t es = g.type == CUDA_R_32F ? 4 : 2;
        const size_t a_bytes = es * static_cast<size_t>(g.k) * g.m, b_bytes = es * static_cast<size_t>(g.k) * g.n;
        const size_t c_bytes = 4 * static_cast<size_t>(g.m) * g.n;
        if (a_bytes + b_bytes + c_bytes > bytes) continue;
        void* A = base;
        void* B = base + a_bytes;
        void* C = base + a_bytes + b_bytes;
        const int fill_type = g.type == CUDA_R_32F ? 0 : (g.type == CUDA_R_16F ? 1 : 2);
        fill_kernel<<<blocks, 256>>>(A, static_cast<long long>(a_bytes / es), fill_type);
        fill_kernel<<<blocks, 256>>>(B, static_cast<long long>(b_bytes / es), fill_type);
        if (!ok(cudaGetLastError(), "fill")) return 1;
        const float one = 1.0f, zero = 0.0f;
        bool good = true;
        const float ms = best_ms([&] {
            cublasStatus_t s;
            if (g.type == CUDA_R_32F)
                s = cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, g.m, g.n, g.k, &one, static_cast<const float*>(A), g.k,
                                static_cast<const float*>(B), g.k, &zero, static_cast<float*>(C), g.m);
            else
                s = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, g.m, g.n, g.k, &one, A, g.type, g.k, B, g.type, g.k, &zero,
                                 C, CUDA_R_32F, g.m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
            good = good && ok(s, g.name);
        });
        if (good) g.tflops = 2.0 * g.m * g.n * static_cast<double>(g.k) / (ms * 1e-3) / 1e12;
    }
    cublasDestroy(h);
    cudaFree(buf);
    cudaFree(sink);

    if (json) {
        std::printf("{\"device\":\"%s\",\"sms\":%d,\"read_gbps\":%.1f,\"copy_gbps\":%.1f,\"gemm_tflops\":{", prop.name,
                    prop.multiProcessorCount, read_gbs, copy_gbs);
        for (size_t i = 0; i < gemms.size(); ++i)
            std::printf("%s\"%s\":%.1f", i ? "," : "", gemms[i].name, gemms[i].tflops);
        std::printf("}}\n");
    } else {
        std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
        std::printf("read bandwidth (4 GiB streamed)  %8.1f GB/s\n", read_gbs);
        std::printf("cudaMemcpy D2D (read + write)     %8.1f GB/s\n", copy_gbs);
        for (const Gemm& g : gemms) std::printf("GEMM %-30s %8.1f TFLOP/s\n", g.name, g.tflops);
    }
    for (const Gemm& g : gemms)
        if (g.tflops <= 0) return 1;
    return 0;
}
