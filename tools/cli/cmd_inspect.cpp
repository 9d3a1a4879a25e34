// inlay inspect: a GGUF file's header, metadata and tensor table. Reads the file with
// the library's validating GGUF reader (internal API), so it also works on files the
// model loader would reject (vocabulary-only files, unsupported architectures).
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app.h"
#include "args.h"
#include "core/error.h"
#include "io/gguf_reader.h"

namespace inlay::cli {
namespace {

constexpr size_t max_array_elems = 8;  // longer arrays are abbreviated

std::string type_name(const MetadataValue& v) {
    if (v.type != ValueType::ARRAY) return std::string(value_type_name(v.type));
    const auto& a = std::get<MetadataArray>(v.value);
    return fmt::format("{}[{}]", value_type_name(a.elem_type), a.size());
}

// Text rendering; strings are quoted and escaped so that every entry stays on one line.
std::string render_text(const MetadataValue& v) {
    const auto quote = [](const std::string& s) {
        if (s.size() <= 120) return c_quoted(s);
        return fmt::format("{}... ({} bytes)", c_quoted(s.substr(0, 117)), s.size());
    };
    if (v.type == ValueType::STRING) return quote(std::get<std::string>(v.value));
    if (v.type != ValueType::ARRAY) return v.to_string();
    const auto& a = std::get<MetadataArray>(v.value);
    std::string out = "[";
    const size_t n = std::min(a.size(), max_array_elems);
    for (size_t i = 0; i < n; ++i) {
        if (i) out += ", ";
        if (a.elem_type == ValueType::STRING) {
            out += quote(a.strings[i]);
        } else if (a.elem_type == ValueType::F32 || a.elem_type == ValueType::F64) {
            out += fmt::format("{}", a.floats[i]);
        } else {
            out += fmt::format("{}", a.ints[i]);
        }
    }
    if (n < a.size()) out += ", ...";
    return out + "]";
}

nlohmann::ordered_json render_json(const MetadataValue& v) {
    switch (v.type) {
        case ValueType::STRING: return std::get<std::string>(v.value);
        case ValueType::F32:
        case ValueType::F64: return std::get<double>(v.value);
        case ValueType::BOOL: return std::get<int64_t>(v.value) != 0;
        case ValueType::U64: return std::get<uint64_t>(v.value);
        case ValueType::ARRAY: {
            const auto& a = std::get<MetadataArray>(v.value);
            nlohmann::ordered_json out = nlohmann::ordered_json::array();
            const size_t n = std::min(a.size(), max_array_elems);
            for (size_t i = 0; i < n; ++i) {
                if (a.elem_type == ValueType::STRING) {
                    out.push_back(a.strings[i]);
                } else if (a.elem_type == ValueType::F32 || a.elem_type == ValueType::F64) {
                    out.push_back(a.floats[i]);
                } else if (a.elem_type == ValueType::BOOL) {
                    out.push_back(a.ints[i] != 0);
                } else {
                    out.push_back(a.ints[i]);
                }
            }
            return out;
        }
        default: return std::get<int64_t>(v.value);
    }
}

std::string shape_text(const TensorView& t) {
    std::string out = "[";
    for (int d = 0; d < t.n_dims; ++d) out += fmt::format("{}{}", d ? ", " : "", t.ne[static_cast<size_t>(d)]);
    return out + "]";
}

struct TypeTotals {
    int64_t tensors = 0;
    int64_t elements = 0;
    uint64_t bytes = 0;
};

int inspect(const std::string& path, bool json) {
    const std::unique_ptr<GgufFile> file = GgufFile::open(path);
    const Metadata& md = file->metadata();
    const std::vector<TensorView>& tensors = file->tensors();

    std::map<std::string, TypeTotals> by_type;
    TypeTotals total;
    for (const TensorView& t : tensors) {
        TypeTotals& tt = by_type[std::string(dtype_name(t.type))];
        for (TypeTotals* s : {&tt, &total}) {
            ++s->tensors;
            s->elements += t.n_elements();
            s->bytes += t.nbytes;
        }
    }

    if (json) {
        nlohmann::ordered_json out;
        out["file"] = path;
        out["version"] = file->version();
        out["alignment"] = file->alignment();
        out["data_offset"] = file->data_offset();
        out["file_bytes"] = file->file_bytes();
        nlohmann::ordered_json& meta = out["metadata"] = nlohmann::ordered_json::array();
        for (const auto& [key, value] : md.entries()) {
            nlohmann::ordered_json e = {{"key", key}, {"type", std::string(value_type_name(value.type))}};
            if (value.type == ValueType::ARRAY) {
                const auto& a = std::get<MetadataArray>(value.value);
                e["elem_type"] = std::string(value_type_name(a.elem_type));
                e["length"] = a.size();
                e["truncated"] = a.size() > max_array_elems;
            }
            e["value"] = render_json(value);
            meta.push_back(std::move(e));
        }
        nlohmann::ordered_json& list = out["tensors"] = nlohmann::ordered_json::array();
        for (size_t i = 0; i < tensors.size(); ++i) {
            const TensorView& t = tensors[i];
            list.push_back({{"name", t.name},
                            {"type", std::string(dtype_name(t.type))},
                            {"shape", std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims)},
                            {"elements", t.n_elements()},
                            {"bytes", t.nbytes},
                            {"offset", file->tensor_offset(i)}});
        }
        nlohmann::ordered_json types = nlohmann::ordered_json::object();
        for (const auto& [name, tt] : by_type) {
            types[name] = {{"tensors", tt.tensors}, {"elements", tt.elements}, {"bytes", tt.bytes}};
        }
        out["totals"] = {{"tensors", total.tensors},
                         {"elements", total.elements},
                         {"bytes", total.bytes},
                         {"metadata_keys", md.size()},
                         {"by_type", types}};
        write_stdout(out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
        return exit_ok;
    }

    std::string out = fmt::format("{}: GGUF v{}, alignment {}, tensor data at {}, {} bytes\n\n", path,
                                  file->version(), file->alignment(), file->data_offset(), file->file_bytes());
    out += fmt::format("metadata ({} keys):\n", md.size());
    size_t key_width = 0;
    for (const auto& [key, value] : md.entries()) key_width = std::max(key_width, key.size());
    for (const auto& [key, value] : md.entries()) {
        out += fmt::format("  {:<{}}  {:<12} {}\n", key, key_width, type_name(value), render_text(value));
    }
    out += fmt::format("\ntensors ({}):\n", tensors.size());
    size_t name_width = 0;
    for (const TensorView& t : tensors) name_width = std::max(name_width, t.name.size());
    for (const TensorView& t : tensors) {
        out += fmt::format("  {:<{}}  {:<6} {:<22} {:>12} bytes\n", t.name, name_width, dtype_name(t.type),
                           shape_text(t), t.nbytes);
    }
    out += fmt::format("\ntotal: {} tensors, {} elements, {} bytes\n", total.tensors, total.elements, total.bytes);
    for (const auto& [name, tt] : by_type) {
        out += fmt::format("  {:<6} {:>5} tensors {:>14} elements {:>14} bytes\n", name, tt.tensors, tt.elements,
                           tt.bytes);
    }
    write_stdout(out);
    return exit_ok;
}

}  // namespace

int run_inspect(std::span<const std::string_view> args) {
    std::string model_path;
    bool json = false;
    const CommandSpec spec{
        "inspect",
        "-m MODEL [--json]",
        "Shows a GGUF file's metadata (long arrays abbreviated) and tensors (shapes in ggml order).",
        {
            {"--model", "-m", "MODEL", "GGUF file", &model_path, 0, 0, true},
            {"--json", "", "", "print one JSON object", &json},
        },
    };
    if (parse_args(spec, args).help) return exit_ok;
    // The reader throws the library's internal error type; report it as the C ABI would.
    try {
        return inspect(model_path, json);
    } catch (const inlay::Error& e) {
        std::fflush(stdout);
        fmt::print(stderr, "inlay: error: {}: {}\n", status_name(e.status()), e.what());
        return exit_error;
    }
}

}  // namespace inlay::cli
