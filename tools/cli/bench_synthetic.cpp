// inlay bench --synthetic: see bench_synthetic.h. Drives the Executor directly (no
// tokenizer, no engine), so what is timed is the forward passes and what comes back to
// the host, as the engine's steps do them: the logits of a prompt's last token, and the
// argmax ids of greedy decode steps.
#include "bench_synthetic.h"

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <numeric>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app.h"
#include "args.h"
#include "bench_roofline.h"
#include "bench_stats.h"
#include "device_option.h"
#include "core/error.h"
#include "model/make_executor.h"
#include "model/synthetic_weights.h"

namespace inlay::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

DType parse_matrix_type(const std::string& name) {
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q5_K,
                    DType::Q6_K, DType::Q1_0}) {
        std::string n(dtype_name(t));
        std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (n == name) return t;
    }
    throw UsageError("--dtype must be f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, q6_k or q1_0, not '" + name + "'");
}

// Sequences with consecutive private blocks in one store.
struct Fleet {
    std::vector<std::vector<int32_t>> tables;
};

Fleet make_fleet(int64_t n_seqs, int64_t tokens_each, int64_t block_size) {
    Fleet f;
    const int64_t per = (tokens_each + block_size - 1) / block_size;
    for (int64_t s = 0; s < n_seqs; ++s) {
        std::vector<int32_t> t(static_cast<size_t>(per));
        std::iota(t.begin(), t.end(), static_cast<int32_t>(s * per));
        f.tables.push_back(std::move(t));
    }
    return f;
}

int run(const SyntheticBench& b) {
    const auto spec = synthetic_spec(b.shape);
    if (!spec) {
        std::string names;
        for (const auto& n : synthetic_shape_names()) names += (names.empty() ? "" : ", ") + n;
        throw UsageError("--synthetic must name a shape (" + names + "), not '" + b.shape + "'");
    }
    const DType type = parse_matrix_type(b.dtype);
    DeviceRequest request = device_option(b.device);
    request.n_threads = b.n_threads;

    const auto t_load = Clock::now();
    const SyntheticWeights weights(*spec, type, 1);
    const auto executor = make_executor(request, *spec, weights);
    const double load_s = seconds_since(t_load);
    const Executor& ex = *executor;

    constexpr int64_t kBlock = 16, kChunk = 512;
    const int64_t n_batch = std::max<int32_t>(b.batch, 1);
    const int64_t decode_len = b.n_gen + 1;
    const int64_t seq_tokens = std::max<int64_t>(b.n_prompt, decode_len);
    const int64_t n_seqs = std::max<int64_t>(n_batch, 1);
    const Fleet fleet = make_fleet(n_seqs, seq_tokens, kBlock);
    const KvGeometry geometry = ex.kv_geometry(kBlock, DType::F16);
    const auto store = ex.new_kv_store(geometry, static_cast<int64_t>(fleet.tables.size() * fleet.tables[0].size()));
    const int64_t ws_tokens = std::max(kChunk, n_batch);
    const auto ws = ex.new_workspace(ws_tokens, std::max<int64_t>(n_batch, 1));
    std::vector<float> logits(static_cast<size_t>(spec->n_vocab));  // pp's one logit row
    BatchBuilder batch;
    auto token_of = [&](int64_t i) { return static_cast<int32_t>((i * 7919 + 13) % spec->n_vocab); };

    // pp: one sequence's prompt in chunks of kChunk, logits of the last token.
    std::vector<double> pp;
    for (int32_t r = 0; r <= b.repetitions && b.n_prompt > 0; ++r) {
        const auto t0 = Clock::now();
        for (int64_t start = 0; start < b.n_prompt; start += kChunk) {
            const int64_t n = std::min<int64_t>(kChunk, b.n_prompt - start);
            batch.clear();
            const int32_t s = batch.add_sequence(fleet.tables[0], start + n);
            for (int64_t i = 0; i < n; ++i)
                batch.add_token(token_of(start + i + r), static_cast<int32_t>(start + i), s, start + i + 1 == b.n_prompt);
            ex.step(*store, *ws, batch.desc(), logits.data());
        }
        if (r > 0) pp.push_back(static_cast<double>(b.n_prompt) / seconds_since(t0));  // run 0 warms up
    }
    // tg: n_batch sequences decoding one token each per step from position 0. Each step
    // returns its rows' argmax, as the engine's greedy decoding does (only ids leave the
    // device); the tokens fed are the synthetic sequence's, whatever the ids.
    std::vector<int32_t> ids(static_cast<size_t>(std::max<int64_t>(n_batch, 1)));
    auto decode = [&](int64_t n_active) {
        const auto t0 = Clock::now();
        for (int64_t pos = 0; pos < decode_len; ++pos) {
            batch.clear();
            for (int64_t s = 0; s < n_active; ++s) {
                const int32_t id = batch.add_sequence(fleet.tables[static_cast<size_t>(s)], pos + 1);
                batch.add_token(token_of(pos + s), static_cast<int32_t>(pos), id, true);
            }
            ex.step_argmax(*store, *ws, batch.desc(), ids.data());
        }
        return static_cast<double>(n_active * decode_len) / seconds_since(t0);
    };
    std::vector<double> tg1, tgb;
    for (int32_t r = 0; r <= b.repetitions && b.n_gen > 0; ++r) {
        const double rate = decode(1);
        if (r > 0) tg1.push_back(rate);
    }
    for (int32_t r = 0; r <= b.repetitions && b.n_gen > 0 && n_batch > 1; ++r) {
        const double rate = decode(n_batch);
        if (r > 0) tgb.push_back(rate);
    }
    // Bytes a batch-1 decode step reads (bench_roofline.h), over decode_len steps from
    // position 0.
    const double bytes_per_token = decode_bytes_per_token(decode_weight_bytes(weights.tensors()),
                                                          kv_bytes_per_position(geometry), 0, decode_len);
    const double tg1_rate = median(tg1);
    const double bandwidth = tg1_rate * bytes_per_token;
    const DeviceMemory mem = ex.memory_info();

    if (b.json) {
        const nlohmann::ordered_json out = {
            {"shape", b.shape},
            {"dtype", b.dtype},
            {"device", ex.kv_device()},
            {"weights_bytes", weights.file_bytes()},
            {"load_s", load_s},
            {"n_prompt", b.n_prompt},
            {"n_gen", b.n_gen},
            {"batch", n_batch},
            {"repetitions", b.repetitions},
            {"prefill_tokens_per_s", median(pp)},
            {"decode_tokens_per_s", tg1_rate},
            {"decode_bytes_per_token", bytes_per_token},
            {"decode_bytes_per_s", bandwidth},
            {"batch_decode_tokens_per_s", median(tgb)},
            {"device_memory_total", mem.total_bytes},
            {"samples", {{"prefill_tokens_per_s", pp}, {"decode_tokens_per_s", tg1}, {"batch_decode_tokens_per_s", tgb}}},
        };
        write_stdout(out.dump() + "\n");
        return exit_ok;
    }
    std::string out = fmt::format("{} {} on {} ({:.2f} GB of weights, made and loaded in {:.1f} s)\n", b.shape, b.dtype,
                                  ex.kv_device(), static_cast<double>(weights.file_bytes()) / 1e9, load_s);
    if (b.n_prompt > 0) out += fmt::format("  pp{:<6} {:>10.1f} tokens/s\n", b.n_prompt, median(pp));
    if (b.n_gen > 0)
        out += fmt::format("  tg{:<6} {:>10.1f} tokens/s  ({:.2f} GB read per token: {:.1f} GB/s)\n", b.n_gen, tg1_rate,
                           bytes_per_token / 1e9, bandwidth / 1e9);
    if (!tgb.empty()) out += fmt::format("  tg{}x{:<3} {:>9.1f} tokens/s aggregate\n", b.n_gen, n_batch, median(tgb));
    out += fmt::format("  medians of {} runs after one warm-up\n", b.repetitions);
    write_stdout(out);
    return exit_ok;
}

}  // namespace

int run_synthetic_bench(const SyntheticBench& b) {
    try {
        return run(b);
    } catch (const Error& e) {
        // This command calls the library's internals, whose errors carry their status here
        // (the C ABI would have put its name in front of the message).
        std::fflush(stdout);
        fmt::print(stderr, "inlay: error: {}: {}\n", inlay_status_name(e.status()), e.what());
        return exit_error;
    }
}

}  // namespace inlay::cli
