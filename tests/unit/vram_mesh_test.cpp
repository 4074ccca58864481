// The VRAM trainer over a mesh on a machine with a GPU (scripts/gpu-check.sh --train runs it; without a device it says
// so and exits 77, which ctest reports as skipped), through the C ABI, as tests/c/mesh.cpp checks the RAM mesh:
// - two processes on GPU 0 join a VRAM mesh (a GPU serving two hosts: the host-staged path over Gloo), each trains 6 of
//   the RAM mesh test's 12 texts (InfoNCE over the mesh's negatives, 10 steps), and their saved weights are equal, and
//   within the RAM mesh test's bounds of one VRAM process trained on all 12 (compare_weights: 1e-4 over all tensors,
//   1e-3 per tensor);
// - one process joins a one-host VRAM mesh (over NCCL where it loaded: the single-rank NCCL path, its sums on a stream
//   of their own overlapping the backward) and trains the 12 texts: its weights within the same bounds of the process
//   without a mesh.
//
//   uform_unit_vram_mesh_test                         # the driver
//   uform_unit_vram_mesh_test rank R DIRECTORY        # one rank of the staged mesh, started by the driver
#include <cuda_runtime_api.h>

#include "tests/c/mesh_ranks.hpp"

#include <cstdlib>

using namespace mesh_test;

namespace {

constexpr int skip_k = 77;
scenario_t const scenario_k{"vram-contrastive-mesh", uform_objective_contrastive_k, uform_negatives_mesh_k, 2};

/** A VRAM executor on GPU 0. */
uform_executor_t gpu_executor() {
    std::size_t const device = 0;
    uform_executor_t executor = NULL;
    CHECK_OK(uform_executor_init_vram(&device, 1, uform_gpu_class_auto_k, NULL, 0, NULL, NULL, 0, 0, &executor, MSG));
    return executor;
}

/** Joins the VRAM mesh `job` in `directory` as `rank` of `ranks` over `executor`. */
uform_status_t join_vram(uform_executor_t executor, char const *directory, char const *job, std::size_t rank,
                         std::size_t ranks, uform_mesh_t *mesh) {
    uform_mesh_options_t options;
    std::memset(&options, 0, sizeof(options));
    options.host_domain_index = rank;
    options.host_domain_count = ranks;
    options.directory = directory;
    options.directory_length = std::strlen(directory);
    options.job = job;
    options.job_length = std::strlen(job);
    options.timeout_seconds = 120;
    return uform_mesh_bootstrap(executor, &options, mesh, MSG);
}

/** Trains items `first .. first + count` on GPU 0 (over `mesh` when given) for `steps_k` steps and saves to `saved`. */
bool train_vram(uform_executor_t executor, uform_mesh_t mesh, std::size_t first, std::size_t count,
                std::string const &saved) {
    uform_trainer_t trainer = NULL;
    uform_trainer_init_vram_args_t const init = init_of(scenario_k, mesh);
    bool ok = CHECK_OK(uform_trainer_init_vram(executor, &init, &trainer, MSG));
    share_t share(first, count);
    for (std::size_t step = 0; ok && step != steps_k; ++step) {
        uform_trainer_step_stats_t stats;
        ok = CHECK_OK(share.step(trainer, executor, &stats));
    }
    if (ok) ok = CHECK_OK(uform_trainer_save(trainer, executor, saved.c_str(), saved.size(), NULL, MSG));
    if (trainer) uform_trainer_free(trainer);
    return ok;
}

/** One rank of the staged mesh: joins over GPU 0, trains its 6 items, saves. */
int rank_main(std::size_t rank, char const *directory) {
    uform_executor_t executor = gpu_executor();
    uform_mesh_t mesh = NULL;
    if (executor && CHECK_OK(join_vram(executor, directory, scenario_k.name, rank, 2, &mesh))) {
        uform_mesh_description_t description;
        if (CHECK_OK(uform_mesh_describe(mesh, &description, MSG))) {
            CHECK_SIZE(description.world_devices, 2);
            CHECK_SIZE(description.first_rank, rank);
        }
        std::string const saved = std::string(directory) + "/rank" + std::to_string(rank) + ".safetensors";
        train_vram(executor, mesh, rank * 6, 6, saved);
        uform_mesh_free(mesh);
    }
    if (executor) uform_executor_free(executor);
    return test_report("vram mesh rank");
}

bool same_file(std::string const &a, std::string const &b) {
    std::size_t la = 0, lb = 0;
    unsigned char *x = read_whole_file(a.c_str(), &la), *y = read_whole_file(b.c_str(), &lb);
    bool const same = x && y && la == lb && std::memcmp(x, y, la) == 0;
    free(x), free(y);
    return same;
}

} // namespace

int main(int argc, char **argv) {
    if (argc == 4 && std::strcmp(argv[1], "rank") == 0) return rank_main(std::strtoull(argv[2], NULL, 10), argv[3]);
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("skipped: no CUDA device here\n");
        return skip_k;
    }
    char directory[] = "/tmp/uform-vram-mesh-XXXXXX";
    char self[4096];
    if (!CHECK(::mkdtemp(directory) != NULL) || !CHECK(self_path(self))) return test_report("vram mesh");
    std::string const base = directory;
    std::vector<pid_t> ranks;
    for (std::size_t rank = 0; rank != 2; ++rank) {
        std::string const r = std::to_string(rank);
        char *argv_rank[] = {self, const_cast<char *>("rank"), const_cast<char *>(r.c_str()), directory, NULL};
        ranks.push_back(spawn(argv_rank));
    }
    uform_executor_t executor = gpu_executor();
    bool const alone = executor && train_vram(executor, NULL, 0, world_items_k, base + "/one.safetensors");
    for (pid_t pid : ranks) CHECK(exited_ok(pid));
    if (alone) {
        CHECK(same_file(base + "/rank0.safetensors", base + "/rank1.safetensors"));
        compare_weights(base + "/rank0.safetensors", base + "/one.safetensors", tiny_path(),
                        "staged: 2 processes on one GPU vs 1");
    }
    uform_mesh_t mesh = NULL;
    if (executor && CHECK_OK(join_vram(executor, directory, "vram-one", 0, 1, &mesh))) {
        if (CHECK(train_vram(executor, mesh, 0, world_items_k, base + "/mesh-one.safetensors")) && alone)
            compare_weights(base + "/mesh-one.safetensors", base + "/one.safetensors", tiny_path(),
                            "a one-rank mesh (NCCL where it loaded) vs no mesh");
        uform_mesh_free(mesh);
    }
    if (executor) uform_executor_free(executor);
    return report_and_clean("vram mesh", directory);
}
