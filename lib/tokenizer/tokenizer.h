// Tokenizers: text <-> token ids, matching llama.cpp's llama-vocab.cpp on the same
// vocabulary.
//
//   auto tok = inlay::tokenizer_from_gguf(gguf->metadata());
//   std::vector<int32_t> ids = tok->encode("Hello world", /*parse_special=*/false);
//   if (tok->add_bos()) ids.insert(ids.begin(), tok->bos());
//   std::string text = tok->decode(ids, /*render_special=*/false, /*at_start=*/true);
//
// A Tokenizer is immutable after construction and safe for concurrent const use from
// any number of threads. Errors are inlay::Error with the most specific status.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace inlay {

class Metadata;
struct Vocabulary;

// GGUF tokenizer.ggml.token_type values.
enum class TokenType : uint8_t {
    undefined = 0,
    normal = 1,
    unknown = 2,
    control = 3,
    user_defined = 4,
    unused = 5,
    byte = 6,
};

class Tokenizer {
public:
    virtual ~Tokenizer();
    Tokenizer(const Tokenizer&) = delete;
    Tokenizer& operator=(const Tokenizer&) = delete;

    // UTF-8 text -> ids; never adds BOS/EOS. With parse_special, the text of control
    // tokens (e.g. "<s>", "<|im_start|>") becomes that token; without it, it is plain
    // text. As in llama.cpp (and Hugging Face), user-defined tokens (e.g. Qwen3's
    // "<think>") are matched in either case. Invalid UTF-8 throws
    // INLAY_ERR_INVALID_UTF8 naming the byte offset.
    virtual std::vector<int32_t> encode(std::string_view text, bool parse_special) const = 0;

    // Raw bytes this token contributes to text (possibly an incomplete UTF-8 sequence,
    // e.g. byte tokens). Control and unknown tokens give "" unless render_special, then
    // their vocabulary text. Out-of-range id: INLAY_ERR_INVALID_TOKEN.
    virtual std::string token_to_piece(int32_t id, bool render_special) const;

    [[nodiscard]] int32_t n_vocab() const;
    [[nodiscard]] int32_t bos() const;   // -1 if none
    [[nodiscard]] int32_t eos() const;   // -1 if none
    [[nodiscard]] int32_t unk() const;   // -1 if none
    [[nodiscard]] bool add_bos() const;  // whether prompts should start with bos()
    [[nodiscard]] bool add_eos() const;  // whether prompts should end with eos()
    // EOS, EOT, EOM and tokens whose text is a known end-of-turn marker (<|eot_id|>,
    // <|im_end|>, <|endoftext|>, <|end|>, <end_of_turn>, ...). False for invalid ids.
    [[nodiscard]] bool is_eog(int32_t id) const;
    // All end-of-generation ids, ascending.
    [[nodiscard]] std::vector<int32_t> eog_ids() const;
    // Type after llama.cpp's fix-ups (end-of-turn markers are always control).
    // Out-of-range id: INLAY_ERR_INVALID_TOKEN (as for token_text).
    [[nodiscard]] TokenType token_type(int32_t id) const;
    [[nodiscard]] const std::string& token_text(int32_t id) const;  // the vocabulary string
    // Id of the token whose vocabulary string is exactly `text`, or -1.
    [[nodiscard]] int32_t find_token(std::string_view text) const;

    // True for SentencePiece-style vocabularies that add a dummy space prefix: the
    // first piece of a conversation's text then starts with a space that
    // detokenization drops.
    [[nodiscard]] bool strips_leading_space() const;

    // Whole-sequence decode: the concatenated pieces (raw bytes: ids that end inside a
    // character leave an incomplete sequence; StreamingDetokenizer gives valid UTF-8).
    // With at_start and strips_leading_space(), one leading space is dropped from the
    // first token that contributes any text.
    [[nodiscard]] std::string decode(std::span<const int32_t> ids, bool render_special, bool at_start) const;

protected:
    explicit Tokenizer(std::unique_ptr<const Vocabulary> vocab);

    // A run of text between special tokens (token < 0) or one special token.
    struct Fragment {
        std::string_view text;
        int32_t token = -1;
    };
    // Validates UTF-8 and splits `text` at special-token text exactly as llama.cpp's
    // tokenizer_st_partition does (longest tokens first, then leftmost occurrences).
    [[nodiscard]] std::vector<Fragment> split_special(std::string_view text, bool parse_special) const;
    [[nodiscard]] const Vocabulary& vocab() const { return *vocab_; }
    void check_id(int32_t id) const;

private:
    std::unique_ptr<const Vocabulary> vocab_;
};

// From GGUF metadata (tokenizer.ggml.*): model "llama" -> SentencePiece-style BPE over
// tokens/scores/types with byte fallback; model "gpt2" -> byte-level BPE over
// tokens/merges with the pre-tokenizer named by tokenizer.ggml.pre ("default" or
// absent, "gpt-2", "llama-bpe", "qwen2" and their llama.cpp aliases; others ->
// INLAY_ERR_UNSUPPORTED). Malformed vocabularies give INLAY_ERR_BAD_FORMAT (or
// INLAY_ERR_MISSING for an absent required key) naming the key and index.
std::unique_ptr<Tokenizer> tokenizer_from_gguf(const Metadata& metadata);

// A SentencePiece `tokenizer.model` through the sentencepiece library (encode is
// sentencepiece's; special-token splitting, pieces and decoding follow the rules
// above). INLAY_ERR_IO if the file cannot be read, INLAY_ERR_BAD_FORMAT if it does
// not parse.
std::unique_ptr<Tokenizer> tokenizer_from_sentencepiece(const std::string& path);

// Turns a stream of token ids into text that is always valid UTF-8: bytes of an
// incomplete character are held back until the token that completes them; ill-formed
// sequences become U+FFFD (one per maximal subpart). Applies the leading-space rule of
// Tokenizer::decode when at_start. Holds a reference to `tok`, which must outlive it.
// One instance per stream; not thread-safe itself.
class StreamingDetokenizer {
public:
    StreamingDetokenizer(const Tokenizer& tok, bool at_start, bool render_special = false);
    // Text completed by this token (maybe ""). Invalid id: INLAY_ERR_INVALID_TOKEN
    // (the stream is left unchanged).
    std::string push(int32_t id);
    // Whatever is held back, as U+FFFD; the stream can continue afterwards.
    std::string flush();
    // Bytes currently held back (an incomplete character: at most 3).
    [[nodiscard]] size_t pending_bytes() const { return pending_.size(); }

private:
    const Tokenizer* tok_;
    bool strip_next_;
    bool render_special_;
    std::string pending_;
};

}  // namespace inlay
