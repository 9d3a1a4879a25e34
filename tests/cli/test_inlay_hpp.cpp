// include/inlay/inlay.hpp: ownership, exceptions carrying the status, and callbacks
// (including exceptions thrown by them) over the C ABI, on stories260K.
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "inlay/inlay.hpp"
#include "support/test_paths.h"

using inlay::test::testdata;

namespace {

inlay::Model load_stories() {
    inlay::ModelOptions options;
    options.n_threads = 1;
    return inlay::Model::load(testdata("models/stories260K.gguf").string(), options);
}

inlay::GenerateOptions greedy(int32_t max_tokens) {
    inlay::GenerateOptions o;
    o.params.temperature = 0.0f;
    o.params.max_tokens = max_tokens;
    return o;
}

}  // namespace

TEST_CASE("inlay.hpp: errors carry the status and inlay_last_error()", "[hpp]") {
    try {
        (void)inlay::Model::load("/nonexistent/model.gguf");
        FAIL("no exception");
    } catch (const inlay::Error& e) {
        CHECK(e.status() == INLAY_ERR_IO);
        CHECK(std::string(e.what()).starts_with("INLAY_ERR_IO"));
    }
    const auto path = testdata("models/stories260K.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(path);
    const inlay::Model model = load_stories();
    inlay::Session session(model);
    const int32_t bad[] = {1, 600};
    try {
        (void)session.generate_tokens(bad, greedy(2));
        FAIL("no exception");
    } catch (const inlay::Error& e) {
        CHECK(e.status() == INLAY_ERR_INVALID_TOKEN);
    }
    try {
        (void)model.tokenize("\xc3");
        FAIL("no exception");
    } catch (const inlay::Error& e) {
        CHECK(e.status() == INLAY_ERR_INVALID_UTF8);
    }
    CHECK(session.n_tokens() == 0);
}

TEST_CASE("inlay.hpp: model, tokenizer, session and result", "[hpp]") {
    const auto path = testdata("models/stories260K.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(path);
    inlay::Model model = load_stories();
    const inlay_model_info info = model.info();
    CHECK(info.n_vocab == 512);
    CHECK(std::string(info.architecture) == "llama");

    const std::vector<int32_t> ids = model.tokenize("Once upon a time");
    CHECK(ids == std::vector<int32_t>{1, 403, 407, 261, 378});
    CHECK(model.tokenize("Once", 0) == std::vector<int32_t>{403});
    CHECK(model.detokenize(ids) == "Once upon a time");
    CHECK(model.detokenize(ids, true).find("<s>") != std::string::npos);
    CHECK(model.detokenize({}).empty());

    // Moves keep ownership single.
    inlay::Model moved = std::move(model);
    CHECK(!model);
    CHECK(moved);
    inlay::Session session(moved);

    std::string streamed;
    size_t calls = 0;
    const inlay::Result r = session.generate("Once upon a time", greedy(16), [&](int32_t, std::string_view piece) {
        streamed += piece;
        ++calls;
        return true;
    });
    CHECK(r.tokens().size() == 16);
    CHECK(calls == 16);
    CHECK(streamed == r.text());
    CHECK(r.prompt_tokens().size() == 5);
    CHECK(r.stop_reason() == INLAY_STOP_MAX_TOKENS);
    CHECK(r.timings().generated_tokens == 16);
    CHECK(session.n_tokens() == 21);

    // An empty std::function and a plain function pointer are accepted too.
    session.reset();
    const std::function<bool(int32_t, std::string_view)> none;
    const inlay::Result quiet = session.generate("Once upon a time", greedy(16), none);
    CHECK(std::vector<int32_t>(quiet.tokens().begin(), quiet.tokens().end()) ==
          std::vector<int32_t>(r.tokens().begin(), r.tokens().end()));
    session.reset();
    bool (*fn)(int32_t, std::string_view) = [](int32_t, std::string_view) { return false; };
    CHECK(session.generate("Once", greedy(16), fn).stop_reason() == INLAY_STOP_CALLBACK);

    // Teacher forcing: the argmax after the prompt is the first greedy token.
    session.reset();
    const std::vector<float> logits = session.eval_logits(ids);
    REQUIRE(logits.size() == ids.size() * 512);
    size_t best = 0;
    for (size_t i = 1; i < 512; ++i) {
        if (logits[4 * 512 + i] > logits[4 * 512 + best]) best = i;
    }
    CHECK(static_cast<int32_t>(best) == r.tokens()[0]);
}

TEST_CASE("inlay.hpp: callbacks: exceptions propagate, cancel returns the partial result", "[hpp]") {
    const auto path = testdata("models/stories260K.gguf");
    INLAY_REQUIRE_FILE_OR_SKIP(path);
    const inlay::Model model = load_stories();
    inlay::Session session(model);

    int n = 0;
    CHECK_THROWS_WITH(session.generate("Once", greedy(32),
                                       [&](int32_t, std::string_view) -> bool {
                                           if (++n == 3) throw std::runtime_error("boom");
                                           return true;
                                       }),
                      "boom");
    CHECK(n == 3);
    // The session is still usable.
    CHECK(session.generate(" upon", greedy(4)).tokens().size() == 4);

    // cancel() from inside the callback: not an error, the result says cancelled.
    session.reset();
    int seen = 0;
    const inlay::Result r = session.generate("Once", greedy(64), [&](int32_t, std::string_view) {
        if (++seen == 5) session.cancel();
        return true;
    });
    CHECK(r.stop_reason() == INLAY_STOP_CANCELLED);
    CHECK(r.tokens().size() >= 5);
    CHECK(r.tokens().size() <= 6);

    // Load progress through std::function: false cancels, an exception propagates.
    inlay::ModelOptions stop;
    stop.progress = [](float) { return false; };
    try {
        (void)inlay::Model::load(path.string(), stop);
        FAIL("no exception");
    } catch (const inlay::Error& e) {
        CHECK(e.status() == INLAY_ERR_CANCELLED);
    }
    inlay::ModelOptions throwing;
    throwing.progress = [](float) -> bool { throw std::logic_error("progress failed"); };
    CHECK_THROWS_AS(inlay::Model::load(path.string(), throwing), std::logic_error);
    float last = -1.0f;
    inlay::ModelOptions watch;
    watch.progress = [&](float p) {
        last = p;
        return true;
    };
    CHECK(inlay::Model::load(path.string(), watch));
    CHECK(last == 1.0f);
}
