/**
 * @file mesh_sigpipe.cpp
 * @brief A peer that dies while a survivor writes to it never kills the survivor: the survivor's step answers `io` or
 * `timeout`, as the header promises, and no SIGPIPE reaches its process. Each round starts two ranks that train a
 * seeded model with about 14 MB of gradients a step (so that a step's sums write large buckets for a while); in its
 * second step one rank kills itself at a random moment of the gradients' sums (0 to 20 ms after its backward) while
 * the other is writing to it; a third process keeps a core busy meanwhile. The driver itself writes to no socket or
 * pipe, so a signal death it reports is the library's.
 *
 *   uform_test_cpp_mesh_sigpipe [ROUNDS]                       # the driver; ROUNDS (default 50) rounds
 *   uform_test_cpp_mesh_sigpipe rank R DIRECTORY JOB DELAY      # a rank, started by the driver
 */
#include "mesh_ranks.hpp"

#include <random>
#include <thread>

#include <signal.h>

using namespace mesh_test;

namespace {

/** What the survivor's process answers the driver with. */
enum exit_t { stepped_until_refused_k = 0, failed_k = 1, never_refused_k = 2 };

/** A seeded trainer large enough that a step's gradient sums write for a while: depth 4, hidden 256, ffn 768. */
uform_trainer_init_ram_args_t large_init(uform_mesh_t mesh) {
    uform_trainer_init_ram_args_t init;
    std::memset(&init, 0, sizeof(init));
    init.mesh = mesh;
    init.depth = 4;
    init.hidden = 256;
    init.heads = 4;
    init.ffn_hidden = 768;
    init.dimensions = 64;
    init.batch.max_rows_per_device = world_items_k;
    init.batch.max_columns_per_row = 64;
    init.objective = uform_objective_contrastive_k;
    init.contrastive.negatives = uform_negatives_mesh_k;
    init.schedule.steps = 1000;
    init.seed = 11;
    return init;
}

/** The victim's moment of death: after its backward (progress 2) of its second step, `delay` microseconds later,
 * while it and the survivor exchange the gradients' buckets. */
struct death_t {
    bool armed = false;
    int delay = 0;
};

bool die_during_sums(void *context, std::size_t completed, std::size_t) {
    auto const *death = static_cast<death_t const *>(context);
    if (death->armed && completed == 2) {
        int const delay = death->delay;
        std::thread([delay] {
            std::this_thread::sleep_for(std::chrono::microseconds(delay));
            kill(getpid(), SIGKILL);
        }).detach();
    }
    return false;
}

/** A rank: joins and steps until a step fails; rank 1, the victim, kills itself in its second step's gradient sums,
 * `delay` microseconds after its backward; rank 0, the survivor, must then answer `io` or `timeout`. */
int rank_main(std::size_t rank, char const *directory, char const *job, int delay) {
    uform_mesh_t mesh = NULL;
    uform_executor_t ram = NULL;
    uform_trainer_t trainer = NULL;
    if (!CHECK_OK(join(directory, job, rank, 2, 10, &mesh)) ||
        !CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &ram, MSG)))
        return failed_k;
    uform_trainer_init_ram_args_t const init = large_init(mesh);
    if (!CHECK_OK(uform_trainer_init_ram(ram, &init, &trainer, MSG))) return failed_k;
    share_t share(rank * (world_items_k / 2), world_items_k / 2);
    death_t death;
    death.delay = delay;
    if (rank == 1) {
        share.args.progress = die_during_sums;
        share.args.progress_context = &death;
    }
    uform_trainer_step_stats_t stats;
    for (std::size_t step = 0; step != 1000; ++step) {
        uform_status_t const status = share.step(trainer, ram, &stats);
        if (status != uform_status_ok_k) {
            std::fprintf(stderr, "rank %zu: step %zu answered %s\n", rank, step, status_text(status));
            bool const promised = status == uform_status_io_k || status == uform_status_timeout_k;
            uform_trainer_free(trainer);
            uform_mesh_free(mesh);
            uform_executor_free(ram);
            return promised && rank == 0 ? stepped_until_refused_k : failed_k;
        }
        death.armed = true;
    }
    return never_refused_k;
}

/** Starts this program as `rank` of `job`. */
pid_t spawn_rank(char const *self, std::size_t rank, char const *directory, std::string const &job, int delay) {
    std::string const r = std::to_string(rank), d = std::to_string(delay);
    char *argv[] = {const_cast<char *>(self),
                    const_cast<char *>("rank"),
                    const_cast<char *>(r.c_str()),
                    const_cast<char *>(directory),
                    const_cast<char *>(job.c_str()),
                    const_cast<char *>(d.c_str()),
                    NULL};
    return spawn(argv);
}

/** Keeps a core busy until killed. */
pid_t spawn_load() {
    pid_t const pid = fork();
    if (pid == 0) {
        for (volatile std::uint64_t spin = 0;; spin = spin + 1) {
        }
    }
    return pid;
}

/** One round: both ranks step, one dies amid the gradients' sums, the survivor must answer, not die. */
void one_round(char const *self, char const *directory, std::size_t index, std::mt19937 &random) {
    std::string const job = "sigpipe-" + std::to_string(index);
    int const delay = std::uniform_int_distribution<int>(0, 20000)(random);
    pid_t const survivor = spawn_rank(self, 0, directory, job, 0), victim = spawn_rank(self, 1, directory, job, delay);
    if (!CHECK(survivor > 0 && victim > 0)) return;
    int status = 0;
    waitpid(victim, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    status = 0;
    CHECK(waitpid(survivor, &status, 0) == survivor);
    if (WIFSIGNALED(status))
        std::fprintf(stderr, "mesh: round %zu: the survivor died by signal %d (%s): the library let it through\n",
                     index, WTERMSIG(status), WTERMSIG(status) == SIGPIPE ? "SIGPIPE" : "not SIGPIPE");
    CHECK(!WIFSIGNALED(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == stepped_until_refused_k);
}

} // namespace

int main(int argc, char **argv) {
    if (argc == 6 && std::strcmp(argv[1], "rank") == 0)
        return rank_main(std::size_t(std::atoi(argv[2])), argv[3], argv[4], std::atoi(argv[5]));
    if (build_is_stub()) return test_report("mesh sigpipe"); // the stub joins no RAM mesh
    std::size_t const rounds = argc == 2 ? std::size_t(std::atol(argv[1])) : 50;
    char directory[4096], self[4096];
    if (!CHECK(make_temp_directory(directory, sizeof(directory), "mesh-sigpipe")) || !CHECK(self_path(self)))
        return test_report("mesh sigpipe");
    std::mt19937 random(2026);
    pid_t const load = spawn_load();
    auto const start = std::chrono::steady_clock::now();
    for (std::size_t index = 0; index != rounds && test_failed_ == 0; ++index)
        one_round(self, directory, index, random);
    std::fprintf(stderr, "mesh: %zu rounds of a peer killed mid-step in %.1f s\n", rounds, seconds_since(start));
    if (load > 0) {
        kill(load, SIGKILL);
        waitpid(load, NULL, 0);
    }
    return report_and_clean("mesh sigpipe", directory);
}
