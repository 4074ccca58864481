// Activation scratch: one block grown to a high-water mark, carved by a bump pointer each call.
#pragma once

#include <cstddef>
#include <new>

namespace uform::ram {

/// A caller-owned arena for a forward's temporaries: `reset(bytes)` makes room for `bytes` (growing only when the
/// high-water mark is exceeded), then `take` hands out 64-byte-aligned slices until the next `reset`.
class scratch_t {
  public:
    scratch_t() noexcept = default;
    scratch_t(scratch_t const &) = delete;
    scratch_t &operator=(scratch_t const &) = delete;
    ~scratch_t() noexcept;

    /// Rewinds and ensures `bytes` of capacity; false when the allocation failed (the old block is kept).
    [[nodiscard]] bool reset(std::size_t bytes) noexcept;
    /// Lends the scratch `capacity` bytes at `data` (64-byte aligned, still the lender's): from then on `reset`
    /// never allocates, and answers false when asked for more than `capacity`.
    void borrow(void *data, std::size_t capacity) noexcept;
    /// Bytes the last `reset` asked for, alignment included, whether it succeeded or not.
    std::size_t requested() const noexcept { return requested_; }
    /// The next `count` values of `value_t`, 64-byte aligned; the caller sized `reset` with `bytes_for`.
    template <typename value_t>
    value_t *take(std::size_t count) noexcept {
        return static_cast<value_t *>(take_bytes(count * sizeof(value_t)));
    }
    /// Bytes a `take` of `count` values of `value_t` consumes, alignment included.
    template <typename value_t>
    static constexpr std::size_t bytes_for(std::size_t count) noexcept {
        return round_up(count * sizeof(value_t));
    }
    /// Bytes held now: the high-water mark.
    std::size_t capacity() const noexcept { return capacity_; }
    /// Times the block was (re)allocated: a steady loop of same-shaped calls keeps this constant.
    std::size_t allocations() const noexcept { return allocations_; }

  private:
    static constexpr std::size_t alignment_k = 64;
    static constexpr std::size_t round_up(std::size_t bytes) noexcept {
        return (bytes + alignment_k - 1) / alignment_k * alignment_k;
    }
    void *take_bytes(std::size_t bytes) noexcept;

    std::byte *data_ = nullptr;
    std::size_t capacity_ = 0;
    std::size_t used_ = 0;
    std::size_t allocations_ = 0;
    std::size_t requested_ = 0;
    bool borrowed_ = false;
};

} // namespace uform::ram
