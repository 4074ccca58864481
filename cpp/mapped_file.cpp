// A checkpoint read into anonymous pages with pread: a mapping of the file itself would raise SIGBUS on every read past
// its end once the file shrank under the load (a deploy overwriting a model in place), while a copy read once answers
// `io` for a file that shrinks while it is read, and cannot change after.
#include "mapped_file.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../c/fail.hpp"

namespace uform::ram {

// Unmaps on destruction.
mapped_file_t::~mapped_file_t() noexcept { close(); }

// Unmaps, if mapped.
void mapped_file_t::close() noexcept {
    if (data_ != nullptr) ::munmap(const_cast<std::byte *>(data_), size_);
    data_ = nullptr;
    size_ = 0;
}

// Opens and sizes the file, maps as many anonymous pages, reads the file into them, and closes the descriptor.
uform_status_t mapped_file_t::open(char const *path, std::size_t path_length, char const **message) noexcept {
    close();
    if (path == nullptr || path_length == 0) return fail(message, uform_status_invalid_argument_k, "the path is empty");
    if (std::memchr(path, 0, path_length) != nullptr)
        return fail(message, uform_status_invalid_argument_k, "the path has a NUL byte inside");
    std::string terminated;
    try {
        terminated.assign(path, path_length);
    } catch (...) {
        return fail(message, uform_status_out_of_memory_k, "out of memory while copying the checkpoint's path");
    }
    int const descriptor = ::open(terminated.c_str(), O_RDONLY | O_CLOEXEC);
    if (descriptor < 0)
        return errno == ENOENT ? fail(message, uform_status_not_found_k, "the checkpoint file does not exist")
                               : fail(message, uform_status_io_k, "the checkpoint file cannot be opened");
    struct stat status{};
    if (::fstat(descriptor, &status) != 0 || !S_ISREG(status.st_mode)) {
        ::close(descriptor);
        return fail(message, uform_status_io_k, "the checkpoint is not a readable regular file");
    }
    std::size_t const size = static_cast<std::size_t>(status.st_size);
    if (size == 0) {
        ::close(descriptor);
        return uform_status_ok_k;
    }
    void *mapping = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) {
        ::close(descriptor);
        return fail(message, uform_status_out_of_memory_k, "out of memory for the checkpoint's bytes");
    }
    data_ = static_cast<std::byte const *>(mapping);
    size_ = size;
    auto *target = static_cast<std::byte *>(mapping);
    for (std::size_t done = 0; done != size;) {
        ssize_t const got = ::pread(descriptor, target + done, size - done, off_t(done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            ::close(descriptor);
            close();
            return got == 0 ? fail(message, uform_status_io_k, "the checkpoint file shrank while it was read")
                            : fail(message, uform_status_io_k, "reading the checkpoint file failed");
        }
        done += std::size_t(got);
    }
    ::close(descriptor);
    ::mprotect(mapping, size, PROT_READ);
    return uform_status_ok_k;
}

void release_mapped_pages(std::span<std::byte const> bytes) noexcept {
    auto const page = std::uintptr_t(sysconf(_SC_PAGESIZE));
    auto const begin = (std::uintptr_t(bytes.data()) + page - 1) / page * page;
    auto const end = (std::uintptr_t(bytes.data()) + bytes.size()) / page * page;
    if (end > begin) madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
}

} // namespace uform::ram
