// The mesh over Gloo: the rendezvous of its ranks and its collectives (docs/decisions.md, "The mesh"). A VRAM mesh, in
// a CUDA build, meets over Gloo too and then chooses its gradients' transport: NCCL (cuda/mesh.hpp) or host memory
// staged over Gloo (docs/decisions.md, "Training over the GPU mesh"); any other build answers `unsupported`.
//
// The rendezvous agrees on a fresh attempt through small files in the shared directory, each written atomically (a
// temporary renamed into place), so that a rerun of the same job in the same directory never meets the files of an
// earlier run:
// - every rank r > 0 draws a random token and publishes it in `<job>.ready.<r>`;
// - rank 0 reads every rank's token and publishes `<job>.attempt`: a fresh random nonce and the tokens it read,
//   publishing a new nonce whenever a token changes (a stale token of an earlier run is replaced by the live one),
//   and before every rank arrived (a rank given another host count then says so in its acknowledgement);
// - a rank r > 0 acknowledges a nonce listed with its own token in `<job>.ack.<nonce>.<r>`, and waits for
//   `<job>.go.<nonce>`, which rank 0 writes once every rank acknowledged the nonce;
// - then every rank connects through a store of files in the fresh folder `<job>.<nonce>` of the directory.
// Every file is read as a regular file (never a FIFO, a device or a symbolic link) of a bounded size, and every wait
// ends at the deadline (common/rendezvous_files.hpp, mesh_store.hpp).
// Past the deadline a rank gives up with `timeout`. After a barrier of the connected ranks each removes the files it
// wrote, and rank 0 the folder; a rendezvous that fails leaves its files in place (the next attempt ignores them).
#include "cpp/backend/mesh.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <sys/stat.h>

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>

#include "common/fail.hpp"
#include "common/rendezvous_files.hpp"
#include "cpp/backend/mesh_store.hpp"
#include "cpp/backend/sigpipe_guard.hpp"
#if UFORM_WITH_CUDA
#include "cuda/mesh.hpp"
#endif

namespace uform::backend {
namespace {

/// The first line of an attempt file.
constexpr char const *attempt_header_k = "uform-ram-mesh 1";

/// The most bytes a `.ready`, `.ack` or `.go` file holds (a token or a word, and a newline).
constexpr std::size_t small_file_bytes_k = 64;

/// The most bytes an `.attempt` file of `count` hosts holds: its header, count and nonce, and a token per rank.
std::size_t attempt_bytes(std::size_t count) noexcept { return 64 + 33 * count; }

/// A random token of 32 hex digits.
std::string random_token() {
    static char const digits[] = "0123456789abcdef";
    std::random_device device;
    std::string token(32, '0');
    for (char &digit : token) digit = digits[device() & 15];
    return token;
}

/// Whether a file exists.
bool exists(std::string const &path) noexcept {
    struct stat status;
    return ::stat(path.c_str(), &status) == 0;
}

/// The files a rank wrote for the rendezvous, removed once every rank connected.
struct written_t {
    std::vector<std::string> paths;
};

/// Writes `path` atomically and remembers it; `false` on failure.
bool publish(std::string const &path, std::string const &contents, written_t &written) {
    if (!write_atomically(path, contents, random_token())) return false;
    written.paths.push_back(path);
    return true;
}

/// What a rank r > 0 acknowledges an attempt with: agreement, or the host count it was given when that differs.
std::string acknowledgement(std::string const &count, std::string const &published_count) {
    return count == published_count ? std::string("ack\n") : "count " + count + "\n";
}

/// The status of a rank whose peers did not all arrive before the deadline.
uform_status_t late(char const **message) noexcept {
    return fail(message, uform_status_timeout_k, "the mesh's ranks did not all arrive in time");
}

/// Agrees on the attempt's nonce with the other ranks (the protocol above). Rank 0 publishes an attempt whenever the
/// ranks' tokens it has read change, before every rank arrived, so that a rank given another host count learns it
/// and says so in its acknowledgement: both then answer `invalid-argument`.
uform_status_t agree_attempt(mesh_rendezvous_t const &r, std::string &nonce, written_t &written, char const **message) {
    std::string const base = std::string(r.directory) + "/" + std::string(r.job);
    std::string const count = std::to_string(r.host_count);
    std::string contents;
    if (r.host_index == 0) {
        std::vector<std::string> published; // the tokens the current nonce was published with
        for (;;) {
            if (!nonce.empty()) {
                bool all = true;
                for (std::size_t rank = 1; all && rank != r.host_count; ++rank) {
                    if (std::chrono::steady_clock::now() >= r.deadline) return late(message);
                    all = read_rendezvous_file(base + ".ack." + nonce + "." + std::to_string(rank), small_file_bytes_k,
                                               contents);
                    if (all && contents != "ack\n")
                        return fail(message, uform_status_invalid_argument_k,
                                    "the mesh's ranks disagree on host_domain_count");
                }
                if (all) {
                    if (!publish(base + ".go." + nonce, "go\n", written))
                        return fail(message, uform_status_io_k, "cannot write the mesh's files in its directory");
                    return uform_status_ok_k;
                }
            }
            std::vector<std::string> tokens;
            bool any = false;
            for (std::size_t rank = 1; rank != r.host_count; ++rank) {
                if (std::chrono::steady_clock::now() >= r.deadline) return late(message);
                std::vector<std::string> lines;
                bool const read =
                    read_rendezvous_file(base + ".ready." + std::to_string(rank), small_file_bytes_k, contents) &&
                    (lines = lines_of(contents)).size() == 1;
                tokens.push_back(read ? lines[0] : std::string());
                any = any || read;
            }
            if (any && tokens != published) {
                nonce = random_token();
                std::string attempt = std::string(attempt_header_k) + "\n" + count + "\n" + nonce + "\n";
                for (std::string const &token : tokens) attempt += token + "\n";
                if (!publish(base + ".attempt", attempt, written))
                    return fail(message, uform_status_io_k, "cannot write the mesh's files in its directory");
                published = std::move(tokens);
            }
            if (std::chrono::steady_clock::now() >= r.deadline) return late(message);
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
    std::string const token = random_token();
    std::string const rank = std::to_string(r.host_index);
    if (!publish(base + ".ready." + rank, token + "\n", written))
        return fail(message, uform_status_io_k, "cannot write the mesh's files in its directory");
    for (;;) {
        std::vector<std::string> lines;
        if (read_rendezvous_file(base + ".attempt", attempt_bytes(r.host_count), contents) &&
            (lines = lines_of(contents)).size() > 2 + r.host_index && lines[0] == attempt_header_k &&
            lines[2 + r.host_index] == token && lines[2] != nonce) {
            if (!publish(base + ".ack." + lines[2] + "." + rank, acknowledgement(count, lines[1]), written))
                return fail(message, uform_status_io_k, "cannot write the mesh's files in its directory");
            if (lines[1] != count)
                return fail(message, uform_status_invalid_argument_k, "the mesh's ranks disagree on host_domain_count");
            nonce = lines[2];
        }
        if (!nonce.empty() && exists(base + ".go." + nonce)) return uform_status_ok_k;
        if (std::chrono::steady_clock::now() >= r.deadline) return late(message);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

/// The status of an exception Gloo threw: `timeout` when a peer did not answer in time (Gloo says so in its message,
/// or the deadline passed), `io` for another failed connection, `out_of_memory`, else `internal`.
uform_status_t gloo_failure(std::exception_ptr thrown, bool late, char const **message) noexcept {
    try {
        std::rethrow_exception(thrown);
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory in the mesh");
    } catch (gloo::IoException const &e) {
        std::string_view const what = e.what();
        if (late || what.find("imeout") != what.npos || what.find("imed out") != what.npos)
            return fail(message, uform_status_timeout_k, "a peer of the mesh did not answer in time");
        return fail(message, uform_status_io_k, "a connection of the mesh failed");
    } catch (std::exception const &e) {
        if (late) return fail(message, uform_status_timeout_k, "a peer of the mesh did not answer in time");
        return fail(message, uform_status_io_k, "the mesh failed: a peer left or broke the protocol");
    } catch (...) {
        return fail(message, uform_status_internal_k, "the mesh threw an unknown exception");
    }
}

/// Runs one collective, mapping what Gloo throws to a status.
template <typename collective_t>
uform_status_t guarded(collective_t &&collective, std::chrono::milliseconds timeout, char const **message) noexcept {
    auto const start = std::chrono::steady_clock::now();
    sigpipe_guard_t const guard; // a peer gone mid-write is `io`, never a SIGPIPE
    try {
        collective();
        return uform_status_ok_k;
    } catch (...) {
        bool const late = std::chrono::steady_clock::now() - start >= timeout;
        return gloo_failure(std::current_exception(), late, message);
    }
}

/// Gloo's sum of `element_t`, as its reduce functions take it.
template <typename element_t>
void sum_of(void *c, void const *a, void const *b, std::size_t n) {
    gloo::sum<element_t>(c, a, b, n);
}

template <typename element_t>
uform_status_t sum_over(mesh_t &mesh, std::span<element_t> values, char const **message) noexcept {
    if (!mesh.context || values.empty()) return uform_status_ok_k;
    return guarded(
        [&] {
            gloo::AllreduceOptions options(mesh.context);
            options.setOutput(values.data(), values.size());
            options.setReduceFunction(&sum_of<element_t>);
            options.setTimeout(mesh.timeout);
            gloo::allreduce(options);
        },
        mesh.timeout, message);
}

} // namespace

uform_status_t mesh_t::sum(std::span<float> values, char const **message) noexcept {
    return sum_over(*this, values, message);
}

uform_status_t mesh_t::sum(std::span<double> values, char const **message) noexcept {
    return sum_over(*this, values, message);
}

uform_status_t mesh_t::gather(void const *mine, std::span<std::size_t const> bytes, void *all,
                              char const **message) noexcept {
    std::size_t total = 0;
    for (std::size_t b : bytes) total += b;
    if (total == 0) return uform_status_ok_k;
    if (!context) {
        std::memcpy(all, mine, total);
        return uform_status_ok_k;
    }
    return guarded(
        [&] {
            static char nothing = 0; // the input of a rank that gives no bytes, which may have no buffer
            gloo::AllgathervOptions options(context);
            options.setInput(bytes[index] ? static_cast<char *>(const_cast<void *>(mine)) : &nothing, bytes[index]);
            options.setOutput(static_cast<char *>(all), std::vector<std::size_t>(bytes.begin(), bytes.end()));
            options.setTimeout(timeout);
            gloo::allgatherv(options);
        },
        timeout, message);
}

uform_status_t mesh_t::broadcast(void *values, std::size_t bytes, char const **message) noexcept {
    if (!context || bytes == 0) return uform_status_ok_k;
    return guarded(
        [&] {
            gloo::BroadcastOptions options(context);
            options.setOutput(static_cast<char *>(values), bytes);
            options.setRoot(0);
            options.setTimeout(timeout);
            gloo::broadcast(options);
        },
        timeout, message);
}

uform_status_t mesh_rendezvous(mesh_rendezvous_t const &r, mesh_t *&mesh, char const **message) noexcept {
    mesh = nullptr;
    try {
        auto made = std::make_unique<mesh_t>();
        made->index = r.host_index;
        made->count = r.host_count;
        made->timeout = r.timeout;
        // A directory this rank cannot write in is `io` at once, not a wait for peers until the timeout; a one-rank
        // mesh checks it too, as the header promises, since its trainer's peers would meet there.
        std::string const probe = std::string(r.directory) + "/" + std::string(r.job) + ".probe-" + random_token();
        std::FILE *file = std::fopen(probe.c_str(), "wbx");
        if (!file) return fail(message, uform_status_io_k, "cannot write in the mesh's directory");
        std::fclose(file);
        std::remove(probe.c_str());
        if (r.host_count > 1) {
            std::string nonce;
            written_t written;
            if (uform_status_t status = agree_attempt(r, nonce, written, message)) return status;
            std::string const folder = std::string(r.directory) + "/" + std::string(r.job) + "." + nonce;
            struct stat made_folder;
            if ((::mkdir(folder.c_str(), 0777) != 0 && errno != EEXIST) || ::lstat(folder.c_str(), &made_folder) != 0 ||
                !S_ISDIR(made_folder.st_mode))
                return fail(message, uform_status_io_k, "cannot make the mesh's folder in its directory");
            auto const left =
                std::chrono::duration_cast<std::chrono::milliseconds>(r.deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0)
                return fail(message, uform_status_timeout_k, "the mesh's ranks did not all arrive in time");
            sigpipe_guard_t const guard; // Gloo's event loop, started here, keeps SIGPIPE blocked for good
            try {
                gloo::transport::tcp::attr attr;
                attr.hostname = std::string(r.hostname);
                auto device = gloo::transport::tcp::CreateDevice(attr);
                auto context = std::make_shared<gloo::rendezvous::Context>(int(r.host_index), int(r.host_count));
                context->setTimeout(left);
                folder_store_t store(folder, r.deadline);
                context->connectFullMesh(store, device);
                context->setTimeout(r.timeout);
                // Once every rank connected, no one reads the rendezvous' files again: each rank removes those it
                // wrote, and rank 0 the store's folder, so that the directory holds nothing of a joined mesh.
                gloo::BarrierOptions barrier(context);
                barrier.setTimeout(r.timeout);
                gloo::barrier(barrier);
                for (std::string const &path : written.paths) std::remove(path.c_str());
                if (r.host_index == 0) {
                    std::error_code ignored;
                    std::filesystem::remove_all(folder, ignored);
                }
                made->context = std::move(context);
            } catch (...) {
                bool const late = std::chrono::steady_clock::now() >= r.deadline;
                return gloo_failure(std::current_exception(), late, message);
            }
        }
        mesh = made.release();
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory joining the mesh");
    } catch (...) {
        return fail(message, uform_status_io_k, "the mesh's rendezvous failed");
    }
}

#if UFORM_WITH_CUDA
uform_status_t mesh_identity(unsigned char (&identity)[mesh_identity_bytes_k], char const **message) noexcept {
    if (cuda::nccl_available()) return cuda::mesh_identity(identity, message);
    std::string token;
    try {
        for (std::size_t at = 0; at < mesh_identity_bytes_k; at += 16) token += random_token();
    } catch (...) {
        return fail(message, uform_status_internal_k, "no source of randomness for the mesh's identity");
    }
    for (std::size_t i = 0; i != mesh_identity_bytes_k; ++i)
        identity[i] = static_cast<unsigned char>(std::stoul(token.substr(2 * i, 2), nullptr, 16));
    return uform_status_ok_k;
}

namespace {

/// The UUIDs of every rank's devices, gathered: false in `unique` when a GPU serves two ranks, or in `loaded` when
/// NCCL did not load on some host.
uform_status_t survey_devices(mesh_t &mesh, std::span<std::size_t const> devices, bool &loaded, bool &unique,
                              char const **message) {
    constexpr std::uint64_t loaded_bit = std::uint64_t(1) << 63;
    constexpr std::size_t uuid_bytes = 16, most_devices = 4096;
    std::vector<std::uint64_t> counts(mesh.count);
    std::vector<std::size_t> bytes(mesh.count, sizeof(std::uint64_t));
    std::uint64_t const mine = devices.size() | (cuda::nccl_available() ? loaded_bit : 0);
    if (uform_status_t status = mesh.gather(&mine, bytes, counts.data(), message)) return status;
    std::size_t total = 0;
    loaded = true;
    for (std::size_t r = 0; r != mesh.count; ++r) {
        loaded = loaded && (counts[r] & loaded_bit) != 0;
        std::size_t const n = std::size_t(counts[r] & ~loaded_bit);
        if (n > most_devices) return fail(message, uform_status_invalid_argument_k, "a host names too many devices");
        bytes[r] = n * uuid_bytes, total += n;
    }
    std::vector<std::array<unsigned char, uuid_bytes>> own(devices.size()), all(total);
    for (std::size_t i = 0; i != devices.size(); ++i)
        if (!cuda::device_uuid(devices[i], *reinterpret_cast<unsigned char (*)[uuid_bytes]>(own[i].data())))
            return fail(message, uform_status_device_k, "the CUDA runtime refused a device of the mesh");
    if (uform_status_t status = mesh.gather(own.data(), bytes, all.data(), message)) return status;
    std::sort(all.begin(), all.end());
    unique = std::adjacent_find(all.begin(), all.end()) == all.end();
    return uform_status_ok_k;
}

} // namespace

uform_status_t mesh_join(mesh_join_t const &join, mesh_t *&mesh, uform_multimem_tier_t &tier,
                         char const **message) noexcept {
    mesh = nullptr;
    tier = uform_multimem_tier_none_k;
    try {
        std::unique_ptr<mesh_t> made;
        if (join.host_count > 1) {
            mesh_t *met = nullptr;
            mesh_rendezvous_t const r{join.directory,  join.job,      join.hostname, join.host_index,
                                      join.host_count, join.deadline, join.timeout};
            if (uform_status_t status = mesh_rendezvous(r, met, message)) return status;
            made.reset(met);
        } else {
            made = std::make_unique<mesh_t>();
            made->timeout = join.timeout;
        }
        bool loaded = cuda::nccl_available(), unique = true;
        if (join.host_count > 1)
            if (uform_status_t status = survey_devices(*made, join.devices, loaded, unique, message)) return status;
        if (loaded && unique) {
            std::unique_ptr<cuda::nccl_mesh_t> comms;
            if (uform_status_t status = cuda::mesh_join(join, comms, tier, message)) return status;
            made->gpu = std::move(comms);
        } else if (join.devices.size() != 1) {
            return fail(message, uform_status_unsupported_k,
                        "a VRAM mesh without NCCL (absent on a host, or a GPU shared by two ranks) stages through "
                        "host memory, one device per host");
        }
        mesh = made.release();
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory joining the mesh");
    }
}

uform_status_t mesh_t::sum_device(std::span<std::span<float> const> values, void *stream,
                                  char const **message) noexcept {
    if (!gpu) return fail(message, uform_status_unsupported_k, "this mesh sums host memory only");
    return cuda::mesh_sum(*gpu, values, stream, timeout, message);
}

uform_status_t mesh_t::enqueue_sum_device(std::span<std::span<float> const> values, void *stream,
                                          char const **message) noexcept {
    if (!gpu) return fail(message, uform_status_unsupported_k, "this mesh sums host memory only");
    return cuda::mesh_enqueue(*gpu, values, stream, message);
}
#else
uform_status_t mesh_identity(unsigned char (&)[mesh_identity_bytes_k], char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "a VRAM mesh joins GPUs: this build has none");
}

uform_status_t mesh_join(mesh_join_t const &, mesh_t *&mesh, uform_multimem_tier_t &, char const **message) noexcept {
    mesh = nullptr;
    return fail(message, uform_status_unsupported_k, "a VRAM mesh joins GPUs: this build has none");
}

uform_status_t mesh_t::sum_device(std::span<std::span<float> const>, void *, char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "this mesh sums host memory only");
}

uform_status_t mesh_t::enqueue_sum_device(std::span<std::span<float> const>, void *, char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "this mesh sums host memory only");
}
#endif

void mesh_free(mesh_t *mesh) noexcept { delete mesh; }

} // namespace uform::backend
