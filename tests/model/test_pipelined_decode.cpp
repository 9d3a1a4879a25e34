// Pipelined decode on the CPU backend (Decoder::launch, fed tokens, read_ids): the ids of
// steps launched before the step before's ids are read are bitwise those of the same
// steps run one after the other (support/pipelined_decode_check.h; tests/cuda_gpu runs
// the same check on the CUDA backend).
#include <catch2/catch.hpp>

#include "backend/cpu/cpu_backend.h"
#include "io/gguf_reader.h"
#include "model/decoder.h"
#include "model/families/family.h"
#include "support/tiny_decoder.h"
#include "support/pipelined_decode_check.h"

using namespace inlay;

TEST_CASE("pipelined decode gives the ids of plain decode (CPU)", "[decoder][pipeline]") {
    for (const DType type : {DType::F32, DType::Q8_0}) {
        INFO(dtype_name(type));
        test::TinyLlamaOptions o;
        o.weight_type = type;
        const auto tiny = test::tiny_decoder_source(o);
        CpuBackend backend(2);
        const Decoder<CpuBackend> decoder(backend, tiny.spec, *tiny.file);
        test::check_pipelined_decode(decoder, backend);
    }
}
