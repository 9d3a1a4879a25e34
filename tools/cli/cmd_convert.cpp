// inlay convert: a Hugging Face folder (config.json, safetensors, tokenizer) to a GGUF
// file, with inlay's quantizers. Uses the library's internal conversion API (like
// inspect), so it reports the library's internal error type itself.
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "app.h"
#include "args.h"
#include "core/error.h"
#include "model/families/hf_convert.h"

namespace inlay::cli {

int run_convert(std::span<const std::string_view> args) {
    std::string type_name = "f16";
    std::string name;
    bool quiet = false;
    const CommandSpec spec{
        "convert",
        "SRC_FOLDER OUT.gguf [--type f32|f16|bf16|q8_0|q4_k|q1_0]",
        "Converts a Hugging Face Llama/Qwen3 folder (config.json, *.safetensors, tokenizer.model or "
        "tokenizer.json) to GGUF. Norms stay f32; q4_k follows llama-quantize's Q4_K_M; rows that do not fit "
        "a type's block fall back (reported per tensor).",
        {
            {"--type", "-t", "TYPE", "weight type: f32, f16 (default), bf16, q8_0, q4_k, q1_0", &type_name},
            {"--name", "", "NAME", "general.name (default: the folder's name)", &name},
            {"--quiet", "-q", "", "print nothing on success", &quiet},
        },
    };
    // Two positional words first, then options.
    std::vector<std::string_view> positional;
    size_t i = 0;
    for (; i < args.size() && positional.size() < 2 && !args[i].starts_with("-"); ++i) positional.push_back(args[i]);
    if (parse_args(spec, args.subspan(i)).help) return exit_ok;
    if (positional.size() != 2) throw UsageError("expected SRC_FOLDER and OUT.gguf before the options");
    const auto type = convert_type_from_name(type_name);
    if (!type)
        throw UsageError(fmt::format("--type {} is not one of f32, f16, bf16, q8_0, q4_k, q1_0", c_quoted(type_name)));

    const double start = now_seconds();
    try {
        ConvertOptions options;
        options.type = *type;
        options.name = name;
        const ConvertReport report = convert_hf_folder(std::string(positional[0]), std::string(positional[1]), options);
        if (quiet) return exit_ok;
        std::string out;
        size_t fallbacks = 0;
        for (const ConvertedTensor& t : report.tensors) {
            if (t.reason.empty()) continue;
            out += fmt::format("  {:<28} {:<5} {}\n", t.name, dtype_name(t.type), t.reason);
            ++fallbacks;
        }
        out += fmt::format(
            "wrote {}: {} {}, {} tensors ({} typed otherwise, listed above), {} parameters, {} bytes, "
            "{:.2f} s\n",
            positional[1], report.architecture, type_name, report.tensors.size(), fallbacks, report.n_params,
            report.file_bytes, now_seconds() - start);
        write_stdout(out);
        return exit_ok;
    } catch (const inlay::Error& e) {
        std::fflush(stdout);
        fmt::print(stderr, "inlay: error: {}: {}\n", status_name(e.status()), e.what());
        return exit_error;
    }
}

}  // namespace inlay::cli
