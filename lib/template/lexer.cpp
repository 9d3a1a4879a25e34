#include "template/lexer.h"

#include <algorithm>
#include <charconv>

#include "core/utf8.h"

namespace inlay::tmpl {

void fail_at(inlay_status status, const std::string& name, Location where, const std::string& message) {
    throw TemplateError(status, fmt::format("{}:{}:{}: {}", name, where.line, where.column, message));
}

namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool is_name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_name_char(char c) {
    return is_name_start(c) || is_digit(c);
}

std::string_view rstrip_space(std::string_view s) {
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}
std::string_view lstrip_space(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    return s;
}

class Lexer {
public:
    Lexer(std::string_view src, const LexOptions& options, const std::string& name)
        : src_(src), options_(options), name_(name) {
        line_starts_.push_back(0);
        for (size_t i = 0; i < src.size(); ++i)
            if (src[i] == '\n') line_starts_.push_back(i + 1);
    }

    std::vector<Token> run() {
        size_t pos = 0;
        bool strip_leading = false;  // the previous tag ended with '-'
        bool trim_newline = false;   // the previous block/comment tag ended plainly
        while (true) {
            const size_t at = find_tag(pos);
            const size_t text_end = at == std::string_view::npos ? src_.size() : at;
            std::string_view text = src_.substr(pos, text_end - pos);
            size_t text_start = pos;
            if (trim_newline) {
                if (text.starts_with("\r\n")) {
                    text.remove_prefix(2);
                    text_start += 2;
                } else if (text.starts_with("\n")) {
                    text.remove_prefix(1);
                    text_start += 1;
                }
            }
            if (strip_leading) {
                const size_t before = text.size();
                text = lstrip_space(text);
                text_start += before - text.size();
            }
            if (at != std::string_view::npos) {
                const char kind = src_[at + 1];
                const char marker = at + 2 < src_.size() ? src_[at + 2] : '\0';
                if (marker == '-') {
                    text = rstrip_space(text);
                } else if ((kind == '%' || kind == '#') && options_.lstrip_blocks && marker != '+') {
                    // Spaces and tabs between the start of the line and the tag go.
                    size_t j = at;
                    while (j > 0 && (src_[j - 1] == ' ' || src_[j - 1] == '\t')) --j;
                    if (j == 0 || src_[j - 1] == '\n') {
                        const size_t drop = std::min(text.size(), at - j);
                        text.remove_suffix(drop);
                    }
                }
            }
            if (!text.empty()) push(TokenKind::text, std::string(text), text_start);
            if (at == std::string_view::npos) break;
            strip_leading = false;
            trim_newline = false;
            const char kind = src_[at + 1];
            size_t i = at + 2;
            if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
            if (kind == '#') {
                const size_t close = src_.find("#}", i);
                if (close == std::string_view::npos)
                    fail_at(INLAY_ERR_BAD_FORMAT, name_, loc(at), "unterminated comment (no '#}')");
                strip_leading = close > i && src_[close - 1] == '-';
                trim_newline = options_.trim_blocks && !strip_leading;
                pos = close + 2;
                continue;
            }
            if (kind == '%' && try_raw(at, i, pos, strip_leading, trim_newline)) continue;
            push(kind == '{' ? TokenKind::expr_open : TokenKind::stmt_open, kind == '{' ? "{{" : "{%", at);
            pos = lex_code(at, i, kind == '{', strip_leading);
            trim_newline = kind == '%' && options_.trim_blocks && !strip_leading && src_[pos - 3] != '+';
        }
        push(TokenKind::end, "", src_.size());
        return std::move(tokens_);
    }

private:
    Location loc(size_t offset) const {
        const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
        const auto line = static_cast<size_t>(it - line_starts_.begin());
        return {static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
    }

    void push(TokenKind kind, std::string text, size_t offset) {
        tokens_.push_back({kind, std::move(text), loc(offset)});
    }

    size_t find_tag(size_t from) const {
        for (size_t i = src_.find('{', from); i != std::string_view::npos; i = src_.find('{', i + 1)) {
            if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
        }
        return std::string_view::npos;
    }

    // {% raw %}...{% endraw %}: the content is text. Returns false if the tag at `at`
    // is not "raw".
    bool try_raw(size_t at, size_t i, size_t& pos, bool& strip_leading, bool& trim_newline) {
        size_t j = i;
        while (j < src_.size() && is_space(src_[j])) ++j;
        if (src_.substr(j, 3) != "raw" || (j + 3 < src_.size() && is_name_char(src_[j + 3]))) return false;
        j += 3;
        while (j < src_.size() && is_space(src_[j])) ++j;
        bool strip_content = false;
        if (j < src_.size() && (src_[j] == '-' || src_[j] == '+')) strip_content = src_[j++] == '-';
        if (src_.substr(j, 2) != "%}") return false;
        size_t content = j + 2;
        // The end tag: "{%" [-+] ws "endraw" ws [-+] "%}".
        for (size_t k = src_.find("{%", content); k != std::string_view::npos; k = src_.find("{%", k + 2)) {
            size_t m = k + 2;
            const bool strip_before = m < src_.size() && src_[m] == '-';
            if (m < src_.size() && (src_[m] == '-' || src_[m] == '+')) ++m;
            while (m < src_.size() && is_space(src_[m])) ++m;
            if (src_.substr(m, 6) != "endraw") continue;
            m += 6;
            while (m < src_.size() && is_space(src_[m])) ++m;
            bool strip_after = false;
            if (m < src_.size() && (src_[m] == '-' || src_[m] == '+')) strip_after = src_[m++] == '-';
            if (src_.substr(m, 2) != "%}") continue;
            std::string_view text = src_.substr(content, k - content);
            if (strip_content)
                text = lstrip_space(text);
            else if (options_.trim_blocks && text.starts_with("\n"))
                text.remove_prefix(1);
            if (strip_before) text = rstrip_space(text);
            if (!text.empty()) push(TokenKind::text, std::string(text), content);
            pos = m + 2;
            strip_leading = strip_after;
            trim_newline = options_.trim_blocks && !strip_after;
            return true;
        }
        fail_at(INLAY_ERR_BAD_FORMAT, name_, loc(at), "unterminated {% raw %} block (no {% endraw %})");
    }

    // Lexes the inside of {{ }} or {% %} from `i`; returns the offset after the tag.
    size_t lex_code(size_t open, size_t i, bool expr, bool& strip_after) {
        int depth = 0;
        const std::string_view close = expr ? "}}" : "%}";
        while (true) {
            while (i < src_.size() && is_space(src_[i])) ++i;
            if (i >= src_.size())
                fail_at(INLAY_ERR_BAD_FORMAT, name_, loc(open),
                        fmt::format("unterminated '{}' (no '{}')", expr ? "{{" : "{%", close));
            if (src_.substr(i, 3) == fmt::format("-{}", close) || (!expr && src_.substr(i, 3) == "+%}")) {
                strip_after = src_[i] == '-';
                push(expr ? TokenKind::expr_close : TokenKind::stmt_close, std::string(close), i);
                return i + 3;
            }
            if ((depth == 0 || !expr) && src_.substr(i, 2) == close) {
                strip_after = false;
                push(expr ? TokenKind::expr_close : TokenKind::stmt_close, std::string(close), i);
                return i + 2;
            }
            const char c = src_[i];
            if (is_name_start(c)) {
                size_t j = i;
                while (j < src_.size() && is_name_char(src_[j])) ++j;
                push(TokenKind::name, std::string(src_.substr(i, j - i)), i);
                i = j;
            } else if (is_digit(c)) {
                i = lex_number(i);
            } else if (c == '\'' || c == '"') {
                i = lex_string(i);
            } else {
                static constexpr std::string_view two[] = {"**", "//", "==", "!=", "<=", ">="};
                const auto* two_it = std::find(std::begin(two), std::end(two), src_.substr(i, 2));
                if (two_it != std::end(two)) {
                    push(TokenKind::op, std::string(*two_it), i);
                    i += 2;
                    continue;
                }
                if (std::string_view("+-*/%~<>=()[]{},.:|").find(c) == std::string_view::npos) {
                    size_t len = 1;
                    if (static_cast<unsigned char>(c) >= 0x80) len = utf8::next_step(src_, i).length;
                    fail_at(INLAY_ERR_BAD_FORMAT, name_, loc(i),
                            fmt::format("unexpected character '{}'", utf8::sanitize(src_.substr(i, len))));
                }
                if (c == '(' || c == '[' || c == '{') ++depth;
                if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
                push(TokenKind::op, std::string(1, c), i);
                ++i;
            }
        }
    }

    size_t lex_number(size_t i) {
        const size_t start = i;
        std::string digits;
        bool is_float = false;
        auto take_digits = [&] {
            while (i < src_.size() &&
                   (is_digit(src_[i]) || (src_[i] == '_' && i + 1 < src_.size() && is_digit(src_[i + 1])))) {
                if (src_[i] != '_') digits += src_[i];
                ++i;
            }
        };
        take_digits();
        if (i + 1 < src_.size() && src_[i] == '.' && is_digit(src_[i + 1])) {
            is_float = true;
            digits += src_[i++];
            take_digits();
        }
        if (i < src_.size() && (src_[i] == 'e' || src_[i] == 'E')) {
            size_t j = i + 1;
            if (j < src_.size() && (src_[j] == '+' || src_[j] == '-')) ++j;
            if (j < src_.size() && is_digit(src_[j])) {
                is_float = true;
                digits += 'e';
                digits.append(src_.substr(i + 1, j - i - 1));
                i = j;
                take_digits();
            }
        }
        Token t{is_float ? TokenKind::floating : TokenKind::integer, std::string(src_.substr(start, i - start)),
                loc(start)};
        const char* b = digits.data();
        const char* e = digits.data() + digits.size();
        if (is_float) {
            const auto r = std::from_chars(b, e, t.float_value);
            if (r.ec != std::errc{}) fail_at(INLAY_ERR_BAD_FORMAT, name_, t.where, "number out of range: " + t.text);
        } else {
            const auto r = std::from_chars(b, e, t.int_value);
            if (r.ec != std::errc{}) fail_at(INLAY_ERR_BAD_FORMAT, name_, t.where, "integer too large: " + t.text);
        }
        tokens_.push_back(std::move(t));
        return i;
    }

    size_t lex_string(size_t i) {
        const size_t start = i;
        const char quote = src_[i++];
        std::string value;
        while (true) {
            if (i >= src_.size()) fail_at(INLAY_ERR_BAD_FORMAT, name_, loc(start), "unterminated string");
            const char c = src_[i];
            if (c == quote) {
                ++i;
                break;
            }
            if (c != '\\' || i + 1 >= src_.size()) {
                value += c;
                ++i;
                continue;
            }
            const char e = src_[i + 1];
            i += 2;
            switch (e) {
                case 'n':
                    value += '\n';
                    break;
                case 't':
                    value += '\t';
                    break;
                case 'r':
                    value += '\r';
                    break;
                case '\\':
                    value += '\\';
                    break;
                case '\'':
                    value += '\'';
                    break;
                case '"':
                    value += '"';
                    break;
                case 'a':
                    value += '\a';
                    break;
                case 'b':
                    value += '\b';
                    break;
                case 'f':
                    value += '\f';
                    break;
                case 'v':
                    value += '\v';
                    break;
                case '0':
                    value += '\0';
                    break;
                case '\n':
                    break;  // a line continuation
                case 'x':
                case 'u':
                case 'U': {
                    const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                    uint32_t cp = 0;
                    const auto r = std::from_chars(src_.data() + i, src_.data() + std::min(src_.size(), i + n), cp, 16);
                    if (r.ec != std::errc{} || r.ptr != src_.data() + i + n || cp > 0x10FFFF ||
                        (cp >= 0xD800 && cp <= 0xDFFF))
                        fail_at(INLAY_ERR_BAD_FORMAT, name_, loc(i - 2),
                                fmt::format("invalid \\{} escape in a string", e));
                    utf8::append_codepoint(value, cp);
                    i += n;
                    break;
                }
                default:  // Python keeps unknown escapes as they are
                    value += '\\';
                    value += e;
            }
        }
        push(TokenKind::string, std::move(value), start);
        return i;
    }

    std::string_view src_;
    const LexOptions& options_;
    const std::string& name_;
    std::vector<size_t> line_starts_;
    std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> lex(std::string_view source, const LexOptions& options, const std::string& name) {
    std::string normalized;
    normalized.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            normalized += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            normalized += source[i];
        }
    }
    if (!options.keep_trailing_newline && !normalized.empty() && normalized.back() == '\n') normalized.pop_back();
    return Lexer(normalized, options, name).run();
}

}  // namespace inlay::tmpl
