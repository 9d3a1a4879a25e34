#include "speculation_option.h"

namespace inlay::cli {

void SpeculationArgs::add_options(std::vector<Option>& options) {
    options.push_back({"--draft", "", "MODEL",
                       "speculative decoding: a smaller model with the same vocabulary proposes tokens", &draft_path});
    options.push_back({"--lookup", "", "", "speculative decoding: tokens that followed the last few earlier in the text "
                       "are proposed (prompt lookup)", &lookup});
    options.push_back({"--n-draft", "", "K", "proposals per step at most, 1..64 (default 8; adapted below that)",
                       &n_draft, 1, 64});
    options.push_back({"--n-draft-min", "", "K", "proposals per step at least (default 0: adaptive)", &n_draft_min, 0,
                       64});
    options.push_back({"--p-min", "", "P", "--draft: stop proposing below this draft probability (default 0.5)",
                       &p_min, 0, 1});
}

bool SpeculationArgs::enabled(const ParsedArgs& parsed) const {
    const bool draft = parsed.has("--draft");
    if (draft && lookup) throw UsageError("--draft and --lookup exclude each other");
    if (n_draft_min > n_draft) throw UsageError("--n-draft-min must not exceed --n-draft");
    if (!draft && !lookup && (parsed.has("--n-draft") || parsed.has("--n-draft-min") || parsed.has("--p-min")))
        throw UsageError("--n-draft, --n-draft-min and --p-min need --draft MODEL or --lookup");
    return draft || lookup;
}

SessionOptions speculation_session(const SpeculationArgs& args, const ParsedArgs& parsed, int32_t n_threads,
                                   int32_t context_length, const std::string& device,
                                   std::optional<LoadedModel>& draft) {
    SessionOptions o;
    o.context_length = context_length;
    if (!args.enabled(parsed)) return o;
    o.n_draft = args.n_draft;
    o.n_draft_min = args.n_draft_min;
    o.p_min = args.p_min;
    if (args.lookup) {
        o.speculation = INLAY_SPECULATION_PROMPT_LOOKUP;
        return o;
    }
    draft.emplace(load_model(args.draft_path, n_threads, context_length, false, device));
    o.speculation = INLAY_SPECULATION_DRAFT_MODEL;
    o.draft = &draft->model;
    return o;
}

}  // namespace inlay::cli
