#include "io/weight_source.h"

#include "core/error.h"

namespace inlay {

void WeightSource::build_index() {
    index_.clear();
    const auto& all = tensors();
    for (size_t i = 0; i < all.size(); ++i) index_.emplace(all[i].name, i);
}

const TensorView* WeightSource::find(std::string_view name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors()[it->second];
}

const TensorView& WeightSource::require(std::string_view name) const {
    const TensorView* t = find(name);
    if (!t) fail(INLAY_ERR_MISSING, "tensor '{}' is missing from '{}'", name, origin());
    return *t;
}

}  // namespace inlay
