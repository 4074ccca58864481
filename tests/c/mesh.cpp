/**
 * @file mesh.cpp
 * @brief The RAM mesh's equivalence across processes: the test starts itself as the ranks of meshes on 127.0.0.1, two
 * jobs at a time sharing one scratch directory, and checks that N = 2 and 3 processes with B/N items each take the
 * same 10 steps as one process with B items, for each objective (distillation too, its teacher rows split with the
 * items) and for gathered negatives: the loss, its terms and the gradient norm equal on every rank and within 1e-4 of
 * one process's, the saved weights equal on every rank and within 1e-4 of one process's. A rank saves alone halfway
 * while the others step on. Then: a rerun of a job in the same directory, over the files of an earlier attempt that
 * died, works; a joined mesh leaves no rendezvous file behind; and two ranks in two network namespaces joined by a veth
 * pair (made here, where the test may) train as one process, so that the TCP path runs off loopback.
 *
 *   uform_test_cpp_mesh                                          # the driver
 *   uform_test_cpp_mesh rank R DIRECTORY SCENARIO [HOSTNAME]     # one rank, started by the driver
 */
#include "mesh_ranks.hpp"

#include <dirent.h>
#include <sys/stat.h>

using namespace mesh_test;

namespace {

scenario_t const scenarios_k[] = {
    {"contrastive-mesh-2", uform_objective_contrastive_k, uform_negatives_mesh_k, 2},
    {"contrastive-mesh-3", uform_objective_contrastive_k, uform_negatives_mesh_k, 3},
    {"sigmoid-mesh-3", uform_objective_contrastive_k, uform_negatives_mesh_k, 3, uform_pair_loss_form_sigmoid_k},
    {"masking-3", uform_objective_masking_k, uform_negatives_device_k, 3},
    {"late-interaction-mesh-2", uform_objective_late_interaction_k, uform_negatives_mesh_k, 2},
    {"choices-3", uform_objective_choices_k, uform_negatives_device_k, 3},
    {"joint-mesh-and-hard-2", uform_objective_joint_k, uform_negatives_mesh_and_hard_k, 2},
    {"joint-mesh-and-hard-3", uform_objective_joint_k, uform_negatives_mesh_and_hard_k, 3},
    {"distill-2", uform_objective_distill_k, uform_negatives_device_k, 2},
    {"distill-3", uform_objective_distill_k, uform_negatives_device_k, 3},
};
constexpr std::size_t scenario_count_k = sizeof(scenarios_k) / sizeof(scenarios_k[0]);

/** One rank of scenario `index`: joins, trains its share (rank 1 also saving halfway), writes records and weights. */
int rank_main(std::size_t rank, char const *directory, std::size_t index, char const *hostname) {
    if (!CHECK(index < scenario_count_k)) return test_report("mesh rank");
    scenario_t const &s = scenarios_k[index];
    uform_mesh_t mesh = NULL;
    if (!CHECK_OK(join(directory, s.name, rank, s.ranks, 60, &mesh, hostname))) return test_report("mesh rank");
    uform_mesh_description_t description;
    if (CHECK_OK(uform_mesh_describe(mesh, &description, MSG))) {
        CHECK_SIZE(description.world_devices, s.ranks);
        CHECK_SIZE(description.first_rank, rank);
        CHECK_SIZE(description.local_devices, 1);
        CHECK(description.multimem_tier == uform_multimem_tier_none_k);
    }
    std::string const base = std::string(directory) + "/" + s.name + ".rank" + std::to_string(rank);
    std::vector<record_t> records;
    std::size_t const share = world_items_k / s.ranks;
    if (train(s, mesh, rank * share, share, base + ".safetensors", rank == 1 ? base + ".mid.safetensors" : "", records))
        write_records(base + ".records", records);
    uform_mesh_free(mesh);
    return test_report("mesh rank");
}

/** Starts rank `rank` of scenario `index`: this program, under `prefix` (say `ip netns exec NAME`) when given. */
pid_t spawn_rank(char const *self, std::vector<char const *> const &prefix, std::size_t rank, char const *directory,
                 std::size_t index, char const *hostname) {
    std::string const r = std::to_string(rank), s = std::to_string(index);
    std::vector<char *> argv;
    for (char const *word : prefix) argv.push_back(const_cast<char *>(word));
    for (char const *word : {self, "rank", r.c_str(), directory, s.c_str(), hostname})
        argv.push_back(const_cast<char *>(word));
    argv.push_back(NULL);
    return spawn(argv.data());
}

/** The ranks of a scenario under way. */
struct running_t {
    std::size_t index;
    std::vector<pid_t> ranks;
};

/** Starts the ranks of scenario `index`, each under its prefix and listening at its hostname. */
running_t start(char const *self, char const *directory, std::size_t index,
                std::vector<std::vector<char const *>> const &prefixes = {},
                std::vector<char const *> const &hostnames = {}) {
    running_t running{index, {}};
    for (std::size_t rank = 0; rank != scenarios_k[index].ranks; ++rank)
        running.ranks.push_back(spawn_rank(self, rank < prefixes.size() ? prefixes[rank] : std::vector<char const *>{},
                                           rank, directory, index,
                                           rank < hostnames.size() ? hostnames[rank] : "127.0.0.1"));
    return running;
}

/** Whether `name` is a file of the rendezvous of job `job`: its ready, attempt, ack and go files or its store. */
bool rendezvous_file(std::string const &name, std::string const &job) {
    if (name.rfind(job + ".", 0) != 0) return false;
    std::string const rest = name.substr(job.size() + 1);
    for (char const *kind : {"ready.", "attempt", "ack.", "go.", "probe-"})
        if (rest.rfind(kind, 0) == 0) return true;
    return rest.size() == 32 && rest.find_first_not_of("0123456789abcdef") == std::string::npos; // the store's folder
}

/** The rendezvous files of `job` left in `directory`. */
std::size_t leftovers(char const *directory, std::string const &job) {
    std::size_t count = 0;
    DIR *dir = opendir(directory);
    if (!dir) return 0;
    for (dirent *entry; (entry = readdir(dir)) != NULL;)
        if (rendezvous_file(entry->d_name, job)) ++count;
    closedir(dir);
    return count;
}

/**
 * Waits for the ranks of a scenario, runs one process with the whole batch here, and compares: every rank's records
 * equal, within 1e-4 of one process's; every rank's weights equal, within 1e-4 of one process's; the halfway save
 * written; no rendezvous file left but the `stale` ones of an earlier attempt.
 */
void finish(running_t const &running, char const *directory, char const *what, std::size_t stale = 0) {
    scenario_t const &s = scenarios_k[running.index];
    std::string const job = std::string(directory) + "/" + s.name;
    std::vector<record_t> one;
    bool const trained = train(s, NULL, 0, world_items_k, job + ".one.safetensors", "", one);
    for (pid_t pid : running.ranks) CHECK(exited_ok(pid));
    if (!trained) return;
    write_records(job + ".one.records", one);
    std::fprintf(stderr, "mesh %s, %s: one process's loss %.6f -> %.6f\n", what, s.name, one.front().values[0],
                 one.back().values[0]);
    std::vector<std::vector<unsigned char>> saved;
    std::vector<record_t> const first = read_records(job + ".rank0.records");
    for (std::size_t rank = 0; rank != s.ranks; ++rank) {
        std::string const base = job + ".rank" + std::to_string(rank);
        std::vector<record_t> const records = read_records(base + ".records");
        if (!CHECK_SIZE(records.size(), steps_k) || !CHECK_SIZE(first.size(), steps_k)) continue;
        for (std::size_t step = 0; step != steps_k; ++step)
            for (std::size_t k = 0; k != 7; ++k) {
                CHECK(records[step].values[k] == first[step].values[k]);
                // Summed in another order, the masters round to BF16 copies that differ here and there after a few
                // steps, which moves this tiny model's terms by up to 2e-3: 1e-4 holds for the first three steps.
                double const tolerance = step < 3 ? 1e-4 : 1e-2;
                if (!CHECK(close_to(records[step].values[k], one[step].values[k], tolerance)))
                    std::fprintf(stderr, "mesh %s step %zu value %zu: rank %zu %.9g, one process %.9g\n", s.name, step,
                                 k, rank, records[step].values[k], one[step].values[k]);
            }
        std::size_t length = 0;
        unsigned char *bytes = read_whole_file((base + ".safetensors").c_str(), &length);
        if (CHECK(bytes != NULL)) saved.emplace_back(bytes, bytes + length);
        free(bytes);
    }
    CHECK(one.front().values[0] > 0 && one.back().values[5] > 0);
    // The terms the objective asks for ran: each is positive at the first step in one process.
    bool const joint = s.objective == uform_objective_joint_k;
    if (joint || s.objective == uform_objective_contrastive_k) CHECK(one.front().values[1] > 0);
    if (joint || s.objective == uform_objective_masking_k) CHECK(one.front().values[2] > 0);
    if (joint || s.objective == uform_objective_late_interaction_k) CHECK(one.front().values[3] > 0);
    if (joint || s.objective == uform_objective_choices_k) CHECK(one.front().values[4] > 0);
    if (joint || s.objective == uform_objective_distill_k) CHECK(one.front().values[6] > 0);
    for (std::vector<unsigned char> const &bytes : saved) CHECK(bytes == saved.front());
    compare_weights(job + ".rank0.safetensors", job + ".one.safetensors", tiny_path(), s.name);
    std::size_t length = 0;
    unsigned char *mid = read_whole_file((job + ".rank1.mid.safetensors").c_str(), &length);
    CHECK(mid != NULL && length > 0);
    free(mid);
    CHECK_SIZE(leftovers(directory, s.name), stale);
}

/** Every scenario, two at a time in one directory (two jobs sharing it, neither disturbing the other). */
void equivalence(char const *self, char const *directory) {
    for (std::size_t index = 0; index < scenario_count_k; index += 2) {
        running_t const first = start(self, directory, index);
        running_t const second = start(self, directory, index + 1);
        finish(first, directory, "beside another job");
        finish(second, directory, "beside another job");
    }
}

/** Writes `contents` to `path`; whether it could. */
bool plant(std::string const &path, char const *contents) {
    FILE *file = std::fopen(path.c_str(), "w");
    if (!file) return false;
    std::fputs(contents, file);
    return std::fclose(file) == 0;
}

/**
 * A rerun of the first scenario's job in the same directory, over the files an earlier attempt that died left there:
 * its ranks' tokens, an attempt listing them with its nonce, an acknowledgement and the store's folder.
 */
void rerun(char const *self, char const *directory) {
    std::string const job = std::string(directory) + "/" + scenarios_k[0].name;
    std::string const stale = "0123456789abcdef0123456789abcdef";
    CHECK(plant(job + ".ready.1", "fedcba9876543210fedcba9876543210\n"));
    CHECK(plant(job + ".attempt", ("uform-ram-mesh 1\n2\n" + stale + "\nfedcba9876543210fedcba9876543210\n").c_str()));
    CHECK(plant(job + ".ack." + stale + ".1", "ack\n"));
    CHECK(mkdir((job + "." + stale).c_str(), 0777) == 0);
    running_t const again = start(self, directory, 0);
    // The rerun's ranks replace the stale tokens and attempt, then remove them with the rest of their own files; the
    // stale acknowledgement and folder stay (a rank removes only what it wrote).
    finish(again, directory, "rerun", 2);
    std::remove((job + ".ack." + stale + ".1").c_str());
    rmdir((job + "." + stale).c_str());
}

/** Runs `argv` to completion; whether it exited with status 0. */
bool run(std::vector<char const *> words) {
    words.push_back(NULL);
    return exited_ok(spawn(const_cast<char *const *>(words.data())));
}

/**
 * Two ranks in two network namespaces joined by a veth pair, each listening at its own address, train the first
 * scenario as one process does. Needs `ip` and the privilege to make namespaces: skipped with a message otherwise.
 */
void namespaces(char const *self, char const *directory) {
    std::string const tag = std::to_string(getpid());
    std::string const ns0 = "uform-mesh-" + tag + "-0", ns1 = "uform-mesh-" + tag + "-1";
    std::string const veth0 = "ufm" + tag + "a", veth1 = "ufm" + tag + "b";
    if (!run({"ip", "netns", "add", ns0.c_str()})) {
        std::fprintf(stderr, "mesh: skipped the two-namespace test: `ip netns add` failed (no `ip`, or no privilege "
                             "to make network namespaces)\n");
        return;
    }
    bool made = run({"ip", "netns", "add", ns1.c_str()});
    made = made && run({"ip", "link", "add", veth0.c_str(), "netns", ns0.c_str(), "type", "veth", "peer", "name",
                        veth1.c_str(), "netns", ns1.c_str()});
    made = made && run({"ip", "-n", ns0.c_str(), "addr", "add", "10.213.77.1/24", "dev", veth0.c_str()});
    made = made && run({"ip", "-n", ns1.c_str(), "addr", "add", "10.213.77.2/24", "dev", veth1.c_str()});
    made = made && run({"ip", "-n", ns0.c_str(), "link", "set", veth0.c_str(), "up"});
    made = made && run({"ip", "-n", ns1.c_str(), "link", "set", veth1.c_str(), "up"});
    if (CHECK(made)) {
        running_t const ranks =
            start(self, directory, 0, {{"ip", "netns", "exec", ns0.c_str()}, {"ip", "netns", "exec", ns1.c_str()}},
                  {"10.213.77.1", "10.213.77.2"});
        finish(ranks, directory, "across two network namespaces");
    }
    run({"ip", "netns", "delete", ns1.c_str()});
    run({"ip", "netns", "delete", ns0.c_str()});
}

} // namespace

int main(int argc, char **argv) {
    if ((argc == 5 || argc == 6) && std::strcmp(argv[1], "rank") == 0)
        return rank_main(std::strtoull(argv[2], NULL, 10), argv[3], std::strtoull(argv[4], NULL, 10),
                         argc == 6 ? argv[5] : "127.0.0.1");
    if (build_is_stub()) return test_report("mesh"); // the stub joins no RAM mesh
    char directory[4096], self[4096];
    if (!CHECK(make_temp_directory(directory, sizeof(directory), "mesh")) || !CHECK(self_path(self)))
        return test_report("mesh");
    auto const begin = std::chrono::steady_clock::now();
    equivalence(self, directory);
    rerun(self, directory);
    namespaces(self, directory);
    std::fprintf(stderr, "mesh: %.1f s in all\n", seconds_since(begin));
    return report_and_clean("mesh", directory);
}
