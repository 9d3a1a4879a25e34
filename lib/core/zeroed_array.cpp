#include "core/zeroed_array.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>

#include "core/error.h"

namespace inlay::detail {
namespace {
// From here on, a mapping of its own: its pages are the kernel's zero pages until
// written, and returning it gives the memory back to the system at once. (calloc would
// often do the same, but below glibc's adaptive mmap threshold it clears heap memory,
// and so makes it resident.) Under AddressSanitizer everything goes through calloc, so
// that overruns of these arrays are still caught.
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kMapFrom = SIZE_MAX;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr size_t kMapFrom = SIZE_MAX;
#else
constexpr size_t kMapFrom = size_t{256} << 10;
#endif
#else
constexpr size_t kMapFrom = size_t{256} << 10;
#endif
}  // namespace

void* zeroed_allocate(size_t n, size_t elem_size) {
    if (n == 0 || elem_size == 0) return nullptr;
    if (n > SIZE_MAX / elem_size) fail(INLAY_ERR_OUT_OF_MEMORY, "cannot allocate {} elements of {} bytes", n, elem_size);
    const size_t n_bytes = n * elem_size;
    void* p = nullptr;
    if (n_bytes >= kMapFrom) {
        p = mmap(nullptr, n_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) p = nullptr;
    } else {
        p = std::calloc(1, n_bytes);
    }
    if (!p) fail(INLAY_ERR_OUT_OF_MEMORY, "cannot allocate {} bytes", n_bytes);
    return p;
}

void zeroed_free(void* p, size_t n_bytes) noexcept {
    if (!p) return;
    if (n_bytes >= kMapFrom)
        munmap(p, n_bytes);
    else
        std::free(p);
}

}  // namespace inlay::detail
