// The RAM residency's training step through the public C API (with `--profile`, also the trainer core behind it):
// one full step of the trainer (forward, contrastive InfoNCE over bags of two, backward, gradient clipping, AdamW) on
// a batch of texts, timed as the median wall-clock and process CPU time of the steps after one warm-up step, in tokens
// per second, with the peak resident set. Not a test: tools/bench/train_compare.py runs it beside PyTorch
// (tools/bench/train_worker.py) on the same step.
//
//   uform_train_bench --model small.safetensors [--texts 32] [--bytes 256] [--threads 2] [--steps 3] [--vram]
//                     [--profile] [--json]
//
// Texts are printable bytes `32 + splitmix64(k) % 95` for the k-th byte of the batch (as uform_bench and the PyTorch
// workers write them); items 2k and 2k + 1 share bag k, every other item of the step is a negative (`device`). The
// trainer starts from the checkpoint with the default schedule, its batch shape sized to the step (one text per row of
// `--bytes` columns). N threads (at least 2) are a RAM executor owning N - 1 threads, whose loops the calling thread
// joins. The last record, `rss`, holds the process's peak resident set and
// the peak from the first step on (VmHWM after resetting it through /proc/self/clear_refs).
//
// The `ceiling` record is the limit of the path the trainer's products take on this machine (`path`: AMX tiles on the
// Sapphire Rapids class where the OS grants them, `vdpbf16ps` pairs on Genoa and Turin, else the F32 FMA; see
// tools/bench/ceilings.hpp), measured here before the steps on each of `--threads` threads, per-thread CPU-time rates
// summed. The `train` record sets the step's product work beside it: `product_flops` counts the
// trunk's GEMMs (2 flops a multiply-add; the forward once, the backward's input and weight gradients twice) and the
// attention's score and value products over each text (the backward recomputing the scores, then the values', the
// probabilities' and the queries' and keys' gradients: 2.5 times the forward's two products), so `ceiling_seconds` is
// the shortest step the products alone allow on this machine; `percent_ceiling` is the step's product rate over
// wall-clock time against the ceiling, `percent_ceiling_cpu` over the process's CPU time against a thread's share of it
// (less distorted by other tenants of a shared machine).
//
// With `--vram` (a CUDA build on a machine with a GPU) the trainer is `uform_trainer_init_vram`'s on a VRAM executor
// of GPU 0 (the CUDA trainer, cuda/train/), the CPU ceiling is not measured (`ceiling` and the percentages are zero),
// and scripts/gpu-check.sh --train sets `product_gflops_per_s` beside the GPU's BF16 rate and PyTorch CUDA's step.
//
// With `--profile` the `profile` record follows `rss`: the same steps on a trainer core built here (cpp/train/step.hpp,
// the schedule's documented defaults) with its phases timed (cpp/train/phases.hpp), each phase's process CPU time a
// step and its share of the step's, and the forward's and backward's products' efficiency against the path's ceiling
// per thread (`percent_path_cpu`). `forward` holds `forward_linears` and `forward_attention`, `backward` (the trunk's)
// `backward_linears` (gate and up recomputed included) and `backward_attention`; `other` is the step outside every
// phase.
//
// The small checkpoint comes from `python3 tools/checkpoint/write_checkpoint.py --geometry small --out PATH`.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>
#include <time.h>

#include <uform/uform.h>

#include "common/checkpoint.hpp"
#include "cpp/train/step.hpp"
#include "tools/bench/arguments.hpp"
#include "tools/bench/ceilings.hpp"
#include "tools/bench/pool.hpp"
#include "tools/bench/report.hpp"

namespace {

using namespace uform::bench;
namespace train = uform::train;
namespace ram = uform::ram;

/// Seconds of CPU time of the whole process, every thread's.
double process_cpu_now() {
    timespec now;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return double(now.tv_sec) + double(now.tv_nsec) * 1e-9;
}

/// Resets the resident set's high-water mark (VmHWM) to the current resident set; Linux only, else a no-op.
void reset_peak_rss() {
    if (std::FILE *refs = std::fopen("/proc/self/clear_refs", "w")) {
        std::fputs("5", refs);
        std::fclose(refs);
    }
}

/// The resident set's high-water mark in MiB since the process began or since `reset_peak_rss`; 0 where unknown.
double peak_rss_since_reset_mib() {
    std::FILE *status = std::fopen("/proc/self/status", "r");
    if (!status) return 0;
    char line[256];
    double kib = 0;
    while (std::fgets(line, sizeof line, status))
        if (std::sscanf(line, "VmHWM: %lf kB", &kib) == 1) break;
    std::fclose(status);
    return kib / 1024;
}

/// The forward's product flops of one step of `texts` texts of `bytes` bytes on the checkpoint's geometry: the
/// trunk's linears (q, k, v and out; gate, up and down) and attention's two products, each token over its text.
struct step_flops_t {
    double linears = 0, attention = 0;

    step_flops_t(uform_model_description_t const &d, std::size_t texts, std::size_t bytes) {
        double const tokens = double(texts * bytes), h = double(d.hidden), f = double(d.ffn_hidden);
        linears = double(d.depth) * 2 * tokens * (4 * h * h + 3 * h * f);
        attention = double(d.depth) * 2 * 2 * tokens * double(bytes) * h;
    }
    /// The backward's: each linear's input and weight gradients; attention's scores recomputed and its four
    /// gradient products.
    double backward_linears() const noexcept { return 2 * linears; }
    double backward_attention() const noexcept { return 2.5 * attention; }
    /// The whole step's (the file comment).
    double total() const noexcept { return linears + attention + backward_linears() + backward_attention(); }
};

/// What the command line chose.
struct options_t {
    std::string model;
    std::size_t texts = 32, bytes = 256, threads = 2, steps = 3;
    bool json = false, vram = false, profile = false;
};

/// The step's inputs: the texts as a tape, their modalities and their bags.
struct batch_t {
    std::string contents;
    std::vector<std::size_t> offsets{0}, bags;
    std::vector<uform_modality_t> modalities;

    /// `count` texts of `length` bytes, byte k of the batch `32 + splitmix64(k) % 95`; items 2k and 2k + 1 in bag k.
    batch_t(std::size_t count, std::size_t length) {
        for (std::size_t k = 0; k != count * length; ++k) contents.push_back(char(32 + splitmix64(k) % 95));
        for (std::size_t i = 0; i != count; ++i) {
            offsets.push_back((i + 1) * length);
            bags.push_back(i / 2);
            modalities.push_back(uform_modality_text_k);
        }
    }
};

/// The trainer's knobs: the checkpoint, contrastive InfoNCE with the device's items as negatives, the batch shape
/// sized to the step, every other field at its default.
uform_trainer_init_ram_args_t trainer_args(options_t const &options) {
    uform_trainer_init_ram_args_t args{};
    args.checkpoint = options.model.data();
    args.checkpoint_length = options.model.size();
    args.objective = uform_objective_contrastive_k;
    args.contrastive.form = uform_pair_loss_form_info_nce_k;
    args.contrastive.negatives = uform_negatives_device_k;
    args.batch.max_rows_per_device = options.texts;
    args.batch.max_segments_per_device = options.texts;
    args.batch.max_columns_per_row = options.bytes;
    args.batch.max_bags_per_device = options.texts / 2;
    return args;
}

/// Times `steps` steps after a warm-up step and prints the `train` record; false with a message on standard error
/// on a failure.
bool bench_steps(options_t const &options, uform_trainer_t trainer, uform_executor_t executor, double flops,
                 double ceiling) {
    batch_t const batch(options.texts, options.bytes);
    uform_trainer_step_stats_t stats{};
    uform_trainer_step_args_t args{};
    args.bags = batch.bags.data();
    args.bags_count = batch.bags.size();
    args.stats = &stats;
    std::vector<double> wall, cpu;
    float first_loss = 0;
    reset_peak_rss();
    for (std::size_t step = 0; step <= options.steps; ++step) {
        char const *message = "";
        double const wall_start = wall_now(), cpu_start = process_cpu_now();
        uform_status_t const status =
            uform_trainer_step(trainer, executor, batch.modalities.data(), batch.contents.data(), batch.contents.size(),
                               batch.offsets.data(), options.texts, &args, nullptr, nullptr, &message);
        double const wall_seconds = wall_now() - wall_start, cpu_seconds = process_cpu_now() - cpu_start;
        if (status != uform_status_ok_k) {
            std::fprintf(stderr, "step %zu failed (%s): %s\n", step, uform_status_name(status), message);
            return false;
        }
        if (step == 0) first_loss = stats.loss; // the first step warms up
        else {
            wall.push_back(wall_seconds);
            cpu.push_back(cpu_seconds);
        }
    }
    double const seconds = median(wall), tokens = double(options.texts * options.bytes);
    record_t("train")
        .number("threads", double(options.threads))
        .number("texts", double(options.texts))
        .number("bytes", double(options.bytes))
        .number("tokens", double(stats.tokens))
        .number("seconds_per_step", seconds)
        .number("cpu_seconds_per_step", median(cpu))
        .number("tokens_per_s", tokens / seconds)
        .number("loss_first", first_loss)
        .number("loss_last", stats.loss)
        .number("gradient_norm_last", stats.gradient_norm)
        .number("product_flops", flops)
        .number("product_gflops_per_s", flops / seconds * 1e-9)
        .number("percent_ceiling", ceiling > 0 ? 100 * flops / seconds * 1e-9 / ceiling : 0)
        .number("percent_ceiling_cpu",
                ceiling > 0 ? 100 * flops / median(cpu) * 1e-9 / (ceiling / double(options.threads)) : 0)
        .number("ceiling_seconds", ceiling > 0 ? flops / (ceiling * 1e9) : 0)
        .print(options.json);
    return true;
}

/// A trainer core on `options.model` as `trainer_args` makes one (the schedule's documented defaults) with its
/// phases timed into `phases`, and the step's batch as the trunk reads it; false with a message on standard error.
bool profiled_core(options_t const &options, ram::parallel_t const &parallel, double *phases,
                   train::trainer_core_t &core) {
    char const *message = "";
    uform::checkpoint_t checkpoint;
    if (uform::checkpoint_read_file(options.model.data(), options.model.size(), checkpoint, &message) ||
        train::parameters_load(options.model.data(), options.model.size(), checkpoint, uform_pair_loss_form_info_nce_k,
                               core.parameters, &message) ||
        train::parameters_refresh(core.parameters, parallel, &message)) {
        std::fprintf(stderr, "cannot profile a trainer on %s: %s\n", options.model.c_str(), message);
        return false;
    }
    core.settings.objective = uform_objective_contrastive_k;
    core.settings.contrastive = {uform_pair_loss_form_info_nce_k, uform_negatives_device_k, 2.0f, 1.0f};
    core.settings.schedule = {10000, 100, 1e-3f, 1e-5f, 0.01f, 1.0f};
    core.phases = phases;
    return true;
}

/// Where a step's CPU time goes (cpp/train/phases.hpp): `--steps` steps of a trainer core on `--threads` threads after
/// a warm-up, each phase's CPU ms a step and its share of the step's, the products' phases' efficiency against the
/// path's ceiling per thread, `other` the step's time outside every phase (the plan, rows and relations).
bool profile_steps(options_t const &options, step_flops_t const &flops, double ceiling) {
    constexpr std::size_t count = std::size_t(train::step_phase_t::count);
    double phases[count] = {};
    pool_t pool(options.threads);
    train::trainer_core_t core;
    if (!profiled_core(options, pool.parallel, phases, core)) return false;
    batch_t const texts(options.texts, options.bytes);
    std::vector<std::uint16_t> tokens(texts.contents.begin(), texts.contents.end());
    std::vector<train::segment_t> segments(options.texts);
    for (std::size_t i = 0; i != options.texts; ++i)
        segments[i] = {uform_modality_text_k, tokens.data() + i * options.bytes, nullptr, nullptr, options.bytes};
    train::batch_t batch;
    batch.segments = segments;
    batch.bags = texts.bags;
    train::step_report_t report;
    double start = 0;
    for (std::size_t step = 0; step <= options.steps; ++step) {
        if (step == 1) std::fill(phases, phases + count, 0.0), start = process_cpu_now(); // the first warms up
        char const *message = "";
        if (core.step(batch, pool.parallel, {}, {}, report, &message)) {
            std::fprintf(stderr, "profiled step %zu failed: %s\n", step, message);
            return false;
        }
    }
    double const steps = double(options.steps), step_seconds = (process_cpu_now() - start) / steps;
    record_t record("profile");
    record.number("threads", double(options.threads)).number("cpu_ms_per_step", step_seconds * 1e3);
    std::string keys[2 * count]; // the record keeps pointers to its keys until it prints
    double wholes = 0;
    for (std::size_t i = 0; i != count; ++i) {
        auto const phase = train::step_phase_t(i);
        bool const part =
            phase == train::step_phase_t::forward_linears || phase == train::step_phase_t::forward_attention ||
            phase == train::step_phase_t::backward_linears || phase == train::step_phase_t::backward_attention;
        if (!part) wholes += phases[i];
        keys[2 * i] = std::string(train::step_phase_name(phase)) + "_ms";
        keys[2 * i + 1] = std::string(train::step_phase_name(phase)) + "_percent";
        record.number(keys[2 * i].c_str(), phases[i] / steps * 1e3)
            .number(keys[2 * i + 1].c_str(), 100 * phases[i] / steps / step_seconds);
    }
    record.number("other_percent", 100 * (1 - wholes / steps / step_seconds));
    double const per_thread = ceiling / double(options.threads);
    auto const efficiency = [&](train::step_phase_t phase, double work) {
        double const seconds = phases[std::size_t(phase)] / steps;
        return per_thread > 0 && seconds > 0 ? 100 * work / seconds * 1e-9 / per_thread : 0;
    };
    record.number("forward_linears_percent_path_cpu", efficiency(train::step_phase_t::forward_linears, flops.linears))
        .number("forward_attention_percent_path_cpu",
                efficiency(train::step_phase_t::forward_attention, flops.attention))
        .number("backward_linears_percent_path_cpu",
                efficiency(train::step_phase_t::backward_linears, flops.backward_linears()))
        .number("backward_attention_percent_path_cpu",
                efficiency(train::step_phase_t::backward_attention, flops.backward_attention()))
        .print(options.json);
    return true;
}

/// Reads the command line into `options`; false when the bench should exit with `exit_code` (`--help`, or an error
/// already on standard error).
bool parse(int argc, char **argv, options_t &options, int &exit_code) {
    arguments_t arguments("uform_train_bench");
    arguments.text("--model", options.model, "the checkpoint whose geometry the trainer takes (required)")
        .count("--texts", options.texts, "texts a step, in bags of two (even)")
        .count("--bytes", options.bytes, "bytes a text")
        .count("--threads", options.threads, "threads, the caller's included")
        .count("--steps", options.steps, "steps timed")
        .flag("--vram", options.vram, "train on GPU 0 through uform_trainer_init_vram (a CUDA build)")
        .flag("--profile", options.profile, "after the steps, the step's CPU time by phase (a profile record)")
        .flag("--json", options.json, "one JSON object per line");
    if (!arguments.parse(argc, argv, exit_code)) return false;
    exit_code = 2;
    if (options.model.empty()) {
        std::fprintf(stderr, "needs --model PATH\n");
        return false;
    }
    if (options.texts % 2) {
        std::fprintf(stderr, "--texts must be even: the items form bags of two\n");
        return false;
    }
    if (!options.vram && options.threads < 2) {
        std::fprintf(stderr, "--threads must be at least 2: a trainer runs on a RAM executor, which owns a thread "
                             "besides the caller's\n");
        return false;
    }
    return true;
}

} // namespace

int main(int argc, char **argv) {
    options_t options;
    if (int exit_code = 0; !parse(argc, argv, options, exit_code)) return exit_code;
    char const *message = "";
    uform_executor_t executor = nullptr;
    std::size_t const gpu = 0;
    if (options.vram ? uform_executor_init_vram(&gpu, 1, uform_gpu_class_auto_k, nullptr, 0, nullptr, nullptr, 0, 0,
                                                &executor, &message) != uform_status_ok_k
                     : uform_executor_init_ram(nullptr, 0, uform_cpu_class_auto_k, options.threads - 1, &executor,
                                               &message) != uform_status_ok_k) {
        std::fprintf(stderr, "cannot make the executor: %s\n", message);
        return 1;
    }
    record_t("machine").number("hardware_threads", std::thread::hardware_concurrency()).print(options.json);
    uform_model_load_ram_args_t load{};
    load.path = options.model.data();
    load.path_length = options.model.size();
    uform_model_t model = nullptr;
    uform_model_description_t description{};
    if (uform_model_load_ram(&load, &model, &message) != uform_status_ok_k ||
        uform_model_describe(model, &description, &message) != uform_status_ok_k) {
        std::fprintf(stderr, "cannot read the geometry of %s: %s\n", options.model.c_str(), message);
        uform_executor_free(executor);
        return 1;
    }
    uform_model_free(model);
    product_path_t const path = options.vram ? product_path_t::unmeasured : product_path(description.cpu_class);
    double const ceiling = path_peak(path, options.threads);
    record_t("ceiling")
        .number("threads", double(options.threads))
        .text("path", product_path_name(path))
        .number("gflops_per_s", ceiling)
        .print(options.json);
    step_flops_t const step_flops(description, options.texts, options.bytes);
    double const flops = step_flops.total();
    uform_trainer_init_ram_args_t const args = trainer_args(options);
    uform_trainer_t trainer = nullptr;
    uform_status_t const status = options.vram ? uform_trainer_init_vram(executor, &args, &trainer, &message)
                                               : uform_trainer_init_ram(executor, &args, &trainer, &message);
    bool ok = status == uform_status_ok_k;
    if (!ok) std::fprintf(stderr, "cannot make a trainer from %s: %s\n", options.model.c_str(), message);
    ok = ok && bench_steps(options, trainer, executor, flops, ceiling);
    if (trainer) uform_trainer_free(trainer);
    uform_executor_free(executor);
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    record_t("rss")
        .number("peak_mib", double(usage.ru_maxrss) / 1024)
        .number("step_peak_mib", peak_rss_since_reset_mib())
        .print(options.json);
    // The profile's core comes after the trainer is gone, so that neither's memory is the other's peak.
    ok = ok && (!options.profile || options.vram || profile_steps(options, step_flops, ceiling));
    return ok ? 0 : 1;
}
