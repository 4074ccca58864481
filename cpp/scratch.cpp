// The growable scratch block behind `scratch_t`.
#include "cpp/scratch.hpp"

#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace uform::ram {
namespace {

/// Blocks from this size on sit on 2 MiB pages where the OS offers transparent huge pages.
constexpr std::size_t huge_page_k = 2u << 20;

/// A block of `bytes` (a multiple of 64): small ones 64-byte aligned, large ones rounded up to whole huge pages,
/// aligned to them and advised for them, so their physical layout is contiguous and the same from run to run.
void *allocate_block(std::size_t bytes) noexcept {
    if (bytes < huge_page_k / 2) return std::aligned_alloc(64, bytes);
    std::size_t const size = (bytes + huge_page_k - 1) / huge_page_k * huge_page_k;
    void *block = std::aligned_alloc(huge_page_k, size);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (block != nullptr) ::madvise(block, size, MADV_HUGEPAGE); // a hint: without huge pages the block still works
#endif
    return block;
}

} // namespace

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
    void *grown = allocate_block(bytes);
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
