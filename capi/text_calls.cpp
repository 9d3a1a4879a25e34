#include "capi/text_calls.h"

#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "capi/capi_common.h"
#include "core/utf8.h"

namespace inlay::capi {

void tokenize_call(const char* function, const Tokenizer& tok, const char* text, size_t len, uint32_t flags,
                   int32_t* out, size_t capacity, size_t* n_tokens) {
    require_arg(text != nullptr || len == 0, function, "text is NULL");
    require_arg(n_tokens != nullptr, function, "n_tokens is NULL");
    require_arg(out != nullptr || capacity == 0, function, "out is NULL with a nonzero capacity");
    require_arg((flags & ~3u) == 0, function, "unknown flags");
    const std::string_view sv(text ? text : "", len);
    utf8::require_valid(sv, std::string(function) + ": text");
    std::vector<int32_t> ids;
    if ((flags & INLAY_TOKENIZE_ADD_BOS) && tok.add_bos() && tok.bos() >= 0) ids.push_back(tok.bos());
    const auto body = tok.encode(sv, (flags & INLAY_TOKENIZE_PARSE_SPECIAL) != 0);
    ids.insert(ids.end(), body.begin(), body.end());
    *n_tokens = ids.size();
    if (ids.size() > capacity)
        fail(INLAY_ERR_BUFFER_TOO_SMALL, "{}: {} tokens do not fit in a capacity of {}", function, ids.size(),
             capacity);
    if (!ids.empty()) std::memcpy(out, ids.data(), ids.size() * sizeof(int32_t));
}

void detokenize_call(const char* function, const Tokenizer& tok, const int32_t* tokens, size_t n, bool render_special,
                     char* out, size_t capacity, size_t* length) {
    require_arg(tokens != nullptr || n == 0, function, "tokens is NULL");
    require_arg(length != nullptr, function, "length is NULL");
    require_arg(out != nullptr || capacity == 0, function, "out is NULL with a nonzero capacity");
    const std::string text = tok.decode(std::span<const int32_t>(tokens, n), render_special, /*at_start=*/true);
    *length = text.size();
    if (text.size() + 1 > capacity)
        fail(INLAY_ERR_BUFFER_TOO_SMALL, "{}: {} bytes (+1 for the NUL) do not fit in {}", function, text.size(),
             capacity);
    std::memcpy(out, text.data(), text.size());
    out[text.size()] = '\0';
}

}  // namespace inlay::capi
