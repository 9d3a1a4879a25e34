// Batch invariance of one forward pass: a sequence's logits and the K/V it writes must be
// bit for bit the same whatever else shares the step (other sequences' decode tokens and
// prefill chunks, in any order and number). The engine's "N sessions == each alone"
// guarantee rests on this; a difference of one ulp is enough to flip a near-tie argmax.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "runtime_test_util.h"

using namespace inlay;
using namespace inlay::test;

namespace {

struct Probe {
    std::vector<float> logits;
    std::vector<std::byte> kv;  // the probed sequence's last block after the step
};

// Prefills `prompt` minus its last token into blocks [0..) of a fresh store (alone),
// then runs the last token at its position together with `extra` random tokens of other
// sequences (prefill chunks and decode tokens, interleaved at random), and returns the
// probed token's logits and its block.
Probe probe(const Executor& ex, const std::vector<int32_t>& prompt, int n_others, int extra_tokens, unsigned seed,
            int64_t block_size) {
    const int32_t n_vocab = static_cast<int32_t>(ex.spec().n_vocab);
    const auto store = ex.new_kv_store(ex.kv_geometry(block_size, DType::F16), 256);
    const auto ws = ex.new_workspace(256, 64);
    std::mt19937 rng(seed);
    const auto len = static_cast<int64_t>(prompt.size());
    const int64_t own_blocks = (len + block_size - 1) / block_size;
    std::vector<int32_t> table(static_cast<size_t>(own_blocks));
    for (int64_t b = 0; b < own_blocks; ++b) table[static_cast<size_t>(b)] = static_cast<int32_t>(b);
    std::vector<float> scratch(static_cast<size_t>(64 * n_vocab));
    if (len > 1) {
        BatchBuilder prefill;
        prefill.add_tokens(prefill.add_sequence(table, len - 1),
                           std::span<const int32_t>(prompt.data(), static_cast<size_t>(len - 1)), 0);
        ex.step(*store, *ws, prefill.desc(), scratch.data());
    }
    // Other sequences: each owns fresh blocks after ours and contributes a run of tokens
    // at positions 0.. (its prefill) whose attention covers only its own run.
    std::vector<std::vector<int32_t>> other_tables(static_cast<size_t>(n_others));
    std::vector<int64_t> other_len(static_cast<size_t>(n_others), 0);
    for (int k = 0; k < extra_tokens; ++k) ++other_len[rng() % static_cast<size_t>(std::max(1, n_others))];
    int32_t next_block = static_cast<int32_t>(own_blocks);
    for (int i = 0; i < n_others; ++i)
        for (int64_t b = 0; b < (other_len[static_cast<size_t>(i)] + block_size - 1) / block_size; ++b)
            other_tables[static_cast<size_t>(i)].push_back(next_block++);
    // Sequence slots: 0 = probed, 1.. = others; tokens in a shuffled sequence order.
    BatchBuilder batch;
    batch.add_sequence(table, len);
    for (int i = 0; i < n_others; ++i) batch.add_sequence(other_tables[static_cast<size_t>(i)], other_len[static_cast<size_t>(i)]);
    std::vector<int> order(static_cast<size_t>(n_others + 1));
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::shuffle(order.begin(), order.end(), rng);
    // Logit rows: the probed token and, at random, some of the others' tokens.
    int64_t probed_row = -1;
    for (const int s : order) {
        if (s == 0) {
            probed_row = batch.n_logit_rows();
            batch.add_token(prompt.back(), static_cast<int32_t>(len - 1), 0, true);
            continue;
        }
        for (int64_t p = 0; p < other_len[static_cast<size_t>(s - 1)]; ++p) {
            const auto token = static_cast<int32_t>(3 + rng() % static_cast<unsigned>(n_vocab - 3));
            batch.add_token(token, static_cast<int32_t>(p), s, batch.n_logit_rows() < 60 && rng() % 3 == 0);
        }
    }
    ex.step(*store, *ws, batch.desc(), scratch.data());
    const auto k = static_cast<size_t>(probed_row);
    Probe out;
    out.logits.assign(scratch.begin() + static_cast<ptrdiff_t>(k * static_cast<size_t>(n_vocab)),
                      scratch.begin() + static_cast<ptrdiff_t>((k + 1) * static_cast<size_t>(n_vocab)));
    out.kv.resize(store->block_bytes());
    ex.read_block(*store, table.back(), out.kv);
    return out;
}

}  // namespace

TEST_CASE("a sequence's logits and K/V do not depend on the rest of the batch", "[engine][invariance]") {
    for (const DType type : {DType::F32, DType::Q8_0, DType::F16}) {
        TinyLlamaOptions o;
        o.weight_type = type;
        const auto model = tiny_model(o, "invariance-" + std::string(dtype_name(type)), 2);
        const Executor& ex = model->executor();
        const BackendContract contract = ex.contract();
        const auto n_vocab = static_cast<int32_t>(model->spec().n_vocab);
        double worst = 0;
        for (int trial = 0; trial < 16; ++trial) {
            const auto prompt = prompt_of(trial % 6, 2 + (trial * 13) % 60, n_vocab);
            const Probe alone = probe(ex, prompt, 0, 0, 1, 8);
            for (const int extra : {1, 7, 16, 17, 63, 200}) {
                const Probe mixed = probe(ex, prompt, 1 + extra % 9, extra, static_cast<unsigned>(trial * 977 + extra), 8);
                INFO("weights " << dtype_name(type) << ", prompt of " << prompt.size() << ", " << extra
                                << " other tokens");
                if (contract.batch_invariant) {
                    REQUIRE(std::memcmp(alone.kv.data(), mixed.kv.data(), alone.kv.size()) == 0);
                    REQUIRE(std::memcmp(alone.logits.data(), mixed.logits.data(), alone.logits.size() * sizeof(float)) == 0);
                } else {
                    REQUIRE(within_contract(alone.logits, mixed.logits, contract));
                    worst = std::max(worst, relative_difference(alone.logits, mixed.logits));
                }
            }
        }
        if (!contract.batch_invariant)
            WARN(dtype_name(type) << " on " << model->device() << ": max |alone - batched| / max|logit| = " << worst
                                  << " (contract " << contract.batch_logit_tolerance << ")");
    }
}

TEST_CASE("step_argmax gives every logit row the argmax of step's logits", "[batching]") {
    for (const DType type : {DType::F32, DType::Q8_0}) {
        TinyLlamaOptions o;
        o.weight_type = type;
        const auto model = tiny_model(o, "argmax-" + std::string(dtype_name(type)), 2);
        const Executor& ex = model->executor();
        const auto n_vocab = static_cast<int32_t>(model->spec().n_vocab);
        const auto store = ex.new_kv_store(ex.kv_geometry(8, DType::F16), 64);
        const auto ws = ex.new_workspace(128, 64);
        // Three sequences of 5, 17 and 40 tokens, every token a logit row: prefill chunks
        // and, over a second step, one decode token each.
        BatchBuilder batch;
        std::vector<std::vector<int32_t>> prompts;
        int32_t next_block = 0;
        for (const int len : {5, 17, 40}) {
            prompts.push_back(prompt_of(len, len, n_vocab));
            std::vector<int32_t> table;
            for (int b = 0; b < (len + 1 + 7) / 8; ++b) table.push_back(next_block++);
            const int32_t s = batch.add_sequence(table, len);
            for (int i = 0; i < len; ++i) batch.add_token(prompts.back()[static_cast<size_t>(i)], i, s, true);
        }
        const auto rows = static_cast<size_t>(batch.n_logit_rows());
        std::vector<float> logits(rows * static_cast<size_t>(n_vocab));
        std::vector<int32_t> ids(rows, -7);
        // The same pass twice over the same slots: the K/V rewritten are the same.
        ex.step(*store, *ws, batch.desc(), logits.data());
        ex.step_argmax(*store, *ws, batch.desc(), ids.data());
        for (size_t r = 0; r < rows; ++r) {
            INFO(dtype_name(type) << " row " << r);
            const std::span<const float> row(logits.data() + r * static_cast<size_t>(n_vocab),
                                             static_cast<size_t>(n_vocab));
            REQUIRE(ids[r] == argmax(row));
        }
    }
}
