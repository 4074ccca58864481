// Small files a mesh's hosts meet through in a shared directory: read whole, written atomically, split into lines.
// The VRAM mesh's bootstrap (c/train.cpp) and the RAM mesh's rendezvous (cpp/backend/mesh.cpp) both use them.
#ifndef UFORM_C_SMALL_FILES_HPP
#define UFORM_C_SMALL_FILES_HPP

#include <cstdio>
#include <string>
#include <vector>

namespace uform {

/// Reads a small file whole; `false` when it is absent or unreadable.
inline bool read_small(std::string const &path, std::string &contents) {
    std::FILE *file = std::fopen(path.c_str(), "rb");
    if (!file) return false;
    char buffer[1024];
    contents.clear();
    for (std::size_t got; (got = std::fread(buffer, 1, sizeof(buffer), file)) > 0;) contents.append(buffer, got);
    bool const ok = !std::ferror(file);
    std::fclose(file);
    return ok;
}

/// Writes a small file through a temporary (`path` + ".tmp-" + `suffix`, which no other writer of `path` may use)
/// renamed into place, so that a reader sees the whole file or none.
inline bool write_atomically(std::string const &path, std::string const &contents, std::string const &suffix) {
    std::string const temporary = path + ".tmp-" + suffix;
    std::FILE *file = std::fopen(temporary.c_str(), "wb");
    if (!file) return false;
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

#endif // UFORM_C_SMALL_FILES_HPP
