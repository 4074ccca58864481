// A read-only memory mapping of a whole file (POSIX), for loading checkpoints without copying them.
#pragma once

#include <cstddef>
#include <span>

#include <uform/types.h>

namespace uform::ram {

/// Maps a file read-only for as long as it lives.
class mapped_file_t {
  public:
    mapped_file_t() noexcept = default;
    mapped_file_t(mapped_file_t const &) = delete;
    mapped_file_t &operator=(mapped_file_t const &) = delete;
    ~mapped_file_t() noexcept;

    /// Maps `path` (the OS's bytes, not NUL-terminated). Answers `not-found` for a missing file, `invalid-argument`
    /// for a path with a NUL inside, `io` when it cannot be opened, sized or mapped, and `out-of-memory`.
    uform_status_t open(char const *path, std::size_t path_length, char const **message) noexcept;
    /// The mapped bytes; empty before a successful `open` (and for an empty file).
    std::span<std::byte const> bytes() const noexcept { return {data_, size_}; }
    /// Unmaps.
    void close() noexcept;

  private:
    std::byte const *data_ = nullptr;
    std::size_t size_ = 0;
};

/// Drops the resident pages wholly inside `bytes`, a range of a read-only file mapping, from the process's memory;
/// reading them again faults them back from the file. Never call it on memory that is not such a mapping.
void release_mapped_pages(std::span<std::byte const> bytes) noexcept;

} // namespace uform::ram
