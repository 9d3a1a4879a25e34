// WeightSource: what every model file format provides to the model builder: the
// metadata and the tensors as zero-copy views. GGUF files implement it today;
// safetensors folders will too.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/tensor_view.h"
#include "io/metadata.h"

namespace inlay {

class WeightSource {
public:
    virtual ~WeightSource() = default;

    [[nodiscard]] virtual const Metadata& metadata() const = 0;
    // All tensors, in file order. Views stay valid as long as the source lives.
    [[nodiscard]] virtual const std::vector<TensorView>& tensors() const = 0;
    // Where the weights come from (a path), for messages.
    [[nodiscard]] virtual const std::string& origin() const = 0;
    // Total bytes of the underlying file(s).
    [[nodiscard]] virtual uint64_t file_bytes() const = 0;

    // nullptr if absent.
    [[nodiscard]] const TensorView* find(std::string_view name) const;
    // Throws INLAY_ERR_MISSING naming the tensor and the origin.
    [[nodiscard]] const TensorView& require(std::string_view name) const;

protected:
    // Implementations call this once their tensor list is final.
    void build_index();

private:
    std::unordered_map<std::string_view, size_t> index_;
};

}  // namespace inlay
