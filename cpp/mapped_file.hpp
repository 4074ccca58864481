// A checkpoint file read a tensor at a time into anonymous pages (POSIX): its pages can be released as the weights
// are packed, and a file that shrinks or changes under the load can never fault a read of it.
#pragma once

#include <cstddef>
#include <span>

#include <uform/types.h>

namespace uform::ram {

/// A private copy of a file's bytes, read in range by range as `fetch` asks, for as long as it lives. A mapping of
/// the file itself would raise SIGBUS on every read past its end once the file shrank (a deploy overwriting a model
/// in place); a range read with `pread` answers `io` instead.
class mapped_file_t {
  public:
    mapped_file_t() noexcept = default;
    mapped_file_t(mapped_file_t const &) = delete;
    mapped_file_t &operator=(mapped_file_t const &) = delete;
    ~mapped_file_t() noexcept;

    /// Opens `path` (the OS's bytes, not NUL-terminated) and reserves pages for its size, reading nothing yet.
    /// Answers `not-found` for a missing file, `invalid-argument` for a path with a NUL inside, `io` when it cannot
    /// be opened or sized, and `out-of-memory`.
    uform_status_t open(char const *path, std::size_t path_length, char const **message) noexcept;
    /// Where the file's bytes land: empty before a successful `open` (and for an empty file). A range reads as zeros
    /// until it is fetched.
    std::span<std::byte const> bytes() const noexcept { return {data_, size_}; }
    /// Reads the file's bytes of the range `[begin, begin + length)` of `bytes()` in; `io` when the file no longer
    /// holds them (it shrank) or reading fails.
    uform_status_t fetch(std::byte const *begin, std::size_t length, char const **message) const noexcept;
    /// Frees the pages and closes the file.
    void close() noexcept;

  private:
    std::byte *data_ = nullptr;
    std::size_t size_ = 0;
    int descriptor_ = -1;
};

/// Drops the resident pages wholly inside `bytes`, a range of a `mapped_file_t`'s bytes, from the process's memory;
/// they read as zeros until fetched again. Never call it on memory that is not such a copy.
void release_mapped_pages(std::span<std::byte const> bytes) noexcept;

} // namespace uform::ram
