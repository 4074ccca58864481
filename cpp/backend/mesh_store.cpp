// The RAM mesh's store over a folder of the shared directory.
#include "cpp/backend/mesh_store.hpp"

#include <random>
#include <thread>

#include <sys/stat.h>

#include <gloo/common/error.h>

#include "common/rendezvous_files.hpp"

namespace uform::backend {
namespace {

/// The most a stored value may hold: a rank's addresses for every peer, far below this for any mesh UForm allows.
constexpr std::size_t max_value_bytes_k = std::size_t(16) << 20;

/// A suffix no other writer of the same key uses.
std::string unique_suffix() {
    std::random_device device;
    return std::to_string(device()) + std::to_string(device());
}

} // namespace

folder_store_t::folder_store_t(std::string folder, std::chrono::steady_clock::time_point deadline)
    : folder_(std::move(folder)), deadline_(deadline) {}

std::string folder_store_t::path_of(std::string const &key) const {
    static char const digits[] = "0123456789abcdef";
    std::string path = folder_ + "/";
    for (unsigned char c : key) {
        path += digits[c >> 4];
        path += digits[c & 15];
    }
    return path;
}

void folder_store_t::set(std::string const &key, std::vector<char> const &data) {
    if (!write_atomically(path_of(key), std::string(data.begin(), data.end()), unique_suffix()))
        throw gloo::IoException("the mesh could not write its store in the shared directory");
}

std::vector<char> folder_store_t::get(std::string const &key) {
    wait({key});
    std::string contents;
    if (!read_rendezvous_file(path_of(key), max_value_bytes_k, contents))
        throw gloo::IoException("the mesh's store holds a file that is not a regular file of a sane size");
    return std::vector<char>(contents.begin(), contents.end());
}

void folder_store_t::wait(std::vector<std::string> const &keys) { wait(keys, std::chrono::milliseconds::max()); }

void folder_store_t::wait(std::vector<std::string> const &keys, std::chrono::milliseconds const &timeout) {
    auto const now = std::chrono::steady_clock::now();
    auto const until =
        timeout >= std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - now) ? deadline_ : now + timeout;
    for (std::string const &key : keys) {
        std::string const path = path_of(key);
        for (;;) {
            struct stat status;
            if (::lstat(path.c_str(), &status) == 0) {
                if (!S_ISREG(status.st_mode))
                    throw gloo::IoException("the mesh's store holds a file that is not a regular file");
                break;
            }
            if (std::chrono::steady_clock::now() >= until)
                throw gloo::IoException("timed out waiting for the mesh's peers in its store");
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
}

} // namespace uform::backend
