// The RAM mesh's benchmark, two processes on 127.0.0.1 meeting in a scratch directory:
//
// - `allreduce`: the sum of a training step's gradients over the mesh as the trainer runs it (cpp/train/step.cpp,
//   `sum_gradients`: the checkpoint's tensors packed in order into 4 Mi-float buckets, each bucket summed through the
//   mesh's `sum`, then unpacked), against Gloo's own allreduce called directly on the same bucket sizes over the same
//   context: `gloo::allreduce` (the call the mesh makes, without the packing), `gloo::AllreduceRing` and
//   `gloo::AllreduceHalvingDoubling`; and one full 4 Mi-float bucket alone. Bandwidth is the bucket bytes over the
//   median time (for two ranks the bus bandwidth, 2 (n - 1) / n times it, is the same figure).
// - `step`: a training step of the checkpoint (contrastive InfoNCE, `mesh` negatives, bags of two with global ids) on
//   `--texts` texts of `--bytes` bytes: one process of two threads over all the texts, then two processes over half of
//   them each; the throughput ratio is the mesh's scaling figure (target >= 0.85). A trainer needs a RAM executor,
//   which owns one thread at least beside the caller, so a rank runs two threads at least (`--rank-threads`);
//   `--pin 1` pins rank r to CPU r, one core per process as the target means it. The share of
//   a mesh step spent communicating is estimated as the median gradient sum (the bulk of the step's traffic) over the
//   median mesh step.
//
//   uform_mesh_bench --model small.safetensors [--texts 32] [--bytes 256] [--steps 5] [--repeats 7]
//                    [--only allreduce|step] [--rank-threads 2] [--pin 0|1]
//   uform_mesh_bench rank R DIRECTORY MODE ...       # one rank, started by the driver
//
// Includes the library's internal headers ("c/handles.hpp", "cpp/backend/mesh.hpp") to reach the mesh's `sum`, which
// the public API does not expose, so it builds like uform_bench, against libuform_static.a and Gloo.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/math.h>

#include <uform/uform.h>

#include "c/handles.hpp"
#include "cpp/backend/mesh.hpp"
#include "tools/bench/arguments.hpp"
#include "tools/bench/report.hpp"

extern char **environ;

namespace {

using namespace uform::bench;

using uform::train::gradient_bucket_floats_k;

/// What the command line chose.
struct options_t {
    std::string model, only;
    std::size_t texts = 32, bytes = 256, steps = 5, repeats = 7, rank_threads = 2;
    bool pin = false;
};

/// The element counts of the checkpoint's tensors, in the order of their bytes in the file.
std::vector<std::size_t> tensor_sizes(std::string const &path) {
    std::vector<std::pair<unsigned long long, std::size_t>> found;
    std::FILE *file = std::fopen(path.c_str(), "rb");
    if (!file) return {};
    std::uint64_t header = 0;
    std::string json;
    if (std::fread(&header, 8, 1, file) == 1 && header < (std::uint64_t(1) << 30)) {
        json.resize(header);
        if (std::fread(json.data(), 1, header, file) != header) json.clear();
    }
    std::fclose(file);
    for (std::size_t at = 0; (at = json.find("\"shape\"", at)) != std::string::npos; ++at) {
        std::size_t const open = json.find('[', at), close = json.find(']', open);
        std::size_t count = 1;
        for (std::size_t k = open + 1; k < close;) {
            count *= std::strtoull(json.c_str() + k, nullptr, 10);
            std::size_t const comma = json.find(',', k);
            k = comma == std::string::npos ? close : comma + 1;
        }
        std::size_t const offsets = json.find("\"data_offsets\"", at);
        std::size_t const end_of_entry = json.find('}', at);
        unsigned long long begin = 0;
        if (offsets < end_of_entry) std::sscanf(json.c_str() + json.find('[', offsets), "[%llu", &begin);
        found.push_back({begin, count});
    }
    std::sort(found.begin(), found.end());
    std::vector<std::size_t> sizes;
    for (auto const &[begin, count] : found) sizes.push_back(count);
    return sizes;
}

/// The buckets `sum_gradients` sums for tensors of `sizes`: packed in order, a tensor larger than a bucket alone.
std::vector<std::size_t> bucket_sizes(std::vector<std::size_t> const &sizes) {
    std::vector<std::size_t> buckets;
    std::size_t filled = 0;
    for (std::size_t size : sizes) {
        if (size > gradient_bucket_floats_k) {
            if (filled) buckets.push_back(filled);
            buckets.push_back(size), filled = 0;
            continue;
        }
        if (filled + size > gradient_bucket_floats_k) buckets.push_back(filled), filled = 0;
        filled += size;
    }
    if (filled) buckets.push_back(filled);
    return buckets;
}

/// Joins the two-rank mesh of `job` in `directory` over a RAM executor of one thread, freed after.
uform_mesh_t join(char const *directory, char const *job, std::size_t rank) {
    uform_executor_t ram = nullptr;
    uform_mesh_t mesh = nullptr;
    char const *message = "";
    uform_mesh_options_t options{};
    options.host_domain_index = rank;
    options.host_domain_count = 2;
    options.directory = directory;
    options.directory_length = std::strlen(directory);
    options.job = job;
    options.job_length = std::strlen(job);
    options.timeout_seconds = 120;
    options.hostname = "127.0.0.1";
    options.hostname_length = 9;
    uform_status_t status = uform_executor_init_ram(nullptr, 0, uform_cpu_class_auto_k, 1, &ram, &message);
    if (status == uform_status_ok_k) status = uform_mesh_bootstrap(ram, &options, &mesh, &message);
    if (status != uform_status_ok_k) std::fprintf(stderr, "rank %zu cannot join: %s\n", rank, message);
    uform_executor_free(ram);
    return mesh;
}

/// Writes one number to `path`, for the driver.
void write_result(std::string const &path, double value) {
    if (std::FILE *file = std::fopen(path.c_str(), "w")) {
        std::fprintf(file, "%.9g\n", value);
        std::fclose(file);
    }
}

/// The number `write_result` wrote; 0 when missing.
double read_result(std::string const &path) {
    double value = 0;
    if (std::FILE *file = std::fopen(path.c_str(), "r")) {
        if (std::fscanf(file, "%lf", &value) != 1) value = 0;
        std::fclose(file);
    }
    return value;
}

/// Prints a bandwidth record from the times of `repeats` runs over `floats` floats.
void print_bandwidth(char const *name, std::size_t buckets, std::size_t floats, std::vector<double> const &seconds) {
    double const time = median(seconds), bytes = double(floats) * sizeof(float);
    record_t(name)
        .number("buckets", double(buckets))
        .number("floats", double(floats))
        .number("ms_median", time * 1e3)
        .number("ms_min", *std::min_element(seconds.begin(), seconds.end()) * 1e3)
        .number("gb_per_s", bytes / time / 1e9)
        .print(false);
}

/// The seconds of each timed sum of `allreduce`, one per repeat: all gradients by the trainer's buckets, by Gloo's
/// allreduce, ring and halving-doubling over the same buckets, and one 4 Mi-float bucket by the mesh and by Gloo.
struct sum_times_t {
    std::vector<double> trainer_all, gloo_all, ring_all, halving_all, trainer_one, gloo_one;
};

/// Prints a bandwidth record per timed sum: `buckets` buckets of `total` floats, or the one bucket.
void print_sum_times(sum_times_t const &times, std::size_t buckets, std::size_t total) {
    print_bandwidth("uform_step_buckets", buckets, total, times.trainer_all);
    print_bandwidth("gloo_allreduce_buckets", buckets, total, times.gloo_all);
    print_bandwidth("gloo_ring_buckets", buckets, total, times.ring_all);
    print_bandwidth("gloo_halving_doubling_buckets", buckets, total, times.halving_all);
    print_bandwidth("uform_sum_4Mi", 1, gradient_bucket_floats_k, times.trainer_one);
    print_bandwidth("gloo_allreduce_4Mi", 1, gradient_bucket_floats_k, times.gloo_one);
}

/// Gloo's own ways to sum the same buckets, each over a buffer of its own per bucket (filled with `value`): the
/// allreduce collective, and the ring and halving-doubling algorithms built once.
struct gloo_paths_t {
    std::shared_ptr<gloo::Context> context;
    std::chrono::milliseconds timeout;
    std::vector<std::vector<float>> direct;
    std::vector<std::unique_ptr<gloo::Algorithm>> rings, halvings;

    gloo_paths_t(std::shared_ptr<gloo::Context> const &on, std::chrono::milliseconds limit,
                 std::vector<std::size_t> const &buckets, float value)
        : context(on), timeout(limit) {
        for (std::size_t size : buckets) direct.emplace_back(size, value);
        for (std::vector<float> &values : direct) {
            rings.push_back(std::make_unique<gloo::AllreduceRing<float>>(context, std::vector<float *>{values.data()},
                                                                         int(values.size())));
            halvings.push_back(std::make_unique<gloo::AllreduceHalvingDoubling<float>>(
                context, std::vector<float *>{values.data()}, int(values.size())));
        }
    }

    /// Sums `values` over the ranks by Gloo's allreduce collective.
    void allreduce(std::vector<float> &values) const {
        gloo::AllreduceOptions o(context);
        o.setOutput(values.data(), values.size());
        o.setReduceFunction(static_cast<void (*)(void *, void const *, void const *, std::size_t)>(&gloo::sum<float>));
        o.setTimeout(timeout);
        gloo::allreduce(o);
    }
};

/// Times `repeats` rounds of every sum into `times`, the ranks starting each sum together: `trainer_path` (the
/// trainer's buckets, which clears its own flag on failure), Gloo's three ways, and one bucket both ways. False when a
/// sum of the mesh failed (`message` says why).
template <typename trainer_path_t>
bool time_sums(uform::backend::mesh_t &mesh, std::size_t repeats, trainer_path_t &&trainer_path,
               gloo_paths_t &gloo_paths, sum_times_t &times, char const **message) {
    bool ok = true;
    auto timed = [&](std::vector<double> &into, auto &&work) {
        float one = 0;
        ok = ok && mesh.sum(std::span<float>(&one, 1), message) == uform_status_ok_k; // the ranks start together
        double const start = wall_now();
        work();
        into.push_back(wall_now() - start);
    };
    std::vector<float> single(gradient_bucket_floats_k, 1.0f);
    for (std::size_t repeat = 0; ok && repeat != repeats; ++repeat) {
        timed(times.trainer_all, trainer_path);
        timed(times.gloo_all, [&] {
            for (std::vector<float> &values : gloo_paths.direct) gloo_paths.allreduce(values);
        });
        timed(times.ring_all, [&] {
            for (auto &ring : gloo_paths.rings) ring->run();
        });
        timed(times.halving_all, [&] {
            for (auto &halving : gloo_paths.halvings) halving->run();
        });
        timed(times.trainer_one, [&] { ok = ok && mesh.sum(std::span<float>(single), message) == uform_status_ok_k; });
        timed(times.gloo_one, [&] { gloo_paths.allreduce(single); });
    }
    return ok;
}

/// One rank of `allreduce`: times the trainer's bucket path and Gloo's allreduces on the same sizes.
int rank_allreduce(std::size_t rank, char const *directory, options_t const &options) {
    uform_mesh_t handle = join(directory, "allreduce", rank);
    if (!handle) return 1;
    uform::backend::mesh_t &mesh = *handle->backend;
    std::shared_ptr<gloo::Context> const &context = mesh.context;
    std::vector<std::size_t> const sizes = tensor_sizes(options.model), buckets = bucket_sizes(sizes);
    std::size_t total = 0;
    for (std::size_t size : sizes) total += size;
    if (sizes.empty()) {
        std::fprintf(stderr, "cannot read the tensors of %s\n", options.model.c_str());
        return 1;
    }
    // The trainer's gradients, one vector per tensor, and a bucket; Gloo's buffers, one per bucket.
    std::vector<std::vector<float>> grads;
    for (std::size_t size : sizes) grads.emplace_back(size, float(rank + 1));
    std::vector<float> bucket(gradient_bucket_floats_k);
    gloo_paths_t gloo_paths(context, mesh.timeout, buckets, float(rank + 1));
    char const *message = "";
    bool ok = true;

    // The trainer's path, as `sum_gradients` runs it.
    auto trainer_path = [&] {
        auto grad_of = [&](std::size_t t) noexcept { return std::span<float>(grads[t]); };
        ok = ok && uform::train::sum_in_buckets(mesh, grads.size(), grad_of, std::span<float>(bucket), &message) ==
                       uform_status_ok_k;
    };
    // A check first: every rank's first sum of the values r + 1 is 3.
    trainer_path();
    gloo_paths.allreduce(gloo_paths.direct[0]);
    ok = ok && grads.front().front() == 3.0f && grads.back().back() == 3.0f && gloo_paths.direct[0][0] == 3.0f;
    if (!ok) {
        std::fprintf(stderr, "rank %zu: the first sums are wrong or failed: %s\n", rank, message);
        return 1;
    }
    sum_times_t times;
    ok = time_sums(mesh, options.repeats, trainer_path, gloo_paths, times, &message) && ok;
    if (!ok) {
        std::fprintf(stderr, "rank %zu: a sum failed: %s\n", rank, message);
        return 1;
    }
    if (rank == 0) {
        record_t("gradients")
            .number("tensors", double(sizes.size()))
            .number("floats", double(total))
            .number("buckets", double(buckets.size()))
            .number("repeats", double(options.repeats))
            .print(false);
        print_sum_times(times, buckets.size(), total);
        write_result(std::string(directory) + "/gradient_sum.seconds", median(times.trainer_all));
    }
    uform_mesh_free(handle);
    return 0;
}

/// The world's texts `first` to `first + count`, each `bytes` printable bytes drawn by its index, two to a bag.
struct step_texts_t {
    std::string contents;
    std::vector<std::size_t> offsets{0}, bags;
    std::vector<uform_modality_t> modalities;

    step_texts_t(std::size_t first, std::size_t count, std::size_t bytes) {
        for (std::size_t i = first; i != first + count; ++i) {
            for (std::size_t k = i * bytes; k != (i + 1) * bytes; ++k)
                contents.push_back(char(32 + splitmix64(k) % 95));
            offsets.push_back(contents.size());
            bags.push_back(i / 2);
            modalities.push_back(uform_modality_text_k);
        }
    }
};

/// Times `options.steps` steps after a warm-up over `count` of the world's texts from `first`, on `threads` threads,
/// over `mesh` (or none); writes the median wall-clock seconds to `result`.
int run_steps(options_t const &options, uform_mesh_t mesh, std::size_t first, std::size_t count, std::size_t threads,
              std::string const &result, char const *name) {
    char const *message = "";
    uform_executor_t executor = nullptr;
    if (threads > 1 && uform_executor_init_ram(nullptr, 0, uform_cpu_class_auto_k, threads - 1, &executor, &message)) {
        std::fprintf(stderr, "%s: cannot make an executor: %s\n", name, message);
        return 1;
    }
    uform_trainer_init_ram_args_t init{};
    init.mesh = mesh;
    init.checkpoint = options.model.data();
    init.checkpoint_length = options.model.size();
    init.objective = uform_objective_contrastive_k;
    init.contrastive.form = uform_pair_loss_form_info_nce_k;
    init.contrastive.negatives = uform_negatives_mesh_k; // one process: the device's items, as train_bench's
    init.batch.max_rows_per_device = count;
    init.batch.max_segments_per_device = count;
    init.batch.max_columns_per_row = options.bytes;
    init.batch.max_bags_per_device = count; // bag ids are global: up to texts / 2, not below the rank's count
    uform_trainer_t trainer = nullptr;
    bool ok = uform_trainer_init_ram(executor, &init, &trainer, &message) == uform_status_ok_k;
    if (!ok) std::fprintf(stderr, "%s: cannot make a trainer: %s\n", name, message);
    step_texts_t const texts(first, count, options.bytes);
    auto const &[contents, offsets, bags, modalities] = texts;
    uform_trainer_step_stats_t stats{};
    uform_trainer_step_args_t args{};
    args.bags = bags.data();
    args.bags_count = bags.size();
    args.stats = &stats;
    std::vector<double> wall;
    for (std::size_t step = 0; ok && step <= options.steps; ++step) {
        double const start = wall_now();
        ok = uform_trainer_step(trainer, executor, modalities.data(), contents.data(), contents.size(), offsets.data(),
                                count, &args, nullptr, nullptr, &message) == uform_status_ok_k;
        if (!ok) std::fprintf(stderr, "%s: step %zu failed: %s\n", name, step, message);
        if (step) wall.push_back(wall_now() - start);
    }
    if (ok) {
        double const seconds = median(wall);
        record_t(name)
            .number("threads", double(threads))
            .number("texts", double(count))
            .number("seconds_per_step", seconds)
            .number("seconds_min", *std::min_element(wall.begin(), wall.end()))
            .number("world_tokens_per_s", double(options.texts * options.bytes) / seconds)
            .number("loss_last", stats.loss)
            .number("gradient_norm_last", stats.gradient_norm)
            .print(false);
        write_result(result, seconds);
    }
    if (trainer) uform_trainer_free(trainer);
    uform_executor_free(executor);
    return ok ? 0 : 1;
}

/// Reads the command line from `argv[from]` into `options`; false when the bench should exit with `exit_code`
/// (`--help`, or an error already on standard error).
bool parse(int argc, char **argv, int from, options_t &options, int &exit_code) {
    arguments_t arguments("uform_mesh_bench", "[rank R DIRECTORY MODE]");
    arguments.text("--model", options.model, "the checkpoint whose geometry the trainers take (required)")
        .custom("--only", "allreduce|step", "one of the two parts",
                [&options](std::string const &value) { options.only = value; })
        .count("--texts", options.texts, "texts a step over both ranks (a multiple of 4)")
        .count("--bytes", options.bytes, "bytes a text")
        .count("--steps", options.steps, "steps timed")
        .count("--repeats", options.repeats, "sums timed per median")
        .count("--rank-threads", options.rank_threads, "threads a rank, the caller's included (2 at least)", 2)
        .custom("--pin", "0|1", "1 pins rank r to CPU r",
                [&options](std::string const &value) { options.pin = value == "1"; });
    if (!arguments.parse(argc, argv, exit_code, from)) return false;
    if (options.model.empty()) std::fprintf(stderr, "needs --model PATH\n");
    if (options.texts % 4) std::fprintf(stderr, "--texts must be a multiple of 4: two ranks of bags of two\n");
    exit_code = 2;
    return !options.model.empty() && options.texts % 4 == 0;
}

/// Starts this program as rank `rank` of `mode`, passing the flags on; waits for both ranks when given two.
bool spawn_ranks(char const *self, char const *directory, char const *mode, int argc, char **argv) {
    pid_t pids[2] = {-1, -1};
    for (std::size_t rank = 0; rank != 2; ++rank) {
        std::string const r = std::to_string(rank);
        std::vector<char *> args = {const_cast<char *>(self), const_cast<char *>("rank"), const_cast<char *>(r.c_str()),
                                    const_cast<char *>(directory), const_cast<char *>(mode)};
        for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
        args.push_back(nullptr);
        if (posix_spawn(&pids[rank], self, nullptr, nullptr, args.data(), environ) != 0) pids[rank] = -1;
    }
    bool ok = true;
    for (pid_t pid : pids) {
        int status = 0;
        ok = pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 && ok;
    }
    return ok;
}

/// The `step` part: one process, then two ranks, over the same texts; prints their scaling (and the gradients' share
/// when the `allreduce` part ran first).
bool run_step_part(char *self, char *directory, int argc, char **argv) {
    pid_t pid = -1;
    std::vector<char *> args = {self, const_cast<char *>("rank"), const_cast<char *>("0"), directory,
                                const_cast<char *>("single")};
    for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
    args.push_back(nullptr);
    int status = 0;
    bool ok = posix_spawn(&pid, self, nullptr, nullptr, args.data(), environ) == 0 && waitpid(pid, &status, 0) == pid &&
              WIFEXITED(status) && WEXITSTATUS(status) == 0;
    ok = spawn_ranks(self, directory, "step", argc, argv) && ok;
    double const one = read_result(std::string(directory) + "/single.seconds");
    double const mesh = std::max(read_result(std::string(directory) + "/mesh0.seconds"),
                                 read_result(std::string(directory) + "/mesh1.seconds"));
    double const sum = read_result(std::string(directory) + "/gradient_sum.seconds");
    if (one > 0 && mesh > 0) {
        record_t scaling("scaling");
        scaling.number("one_process_s", one).number("two_processes_s", mesh).number("throughput_ratio", one / mesh);
        if (sum > 0) scaling.number("gradient_sum_s", sum).number("communication_share", sum / mesh);
        scaling.print(false);
    }
    return ok;
}

} // namespace

int main(int argc, char **argv) {
    options_t options;
    if (argc >= 5 && std::strcmp(argv[1], "rank") == 0) {
        std::size_t const rank = std::strtoull(argv[2], nullptr, 10);
        if (int exit_code = 0; !parse(argc, argv, 5, options, exit_code)) return exit_code;
        std::string const mode = argv[4], directory = argv[3];
        if (mode == "allreduce") return rank_allreduce(rank, argv[3], options);
        if (mode == "single") // the one process, its own process as the ranks are
            return run_steps(options, nullptr, 0, options.texts, 2, directory + "/single.seconds", "one_process");
        if (options.pin) { // rank r on CPU r: one core per process, its threads sharing it
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(int(rank), &set);
            if (sched_setaffinity(0, sizeof(set), &set) != 0) std::fprintf(stderr, "rank %zu: cannot pin\n", rank);
        }
        uform_mesh_t mesh = join(argv[3], "step", rank);
        if (!mesh) return 1;
        std::size_t const half = options.texts / 2;
        int const code = run_steps(options, mesh, rank * half, half, options.rank_threads,
                                   directory + "/mesh" + argv[2] + ".seconds", rank ? "mesh_rank1" : "mesh_rank0");
        uform_mesh_free(mesh);
        return code;
    }
    if (int exit_code = 0; !parse(argc, argv, 1, options, exit_code)) return exit_code;
    char self[4096];
    ssize_t const got = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (got <= 0) return 1;
    self[got] = 0;
    char directory[] = "/tmp/uform-mesh-bench-XXXXXX";
    if (!mkdtemp(directory)) return 1;
    record_t("machine").number("hardware_threads", std::thread::hardware_concurrency()).print(false);
    bool ok = true;
    if (options.only.empty() || options.only == "allreduce") {
        std::fflush(stdout);
        ok = spawn_ranks(self, directory, "allreduce", argc, argv) && ok;
    }
    if (options.only.empty() || options.only == "step") {
        std::fflush(stdout);
        ok = run_step_part(self, directory, argc, argv) && ok;
    }
    std::string const remove = std::string("rm -rf ") + directory;
    if (std::system(remove.c_str()) != 0) ok = false;
    return ok ? 0 : 1;
}
