// Training in a RAM build: the ABI layer hands RAM trainers here; VRAM trainers and the mesh need GPUs, which this
// build has none of. The RAM trainer's numerics (cpp/train/) fill `trainer_init`, `trainer_step`,
// `trainer_calibrate` and `trainer_save`; until they do, each answers `unsupported`.
#include "ram.hpp"

namespace uform::backend {

struct trainer_t {};
struct mesh_t {};

uform_status_t trainer_init(trainer_config_t const &config, call_t &, trainer_t *&trainer,
                            char const **message) noexcept {
    trainer = nullptr;
    if (config.residency == uform_residency_vram_k)
        return fail(message, uform_status_unsupported_k, "a VRAM trainer runs on GPUs: this build has none");
    return fail(message, uform_status_unsupported_k, "the RAM trainer is not built yet");
}

void trainer_free(trainer_t *trainer) noexcept { delete trainer; }

uform_status_t trainer_step(trainer_t &, call_t &, trainer_step_t const &, uform_trainer_step_stats_t &, uform_rows_t &,
                            char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "the RAM trainer is not built yet");
}

uform_status_t trainer_calibrate(trainer_t &, call_t &, trainer_calibrate_t const &, uform_trainer_calibrate_stats_t &,
                                 char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "the RAM trainer is not built yet");
}

uform_status_t trainer_save(trainer_t &, call_t &, char const *, std::size_t, char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "the RAM trainer is not built yet");
}

uform_status_t mesh_identity(unsigned char (&)[mesh_identity_bytes_k], char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "a mesh joins GPUs: this build has none");
}

uform_status_t mesh_join(mesh_join_t const &, mesh_t *&mesh, uform_multimem_tier_t &, char const **message) noexcept {
    mesh = nullptr;
    return fail(message, uform_status_unsupported_k, "a mesh joins GPUs: this build has none");
}

void mesh_free(mesh_t *mesh) noexcept { delete mesh; }

} // namespace uform::backend
