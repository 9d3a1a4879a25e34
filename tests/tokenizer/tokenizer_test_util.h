// Shared helpers of the tokenizer tests: llama.cpp's .inp/.out test-vector files,
// GGUF metadata, Hugging Face tokenizer.json converted the way llama.cpp's
// convert_hf_to_gguf.py does, and hand-made vocabularies.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "io/metadata.h"
#include "support/test_paths.h"
#include "tokenizer/tokenizer.h"

namespace inlay::test {

// The test strings of a llama.cpp .inp file (split on "\n__ggml_vocab_test__\n").
std::vector<std::string> read_vocab_inputs(const std::filesystem::path& path);
// The expected ids of a llama.cpp .out file, one vector per line.
std::vector<std::vector<int32_t>> read_vocab_outputs(const std::filesystem::path& path);

// Checks every llama.cpp test vector of `name` (testdata/vocab/NAME.inp and .out; 46 of
// them) against tok: the ids (a CHECK per string) and the round trip of the expected ids
// back to the text. Returns the number of strings whose ids matched exactly.
size_t check_vocab_vectors(const Tokenizer& tok, const std::string& name);

// Metadata of a GGUF file (through io/gguf_reader.h).
Metadata gguf_metadata(const std::filesystem::path& path);

// tokenizer.ggml.* keys for a Hugging Face byte-level BPE tokenizer.json, as
// convert_hf_to_gguf.py writes them: tokens by id, added tokens typed control
// (special, or looking special like "<|...|>") or user-defined, merges as
// "left right" strings.
Metadata metadata_from_hf_tokenizer_json(const std::filesystem::path& path, const std::string& pre);

// Metadata helpers for hand-made vocabularies.
MetadataValue string_array(std::vector<std::string> values);
MetadataValue int_array(ValueType type, std::vector<int64_t> values);
MetadataValue float_array(std::vector<double> values);

// A tiny SentencePiece-style vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then
// `pieces` with scores -1, -2, ... (the first piece scores highest).
Metadata tiny_spm_metadata(const std::vector<std::string>& pieces);

// A tiny byte-level BPE vocabulary: the 256 byte symbols, the results of `merges` (in
// order), then the control tokens "<|endoftext|>", "<|im_start|>", "<|im_end|>".
// `extra_tokens` are appended (normal type) before the control tokens.
Metadata tiny_bpe_metadata(const std::vector<std::string>& merges, const std::string& pre = "qwen2",
                           const std::vector<std::string>& extra_tokens = {});

// "[1, 2, 3]" for messages.
std::string ids_to_string(const std::vector<int32_t>& ids);

}  // namespace inlay::test
