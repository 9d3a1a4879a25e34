// Shared helpers of the runtime tests: models (tiny fixtures written to scratch files, or
// testdata files), engines with small pools, and an engine-independent greedy reference
// that runs the model through Executor::eval (a private KV cache, one sequence).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "model/model.h"
#include "runtime/engine.h"
#include "runtime/kv_pool_set.h"
#include "runtime/session.h"
#include "core/argmax.h"
#include "support/gguf_fixtures.h"
#include "support/test_paths.h"

namespace inlay::test {

inline std::shared_ptr<const Model> load_model_file(const std::filesystem::path& path, int n_threads = 2,
                                                    int64_t context = 0) {
    ModelOptions o;
    o.n_threads = n_threads;
    o.context_length = context;
    return std::shared_ptr<const Model>(Model::load(path.string(), o));
}

// A tiny random Llama written to a scratch file and loaded.
inline std::shared_ptr<const Model> tiny_model(const TinyLlamaOptions& options, const std::string& name,
                                               int n_threads = 2) {
    const auto dir = scratch_dir("runtime-models-" + name);
    const auto path = dir / (name + ".gguf");
    const auto bytes = make_tiny_llama_gguf(options);
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                static_cast<std::streamsize>(bytes.size()));
    return load_model_file(path, n_threads);
}

// An engine with `options` over a private pool of `blocks` blocks of block_size tokens.
inline std::shared_ptr<Engine> engine_with(const std::shared_ptr<const Model>& model, int64_t blocks,
                                           const EngineOptions& options, int64_t block_size = 16) {
    KvPoolOptions po;
    po.budget_blocks = blocks;
    po.block_size = block_size;
    return std::make_shared<Engine>(model, make_kv_pool(model->executor(), po), options);
}

inline std::shared_ptr<Engine> small_engine(const std::shared_ptr<const Model>& model, int64_t blocks,
                                            int64_t step_tokens = 512, int64_t block_size = 16) {
    EngineOptions eo;
    eo.step_tokens = step_tokens;
    return engine_with(model, blocks, eo, block_size);
}

// Greedy continuation of `prompt` computed without the engine: Executor::eval on a
// private sequence, argmax of each row. Stops after n tokens (EOG ignored).
inline std::vector<int32_t> reference_greedy(const Model& model, const std::vector<int32_t>& prompt, int n) {
    const Executor& ex = model.executor();
    auto seq = ex.new_sequence(static_cast<int64_t>(prompt.size()) + n + 1);
    std::vector<float> logits(static_cast<size_t>(model.spec().n_vocab));
    const int32_t last = static_cast<int32_t>(prompt.size() - 1);
    ex.eval(*seq, prompt, std::span<const int32_t>(&last, 1), logits.data(), {});
    std::vector<int32_t> out;
    for (int i = 0; i < n; ++i) {
        const int32_t t = argmax(logits);
        out.push_back(t);
        if (i + 1 == n) break;
        const int32_t row = 0;
        ex.eval(*seq, std::span<const int32_t>(&t, 1), std::span<const int32_t>(&row, 1), logits.data(), {});
    }
    return out;
}

// The largest |a[i] - b[i]| (for messages).
inline double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
    double worst = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i])));
    return worst;
}

// The scale a backend's tolerance is relative to: the largest |logit|, at least 1.
inline double logit_scale(std::span<const float> logits) {
    double scale = 1.0;
    for (const float v : logits) scale = std::max(scale, static_cast<double>(std::fabs(v)));
    return scale;
}

// max |a[i] - b[i]| relative to logit_scale(a), as within_contract measures.
inline double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
    return max_abs_difference(a, b) / logit_scale(a);
}

// Whether two logit vectors of one sequence (alone, and in some batch) agree as the
// backend promises: bitwise for a batch-invariant backend, else within its tolerance
// relative to the largest |logit|.
inline bool within_contract(const std::vector<float>& a, const std::vector<float>& b, const BackendContract& c) {
    if (a.size() != b.size()) return false;
    if (c.batch_invariant) return a == b;
    return max_abs_difference(a, b) <= c.batch_logit_tolerance * logit_scale(a);
}

// Greedy tokens `got` (from the engine, batched) continuing `prompt` are what the session
// alone gives, under the backend's contract: identical for a batch-invariant backend;
// otherwise, teacher-forced through Executor::eval, every token of `got` is the argmax
// alone or within the stated tolerance of it (a near tie may break either way, and the
// text goes on from whichever token was taken).
inline bool greedy_within_contract(const Model& model, const std::vector<int32_t>& prompt,
                                   const std::vector<int32_t>& got) {
    const Executor& ex = model.executor();
    const BackendContract c = ex.contract();
    if (c.batch_invariant) return got == reference_greedy(model, prompt, static_cast<int>(got.size()));
    auto seq = ex.new_sequence(static_cast<int64_t>(prompt.size() + got.size()) + 1);
    std::vector<float> logits(static_cast<size_t>(model.spec().n_vocab));
    const int32_t last = static_cast<int32_t>(prompt.size() - 1), row = 0;
    ex.eval(*seq, prompt, std::span<const int32_t>(&last, 1), logits.data(), {});
    for (const int32_t t : got) {
        const double scale = logit_scale(logits);
        const float best = logits[static_cast<size_t>(argmax(logits))];
        if (t < 0 || static_cast<size_t>(t) >= logits.size() ||
            best - logits[static_cast<size_t>(t)] > c.batch_logit_tolerance * scale)
            return false;
        ex.eval(*seq, std::span<const int32_t>(&t, 1), std::span<const int32_t>(&row, 1), logits.data(), {});
    }
    return true;
}

inline GenerateOptions greedy(int32_t max_tokens) {
    GenerateOptions o;
    o.sampling.temperature = 0.0f;
    o.max_tokens = max_tokens;
    o.ignore_eos = true;
    return o;
}

// Prompt i of a family of distinct prompts (valid ids of any vocabulary >= 259).
inline std::vector<int32_t> prompt_of(int i, int length, int32_t n_vocab, int32_t bos = 1) {
    std::vector<int32_t> p{bos};
    for (int k = 1; k < length; ++k) p.push_back(static_cast<int32_t>(3 + (i * 37 + k * 11 + k * k * (i % 5)) % (n_vocab - 3)));
    return p;
}

// Waits until `ready()` holds: a state the test brings about, never a duration. The limit
// only turns a deadlock into a failure naming what never happened (minutes: no loaded
// machine or sanitizer takes that long for these tiny models).
inline void wait_for_state(const std::function<bool()>& ready, const char* what) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(5);
    while (!ready()) {
        if (std::chrono::steady_clock::now() > give_up) FAIL("deadlock: never reached: " << what);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

// A latch a test opens once; callbacks block on it. wait() gives up (returning false)
// only after minutes, so that a deadlock fails the test instead of hanging it.
class Latch {
public:
    void open() {
        {
            std::lock_guard lock(mutex_);
            open_ = true;
        }
        cv_.notify_all();
    }
    bool wait() {
        std::unique_lock lock(mutex_);
        return cv_.wait_for(lock, std::chrono::minutes(5), [&] { return open_; });
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool open_ = false;
};

// Holds an engine's admission closed so that requests submitted from many threads, at
// whatever moments the threads get to run, all enter the batch in one scheduler pass.
// Closed: a holder call generates on its own thread and blocks in its first on_token
// callback, so the engine samples it Session::kLookahead tokens ahead and pauses it;
// then the engine's block cap is set to exactly the blocks the holder has, and every new
// request waits for memory (the holder is running, so they wait rather than fail).
// open() lifts the cap; release() ends the holder's call (its callback returns false).
// Build it on an engine with no other activity.
class AdmissionGate {
public:
    explicit AdmissionGate(const std::shared_ptr<Engine>& engine) : engine_(engine) {
        const int64_t base = engine_->metrics().tokens_generated;
        holder_ = std::make_unique<Session>(engine_, 0);
        thread_ = std::thread([this] {
            auto opts = greedy(1000);
            opts.on_token = [this](int32_t, std::string_view) {
                release_.wait();
                return false;
            };
            (void)holder_->generate(prompt_of(977, 5, static_cast<int32_t>(engine_->model().spec().n_vocab)), opts);
        });
        wait_for_state([&] { return engine_->metrics().tokens_generated - base >= Session::kLookahead + 1; },
                       "the holder paused by its lookahead");
        REQUIRE(engine_->metrics().tokens_generated - base == Session::kLookahead + 1);
        engine_->set_block_cap(engine_->metrics().blocks_held);
    }
    ~AdmissionGate() {
        open();
        release();
        if (thread_.joinable()) thread_.join();
    }
    AdmissionGate(const AdmissionGate&) = delete;
    AdmissionGate& operator=(const AdmissionGate&) = delete;

    // Waits until `n` requests wait for admission.
    void wait_queued(int64_t n) {
        wait_for_state([&] { return engine_->metrics().waiting == n; }, "every request queued at the gate");
    }
    void open() {
        if (opened_) return;
        opened_ = true;
        engine_->set_block_cap(0);
    }
    // Ends the holder's call (after open(): its next token would need a step).
    void release() { release_.open(); }

private:
    std::shared_ptr<Engine> engine_;
    std::unique_ptr<Session> holder_;
    std::thread thread_;
    Latch release_;
    bool opened_ = false;
};

}  // namespace inlay::test
