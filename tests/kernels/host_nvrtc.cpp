// NVRTC without a GPU: every runtime-specialised attention variant compiles for sm_80 and
// sm_90 (CUBIN and PTX) to an image that names the expected kernel and, in ptxas's own
// report, spills nothing; broken sources come back as statuses with the log; and the
// embedded sources are the files nvcc compiles.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "nvrtc_compile.h"
#include "nvrtc_sources.h"

using namespace inlay::cuda;
using nvrtc_sources::AttentionShape;

namespace {

bool contains(const std::vector<char>& image, const std::string& needle) {
    return std::search(image.begin(), image.end(), needle.begin(), needle.end()) != image.end();
}

// ptxas -v lines for `kernel` in a log: "Function properties for K" then
// "N bytes stack frame, S bytes spill stores, L bytes spill loads".
bool log_reports_no_spill(const std::string& log, const std::string& kernel) {
    const size_t at = log.find("Function properties for " + kernel);
    if (at == std::string::npos) return false;
    const size_t line = log.find("bytes stack frame", at);
    if (line == std::string::npos) return false;
    const size_t end = log.find('\n', line);
    const std::string props = log.substr(line, end == std::string::npos ? std::string::npos : end - line);
    return props.find(" 0 bytes spill stores, 0 bytes spill loads") != std::string::npos;
}

std::string shape_name(const AttentionShape& s) {
    return "head_dim " + std::to_string(s.head_dim) + ", group " + std::to_string(s.group) + ", block " +
           std::to_string(s.block_size) + (s.kv_type == KvType::f16 ? ", f16" : ", f32");
}

// The mangled prefix of paged_attention_kernel<HD, G, BS, ...>.
std::string mangled_prefix(const AttentionShape& s) {
    return "_ZN5inlay4cuda4attn22paged_attention_kernelILi" + std::to_string(s.head_dim) + "ELi" +
           std::to_string(s.group) + "ELi" + std::to_string(s.block_size) + "E";
}

}  // namespace

TEST_CASE("NVRTC compiles every runtime-specialised attention variant", "[kernels][nvrtc]") {
    REQUIRE(nvrtc::version() >= 12000);
    std::vector<AttentionShape> shapes;
    for (int hd : {64, 128})
        for (int g : {1, 4, 8})
            for (KvType t : {KvType::f16, KvType::f32}) shapes.push_back({hd, g, 16, t});
    for (const std::string arch : {"sm_80", "sm_90"}) {
        for (const AttentionShape& s : shapes) {
            INFO(arch << ", " << shape_name(s));
            REQUIRE(nvrtc_sources::attention_shape_supported(s));

            nvrtc::Request cubin = nvrtc_sources::attention_request({s}, arch, true);
            cubin.options.push_back("-Xptxas=-v");
            const nvrtc::Result c = nvrtc::compile(cubin);
            INFO(c.message);
            REQUIRE(c.ok());
            REQUIRE(c.lowered_names.size() == 1);
            const std::string& name = c.lowered_names[0];
            CHECK(name.rfind(mangled_prefix(s), 0) == 0);
            CHECK(name.find(s.kv_type == KvType::f16 ? "KvF16" : "EfEEv") != std::string::npos);
            REQUIRE(c.image.size() > 1000);
            CHECK(std::string(c.image.begin(), c.image.begin() + 4) ==
                  "\x7f"
                  "ELF");
            CHECK(contains(c.image, name));
            INFO(c.log);
            CHECK(log_reports_no_spill(c.log, name));

            const nvrtc::Result p = nvrtc::compile(nvrtc_sources::attention_request({s}, arch, false));
            INFO(p.message);
            REQUIRE(p.ok());
            REQUIRE(p.lowered_names.size() == 1);
            CHECK(p.lowered_names[0] == name);
            REQUIRE(p.image.size() > 1000);
            CHECK(contains(p.image, ".entry " + name));
            CHECK(contains(p.image, ".target " + arch));
        }
    }
}

TEST_CASE("NVRTC covers shapes nvcc does not build, several per program", "[kernels][nvrtc]") {
    const std::vector<AttentionShape> shapes = {
        {96, 3, 8, KvType::f16}, {256, 8, 16, KvType::f32}, {128, 5, 32, KvType::f16}, {32, 32, 16, KvType::f32}};
    for (const AttentionShape& s : shapes) CHECK(nvrtc_sources::attention_shape_supported(s));
    const nvrtc::Result r = nvrtc::compile(nvrtc_sources::attention_request(shapes, "sm_90", true));
    INFO(r.message);
    REQUIRE(r.ok());
    REQUIRE(r.lowered_names.size() == shapes.size());
    for (size_t i = 0; i < shapes.size(); ++i) {
        CHECK(r.lowered_names[i].rfind(mangled_prefix(shapes[i]), 0) == 0);
        CHECK(contains(r.image, r.lowered_names[i]));
    }
    CHECK(contains(r.image, "paged_attention_merge_kernel"));
}

TEST_CASE("NVRTC failures are statuses with the log, never crashes", "[kernels][nvrtc]") {
    SECTION("a syntax error") {
        nvrtc::Request req;
        req.source = "__global__ void broken(float* x) { x[0] = ; }\n";
        req.source_name = "broken.cu";
        const nvrtc::Result r = nvrtc::compile(req);
        CHECK(r.status == nvrtc::Status::compile_error);
        CHECK(std::string(nvrtc::status_name(r.status)) == "compile_error");
        CHECK(r.image.empty());
        CHECK(r.log.find("error") != std::string::npos);
        CHECK(r.log.find("broken.cu") != std::string::npos);
        CHECK(r.message.find("broken.cu did not compile for sm_80") != std::string::npos);
        CHECK(r.message.find(r.log) != std::string::npos);
    }
    SECTION("a shape the kernel rejects (static_assert)") {
        const nvrtc::Result r =
            nvrtc::compile(nvrtc_sources::attention_request({AttentionShape{100, 1, 16, KvType::f16}}, "sm_80"));
        CHECK(r.status == nvrtc::Status::compile_error);
        CHECK(r.log.find("head_dim: a multiple of 32") != std::string::npos);
        CHECK_FALSE(nvrtc_sources::attention_shape_supported(AttentionShape{100, 1, 16, KvType::f16}));
    }
    SECTION("a missing header") {
        nvrtc::Request req;
        req.source = "#include \"not_there.cuh\"\n";
        const nvrtc::Result r = nvrtc::compile(req);
        CHECK(r.status == nvrtc::Status::compile_error);
        CHECK(r.log.find("not_there.cuh") != std::string::npos);
    }
    SECTION("a name expression that names nothing") {
        nvrtc::Request req = nvrtc_sources::attention_request({}, "sm_80");
        req.name_expressions.push_back("inlay::cuda::attn::no_such_kernel<1>");
        const nvrtc::Result r = nvrtc::compile(req);
        CHECK_FALSE(r.ok());
        CHECK_FALSE(r.message.empty());
    }
    SECTION("an unknown option") {
        nvrtc::Request req;
        req.source = "__global__ void k() {}\n";
        req.options.push_back("--no-such-option");
        const nvrtc::Result r = nvrtc::compile(req);
        CHECK(r.status == nvrtc::Status::nvrtc_error);
        CHECK(r.message.find("nvrtcCompileProgram") != std::string::npos);
    }
    SECTION("bad requests") {
        nvrtc::Request req;
        CHECK(nvrtc::compile(req).status == nvrtc::Status::invalid_argument);  // empty source
        req.source = "__global__ void k() {}\n";
        for (const char* arch : {"sm80", "compute_80", "sm_", "sm_9x", ""}) {
            req.arch = arch;
            CHECK(nvrtc::compile(req).status == nvrtc::Status::invalid_argument);
        }
        req.arch = "sm_90";
        CHECK(nvrtc::compile(req).ok());
    }
}

TEST_CASE("the embedded NVRTC sources are the files nvcc compiles", "[kernels][nvrtc]") {
    const std::vector<nvrtc_sources::SourceFile> files = nvrtc_sources::files();
    REQUIRE(files.size() == 3);
    for (const nvrtc_sources::SourceFile& f : files) {
        INFO(f.name);
        std::ifstream in(std::string(INLAY_KERNELS_SOURCE_DIR) + "/" + f.name, std::ios::binary);
        REQUIRE(in);
        std::stringstream text;
        text << in.rdbuf();
        CHECK(text.str() == f.text);
        CHECK(nvrtc_sources::file_text(f.name) == f.text);
    }
    CHECK(nvrtc_sources::file_text("paged_attention.cuh") != nullptr);
    CHECK(nvrtc_sources::file_text("gemv.cuh") == nullptr);
    CHECK(nvrtc_sources::attention_name_expression({128, 8, 16, KvType::f16}) ==
          "inlay::cuda::attn::paged_attention_kernel<128, 8, 16, inlay::cuda::attn::KvF16>");
    CHECK(nvrtc_sources::attention_name_expression({64, 1, 8, KvType::f32}) ==
          "inlay::cuda::attn::paged_attention_kernel<64, 1, 8, float>");
}
