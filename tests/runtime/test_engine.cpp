// Engine and Session behaviour: concurrent sessions give exactly each session's lone
// output (checked against Executor::eval, which runs without the engine, pool or
// batching), incremental turns, fork and prefix reuse prefill only what is not shared
// (through the metrics), chunked prefill, preemption, KV exhaustion, cancel, reset,
// truncate, teacher-forced logits, and on which thread callbacks run.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "runtime_test_util.h"

using namespace inlay;
using namespace inlay::test;

namespace {

struct Job {
    std::vector<int32_t> prompt;
    int n = 0;
    std::vector<int32_t> tokens;
    inlay_status status = INLAY_OK;
    std::string error;
};

// Runs every job on its own session and thread at once; returns when all are done.
void run_concurrently(const std::shared_ptr<Engine>& engine, std::vector<Job>& jobs) {
    std::vector<std::unique_ptr<Session>> sessions;
    for (size_t i = 0; i < jobs.size(); ++i) sessions.push_back(std::make_unique<Session>(engine, 0));
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (size_t i = 0; i < jobs.size(); ++i) {
        threads.emplace_back([&, i] {
            ready.fetch_add(1);
            while (ready.load() < static_cast<int>(jobs.size())) std::this_thread::yield();
            try {
                const auto r = sessions[i]->generate(jobs[i].prompt, greedy(jobs[i].n));
                jobs[i].tokens = r.tokens;
                jobs[i].status = r.status;
            } catch (const Error& e) {
                jobs[i].status = e.status();
                jobs[i].error = e.what();
            }
        });
    }
    for (auto& t : threads) t.join();
}

// Like run_concurrently, but every request enters the batch in the same scheduler pass
// (an AdmissionGate) and every caller blocks in its first on_token callback until the
// test has read the metrics: from the gate's opening until every request is paused by
// its lookahead, the engine's steps depend on nothing but its own planning.
struct GatedPhase {
    int64_t steps = 0;   // forward passes from the gate's opening until all were paused
    int64_t tokens = 0;  // tokens sampled in them
};

GatedPhase run_gated(const std::shared_ptr<Engine>& engine, std::vector<Job>& jobs) {
    std::vector<std::unique_ptr<Session>> sessions;
    for (size_t i = 0; i < jobs.size(); ++i) sessions.push_back(std::make_unique<Session>(engine, 0));
    AdmissionGate gate(engine);
    Latch go;
    std::vector<std::thread> threads;
    for (size_t i = 0; i < jobs.size(); ++i) {
        threads.emplace_back([&, i] {
            auto opts = greedy(jobs[i].n);
            bool first = true;
            opts.on_token = [&](int32_t, std::string_view) {
                if (first) {
                    first = false;
                    return go.wait();
                }
                return true;
            };
            try {
                const auto r = sessions[i]->generate(jobs[i].prompt, opts);
                jobs[i].tokens = r.tokens;
                jobs[i].status = r.status;
            } catch (const Error& e) {
                jobs[i].status = e.status();
                jobs[i].error = e.what();
            }
        });
    }
    gate.wait_queued(static_cast<int64_t>(jobs.size()));
    const EngineMetrics before = engine->metrics();
    gate.open();
    // Each caller holds its first token, so each request stops at 1 + kLookahead tokens.
    int64_t expected = 0;
    for (const Job& j : jobs) expected += std::min<int64_t>(j.n, 1 + Session::kLookahead);
    wait_for_state([&] { return engine->metrics().tokens_generated - before.tokens_generated >= expected; },
                   "every request paused by its lookahead");
    const EngineMetrics paused = engine->metrics();
    go.open();
    gate.release();
    for (auto& t : threads) t.join();
    return {paused.steps - before.steps, paused.tokens_generated - before.tokens_generated};
}

void check_equal_alone(const std::shared_ptr<const Model>& model, int n_sessions, int n_gen, int64_t step_tokens,
                       int64_t blocks) {
    const auto n_vocab = static_cast<int32_t>(model->spec().n_vocab);
    std::vector<Job> jobs(static_cast<size_t>(n_sessions));
    int64_t prompt_tokens = 0;
    for (int i = 0; i < n_sessions; ++i) {
        jobs[static_cast<size_t>(i)].prompt = prompt_of(i, 3 + (i * 7) % 40, n_vocab, model->tokenizer().bos() >= 0 ? model->tokenizer().bos() : 1);
        jobs[static_cast<size_t>(i)].n = n_gen - (i % 3);
        REQUIRE(jobs[static_cast<size_t>(i)].n > Session::kLookahead);
        prompt_tokens += static_cast<int64_t>(jobs[static_cast<size_t>(i)].prompt.size());
    }
    auto engine = small_engine(model, blocks, step_tokens);
    const int64_t generated_before = engine->metrics().tokens_generated;
    const GatedPhase phase = run_gated(engine, jobs);
    const EngineMetrics m = engine->metrics();
    int64_t generated = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
        INFO("session " << i << ": " << jobs[i].error);
        REQUIRE(jobs[i].status == INLAY_OK);
        REQUIRE(jobs[i].tokens.size() == static_cast<size_t>(jobs[i].n));
        REQUIRE(greedy_within_contract(*model, jobs[i].prompt, jobs[i].tokens));
        generated += jobs[i].n;
    }
    // The gate's holder sampled 1 + kLookahead tokens before it and none after.
    REQUIRE(m.tokens_generated - generated_before == generated + 1 + Session::kLookahead);
    // Batching happened, by a count the engine's rules fix. In the gated phase every
    // session prefills its prompt and samples 1 + kLookahead tokens. A step that fills the
    // budget takes step_tokens tokens of that work (prompts and kLookahead decode inputs
    // per session); after the first step that does not, every prompt is done, and each
    // further step advances every session not waiting for its caller: at most kLookahead
    // of those, plus one for each session whose caller was late to take its first token
    // (it pauses one token early and resumes alone). Forward passes one session at a
    // time would need 1 + kLookahead per session.
    const int64_t n = n_sessions, work = prompt_tokens + n * Session::kLookahead;
    const int64_t bound = work / step_tokens + 1 + Session::kLookahead + n;
    INFO("gated phase: " << phase.steps << " steps for " << phase.tokens << " tokens; bound " << bound);
    REQUIRE(phase.tokens == n * (1 + Session::kLookahead));
    REQUIRE(phase.steps <= bound);
    REQUIRE(bound < n * (1 + Session::kLookahead) / 2);
}

}  // namespace

TEST_CASE("N concurrent sessions each equal the session alone (tiny models)", "[engine]") {
    for (const DType type : {DType::F32, DType::Q8_0, DType::F16}) {
        INFO("weights " << dtype_name(type));
        TinyLlamaOptions o;
        o.weight_type = type;
        const auto model = tiny_model(o, std::string("equal-") + std::string(dtype_name(type)));
        // 32 sessions; a step budget of 40 tokens mixes decode tokens with prefill chunks.
        check_equal_alone(model, 32, 20, 40, 512);
    }
}

TEST_CASE("N concurrent sessions each equal the session alone (testdata models)", "[engine]") {
    for (const char* file : {"models/stories260K.gguf", "llamacpp-refs/qwen3-r256-q8_0.gguf",
                             "llamacpp-refs/llama-r256-q4_k_m.gguf"}) {
        const auto path = testdata(file);
        INFO(file);
        INLAY_REQUIRE_FILE_OR_SKIP(path);
        const auto model = load_model_file(path, 2);
        check_equal_alone(model, 32, 24, 64, 1024);
    }
}

TEST_CASE("turns, forks and prefix reuse prefill only what is not cached", "[engine]") {
    TinyLlamaOptions o;
    const auto model = tiny_model(o, "prefill");
    const int64_t bs = 8;
    auto engine = small_engine(model, 128, 512, bs);
    const auto n_vocab = static_cast<int32_t>(o.n_vocab);
    Session s1(engine, 0);
    // 21 prompt tokens + 5 sampled: 25 cached, so the last block (8 slots) is partly filled.
    const auto p1 = prompt_of(1, 21, n_vocab);
    auto r = s1.generate(p1, greedy(5));
    REQUIRE(r.prefill_tokens == 21);
    REQUIRE(r.tokens == reference_greedy(*model, p1, 5));
    std::vector<int32_t> history = p1;
    history.insert(history.end(), r.tokens.begin(), r.tokens.end());
    REQUIRE(s1.history() == history);

    SECTION("a second turn prefills its new tokens and the last sampled one") {
        const auto before = engine->metrics();
        const std::vector<int32_t> turn{40, 41, 42, 43, 44, 45};
        r = s1.generate(turn, greedy(5));
        const auto after = engine->metrics();
        REQUIRE(r.prefill_tokens == 7);
        REQUIRE(after.tokens_prefilled - before.tokens_prefilled == 7);
        history.insert(history.end(), turn.begin(), turn.end());
        REQUIRE(r.tokens == reference_greedy(*model, history, 5));
    }
    SECTION("a fork shares the KV and prefills only its own input") {
        auto s2 = s1.fork();
        REQUIRE(s2->history() == history);
        REQUIRE(engine->metrics().blocks.shared == 4);  // ceil(25 / 8), the partial one included
        const std::vector<int32_t> turn{50, 51, 52};
        const auto before = engine->metrics();
        const auto r2 = s2->generate(turn, greedy(6));
        const auto after = engine->metrics();
        REQUIRE(after.tokens_prefilled - before.tokens_prefilled == 4);
        auto full = history;
        full.insert(full.end(), turn.begin(), turn.end());
        const auto want = reference_greedy(*model, full, 6);
        REQUIRE(r2.tokens == want);
        // The source is unaffected by its fork's writes (copy-on-write), and vice versa.
        const auto r1 = s1.generate(turn, greedy(6));
        REQUIRE(r1.tokens == want);
        REQUIRE(r1.prefill_tokens == 4);
    }
    SECTION("a new prompt reuses the cached blocks of a common prefix") {
        auto p3 = p1;  // 21 shared tokens: 2 full blocks of 8
        for (int32_t t : {60, 61, 62, 63, 64}) p3.push_back(t);
        Session s3(engine, 0);
        const auto before = engine->metrics();
        const auto r3 = s3.generate(p3, greedy(5));
        const auto after = engine->metrics();
        REQUIRE(after.prefix_tokens_reused - before.prefix_tokens_reused == 16);
        REQUIRE(after.tokens_prefilled - before.tokens_prefilled == 26 - 16);
        REQUIRE(r3.reused_tokens == 16);
        REQUIRE(r3.prefill_tokens == 26);
        REQUIRE(r3.tokens == reference_greedy(*model, p3, 5));
        // The whole first turn again (26 tokens): the 3 full blocks are reused.
        Session s4(engine, 0);
        const auto r4 = s4.generate(history, greedy(3));
        REQUIRE(r4.reused_tokens == 24);
        REQUIRE(r4.tokens == reference_greedy(*model, history, 3));
    }
}

TEST_CASE("chunked prefill of a long prompt runs beside decoding sessions", "[engine]") {
    TinyLlamaOptions o;
    o.context = 512;
    const auto model = tiny_model(o, "chunked");
    const auto n_vocab = static_cast<int32_t>(o.n_vocab);
    std::vector<Job> jobs(4);
    for (int i = 0; i < 4; ++i) {
        jobs[static_cast<size_t>(i)].prompt = prompt_of(i, i == 0 ? 300 : 4, n_vocab);
        jobs[static_cast<size_t>(i)].n = 30;
    }
    auto engine = small_engine(model, 256, 16);  // 16 tokens per step: ~19 chunks for the long prompt
    run_concurrently(engine, jobs);
    for (const Job& j : jobs) {
        REQUIRE(j.status == INLAY_OK);
        REQUIRE(j.tokens == reference_greedy(*model, j.prompt, j.n));
    }
}

TEST_CASE("a small KV budget preempts the youngest and keeps every output", "[engine]") {
    TinyLlamaOptions o;
    const auto model = tiny_model(o, "preempt");
    const auto n_vocab = static_cast<int32_t>(o.n_vocab);
    std::vector<Job> jobs(6);
    for (int i = 0; i < 6; ++i) {
        jobs[static_cast<size_t>(i)].prompt = prompt_of(i + 10, 10 + i, n_vocab);
        jobs[static_cast<size_t>(i)].n = 40;
    }
    // Each needs ~7 blocks of 8 tokens; 16 blocks hold two at a time.
    auto engine = small_engine(model, 16, 512, 8);
    run_concurrently(engine, jobs);
    for (const Job& j : jobs) {
        INFO(j.error);
        REQUIRE(j.status == INLAY_OK);
        REQUIRE(j.tokens == reference_greedy(*model, j.prompt, j.n));
    }
    const auto m = engine->metrics();
    REQUIRE(m.blocks_held == 0);  // the sessions are gone
    REQUIRE(m.blocks.used == 0);
    REQUIRE(m.blocks.free + m.blocks.cached == m.blocks.total);
    // Whether that run preempted depends on how the threads interleave; the case below
    // brings a preemption about by the engine's rules alone.
}

TEST_CASE("a younger request that outgrows the KV left by an older one is preempted and completes",
          "[engine]") {
    TinyLlamaOptions o;
    const auto model = tiny_model(o, "preempt-known");
    const auto n_vocab = static_cast<int32_t>(o.n_vocab);
    // 9 blocks of 8 tokens. The older request holds 3 (its 10-token prompt and the
    // kLookahead tokens sampled past the one its caller holds); the younger one needs 7
    // for its 12 + 40 tokens, and only 6 are left.
    auto engine = small_engine(model, 9, 512, 8);
    Session older(engine, 0), younger(engine, 0);
    const auto p_old = prompt_of(20, 10, n_vocab), p_young = prompt_of(21, 12, n_vocab);
    Latch go;
    GenerateResult r_old;
    std::thread t([&] {
        auto opts = greedy(40);
        bool first = true;
        opts.on_token = [&](int32_t, std::string_view) {
            if (!first) return true;
            first = false;
            return go.wait();
        };
        r_old = older.generate(p_old, opts);
    });
    wait_for_state([&] { return engine->metrics().tokens_generated >= 1 + Session::kLookahead; },
                   "the older request paused by its lookahead");
    CHECK(engine->metrics().tokens_generated == 1 + Session::kLookahead);
    CHECK(engine->metrics().blocks_held == 3);
    GenerateResult r_young;
    // Runs until its 7th block, finds none (the older one is running, so nothing is taken
    // from it), preempts itself and waits; completes once the older one is done.
    std::thread ty([&] { r_young = younger.generate(p_young, greedy(40)); });
    wait_for_state(
        [&] {
            const auto m = engine->metrics();
            return m.preemptions > 0 || m.kv_full_failures > 0;
        },
        "the younger request preempted (or failed)");
    const auto m = engine->metrics();
    // Checks, not requirements, until the threads are joined.
    CHECK(m.kv_full_failures == 0);
    CHECK(m.preemptions == 1);
    CHECK(m.waiting == 1);
    CHECK(m.running == 1);
    CHECK(m.blocks_held == 3);  // the older request kept its blocks
    go.open();
    t.join();
    ty.join();
    REQUIRE(r_old.status == INLAY_OK);
    REQUIRE(r_old.tokens == reference_greedy(*model, p_old, 40));
    REQUIRE(r_young.status == INLAY_OK);
    REQUIRE(r_young.tokens == reference_greedy(*model, p_young, 40));
    // Once the older one resumes, the younger one finds its blocks again in the prefix
    // cache and may be readmitted and preempted (now by the older one) any number of
    // times, as the two callers' pace decides: only the first preemption is counted on.
    REQUIRE(engine->metrics().preemptions >= 1);
    REQUIRE(engine->metrics().kv_full_failures == 0);
}

TEST_CASE("a request that cannot fit alone fails with INLAY_ERR_KV_FULL", "[engine]") {
    TinyLlamaOptions o;
    const auto model = tiny_model(o, "kvfull");
    auto engine = small_engine(model, 4, 512, 8);  // 32 tokens in all
    Session s(engine, 0);
    const auto prompt = prompt_of(3, 10, static_cast<int32_t>(o.n_vocab));
    auto r = s.generate(prompt, greedy(40));
    REQUIRE(r.status == INLAY_ERR_KV_FULL);
    REQUIRE_THAT(r.error, Catch::Contains("KV cache is full"));
    // Everything up to the pool's 32 positions was computed; the token sampled from the
    // last of them is returned too.
    REQUIRE(r.tokens.size() == 32 - prompt.size() + 1);
    REQUIRE(r.tokens == reference_greedy(*model, prompt, static_cast<int>(r.tokens.size())));
    REQUIRE(engine->metrics().kv_full_failures == 1);
    // The session is still usable after a reset.
    s.reset();
    r = s.generate(prompt, greedy(5));
    REQUIRE(r.status == INLAY_OK);
    // A prompt longer than the whole pool fails without output.
    Session big(engine, 0);
    const auto long_prompt = prompt_of(4, 40, static_cast<int32_t>(o.n_vocab));
    r = big.generate(long_prompt, greedy(1));
    REQUIRE(r.status == INLAY_ERR_KV_FULL);
    REQUIRE(r.tokens.empty());
}

TEST_CASE("cancel, reset and truncate", "[engine]") {
    TinyLlamaOptions o;
    o.context = 1024;
    const auto model = tiny_model(o, "cancel");
    auto engine = small_engine(model, 256, 512, 16);
    const auto n_vocab = static_cast<int32_t>(o.n_vocab);
    Session s(engine, 0);
    const auto prompt = prompt_of(5, 12, n_vocab);

    // Cancel from another thread while generating: at the 5th token the callback hands
    // over to the canceller and waits until the cancel has been made, so the call holds
    // exactly the 5 tokens its caller saw, whatever the threads' speeds.
    std::atomic<int> seen{0};
    Latch at_fifth, cancelled;
    auto opts = greedy(500);
    opts.on_token = [&](int32_t, std::string_view) {
        if (seen.fetch_add(1) + 1 == 5) {
            at_fifth.open();
            CHECK(cancelled.wait());
        }
        return true;
    };
    std::thread canceller([&] {
        if (at_fifth.wait()) s.cancel();
        cancelled.open();
    });
    const auto r = s.generate(prompt, opts);
    canceller.join();
    REQUIRE(r.stop_reason == StopReason::cancelled);
    REQUIRE(r.tokens.size() == 5);
    REQUIRE(seen.load() == 5);
    // History holds exactly what the caller saw; continuing gives the uncancelled result.
    REQUIRE(s.history().size() == prompt.size() + r.tokens.size());
    const auto more = s.generate({}, greedy(4));
    const auto want = reference_greedy(*model, prompt, static_cast<int>(r.tokens.size()) + 4);
    std::vector<int32_t> got = r.tokens;
    got.insert(got.end(), more.tokens.begin(), more.tokens.end());
    REQUIRE(got == want);

    // Truncate keeps a prefix (and its KV); generation continues from there.
    s.truncate(static_cast<int64_t>(prompt.size()) + 3);
    REQUIRE(s.history().size() == prompt.size() + 3);
    REQUIRE(s.n_cached() <= static_cast<int64_t>(prompt.size()) + 3);
    const auto after_trunc = s.generate({}, greedy(3));
    REQUIRE(std::vector<int32_t>(want.begin() + 3, want.begin() + 6) == after_trunc.tokens);

    s.reset();
    REQUIRE(s.history().empty());
    REQUIRE(s.n_cached() == 0);
    REQUIRE_THROWS_AS(s.truncate(1), Error);
    REQUIRE(engine->metrics().blocks_held == 0);
}

TEST_CASE("a stop requested by the callback truncates what the engine ran ahead", "[engine]") {
    TinyLlamaOptions o;
    const auto model = tiny_model(o, "callback-stop");
    auto engine = small_engine(model, 64);
    Session s(engine, 0);
    const auto prompt = prompt_of(6, 9, static_cast<int32_t>(o.n_vocab));
    auto opts = greedy(50);
    int count = 0;
    const auto caller = std::this_thread::get_id();
    bool other_thread = false;
    opts.on_token = [&](int32_t, std::string_view) {
        other_thread = other_thread || std::this_thread::get_id() != caller;
        if (++count < 3) return true;
        // Let the scheduler run ahead as far as it may: kLookahead past the 3 taken.
        wait_for_state([&] { return engine->metrics().tokens_generated >= 3 + Session::kLookahead; },
                       "the engine sampling kLookahead tokens ahead of the caller");
        return false;
    };
    const auto r = s.generate(prompt, opts);
    REQUIRE_FALSE(other_thread);  // callbacks run on the calling thread
    REQUIRE(r.stop_reason == StopReason::callback);
    REQUIRE(r.tokens.size() == 3);
    REQUIRE(engine->metrics().tokens_generated == 3 + Session::kLookahead);  // sampled, then dropped
    REQUIRE(s.history().size() == prompt.size() + 3);
    const auto next = s.generate({}, greedy(2));
    const auto want = reference_greedy(*model, prompt, 5);
    REQUIRE(next.tokens == std::vector<int32_t>(want.begin() + 3, want.end()));
}

TEST_CASE("a slow callback does not stall other sessions", "[engine]") {
    TinyLlamaOptions o;
    const auto model = tiny_model(o, "slow");
    auto engine = small_engine(model, 128);
    Session slow(engine, 0), fast(engine, 0);
    const auto n_vocab = static_cast<int32_t>(o.n_vocab);
    // The slow caller sits in its first callback until the fast session has finished all
    // its tokens: if the engine waited for a busy caller, the fast one could never finish
    // (the latch gives up after minutes and the checks below fail).
    Latch fast_done;
    bool fast_finished_first = false;
    std::atomic<bool> slow_in_callback{false};
    GenerateResult slow_result;
    std::thread t([&] {
        auto opts = greedy(40);
        int count = 0;
        opts.on_token = [&](int32_t, std::string_view) {
            if (++count == 1) {
                slow_in_callback.store(true);
                fast_finished_first = fast_done.wait();
            }
            return true;
        };
        slow_result = slow.generate(prompt_of(1, 5, n_vocab), opts);
    });
    wait_for_state([&] { return slow_in_callback.load(); }, "the slow caller in its callback");
    const auto r = fast.generate(prompt_of(2, 5, n_vocab), greedy(60));
    // The slow request was sampled kLookahead past the token its caller holds, then paused.
    const int64_t generated = engine->metrics().tokens_generated;
    fast_done.open();
    t.join();
    REQUIRE(fast_finished_first);
    REQUIRE(r.tokens.size() == 60);
    REQUIRE(generated == 60 + 1 + Session::kLookahead);
    REQUIRE(slow_result.tokens.size() == 40);
    REQUIRE(slow_result.tokens == reference_greedy(*model, prompt_of(1, 5, n_vocab), 40));
}

TEST_CASE("teacher-forced logits through the engine equal Executor::eval", "[engine]") {
    TinyLlamaOptions o;
    const auto model = tiny_model(o, "logits");
    auto engine = small_engine(model, 64, 8);  // chunks of 8: rows come from several steps
    Session s(engine, 0);
    const auto tokens = prompt_of(7, 30, static_cast<int32_t>(o.n_vocab));
    const auto got = s.eval_logits(tokens);
    const Executor& ex = model->executor();
    auto seq = ex.new_sequence(64);
    std::vector<int32_t> rows(tokens.size());
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int32_t>(i);
    std::vector<float> want(tokens.size() * static_cast<size_t>(o.n_vocab));
    ex.eval(*seq, tokens, rows, want.data(), {});
    // Bitwise on a batch-invariant backend; else within its stated tolerance (the engine's
    // chunks of 8 and eval's one pass of 30 tokens take different matmul paths there).
    const BackendContract contract = ex.contract();
    REQUIRE(got.size() == want.size());
    INFO("largest |difference| " << max_abs_difference(got, want) << " (backend " << model->device() << ")");
    REQUIRE(within_contract(got, want, contract));
    // A second call continues the same conversation.
    const std::vector<int32_t> more{9, 10};
    const auto got2 = s.eval_logits(more);
    std::vector<float> want2(2 * static_cast<size_t>(o.n_vocab));
    const std::vector<int32_t> rows2{0, 1};
    ex.eval(*seq, more, rows2, want2.data(), {});
    REQUIRE(within_contract(got2, want2, contract));
}

TEST_CASE("seeded sampling gives the same tokens alone and batched", "[engine]") {
    TinyLlamaOptions o;
    const auto model = tiny_model(o, "seeded");
    const auto n_vocab = static_cast<int32_t>(o.n_vocab);
    auto opts_for = [](uint64_t seed) {
        GenerateOptions g;
        g.max_tokens = 30;
        g.ignore_eos = true;
        g.sampling.temperature = 1.0f;
        g.sampling.repeat_penalty = 1.1f;
        g.sampling.seed = seed;
        return g;
    };
    std::vector<std::vector<int32_t>> alone;
    {
        auto engine = small_engine(model, 256);
        for (int i = 0; i < 8; ++i) {
            Session s(engine, 0);
            alone.push_back(s.generate(prompt_of(i, 6, n_vocab), opts_for(100 + static_cast<uint64_t>(i))).tokens);
        }
    }
    auto engine = small_engine(model, 256);
    std::vector<std::vector<int32_t>> together(8);
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i)
        threads.emplace_back([&, i] {
            Session s(engine, 0);
            together[static_cast<size_t>(i)] = s.generate(prompt_of(i, 6, n_vocab), opts_for(100 + static_cast<uint64_t>(i))).tokens;
        });
    for (auto& t : threads) t.join();
    REQUIRE(together == alone);
}

TEST_CASE("plain greedy steps bring back ids, not logits; so do chains the device samples", "[engine]") {
    TinyLlamaOptions o;
    const auto model = tiny_model(o, "argmax-steps");
    const auto n_vocab = static_cast<int32_t>(o.n_vocab);
    const auto prompt = prompt_of(3, 7, n_vocab);
    {
        auto engine = small_engine(model, 256);
        Session s(engine, 0);
        const auto got = s.generate(prompt, greedy(20)).tokens;
        REQUIRE(greedy_within_contract(*model, prompt, got));  // equal to reference_greedy where batch invariant
        const EngineMetrics m = engine->metrics();
        INFO(m.argmax_steps << " of " << m.steps << " steps");
        REQUIRE(m.argmax_steps == m.steps);  // the prompt's step and every decode step
        REQUIRE(m.sampled_steps == 0);
    }
    enum class Chain { penalty, temperature, top_k_off };
    for (const Chain chain : {Chain::penalty, Chain::temperature, Chain::top_k_off}) {
        auto engine = small_engine(model, 256);
        Session s(engine, 0);
        GenerateOptions g = greedy(20);
        if (chain == Chain::penalty) g.sampling.repeat_penalty = 1.3f;  // greedy, but after the penalties
        else g.sampling.temperature = 0.7f;                            // top_k 40 by default
        if (chain == Chain::top_k_off) g.sampling.top_k = 0;             // the whole vocabulary: the host's
        (void)s.generate(prompt, g);
        const EngineMetrics m = engine->metrics();
        INFO("chain " << static_cast<int>(chain) << ": " << m.sampled_steps << " of " << m.steps << " steps");
        REQUIRE(m.steps > 0);
        REQUIRE(m.argmax_steps == 0);
        REQUIRE(m.sampled_steps == (chain == Chain::top_k_off ? 0 : m.steps));
    }
}

TEST_CASE("sampling on the device gives the host sampler's tokens", "[engine][sampling]") {
    // Eight sessions at once with mixed chains (penalties, top_k/top_p/min_p, greedy
    // after penalties), seeded: the tokens with sample_on_device must be those of the
    // host's sampling of the same logits, step by step (the CPU backend: bitwise).
    TinyLlamaOptions o;
    const auto model = tiny_model(o, "device-sampling");
    const auto n_vocab = static_cast<int32_t>(o.n_vocab);
    auto opts_for = [](int i) {
        GenerateOptions g;
        g.max_tokens = 24;
        g.ignore_eos = true;
        g.sampling.seed = 500 + static_cast<uint64_t>(i);
        g.sampling.temperature = i % 4 == 3 ? 0.0f : 0.6f + 0.2f * static_cast<float>(i % 3);
        g.sampling.top_k = 5 + 11 * i;
        g.sampling.top_p = i % 2 == 0 ? 0.9f : 1.0f;
        g.sampling.min_p = i % 3 == 0 ? 0.0f : 0.05f;
        g.sampling.repeat_penalty = i % 2 == 1 ? 1.2f : 1.0f;
        g.sampling.frequency_penalty = i % 3 == 1 ? 0.2f : 0.0f;
        return g;
    };
    auto run = [&](bool on_device) {
        EngineOptions eo;
        eo.sample_on_device = on_device;
        auto engine = engine_with(model, 256, eo);
        std::vector<std::vector<int32_t>> out(8);
        std::vector<std::thread> threads;
        for (int i = 0; i < 8; ++i)
            threads.emplace_back([&, i] {
                Session s(engine, 0);
                out[static_cast<size_t>(i)] = s.generate(prompt_of(i, 5 + i, n_vocab), opts_for(i)).tokens;
            });
        for (auto& t : threads) t.join();
        return std::make_pair(out, engine->metrics());
    };
    const auto [host, host_metrics] = run(false);
    const auto [device, device_metrics] = run(true);
    REQUIRE(host_metrics.sampled_steps == 0);
    INFO(device_metrics.sampled_steps << " of " << device_metrics.steps << " steps sampled on the device");
    REQUIRE(device_metrics.sampled_steps == device_metrics.steps);
    if (model->executor().contract().batch_invariant) {
        for (size_t i = 0; i < host.size(); ++i) {
            INFO("session " << i);
            REQUIRE(host[i].size() == 24);
            REQUIRE(device[i] == host[i]);
        }
    }
}

TEST_CASE("pipelined steps give the tokens and stops of plain steps", "[engine][pipeline]") {
    // Seeded sampling at a high temperature draws the end of generation now and then:
    // those sessions stop while the step after it is already queued (computed for
    // nothing); others stop at max_tokens, and greedy sessions decode beside them.
    TinyLlamaOptions o;
    const auto model = tiny_model(o, "pipeline");
    const auto n_vocab = static_cast<int32_t>(o.n_vocab);
    std::vector<std::vector<int32_t>> prompts;
    for (int i = 0; i < 8; ++i) prompts.push_back(prompt_of(i, 4 + i, n_vocab));
    auto opts_for = [](int i) {
        GenerateOptions g;
        g.max_tokens = i % 4 == 3 ? 30 + i : 200;
        g.sampling.temperature = i % 4 == 0 ? 0.0f : 1.5f;
        g.sampling.top_k = 64;
        g.sampling.seed = 900 + static_cast<uint64_t>(i);
        return g;
    };
    auto run = [&](EngineOptions::Pipelining mode) {
        EngineOptions eo;
        eo.pipelining = mode;
        auto engine = engine_with(model, 512, eo);
        std::vector<GenerateResult> out(8);
        std::vector<std::thread> threads;
        for (int i = 0; i < 8; ++i)
            threads.emplace_back([&, i] {
                Session s(engine, 0);
                out[static_cast<size_t>(i)] = s.generate(prompts[static_cast<size_t>(i)], opts_for(i));
            });
        for (auto& t : threads) t.join();
        // Every block comes back: a step queued for a request that stopped keeps the block
        // it writes only until that step is done.
        wait_for_state([&] { return engine->metrics().blocks_held == 0; }, "every KV block released");
        return std::make_pair(out, engine->metrics());
    };
    const auto [plain, plain_metrics] = run(EngineOptions::Pipelining::never);
    const auto [piped, piped_metrics] = run(EngineOptions::Pipelining::always);
    REQUIRE(plain_metrics.pipelined_steps == 0);
    INFO(piped_metrics.pipelined_steps << " of " << piped_metrics.steps << " steps pipelined");
    // Most steps on a quiet machine (201 of 208 here); a caller slowed by a loaded machine
    // pauses its sequence, which sits steps out or drains the pipeline, so only "some" is
    // required.
    REQUIRE(piped_metrics.pipelined_steps > 0);
    int eog = 0;
    for (size_t i = 0; i < plain.size(); ++i) {
        INFO("session " << i);
        REQUIRE(piped[i].status == INLAY_OK);
        REQUIRE(piped[i].stop_reason == plain[i].stop_reason);
        if (model->executor().contract().batch_invariant) REQUIRE(piped[i].tokens == plain[i].tokens);
        if (plain[i].stop_reason == StopReason::end_of_generation) ++eog;
    }
    REQUIRE(eog >= 2);  // the case the pipeline must undo happened
}

TEST_CASE("penalties, speculation and teacher forcing keep plain steps", "[engine][pipeline]") {
    TinyLlamaOptions o;
    const auto model = tiny_model(o, "pipeline-plain");
    const auto n_vocab = static_cast<int32_t>(o.n_vocab);
    EngineOptions eo;
    eo.pipelining = EngineOptions::Pipelining::always;
    auto engine = engine_with(model, 256, eo);
    Session s(engine, 0);
    GenerateOptions g = greedy(12);
    g.sampling.repeat_penalty = 1.3f;  // the next row's penalties need the token before it
    (void)s.generate(prompt_of(1, 6, n_vocab), g);
    (void)s.eval_logits(prompt_of(2, 5, n_vocab));
    REQUIRE(engine->metrics().pipelined_steps == 0);
    (void)s.generate(prompt_of(3, 6, n_vocab), greedy(12));  // plain greedy: pipelined
    REQUIRE(engine->metrics().pipelined_steps > 0);
}
