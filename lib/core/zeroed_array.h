// ZeroedArray<T>: a fixed-size array of zero-initialised trivial elements whose memory
// becomes resident only where it is written.
//
// A std::vector<float>(n) writes its n zeros, so every page of it is resident at once
// even if a step never uses most of it (the engine's 128 logit rows of a 150k vocabulary
// are 78 MB; a one-token decode writes one row). Large arrays here are fresh anonymous
// mappings instead (zero pages the kernel supplies on first touch); small ones use calloc.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <type_traits>

namespace inlay {

namespace detail {
// n elements of elem_size zeroed bytes (nullptr for none); throws
// Error(INLAY_ERR_OUT_OF_MEMORY), also when the size overflows.
void* zeroed_allocate(size_t n, size_t elem_size);
void zeroed_free(void* p, size_t n_bytes) noexcept;
}  // namespace detail

template <class T>
class ZeroedArray {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

public:
    ZeroedArray() = default;
    explicit ZeroedArray(size_t n) : data_(static_cast<T*>(detail::zeroed_allocate(n, sizeof(T)))), size_(n) {}
    ~ZeroedArray() { detail::zeroed_free(data_, size_ * sizeof(T)); }
    ZeroedArray(ZeroedArray&& o) noexcept : data_(o.data_), size_(o.size_) { o.data_ = nullptr, o.size_ = 0; }
    ZeroedArray& operator=(ZeroedArray&& o) noexcept {
        if (this != &o) {
            detail::zeroed_free(data_, size_ * sizeof(T));
            data_ = o.data_, size_ = o.size_;
            o.data_ = nullptr, o.size_ = 0;
        }
        return *this;
    }
    ZeroedArray(const ZeroedArray&) = delete;
    ZeroedArray& operator=(const ZeroedArray&) = delete;

    [[nodiscard]] T* data() { return data_; }
    [[nodiscard]] const T* data() const { return data_; }
    [[nodiscard]] size_t size() const { return size_; }
    [[nodiscard]] bool empty() const { return size_ == 0; }
    T& operator[](size_t i) { return data_[i]; }
    const T& operator[](size_t i) const { return data_[i]; }
    [[nodiscard]] T* begin() { return data_; }
    [[nodiscard]] T* end() { return data_ + size_; }
    [[nodiscard]] const T* begin() const { return data_; }
    [[nodiscard]] const T* end() const { return data_ + size_; }
    [[nodiscard]] std::span<T> span() { return {data_, size_}; }
    [[nodiscard]] std::span<const T> span() const { return {data_, size_}; }

    // Element-wise, as std::vector's.
    friend bool operator==(const ZeroedArray& a, const ZeroedArray& b) {
        return std::equal(a.begin(), a.end(), b.begin(), b.end());
    }

private:
    T* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace inlay
