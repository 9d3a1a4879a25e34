// The embedded kernel sources (see nvrtc_sources.h; the texts are in the generated
// nvrtc_sources_data.cpp).
#include "nvrtc_sources.h"

#include <string>

namespace inlay::cuda::nvrtc_sources {
namespace detail {
extern const SourceFile kFiles[];
extern const size_t kFileCount;
}  // namespace detail

std::vector<SourceFile> files() {
    return {detail::kFiles, detail::kFiles + detail::kFileCount};
}

const char* file_text(std::string_view name) {
    for (size_t i = 0; i < detail::kFileCount; ++i) {
        if (name == detail::kFiles[i].name) return detail::kFiles[i].text;
    }
    return nullptr;
}

bool attention_shape_supported(const AttentionShape& s) {
    const bool pow2 = s.block_size >= 1 && (s.block_size & (s.block_size - 1)) == 0;
    return s.head_dim >= 32 && s.head_dim <= 256 && s.head_dim % 32 == 0 && s.group >= 1 && s.group <= 32 && pow2 &&
           (s.kv_type == KvType::f16 || s.kv_type == KvType::f32);
}

std::string attention_name_expression(const AttentionShape& s) {
    return "inlay::cuda::attn::paged_attention_kernel<" + std::to_string(s.head_dim) + ", " + std::to_string(s.group) +
           ", " + std::to_string(s.block_size) + ", " +
           (s.kv_type == KvType::f16 ? "inlay::cuda::attn::KvF16" : "float") + ">";
}

nvrtc::Request attention_request(const std::vector<AttentionShape>& shapes, const std::string& arch, bool cubin) {
    nvrtc::Request r;
    r.source = "#include \"paged_attention.cuh\"\n";
    r.source_name = "paged_attention_nvrtc.cu";
    for (const SourceFile& f : files()) r.headers.push_back({f.name, f.text});
    for (const AttentionShape& s : shapes) r.name_expressions.push_back(attention_name_expression(s));
    r.arch = arch;
    r.cubin = cubin;
    return r;
}

}  // namespace inlay::cuda::nvrtc_sources
