// Opening files a caller (or a peer) names, safely: nothing can block before the file is known to be a regular file
// (a FIFO, a device or a socket is refused at once), and a read is bounded by what its format needs. Every decoder,
// the checkpoint reader and the mesh's rendezvous open their files through here.
#ifndef UFORM_COMMON_REGULAR_FILE_HPP
#define UFORM_COMMON_REGULAR_FILE_HPP

#include <cstddef>
#include <cstdint>

namespace uform {

/// How opening a file went.
enum class file_open_t {
    ok,          ///< a regular file, open for reading
    missing,     ///< no such file (or a directory on the way is missing)
    not_folder,  ///< a file on the way is not a directory
    not_regular, ///< a FIFO, device, socket, directory, or (when links are refused) a symbolic link
    denied,      ///< the process may not read it
    failed,      ///< another error of the OS
};

/// A descriptor of a regular file open for reading, closed when this goes.
class regular_file_t {
  public:
    regular_file_t() noexcept = default;
    regular_file_t(regular_file_t const &) = delete;
    regular_file_t &operator=(regular_file_t const &) = delete;
    ~regular_file_t();

    /// Opens `path` (NUL-terminated) for reading without ever blocking in `open` (`O_NONBLOCK`, cleared once the
    /// file is known to be regular), refusing anything but a regular file; with `follow_links` false a symbolic link
    /// is refused too (`O_NOFOLLOW`). On `ok`, `size()` is the file's size as `fstat` saw it.
    file_open_t open(char const *path, bool follow_links) noexcept;

    /// The descriptor, or -1.
    int descriptor() const noexcept { return descriptor_; }
    /// Hands the descriptor over to the caller, who closes it; -1 when none is open.
    int release() noexcept {
        int const descriptor = descriptor_;
        descriptor_ = -1;
        return descriptor;
    }
    /// The size in bytes when opened.
    std::uint64_t size() const noexcept { return size_; }

    /// Reads up to `length` bytes at `offset`, resuming after interruptions; the bytes read (fewer at the end of the
    /// file), or -1 on an error.
    std::int64_t read_at(void *into, std::size_t length, std::uint64_t offset) const noexcept;

  private:
    int descriptor_ = -1;
    std::uint64_t size_ = 0;
};

} // namespace uform

#endif // UFORM_COMMON_REGULAR_FILE_HPP
