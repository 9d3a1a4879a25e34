// A tiny random Llama (make_tiny_llama_gguf) read back as a GGUF file, with the decoder
// spec its metadata gives: what a test needs to build a Decoder on any backend.
#pragma once

#include <memory>

#include "io/gguf_reader.h"
#include "model/decoder_spec.h"
#include "model/families/family.h"
#include "support/gguf_fixtures.h"

namespace inlay::test {

struct TinyDecoderSource {
    std::unique_ptr<GgufFile> file;
    DecoderSpec spec;
};

inline TinyDecoderSource tiny_decoder_source(const TinyLlamaOptions& options) {
    TinyDecoderSource t;
    t.file = GgufFile::from_bytes(make_tiny_llama_gguf(options), "tiny");
    t.spec = spec_from_gguf_metadata(t.file->metadata());
    t.spec.n_vocab = options.n_vocab;
    return t;
}

}  // namespace inlay::test
