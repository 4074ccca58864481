// The mesh on WASI, where Gloo is not built and no sockets or threads exist: every way of joining one answers
// `unsupported`, so a trainer there trains alone. The other builds join in mesh.cpp.
#if defined(__wasi__)

#include "common/fail.hpp"
#include "cpp/backend/mesh.hpp"

namespace uform::backend {

uform_status_t mesh_rendezvous(mesh_rendezvous_t const &, mesh_t *&mesh, char const **message) noexcept {
    mesh = nullptr;
    return fail(message, uform_status_unsupported_k, "a mesh needs Gloo, which the WASI build lacks");
}

uform_status_t mesh_identity(unsigned char (&)[mesh_identity_bytes_k], char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "a VRAM mesh joins GPUs: this build has none");
}

uform_status_t mesh_join(mesh_join_t const &, mesh_t *&mesh, uform_multimem_tier_t &, char const **message) noexcept {
    mesh = nullptr;
    return fail(message, uform_status_unsupported_k, "a VRAM mesh joins GPUs: this build has none");
}

void mesh_free(mesh_t *mesh) noexcept { delete mesh; }

} // namespace uform::backend

#endif // defined(__wasi__)
