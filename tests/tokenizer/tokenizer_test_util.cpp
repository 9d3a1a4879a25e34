#include "tokenizer/tokenizer_test_util.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "io/gguf_reader.h"
#include "support/test_paths.h"
#include "tokenizer/byte_level.h"

namespace inlay::test {

std::vector<std::string> read_vocab_inputs(const std::filesystem::path& path) {
    const std::string all = read_file(path);
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> out;
    size_t pos = 0;
    for (;;) {
        const size_t at = all.find(sep, pos);
        if (at == std::string::npos) break;
        out.push_back(all.substr(pos, at - pos));
        pos = at + sep.size();
    }
    return out;
}

std::vector<std::vector<int32_t>> read_vocab_outputs(const std::filesystem::path& path) {
    const std::string all = read_file(path);
    std::vector<std::vector<int32_t>> out;
    std::istringstream lines(all);
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream ids(line);
        std::vector<int32_t> v;
        int64_t id;
        while (ids >> id) v.push_back(static_cast<int32_t>(id));
        out.push_back(std::move(v));
    }
    return out;
}

size_t check_vocab_vectors(const Tokenizer& tok, const std::string& name) {
    const auto inputs = read_vocab_inputs(testdata("vocab/" + name + ".inp"));
    const auto expected = read_vocab_outputs(testdata("vocab/" + name + ".out"));
    REQUIRE(inputs.size() == 46);
    REQUIRE(expected.size() == inputs.size());
    size_t matched = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const std::vector<int32_t> ids = tok.encode(inputs[i], false);
        INFO(name << " case " << i << ": \"" << inputs[i] << "\"\n  expected " << ids_to_string(expected[i])
                  << "\n  got      " << ids_to_string(ids));
        CHECK(ids == expected[i]);
        if (ids == expected[i]) ++matched;
        // Round trip; SentencePiece vocabularies drop their dummy prefix at the start.
        CHECK(tok.decode(expected[i], false, true) == inputs[i]);
    }
    return matched;
}

Metadata gguf_metadata(const std::filesystem::path& path) {
    return GgufFile::open(path.string())->metadata();
}

MetadataValue string_array(std::vector<std::string> values) {
    MetadataArray a;
    a.elem_type = ValueType::STRING;
    a.strings = std::move(values);
    return MetadataValue::from_array(std::move(a));
}

MetadataValue int_array(ValueType type, std::vector<int64_t> values) {
    MetadataArray a;
    a.elem_type = type;
    a.ints = std::move(values);
    return MetadataValue::from_array(std::move(a));
}

MetadataValue float_array(std::vector<double> values) {
    MetadataArray a;
    a.elem_type = ValueType::F32;
    a.floats = std::move(values);
    return MetadataValue::from_array(std::move(a));
}

namespace {

// convert_hf_to_gguf.py's does_token_look_special: such added tokens become control
// tokens even when tokenizer.json does not mark them special.
bool looks_special(const std::string& t) {
    auto starts = [&](std::string_view p) { return t.size() >= p.size() && t.compare(0, p.size(), p) == 0; };
    auto ends = [&](std::string_view p) {
        return t.size() >= p.size() && t.compare(t.size() - p.size(), p.size(), p) == 0;
    };
    return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" || (starts("<|") && ends("|>")) ||
           (starts("<\xEF\xBD\x9C") && ends("\xEF\xBD\x9C>")) || (starts("<unused") && ends(">"));
}

}  // namespace

Metadata metadata_from_hf_tokenizer_json(const std::filesystem::path& path, const std::string& pre) {
    const nlohmann::json j = nlohmann::json::parse(read_file(path));
    const auto& vocab = j.at("model").at("vocab");
    size_t n = 0;
    for (const auto& [text, id] : vocab.items()) n = std::max(n, id.get<size_t>() + 1);
    for (const auto& t : j.at("added_tokens")) n = std::max(n, t.at("id").get<size_t>() + 1);
    std::vector<std::string> tokens(n);
    std::vector<int64_t> types(n, 1);
    for (const auto& [text, id] : vocab.items()) tokens[id.get<size_t>()] = text;
    for (const auto& t : j.at("added_tokens")) {
        const auto id = t.at("id").get<size_t>();
        tokens[id] = t.at("content").get<std::string>();
        types[id] = t.at("special").get<bool>() || looks_special(tokens[id]) ? 3 : 4;
    }
    for (size_t i = 0; i < n; ++i) {
        if (tokens[i].empty()) {  // convert_hf_to_gguf.py fills holes with [PAD<i>] (unused)
            tokens[i] = "[PAD" + std::to_string(i) + "]";
            types[i] = 5;
        }
    }
    std::vector<std::string> merges;
    for (const auto& m : j.at("model").at("merges")) {
        if (m.is_string())
            merges.push_back(m.get<std::string>());
        else
            merges.push_back(m.at(0).get<std::string>() + " " + m.at(1).get<std::string>());
    }
    Metadata md;
    md.add("tokenizer.ggml.model", MetadataValue::from_string("gpt2"));
    md.add("tokenizer.ggml.pre", MetadataValue::from_string(pre));
    md.add("tokenizer.ggml.tokens", string_array(std::move(tokens)));
    md.add("tokenizer.ggml.token_type", int_array(ValueType::I32, std::move(types)));
    md.add("tokenizer.ggml.merges", string_array(std::move(merges)));
    return md;
}

Metadata tiny_spm_metadata(const std::vector<std::string>& pieces) {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int64_t> types = {2, 3, 3};
    std::vector<double> scores = {0, 0, 0};
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        tokens.emplace_back(name);
        types.push_back(6);
        scores.push_back(0);
    }
    for (size_t i = 0; i < pieces.size(); ++i) {
        tokens.push_back(pieces[i]);
        types.push_back(1);
        scores.push_back(-1.0 - static_cast<double>(i));
    }
    Metadata md;
    md.add("tokenizer.ggml.model", MetadataValue::from_string("llama"));
    md.add("tokenizer.ggml.tokens", string_array(std::move(tokens)));
    md.add("tokenizer.ggml.scores", float_array(std::move(scores)));
    md.add("tokenizer.ggml.token_type", int_array(ValueType::I32, std::move(types)));
    md.add("tokenizer.ggml.bos_token_id", MetadataValue::from_int(ValueType::U32, 1));
    md.add("tokenizer.ggml.eos_token_id", MetadataValue::from_int(ValueType::U32, 2));
    md.add("tokenizer.ggml.unknown_token_id", MetadataValue::from_int(ValueType::U32, 0));
    return md;
}

Metadata tiny_bpe_metadata(const std::vector<std::string>& merges, const std::string& pre,
                           const std::vector<std::string>& extra_tokens) {
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.push_back(byte_level::encode_byte(static_cast<uint8_t>(b)));
    for (const auto& m : merges) {
        const size_t sp = m.find(' ', 1);
        tokens.push_back(m.substr(0, sp) + m.substr(sp + 1));
    }
    tokens.insert(tokens.end(), extra_tokens.begin(), extra_tokens.end());
    std::vector<int64_t> types(tokens.size(), 1);
    for (const char* s : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
        tokens.emplace_back(s);
        types.push_back(3);
    }
    Metadata md;
    md.add("tokenizer.ggml.model", MetadataValue::from_string("gpt2"));
    md.add("tokenizer.ggml.pre", MetadataValue::from_string(pre));
    md.add("tokenizer.ggml.tokens", string_array(std::move(tokens)));
    md.add("tokenizer.ggml.token_type", int_array(ValueType::I32, std::move(types)));
    md.add("tokenizer.ggml.merges", string_array(merges));
    return md;
}

std::string ids_to_string(const std::vector<int32_t>& ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + std::to_string(ids[i]);
    return s + "]";
}

}  // namespace inlay::test
