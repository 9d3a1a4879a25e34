// Pipelined decode at the decoder level, for any backend: step N+1 is launched (its
// tokens fed on the device from step N's ids) before step N's ids are read, two sequences
// at once, and the ids must be bitwise those of the same steps run one after the other
// with the host feeding each token. Used by tests/model (CPU) and tests/cuda_gpu (CUDA).
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "backend/common/batch.h"
#include "core/error.h"
#include "model/decoder.h"

namespace inlay::test {

// Each sequence's prompt (5 and 3 tokens) in one step, then n_steps steps of one token of
// each; returns every step's two ids. pipelined: each step after the prompt is launched
// with fed tokens before the step before's ids are read.
template <class B>
std::vector<std::vector<int32_t>> decode_two(const Decoder<B>& decoder, B& backend, bool pipelined, int n_steps) {
    auto ws = decoder.make_workspace(16, 16);
    auto kv = backend.alloc_kv(decoder.kv_geometry(16, DType::F16), 4);
    const std::vector<int32_t> table0{0, 1}, table1{2, 3};
    const int64_t n_vocab = decoder.spec().n_vocab;
    auto token = [&](int64_t i) { return static_cast<int32_t>(3 + (i * 37) % (n_vocab - 3)); };
    std::vector<std::vector<int32_t>> out;
    BatchBuilder b;
    const int32_t s0 = b.add_sequence(table0, 5), s1 = b.add_sequence(table1, 3);
    for (int p = 0; p < 5; ++p) b.add_token(token(p), p, s0, p == 4);
    for (int p = 0; p < 3; ++p) b.add_token(token(p + 10), p, s1, p == 2);
    std::vector<int32_t> ids(2, -7);
    if (pipelined) decoder.launch(b.desc(), kv, ws);
    else decoder.forward(b.desc(), kv, ws, nullptr, ids.data());
    int64_t len0 = 5, len1 = 3;
    for (int step = 0; step < n_steps; ++step) {
        b.clear();
        const int32_t a = b.add_sequence(table0, len0 + 1), c = b.add_sequence(table1, len1 + 1);
        if (pipelined) {
            b.add_fed_token(0, static_cast<int32_t>(len0), a, true);
            b.add_fed_token(1, static_cast<int32_t>(len1), c, true);
            decoder.launch(b.desc(), kv, ws);  // queued behind the step whose ids it takes
            // Two passes unread: a plain forward would read the wrong ones, so it is refused.
            if (step == 0)
                REQUIRE_THROWS_AS(decoder.forward(b.desc(), kv, ws, nullptr, ids.data()), Error);
            decoder.read_ids(ws, 2, ids.data());  // the step before's
        } else {
            b.add_token(ids[0], static_cast<int32_t>(len0), a, true);
            b.add_token(ids[1], static_cast<int32_t>(len1), c, true);
            out.push_back(ids);
            decoder.forward(b.desc(), kv, ws, nullptr, ids.data());
        }
        if (pipelined) out.push_back(ids);
        ++len0;
        ++len1;
    }
    if (pipelined) decoder.read_ids(ws, 2, ids.data());
    out.push_back(ids);
    return out;
}

template <class B>
void check_pipelined_decode(const Decoder<B>& decoder, B& backend) {
    const auto plain = decode_two(decoder, backend, false, 12);
    const auto piped = decode_two(decoder, backend, true, 12);
    REQUIRE(plain.size() == 13);
    REQUIRE(piped == plain);
}

}  // namespace inlay::test
