#include "tokenizer/tokenizer.h"

#include "core/error.h"
#include "core/utf8.h"
#include "tokenizer/vocabulary.h"

namespace inlay {

Tokenizer::Tokenizer(std::unique_ptr<const Vocabulary> vocab) : vocab_(std::move(vocab)) {}

Tokenizer::~Tokenizer() = default;

void Tokenizer::check_id(int32_t id) const {
    if (id < 0 || id >= vocab_->n_tokens()) {
        fail(INLAY_ERR_INVALID_TOKEN, "token id {} is outside the vocabulary (0..{})", id, vocab_->n_tokens() - 1);
    }
}

int32_t Tokenizer::n_vocab() const {
    return vocab_->n_tokens();
}
int32_t Tokenizer::bos() const {
    return vocab_->bos;
}
int32_t Tokenizer::eos() const {
    return vocab_->eos;
}
int32_t Tokenizer::unk() const {
    return vocab_->unk;
}
bool Tokenizer::add_bos() const {
    return vocab_->add_bos && vocab_->bos >= 0;
}
bool Tokenizer::add_eos() const {
    return vocab_->add_eos && vocab_->eos >= 0;
}
bool Tokenizer::strips_leading_space() const {
    return vocab_->add_space_prefix;
}

bool Tokenizer::is_eog(int32_t id) const {
    return id >= 0 && id < vocab_->n_tokens() && vocab_->eog[static_cast<size_t>(id)] != 0;
}

std::vector<int32_t> Tokenizer::eog_ids() const {
    std::vector<int32_t> ids;
    for (int32_t id = 0; id < vocab_->n_tokens(); ++id) {
        if (vocab_->eog[static_cast<size_t>(id)]) ids.push_back(id);
    }
    return ids;
}

TokenType Tokenizer::token_type(int32_t id) const {
    check_id(id);
    return vocab_->types[static_cast<size_t>(id)];
}

const std::string& Tokenizer::token_text(int32_t id) const {
    check_id(id);
    return vocab_->texts[static_cast<size_t>(id)];
}

int32_t Tokenizer::find_token(std::string_view text) const {
    return vocab_->find(text);
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
    check_id(id);
    const auto i = static_cast<size_t>(id);
    const TokenType t = vocab_->types[i];
    if (!render_special && (t == TokenType::control || t == TokenType::unknown)) return {};
    return vocab_->pieces[i];
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool render_special, bool at_start) const {
    for (const int32_t id : ids) check_id(id);  // fail before producing anything
    std::string out;
    bool strip = at_start && strips_leading_space();
    for (const int32_t id : ids) {
        const TokenType t = vocab_->types[static_cast<size_t>(id)];
        if (!render_special && (t == TokenType::control || t == TokenType::unknown)) continue;
        std::string_view piece = vocab_->pieces[static_cast<size_t>(id)];
        if (piece.empty()) continue;
        if (strip) {
            if (piece.front() == ' ') piece.remove_prefix(1);
            strip = false;
        }
        out.append(piece);
    }
    return out;
}

namespace {

bool is_c_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

}  // namespace

std::vector<Tokenizer::Fragment> Tokenizer::split_special(std::string_view text, bool parse_special) const {
    utf8::require_valid(text);
    std::vector<Fragment> fragments;
    if (text.empty()) return fragments;
    fragments.push_back({text, -1});
    const Vocabulary& v = *vocab_;
    std::vector<Fragment> next;
    for (const int32_t id : v.specials) {
        const auto i = static_cast<size_t>(id);
        const TokenType type = v.types[i];
        // Without parse_special only user-defined tokens split the text (llama.cpp and
        // Hugging Face do the same: added non-special tokens are always matched).
        if (!parse_special && (type == TokenType::control || type == TokenType::unknown)) continue;
        const std::string& needle = v.texts[i];
        const uint8_t strip = v.strip.empty() ? 0 : v.strip[i];
        bool found = false;
        for (const Fragment& f : fragments) {
            if (f.token < 0 && f.text.find(needle) != std::string_view::npos) {
                found = true;
                break;
            }
        }
        if (!found) continue;
        next.clear();
        for (const Fragment& f : fragments) {
            if (f.token >= 0) {
                next.push_back(f);
                continue;
            }
            std::string_view rest = f.text;
            while (!rest.empty()) {
                const size_t at = rest.find(needle);
                if (at == std::string_view::npos) {
                    next.push_back({rest, -1});
                    break;
                }
                std::string_view left = rest.substr(0, at);
                if (strip & Vocabulary::lstrip) {
                    while (!left.empty() && is_c_space(left.back())) left.remove_suffix(1);
                }
                if (!left.empty()) next.push_back({left, -1});
                next.push_back({{}, id});
                rest = rest.substr(at + needle.size());
                if (strip & Vocabulary::rstrip) {
                    while (!rest.empty() && is_c_space(rest.front())) rest.remove_prefix(1);
                }
            }
        }
        fragments.swap(next);
    }
    return fragments;
}

}  // namespace inlay
