#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"

namespace inlay {

namespace {

// Unicode White_Space (the set llama.cpp's unicode tables and Oniguruma use).
constexpr std::string_view k_ws =
    "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

// Expands the placeholders {S} (whitespace members, for use inside a class),
// {s} (a whitespace class) and {NS} (a non-whitespace class).
std::string expand(std::string_view pattern) {
    std::string out;
    for (size_t i = 0; i < pattern.size();) {
        if (pattern.substr(i, 3) == "{s}") {
            out += "[";
            out += k_ws;
            out += "]";
            i += 3;
        } else if (pattern.substr(i, 4) == "{NS}") {
            out += "[^";
            out += k_ws;
            out += "]";
            i += 4;
        } else if (pattern.substr(i, 3) == "{S}") {
            out += k_ws;
            i += 3;
        } else {
            out += pattern[i++];
        }
    }
    return out;
}

// The contractions are spelled out case by case (as llama.cpp does) rather than with
// (?i:...), because PCRE2's Unicode caseless matching would also accept e.g. U+017F
// for 's'.
constexpr std::string_view k_contractions = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";

std::vector<std::string> patterns_for(PretokenizerKind kind) {
    const std::string gpt2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^{S}\\p{L}\\p{N}]+|{s}+(?!{NS})";
    auto llama_like = [](std::string_view digits) {
        return std::string(k_contractions) + "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|" + std::string(digits) +
               "| ?[^{S}\\p{L}\\p{N}]+[\\r\\n]*|{s}*[\\r\\n]+|{s}+(?!{NS})|{s}+";
    };
    std::vector<std::string> raw;
    switch (kind) {
        case PretokenizerKind::gpt2:
            raw = {gpt2};
            break;
        case PretokenizerKind::llama3:
            raw = {llama_like("\\p{N}{1,3}")};
            break;
        case PretokenizerKind::qwen2:
            raw = {llama_like("\\p{N}")};
            break;
        case PretokenizerKind::fallback:
            raw = {"[\\p{P}\\$\\+<=>\\^~\\|]+", gpt2, "\\p{N}+", "[0-9][0-9][0-9]"};
            break;
    }
    std::vector<std::string> out;
    for (const auto& p : raw) out.push_back(expand(p));
    return out;
}

}  // namespace

struct RegexPretokenizer::Compiled {
    pcre2_code* code = nullptr;
    bool jit = false;
    ~Compiled() { pcre2_code_free(code); }
};

RegexPretokenizer::RegexPretokenizer(PretokenizerKind kind) : patterns_(patterns_for(kind)) {
    compile(INLAY_ERR_INTERNAL);
}

RegexPretokenizer::RegexPretokenizer(std::vector<std::string> patterns) : patterns_(std::move(patterns)) {
    compile(INLAY_ERR_UNSUPPORTED);
}

void RegexPretokenizer::compile(inlay_status on_error) {
    for (const auto& pattern : patterns_) {
        int error = 0;
        PCRE2_SIZE error_offset = 0;
        auto compiled = std::make_unique<Compiled>();
        compiled->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                       PCRE2_UTF | PCRE2_UCP, &error, &error_offset, nullptr);
        if (!compiled->code) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(error, message, sizeof message);
            fail(on_error, "pre-tokenizer pattern \"{}\" does not compile at offset {}: {}", pattern, error_offset,
                 reinterpret_cast<const char*>(message));
        }
        // JIT is an optimisation only: without it (no JIT support) matching still works.
        compiled->jit = pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE) == 0;
        compiled_.push_back(std::move(compiled));
    }
}

std::string hf_regex_to_pcre2(std::string_view regex) {
    std::string out;
    out.reserve(regex.size() + 64);
    bool in_class = false;
    for (size_t i = 0; i < regex.size(); ++i) {
        const char c = regex[i];
        if (c == '\\' && i + 1 < regex.size()) {
            const char e = regex[i + 1];
            ++i;
            if (e == 's') {
                out += in_class ? std::string(k_ws) : "[" + std::string(k_ws) + "]";
            } else if (e == 'S') {
                if (in_class)
                    fail(INLAY_ERR_UNSUPPORTED, "pre-tokenizer regex \"{}\": \\S inside a character class is not supported",
                         regex);
                out += "[^" + std::string(k_ws) + "]";
            } else {
                out += c;
                out += e;
            }
            continue;
        }
        if (!in_class && c == '[') {
            in_class = true;
            out += c;
            // A ']' right after '[' or '[^' is a literal member, not the end.
            if (i + 1 < regex.size() && regex[i + 1] == '^') out += regex[++i];
            if (i + 1 < regex.size() && regex[i + 1] == ']') out += regex[++i];
            continue;
        }
        if (in_class && c == ']') in_class = false;
        out += c;
    }
    return out;
}

RegexPretokenizer::~RegexPretokenizer() = default;

namespace {

struct MatchData {
    pcre2_match_data* data;
    explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {
        if (!data) fail(INLAY_ERR_OUT_OF_MEMORY, "cannot allocate PCRE2 match data");
    }
    ~MatchData() { pcre2_match_data_free(data); }
    MatchData(const MatchData&) = delete;
    MatchData& operator=(const MatchData&) = delete;
};

// Splits subject (one piece, valid UTF-8) into matches and gaps, appending
// [begin, end) ranges shifted by `base`.
void split_one(const pcre2_code* code, bool jit, pcre2_match_data* md, std::string_view subject, size_t base,
               std::vector<std::pair<size_t, size_t>>& out) {
    const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
    size_t start = 0;    // where the next search begins
    size_t emitted = 0;  // end of the last piece appended
    while (start < subject.size()) {
        uint32_t options = PCRE2_NO_UTF_CHECK;
        int rc = pcre2_match(code, s, subject.size(), start, options, md, nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT && jit) {
            // The JIT's small default stack ran out (very long runs): the interpreter
            // keeps its backtracking state on the heap instead.
            rc = pcre2_match(code, s, subject.size(), start, options | PCRE2_NO_JIT, md, nullptr);
        }
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(rc, message, sizeof message);
            fail(INLAY_ERR_INTERNAL, "pre-tokenizer match failed: {}", reinterpret_cast<const char*>(message));
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        const size_t mb = ov[0];
        const size_t me = ov[1];
        if (me <= mb) {
            // Empty match (none of the built-in patterns has one): step over one
            // character so that the search always advances.
            size_t next = start + 1;
            while (next < subject.size() && (static_cast<uint8_t>(subject[next]) & 0xC0) == 0x80) ++next;
            start = next;
            continue;
        }
        if (mb > emitted) out.emplace_back(base + emitted, base + mb);
        out.emplace_back(base + mb, base + me);
        emitted = me;
        start = me;
    }
    if (emitted < subject.size()) out.emplace_back(base + emitted, base + subject.size());
}

}  // namespace

void RegexPretokenizer::split(std::string_view text, std::vector<std::pair<size_t, size_t>>& pieces) const {
    if (text.empty()) return;
    std::vector<std::pair<size_t, size_t>> current{{0, text.size()}};
    std::vector<std::pair<size_t, size_t>> next;
    for (const auto& compiled : compiled_) {
        MatchData md(compiled->code);
        next.clear();
        for (const auto& [b, e] : current)
            split_one(compiled->code, compiled->jit, md.data, text.substr(b, e - b), b, next);
        current.swap(next);
    }
    pieces.insert(pieces.end(), current.begin(), current.end());
}

}  // namespace inlay
