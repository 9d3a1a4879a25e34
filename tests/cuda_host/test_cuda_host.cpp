// The CUDA backend's host-side logic, on any machine (CI has the toolkit and no GPU):
// batch packing, format and matmul-path choices, CUDA/cuBLAS error mapping, and what
// opening a device does where there is none (a clear status; `auto` falls back to the
// CPU). INLAY_TEST_EXPECT_GPU=1 marks a machine where a device must be found.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "backend/cuda/attention_kernels.h"
#include "backend/cuda/cublas_library.h"
#include "backend/cuda/step_graphs.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_error.h"
#include "core/error.h"
#include "io/gguf_reader.h"
#include "model/families/family.h"
#include "model/make_executor.h"
#include "support/gguf_fixtures.h"

using namespace inlay;
using namespace inlay::cuda_backend;

namespace {

bool expect_gpu() {
    const char* v = std::getenv("INLAY_TEST_EXPECT_GPU");
    return v && std::string(v) == "1";
}

inlay_status status_of_call(auto&& fn) {
    try {
        fn();
        return INLAY_OK;
    } catch (const Error& e) {
        return e.status();
    }
}

}  // namespace

TEST_CASE("a batch is packed into one block, each array 16-byte aligned", "[cuda_host]") {
    BatchBuilder bb;
    const int32_t a = bb.add_sequence(std::vector<int32_t>{5, 6, 7}, 40);
    const int32_t c = bb.add_sequence(std::vector<int32_t>{1}, 3);
    bb.add_tokens(a, std::vector<int32_t>{11, 12, 13, 14, 15}, 35, 1);
    bb.add_token(21, 2, c, true);
    const BatchDesc d = bb.desc();
    const BatchOffsets o = batch_offsets(d);
    for (const size_t at : {o.tokens, o.positions, o.seq_of_token, o.kv_indptr, o.kv_indices, o.kv_len, o.logit_rows})
        REQUIRE(at % 4 == 0);
    REQUIRE(o.tokens == 0);
    REQUIRE(o.positions == 8);     // 6 tokens, padded to 8
    REQUIRE(o.seq_of_token == 16);
    REQUIRE(o.kv_indptr == 24);    // 3 entries -> 4
    REQUIRE(o.kv_indices == 28);   // 4 block ids
    REQUIRE(o.kv_len == 32);       // 2 -> 4
    REQUIRE(o.logit_rows == 36);   // 2 -> 4
    REQUIRE(o.total == 40);
    std::vector<int32_t> staging(o.total, -99);
    pack_batch(d, o, staging.data());
    auto slice = [&](size_t at, size_t n) { return std::vector<int32_t>(staging.begin() + static_cast<long>(at), staging.begin() + static_cast<long>(at + n)); };
    REQUIRE(slice(o.tokens, 6) == std::vector<int32_t>{11, 12, 13, 14, 15, 21});
    REQUIRE(slice(o.positions, 6) == std::vector<int32_t>{35, 36, 37, 38, 39, 2});
    REQUIRE(slice(o.seq_of_token, 6) == std::vector<int32_t>{0, 0, 0, 0, 0, 1});
    REQUIRE(slice(o.kv_indptr, 3) == std::vector<int32_t>{0, 3, 4});
    REQUIRE(slice(o.kv_indices, 4) == std::vector<int32_t>{5, 6, 7, 1});
    REQUIRE(slice(o.kv_len, 2) == std::vector<int32_t>{40, 3});
    REQUIRE(slice(o.logit_rows, 2) == std::vector<int32_t>{4, 5});
    REQUIRE(staging[6] == -99);  // padding untouched
    REQUIRE(o.fed_rows == o.total);  // no fed tokens: an empty array at the end

    // A pipelined step's fed rows follow the logit rows.
    BatchBuilder fed;
    const int32_t s = fed.add_sequence(std::vector<int32_t>{2}, 5);
    fed.add_fed_token(1, 4, s, true);
    const BatchDesc f = fed.desc();
    const BatchOffsets fo = batch_offsets(f);
    REQUIRE(fo.fed_rows == fo.logit_rows + 4);
    REQUIRE(fo.total == fo.fed_rows + 4);
    std::vector<int32_t> fed_staging(fo.total, -99);
    pack_batch(f, fo, fed_staging.data());
    REQUIRE(fed_staging[fo.fed_rows] == 1);
    REQUIRE(fed_staging[fo.tokens] == 0);  // the placeholder the device overwrites
}

TEST_CASE("every weight type the decoder uses has a device format; activation-only types none", "[cuda_host]") {
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q5_K,
                    DType::Q6_K, DType::Q1_0}) {
        INFO(dtype_name(t));
        const auto f = weight_format(t);
        REQUIRE(f.has_value());
        // The kernels' block sizes agree with the dtype table's.
        REQUIRE(cuda::weight_row_bytes(*f, 256) == *row_bytes(t, 256));
    }
    REQUIRE_FALSE(weight_format(DType::Q8_K).has_value());
    REQUIRE_FALSE(weight_format(DType::Q8_1).has_value());
}

TEST_CASE("matmul paths: GEMV for few tokens, SGEMM for f32, tensor cores on half weights or dequantized chunks",
          "[cuda_host]") {
    REQUIRE(plan_matmul(DType::Q4_K, 4096, 4096, 1, 0).path == MatmulPath::gemv);
    REQUIRE(plan_matmul(DType::Q4_K, 4096, 4096, kGemvMaxTokens, 0).path == MatmulPath::gemv);
    REQUIRE(plan_matmul(DType::F32, 4096, 4096, 9, 0).path == MatmulPath::gemm_f32);
    REQUIRE(plan_matmul(DType::F16, 4096, 4096, 9, 0).path == MatmulPath::gemm_half);
    REQUIRE(plan_matmul(DType::BF16, 4096, 4096, 2048, 0).path == MatmulPath::gemm_half);
    REQUIRE(gemm_half_type(DType::BF16) == cuda::HalfType::bf16);
    REQUIRE(gemm_half_type(DType::F16) == cuda::HalfType::f16);
    REQUIRE(gemm_half_type(DType::Q4_K) == cuda::HalfType::f16);
    const MatmulPlan p = plan_matmul(DType::Q8_0, 128256, 4096, 512, size_t{32} << 20);
    REQUIRE(p.path == MatmulPath::dequant_gemm);
    REQUIRE(p.rows_per_chunk == (int64_t{32} << 20) / 4096);
    REQUIRE(plan_matmul(DType::Q8_0, 100, 4096, 512, size_t{32} << 20).rows_per_chunk == 100);  // all rows
    REQUIRE(plan_matmul(DType::Q4_0, 1000, 4096, 512, 4096 * 13).rows_per_chunk == 8);       // a multiple of 8
    REQUIRE(plan_matmul(DType::Q4_0, 1000, 4096, 512, 4096 * 5).rows_per_chunk == 5);        // fewer: as many as fit
    REQUIRE(status_of_call([] { (void)plan_matmul(DType::Q8_0, 100, 4096, 512, 100); }) == INLAY_ERR_INTERNAL);
}

TEST_CASE("a row's sampling reaches the kernel field for field", "[cuda_host]") {
    RowSampling row;
    row.temperature = 0.7f;
    row.top_k = 40;
    row.top_p = 0.9f;
    row.min_p = 0.05f;
    row.inv_temperature = 1.0 / 0.7;
    row.log_min_p = -2.9957322735539909;
    row.u = 0.123456789012345;
    row.repeat_penalty = 1.1f;
    row.frequency_penalty = 0.25f;
    row.presence_penalty = -0.5f;
    row.penalty_begin = 17;
    row.penalty_count = 3;
    const cuda::SampleRowParams p = sample_row_params(row);
    REQUIRE(p.temperature == row.temperature);
    REQUIRE(p.top_k == row.top_k);
    REQUIRE(p.top_p == row.top_p);
    REQUIRE(p.min_p == row.min_p);
    REQUIRE(p.inv_temperature == row.inv_temperature);
    REQUIRE(p.log_min_p == row.log_min_p);
    REQUIRE(p.u == row.u);
    REQUIRE(p.repeat_penalty == row.repeat_penalty);
    REQUIRE(p.frequency_penalty == row.frequency_penalty);
    REQUIRE(p.presence_penalty == row.presence_penalty);
    REQUIRE(p.penalty_begin == row.penalty_begin);
    REQUIRE(p.penalty_count == row.penalty_count);
    STATIC_REQUIRE(sizeof(cuda::PenaltyPair) == sizeof(PenaltyEntry));
}

TEST_CASE("CUDA and cuBLAS errors map to statuses that name the call", "[cuda_host]") {
    REQUIRE(status_of(cudaSuccess) == INLAY_OK);
    REQUIRE(status_of(cudaErrorMemoryAllocation) == INLAY_ERR_OUT_OF_MEMORY);
    REQUIRE(status_of(cudaErrorNoDevice) == INLAY_ERR_UNSUPPORTED);
    REQUIRE(status_of(cudaErrorInsufficientDriver) == INLAY_ERR_UNSUPPORTED);
    REQUIRE(status_of(cudaErrorNoKernelImageForDevice) == INLAY_ERR_UNSUPPORTED);
    REQUIRE(status_of(cudaErrorInvalidDevice) == INLAY_ERR_INVALID_ARGUMENT);
    REQUIRE(status_of(cudaErrorIllegalAddress) == INLAY_ERR_INTERNAL);
    REQUIRE(status_of(CUBLAS_STATUS_ALLOC_FAILED) == INLAY_ERR_OUT_OF_MEMORY);
    REQUIRE(status_of(CUBLAS_STATUS_NOT_SUPPORTED) == INLAY_ERR_UNSUPPORTED);
    REQUIRE(status_of(CUBLAS_STATUS_EXECUTION_FAILED) == INLAY_ERR_INTERNAL);
    try {
        check_cuda(cudaErrorMemoryAllocation, "cudaMalloc (weights)");
        FAIL("no throw");
    } catch (const Error& e) {
        REQUIRE(e.status() == INLAY_ERR_OUT_OF_MEMORY);
        REQUIRE(std::string(e.what()).find("cudaMalloc (weights)") != std::string::npos);
        REQUIRE(std::string(e.what()).find("cudaErrorMemoryAllocation") != std::string::npos);
    }
    try {
        check_cublas(CUBLAS_STATUS_INVALID_VALUE, "cublasSgemm");
        FAIL("no throw");
    } catch (const Error& e) {
        REQUIRE(e.status() == INLAY_ERR_INTERNAL);
        REQUIRE(std::string(e.what()).find("cublasSgemm: CUBLAS_STATUS_INVALID_VALUE") != std::string::npos);
    }
}

TEST_CASE("cuBLAS is opened on demand, every entry point resolved; failures name the library", "[cuda_host]") {
    // The toolkit this build was configured with has it (CI's too), GPU or not.
    const CublasApi& api = cublas();
    CHECK(api.create != nullptr);
    CHECK(api.destroy != nullptr);
    CHECK(api.set_stream != nullptr);
    CHECK(api.sgemm != nullptr);
    CHECK(api.gemm_ex != nullptr);
    CHECK(&cublas() == &api);  // once per process
    CHECK(std::string(cublas_soname()).rfind("libcublas.so.", 0) == 0);

    CublasApi other;
    std::string why;
    CHECK_FALSE(load_cublas_api("libinlay-test-no-such-cublas.so", other, why));
    CHECK(why.find("libinlay-test-no-such-cublas.so") != std::string::npos);
    CHECK(other.create == nullptr);
    // A library that is not cuBLAS: the missing symbol is named.
    why.clear();
    CHECK_FALSE(load_cublas_api("libm.so.6", other, why));
    CHECK(why.find("cublasCreate_v2") != std::string::npos);
    CHECK(other.create == nullptr);
}

TEST_CASE("without a CUDA device: a clear status, and auto runs on the CPU", "[cuda_host]") {
    REQUIRE(cuda_backend_built());
    std::string why;
    const int n = CudaBackend::device_count(&why);
    if (expect_gpu()) {
        REQUIRE(n > 0);
        return;
    }
    REQUIRE(n == 0);
    REQUIRE_FALSE(why.empty());
    try {
        CudaBackend b(0);
        FAIL("a CudaBackend opened without a device");
    } catch (const Error& e) {
        REQUIRE(e.status() == INLAY_ERR_UNSUPPORTED);
        REQUIRE(std::string(e.what()).find("no CUDA device 0") != std::string::npos);
    }
    // Through the executor factory, on a real (tiny) model.
    const auto bytes = test::make_tiny_llama_gguf(test::TinyLlamaOptions{});
    const auto file = GgufFile::from_bytes(bytes, "tiny");
    DecoderSpec spec = spec_from_gguf_metadata(file->metadata());
    spec.n_vocab = test::TinyLlamaOptions{}.n_vocab;
    REQUIRE(status_of_call([&] {
                (void)make_executor(DeviceRequest{DeviceKind::cuda, 0, 1, std::nullopt, std::nullopt}, spec, *file);
            }) == INLAY_ERR_UNSUPPORTED);
    const auto ex = make_executor(DeviceRequest{DeviceKind::automatic, 0, 1, std::nullopt, std::nullopt}, spec, *file);
    REQUIRE(ex->kv_device() == "cpu");
}

TEST_CASE("attention kernels: built-in for common shapes, NVRTC where the template takes the shape, else generic",
          "[cuda_host]") {
    using cuda::KvType;
    using Shape = cuda::nvrtc_sources::AttentionShape;
    const auto source = [](int hd, int group, int block, KvType t) {
        return choose_attention_kernel(Shape{hd, group, block, t});
    };
    CHECK(source(128, 4, 16, KvType::f16) == AttentionKernelSource::builtin);  // Llama 3 8B, Qwen3-8B
    CHECK(source(64, 1, 16, KvType::f32) == AttentionKernelSource::builtin);
    CHECK(source(64, 3, 16, KvType::f16) == AttentionKernelSource::nvrtc);   // SmolLM2-135M/360M
    CHECK(source(128, 5, 16, KvType::f16) == AttentionKernelSource::nvrtc);  // Qwen3-14B
    CHECK(source(128, 4, 32, KvType::f16) == AttentionKernelSource::nvrtc);  // another block size
    CHECK(source(256, 32, 64, KvType::f32) == AttentionKernelSource::nvrtc);
    CHECK(source(48, 1, 16, KvType::f16) == AttentionKernelSource::generic);  // stories15M: not a multiple of 32
    CHECK(source(64, 3, 12, KvType::f16) == AttentionKernelSource::generic);  // blocks of 12: not a power of two
    CHECK(source(288, 1, 16, KvType::f16) == AttentionKernelSource::none);    // beyond every kernel
    CHECK(source(64, 33, 16, KvType::f16) == AttentionKernelSource::none);
    CHECK(std::string(attention_kernel_source_name(AttentionKernelSource::nvrtc)) == "NVRTC");
    CHECK(cuda_arch_name(9, 0) == "sm_90");
    CHECK(cuda_arch_name(8, 6) == "sm_86");
}

TEST_CASE("an NVRTC attention variant compiles once and is read from the disk cache after", "[cuda_host]") {
    std::string why;
    const bool nvrtc_loaded = cuda::nvrtc::available(&why);  // opened with dlopen, not linked
    INFO(why);
    REQUIRE(nvrtc_loaded);
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("inlay-test-attn-cache-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    const cuda::nvrtc_sources::AttentionShape smollm{64, 3, 16, cuda::KvType::f16};
    std::vector<char> image;
    {
        cuda::nvrtc::CompileCache cache(dir, 13000);
        const cuda::nvrtc::Result r = compile_attention_variant(smollm, "sm_90", cache);
        INFO(r.message);
        REQUIRE(r.ok());
        REQUIRE(r.lowered_names.size() == 1);
        CHECK(r.image.size() > 1000);
        CHECK(cache.stats().misses == 1);
        CHECK(cache.stats().stores == 1);
        image = r.image;
    }
    {
        // Another process (a new cache object) on the same machine and driver reads it.
        cuda::nvrtc::CompileCache cache(dir, 13000);
        const cuda::nvrtc::Result r = compile_attention_variant(smollm, "sm_90", cache);
        REQUIRE(r.ok());
        CHECK(cache.stats().hits == 1);
        CHECK(cache.stats().stores == 0);
        CHECK(r.image == image);
        // Another driver, or another architecture: compiled again, not taken from the cache.
        cuda::nvrtc::CompileCache other_driver(dir, 13010);
        CHECK(compile_attention_variant(smollm, "sm_90", other_driver).ok());
        CHECK(other_driver.stats().hits == 0);
        const cuda::nvrtc::Result sm80 = compile_attention_variant(smollm, "sm_80", cache);
        CHECK(sm80.ok());
        CHECK(cache.stats().hits == 1);
        CHECK(sm80.image != image);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("the kernel cache's directory comes from the environment, an empty override turns it off", "[cuda_host]") {
    CHECK(kernel_cache_dir("/data/kernels", "/xdg", "/home/u") == "/data/kernels");
    CHECK(kernel_cache_dir("", "/xdg", "/home/u").empty());  // set and empty: no disk cache
    CHECK(kernel_cache_dir(nullptr, "/xdg", "/home/u") == "/xdg/inlay/nvrtc");
    CHECK(kernel_cache_dir(nullptr, "relative", "/home/u") == "/home/u/.cache/inlay/nvrtc");  // XDG: ignored
    CHECK(kernel_cache_dir(nullptr, "", "/home/u") == "/home/u/.cache/inlay/nvrtc");
    CHECK(kernel_cache_dir(nullptr, nullptr, nullptr).empty());
    CHECK(kernel_cache_dir(nullptr, nullptr, "").empty());
}

TEST_CASE("prompt chunks on an f16 cache take the tensor-core prefill attention; decode steps do not", "[cuda_host]") {
    CHECK(use_flash_prefill(512, 1, 128, 4, DType::F16));      // a prompt chunk (Llama 3 8B)
    CHECK(use_flash_prefill(64, 4, 64, 3, DType::F16));        // four prompts of 16 (SmolLM2's group)
    CHECK_FALSE(use_flash_prefill(63, 1, 128, 4, DType::F16));  // too few tokens
    CHECK_FALSE(use_flash_prefill(64, 5, 128, 4, DType::F16));  // 64 sequences of ~1: a decode step
    CHECK_FALSE(use_flash_prefill(512, 1, 128, 4, DType::F32)); // f32 caches keep f32 arithmetic
    CHECK_FALSE(use_flash_prefill(512, 1, 96, 4, DType::F16));  // a head_dim the kernel lacks
    CHECK_FALSE(use_flash_prefill(512, 1, 48, 1, DType::F16));  // stories15M
    CHECK_FALSE(use_flash_prefill(512, 1, 128, 65, DType::F16));
    CHECK_FALSE(use_flash_prefill(512, 0, 128, 4, DType::F16));
}

TEST_CASE("CUDA graphs record a step shape from its second step on, GEMV-sized steps only", "[cuda_host]") {
    StepGraphPlanner planner(true);
    const StepShape decode1{1, 1, 16}, decode4{4, 4, 16};
    CHECK_FALSE(planner.should_capture(decode1, 8));  // first step of a shape: direct
    CHECK(planner.should_capture(decode1, 8));        // then recorded
    CHECK(planner.should_capture(decode1, 8));
    CHECK_FALSE(planner.should_capture(decode4, 8));
    CHECK(planner.should_capture(decode4, 8));
    CHECK_FALSE(planner.should_capture(StepShape{4, 1, 16}, 8));  // other logit rows: another shape
    CHECK_FALSE(planner.should_capture(StepShape{1, 1, 32}, 8));  // another KV geometry: another shape
    CHECK(planner.should_capture(StepShape{1, 1, 32}, 8));
    CHECK_FALSE(planner.should_capture(StepShape{1, 1, 32, true}, 8));  // fed tokens: another shape
    CHECK(planner.should_capture(StepShape{1, 1, 32, true}, 8));
    CHECK_FALSE(planner.should_capture(StepShape{9, 1, 16}, 8));  // cuBLAS GEMMs: never
    CHECK_FALSE(planner.should_capture(StepShape{9, 1, 16}, 8));
    CHECK_FALSE(planner.should_capture(StepShape{0, 0, 16}, 8));
    planner.disable();
    CHECK_FALSE(planner.enabled());
    CHECK_FALSE(planner.should_capture(decode1, 8));
    StepGraphPlanner off(false);
    CHECK_FALSE(off.should_capture(decode1, 8));
    CHECK_FALSE(off.should_capture(decode1, 8));
    // Without a device a workspace's graphs stay idle: a step that is not recorded runs
    // directly and end/abort have nothing to do.
    StepGraphs graphs(true);
    bool signed_ = false;
    CHECK_FALSE(graphs.begin(nullptr, decode1, 8, [&] {
        signed_ = true;
        return StepSignature{};
    }));
    CHECK_FALSE(signed_);  // a step run directly gathers no signature
    CHECK_FALSE(graphs.capturing());
    CHECK(graphs.stats().direct == 1);
    graphs.end(nullptr);
    CHECK_FALSE(graphs.abort(nullptr));
    CHECK(graphs.stats().launched == 0);
    // Signatures: any host value of a step's arguments that differs is another signature.
    StepSignature a;
    a.batch_offsets = {0, 8, 16, 24, 28, 32, 36, 40};
    a.logit_rows = {0};
    StepSignature b = a;
    CHECK(a == b);
    b.batch_offsets[5] = 36;  // a block table grew past a multiple of 4 entries
    CHECK_FALSE(a == b);
    b = a;
    b.attention_splits = 2;
    CHECK_FALSE(a == b);
    b = a;
    b.fed_tokens = true;  // the same layout, but the step starts by feeding its tokens
    CHECK_FALSE(a == b);
    b = a;
    b.logit_rows = {1};
    CHECK_FALSE(a == b);
    b = a;
    b.kv_type = 1;  // another cache type at the same addresses
    CHECK_FALSE(a == b);
}
