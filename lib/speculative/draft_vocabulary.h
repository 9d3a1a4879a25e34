// A draft model can only propose tokens the target understands the same way: the same
// ids for the same token strings, the same special tokens, and logit rows of one size.
#pragma once

#include "model/model.h"

namespace inlay {

// Throws INLAY_ERR_INVALID_ARGUMENT naming the first difference (vocabulary size, logit
// rows, BOS/EOS, the end-of-generation set, or the first id whose string or type differs,
// both strings quoted with invalid UTF-8 escaped).
void require_same_vocabulary(const Model& target, const Model& draft);

}  // namespace inlay
