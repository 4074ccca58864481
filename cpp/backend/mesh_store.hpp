// The key-value store a RAM mesh's ranks exchange their addresses through: files in the rendezvous' fresh folder,
// read with the rendezvous files' rules (regular files only, no symbolic links, never blocking, a size bound) and
// waited for until the rendezvous' deadline, so that nothing planted in the shared directory can hang a rank.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

namespace uform::backend {

/// Gloo's store over a folder: each key a file named by the key's hex digits, written atomically.
class folder_store_t final : public gloo::rendezvous::Store {
  public:
    /// A store in `folder` whose waits end, with Gloo's I/O exception, at `deadline` at the latest.
    folder_store_t(std::string folder, std::chrono::steady_clock::time_point deadline);

    /// Publishes `data` under `key`.
    void set(std::string const &key, std::vector<char> const &data) override;
    /// Waits for `key`, then reads it.
    std::vector<char> get(std::string const &key) override;
    /// Waits for every key until the deadline.
    void wait(std::vector<std::string> const &keys) override;
    /// Waits for every key until `timeout` or the deadline, whichever comes first.
    void wait(std::vector<std::string> const &keys, std::chrono::milliseconds const &timeout) override;

  private:
    /// The file of `key`.
    std::string path_of(std::string const &key) const;

    std::string folder_;
    std::chrono::steady_clock::time_point deadline_;
};

} // namespace uform::backend
