// Training in a RAM-only build: the trainer and the mesh run on GPUs alone. `c/` already refuses RAM and local
// executors for training, and this build has no GPUs, so these answer `unsupported` should anything reach them.
#include "ram.hpp"

namespace uform::backend {

struct trainer_t {};
struct mesh_t {};

uform_status_t trainer_init(trainer_config_t const &, call_t &, trainer_t *&trainer, char const **message) noexcept {
    trainer = nullptr;
    return fail(message, uform_status_unsupported_k, "training runs on GPUs: this build has none");
}

void trainer_free(trainer_t *trainer) noexcept { delete trainer; }

uform_status_t trainer_step(trainer_t &, call_t &, trainer_step_t const &, uform_trainer_step_stats_t &, uform_rows_t &,
                            char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "training runs on GPUs: this build has none");
}

uform_status_t trainer_save(trainer_t &, call_t &, char const *, std::size_t, char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "training runs on GPUs: this build has none");
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
