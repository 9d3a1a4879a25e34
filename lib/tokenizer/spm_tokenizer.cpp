// llama.cpp's SPM tokenizer: the text (space-prefixed, spaces escaped to U+2581) is
// split into characters, then the adjacent pair whose concatenation is the
// highest-scoring vocabulary token is merged, repeatedly (ties: leftmost pair).
// Characters left that are not tokens become byte tokens.
#include <queue>

#include "core/error.h"
#include "tokenizer/tokenizer_impls.h"

namespace inlay {

namespace {

struct Symbol {
    int32_t prev;
    int32_t next;
    uint32_t start;  // byte offset in the escaped text
    uint32_t len;    // 0 once merged into its left neighbour
};

struct Bigram {
    int32_t left;
    int32_t right;
    float score;
    uint32_t size;
};

// Highest score first; equal scores: smaller left index first (llama.cpp's order).
struct BigramOrder {
    bool operator()(const Bigram& l, const Bigram& r) const {
        return l.score < r.score || (l.score == r.score && l.left > r.left);
    }
};

class SpmTokenizer final : public Tokenizer {
public:
    explicit SpmTokenizer(std::unique_ptr<const Vocabulary> vocab) : Tokenizer(std::move(vocab)) {}

    std::vector<int32_t> encode(std::string_view text, bool parse_special) const override {
        std::vector<int32_t> out;
        bool prev_special = true;  // the start of text counts as "after a special token"
        std::string escaped;
        for (const Fragment& f : split_special(text, parse_special)) {
            if (f.token >= 0) {
                out.push_back(f.token);
                prev_special = true;
                continue;
            }
            escaped.clear();
            if (vocab().add_space_prefix && prev_special) escaped += "\xE2\x96\x81";
            for (const char c : f.text) {
                if (c == ' ')
                    escaped += "\xE2\x96\x81";
                else
                    escaped.push_back(c);
            }
            tokenize(escaped, out);
            prev_special = false;
        }
        return out;
    }

private:
    float score(int32_t id) const {
        const auto& s = vocab().scores;
        return s.empty() ? 0.0f : s[static_cast<size_t>(id)];
    }

    void tokenize(std::string_view text, std::vector<int32_t>& out) const {
        if (text.size() > UINT32_MAX / 2) fail(INLAY_ERR_INVALID_ARGUMENT, "text of {} bytes is too long", text.size());
        std::vector<Symbol> symbols;
        symbols.reserve(text.size());
        for (size_t pos = 0; pos < text.size();) {
            size_t len = 1;
            const auto b = static_cast<uint8_t>(text[pos]);
            if (b >= 0xF0)
                len = 4;
            else if (b >= 0xE0)
                len = 3;
            else if (b >= 0xC0)
                len = 2;
            len = std::min(len, text.size() - pos);
            const auto index = static_cast<int32_t>(symbols.size());
            symbols.push_back({index - 1, pos + len == text.size() ? -1 : index + 1, static_cast<uint32_t>(pos),
                               static_cast<uint32_t>(len)});
            pos += len;
        }

        std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
        auto try_add = [&](int32_t left, int32_t right) {
            if (left < 0 || right < 0) return;
            const Symbol& l = symbols[static_cast<size_t>(left)];
            const Symbol& r = symbols[static_cast<size_t>(right)];
            const int32_t id = vocab().find(text.substr(l.start, l.len + r.len));
            if (id < 0) return;
            queue.push({left, right, score(id), l.len + r.len});
        };
        for (size_t i = 1; i < symbols.size(); ++i) try_add(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));

        while (!queue.empty()) {
            const Bigram bigram = queue.top();
            queue.pop();
            Symbol& l = symbols[static_cast<size_t>(bigram.left)];
            Symbol& r = symbols[static_cast<size_t>(bigram.right)];
            if (l.len == 0 || r.len == 0 || l.len + r.len != bigram.size) continue;  // stale
            l.len += r.len;
            r.len = 0;
            l.next = r.next;
            if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = bigram.left;
            try_add(l.prev, bigram.left);
            try_add(bigram.left, l.next);
        }

        for (int32_t i = symbols.empty() ? -1 : 0; i != -1; i = symbols[static_cast<size_t>(i)].next) {
            const Symbol& s = symbols[static_cast<size_t>(i)];
            const std::string_view piece = text.substr(s.start, s.len);
            const int32_t id = vocab().find(piece);
            if (id >= 0) {
                out.push_back(id);
                continue;
            }
            for (const char c : piece) out.push_back(byte_token(static_cast<uint8_t>(c)));
        }
    }

    int32_t byte_token(uint8_t b) const {
        const Vocabulary& v = vocab();
        if (v.byte_tokens[b] >= 0) return v.byte_tokens[b];
        const char single[1] = {static_cast<char>(b)};
        if (const int32_t id = v.find(std::string_view(single, 1)); id >= 0) return id;
        if (v.unk >= 0) return v.unk;
        fail(INLAY_ERR_UNSUPPORTED, "{}: no token for byte 0x{:02X} (no <0x{:02X}> token and no unknown token)",
             v.origin, b, b);
    }
};

}  // namespace

std::unique_ptr<Tokenizer> make_spm_tokenizer(std::unique_ptr<Vocabulary> vocab) {
    vocab->finalize(PieceStyle::sentencepiece);
    return std::make_unique<SpmTokenizer>(std::move(vocab));
}

}  // namespace inlay
