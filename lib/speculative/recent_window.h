// RecentWindow<T, N>: the last N values added, the oldest overwritten first. The
// speculation policy's memory of its recent steps and the step cost model's of each pass
// size's recent times.
#pragma once

#include <array>
#include <cstddef>

namespace inlay {

template <class T, int N>
class RecentWindow {
    static_assert(N > 0);

public:
    void add(const T& value) {
        values_[next_] = value;
        next_ = (next_ + 1) % static_cast<size_t>(N);
        if (count_ < N) ++count_;
    }
    [[nodiscard]] int size() const { return count_; }
    // The values held (i < size()), in no particular order.
    [[nodiscard]] const T& operator[](int i) const { return values_[static_cast<size_t>(i)]; }
    void clear() {
        count_ = 0;
        next_ = 0;
    }

private:
    std::array<T, static_cast<size_t>(N)> values_{};
    int count_ = 0;
    size_t next_ = 0;
};

}  // namespace inlay
