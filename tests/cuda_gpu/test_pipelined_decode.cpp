// Pipelined decode on the CUDA backend: step N+1 queued (its tokens fed by feed_tokens from
// step N's ids on the device) before step N's ids are read gives bitwise the ids of the
// same steps run one after the other, graphs on (fed and plain steps record apart).
// UNVERIFIED until run on a GPU (scripts/gpu-check.sh runs it in backend_cuda).
#include <catch2/catch.hpp>

#include "backend/cuda/cuda_backend.h"
#include "io/gguf_reader.h"
#include "model/decoder_impl.h"
#include "model/families/family.h"
#include "support/tiny_decoder.h"
#include "support/pipelined_decode_check.h"

using namespace inlay;

TEST_CASE("pipelined decode gives the ids of plain decode (CUDA)", "[cuda][pipeline]") {
    for (const bool graphs : {false, true}) {
        INFO((graphs ? "graphs" : "no graphs"));
        test::TinyLlamaOptions o;
        o.weight_type = DType::Q8_0;
        const auto tiny = test::tiny_decoder_source(o);
        CudaBackend backend(0, CudaBackend::Options{{}, graphs});
        const Decoder<CudaBackend> decoder(backend, tiny.spec, *tiny.file);
        test::check_pipelined_decode(decoder, backend);
    }
}
