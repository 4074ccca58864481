// A whole file read once into anonymous pages (POSIX), for loading checkpoints: their pages can be released as the
// weights are packed, and a file changed or shrunk afterwards cannot touch them.
#pragma once

#include <cstddef>
#include <span>

#include <uform/types.h>

namespace uform::ram {

/// A private, read-only copy of a file's bytes, for as long as it lives.
class mapped_file_t {
  public:
    mapped_file_t() noexcept = default;
    mapped_file_t(mapped_file_t const &) = delete;
    mapped_file_t &operator=(mapped_file_t const &) = delete;
    ~mapped_file_t() noexcept;

    /// Reads `path` (the OS's bytes, not NUL-terminated). Answers `not-found` for a missing file, `invalid-argument`
    /// for a path with a NUL inside, `io` when it cannot be opened, sized or read whole (it shrank meanwhile), and
    /// `out-of-memory`.
    uform_status_t open(char const *path, std::size_t path_length, char const **message) noexcept;
    /// The file's bytes; empty before a successful `open` (and for an empty file).
    std::span<std::byte const> bytes() const noexcept { return {data_, size_}; }
    /// Frees the bytes.
    void close() noexcept;

  private:
    std::byte const *data_ = nullptr;
    std::size_t size_ = 0;
};

/// Drops the resident pages wholly inside `bytes`, a range of a `mapped_file_t`'s bytes, from the process's memory;
/// reading them again reads zeros. Never call it on memory that is not such a copy, nor on bytes still to be read.
void release_mapped_pages(std::span<std::byte const> bytes) noexcept;

} // namespace uform::ram
