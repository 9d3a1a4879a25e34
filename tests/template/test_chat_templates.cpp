// The real chat templates of Qwen3 and Llama 3 (testdata/tokenizers/*/tokenizer_config.json):
// Ollama's expected renderings (testdata/chat) and jinja2's renderings of more
// conversations (data/chat_cases.json: system prompts, multi-turn, thinking on and
// off, add_generation_prompt false, tools, tool calls, reasoning).
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "support/test_paths.h"
#include "template/chat_template.h"
#include "template/template_test_util.h"
#include "tokenizer/hf_tokenizer.h"

using namespace inlay;
using inlay::test::testdata;
using json = nlohmann::ordered_json;

namespace {

std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

ChatTemplate load_template(const std::string& model) {
    const HfTokenizerConfig config = read_tokenizer_config(testdata("tokenizers/" + model));
    REQUIRE_FALSE(config.chat_template.empty());
    return ChatTemplate(config.chat_template, config.bos_token.value_or(""), config.eos_token.value_or(""));
}

const std::vector<ChatMessage> k_user = {{"user", "Hello, how are you?"}};
const std::vector<ChatMessage> k_user_assistant_user = {{"user", "Hello, how are you?"},
                                                        {"assistant", "I'm doing great. How can I help you today?"},
                                                        {"user", "I'd like to show off how chat templating works!"}};

std::vector<ChatMessage> with_system(std::vector<ChatMessage> m) {
    m.insert(m.begin(), {"system", "You are a helpful assistant."});
    return m;
}

}  // namespace

TEST_CASE("Qwen3 template renders the three chatml conversations exactly", "[template][chat]") {
    INLAY_REQUIRE_FILE_OR_SKIP(testdata("tokenizers/qwen3/tokenizer_config.json"));
    const ChatTemplate t = load_template("qwen3");
    const ChatTemplateInputs in;  // add_generation_prompt, enable_thinking unset
    CHECK(t.apply(k_user, in) == read_text(testdata("chat/ollama-chatml.user.txt")));
    CHECK(t.apply(k_user_assistant_user, in) == read_text(testdata("chat/ollama-chatml.user-assistant-user.txt")));
    CHECK(t.apply(with_system(k_user_assistant_user), in) ==
          read_text(testdata("chat/ollama-chatml.system-user-assistant-user.txt")));
}

TEST_CASE("Llama 3 template renders the three llama3-instruct conversations exactly", "[template][chat]") {
    INLAY_REQUIRE_FILE_OR_SKIP(testdata("tokenizers/llama3/tokenizer_config.json"));
    const ChatTemplate t = load_template("llama3");
    const ChatTemplateInputs in;
    // Ollama's files omit the <|begin_of_text|> the template writes (Ollama adds BOS
    // when tokenizing).
    const std::string bos = "<|begin_of_text|>";
    CHECK(t.apply(k_user, in) == bos + read_text(testdata("chat/ollama-llama3-instruct.user.txt")));
    CHECK(t.apply(k_user_assistant_user, in) ==
          bos + read_text(testdata("chat/ollama-llama3-instruct.user-assistant-user.txt")));
    CHECK(t.apply(with_system(k_user_assistant_user), in) ==
          bos + read_text(testdata("chat/ollama-llama3-instruct.system-user-assistant-user.txt")));
}

TEST_CASE("Qwen3 and Llama 3 templates match jinja2 on more conversations", "[template][chat]") {
    INLAY_REQUIRE_FILE_OR_SKIP(testdata("tokenizers/qwen3/tokenizer_config.json"));
    const ChatTemplate qwen = load_template("qwen3");
    const ChatTemplate llama = load_template("llama3");
    const json doc = test::read_json(test::source_dir() / "tests/template/data/chat_cases.json");
    size_t checked = 0;
    for (const auto& c : doc.at("cases")) {
        const std::string model = c.at("model").get<std::string>();
        INFO(model << ": " << c.at("name").get<std::string>());
        ChatTemplateInputs in;
        in.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
        if (c.contains("enable_thinking")) in.enable_thinking = c.at("enable_thinking").get<bool>();
        if (c.contains("tools")) in.tools = c.at("tools");
        const ChatTemplate& t = model == "qwen3" ? qwen : llama;
        CHECK(t.apply_json(c.at("messages"), in) == c.at("output").get<std::string>());
        ++checked;
    }
    CHECK(checked >= 30);
}

TEST_CASE("Qwen3 thinking switch and generation prompt", "[template][chat]") {
    INLAY_REQUIRE_FILE_OR_SKIP(testdata("tokenizers/qwen3/tokenizer_config.json"));
    const ChatTemplate t = load_template("qwen3");
    ChatTemplateInputs in;
    in.enable_thinking = false;
    CHECK(t.apply(k_user, in).ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
    in.enable_thinking = true;
    CHECK(t.apply(k_user, in).ends_with("<|im_start|>assistant\n"));
    in.add_generation_prompt = false;
    CHECK(t.apply(k_user, in).ends_with("Hello, how are you?<|im_end|>\n"));
}

TEST_CASE("rendered Llama 3 prompt tokenizes into its special tokens", "[template][chat]") {
    INLAY_REQUIRE_FILE_OR_SKIP(testdata("tokenizers/llama3/tokenizer.json"));
    const ChatTemplate t = load_template("llama3");
    const auto tok = tokenizer_from_folder(testdata("tokenizers/llama3"));
    const auto ids = tok->encode(t.apply(k_user, {}), true);
    REQUIRE(ids.size() > 8);
    CHECK(ids[0] == 128000);                                 // <|begin_of_text|>
    CHECK(ids[1] == 128006);                                 // <|start_header_id|>
    CHECK(ids[3] == 128007);                                 // <|end_header_id|>
    CHECK(std::count(ids.begin(), ids.end(), 128009) == 1);  // one <|eot_id|>
    CHECK(ids[ids.size() - 4] == 128006);                    // the assistant header closes the prompt
}
