// The kernel sources NVRTC compiles at load time, and the names of their instantiations.
//
// The files are embedded into the library at build time from the same kernels/cuda
// files that nvcc compiles (embed_sources.cmake), so a kernel compiled at load time is
// the same code as the one built ahead of time; only its template arguments differ.
// Today that is the paged attention kernel (paged_attention.cuh and its two headers).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "inlay_cuda_kernels.h"
#include "nvrtc_compile.h"

namespace inlay::cuda::nvrtc_sources {

struct SourceFile {
    const char* name;  // file name, as the sources #include it
    const char* text;
};

// Every embedded file.
[[nodiscard]] std::vector<SourceFile> files();

// The text of an embedded file, or nullptr.
[[nodiscard]] const char* file_text(std::string_view name);

// A shape of paged_attention_kernel.
struct AttentionShape {
    int head_dim = 128;
    int group = 1;        // query heads per kv head
    int block_size = 16;  // KV block size (token slots)
    KvType kv_type = KvType::f16;
};

// What the kernel template accepts: head_dim a multiple of 32 in [32, 256], group in
// [1, 32], block_size a power of two. Others would fail its static_asserts.
[[nodiscard]] bool attention_shape_supported(const AttentionShape& shape);

// "inlay::cuda::attn::paged_attention_kernel<128, 8, 16, inlay::cuda::attn::KvF16>"
[[nodiscard]] std::string attention_name_expression(const AttentionShape& shape);

// A compile request for the given shapes (one name expression each, in order) for arch
// (e.g. "sm_90"), CUBIN or PTX. The image holds one __global__ per shape plus the merge
// kernel; load it with cudaLibraryLoadData and find each kernel with cudaLibraryGetKernel
// by its lowered name (Result::lowered_names), then pass it to attention_decode(..., kernel).
[[nodiscard]] nvrtc::Request attention_request(const std::vector<AttentionShape>& shapes, const std::string& arch,
                                               bool cubin = true);

}  // namespace inlay::cuda::nvrtc_sources
