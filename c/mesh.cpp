// The mesh: its options checked, its bootstrap through a shared directory, its description and its end.
//
// Mesh bootstrap, for a run of `host_domain_count` hosts over a directory every host sees:
// - host 0 asks the backend for a fresh identity and publishes `<directory>/<job>.mesh` atomically (a
//   temporary file renamed into place): a version line, the host count, the identity in hex, the GPU class;
// - every host polls until that file appears (re-reading it each poll, so a stale file from an earlier run
//   is followed by the fresh one), then publishes `<directory>/<job>.mesh.<index>` atomically with the
//   identity it read and its device count;
// - every host polls until all hosts' files carry the same identity, then joins through the backend.
// Past `timeout_seconds` a host gives up with `timeout`. A one-host mesh writes nothing and returns at once.
// Files are left in place; give each run a fresh job name. That is the VRAM mesh's; a RAM mesh (one process per
// host) hands the checked options to the backend, whose Gloo rendezvous agrees on a fresh attempt itself.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include <sys/stat.h>

#include "c/handles.hpp"
#include "common/checks.hpp"
#include "common/pause.hpp"
#include "common/rendezvous_files.hpp"

namespace uform {

void mesh_unreference(uform_mesh_s *mesh) noexcept {
    if (mesh->references.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    backend::mesh_free(mesh->backend);
    mesh->magic = 0;
    delete mesh;
}

uform_status_t check_training_executor(uform_executor_s const *executor, executor_kind_t kind,
                                       char const **message) noexcept {
    if (!executor_valid(executor)) return fail(message, uform_status_invalid_argument_k, "the executor is null");
    if (executor->kind == executor_kind_t::local)
        return fail(message, uform_status_unsupported_k, "training runs on a RAM or VRAM executor, not a local one");
    if (executor->kind != kind)
        return fail(message, uform_status_unsupported_k,
                    kind == executor_kind_t::vram
                        ? "this call runs on a VRAM executor only (a RAM trainer is made by uform_trainer_init_ram)"
                        : "this call runs on a RAM executor only (a VRAM trainer is made by uform_trainer_init_vram)");
    return uform_status_ok_k;
}

namespace {

constexpr std::size_t max_job_bytes_k = 200;
constexpr std::size_t max_hostname_bytes_k = 255;
/// The most hosts a mesh joins (train.h, `host_domain_count`): a rendezvous reads a file per host at each poll.
constexpr std::size_t max_hosts_k = 4096;
/// The most bytes a VRAM mesh's file holds: a version line, a count, an identity in hex and a class name.
constexpr std::size_t mesh_file_bytes_k = 4096;

bool valid_utf8(char const *text, std::size_t length) noexcept {
    auto const *bytes = reinterpret_cast<unsigned char const *>(text);
    for (std::size_t i = 0; i < length;) {
        std::uint32_t code = bytes[i];
        std::size_t extra;
        std::uint32_t least;
        if (code < 0x80) {
            ++i;
            continue;
        } else if ((code & 0xE0) == 0xC0) extra = 1, least = 0x80, code &= 0x1F;
        else if ((code & 0xF0) == 0xE0) extra = 2, least = 0x800, code &= 0x0F;
        else if ((code & 0xF8) == 0xF0) extra = 3, least = 0x10000, code &= 0x07;
        else return false;
        if (length - i <= extra) return false;
        for (std::size_t j = 1; j <= extra; ++j) {
            if ((bytes[i + j] & 0xC0) != 0x80) return false;
            code = (code << 6) | (bytes[i + j] & 0x3F);
        }
        if (code < least || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
        i += extra + 1;
    }
    return true;
}

std::string hex_of(unsigned char const *bytes, std::size_t length) {
    static char const digits[] = "0123456789abcdef";
    std::string text(length * 2, '0');
    for (std::size_t i = 0; i != length; ++i) {
        text[2 * i] = digits[bytes[i] >> 4];
        text[2 * i + 1] = digits[bytes[i] & 15];
    }
    return text;
}

struct bootstrap_t {
    std::size_t index, count;
    std::string directory, job;
    std::chrono::steady_clock::time_point deadline;
    std::span<std::size_t const> devices;
    uform_gpu_class_t gpu_class;
};

/// The file protocol: answers the identity, the class of the run, and each host's device count.
uform_status_t bootstrap_files(bootstrap_t const &b, unsigned char (&identity)[backend::mesh_identity_bytes_k],
                               uform_gpu_class_t &gpu_class, std::vector<std::size_t> &host_devices,
                               char const **message) {
    std::string const base = b.directory + "/" + b.job + ".mesh";
    if (b.index == 0) {
        if (uform_status_t status = backend::mesh_identity(identity, message)) return status;
        std::string const contents = "uform-mesh 1\n" + std::to_string(b.count) + "\n" +
                                     hex_of(identity, sizeof(identity)) + "\n" + uform_gpu_class_name(b.gpu_class) +
                                     "\n";
        if (!write_atomically(base, contents, std::to_string(b.index)))
            return fail(message, uform_status_io_k, "cannot publish the mesh's identity in its directory");
    }
    std::string marked; // the identity this host's file carries
    std::string contents;
    for (;;) {
        std::string identity_hex;
        if (read_rendezvous_file(base, mesh_file_bytes_k, contents)) {
            std::vector<std::string> const lines = lines_of(contents);
            if (lines.size() >= 4 && lines[0] == "uform-mesh 1" && lines[1] == std::to_string(b.count) &&
                lines[2].size() == 2 * backend::mesh_identity_bytes_k &&
                uform_gpu_class_parse(lines[3].c_str(), &gpu_class) == uform_status_ok_k)
                identity_hex = lines[2];
        }
        if (!identity_hex.empty() && identity_hex != marked) {
            std::string const mine = identity_hex + "\n" + std::to_string(b.devices.size()) + "\n";
            if (!write_atomically(base + "." + std::to_string(b.index), mine, std::to_string(b.index)))
                return fail(message, uform_status_io_k, "cannot publish this host's part of the mesh");
            marked = identity_hex;
        }
        if (!marked.empty()) {
            bool all = true;
            host_devices.assign(b.count, 0);
            for (std::size_t host = 0; all && host != b.count; ++host) {
                if (std::chrono::steady_clock::now() >= b.deadline)
                    return fail(message, uform_status_timeout_k, "the mesh's peers did not all join in time");
                std::vector<std::string> lines;
                all = read_rendezvous_file(base + "." + std::to_string(host), mesh_file_bytes_k, contents) &&
                      (lines = lines_of(contents)).size() >= 2 && lines[0] == marked;
                if (all) host_devices[host] = std::strtoull(lines[1].c_str(), nullptr, 10);
            }
            if (all) {
                for (std::size_t i = 0; i != sizeof(identity); ++i)
                    identity[i] = static_cast<unsigned char>(std::stoul(marked.substr(2 * i, 2), nullptr, 16));
                return uform_status_ok_k;
            }
        }
        if (std::chrono::steady_clock::now() >= b.deadline)
            return fail(message, uform_status_timeout_k, "the mesh's peers did not all join in time");
        pause_for(std::chrono::milliseconds(10));
    }
}

/// Joins a RAM mesh of checked options: one process per host, met through the backend's rendezvous in `directory`.
uform_status_t bootstrap_ram(uform_executor_s *executor, uform_mesh_options_t const &o, std::size_t count,
                             uform_mesh_t *mesh, char const **message) noexcept {
    try {
        std::string const directory =
            o.directory_length ? std::string(o.directory, o.directory_length) : std::string(".");
        struct stat status;
        if (::stat(directory.c_str(), &status) != 0 || !S_ISDIR(status.st_mode))
            return fail(message, uform_status_io_k, "the mesh's directory does not exist or is not a directory");
        if (uform_status_t status = executor_acquire(executor, true, message)) return status;
        executor_release_t const release{executor};
        std::size_t const seconds = o.timeout_seconds ? o.timeout_seconds : 600;
        backend::mesh_rendezvous_t const rendezvous{
            directory,
            o.job_length ? std::string_view(o.job, o.job_length) : std::string_view("uform"),
            o.hostname_length ? std::string_view(o.hostname, o.hostname_length) : std::string_view("127.0.0.1"),
            o.host_domain_index,
            count,
            std::chrono::steady_clock::now() + std::chrono::seconds(seconds),
            std::chrono::seconds(seconds)};
        auto made = std::make_unique<uform_mesh_s>();
        made->residency = uform_residency_ram_k;
        if (uform_status_t status = backend::mesh_rendezvous(rendezvous, made->backend, message)) return status;
        made->description = {o.host_domain_index,   count, 1, count, o.host_domain_index, uform_multimem_tier_none_k,
                             uform_gpu_class_auto_k};
        *mesh = made.release();
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory joining the mesh");
    }
}

/// Checks the options of a mesh of `count` hosts: the host's index, the directory, the job's name and the hostname.
uform_status_t check_mesh_options(uform_mesh_options_t const &o, std::size_t count, char const **message) noexcept {
    if (count > max_hosts_k)
        return fail(message, uform_status_invalid_argument_k, "host_domain_count is above the mesh's 4096 hosts");
    if (o.host_domain_index >= count)
        return fail(message, uform_status_invalid_argument_k, "the host's index is not below the hosts' count");
    if (!o.directory && o.directory_length)
        return fail(message, uform_status_invalid_argument_k, "the directory is null but has a length");
    if (o.directory_length > max_path_bytes_k)
        return fail(message, uform_status_invalid_argument_k, "the directory is longer than 4095 bytes");
    if (o.directory && std::memchr(o.directory, 0, o.directory_length))
        return fail(message, uform_status_invalid_argument_k, "the directory holds a NUL byte");
    if (!o.job && o.job_length)
        return fail(message, uform_status_invalid_argument_k, "the job is null but has a length");
    if (o.job_length > max_job_bytes_k)
        return fail(message, uform_status_invalid_argument_k, "the job's name is longer than 200 bytes");
    if (o.job) {
        if (!valid_utf8(o.job, o.job_length))
            return fail(message, uform_status_invalid_argument_k, "the job's name is not UTF-8");
        for (std::size_t i = 0; i != o.job_length; ++i)
            if (o.job[i] == '/' || o.job[i] == '\\' || o.job[i] == '\0')
                return fail(message, uform_status_invalid_argument_k, "the job's name holds a slash or a NUL");
    }
    if (!o.hostname && o.hostname_length)
        return fail(message, uform_status_invalid_argument_k, "the hostname is null but has a length");
    if (o.hostname_length > max_hostname_bytes_k)
        return fail(message, uform_status_invalid_argument_k, "the hostname is longer than 255 bytes");
    if (o.hostname && (!valid_utf8(o.hostname, o.hostname_length) || std::memchr(o.hostname, 0, o.hostname_length)))
        return fail(message, uform_status_invalid_argument_k, "the hostname is not UTF-8 without NUL bytes");
    return uform_status_ok_k;
}

/// Joins a VRAM mesh of checked options: the hosts meet in the directory's files (a host alone makes the identity
/// itself), then the backend joins every device of every host.
uform_status_t bootstrap_vram(uform_executor_s *executor, uform_mesh_options_t const &o, std::size_t count,
                              uform_mesh_t *mesh, char const **message) noexcept {
    if (uform_status_t status = executor_acquire(executor, true, message)) return status;
    executor_release_t const release{executor};

    try {
        auto made = std::make_unique<uform_mesh_s>();
        made->devices = executor->devices;
        std::vector<std::size_t> host_devices(count, executor->devices.size());
        unsigned char identity[backend::mesh_identity_bytes_k] = {};
        uform_gpu_class_t gpu_class = executor->gpu_class;
        auto const deadline =
            std::chrono::steady_clock::now() + std::chrono::seconds(o.timeout_seconds ? o.timeout_seconds : 600);
        if (count == 1) {
            if (uform_status_t status = backend::mesh_identity(identity, message)) return status;
        } else {
            bootstrap_t b;
            b.index = o.host_domain_index;
            b.count = count;
            b.directory = o.directory_length ? std::string(o.directory, o.directory_length) : std::string(".");
            b.job = o.job_length ? std::string(o.job, o.job_length) : std::string("uform");
            b.deadline = deadline;
            b.devices = executor->devices;
            b.gpu_class = executor->gpu_class;
            if (uform_status_t status = bootstrap_files(b, identity, gpu_class, host_devices, message)) return status;
        }
        std::size_t first_rank = 0, world = 0;
        for (std::size_t host = 0; host != count; ++host) {
            if (host < o.host_domain_index) first_rank += host_devices[host];
            world += host_devices[host];
        }
        std::string const directory =
            o.directory_length ? std::string(o.directory, o.directory_length) : std::string(".");
        backend::mesh_join_t join{identity, o.host_domain_index, count,     first_rank,
                                  world,    made->devices,       gpu_class, deadline};
        join.directory = directory;
        join.job = o.job_length ? std::string_view(o.job, o.job_length) : std::string_view("uform");
        join.hostname =
            o.hostname_length ? std::string_view(o.hostname, o.hostname_length) : std::string_view("127.0.0.1");
        join.timeout = std::chrono::seconds(o.timeout_seconds ? o.timeout_seconds : 600);
        uform_multimem_tier_t tier = uform_multimem_tier_none_k;
        if (uform_status_t status = backend::mesh_join(join, made->backend, tier, message)) return status;
        made->description = {o.host_domain_index, count, executor->devices.size(), world, first_rank, tier, gpu_class};
        *mesh = made.release();
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory joining the mesh");
    } catch (...) {
        return fail(message, uform_status_internal_k, "joining the mesh threw");
    }
}

} // namespace

} // namespace uform

using namespace uform;

extern "C" {

uform_status_t uform_mesh_bootstrap(uform_executor_t executor, uform_mesh_options_t const *options, uform_mesh_t *mesh,
                                    char const **message) {
    if (!mesh) return fail(message, uform_status_invalid_argument_k, "the mesh out-pointer is null");
    if (!executor_valid(executor)) return fail(message, uform_status_invalid_argument_k, "the executor is null");
    if (uform_status_t status = check_training_executor(
            executor, executor->kind == executor_kind_t::ram ? executor_kind_t::ram : executor_kind_t::vram, message))
        return status;
    uform_mesh_options_t const o = options ? *options : uform_mesh_options_t{};
    std::size_t const count = o.host_domain_count ? o.host_domain_count : 1;
    if (uform_status_t status = check_mesh_options(o, count, message)) return status;
    if (executor->kind == executor_kind_t::ram) return bootstrap_ram(executor, o, count, mesh, message);
    return bootstrap_vram(executor, o, count, mesh, message);
}

uform_status_t uform_mesh_describe(uform_mesh_t mesh, uform_mesh_description_t *description, char const **message) {
    if (!mesh_valid(mesh)) return fail(message, uform_status_invalid_argument_k, "the mesh is null");
    if (!description) return fail(message, uform_status_invalid_argument_k, "the description out-pointer is null");
    *description = mesh->description;
    return uform_status_ok_k;
}

void uform_mesh_free(uform_mesh_t mesh) {
    if (!mesh_valid(mesh)) return;
    mesh_unreference(mesh); // a trainer still made over it frees it with its own free
}

} // extern "C"
