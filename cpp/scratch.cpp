// The growable scratch block behind `scratch_t`.
#include "scratch.hpp"

#include <cstdlib>

namespace uform::ram {

// Frees the block.
scratch_t::~scratch_t() noexcept {
    if (!borrowed_) std::free(data_);
}

// Frees what the scratch owned, then uses the lender's block.
void scratch_t::borrow(void *data, std::size_t capacity) noexcept {
    if (!borrowed_) std::free(data_);
    data_ = static_cast<std::byte *>(data);
    capacity_ = capacity / alignment_k * alignment_k;
    used_ = 0;
    borrowed_ = true;
}

// Grows the block when `bytes` exceeds the high-water mark, then rewinds the bump pointer.
bool scratch_t::reset(std::size_t bytes) noexcept {
    used_ = 0;
    bytes = round_up(bytes);
    requested_ = bytes;
    if (bytes <= capacity_) return true;
    if (borrowed_) return false;
    void *grown = std::aligned_alloc(alignment_k, bytes);
    if (grown == nullptr) return false;
    std::free(data_);
    data_ = static_cast<std::byte *>(grown);
    capacity_ = bytes;
    ++allocations_;
    return true;
}

// Hands out the next aligned slice; the caller sized the block, so running past it is a bug.
void *scratch_t::take_bytes(std::size_t bytes) noexcept {
    bytes = round_up(bytes);
    if (used_ + bytes > capacity_) std::abort();
    void *slice = data_ + used_;
    used_ += bytes;
    return slice;
}

} // namespace uform::ram
