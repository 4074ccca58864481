// The RAM residency's compute core against the machine's F32 ceiling: an FMA-loop peak, the GEMM alone on
// 2048 x 512 x 2048 (ours, and NumKong's packed f32 and bf16 kernels for reference), and the text forward on the tiny
// geometry (8 texts x 64 bytes and one 16-byte text) and the small one (32 texts x 256 bytes). Prints medians of
// wall-clock time, and of the thread's CPU time for one-thread runs (which a busy machine distorts less), and the
// machine's read bandwidth, against which each forward reports how many times longer it took than streaming its packed
// weights once (`over_stream`; the target keeps one 16-byte query within 1.3). Not a test:
// the CMake target `uform_bench` builds it in the RAM configuration, and tools/bench/text_compare.py runs it beside
// PyTorch and ONNX Runtime.
//
//   uform_bench [--only ceiling,gemm,tiny,small] [--threads 1,2] [--classes native,f32,i8,e4m3] [--repeats 15] [--json]
//               [--profile] [--tiny tests/data/tiny.safetensors] [--small build/bench/small.safetensors]
//
// Every selected part runs once per thread count. The ceiling is always measured, since the other parts report
// their share of it (of its CPU-time rate, summed over the threads); beside it, `path_gflops_cpu` is the ceiling of
// the path the native class's BF16 products take (`path`: AMX tiles, `vdpbf16ps` pairs or the F32 FMA; see
// tools/bench/ceilings.hpp), and `i8_path_gops_cpu` the int8 products'. Every GEMM and forward record gives its
// efficiency, `percent_path` (`_cpu`: over CPU time), against the ceiling of the path it runs on; `--profile` adds
// after each forward where its time goes, by phase. The GEMM also reports `gemm_paired`, the median
// share with a short ceiling measured just before each call, which a machine whose load drifts distorts less.
// `--classes` picks the forward runs: `native` (BF16 weights; AMX tiles where the OS grants them), `f32` (the AVX-512
// F32 FMA path), and the native class with its trunk quantized at load, `i8` (int8 blocks) and `e4m3`. A quantized
// run listed after `native` also reports `cosine_vs_native`: the smallest cosine between its embeddings and the native
// run's on the same texts. `--json` prints one JSON object per line instead of text; the last one, `rss`, holds the
// process's peak resident set. Texts are printable bytes `32 + splitmix64(k) % 95` for the k-th byte of the batch, so
// other frameworks can feed the same ones.
//
// The small checkpoint comes from `python3 tools/checkpoint/write_checkpoint.py --geometry small --out PATH`.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <numkong/numkong.h>

#include "common/checkpoint.hpp"
#include "cpp/forward.hpp"
#include "cpp/kernels/amx.hpp"
#include "cpp/kernels/amx_product.hpp"
#include "cpp/kernels/cpu_class.hpp"
#include "cpp/kernels/gemm.hpp"
#include "common/scalars.hpp"
#include "cpp/linear.hpp"
#include "cpp/mapped_file.hpp"
#include "cpp/weights.hpp"
#include "tools/bench/arguments.hpp"
#include "tools/bench/ceilings.hpp"
#include "tools/bench/pool.hpp"
#include "tools/bench/report.hpp"

namespace {

using namespace uform;
using namespace uform::ram;
using namespace uform::bench;

// region: clocks and medians

/// Median wall and CPU seconds of `repeats` runs of `body` after one warm-up run.
template <typename body_t>
std::pair<double, double> time_median(std::size_t repeats, body_t &&body) {
    body();
    std::vector<double> wall, cpu;
    for (std::size_t i = 0; i != repeats; ++i) {
        double const wall_start = wall_now(), cpu_start = thread_cpu_now();
        body();
        cpu.push_back(thread_cpu_now() - cpu_start);
        wall.push_back(wall_now() - wall_start);
    }
    return {median(wall), median(cpu)};
}

// region: the command line

/// What the command line chose.
struct options_t {
    std::string tiny = "tests/data/tiny.safetensors", small;
    std::size_t repeats = 15;
    std::vector<std::size_t> threads{1, 2};
    std::vector<std::string> only{"ceiling", "gemm", "tiny", "small"};
    std::vector<std::string> classes{"native", "f32"};
    bool json = false, profile = false;

    /// Whether `part` was chosen.
    bool runs(char const *part) const { return std::find(only.begin(), only.end(), part) != only.end(); }
};

// region: the FMA ceiling

#if defined(__x86_64__)
/// GFLOP/s of 12 independent chains of 16-lane F32 FMAs (AVX-512), over the thread's CPU time.
__attribute__((target("avx512f"))) double fma_peak_thread(std::size_t iterations, double &wall) {
    __m512 chains[12];
    for (int i = 0; i != 12; ++i) chains[i] = _mm512_set1_ps(0.001f * float(i));
    __m512 const b = _mm512_set1_ps(0.9999f), c = _mm512_set1_ps(1e-5f);
    double const wall_start = wall_now(), start = thread_cpu_now();
    for (std::size_t i = 0; i != iterations; ++i) {
        for (int j = 0; j != 12; ++j) chains[j] = _mm512_fmadd_ps(chains[j], b, c);
        __asm__ volatile(""
                         : "+v"(chains[0]), "+v"(chains[1]), "+v"(chains[2]), "+v"(chains[3]), "+v"(chains[4]),
                           "+v"(chains[5]), "+v"(chains[6]), "+v"(chains[7]), "+v"(chains[8]), "+v"(chains[9]),
                           "+v"(chains[10]), "+v"(chains[11]));
    }
    double const seconds = thread_cpu_now() - start;
    wall = wall_now() - wall_start;
    return double(iterations) * 12 * 16 * 2 / seconds * 1e-9;
}
#endif

/// The F32 FMA ceiling in GFLOP/s on `threads` threads: per-thread CPU-time rates summed, and wall-clock.
/// With a `pool` of as many threads, its own threads run the loop (no thread is started, none left spinning).
std::pair<double, double> fma_peak(std::size_t threads, std::size_t iterations = 50'000'000, pool_t *pool = nullptr) {
#if defined(__x86_64__)
    if (!cpu_class_available(uform_cpu_class_intel_skylake_k)) return {0, 0};
    std::vector<double> rates(threads), walls(threads);
    if (pool != nullptr && threads > 1 && pool->parallel.threads == threads) {
        pool->pool.for_threads([&](std::size_t t) noexcept { rates[t] = fma_peak_thread(iterations, walls[t]); });
    } else {
        std::vector<std::thread> workers;
        for (std::size_t t = 1; t < threads; ++t)
            workers.emplace_back([&, t] { rates[t] = fma_peak_thread(iterations, walls[t]); });
        rates[0] = fma_peak_thread(iterations, walls[0]);
        for (std::thread &worker : workers) worker.join();
    }
    double cpu = 0, wall = 0;
    for (std::size_t t = 0; t != threads; ++t) cpu += rates[t], wall = std::max(wall, walls[t]);
    return {cpu, double(iterations) * 12 * 32 * double(threads) / wall * 1e-9};
#else
    (void)threads, (void)iterations, (void)pool;
    return {0, 0};
#endif
}

// region: the GEMM alone

/// The median over `repeats` of one call's GFLOP/s as a percentage of the FMA ceiling measured just before it
/// (about 10 ms of FMAs) on the threads of the `pool` that runs the call, so both see the same load from the
/// machine's other tenants and start on the same cores.
template <typename body_t>
double paired_percent(std::size_t repeats, pool_t &pool, double flops, body_t &&body) {
    body();
    std::size_t const threads = std::max<std::size_t>(pool.parallel.threads, 1);
    std::vector<double> percents;
    for (std::size_t i = 0; i != repeats; ++i) {
        double const peak = fma_peak(threads, 5'000'000, &pool).first;
        double const start = wall_now();
        body();
        percents.push_back(100 * flops / (wall_now() - start) * 1e-9 / peak);
    }
    return median(percents);
}

/// Each product path's ceiling on one thread count (tools/bench/ceilings.hpp), measured the first time a report asks.
class ceilings_t {
  public:
    explicit ceilings_t(std::size_t threads) : threads_(threads) { values_.fill(-1); }
    /// GFLOP/s (GOP/s for int8) of `path` on these threads; 0 where unmeasured.
    double operator()(product_path_t path) {
        double &value = values_[static_cast<std::size_t>(path)];
        if (value < 0) value = path_peak(path, threads_);
        return value;
    }

  private:
    std::size_t threads_;
    std::array<double, static_cast<std::size_t>(product_path_t::unmeasured) + 1> values_{};
};

/// The path of the F32 FMA products on this machine.
product_path_t f32_path() {
    return cpu_class_available(uform_cpu_class_intel_skylake_k) ? product_path_t::f32_fma_avx512
                                                                : product_path_t::f32_fma_avx2;
}

/// Prints one GEMM measurement of `flops` per call: its rate, its share of the F32 FMA ceiling `peak`, and its
/// efficiency, the share of the ceiling of its own `path`.
void report_gemm(options_t const &options, char const *kernel, std::size_t threads, double flops, double wall,
                 double cpu, double peak, product_path_t path, ceilings_t &ceilings) {
    double const ceiling = ceilings(path);
    record_t("gemm")
        .text("kernel", kernel)
        .number("threads", double(threads))
        .number("gflops_wall", flops / wall * 1e-9)
        .number("gflops_cpu", flops / cpu * 1e-9)
        .number("percent_ceiling", 100 * flops / wall * 1e-9 / peak)
        .text("path", product_path_name(path))
        .number("percent_path", ceiling > 0 ? 100 * flops / wall * 1e-9 / ceiling : 0) // 0: unmeasured
        .number("percent_path_cpu", ceiling > 0 ? 100 * flops / cpu * 1e-9 / ceiling : 0)
        .print(options.json);
}

/// One product of the GEMM part: its name, the kernels it runs on (none: skipped), int8 blocks or BF16 pairs, its
/// path.
struct gemm_path_t {
    char const *name;
    kernels_t const *kernels;
    bool int8;
    product_path_t path;
};

/// Our BF16 pair panels where the class has them and the int8 blocks of `Scalar::I8` models, each again in AMX tiles
/// where the OS grants them, on each thread count.
void bench_packed_products(options_t const &options, std::vector<float> const &a, std::vector<std::uint16_t> const &w,
                           std::size_t rows, std::size_t depth, std::size_t columns, std::vector<double> const &peaks,
                           std::vector<ceilings_t> &ceilings) {
    kernels_t const &kernels = *kernels_for(uform_cpu_class_auto_k);
    kernels_t const *tiled = kernels_on_tiles(tiles_t::hardware);
    product_path_t const vnni =
        kernels.quantize_i8 != quantize_i8_serial ? product_path_t::i8_vnni : product_path_t::unmeasured;
    gemm_path_t const paths[] = {
        {"bf16_pairs", kernels.gemm_micro_pairs != nullptr ? &kernels : nullptr, false, product_path_t::bf16_pairs},
        {"i8_blocks", &kernels, true, vnni},
        {"amx_bf16", tiled, false, product_path_t::amx_tiles},
        {"amx_i8", tiled, true, product_path_t::amx_int8}};
    double const flops = 2.0 * double(rows) * double(depth) * double(columns);
    std::vector<float> c(rows * columns);
    for (gemm_path_t const &path : paths) {
        if (path.kernels == nullptr) continue;
        linear_t linear;
        bool const packed_ok =
            path.int8 ? linear.blocks.pack({}, reinterpret_cast<std::byte const *>(w.data()), columns, depth)
                      : linear.pairs.pack(*path.kernels, {}, w.data(), columns, depth);
        if (!packed_ok) return;
        for (std::size_t i = 0; i != options.threads.size(); ++i) {
            pool_t pool(options.threads[i]);
            std::vector<float> scratch(options.threads[i] * linear.scratch_floats());
            auto [wall, cpu] = time_median(options.repeats, [&] {
                linear.multiply(*path.kernels, pool.parallel, a.data(), depth, rows, c.data(), columns, 0,
                                scratch.data());
            });
            report_gemm(options, path.name, options.threads[i], flops, wall, cpu, peaks[i], path.path, ceilings[i]);
        }
    }
}

/// NumKong's packed kernels for reference, on the calling thread: f32 (f64 accumulation) and bf16 (AMX where the OS
/// allows it, which takes every capability's thread set-up, AMX's tile permission included).
void bench_numkong(options_t const &options, std::vector<float> const &a, std::vector<std::uint16_t> const &w,
                   std::size_t rows, std::size_t depth, std::size_t columns, double peak, ceilings_t &ceilings) {
    double const flops = 2.0 * double(rows) * double(depth) * double(columns);
    std::size_t const repeats = options.repeats;
    nk_configure_thread(nk_capabilities());
    std::vector<char> packed_f32(nk_dots_packed_size_f32(columns, depth));
    std::vector<float> w32(columns * depth), c(rows * columns);
    for (std::size_t i = 0; i != w32.size(); ++i) w32[i] = bf16_to_f32(w[i]);
    nk_dots_pack_f32(w32.data(), columns, depth, depth * sizeof(float), packed_f32.data());
    std::vector<double> c64(rows * columns);
    auto [f32_wall, f32_cpu] = time_median(std::max<std::size_t>(repeats / 3, 3), [&] {
        nk_dots_packed_f32(a.data(), packed_f32.data(), c64.data(), rows, columns, depth, depth * sizeof(float),
                           columns * sizeof(double));
    });
    report_gemm(options, "numkong_f32", 1, flops, f32_wall, f32_cpu, peak, f32_path(), ceilings);
    std::vector<std::uint16_t> a16(rows * depth);
    for (std::size_t i = 0; i != a16.size(); ++i) a16[i] = f32_to_bf16(a[i]);
    std::vector<char> packed_bf16(nk_dots_packed_size_bf16(columns, depth));
    nk_dots_pack_bf16(reinterpret_cast<nk_bf16_t const *>(w.data()), columns, depth, depth * 2, packed_bf16.data());
    auto [bf16_wall, bf16_cpu] = time_median(repeats, [&] {
        nk_dots_packed_bf16(reinterpret_cast<nk_bf16_t const *>(a16.data()), packed_bf16.data(), c.data(), rows,
                            columns, depth, depth * 2, columns * sizeof(float));
    });
    report_gemm(options, "numkong_bf16", 1, flops, bf16_wall, bf16_cpu, peak, product_path(cpu_class_native()),
                ceilings);
}

/// Our F32 FMA GEMM on each thread count (also paired with the ceiling), our packed products, NumKong's for reference.
void bench_gemm(options_t const &options, std::size_t rows, std::size_t depth, std::size_t columns,
                std::vector<double> const &peaks, std::vector<ceilings_t> &ceilings) {
    std::mt19937 random(1);
    std::normal_distribution<float> normal;
    std::vector<float> a(rows * depth), c(rows * columns);
    std::vector<std::uint16_t> w(columns * depth);
    for (float &value : a) value = round_bf16(normal(random));
    for (std::uint16_t &value : w) value = f32_to_bf16(normal(random));
    packed_matrix_t packed;
    if (!pack_bf16(w.data(), columns, depth, depth, packed)) return;
    kernels_t const &kernels = *kernels_for(uform_cpu_class_auto_k);
    double const flops = 2.0 * double(rows) * double(depth) * double(columns);
    for (std::size_t i = 0; i != options.threads.size(); ++i) {
        pool_t pool(options.threads[i]);
        std::vector<float> scratch(options.threads[i] * gemm_scratch_floats(depth));
        auto const call = [&] {
            gemm(kernels, pool.parallel, a.data(), depth, rows, packed.view(), c.data(), columns, 0, scratch.data());
        };
        auto [wall, cpu] = time_median(options.repeats, call);
        report_gemm(options, "f32_fma", options.threads[i], flops, wall, cpu, peaks[i], f32_path(), ceilings[i]);
        double const paired = paired_percent(options.repeats, pool, flops, call);
        record_t("gemm_paired")
            .text("kernel", "f32_fma")
            .number("threads", double(options.threads[i]))
            .number("percent_ceiling", paired)
            .print(options.json);
    }
    bench_packed_products(options, a, w, rows, depth, columns, peaks, ceilings);
    bench_numkong(options, a, w, rows, depth, columns, peaks.front(), ceilings.front());
}

// region: the read bandwidth

/// The machine's read bandwidth in bytes/s on `threads` threads: the median of 7 passes summing a 512 MiB buffer (far
/// past the caches), each thread over its own slice with the widest loads the compiler chooses.
double read_bandwidth(std::size_t threads) {
    std::size_t const words = (std::size_t(512) << 20) / sizeof(std::uint64_t);
    std::vector<std::uint64_t> buffer(words, 1);
    pool_t pool(threads);
    std::vector<std::uint64_t> sums(pool.parallel.threads * 8);
    double const wall = time_median(7, [&] {
                            pool.parallel(pool.parallel.threads, [&](std::size_t task, std::size_t) noexcept {
                                std::size_t const begin = words * task / pool.parallel.threads;
                                std::size_t const end = words * (task + 1) / pool.parallel.threads;
                                std::uint64_t sum = 0;
                                for (std::size_t i = begin; i != end; ++i) sum += buffer[i];
                                sums[task * 8] = sum; // one cache line each
                            });
                        }).first;
    if (sums.front() == 0) std::fprintf(stderr, "unexpected sum\n"); // keeps the reads
    return double(words * sizeof(std::uint64_t)) / wall;
}

/// `read_bandwidth` for each thread count, measured in a child process so that its buffer stays out of this process's
/// peak resident set (the `rss` record); zeros where the child failed.
std::vector<double> read_bandwidths(std::vector<std::size_t> const &thread_counts) {
    std::vector<double> values(thread_counts.size(), 0.0);
    int pipe_ends[2];
    if (pipe(pipe_ends) != 0) return values;
    pid_t const child = fork();
    if (child == 0) {
        close(pipe_ends[0]);
        for (std::size_t i = 0; i != thread_counts.size(); ++i) values[i] = read_bandwidth(thread_counts[i]);
        ssize_t const written = write(pipe_ends[1], values.data(), values.size() * sizeof(double));
        _exit(written == ssize_t(values.size() * sizeof(double)) ? 0 : 1);
    }
    close(pipe_ends[1]);
    if (child > 0) {
        std::size_t const bytes = values.size() * sizeof(double);
        if (read(pipe_ends[0], values.data(), bytes) != ssize_t(bytes)) std::fill(values.begin(), values.end(), 0.0);
        waitpid(child, nullptr, 0);
    }
    close(pipe_ends[0]);
    return values;
}

// region: the text forward

/// A loaded model.
struct model_t {
    checkpoint_t checkpoint;
    mapped_file_t file;
    model_weights_t weights;
};

/// A forward run: its name, its class, the trunk's quantization, the path its linears' products take.
struct run_t {
    char const *name;
    uform_cpu_class_t cpu_class;
    uform_scalar_t quantization;
    product_path_t path;
};

/// What the run measured of the machine, per thread count in `options.threads`' order: the F32 FMA ceiling (CPU-time
/// rate), the read bandwidth, each path's ceiling.
struct machine_t {
    std::vector<double> peaks, bandwidths;
    std::vector<ceilings_t> ceilings;
};

/// One forward case: the geometry's name, the texts and their length, the index of the thread count, timed calls.
struct case_t {
    char const *geometry;
    std::size_t count, length, thread_index, repeats;
};

/// Loads a checkpoint for `run`; false with a message on standard error on failure.
bool load(std::string const &path, model_t &model, parallel_t const &parallel, run_t const &run) {
    char const *message = "";
    if (checkpoint_read_file(path.data(), path.size(), model.checkpoint, &message) != uform_status_ok_k ||
        model.file.open(path.data(), path.size(), &message) != uform_status_ok_k) {
        std::fprintf(stderr, "cannot read %s: %s\n", path.c_str(), message);
        return false;
    }
    weights_options_t options;
    options.parallel = parallel;
    options.cpu_class = run.cpu_class;
    options.quantization = run.quantization;
    options.file = &model.file; // as `uform_model_load_ram` does with a path
    if (weights_load(model.checkpoint, model.file.bytes(), options, model.weights, &message) != uform_status_ok_k) {
        std::fprintf(stderr, "cannot load %s: %s\n", path.c_str(), message);
        return false;
    }
    model.file.close();
    return true;
}

/// The smallest cosine between matching rows of `width` values; 1 for rows that are both zero.
double worst_cosine(std::vector<float> const &a, std::vector<float> const &b, std::size_t width) {
    double worst = 1;
    for (std::size_t row = 0; row * width < a.size() && row * width < b.size(); ++row) {
        double ab = 0, aa = 0, bb = 0;
        for (std::size_t i = row * width; i != (row + 1) * width; ++i)
            ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
        if (aa != 0 || bb != 0) worst = std::min(worst, ab / std::sqrt(aa * bb));
    }
    return worst;
}

/// FLOPs of attention's two products over `count` items of `length` tokens (the rest of `trunk_flops` is the
/// linears').
double attention_flops(geometry_t const &geometry, std::size_t count, std::size_t length) {
    return double(geometry.depth) * double(count) * 4.0 * double(length) * double(length) *
           double(geometry.heads * geometry.head_dim);
}

/// Where one call's time goes: `repeats` calls with each phase's wall time read (forward_phase_t), in ms per call
/// and percent of the call, the rest the call's time less the phases'; and the linears' products' own rate as a share
/// of the run's path ceiling.
void profile_forward(options_t const &options, model_weights_t const &weights, run_t const &run, case_t const &shape,
                     token_batch_t const &batch, trunk_outputs_t const &outputs, parallel_t const &parallel,
                     double ceiling) {
    constexpr std::size_t phases = static_cast<std::size_t>(forward_phase_t::count);
    std::array<double, phases> seconds{};
    forward_hooks_t hooks;
    hooks.parallel = parallel;
    hooks.phases = seconds.data();
    scratch_t scratch;
    trunk_forward(weights, batch, outputs, scratch, hooks, nullptr); // warm-up: its phases are not counted
    seconds.fill(0);
    double const start = wall_now();
    for (std::size_t i = 0; i != shape.repeats; ++i) trunk_forward(weights, batch, outputs, scratch, hooks, nullptr);
    double const call = (wall_now() - start) / double(shape.repeats);
    record_t record("profile");
    record.text("geometry", shape.geometry)
        .text("class", run.name)
        .number("threads", double(std::max<std::size_t>(parallel.threads, 1)))
        .number("ms_per_call", call * 1e3);
    std::array<std::string, 2 * phases> keys; // the record keeps pointers to its keys until it prints
    double accounted = 0;
    for (std::size_t phase = 0; phase != phases; ++phase) {
        double const share = seconds[phase] / double(shape.repeats);
        accounted += share;
        std::string const name = forward_phase_name(static_cast<forward_phase_t>(phase));
        keys[2 * phase] = name + "_ms", keys[2 * phase + 1] = name + "_percent";
        record.number(keys[2 * phase].c_str(), share * 1e3).number(keys[2 * phase + 1].c_str(), 100 * share / call);
    }
    record.number("rest_ms", (call - accounted) * 1e3).number("rest_percent", 100 * (call - accounted) / call);
    double const linear_flops = trunk_flops(weights.geometry, batch) -
                                attention_flops(weights.geometry, shape.count, shape.length) +
                                2.0 * double(shape.count * weights.geometry.hidden * weights.geometry.dimensions);
    double const linear_seconds = seconds[0] / double(shape.repeats);
    record.number("linears_gflops", linear_flops / linear_seconds * 1e-9)
        .text("path", product_path_name(run.path))
        .number("linears_percent_path", ceiling > 0 ? 100 * linear_flops / linear_seconds * 1e-9 / ceiling : 0)
        .print(options.json);
}

/// Embeddings of the case's texts on its threads: calls/s, tokens/s, share of the F32 FMA ceiling and efficiency (the
/// share of the run's path ceiling); and the smallest cosine against `reference` (the native run's embeddings of the
/// same texts) when it is not empty. With `--profile`, the call's phases after. Answers the embeddings.
std::vector<float> bench_forward(options_t const &options, model_weights_t const &weights, run_t const &run,
                                 case_t const &shape, machine_t &machine, std::vector<float> const &reference) {
    std::size_t const count = shape.count, length = shape.length, threads = options.threads[shape.thread_index];
    double const peak = machine.peaks[shape.thread_index], bandwidth = machine.bandwidths[shape.thread_index];
    double const ceiling = machine.ceilings[shape.thread_index](run.path);
    std::vector<std::uint8_t> bytes;
    std::vector<std::size_t> offsets;
    make_texts(count, length, bytes, offsets);
    token_batch_t const batch{bytes.data(), offsets.data(), count, false};
    std::vector<float> embeddings(count * weights.geometry.dimensions);
    trunk_outputs_t outputs;
    outputs.embeddings = embeddings.data();
    outputs.embeddings_stride = weights.geometry.dimensions;
    pool_t pool(threads);
    forward_hooks_t hooks;
    hooks.parallel = pool.parallel;
    scratch_t scratch;
    auto [wall, cpu] =
        time_median(shape.repeats, [&] { trunk_forward(weights, batch, outputs, scratch, hooks, nullptr); });
    // The trunk's FLOPs (the library's own estimate) and the embedding head's.
    double const flops = trunk_flops(weights.geometry, batch) +
                         2.0 * double(count * weights.geometry.hidden * weights.geometry.dimensions);
    record_t("forward")
        .text("geometry", shape.geometry)
        .text("class", run.name)
        .number("amx", weights.amx)
        .number("texts", double(count))
        .number("bytes", double(length))
        .number("threads", double(threads))
        .number("calls_per_s", 1 / wall)
        .number("tokens_per_s", double(count * length) / wall)
        .number("us_per_call", wall * 1e6)
        .number("cpu_us_per_call", cpu * 1e6)
        .number("gflops", flops / wall * 1e-9)
        .number("percent_ceiling", 100 * flops / wall * 1e-9 / peak)
        .text("path", product_path_name(run.path))
        .number("percent_path", ceiling > 0 ? 100 * flops / wall * 1e-9 / ceiling : 0) // 0: unmeasured
        .number("percent_path_cpu", ceiling > 0 ? 100 * flops / cpu * 1e-9 / ceiling : 0)
        .number("weights_mib", double(weights.bytes()) / (1 << 20))
        .number("stream_us", bandwidth > 0 ? double(weights.bytes()) / bandwidth * 1e6 : 0) // 0: unmeasured
        .number("over_stream", wall * bandwidth / double(weights.bytes()))
        .number("scratch_mib", double(scratch.capacity()) / (1 << 20))
        .number("cosine_vs_native",
                reference.empty() ? 1.0 : worst_cosine(embeddings, reference, weights.geometry.dimensions))
        .print(options.json);
    if (options.profile) profile_forward(options, weights, run, shape, batch, outputs, pool.parallel, ceiling);
    return embeddings;
}

/// Reads the command line into `options`; false when the bench should exit with `exit_code` (`--help`, or an error
/// already on standard error).
bool parse(int argc, char **argv, options_t &options, int &exit_code) {
    arguments_t arguments("uform_bench");
    arguments.list("--only", options.only, "the parts to run: ceiling, gemm, tiny, small")
        .counts("--threads", options.threads, "the thread counts each part runs with")
        .list("--classes", options.classes, "the forward runs: native, f32, i8, e4m3")
        .count("--repeats", options.repeats, "calls timed per median")
        .text("--tiny", options.tiny, "the tiny checkpoint")
        .text("--small", options.small, "the small checkpoint")
        .flag("--json", options.json, "one JSON object per line")
        .flag("--profile", options.profile, "after each forward, where its time goes (a profile record)");
    if (!arguments.parse(argc, argv, exit_code)) return false;
    if (options.threads.empty()) {
        std::fprintf(stderr, "--threads needs at least one count\n");
        exit_code = 2;
        return false;
    }
    return true;
}

/// Measures and prints each thread count's read bandwidth and ceilings: the F32 FMA loop, and the paths the native
/// class's BF16 and int8 products take.
machine_t measure_machine(options_t const &options, uform_cpu_class_t native) {
    machine_t machine;
    machine.bandwidths = read_bandwidths(options.threads);
    for (std::size_t i = 0; i != options.threads.size(); ++i) {
        std::size_t const threads = options.threads[i];
        record_t("bandwidth")
            .number("threads", double(threads))
            .number("gb_per_s", machine.bandwidths[i] * 1e-9)
            .print(options.json);
        auto const [cpu, wall] = fma_peak(threads);
        machine.peaks.push_back(cpu); // a busy machine distorts the CPU-time rate the least
        ceilings_t &ceilings = machine.ceilings.emplace_back(threads);
        product_path_t const path = product_path(native), int8 = int8_path(native);
        record_t("ceiling")
            .number("threads", double(threads))
            .number("gflops_wall", wall)
            .number("gflops_cpu", cpu)
            .text("path", product_path_name(path))
            .number("path_gflops_cpu", ceilings(path))
            .text("i8_path", product_path_name(int8))
            .number("i8_path_gops_cpu", ceilings(int8))
            .print(options.json);
    }
    return machine;
}

/// The forward runs `--classes` names: the native class (AMX tiles where the OS grants them), the F32 FMA path where
/// the machine has AVX-512, and the native class with a quantized trunk.
std::vector<run_t> forward_runs(options_t const &options, uform_cpu_class_t native) {
    std::vector<run_t> runs;
    for (std::string const &name : options.classes)
        if (name == "native")
            runs.push_back({"native", uform_cpu_class_auto_k, uform_scalar_bf16_k, product_path(native)});
        else if (name == "f32" && native != uform_cpu_class_intel_skylake_k &&
                 cpu_class_available(uform_cpu_class_intel_skylake_k))
            runs.push_back({"f32", uform_cpu_class_intel_skylake_k, uform_scalar_bf16_k, f32_path()});
        else if (name == "i8") runs.push_back({"i8", uform_cpu_class_auto_k, uform_scalar_i8_k, int8_path(native)});
        else if (name == "e4m3")
            runs.push_back({"e4m3", uform_cpu_class_auto_k, uform_scalar_e4m3_k, product_path(native)});
    return runs;
}

/// Every run on one geometry's checkpoint: a batch and one query per thread count, the quantized runs compared with
/// the native run's embeddings (`natives`, two per thread count, filled by the native run). False when it cannot load.
bool bench_geometry(options_t const &options, std::string const &path, char const *geometry, case_t batch, case_t query,
                    std::vector<run_t> const &runs, machine_t &machine, parallel_t const &loader) {
    std::vector<std::vector<float>> natives(2 * options.threads.size());
    std::vector<float> const none;
    for (run_t const &run : runs) {
        model_t model;
        if (!load(path, model, loader, run)) return false;
        bool const quantized = run.quantization != uform_scalar_bf16_k, reference = run.name == std::string("native");
        for (std::size_t i = 0; i != options.threads.size(); ++i) {
            batch.geometry = query.geometry = geometry, batch.thread_index = query.thread_index = i;
            std::vector<float> many =
                bench_forward(options, model.weights, run, batch, machine, quantized ? natives[2 * i] : none);
            std::vector<float> one =
                bench_forward(options, model.weights, run, query, machine, quantized ? natives[2 * i + 1] : none);
            if (reference) natives[2 * i] = std::move(many), natives[2 * i + 1] = std::move(one);
        }
    }
    return true;
}

} // namespace

int main(int argc, char **argv) {
    options_t options;
    if (int exit_code = 0; !parse(argc, argv, options, exit_code)) return exit_code;
    uform_cpu_class_t const native = cpu_class_native();
    record_t("machine")
        .number("cpu_class", double(native))
        .number("hardware_threads", std::thread::hardware_concurrency())
        .number("amx", amx_available())
        .print(options.json);
    machine_t machine = measure_machine(options, native);
    if (options.runs("gemm")) bench_gemm(options, 2048, 512, 2048, machine.peaks, machine.ceilings);

    pool_t loader(*std::max_element(options.threads.begin(), options.threads.end()));
    std::vector<run_t> const runs = forward_runs(options, native);
    std::size_t const repeats = options.repeats;
    if (options.runs("tiny") && !bench_geometry(options, options.tiny, "tiny", {nullptr, 8, 64, 0, repeats * 20},
                                                {nullptr, 1, 16, 0, repeats * 100}, runs, machine, loader.parallel))
        return 1;
    if (options.runs("small")) {
        if (options.small.empty()) {
            std::fprintf(stderr, "--only small needs --small PATH\n");
            return 2;
        }
        if (!bench_geometry(options, options.small, "small", {nullptr, 32, 256, 0, repeats},
                            {nullptr, 1, 16, 0, repeats * 20}, runs, machine, loader.parallel))
            return 1;
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    record_t("rss").number("peak_mib", double(usage.ru_maxrss) / 1024).print(options.json);
    return 0;
}
