// What every backend (`stub/`, `cpp/`, later `cuda/`) provides to the ABI layer in `c/`.
//
// The ABI layer does everything a backend should not repeat: argument checks, statuses and messages,
// executors' threads, arenas, contention, the outcome table, deferred calls, cancellation bookkeeping,
// stats' timing, and publishing results. A backend only loads models and computes rows, through the
// functions below. See docs/internal-interfaces.md, "common/backend.hpp".
//
// Guarantees the ABI layer gives every function here:
// - every argument has been checked as the headers promise: tapes' offsets ascend and stay inside their
//   data, per-item arrays are present, enumerators are known, counts agree, `scalar` is resolved (never
//   `auto`) and legal for the surfaces asked for, `outputs` is nonzero and known, the model carries the
//   front-end and the heads the call needs, and the derived defaults (`max_patches`, ...) are resolved;
// - the executor and the arena the call names are held by this call alone, and the arena was rewound;
// - result structs passed by reference start empty, and are published to the caller only on success,
//   so a backend that fails midway needs no clean-up of views (the arena is rewound by the next call).
// What a backend promises in return:
// - `noexcept`: no exception escapes; statuses and static messages report every failure;
// - check `call.advance(...)`/`call.cancelled()` between units of work and answer
//   `uform_status_cancelled_k` once they say so;
// - allocate outputs only through `call.allocate*` (from the calling worker), and anything else it
//   needs per call through `call.reserve_scratch`, so that a steady loop allocates nothing.
#ifndef UFORM_COMMON_BACKEND_HPP
#define UFORM_COMMON_BACKEND_HPP

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <uform/uform.h>

#include "common/call.hpp"
#include "common/checkpoint.hpp"

namespace uform {

/// An input tape as the ABI layer checked it: item `i` spans `data[offsets[i]]` to `data[offsets[i + 1]]`.
template <typename value_type_>
struct tape_view_t {
    value_type_ const *data = nullptr;
    std::size_t const *offsets = nullptr; // `count + 1` entries, or `nullptr` when `count` is zero
    std::size_t count = 0;

    std::span<value_type_ const> item(std::size_t i) const noexcept {
        return {data + offsets[i], offsets[i + 1] - offsets[i]};
    }
    std::size_t item_size(std::size_t i) const noexcept { return offsets[i + 1] - offsets[i]; }
};

namespace backend {

/// A loaded model, a trainer and a joined mesh, as the backend holds them; opaque to `c/`.
struct model_t;
struct trainer_t;
struct mesh_t;

/// The build's residencies, as `uform_build_flavor` answers: `"stub"`, `"ram"`, `"ram,cuda"`.
char const *flavor() noexcept;

/* ---------------------------------------------------------------------------------------------------------- */
/* Hardware                                                                                                    */
/* ---------------------------------------------------------------------------------------------------------- */

/// NUMA nodes the process sees (at least one).
std::size_t numa_nodes() noexcept;
/// Whether this machine and build can dispatch as `cpu_class` (never `auto`).
bool cpu_class_available(uform_cpu_class_t cpu_class) noexcept;
/// The class `auto` resolves to on this machine.
uform_cpu_class_t cpu_class_native() noexcept;

/// Runs first on every thread an executor owns, before any work: where a backend pins the thread to
/// its NUMA node (`numa_nodes[worker % size]`, when any are named) or configures it for its kernels (such as
/// NumKong's `nk_configure_thread`). `worker` is 0 for the thread that runs deferred calls and counts from 1
/// to `workers` for the loop workers; VRAM executors' threads have `residency` VRAM and no NUMA nodes.
void worker_start(uform_residency_t residency, std::span<std::size_t const> numa_nodes, std::size_t worker,
                  std::size_t workers) noexcept;

/// The GPUs the process can drive, as `uform_gpu_devices` answers; zero without a GPU residency.
std::size_t gpu_count() noexcept;
/// Describes GPU `ordinal`, below `gpu_count()`.
void gpu_describe(std::size_t ordinal, uform_gpu_device_t &device) noexcept;
/// Whether every device of `devices` can dispatch as `gpu_class` (never `auto`).
bool gpu_class_available(uform_gpu_class_t gpu_class, std::span<std::size_t const> devices) noexcept;

/// Opens a VRAM executor's device side: one stream per device, scratch reserved as asked (zero grows
/// on demand), pinned staging. `state` receives what `call_t::device_state` hands the backend later.
uform_status_t vram_open(std::span<std::size_t const> devices, std::span<std::size_t const> scratch_bytes,
                         std::size_t pinned_bytes, void *&state, char const **message) noexcept;
/// Closes what `vram_open` opened, after every call on the executor finished.
void vram_close(void *state) noexcept;
/// Device memory for a VRAM arena on `device`, 256-byte aligned; `nullptr` when it ran out.
void *vram_allocate(std::size_t device, std::size_t bytes) noexcept;
/// Frees what `vram_allocate` answered.
void vram_free(std::size_t device, void *pointer, std::size_t bytes) noexcept;

/* ---------------------------------------------------------------------------------------------------------- */
/* Models                                                                                                      */
/* ---------------------------------------------------------------------------------------------------------- */

/// A checked load request. Exactly one of `buffer` and `path` is set.
struct model_load_t {
    uform_residency_t residency;
    void const *buffer;                     // the checkpoint's bytes, valid only during the load
    std::size_t length;                     // bytes in `buffer`
    char const *path;                       // the checkpoint's path, the OS's bytes, no NUL inside
    std::size_t path_length;                // bytes in `path`
    std::span<std::size_t const> placement; // NUMA nodes (RAM, may be empty) or device ordinals (VRAM, never empty)
    uform_cpu_class_t cpu_class;            // resolved for RAM loads, `auto` for VRAM
    uform_gpu_class_t gpu_class;            // resolved for VRAM loads, `auto` for RAM
    uform_scalar_t quantization;            // `bf16`, `e4m3` or (RAM only) `i8`
};

/// Loads the weights of a checkpoint whose header `checkpoint` the ABI layer already validated, and
/// reports progress in bytes through `call`. Answers `weight_bytes`, the bytes the weights take where they live.
uform_status_t model_load(model_load_t const &request, checkpoint_t &&checkpoint, call_t &call, model_t *&model,
                          std::size_t &weight_bytes, char const **message) noexcept;
/// Frees a model once no call reads it.
void model_free(model_t *model) noexcept;

/* ---------------------------------------------------------------------------------------------------------- */
/* Encoding                                                                                                    */
/* ---------------------------------------------------------------------------------------------------------- */

/// What every encoding verb keeps: the surfaces (known bits, nonzero) and the resolved scalar.
struct encode_request_t {
    uform_outputs_t outputs;
    uform_scalar_t scalar;
};

/// The encoding verbs. Each fills the views of the surfaces asked for in `encoded` (rows in the arena
/// through `call.allocate_rows`), the counts of `stats` (the ABI layer adds `nanoseconds`), and answers a
/// status. Progress is reported in items. Paths in a tape are the OS's bytes without a NUL inside.
uform_status_t text_encode(model_t const &model, call_t &call, tape_view_t<char> texts, encode_request_t request,
                           uform_encoded_t &encoded, uform_text_encode_stats_t &stats, char const **message) noexcept;

uform_status_t image_encode(model_t const &model, call_t &call, tape_view_t<char> paths, std::size_t max_patches,
                            std::size_t max_pixels, encode_request_t request, uform_encoded_t &encoded,
                            uform_image_encode_stats_t &stats, char const **message) noexcept;

/// Heights and widths are nonzero and the spans match `height * width * 3`, below `max_pixels`.
uform_status_t image_encode_pixels(model_t const &model, call_t &call, tape_view_t<std::uint8_t> pixels,
                                   std::size_t const *heights, std::size_t const *widths, std::size_t max_patches,
                                   encode_request_t request, uform_encoded_t &encoded,
                                   uform_image_encode_stats_t &stats, char const **message) noexcept;

uform_status_t video_encode(model_t const &model, call_t &call, tape_view_t<char> paths, std::size_t max_frames,
                            std::size_t max_patches_per_frame, encode_request_t request, uform_encoded_t &encoded,
                            uform_video_encode_stats_t &stats, char const **message) noexcept;

uform_status_t audio_encode(model_t const &model, call_t &call, tape_view_t<char> paths, std::size_t max_patches,
                            encode_request_t request, uform_encoded_t &encoded, uform_audio_encode_stats_t &stats,
                            char const **message) noexcept;

/// `sample_rate` is nonzero and every sample finite.
uform_status_t audio_encode_samples(model_t const &model, call_t &call, tape_view_t<float> samples,
                                    std::size_t sample_rate, std::size_t max_patches, encode_request_t request,
                                    uform_encoded_t &encoded, uform_audio_encode_stats_t &stats,
                                    char const **message) noexcept;

/// Scores choices: `choices` has one nonempty item of distinct bytes per text; `groups` is empty (all in
/// group 0) or one group per text, each below the model's groups. Fills `probabilities` with F32 values
/// through `call.allocate_tape`, one per choice, offsets counted from zero.
uform_status_t text_choose(model_t const &model, call_t &call, tape_view_t<char> texts, tape_view_t<char> choices,
                           std::span<std::size_t const> groups, uform_tape_t &probabilities,
                           uform_text_choose_stats_t &stats, char const **message) noexcept;

/* ---------------------------------------------------------------------------------------------------------- */
/* Training                                                                                                    */
/* ---------------------------------------------------------------------------------------------------------- */

/// A checked trainer configuration: every zero default resolved. A RAM trainer (`residency` RAM) runs on the
/// threads `call_t` lends each call, one rank of `mesh` when there is one (a process per rank, `world_devices` the
/// ranks; 1 without a mesh). A VRAM trainer runs on `devices`, across `mesh` when there is one.
struct trainer_config_t {
    uform_trainer_init_vram_args_t args; // defaults resolved, geometry fields the checkpoint's; `checkpoint` as given
    geometry_t geometry;                 // the model's: from the checkpoint, or from `args`
    checkpoint_t const *checkpoint;      // the starting checkpoint's header, or `nullptr` for seeded weights
    uform_residency_t residency;         // RAM or VRAM
    std::span<std::size_t const> numa_nodes; // RAM: the executor's NUMA nodes (may be empty); VRAM: empty
    uform_cpu_class_t cpu_class;             // RAM: resolved; VRAM: `auto`
    std::span<std::size_t const> devices;    // VRAM: this host's devices; RAM: empty
    uform_gpu_class_t gpu_class;             // VRAM: resolved; RAM: `auto`
    mesh_t *mesh;                            // the mesh of the trainer's residency, or `nullptr`
    std::size_t world_devices;               // devices (RAM: ranks) across the mesh (this host's without one)
};

/// Makes a trainer of `config`'s residency: seeded weights, or the starting checkpoint's (read from
/// `config.args.checkpoint`, whose header `config.checkpoint` the ABI layer validated), and the optimiser's state.
uform_status_t trainer_init(trainer_config_t const &config, call_t &call, trainer_t *&trainer,
                            char const **message) noexcept;
void trainer_free(trainer_t *trainer) noexcept;

/// A checked step: counts agree, edges stay inside the batch, targets are distributions.
struct trainer_step_t {
    uform_modality_t const *modalities;                   // one per item, each a front-end the trainer has
    tape_view_t<char> contents;                           // text bytes, or a media file's path
    std::span<std::size_t const> bags;                    // empty: each item in its own bag
    uform_relations_t relations;                          // each edge set empty or checked
    std::span<uform_late_interaction_side_t const> sides; // empty: none for all
    tape_view_t<char> choices;                            // `count` zero or the items'
    tape_view_t<float> choice_targets;                    // shaped as `choices`
    std::span<float const> teacher;                       // empty, or `teacher_width` finite values per item
    std::size_t teacher_width;                            // nonzero with `teacher`; all-zero rows have no teacher
};

/// Runs one step. Fills `stats` but `nanoseconds`; when `call.has_arena()`, fills `embeddings` with the
/// scored F32 embeddings, one row per item.
uform_status_t trainer_step(trainer_t &trainer, call_t &call, trainer_step_t const &step,
                            uform_trainer_step_stats_t &stats, uform_rows_t &embeddings, char const **message) noexcept;

/// A checked calibration: every item a nonempty text-and-choices pair, its text plus CHOOSE within a packed row.
struct trainer_calibrate_t {
    tape_view_t<char> texts;             // one text per held-out item
    tape_view_t<char> choices;           // one nonempty item of distinct bytes per text
    tape_view_t<float> targets;          // shaped as `choices`: finite, non-negative, summing to 1 within 1e-5
    std::span<std::size_t const> groups; // empty (all in group 0) or one per text, each below the trainer's groups
};

/// Fits the temperature of each group `groups` names over its items, the model frozen (docs/model.md "Choices",
/// docs/decisions.md "Calibration"), keeping them for `trainer_save`; other groups keep theirs. Fills `stats` but
/// `nanoseconds`. Progress is reported in items.
uform_status_t trainer_calibrate(trainer_t &trainer, call_t &call, trainer_calibrate_t const &calibrate,
                                 uform_trainer_calibrate_stats_t &stats, char const **message) noexcept;

/// Writes the trainer's weights as a checkpoint (docs/model.md) to `path` atomically (temporary, then rename).
uform_status_t trainer_save(trainer_t &trainer, call_t &call, char const *path, std::size_t path_length,
                            char const **message) noexcept;

/* ---------------------------------------------------------------------------------------------------------- */
/* The mesh                                                                                                    */
/* ---------------------------------------------------------------------------------------------------------- */

/// Bytes of the identity host 0 publishes for a run (NCCL's unique id has 128).
inline constexpr std::size_t mesh_identity_bytes_k = 128;

/// Makes a fresh identity for a run, on host 0 (NCCL's unique id where NCCL loaded, else random bytes: such a run sums
/// through host memory, `mesh_join`).
uform_status_t mesh_identity(unsigned char (&identity)[mesh_identity_bytes_k], char const **message) noexcept;

/// What the ABI layer's file bootstrap learned before the backend joins the communicator.
struct mesh_join_t {
    unsigned char const *identity; // `mesh_identity_bytes_k` bytes
    std::size_t host_index, host_count;
    std::size_t first_rank, world_devices;
    std::span<std::size_t const> devices;                     // this host's devices
    uform_gpu_class_t gpu_class;                              // the class every GPU of the run dispatches as
    std::chrono::steady_clock::time_point deadline;           // connecting past it answers `timeout`
    std::string_view directory = {}, job = {}, hostname = {}; // the hosts' Gloo rendezvous (`mesh_rendezvous_t`)
    std::chrono::milliseconds timeout{0};                     // each later collective's limit
};

/// Joins the run's communicator; every host calls it once the files say all have joined. A CUDA build's hosts first
/// meet over Gloo (`mesh_rendezvous`, one process per host), whose collectives carry the trainer's host memory; they
/// then agree on the gradients' transport: NCCL when it loaded on every host and no GPU serves two ranks, else host
/// memory staged over Gloo (then one device per host).
uform_status_t mesh_join(mesh_join_t const &join, mesh_t *&mesh, uform_multimem_tier_t &tier,
                         char const **message) noexcept;
void mesh_free(mesh_t *mesh) noexcept;

/// What a RAM mesh joins with: one rank per process (a "host" of the options), met through Gloo's file rendezvous in
/// `directory`, which exists; `job` scopes the run's files and `hostname` is the address this rank listens on.
struct mesh_rendezvous_t {
    std::string_view directory, job, hostname;
    std::size_t host_index, host_count;
    std::chrono::steady_clock::time_point deadline; // waiting for the peers past it answers `timeout`
    std::chrono::milliseconds timeout;              // each later collective's limit
};

/// Joins a RAM mesh: agrees on a fresh attempt with the other ranks through files in the directory, then connects
/// every pair over TCP. Answers `timeout` when a rank did not arrive by the deadline, `io` when the directory or a
/// connection failed, `unsupported` in builds without a RAM mesh.
uform_status_t mesh_rendezvous(mesh_rendezvous_t const &rendezvous, mesh_t *&mesh, char const **message) noexcept;

} // namespace backend
} // namespace uform

#endif // UFORM_COMMON_BACKEND_HPP
