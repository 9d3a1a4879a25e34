#include "args.h"

#include <charconv>
#include <cmath>
#include <system_error>

#include <fmt/format.h>

namespace inlay::cli {
namespace {

// Renders a user-supplied word for a one-line message: control bytes escaped, long
// words shortened.
std::string quoted(std::string_view word) {
    std::string out = "'";
    for (size_t i = 0; i < word.size() && i < 64; ++i) {
        const auto c = static_cast<unsigned char>(word[i]);
        if (c < 0x20 || c == 0x7f) {
            out += fmt::format("\\x{:02x}", c);
        } else {
            out += static_cast<char>(c);
        }
    }
    if (word.size() > 64) out += "...";
    return out + "'";
}

const Option* find_option(const CommandSpec& spec, std::string_view name) {
    for (const Option& o : spec.options) {
        if (name == o.long_name || (!o.short_name.empty() && name == o.short_name)) return &o;
    }
    return nullptr;
}

template <class T>
bool parse_integer(std::string_view text, T& out) {
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, out);
    return ec == std::errc{} && ptr == end && !text.empty();
}

bool parse_float(std::string_view text, float& out) {
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, out);
    return ec == std::errc{} && ptr == end && !text.empty() && std::isfinite(out);
}

void check_range(const Option& o, double v, std::string_view value) {
    if (v < o.min || v > o.max) {
        if (std::isinf(o.max)) throw UsageError(fmt::format("{} must be at least {}, got {}", o.long_name, o.min, quoted(value)));
        throw UsageError(fmt::format("{} must be in [{}, {}], got {}", o.long_name, o.min, o.max, quoted(value)));
    }
}

void apply(const Option& o, std::string_view value) {
    const auto bad = [&](std::string_view what) {
        return UsageError(fmt::format("{} expects {}, got {}", o.long_name, what, quoted(value)));
    };
    std::visit(
        [&](auto* target) {
            using T = std::remove_pointer_t<decltype(target)>;
            if constexpr (std::is_same_v<T, bool>) {
                *target = true;
            } else if constexpr (std::is_same_v<T, std::string>) {
                *target = std::string(value);
            } else if constexpr (std::is_same_v<T, std::optional<std::string>>) {
                *target = std::string(value);
            } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
                target->emplace_back(value);
            } else if constexpr (std::is_same_v<T, int32_t>) {
                int32_t v = 0;
                if (!parse_integer(value, v)) throw bad("an integer");
                check_range(o, v, value);
                *target = v;
            } else if constexpr (std::is_same_v<T, float>) {
                float v = 0;
                if (!parse_float(value, v)) throw bad("a number");
                check_range(o, v, value);
                *target = v;
            } else if constexpr (std::is_same_v<T, uint64_t>) {
                uint64_t v = 0;
                if (value == "-1") {
                    v = UINT64_MAX;
                } else if (!parse_integer(value, v)) {
                    throw bad("an unsigned integer or -1");
                }
                *target = v;
            }
        },
        o.target);
}

bool is_flag(const Option& o) { return std::holds_alternative<bool*>(o.target); }

}  // namespace

ParsedArgs parse_args(const CommandSpec& spec, std::span<const std::string_view> args) {
    ParsedArgs parsed;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string_view arg = args[i];
        if (arg == "-h" || arg == "--help") {
            print_usage(spec, stdout);
            parsed.help = true;
            return parsed;
        }
        std::string_view name = arg;
        std::optional<std::string_view> inline_value;
        if (arg.starts_with("--")) {
            if (const size_t eq = arg.find('='); eq != std::string_view::npos) {
                name = arg.substr(0, eq);
                inline_value = arg.substr(eq + 1);
            }
        } else if (!arg.starts_with("-") || arg.size() < 2) {
            throw UsageError(fmt::format("unexpected argument {}", quoted(arg)));
        }
        const Option* o = find_option(spec, name);
        if (!o) throw UsageError(fmt::format("unknown option {}", quoted(name)));
        if (is_flag(*o)) {
            if (inline_value) throw UsageError(fmt::format("{} takes no value", o->long_name));
            apply(*o, {});
        } else if (inline_value) {
            apply(*o, *inline_value);
        } else {
            if (i + 1 >= args.size()) throw UsageError(fmt::format("{} needs a value ({})", o->long_name, o->value_name));
            apply(*o, args[++i]);
        }
        parsed.seen.insert(o->long_name);
    }
    for (const Option& o : spec.options) {
        if (o.required && !parsed.has(o.long_name)) {
            const std::string_view shown = o.short_name.empty() ? o.long_name : o.short_name;
            throw UsageError(fmt::format("missing {} {}", shown, o.value_name));
        }
    }
    return parsed;
}

void print_usage(const CommandSpec& spec, std::FILE* out) {
    fmt::print(out, "usage: inlay {} {}\n{}\n\noptions:\n", spec.name, spec.synopsis, spec.summary);
    std::vector<std::string> heads;
    size_t width = 0;
    for (const Option& o : spec.options) {
        std::string head = o.short_name.empty() ? fmt::format("    {}", o.long_name)
                                                : fmt::format("{}, {}", o.short_name, o.long_name);
        if (!is_flag(o)) head += fmt::format(" {}", o.value_name);
        width = std::max(width, head.size());
        heads.push_back(std::move(head));
    }
    for (size_t i = 0; i < spec.options.size(); ++i) {
        fmt::print(out, "  {:<{}}  {}\n", heads[i], width, spec.options[i].help);
    }
    fmt::print(out, "  {:<{}}  {}\n", "-h, --help", width, "show this help");
}

std::vector<int32_t> parse_id_list(std::string_view text, std::string_view option) {
    std::vector<int32_t> ids;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        const std::string_view item = text.substr(start, comma - start);
        int32_t id = 0;
        if (!parse_integer(item, id) || id < 0) {
            throw UsageError(fmt::format("{} expects comma-separated token ids, got {}", option, quoted(item)));
        }
        ids.push_back(id);
        start = comma + 1;
    }
    return ids;
}

}  // namespace inlay::cli
