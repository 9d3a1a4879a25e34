// Model families: how a file's metadata becomes a DecoderSpec and what its tensors are
// called. Only metadata and names live here; the forward pass is shared.
#pragma once

#include <string>

#include "io/metadata.h"
#include "model/decoder_spec.h"

namespace inlay {

// Reads general.architecture and the family's keys into a validated spec (n_vocab is
// taken from the vocabulary or token_embd by the caller). Throws INLAY_ERR_UNSUPPORTED
// for unknown architectures, INLAY_ERR_MISSING / INLAY_ERR_BAD_FORMAT naming the key.
DecoderSpec spec_from_gguf_metadata(const Metadata& metadata);

// GGUF tensor names.
std::string gguf_layer_tensor(int64_t layer, const char* suffix);  // "blk.N.<suffix>.weight"

}  // namespace inlay
