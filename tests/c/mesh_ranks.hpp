/**
 * @file mesh_ranks.hpp
 * @brief What the mesh tests share (tests/c/mesh.cpp, tests/c/mesh_faults.cpp): a driver starts its own executable
 * again as the ranks of a mesh, each joining through a scratch directory on 127.0.0.1 (or an address of its network
 * namespace), trains a share of one batch of 12 texts, and writes its records and checkpoint for the driver to
 * compare with one process's.
 */
#pragma once

#include "common.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace mesh_test {

/** The world's items: 12 texts, bags pairing item i with item i + 6 (so that bags straddle ranks, 2 or 3 of them). */
constexpr std::size_t world_items_k = 12, steps_k = 10;

inline char const *const texts_k[world_items_k] = {"a cat sits on the mat", "the dog barks",
                                                   "rain falls in spain",   "Which is an animal? A: rock B: cat C: car",
                                                   "the sun is hot",        "boats float on water",
                                                   "a kitten on a rug",     "a puppy is loud",
                                                   "spanish weather, wet",  "Which is wet? A: rain B: sand",
                                                   "summer heat",           "a ship on the sea"};
inline std::size_t const bags_k[world_items_k] = {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5};
inline uform_late_interaction_side_t const sides_k[world_items_k] = {
    uform_late_interaction_side_query_k,    uform_late_interaction_side_query_k,
    uform_late_interaction_side_query_k,    uform_late_interaction_side_none_k,
    uform_late_interaction_side_query_k,    uform_late_interaction_side_query_k,
    uform_late_interaction_side_document_k, uform_late_interaction_side_document_k,
    uform_late_interaction_side_document_k, uform_late_interaction_side_none_k,
    uform_late_interaction_side_document_k, uform_late_interaction_side_document_k};
/** The legal bytes of each item (empty: not a choice item) and the choice items' targets, in item order. */
inline char const *const choices_k[world_items_k] = {"", "", "", "ABC", "", "", "", "", "", "AB", "", ""};
inline float const targets_k[world_items_k][3] = {{}, {}, {}, {0, 1, 0}, {}, {}, {}, {}, {}, {1, 0}, {}, {}};
/** Teacher rows of width 5, one per item; the choice items (3 and 9) have none (all-zero rows). */
constexpr std::size_t teacher_width_k = 5;
inline float const teacher_k[world_items_k][teacher_width_k] = {
    {1, 0.2f, 0, 0, 0}, {0, 1, 0.3f, 0, 0}, {0, 0, 1, 0.1f, 0},    {0, 0, 0, 0, 0},
    {0.5f, 0, 0, 1, 0}, {0, 0, 0, 0.4f, 1}, {1, 0.3f, 0.1f, 0, 0}, {0, 1, 0.2f, 0.1f, 0},
    {0.1f, 0, 1, 0, 0}, {0, 0, 0, 0, 0},    {0.6f, 0, 0, 1, 0.1f}, {0, 0.1f, 0, 0.5f, 1}};

/** Hard negatives, as pairs of world items that every split of 2 or 3 ranks keeps on one rank: a repels b. */
inline std::size_t const repels_k[3][2] = {{0, 1}, {4, 5}, {8, 9}};

/** A scenario: its name (the mesh's job), its objective and negatives, and how many ranks share the batch. */
struct scenario_t {
    char const *name;
    uform_objective_t objective;
    uform_negatives_t negatives;
    std::size_t ranks;
    uform_pair_loss_form_t form = uform_pair_loss_form_info_nce_k;
};

/** A trainer's configuration for a scenario, over `mesh` (null: one process). */
inline uform_trainer_init_ram_args_t init_of(scenario_t const &s, uform_mesh_t mesh) {
    uform_trainer_init_ram_args_t init;
    std::memset(&init, 0, sizeof(init));
    init.mesh = mesh;
    init.checkpoint = tiny_path();
    init.checkpoint_length = std::strlen(tiny_path());
    init.batch.max_rows_per_device = world_items_k;
    init.batch.max_columns_per_row = 64;
    init.objective = s.objective;
    init.contrastive.negatives = s.negatives;
    init.contrastive.form = s.form;
    // A peak rate of 1e-4, a tenth of the default: at 1e-3 the contrastive loss of this small batch falls to 7e-4
    // in ten steps, where its gradients are so small that AdamW's sign-like updates follow sums taken in another
    // order, and the weights of a mesh and of one process part by up to 1.4e-3 relative (per tensor, Frobenius).
    init.schedule.learning_rate = 1e-4f;
    init.schedule.steps = 20;
    init.schedule.warmup_steps = 1;
    init.seed = 7;
    return init;
}

/** What a run records per step: the loss, its terms (contrastive, masking, late interaction, choices), the gradient
 * norm and the distillation term. */
struct record_t {
    double values[7];
};

/** The items `first .. first + count` of the world's batch as a step's arguments, with the buffers they point into. */
struct share_t {
    test_tape_t texts, choices;
    std::vector<uform_modality_t> modalities;
    std::vector<std::size_t> repel_offsets, repel_ids;
    std::vector<float> targets;
    std::vector<std::size_t> target_offsets;
    uform_trainer_step_args_t args;

    share_t(std::size_t first, std::size_t count) : modalities(count, uform_modality_text_k) {
        tape_of(&texts, texts_k + first, count);
        tape_of(&choices, choices_k + first, count);
        // Item i's repelled neighbours, by their index in this share.
        repel_offsets.push_back(0);
        target_offsets.push_back(0);
        for (std::size_t i = first; i != first + count; ++i) {
            for (auto const &pair : repels_k)
                if (pair[0] == i) repel_ids.push_back(pair[1] - first);
            repel_offsets.push_back(repel_ids.size());
            for (std::size_t k = 0; k != std::strlen(choices_k[i]); ++k) targets.push_back(targets_k[i][k]);
            target_offsets.push_back(targets.size());
        }
        std::memset(&args, 0, sizeof(args));
        args.bags = bags_k + first;
        args.bags_count = count;
        args.sides = sides_k + first;
        args.sides_count = count;
        args.relations.repel = {
            repel_offsets.data(), repel_offsets.size(), repel_ids.data(), repel_ids.size(), NULL, 0};
        args.choices = choices.data;
        args.choices_length = choices.length;
        args.choices_offsets = choices.offsets;
        args.choices_count = count;
        args.choice_targets = targets.data();
        args.choice_targets_length = targets.size();
        args.choice_targets_offsets = target_offsets.data();
        args.choice_targets_count = count;
    }

    /** Gives the share its items' teacher rows. */
    void teach(std::size_t first, std::size_t count) {
        args.teacher = teacher_k[first];
        args.teacher_count = count * teacher_width_k;
        args.teacher_width = teacher_width_k;
    }
    share_t(share_t const &) = delete;

    /** Steps `trainer` over the share, filling `stats`. */
    uform_status_t step(uform_trainer_t trainer, uform_executor_t ram, uform_trainer_step_stats_t *stats) {
        args.stats = stats;
        return uform_trainer_step(trainer, ram, modalities.data(), texts.data, texts.length, texts.offsets, texts.count,
                                  &args, NULL, NULL, MSG);
    }
};

/**
 * Runs `steps_k` steps of scenario `s` over items `first .. first + count` of the batch and saves to `saved`; a
 * nonempty `mid` is where the trainer also saves alone after half the steps, while the other ranks step on.
 */
inline bool train(scenario_t const &s, uform_mesh_t mesh, std::size_t first, std::size_t count,
                  std::string const &saved, std::string const &mid, std::vector<record_t> &records) {
    uform_executor_t ram = NULL;
    uform_trainer_t trainer = NULL;
    if (!CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &ram, MSG))) return false;
    uform_trainer_init_ram_args_t const init = init_of(s, mesh);
    bool ok = CHECK_OK(uform_trainer_init_ram(ram, &init, &trainer, MSG));
    share_t share(first, count);
    // A trainer whose objective distils takes the teacher rows; another would refuse them.
    if (s.objective == uform_objective_joint_k || s.objective == uform_objective_distill_k) share.teach(first, count);
    for (std::size_t step = 0; ok && step != steps_k; ++step) {
        uform_trainer_step_stats_t stats;
        ok = CHECK_OK(share.step(trainer, ram, &stats));
        if (ok) {
            CHECK_SIZE(stats.items, count);
            records.push_back({{stats.loss, stats.contrastive_loss, stats.masking_loss, stats.late_interaction_loss,
                                stats.choices_loss, stats.gradient_norm, stats.distill_loss}});
        }
        if (ok && !mid.empty() && step + 1 == steps_k / 2)
            ok = CHECK_OK(uform_trainer_save(trainer, ram, mid.c_str(), mid.size(), NULL, MSG));
    }
    if (ok) ok = CHECK_OK(uform_trainer_save(trainer, ram, saved.c_str(), saved.size(), NULL, MSG));
    if (trainer) uform_trainer_free(trainer);
    uform_executor_free(ram);
    return ok;
}

/** Joins the mesh `job` in `directory` as `rank` of `ranks`, listening at `hostname`. */
inline uform_status_t join(char const *directory, char const *job, std::size_t rank, std::size_t ranks,
                           std::size_t timeout, uform_mesh_t *mesh, char const *hostname = "127.0.0.1") {
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
    options.hostname = hostname;
    options.hostname_length = std::strlen(hostname);
    uform_status_t status = uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, &ram, MSG);
    if (status == uform_status_ok_k) status = uform_mesh_bootstrap(ram, &options, mesh, MSG);
    if (ram) uform_executor_free(ram);
    return status;
}

/** Writes a rank's records, each value exactly (hexadecimal floats). */
inline void write_records(std::string const &path, std::vector<record_t> const &records) {
    FILE *file = std::fopen(path.c_str(), "w");
    if (!CHECK(file != NULL)) return;
    for (record_t const &record : records)
        for (double value : record.values) std::fprintf(file, "%a\n", value);
    std::fclose(file);
}

/** A rank's records as it wrote them. */
inline std::vector<record_t> read_records(std::string const &path) {
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
inline bool close_to(double got, double expected, double relative) {
    return std::fabs(got - expected) <= relative * std::max(std::fabs(got), std::fabs(expected));
}

/** The tensors of a safetensors file: name, dtype, and values as doubles. */
struct tensor_t {
    std::string name, dtype;
    std::vector<double> values;
};

inline std::vector<tensor_t> read_tensors(std::string const &path) {
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
 * Compares a mesh's saved weights with one process's: the Frobenius norm of the difference over all tensors within
 * 1e-4 of the weights', and each tensor's within 1e-3 of its own. Tighter does not hold after ten steps: AdamW moves
 * a weight whose gradient sums to nearly zero by the sign of sums taken in another order, a whole step either way.
 * The weights must have moved from `start` (a tenth of the values at least), so that the comparison says something.
 */
inline void compare_weights(std::string const &mesh_path, std::string const &one_path, char const *start_path,
                            char const *what) {
    std::vector<tensor_t> const mesh = read_tensors(mesh_path), one = read_tensors(one_path);
    std::vector<tensor_t> const start = read_tensors(start_path);
    if (!CHECK(!mesh.empty() && mesh.size() == one.size())) return;
    std::size_t values = 0, moved = 0, far = 0;
    double worst = 0, all_difference = 0, all_norm = 0;
    std::string worst_name;
    for (std::size_t t = 0; t != mesh.size(); ++t) {
        if (!CHECK(mesh[t].name == one[t].name && mesh[t].values.size() == one[t].values.size())) return;
        tensor_t const *initial = NULL;
        for (tensor_t const &candidate : start)
            if (candidate.name == mesh[t].name && candidate.values.size() == mesh[t].values.size())
                initial = &candidate;
        double difference = 0, norm = 0;
        for (std::size_t k = 0; k != mesh[t].values.size(); ++k) {
            double const a = mesh[t].values[k], b = one[t].values[k];
            ++values;
            if (initial && initial->values[k] != b) ++moved;
            if (!close_to(a, b, 1e-4)) ++far;
            difference += (a - b) * (a - b);
            norm += b * b;
        }
        all_difference += difference;
        all_norm += norm;
        double const relative = norm > 0 ? std::sqrt(difference / norm) : std::sqrt(difference);
        if (relative > worst) worst = relative, worst_name = mesh[t].name;
    }
    std::fprintf(stderr,
                 "mesh %s: %zu values, %zu moved from the start, %zu beyond 1e-4 of one process's one by one; the "
                 "worst tensor %s within %.2e, all tensors within %.2e\n",
                 what, values, moved, far, worst_name.c_str(), worst, std::sqrt(all_difference / all_norm));
    CHECK(std::sqrt(all_difference / all_norm) <= 1e-4);
    CHECK(worst <= 1e-3);
    CHECK(moved * 10 > values);
}

/** Starts `argv` (a program and its arguments, null-terminated); -1 when it cannot. */
inline pid_t spawn(char *const *argv) {
    pid_t pid = -1;
    if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0) return -1;
    return pid;
}

/** Waits for `pid`; whether it exited with status 0. */
inline bool exited_ok(pid_t pid) {
    int status = 0;
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/** The seconds since `start`. */
inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/** This executable's path, for starting ranks. */
inline bool self_path(char (&self)[4096]) {
    ssize_t const got = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (got <= 0) return false;
    self[got] = 0;
    return true;
}

/** Removes the scratch directory when every check passed (a failed run leaves it to look at), then reports. */
inline int report_and_clean(char const *name, char const *directory) {
    if (test_failed_ == 0) {
        std::error_code ignored;
        std::filesystem::remove_all(directory, ignored);
    }
    return test_report(name);
}

} // namespace mesh_test
