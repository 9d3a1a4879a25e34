// llama.cpp's byte-level BPE tokenizer: the pre-tokenizer cuts each text fragment into
// words; each word is byte-level encoded and split into characters, and the adjacent
// pair with the lowest merge rank is merged, repeatedly (ties: leftmost pair). Each
// resulting symbol becomes its token; a symbol that is no token falls back to the
// tokens of its single bytes where they exist (as llama.cpp does).
#include <algorithm>

#include "core/error.h"
#include "core/utf8.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer_impls.h"
#include "tokenizer/unicode_nfc.h"

namespace inlay {

namespace {

struct Merge {
    int32_t rank;
    int32_t result;  // token id of the merged text, or -1
};

struct Symbol {
    int32_t prev;
    int32_t next;
    uint32_t start;  // byte offset in the encoded word
    uint32_t len;    // 0 once merged into its left neighbour
    int32_t id;      // token id of the symbol's text, or -1
};

struct Bigram {
    int32_t rank;
    int32_t left;
    int32_t right;
    uint32_t size;
    int32_t result;
};

// Lowest rank first; equal ranks: smaller left index first (llama.cpp's order).
struct BigramOrder {
    bool operator()(const Bigram& l, const Bigram& r) const {
        return l.rank > r.rank || (l.rank == r.rank && l.left > r.left);
    }
};

uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

class BpeTokenizer final : public Tokenizer {
public:
    BpeTokenizer(std::unique_ptr<const Vocabulary> vocab, const std::vector<std::string>& merges,
                 std::unique_ptr<RegexPretokenizer> pretokenizer, bool ignore_merges, bool nfc)
        : Tokenizer(std::move(vocab)), pretokenizer_(std::move(pretokenizer)), ignore_merges_(ignore_merges),
          nfc_(nfc) {
        const Vocabulary& v = this->vocab();
        for (size_t b = 0; b < 256; ++b) byte_symbol_[b] = v.find(byte_level::encode_byte(static_cast<uint8_t>(b)));
        if (merges.size() > static_cast<size_t>(INT32_MAX)) fail(INLAY_ERR_BAD_FORMAT, "{}: too many merges", v.origin);
        pair_merges_.reserve(merges.size());
        std::string joined;
        for (size_t rank = 0; rank < merges.size(); ++rank) {
            const std::string& m = merges[rank];
            // As llama.cpp: the separator is the first space after the first byte.
            const size_t sep = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
            if (sep == std::string::npos || sep + 1 >= m.size()) {
                fail(INLAY_ERR_BAD_FORMAT, "{}: merge {} ({}) is not of the form \"left right\"", v.origin, rank,
                     utf8::quoted(m));
            }
            const std::string_view left = std::string_view(m).substr(0, sep);
            const std::string_view right = std::string_view(m).substr(sep + 1);
            joined.assign(left);
            joined.append(right);
            const Merge merge{static_cast<int32_t>(rank), v.find(joined)};
            const int32_t l = v.find(left);
            const int32_t r = v.find(right);
            // Symbols always carry the id of their text when it is a token, so a merge
            // of two tokens is found by ids and any other merge by text. The first
            // occurrence of a duplicated merge wins, as in llama.cpp.
            if (l >= 0 && r >= 0)
                pair_merges_.emplace(pair_key(l, r), merge);
            else
                text_merges_.emplace(m, merge);
        }
    }

    std::vector<int32_t> encode(std::string_view text, bool parse_special) const override {
        std::vector<int32_t> out;
        std::vector<std::pair<size_t, size_t>> words;
        std::string encoded;
        std::string normalized;
        State state;
        for (const Fragment& f : split_special(text, parse_special)) {
            if (f.token >= 0) {
                out.push_back(f.token);
                continue;
            }
            std::string_view piece = f.text;
            if (nfc_ && !unicode::is_nfc_quick(piece)) {
                normalized = unicode::nfc(piece);
                piece = normalized;
            }
            words.clear();
            pretokenizer_->split(piece, words);
            for (const auto& [b, e] : words) {
                encoded.clear();
                byte_level::encode_append(encoded, piece.substr(b, e - b));
                tokenize_word(encoded, piece.substr(b, e - b), state, out);
            }
        }
        return out;
    }

private:
    struct State {  // scratch buffers reused across words of one encode call
        std::vector<Symbol> symbols;
        std::vector<Bigram> heap;
    };

    const Merge* find_merge(std::string_view word, const Symbol& l, const Symbol& r, std::string& key) const {
        if (l.id >= 0 && r.id >= 0) {
            const auto it = pair_merges_.find(pair_key(l.id, r.id));
            return it == pair_merges_.end() ? nullptr : &it->second;
        }
        if (text_merges_.empty()) return nullptr;
        key.assign(word.substr(l.start, l.len));
        key.push_back(' ');
        key.append(word.substr(r.start, r.len));
        const auto it = text_merges_.find(std::string_view(key));
        return it == text_merges_.end() ? nullptr : &it->second;
    }

    void tokenize_word(std::string_view word, std::string_view raw, State& state, std::vector<int32_t>& out) const {
        const Vocabulary& v = vocab();
        if (ignore_merges_) {
            if (const int32_t id = v.find(word); id >= 0) {
                out.push_back(id);
                return;
            }
        }
        if (word.size() > UINT32_MAX / 2) fail(INLAY_ERR_INVALID_ARGUMENT, "word of {} bytes is too long", word.size());
        // One symbol per raw byte: each byte is one code point of the encoded word.
        std::vector<Symbol>& symbols = state.symbols;
        symbols.clear();
        uint32_t pos = 0;
        for (size_t i = 0; i < raw.size(); ++i) {
            const auto b = static_cast<uint8_t>(raw[i]);
            const auto len = static_cast<uint32_t>(byte_level::encode_byte(b).size());
            const auto index = static_cast<int32_t>(i);
            symbols.push_back({index - 1, i + 1 == raw.size() ? -1 : index + 1, pos, len, byte_symbol_[b]});
            pos += len;
        }

        std::vector<Bigram>& heap = state.heap;  // a max-heap under BigramOrder
        heap.clear();
        std::string key;
        auto try_add = [&](int32_t left, int32_t right) {
            if (left < 0 || right < 0) return;
            const Symbol& l = symbols[static_cast<size_t>(left)];
            const Symbol& r = symbols[static_cast<size_t>(right)];
            const Merge* m = find_merge(word, l, r, key);
            if (!m) return;
            heap.push_back({m->rank, left, right, l.len + r.len, m->result});
            std::push_heap(heap.begin(), heap.end(), BigramOrder{});
        };
        for (size_t i = 1; i < symbols.size(); ++i) try_add(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));

        while (!heap.empty()) {
            std::pop_heap(heap.begin(), heap.end(), BigramOrder{});
            const Bigram bigram = heap.back();
            heap.pop_back();
            Symbol& l = symbols[static_cast<size_t>(bigram.left)];
            Symbol& r = symbols[static_cast<size_t>(bigram.right)];
            // While both are alive they are neighbours and the left one is unchanged,
            // so the size tells whether the right one grew since the pair was queued.
            if (l.len == 0 || r.len == 0 || l.len + r.len != bigram.size) continue;
            l.len += r.len;
            l.id = bigram.result;
            r.len = 0;
            l.next = r.next;
            if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = bigram.left;
            try_add(l.prev, bigram.left);
            try_add(bigram.left, l.next);
        }

        for (int32_t i = symbols.empty() ? -1 : 0; i != -1; i = symbols[static_cast<size_t>(i)].next) {
            const Symbol& s = symbols[static_cast<size_t>(i)];
            if (s.id >= 0) {
                out.push_back(s.id);
                continue;
            }
            for (const char c : word.substr(s.start, s.len)) {
                if (const int32_t id = v.find(std::string_view(&c, 1)); id >= 0) out.push_back(id);
            }
        }
    }

    std::unique_ptr<RegexPretokenizer> pretokenizer_;
    bool ignore_merges_;
    bool nfc_;
    int32_t byte_symbol_[256];
    std::unordered_map<uint64_t, Merge> pair_merges_;
    std::unordered_map<std::string, Merge, StringHash, std::equal_to<>> text_merges_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_bpe_tokenizer(std::unique_ptr<Vocabulary> vocab, const std::vector<std::string>& merges,
                                              PretokenizerKind pretokenizer, bool ignore_merges) {
    vocab->finalize(PieceStyle::byte_level);
    return std::make_unique<BpeTokenizer>(std::move(vocab), merges, std::make_unique<RegexPretokenizer>(pretokenizer),
                                          ignore_merges, false);
}

std::unique_ptr<Tokenizer> make_bpe_tokenizer(std::unique_ptr<Vocabulary> vocab, const std::vector<std::string>& merges,
                                              const BpeConfig& config) {
    auto pretokenizer = std::make_unique<RegexPretokenizer>(config.patterns);
    vocab->finalize(PieceStyle::byte_level);
    return std::make_unique<BpeTokenizer>(std::move(vocab), merges, std::move(pretokenizer), config.ignore_merges,
                                          config.nfc);
}

}  // namespace inlay
