/**
 * @file mesh.cpp
 * @brief The RAM mesh across processes: the test starts itself twice as the two ranks of a mesh on 127.0.0.1,
 * sharing a scratch directory, and checks that two processes with B/2 items each take the same steps as one process
 * with B items (the loss and gradient norm equal on both ranks and within 1e-4 of one process's, the saved weights
 * equal on both ranks and within 1e-4 of one process's), for the contrastive objective with `mesh` negatives and for
 * the joint objective with `mesh-and-hard`; then that a rank that never arrives answers `timeout` within the
 * options' timeout, that a rank dying mid-run leaves the other's step `timeout` or `io` within it, that a rank hanging
 * with its connections open leaves the other's step `timeout` within it, and that a directory that does not exist
 * answers `io`.
 *
 *   uform_test_cpp_mesh                              # the driver
 *   uform_test_cpp_mesh rank R DIRECTORY SCENARIO    # one rank, started by the driver
 */
#include "common.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace {

constexpr std::size_t world_items_k = 8, steps_k = 3;

/** The batch: 8 texts, bags pairing item i with item i + 4 (so every pair straddles the two ranks). */
char const *const texts_k[world_items_k] = {"a cat sits on the mat", "the dog barks",     "rain falls in spain",
                                            "two plus two is four",  "a kitten on a rug", "a puppy is loud",
                                            "spanish weather, wet",  "arithmetic: 2+2=4"};
std::size_t const bags_k[world_items_k] = {0, 1, 2, 3, 0, 1, 2, 3};
uform_late_interaction_side_t const sides_k[world_items_k] = {
    uform_late_interaction_side_query_k,    uform_late_interaction_side_query_k,
    uform_late_interaction_side_query_k,    uform_late_interaction_side_none_k,
    uform_late_interaction_side_document_k, uform_late_interaction_side_document_k,
    uform_late_interaction_side_document_k, uform_late_interaction_side_document_k};

/** A scenario: 0, the contrastive objective with `mesh` negatives; 1, the joint one with `mesh-and-hard`. */
uform_trainer_init_ram_args_t init_of(int scenario, uform_mesh_t mesh) {
    uform_trainer_init_ram_args_t init;
    std::memset(&init, 0, sizeof(init));
    init.mesh = mesh;
    init.checkpoint = tiny_path();
    init.checkpoint_length = std::strlen(tiny_path());
    init.batch.max_rows_per_device = world_items_k;
    init.batch.max_columns_per_row = 64;
    init.objective = scenario == 0 ? uform_objective_contrastive_k : uform_objective_joint_k;
    init.contrastive.negatives = scenario == 0 ? uform_negatives_mesh_k : uform_negatives_mesh_and_hard_k;
    // The default peak rate, 1e-3. At 1e-2 the first steps, sign-like under AdamW, flip the BF16 copies of different
    // weights in the two runs, and the weights drift apart by up to 1.4e-3 relative (Frobenius, per tensor) in three
    // steps from sums in another order alone; at 1e-3 the saved weights match to the bit on this batch.
    init.schedule.steps = 10;
    init.schedule.warmup_steps = 1;
    init.seed = 7;
    return init;
}

/** What a run records per step: the loss, its terms and the gradient norm. */
struct record_t {
    double values[6];
};

/** Runs `steps_k` steps over items `first .. first + count` of the batch, saving to `saved`. */
bool train(int scenario, uform_mesh_t mesh, std::size_t first, std::size_t count, char const *saved,
           std::vector<record_t> &records) {
    uform_executor_t ram = NULL;
    uform_trainer_t trainer = NULL;
    if (!CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &ram, MSG))) return false;
    uform_trainer_init_ram_args_t const init = init_of(scenario, mesh);
    bool ok = CHECK_OK(uform_trainer_init_ram(ram, &init, &trainer, MSG));
    test_tape_t tape;
    tape_of(&tape, texts_k + first, count);
    std::vector<uform_modality_t> modalities(count, uform_modality_text_k);
    // One hard negative per rank's half: its first item repels its second (item indices of the rank's step).
    std::size_t const offsets[5] = {0, 1, 1, 1, 1}, ids[1] = {1};
    std::vector<std::size_t> world_offsets;
    std::vector<std::size_t> world_ids;
    uform_edges_t repel{};
    if (count == world_items_k) {
        world_offsets = {0, 1, 1, 1, 1, 2, 2, 2, 2};
        world_ids = {1, 5};
        repel = {world_offsets.data(), world_offsets.size(), world_ids.data(), world_ids.size(), NULL, 0};
    } else {
        repel = {offsets, 5, ids, 1, NULL, 0};
    }
    for (std::size_t step = 0; ok && step != steps_k; ++step) {
        uform_trainer_step_stats_t stats;
        uform_trainer_step_args_t args;
        std::memset(&args, 0, sizeof(args));
        args.bags = bags_k + first;
        args.bags_count = count;
        if (scenario == 1) {
            args.sides = sides_k + first;
            args.sides_count = count;
            args.relations.repel = repel;
        }
        args.stats = &stats;
        ok = CHECK_OK(uform_trainer_step(trainer, ram, modalities.data(), tape.data, tape.length, tape.offsets,
                                         tape.count, &args, NULL, NULL, MSG));
        if (ok) {
            CHECK_SIZE(stats.items, count);
            records.push_back({{stats.loss, stats.contrastive_loss, stats.masking_loss, stats.late_interaction_loss,
                                stats.choices_loss, stats.gradient_norm}});
        }
    }
    if (ok) ok = CHECK_OK(uform_trainer_save(trainer, ram, saved, std::strlen(saved), NULL, MSG));
    if (trainer) uform_trainer_free(trainer);
    uform_executor_free(ram);
    return ok;
}

/** Joins the mesh of the ranks of `scenario` in `directory`. */
uform_status_t join(char const *directory, char const *job, std::size_t rank, std::size_t ranks, std::size_t timeout,
                    uform_mesh_t *mesh) {
    uform_executor_t ram = NULL;
    uform_mesh_options_t options;
    std::memset(&options, 0, sizeof(options));
    options.host_domain_index = rank;
    options.host_domain_count = ranks;
    options.directory = directory;
    options.directory_length = std::strlen(directory);
    options.job = job;
    options.job_length = std::strlen(job);
    options.timeout_seconds = timeout;
    options.hostname = "127.0.0.1";
    options.hostname_length = 9;
    uform_status_t status = uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &ram, MSG);
    if (status == uform_status_ok_k) status = uform_mesh_bootstrap(ram, &options, mesh, MSG);
    if (ram) uform_executor_free(ram);
    return status;
}

/** One rank of a scenario: joins, trains its half, writes its records and checkpoint. Scenario 2: joins, makes its
 * trainer, and dies before the first step. Scenario 3: joins, makes its trainer, and hangs (sleeps, its connections
 * open) instead of stepping, until the driver kills it. */
int rank_main(std::size_t rank, char const *directory, int scenario) {
    std::string const job = "scenario" + std::to_string(scenario);
    uform_mesh_t mesh = NULL;
    if (!CHECK_OK(join(directory, job.c_str(), rank, 2, 60, &mesh))) return test_report("mesh rank");
    if (scenario >= 2) {
        uform_executor_t ram = NULL;
        uform_trainer_t trainer = NULL;
        uform_trainer_init_ram_args_t const init = init_of(0, mesh);
        if (CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &ram, MSG)))
            CHECK_OK(uform_trainer_init_ram(ram, &init, &trainer, MSG));
        std::fflush(NULL);
        if (scenario == 3) sleep(60); // hangs, its connections open, until the driver kills it
        if (scenario == 4 && trainer) {
            // Steps its half, its progress handler hanging after the backward, before the gradients' sums.
            test_tape_t tape;
            tape_of(&tape, texts_k + world_items_k / 2, world_items_k / 2);
            std::vector<uform_modality_t> const modalities(world_items_k / 2, uform_modality_text_k);
            uform_trainer_step_args_t args;
            std::memset(&args, 0, sizeof(args));
            args.bags = bags_k + world_items_k / 2;
            args.bags_count = world_items_k / 2;
            args.progress = [](void *, std::size_t completed, std::size_t) {
                if (completed == 2) sleep(60); // until the driver kills it
                return false;
            };
            uform_trainer_step(trainer, ram, modalities.data(), tape.data, tape.length, tape.offsets, tape.count, &args,
                               NULL, NULL, MSG);
        }
        _exit(0);
    }
    uform_mesh_description_t description;
    if (CHECK_OK(uform_mesh_describe(mesh, &description, MSG))) {
        CHECK_SIZE(description.world_devices, 2);
        CHECK_SIZE(description.first_rank, rank);
        CHECK_SIZE(description.local_devices, 1);
    }
    std::string const base = std::string(directory) + "/" + job + ".rank" + std::to_string(rank);
    std::vector<record_t> records;
    std::size_t const half = world_items_k / 2;
    if (train(scenario, mesh, rank * half, half, (base + ".safetensors").c_str(), records)) {
        FILE *file = std::fopen((base + ".records").c_str(), "w");
        for (record_t const &record : records)
            for (double value : record.values) std::fprintf(file, "%a\n", value);
        std::fclose(file);
    }
    uform_mesh_free(mesh);
    return test_report("mesh rank");
}

/** A rank's records as it wrote them. */
std::vector<record_t> read_records(std::string const &path) {
    std::vector<record_t> records;
    FILE *file = std::fopen(path.c_str(), "r");
    if (!file) return records;
    record_t record;
    for (bool more = true; more;) {
        for (double &value : record.values) more = more && std::fscanf(file, "%la", &value) == 1;
        if (more) records.push_back(record);
    }
    std::fclose(file);
    return records;
}

/** Whether two values agree within `relative` of the larger (two zeros agree). */
bool close_to(double got, double expected, double relative) {
    return std::fabs(got - expected) <= relative * std::max(std::fabs(got), std::fabs(expected));
}

/** The tensors of a safetensors file: name, dtype, and values as doubles. */
struct tensor_t {
    std::string name, dtype;
    std::vector<double> values;
};

std::vector<tensor_t> read_tensors(std::string const &path) {
    std::vector<tensor_t> tensors;
    std::size_t length = 0;
    unsigned char *bytes = read_whole_file(path.c_str(), &length);
    if (!bytes || length < 8) return free(bytes), tensors;
    std::uint64_t header = 0;
    std::memcpy(&header, bytes, 8);
    std::string const json(reinterpret_cast<char const *>(bytes) + 8, header);
    unsigned char const *data = bytes + 8 + header;
    for (std::size_t at = 0; (at = json.find("\"dtype\"", at)) != std::string::npos; ++at) {
        std::size_t const name_end = json.rfind("\":{", at), name_begin = json.rfind('"', name_end - 1) + 1;
        tensor_t t;
        t.name = json.substr(name_begin, name_end - name_begin);
        std::size_t const dtype = json.find('"', at + 8) + 1;
        t.dtype = json.substr(dtype, json.find('"', dtype) - dtype);
        std::size_t const offsets = json.find("\"data_offsets\"", at);
        unsigned long long begin = 0, end = 0;
        std::sscanf(json.c_str() + json.find('[', offsets), "[%llu,%llu]", &begin, &end);
        for (std::size_t k = begin; k < end; k += t.dtype == "BF16" ? 2 : 4) {
            if (t.dtype == "BF16") {
                std::uint16_t bits;
                std::memcpy(&bits, data + k, 2);
                t.values.push_back(f32_from_bf16(bits));
            } else {
                float value;
                std::memcpy(&value, data + k, 4);
                t.values.push_back(value);
            }
        }
        tensors.push_back(std::move(t));
    }
    free(bytes);
    return tensors;
}

/**
 * Compares a mesh's saved weights with one process's: every value within 1e-4 relative. The weights must have moved
 * from the starting checkpoint (a tenth of the values at least), so that the comparison says something.
 */
void compare_weights(std::string const &mesh_path, std::string const &one_path) {
    std::vector<tensor_t> const mesh = read_tensors(mesh_path), one = read_tensors(one_path);
    std::vector<tensor_t> const start = read_tensors(tiny_path());
    if (!CHECK(!mesh.empty() && mesh.size() == one.size())) return;
    std::size_t values = 0, far = 0, moved = 0;
    for (std::size_t t = 0; t != mesh.size(); ++t) {
        if (!CHECK(mesh[t].name == one[t].name && mesh[t].values.size() == one[t].values.size())) return;
        tensor_t const *initial = NULL;
        for (tensor_t const &candidate : start)
            if (candidate.name == mesh[t].name && candidate.values.size() == mesh[t].values.size())
                initial = &candidate;
        for (std::size_t k = 0; k != mesh[t].values.size(); ++k) {
            double const a = mesh[t].values[k], b = one[t].values[k];
            ++values;
            if (initial && initial->values[k] != b) ++moved;
            if (!close_to(a, b, 1e-4)) ++far;
        }
    }
    std::fprintf(stderr, "mesh: %zu values, %zu moved from the start, %zu beyond 1e-4 of one process's\n", values,
                 moved, far);
    CHECK(far == 0);
    CHECK(moved * 10 > values);
}

/** Starts this program as rank `rank` of `scenario`. */
pid_t spawn_rank(char const *self, std::size_t rank, char const *directory, int scenario) {
    std::string const r = std::to_string(rank), s = std::to_string(scenario);
    char *argv[] = {const_cast<char *>(self),      const_cast<char *>("rank"),    const_cast<char *>(r.c_str()),
                    const_cast<char *>(directory), const_cast<char *>(s.c_str()), NULL};
    pid_t pid = -1;
    if (posix_spawn(&pid, self, NULL, NULL, argv, environ) != 0) return -1;
    return pid;
}

/** Runs a scenario: the two ranks as processes, one process with the whole batch here, then compares. */
void scenario(char const *self, char const *directory, int scenario) {
    pid_t const ranks[2] = {spawn_rank(self, 0, directory, scenario), spawn_rank(self, 1, directory, scenario)};
    std::vector<record_t> one;
    std::string const job = std::string(directory) + "/scenario" + std::to_string(scenario);
    bool const trained = train(scenario, NULL, 0, world_items_k, (job + ".one.safetensors").c_str(), one);
    for (pid_t pid : ranks) {
        int status = 0;
        if (!CHECK(pid > 0 && waitpid(pid, &status, 0) == pid)) continue;
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    if (!trained) return;
    std::vector<record_t> const rank0 = read_records(job + ".rank0.records"),
                                rank1 = read_records(job + ".rank1.records");
    if (!CHECK_SIZE(rank0.size(), steps_k) || !CHECK_SIZE(rank1.size(), steps_k)) return;
    for (std::size_t step = 0; step != steps_k; ++step)
        for (std::size_t k = 0; k != 6; ++k) {
            CHECK(rank0[step].values[k] == rank1[step].values[k]);
            if (!CHECK(close_to(rank0[step].values[k], one[step].values[k], 1e-4)))
                std::fprintf(stderr, "scenario %d step %zu value %zu: mesh %.9g, one process %.9g\n", scenario, step, k,
                             rank0[step].values[k], one[step].values[k]);
        }
    CHECK(one[0].values[0] > 0 && one[steps_k - 1].values[5] > 0);
    if (scenario == 1) CHECK(one[0].values[2] > 0 && one[0].values[3] > 0); // masking and late interaction ran
    // Both ranks saved the same weights, byte for byte; they agree with one process's.
    std::size_t length0 = 0, length1 = 0;
    unsigned char *saved0 = read_whole_file((job + ".rank0.safetensors").c_str(), &length0);
    unsigned char *saved1 = read_whole_file((job + ".rank1.safetensors").c_str(), &length1);
    CHECK(saved0 && saved1 && length0 == length1 && std::memcmp(saved0, saved1, length0) == 0);
    free(saved0);
    free(saved1);
    compare_weights(job + ".rank0.safetensors", job + ".one.safetensors");
}

/** A rank that never arrives: `timeout` within the options' timeout (plus a second's slack). */
void lonely(char const *directory) {
    for (std::size_t rank = 0; rank != 2; ++rank) {
        uform_mesh_t mesh = NULL;
        auto const start = std::chrono::steady_clock::now();
        CHECK_STATUS(join(directory, rank ? "lonely1" : "lonely0", rank, 2, 1, &mesh), uform_status_timeout_k);
        double const seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        CHECK(seconds >= 1.0 && seconds < 2.0);
        CHECK(mesh == NULL);
    }
}

/** A rank that dies after joining: the other's step answers `timeout` or `io` within the options' timeout. */
void killed(char const *self, char const *directory) {
    pid_t const peer = spawn_rank(self, 1, directory, 2);
    uform_mesh_t mesh = NULL;
    uform_executor_t ram = NULL;
    uform_trainer_t trainer = NULL;
    if (CHECK_OK(join(directory, "scenario2", 0, 2, 5, &mesh)) &&
        CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &ram, MSG))) {
        uform_trainer_init_ram_args_t const init = init_of(0, mesh);
        if (CHECK_OK(uform_trainer_init_ram(ram, &init, &trainer, MSG))) {
            int status = 0;
            CHECK(peer > 0 && waitpid(peer, &status, 0) == peer);
            test_tape_t tape;
            tape_of(&tape, texts_k, world_items_k / 2);
            uform_modality_t const modalities[4] = {uform_modality_text_k, uform_modality_text_k, uform_modality_text_k,
                                                    uform_modality_text_k};
            auto const start = std::chrono::steady_clock::now();
            uform_status_t const stepped = uform_trainer_step(trainer, ram, modalities, tape.data, tape.length,
                                                              tape.offsets, tape.count, NULL, NULL, NULL, MSG);
            double const seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            std::fprintf(stderr, "mesh: a dead peer's step answered %s in %.2f s\n", status_text(stepped), seconds);
            CHECK(stepped == uform_status_timeout_k || stepped == uform_status_io_k);
            CHECK(seconds < 6.0);
            uform_trainer_free(trainer);
        }
    }
    if (ram) uform_executor_free(ram);
    if (mesh) uform_mesh_free(mesh);
}

/**
 * A rank that joins, makes its trainer, then hangs with its connections open: before its step (scenario 3), so the
 * other waits in the step's first collective, or inside it, after the backward (scenario 4: its progress handler
 * sleeps), so the other waits in the gradients' sums. The other's step answers `timeout` within the options' timeout
 * (3 s, plus the tiny step's own time and slack) while the peer is still alive, and freeing the broken trainer and
 * mesh returns promptly too.
 */
void hung(char const *self, char const *directory, int scenario) {
    pid_t const peer = spawn_rank(self, 1, directory, scenario);
    uform_mesh_t mesh = NULL;
    uform_executor_t ram = NULL;
    uform_trainer_t trainer = NULL;
    std::string const job = "scenario" + std::to_string(scenario);
    if (CHECK_OK(join(directory, job.c_str(), 0, 2, 3, &mesh)) &&
        CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &ram, MSG))) {
        uform_trainer_init_ram_args_t const init = init_of(0, mesh);
        if (CHECK_OK(uform_trainer_init_ram(ram, &init, &trainer, MSG))) {
            test_tape_t tape;
            tape_of(&tape, texts_k, world_items_k / 2);
            uform_modality_t const modalities[4] = {uform_modality_text_k, uform_modality_text_k, uform_modality_text_k,
                                                    uform_modality_text_k};
            auto const start = std::chrono::steady_clock::now();
            uform_trainer_step_args_t args;
            std::memset(&args, 0, sizeof(args));
            args.bags = bags_k;
            args.bags_count = world_items_k / 2;
            uform_status_t const stepped = uform_trainer_step(trainer, ram, modalities, tape.data, tape.length,
                                                              tape.offsets, tape.count, &args, NULL, NULL, MSG);
            double const seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            int status = 0;
            bool const alive = peer > 0 && waitpid(peer, &status, WNOHANG) == 0;
            std::fprintf(stderr, "mesh: a peer hung %s: the step answered %s in %.2f s (peer %s)\n",
                         scenario == 3 ? "before its step" : "after its backward", status_text(stepped), seconds,
                         alive ? "still alive" : "gone");
            CHECK(alive); // a hang, not a death: the peer's connections were open throughout
            CHECK_STATUS(stepped, uform_status_timeout_k);
            CHECK(seconds >= 2.5 && seconds < 5.0);
            auto const freeing = std::chrono::steady_clock::now();
            uform_trainer_free(trainer);
            uform_mesh_free(mesh);
            mesh = NULL;
            double const freed = std::chrono::duration<double>(std::chrono::steady_clock::now() - freeing).count();
            std::fprintf(stderr, "mesh: freeing the broken trainer and mesh took %.2f s\n", freed);
            CHECK(freed < 1.0);
        }
    }
    if (peer > 0) {
        kill(peer, SIGKILL);
        int status = 0;
        waitpid(peer, &status, 0);
    }
    if (ram) uform_executor_free(ram);
    if (mesh) uform_mesh_free(mesh);
}

/** A directory that does not exist: `io`, at once. */
void missing(char const *directory) {
    uform_mesh_t mesh = NULL;
    std::string const absent = std::string(directory) + "/absent";
    CHECK_STATUS(join(absent.c_str(), "job", 0, 2, 60, &mesh), uform_status_io_k);
    CHECK(test_message_ && std::strstr(test_message_, "directory"));
}

} // namespace

int main(int argc, char **argv) {
    if (argc == 5 && std::strcmp(argv[1], "rank") == 0)
        return rank_main(std::strtoull(argv[2], NULL, 10), argv[3], std::atoi(argv[4]));
    if (build_is_stub()) return test_report("mesh"); // the stub joins no RAM mesh
    char directory[4096];
    if (!CHECK(make_temp_directory(directory, sizeof(directory), "mesh"))) return test_report("mesh");
    char self[4096];
    ssize_t const got = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (!CHECK(got > 0)) return test_report("mesh");
    self[got] = 0;
    scenario(self, directory, 0);
    scenario(self, directory, 1);
    lonely(directory);
    killed(self, directory);
    hung(self, directory, 3);
    hung(self, directory, 4);
    missing(directory);
    return test_report("mesh");
}
