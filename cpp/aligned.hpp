// 64-byte-aligned heap blocks for packed weights, owned by `std::unique_ptr`.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <memory>

namespace uform::ram {

/// Frees what `aligned_block` (`std::aligned_alloc`) gave.
struct aligned_free_t {
    void operator()(void *data) const noexcept { std::free(data); }
};

/// An owned block from `aligned_block`.
template <typename value_type>
using aligned_ptr_t = std::unique_ptr<value_type, aligned_free_t>;

/// At least `bytes` bytes (whole cache lines, at least one) aligned to 64, uninitialised; null when out of memory.
template <typename value_type>
aligned_ptr_t<value_type> aligned_block(std::size_t bytes) noexcept {
    std::size_t const lines = std::max<std::size_t>(1, (bytes + 63) / 64);
    return aligned_ptr_t<value_type>(static_cast<value_type *>(std::aligned_alloc(64, lines * 64)));
}

} // namespace uform::ram
