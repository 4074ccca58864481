// A checkpoint file read range by range into anonymous pages with pread.
#include "cpp/mapped_file.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fail.hpp"
#include "common/regular_file.hpp"

namespace uform::ram {

// Unmaps on destruction.
mapped_file_t::~mapped_file_t() noexcept { close(); }

// Frees the pages and closes the file, if open.
void mapped_file_t::close() noexcept {
    if (data_ != nullptr) ::munmap(data_, size_);
    if (descriptor_ >= 0) ::close(descriptor_);
    data_ = nullptr;
    size_ = 0;
    descriptor_ = -1;
}

// Opens and sizes the file and maps as many anonymous pages, which take no memory until written.
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
    regular_file_t file;
    switch (file.open(terminated.c_str(), true)) {
    case file_open_t::ok: break;
    case file_open_t::missing: return fail(message, uform_status_not_found_k, "the checkpoint file does not exist");
    case file_open_t::not_regular:
        return fail(message, uform_status_io_k, "the checkpoint is not a readable regular file");
    default: return fail(message, uform_status_io_k, "the checkpoint file cannot be opened");
    }
    std::size_t const size = static_cast<std::size_t>(file.size());
    if (size == 0) return uform_status_ok_k;
    int const descriptor = file.release();
    void *mapping = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) {
        ::close(descriptor);
        return fail(message, uform_status_out_of_memory_k, "out of memory for the checkpoint's bytes");
    }
    data_ = static_cast<std::byte *>(mapping);
    size_ = size;
    descriptor_ = descriptor;
    return uform_status_ok_k;
}

// Reads the range with pread, resuming after interruptions and short reads.
uform_status_t mapped_file_t::fetch(std::byte const *begin, std::size_t length, char const **message) const noexcept {
    std::size_t const offset = std::size_t(begin - data_);
    if (begin < data_ || offset > size_ || length > size_ - offset)
        return fail(message, uform_status_invalid_argument_k, "a range past the checkpoint's bytes");
    for (std::size_t done = 0; done != length;) {
        ssize_t const got = ::pread(descriptor_, data_ + offset + done, length - done, off_t(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got == 0) return fail(message, uform_status_io_k, "the checkpoint file shrank while it was loaded");
        if (got < 0) return fail(message, uform_status_io_k, "reading the checkpoint file failed");
        done += std::size_t(got);
    }
    return uform_status_ok_k;
}

void release_mapped_pages(std::span<std::byte const> bytes) noexcept {
#if defined(__wasi__)
    (void)bytes; // WASI's emulated mmap reads the file into the module's memory, which cannot shrink: nothing to give
                 // back
#else
    auto const page = std::uintptr_t(sysconf(_SC_PAGESIZE));
    auto const begin = (std::uintptr_t(bytes.data()) + page - 1) / page * page;
    auto const end = (std::uintptr_t(bytes.data()) + bytes.size()) / page * page;
    if (end > begin) madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
#endif
}

} // namespace uform::ram
