#include "runtime/chat_session.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "core/error.h"
#include "core/utf8.h"
#include "tokenizer/hf_tokenizer.h"

namespace inlay {

std::string model_chat_template_source(const Model& model) {
    if (auto t = model.weights().metadata().get_string_opt("tokenizer.chat_template"); t && !t->empty()) return *t;
    // A model loaded from a folder (or a .safetensors file in one) without the key.
    std::error_code ec;
    std::filesystem::path folder = model.weights().origin();
    if (!std::filesystem::is_directory(folder, ec)) {
        folder = folder.extension() == ".safetensors" ? folder.parent_path() : std::filesystem::path();
    }
    if (!folder.empty() && std::filesystem::is_directory(folder, ec)) {
        HfTokenizerConfig config = read_tokenizer_config(folder);
        if (!config.chat_template.empty()) return std::move(config.chat_template);
    }
    fail(INLAY_ERR_MISSING, "{} has no chat template (no tokenizer.chat_template); pass one explicitly",
         model.weights().origin());
}

ChatTemplate model_chat_template(const Model& model, std::string_view source_override) {
    const Tokenizer& tok = model.tokenizer();
    std::string bos = tok.bos() >= 0 ? tok.token_text(tok.bos()) : std::string();
    std::string eos = tok.eos() >= 0 ? tok.token_text(tok.eos()) : std::string();
    if (!source_override.empty()) return ChatTemplate(source_override, std::move(bos), std::move(eos));
    return ChatTemplate(model_chat_template_source(model), std::move(bos), std::move(eos));
}

ChatTurn prepare_chat_turn(Session& session, const ChatTemplate& chat_template,
                           const std::vector<ChatMessage>& messages, const ChatTemplateInputs& inputs) {
    for (const ChatMessage& m : messages) {
        utf8::require_valid(m.role, "a chat message's role");
        utf8::require_valid(m.content, "a chat message's content");
    }
    const Tokenizer& tok = session.model().tokenizer();
    ChatTurn turn;
    turn.prompt = chat_template.apply(messages, inputs);
    turn.tokens = tok.encode(turn.prompt, true);
    if (tok.add_bos() && (turn.tokens.empty() || turn.tokens.front() != tok.bos()))
        turn.tokens.insert(turn.tokens.begin(), tok.bos());
    if (turn.tokens.empty()) fail(INLAY_ERR_INVALID_ARGUMENT, "the chat template rendered an empty prompt");
    if (static_cast<int64_t>(turn.tokens.size()) > session.context_length())
        fail(INLAY_ERR_CONTEXT_FULL, "the conversation has {} tokens; the session's context is {}", turn.tokens.size(),
             session.context_length());

    const std::vector<int32_t> history = session.tokens();  // INLAY_ERR_BUSY during a call
    const size_t limit = std::min(history.size(), turn.tokens.size() - 1);  // keep one token to evaluate
    size_t common = 0;
    while (common < limit && history[common] == turn.tokens[common]) ++common;
    if (common < history.size()) session.truncate(static_cast<int64_t>(common));
    turn.reused = common;
    return turn;
}

GenerateResult chat(Session& session, const ChatTemplate& chat_template, const std::vector<ChatMessage>& messages,
                    const ChatTemplateInputs& inputs, const GenerateOptions& options) {
    const ChatTurn turn = prepare_chat_turn(session, chat_template, messages, inputs);
    const std::span<const int32_t> input(turn.tokens.data() + turn.reused, turn.tokens.size() - turn.reused);
    return session.generate(input, options);
}

}  // namespace inlay
