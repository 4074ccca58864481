/**
 * @file mesh_faults.cpp
 * @brief The RAM mesh's faults, each a status within a bounded time, never a hang: a rank that never arrives
 * (`timeout` within the options' timeout); a rank killed mid-step (the other's step answers `timeout` or `io` within
 * it, its weights untouched, nothing written to the dead rank's checkpoint path); a rank hanging with its
 * connections open, before its step or inside it (`timeout`); ranks given different trainer configurations (every
 * rank `invalid-argument`, and the mesh still serves the next trainer) or different host counts (`invalid-argument`
 * on both); distilling ranks whose teacher rows differ in width, or a step with no teacher row on any rank (every rank
 * `invalid-argument`, no step counted, then a step they agree on); a directory that does not exist or cannot be
 * written (`io`, at once).
 *
 *   uform_test_cpp_mesh_faults                         # the driver
 *   uform_test_cpp_mesh_faults rank R DIRECTORY MODE   # the peer, started by the driver
 */
#include "mesh_ranks.hpp"

#include <signal.h>
#include <sys/stat.h>

using namespace mesh_test;

namespace {

/** The trainers of this file: the contrastive objective with `mesh` negatives over 2 ranks, and distillation alone. */
scenario_t const pair_k = {"faults", uform_objective_contrastive_k, uform_negatives_mesh_k, 2};
scenario_t const distill_k = {"widths", uform_objective_distill_k, uform_negatives_device_k, 2};
constexpr std::size_t share_k = world_items_k / 2;

/** A joined peer's executor and trainer. */
struct peer_t {
    uform_mesh_t mesh = NULL;
    uform_executor_t ram = NULL;
    uform_trainer_t trainer = NULL;

    /** Joins `job` as `rank` and makes a trainer of `init` (its mesh set here); whether both worked. */
    bool make(char const *directory, char const *job, std::size_t rank, std::size_t timeout,
              uform_trainer_init_ram_args_t init) {
        if (!CHECK_OK(join(directory, job, rank, 2, timeout, &mesh))) return false;
        if (!CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &ram, MSG))) return false;
        init.mesh = mesh;
        return CHECK_OK(uform_trainer_init_ram(ram, &init, &trainer, MSG));
    }
    ~peer_t() {
        if (trainer) uform_trainer_free(trainer);
        if (ram) uform_executor_free(ram);
        if (mesh) uform_mesh_free(mesh);
    }
};

/** The peer's modes. */
enum mode_t { killed_k, hung_before_k, hung_after_k, mismatch_k, count_k, widths_k };

/**
 * One rank of the distilling mesh, its share of the batch given teacher rows `narrower` values narrower than the
 * other rank's in the first step, none (on either rank) in the second: both refused on every rank; then the rows of
 * `teacher_k` on both, stepped as step 0.
 */
void distill_widths(peer_t &peer, std::size_t rank, std::size_t narrower) {
    share_t share(rank * share_k, share_k);
    uform_trainer_step_stats_t stats;
    share.teach(rank * share_k, share_k);
    share.args.teacher_width -= narrower;
    share.args.teacher_count = share_k * share.args.teacher_width;
    CHECK_STATUS(share.step(peer.trainer, peer.ram, &stats), uform_status_invalid_argument_k);
    CHECK(test_message_ && std::strstr(test_message_, "different teacher widths"));
    share.args.teacher = NULL;
    share.args.teacher_count = share.args.teacher_width = 0;
    CHECK_STATUS(share.step(peer.trainer, peer.ram, &stats), uform_status_invalid_argument_k);
    CHECK(test_message_ && std::strstr(test_message_, "nothing to learn from"));
    share.teach(rank * share_k, share_k);
    if (CHECK_OK(share.step(peer.trainer, peer.ram, &stats))) {
        CHECK_SIZE(stats.step, 0);
        CHECK(stats.distill_loss > 0);
    }
}

/** The peer, rank 1 of the driver's mesh in `mode`. */
int peer_main(char const *directory, int mode) {
    if (mode == count_k) {
        uform_mesh_t mesh = NULL;
        CHECK_STATUS(join(directory, "count", 1, 3, 10, &mesh), uform_status_invalid_argument_k);
        CHECK(test_message_ && std::strstr(test_message_, "host_domain_count"));
        return test_report("mesh peer");
    }
    if (mode == widths_k) {
        peer_t peer;
        if (peer.make(directory, "widths", 1, 10, init_of(distill_k, NULL))) distill_widths(peer, 1, 1);
        return test_report("mesh peer");
    }
    if (mode == mismatch_k) {
        // A first trainer with another learning rate: refused on this rank as on the driver's; then one that agrees.
        uform_trainer_init_ram_args_t init = init_of(pair_k, NULL);
        init.schedule.learning_rate = 2e-3f;
        peer_t peer;
        if (!CHECK_OK(join(directory, "mismatch", 1, 2, 10, &peer.mesh)) ||
            !CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &peer.ram, MSG)))
            return test_report("mesh peer");
        init.mesh = peer.mesh;
        CHECK_STATUS(uform_trainer_init_ram(peer.ram, &init, &peer.trainer, MSG), uform_status_invalid_argument_k);
        CHECK(test_message_ && std::strstr(test_message_, "schedule.learning_rate"));
        init = init_of(pair_k, peer.mesh);
        if (CHECK_OK(uform_trainer_init_ram(peer.ram, &init, &peer.trainer, MSG))) {
            share_t share(share_k, share_k);
            uform_trainer_step_stats_t stats;
            CHECK_OK(share.step(peer.trainer, peer.ram, &stats));
        }
        return test_report("mesh peer");
    }
    peer_t peer;
    char const *const job = mode == killed_k ? "killed" : mode == hung_before_k ? "hung-before" : "hung-after";
    if (!peer.make(directory, job, 1, 60, init_of(pair_k, NULL))) return test_report("mesh peer");
    std::fflush(NULL);
    if (mode == hung_before_k) sleep(60); // hangs, its connections open, until the driver kills it
    share_t share(share_k, share_k);
    // Killed: dies by SIGKILL after its forward, mid-step. Hung after: its progress handler sleeps after the backward,
    // before the gradients' sums, until the driver kills it.
    if (mode == killed_k)
        share.args.progress = [](void *, std::size_t completed, std::size_t) {
            if (completed == 1) kill(getpid(), SIGKILL);
            return false;
        };
    else
        share.args.progress = [](void *, std::size_t completed, std::size_t) {
            if (completed == 2) sleep(60);
            return false;
        };
    uform_trainer_step_stats_t stats;
    if (share.step(peer.trainer, peer.ram, &stats) == uform_status_ok_k) {
        std::string const saved = std::string(directory) + "/" + job + ".rank1.safetensors";
        uform_trainer_save(peer.trainer, peer.ram, saved.c_str(), saved.size(), NULL, MSG);
    }
    _exit(0);
}

/** Starts this program as the peer in `mode`. */
pid_t spawn_peer(char const *self, char const *directory, int mode) {
    std::string const m = std::to_string(mode);
    char *argv[] = {const_cast<char *>(self),      const_cast<char *>("rank"),    const_cast<char *>("1"),
                    const_cast<char *>(directory), const_cast<char *>(m.c_str()), NULL};
    return spawn(argv);
}

/** A rank that never arrives: `timeout` within the options' timeout (plus slack for a loaded machine: these tests
 * bound a wait, they do not time it, and CI runs them under load). */
void lonely(char const *directory) {
    for (std::size_t rank = 0; rank != 2; ++rank) {
        uform_mesh_t mesh = NULL;
        auto const start = std::chrono::steady_clock::now();
        CHECK_STATUS(join(directory, rank ? "lonely1" : "lonely0", rank, 2, 1, &mesh), uform_status_timeout_k);
        double const seconds = seconds_since(start);
        CHECK(seconds >= 1.0 && seconds < 3.5);
        CHECK(mesh == NULL);
    }
}

/** Whether the weights saved at `path` are the tiny checkpoint's, value for value. */
bool untouched(std::string const &path) {
    std::vector<tensor_t> const saved = read_tensors(path), start = read_tensors(tiny_path());
    std::size_t same = 0, compared = 0;
    for (tensor_t const &s : saved)
        for (tensor_t const &t : start)
            if (s.name == t.name && s.values.size() == t.values.size()) {
                ++compared;
                if (s.values == t.values) ++same;
            }
    std::fprintf(stderr, "mesh: %zu of %zu tensors as they started\n", same, compared);
    return compared > 0 && same == compared;
}

/**
 * A rank killed mid-step (after its forward): the other's step answers `timeout` or `io` within the options' timeout,
 * changes none of its weights (its save, which needs no peer, writes the starting ones), and the dead rank wrote
 * nothing to its checkpoint path.
 */
void killed(char const *self, char const *directory) {
    pid_t const dead = spawn_peer(self, directory, killed_k);
    peer_t peer;
    if (peer.make(directory, "killed", 0, 5, init_of(pair_k, NULL))) {
        share_t share(0, share_k);
        uform_trainer_step_stats_t stats;
        auto const start = std::chrono::steady_clock::now();
        uform_status_t const stepped = share.step(peer.trainer, peer.ram, &stats);
        double const seconds = seconds_since(start);
        std::fprintf(stderr, "mesh: a peer killed mid-step left the step %s in %.2f s\n", status_text(stepped),
                     seconds);
        CHECK(stepped == uform_status_timeout_k || stepped == uform_status_io_k);
        CHECK(seconds < 10.0);
        std::string const saved = std::string(directory) + "/killed.rank0.safetensors";
        if (CHECK_OK(uform_trainer_save(peer.trainer, peer.ram, saved.c_str(), saved.size(), NULL, MSG)))
            CHECK(untouched(saved));
    }
    int status = 0;
    CHECK(dead > 0 && waitpid(dead, &status, 0) == dead && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    struct stat entry;
    CHECK(::stat((std::string(directory) + "/killed.rank1.safetensors").c_str(), &entry) != 0);
}

/**
 * A rank that joins, makes its trainer, then hangs with its connections open: before its step, so the other waits in
 * the step's first collective, or inside it, after the backward (its progress handler sleeps), so the other waits in
 * the gradients' sums. The other's step answers `timeout` within the options' timeout (3 s, plus the step's own time
 * and slack) while the peer is still alive, and freeing the broken trainer and mesh returns promptly too.
 */
void hung(char const *self, char const *directory, int mode) {
    pid_t const peer_pid = spawn_peer(self, directory, mode);
    {
        peer_t peer;
        if (peer.make(directory, mode == hung_before_k ? "hung-before" : "hung-after", 0, 3, init_of(pair_k, NULL))) {
            share_t share(0, share_k);
            uform_trainer_step_stats_t stats;
            auto const start = std::chrono::steady_clock::now();
            uform_status_t const stepped = share.step(peer.trainer, peer.ram, &stats);
            double const seconds = seconds_since(start);
            int status = 0;
            bool const alive = peer_pid > 0 && waitpid(peer_pid, &status, WNOHANG) == 0;
            std::fprintf(stderr, "mesh: a peer hung %s: the step answered %s in %.2f s (peer %s)\n",
                         mode == hung_before_k ? "before its step" : "after its backward", status_text(stepped),
                         seconds, alive ? "still alive" : "gone");
            CHECK(alive); // a hang, not a death: the peer's connections were open throughout
            CHECK_STATUS(stepped, uform_status_timeout_k);
            CHECK(seconds >= 2.5 && seconds < 8.0);
            auto const freeing = std::chrono::steady_clock::now();
            uform_trainer_free(peer.trainer);
            uform_mesh_free(peer.mesh);
            peer.trainer = NULL;
            peer.mesh = NULL;
            double const freed = seconds_since(freeing);
            std::fprintf(stderr, "mesh: freeing the broken trainer and mesh took %.2f s\n", freed);
            CHECK(freed < 2.0);
        }
    }
    if (peer_pid > 0) {
        kill(peer_pid, SIGKILL);
        int status = 0;
        waitpid(peer_pid, &status, 0);
    }
}

/**
 * Ranks whose trainers disagree (the peer's learning rate differs): both answer `invalid-argument` naming the setting
 * at once; then trainers that agree, over the same mesh, step together.
 */
void mismatch(char const *self, char const *directory) {
    pid_t const peer_pid = spawn_peer(self, directory, mismatch_k);
    peer_t peer;
    if (CHECK_OK(join(directory, "mismatch", 0, 2, 10, &peer.mesh)) &&
        CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &peer.ram, MSG))) {
        uform_trainer_init_ram_args_t const init = init_of(pair_k, peer.mesh);
        auto const start = std::chrono::steady_clock::now();
        CHECK_STATUS(uform_trainer_init_ram(peer.ram, &init, &peer.trainer, MSG), uform_status_invalid_argument_k);
        CHECK(test_message_ && std::strstr(test_message_, "schedule.learning_rate"));
        std::fprintf(stderr, "mesh: disagreeing trainers refused in %.2f s\n", seconds_since(start));
        CHECK(seconds_since(start) < 5.0);
        if (CHECK_OK(uform_trainer_init_ram(peer.ram, &init, &peer.trainer, MSG))) {
            share_t share(0, share_k);
            uform_trainer_step_stats_t stats;
            CHECK_OK(share.step(peer.trainer, peer.ram, &stats));
        }
    }
    CHECK(exited_ok(peer_pid));
}

/** Distilling ranks whose teacher widths differ (5 here, 4 on the peer), then without any row: refused together. */
void widths(char const *self, char const *directory) {
    pid_t const peer_pid = spawn_peer(self, directory, widths_k);
    peer_t peer;
    if (peer.make(directory, "widths", 0, 10, init_of(distill_k, NULL))) distill_widths(peer, 0, 0);
    CHECK(exited_ok(peer_pid));
}

/** Ranks given different host counts (2 here, 3 on the peer): both answer `invalid-argument`, before the timeout. */
void counts(char const *self, char const *directory) {
    pid_t const peer_pid = spawn_peer(self, directory, count_k);
    uform_mesh_t mesh = NULL;
    auto const start = std::chrono::steady_clock::now();
    CHECK_STATUS(join(directory, "count", 0, 2, 10, &mesh), uform_status_invalid_argument_k);
    CHECK(test_message_ && std::strstr(test_message_, "host_domain_count"));
    CHECK(seconds_since(start) < 5.0);
    CHECK(exited_ok(peer_pid));
}

/** A directory that does not exist, or that this process cannot write in: `io`, at once (seconds, against a 60-second
 * timeout), on every rank, a one-rank mesh's included. */
void directories(char const *directory) {
    uform_mesh_t mesh = NULL;
    std::string const absent = std::string(directory) + "/absent";
    CHECK_STATUS(join(absent.c_str(), "job", 0, 2, 60, &mesh), uform_status_io_k);
    CHECK(test_message_ && std::strstr(test_message_, "directory"));
    // A directory without write permission; root writes there all the same, so it then takes a read-only one.
    std::string const locked = std::string(directory) + "/locked";
    std::string readonly = locked;
    if (CHECK(mkdir(locked.c_str(), 0555) == 0)) {
        FILE *probe = std::fopen((locked + "/probe").c_str(), "w");
        if (probe) {
            std::fclose(probe);
            readonly = "/proc/self";
        }
    }
    // Every rank of a two-rank mesh, and a one-rank mesh too, as the header promises for every mesh.
    for (std::size_t rank = 0; rank != 3; ++rank) {
        auto const start = std::chrono::steady_clock::now();
        CHECK_STATUS(join(readonly.c_str(), "job", rank % 2, rank == 2 ? 1 : 2, 60, &mesh), uform_status_io_k);
        CHECK(test_message_ && std::strstr(test_message_, "directory"));
        CHECK(seconds_since(start) < 5.0);
    }
    std::fprintf(stderr, "mesh: an unwritable directory (%s) answered io at once\n", readonly.c_str());
}

} // namespace

int main(int argc, char **argv) {
    if (argc == 5 && std::strcmp(argv[1], "rank") == 0) return peer_main(argv[3], std::atoi(argv[4]));
    if (build_is_stub()) return test_report("mesh faults"); // the stub joins no RAM mesh
    char directory[4096], self[4096];
    if (!CHECK(make_temp_directory(directory, sizeof(directory), "mesh-faults")) || !CHECK(self_path(self)))
        return test_report("mesh faults");
    lonely(directory);
    killed(self, directory);
    hung(self, directory, hung_before_k);
    hung(self, directory, hung_after_k);
    mismatch(self, directory);
    counts(self, directory);
    widths(self, directory);
    directories(directory);
    return report_and_clean("mesh faults", directory);
}
