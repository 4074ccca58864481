// The small files a mesh's hosts meet through in a shared directory: read whole with a bound fitting their format,
// never through a symbolic link and never blocking on a FIFO (anyone who can write the directory can plant a file
// there), written atomically, split into lines. The VRAM mesh's bootstrap (c/mesh.cpp) and the RAM mesh's rendezvous
// (cpp/backend/mesh.cpp) both use them.
#ifndef UFORM_COMMON_RENDEZVOUS_FILES_HPP
#define UFORM_COMMON_RENDEZVOUS_FILES_HPP

#include <cstdio>
#include <string>
#include <vector>

#include "common/regular_file.hpp"

namespace uform {

/// Reads a rendezvous file whole: `false` when it is absent, not a regular file (a FIFO, a device, a symbolic link),
/// larger than `max_bytes`, or unreadable. Reads at most one byte more than the file held when opened.
inline bool read_rendezvous_file(std::string const &path, std::size_t max_bytes, std::string &contents) {
    regular_file_t file;
    if (file.open(path.c_str(), false) != file_open_t::ok || file.size() > max_bytes) return false;
    // One byte more than `fstat` saw: a file that grew since is refused, never read past the bound.
    std::size_t const room = std::size_t(file.size()) + 1;
    contents.resize(room);
    std::int64_t const got = file.read_at(contents.data(), room, 0);
    if (got < 0 || std::size_t(got) == room) return false;
    contents.resize(std::size_t(got));
    return true;
}

/// Writes a small file through a temporary (`path` + ".tmp-" + `suffix`, which no other writer of `path` may use)
/// renamed into place, so that a reader sees the whole file or none.
inline bool write_atomically(std::string const &path, std::string const &contents, std::string const &suffix) {
    std::string const temporary = path + ".tmp-" + suffix;
    std::FILE *file = std::fopen(temporary.c_str(), "wbx"); // never through a file planted under the temporary's name
    if (!file) {
        std::remove(temporary.c_str());
        file = std::fopen(temporary.c_str(), "wbx");
        if (!file) return false;
    }
    bool ok = std::fwrite(contents.data(), 1, contents.size(), file) == contents.size();
    ok = std::fclose(file) == 0 && ok;
    if (ok) ok = std::rename(temporary.c_str(), path.c_str()) == 0;
    if (!ok) std::remove(temporary.c_str());
    return ok;
}

/// Splits `text` into its lines (a last line without its newline is left out: a file still being written).
inline std::vector<std::string> lines_of(std::string const &text) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
        lines.push_back(text.substr(start, end - start));
    return lines;
}

} // namespace uform

#endif // UFORM_COMMON_RENDEZVOUS_FILES_HPP
