// llamacpp-quantize: llama.cpp's quantizer (llama_model_quantize with its default
// parameters, as llama-quantize calls it), for the tests' byte-for-byte checks.
//   llamacpp-quantize SOURCE.gguf OUT.gguf TYPE [THREADS]
// TYPE is one of F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q1_0 Q4_K_M Q6_K.
// Exit status: 0, 1 when llama.cpp fails, 2 on a usage error.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "llamacpp_common.h"

namespace {

constexpr std::pair<const char*, llama_ftype> kTypes[] = {
    {"F16", LLAMA_FTYPE_MOSTLY_F16},     {"BF16", LLAMA_FTYPE_MOSTLY_BF16},     {"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},
    {"Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},   {"Q4_1", LLAMA_FTYPE_MOSTLY_Q4_1},     {"Q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},
    {"Q5_1", LLAMA_FTYPE_MOSTLY_Q5_1},   {"Q1_0", LLAMA_FTYPE_MOSTLY_Q1_0},     {"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M},
    {"Q6_K", LLAMA_FTYPE_MOSTLY_Q6_K},
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4 && argc != 5) {
        std::fprintf(stderr, "usage: llamacpp-quantize SOURCE.gguf OUT.gguf TYPE [THREADS]\n");
        return 2;
    }
    llama_model_quantize_params params = llama_model_quantize_default_params();
    bool known = false;
    for (const auto& [name, ftype] : kTypes) {
        if (std::string(argv[3]) == name) {
            params.ftype = ftype;
            known = true;
        }
    }
    if (!known) {
        std::fprintf(stderr, "llamacpp-quantize: unknown type %s\n", argv[3]);
        return 2;
    }
    if (argc == 5) {
        char* end = nullptr;
        const long threads = std::strtol(argv[4], &end, 10);
        if (end == argv[4] || *end != '\0' || threads < 1 || threads > 1024) {
            std::fprintf(stderr, "llamacpp-quantize: bad thread count %s\n", argv[4]);
            return 2;
        }
        params.nthread = static_cast<int32_t>(threads);
    }
    llamacpp_tool::quiet_logs();
    if (!llamacpp_tool::load_cpu_backend()) {
        std::fprintf(stderr, "llamacpp-quantize: no CPU backend loads from %s\n", INLAY_LLAMACPP_LIB_DIR);
        return 1;
    }
    if (llama_model_quantize(argv[1], argv[2], &params) != 0) {
        std::fprintf(stderr, "llamacpp-quantize: llama.cpp failed to quantize %s\n", argv[1]);
        return 1;
    }
    return 0;
}
