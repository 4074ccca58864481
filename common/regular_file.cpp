// Regular files opened without blocking.
#include "common/regular_file.hpp"

#include <cerrno>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace uform {

regular_file_t::~regular_file_t() {
    if (descriptor_ >= 0) ::close(descriptor_);
}

file_open_t regular_file_t::open(char const *path, bool follow_links) noexcept {
    if (descriptor_ >= 0) ::close(descriptor_);
    descriptor_ = -1;
    size_ = 0;
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
    int const flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (follow_links ? 0 : O_NOFOLLOW);
    int const descriptor = ::open(path, flags);
    if (descriptor < 0) {
        switch (errno) {
        case ENOENT: return file_open_t::missing;
        case ENOTDIR: return file_open_t::not_folder;
        case ELOOP: return file_open_t::not_regular; // a symbolic link under O_NOFOLLOW
        case EACCES:
        case EPERM: return file_open_t::denied;
        case ENXIO: return file_open_t::not_regular; // a socket, or a FIFO's peculiarities
        default: return file_open_t::failed;
        }
    }
    struct stat status{};
    if (::fstat(descriptor, &status) != 0) {
        ::close(descriptor);
        return file_open_t::failed;
    }
    if (!S_ISREG(status.st_mode)) {
        ::close(descriptor);
        return file_open_t::not_regular;
    }
    // A regular file never blocks; clearing the flag keeps reads plain on every OS.
    int const current = ::fcntl(descriptor, F_GETFL);
    if (current >= 0) ::fcntl(descriptor, F_SETFL, current & ~O_NONBLOCK);
    descriptor_ = descriptor;
    size_ = std::uint64_t(status.st_size);
    return file_open_t::ok;
}

std::int64_t regular_file_t::read_at(void *into, std::size_t length, std::uint64_t offset) const noexcept {
    std::size_t done = 0;
    while (done != length) {
        ssize_t const got = ::pread(descriptor_, static_cast<char *>(into) + done, length - done, off_t(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return -1;
        if (got == 0) break;
        done += std::size_t(got);
    }
    return std::int64_t(done);
}

} // namespace uform
