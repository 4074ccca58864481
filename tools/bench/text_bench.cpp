/**
 * @file text_bench.cpp
 * @brief The RAM residency's compute core against the machine's F32 ceiling: an FMA-loop peak, the GEMM alone on
 * 2048 x 512 x 2048 (ours, and NumKong's packed f32 and bf16 kernels for reference), and the text forward on the tiny
 * geometry (8 texts x 64 bytes and one 16-byte text, one thread) and the small one (32 texts x 256 bytes, two
 * threads). Prints medians of wall-clock time, and of the thread's CPU time for one-thread runs (which a busy
 * machine distorts less). Not a test.
 *
 *   text_bench [--tiny tests/data/tiny.safetensors] [--small /tmp/small.safetensors] [--repeats 15] [--small-only 1]
 *
 * `--small-only 1` runs only the small geometry on the native class, so that the peak RSS it prints is that run's.
 *
 * The small checkpoint comes from `python3 tools/checkpoint/write_checkpoint.py --geometry small --out PATH`.
 * Build: like tests/unit/forward_test.cpp, plus `-isystem <forkunion>/include` for the two-thread pool.
 */
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <sys/resource.h>
#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <forkunion.hpp>
#include <numkong/numkong.h>

#include "c/checkpoint.hpp"
#include "cpp/forward.hpp"
#include "cpp/kernels/amx.hpp"
#include "cpp/kernels/cpu_class.hpp"
#include "cpp/kernels/gemm.hpp"
#include "cpp/kernels/scalars.hpp"
#include "cpp/linear.hpp"
#include "cpp/mapped_file.hpp"
#include "cpp/weights.hpp"

namespace {

using namespace uform;
using namespace uform::ram;
namespace fu = ashvardanian::forkunion;

// region: clocks and medians

/** @brief Seconds of wall-clock time. */
double wall_now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

/** @brief Seconds of the calling thread's CPU time. */
double cpu_now() {
    timespec now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return double(now.tv_sec) + double(now.tv_nsec) * 1e-9;
}

/** @brief The median of `values`. */
double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values.empty() ? 0 : values[values.size() / 2];
}

/** @brief Median wall and CPU seconds of `repeats` runs of `body` after one warm-up run. */
template <typename body_t>
std::pair<double, double> time_median(std::size_t repeats, body_t &&body) {
    body();
    std::vector<double> wall, cpu;
    for (std::size_t i = 0; i != repeats; ++i) {
        double const wall_start = wall_now(), cpu_start = cpu_now();
        body();
        cpu.push_back(cpu_now() - cpu_start);
        wall.push_back(wall_now() - wall_start);
    }
    return {median(wall), median(cpu)};
}

// region: the two-thread pool

/** @brief A ForkUnion pool behind the core's `parallel_t` hook, as the executor will wire it. */
struct pool_t {
    fu::flat_pool_t pool;
    parallel_t parallel;

    explicit pool_t(std::size_t threads) {
        if (threads > 1 && pool.try_spawn(threads)) {
            parallel.threads = threads;
            parallel.context = this;
            parallel.for_n = &for_n;
            pool.for_threads([](std::size_t) noexcept { cpu_class_configure_thread(uform_cpu_class_auto_k); });
        }
        cpu_class_configure_thread(uform_cpu_class_auto_k);
    }
    /** @brief Uneven tasks (attention of varied items), so dynamic scheduling. */
    static void for_n(void *context, std::size_t count, void *fn_context, task_fn_t fn) noexcept {
        static_cast<pool_t *>(context)->pool.for_n_dynamic(
            count, [=](fu::prong_t prong) noexcept { fn(fn_context, prong.task, prong.thread); });
    }
};

// region: the FMA ceiling

#if defined(__x86_64__)
/** @brief GFLOP/s of 12 independent chains of 16-lane F32 FMAs (AVX-512), over the thread's CPU time. */
__attribute__((target("avx512f"))) double fma_peak_thread(std::size_t iterations, double &wall) {
    __m512 chains[12];
    for (int i = 0; i != 12; ++i) chains[i] = _mm512_set1_ps(0.001f * float(i));
    __m512 const b = _mm512_set1_ps(0.9999f), c = _mm512_set1_ps(1e-5f);
    double const wall_start = wall_now(), start = cpu_now();
    for (std::size_t i = 0; i != iterations; ++i) {
        for (int j = 0; j != 12; ++j) chains[j] = _mm512_fmadd_ps(chains[j], b, c);
        __asm__ volatile(""
                         : "+v"(chains[0]), "+v"(chains[1]), "+v"(chains[2]), "+v"(chains[3]), "+v"(chains[4]),
                           "+v"(chains[5]), "+v"(chains[6]), "+v"(chains[7]), "+v"(chains[8]), "+v"(chains[9]),
                           "+v"(chains[10]), "+v"(chains[11]));
    }
    double const seconds = cpu_now() - start;
    wall = wall_now() - wall_start;
    return double(iterations) * 12 * 16 * 2 / seconds * 1e-9;
}
#endif

/** @brief The F32 FMA ceiling in GFLOP/s on `threads` threads: per-thread CPU-time rates summed, and wall-clock. */
std::pair<double, double> fma_peak(std::size_t threads) {
#if defined(__x86_64__)
    if (!cpu_class_available(uform_cpu_class_intel_skylake_k)) return {0, 0};
    std::size_t const iterations = 50'000'000;
    std::vector<double> rates(threads), walls(threads);
    std::vector<std::thread> workers;
    for (std::size_t t = 1; t < threads; ++t)
        workers.emplace_back([&, t] { rates[t] = fma_peak_thread(iterations, walls[t]); });
    rates[0] = fma_peak_thread(iterations, walls[0]);
    for (std::thread &worker : workers) worker.join();
    double cpu = 0, wall = 0;
    for (std::size_t t = 0; t != threads; ++t) cpu += rates[t], wall = std::max(wall, walls[t]);
    return {cpu, double(iterations) * 12 * 32 * double(threads) / wall * 1e-9};
#else
    (void)threads;
    return {0, 0};
#endif
}

// region: the GEMM alone

/** @brief Our GEMM, NumKong's packed f32 and (dispatched) bf16 kernels, on rows x depth x columns. */
void bench_gemm(std::size_t rows, std::size_t depth, std::size_t columns, std::size_t repeats, double peak1,
                double peak2) {
    std::mt19937 random(1);
    std::normal_distribution<float> normal;
    std::vector<float> a(rows * depth), c(rows * columns);
    std::vector<std::uint16_t> w(columns * depth);
    for (float &value : a) value = round_bf16(normal(random));
    for (std::uint16_t &value : w) value = bf16_from_f32(normal(random));
    packed_matrix_t packed;
    if (!pack_bf16(w.data(), columns, depth, depth, packed)) return;
    kernels_t const &kernels = *kernels_for(uform_cpu_class_auto_k);
    double const flops = 2.0 * double(rows) * double(depth) * double(columns);
    std::printf("GEMM %zu x %zu x %zu (rows x depth x columns), F32 on BF16-rounded inputs:\n", rows, depth, columns);
    for (std::size_t threads : {1, 2}) {
        pool_t pool(threads);
        std::vector<float> scratch(threads * gemm_scratch_floats(depth));
        auto [wall, cpu] = time_median(repeats, [&] {
            gemm(kernels, pool.parallel, a.data(), depth, rows, packed.view(), c.data(), columns, 0, scratch.data());
        });
        double const peak = threads == 1 ? peak1 : peak2;
        std::printf("  ours, F32 FMA, %zu thread%s: %7.1f GFLOP/s wall (%.0f%% of the ceiling)", threads,
                    threads == 1 ? " " : "s", flops / wall * 1e-9, 100 * flops / wall * 1e-9 / peak);
        if (threads == 1)
            std::printf(", %7.1f GFLOP/s CPU time (%.0f%%)", flops / cpu * 1e-9, 100 * flops / cpu * 1e-9 / peak);
        std::printf("\n");
    }
    if (amx_available()) {
        linear_t linear;
        if (!linear.tiles.pack(w.data(), columns, depth)) return;
        for (std::size_t threads : {1, 2}) {
            pool_t pool(threads);
            std::vector<float> scratch(threads * linear.scratch_floats());
            auto [wall, cpu] = time_median(repeats, [&] {
                linear.multiply(kernels, pool.parallel, a.data(), depth, rows, c.data(), columns, 0, scratch.data());
            });
            double const peak = threads == 1 ? peak1 : peak2;
            std::printf("  ours, AMX BF16 tiles, %zu thread%s: %7.1f GFLOP/s wall (%.0f%% of the F32 ceiling)", threads,
                        threads == 1 ? " " : "s", flops / wall * 1e-9, 100 * flops / wall * 1e-9 / peak);
            if (threads == 1) std::printf(", %7.1f GFLOP/s CPU time", flops / cpu * 1e-9);
            std::printf("\n");
        }
    }
    // NumKong's packed kernels for reference: f32 (f64 accumulation) and bf16 (AMX where the OS allows it, which
    // takes every capability's thread set-up, AMX's tile permission included).
    nk_configure_thread(nk_capabilities());
    std::vector<char> packed_f32(nk_dots_packed_size_f32(columns, depth));
    std::vector<float> w32(columns * depth);
    for (std::size_t i = 0; i != w32.size(); ++i) w32[i] = f32_from_bf16(w[i]);
    nk_dots_pack_f32(w32.data(), columns, depth, depth * sizeof(float), packed_f32.data());
    std::vector<double> c64(rows * columns);
    auto [f32_wall, f32_cpu] = time_median(std::max<std::size_t>(repeats / 3, 3), [&] {
        nk_dots_packed_f32(a.data(), packed_f32.data(), c64.data(), rows, columns, depth, depth * sizeof(float),
                           columns * sizeof(double));
    });
    std::printf("  NumKong nk_dots_packed_f32, 1 thread: %7.1f GFLOP/s CPU time (f64 accumulation)\n",
                flops / f32_cpu * 1e-9);
    (void)f32_wall;
    std::vector<std::uint16_t> a16(rows * depth);
    for (std::size_t i = 0; i != a16.size(); ++i) a16[i] = bf16_from_f32(a[i]);
    std::vector<char> packed_bf16(nk_dots_packed_size_bf16(columns, depth));
    nk_dots_pack_bf16(reinterpret_cast<nk_bf16_t const *>(w.data()), columns, depth, depth * 2, packed_bf16.data());
    auto [bf16_wall, bf16_cpu] = time_median(repeats, [&] {
        nk_dots_packed_bf16(reinterpret_cast<nk_bf16_t const *>(a16.data()), packed_bf16.data(), c.data(), rows,
                            columns, depth, depth * 2, columns * sizeof(float));
    });
    (void)bf16_wall;
    std::printf(
        "  NumKong nk_dots_packed_bf16 (dispatched: AMX on Sapphire Rapids), 1 thread: %7.1f GFLOP/s CPU time\n",
        flops / bf16_cpu * 1e-9);
}

// region: the text forward

/** @brief A loaded model. */
struct model_t {
    checkpoint_t checkpoint;
    mapped_file_t file;
    model_weights_t weights;
};

/** @brief Loads a checkpoint for `cpu_class`; false with a message on failure. */
bool load(std::string const &path, model_t &model, parallel_t const &parallel,
          uform_cpu_class_t cpu_class = uform_cpu_class_auto_k) {
    char const *message = "";
    if (checkpoint_read_file(path.data(), path.size(), model.checkpoint, &message) != uform_status_ok_k ||
        model.file.open(path.data(), path.size(), &message) != uform_status_ok_k) {
        std::printf("cannot read %s: %s\n", path.c_str(), message);
        return false;
    }
    weights_options_t options;
    options.parallel = parallel;
    options.cpu_class = cpu_class;
    if (weights_load(model.checkpoint, model.file.bytes(), options, model.weights, &message) != uform_status_ok_k) {
        std::printf("cannot load %s: %s\n", path.c_str(), message);
        return false;
    }
    model.file.close();
    return true;
}

/** @brief `count` printable texts of `length` bytes, packed. */
void make_texts(std::size_t count, std::size_t length, std::vector<std::uint8_t> &bytes,
                std::vector<std::size_t> &offsets) {
    std::mt19937 random(3);
    bytes.resize(count * length);
    for (std::uint8_t &byte : bytes) byte = static_cast<std::uint8_t>(32 + random() % 95);
    offsets.resize(count + 1);
    for (std::size_t i = 0; i <= count; ++i) offsets[i] = i * length;
}

/** @brief Useful FLOPs of one embedding call: the trunk's linears, attention's two products, the embedding head. */
double forward_flops(geometry_t const &g, std::size_t count, std::size_t length) {
    double const tokens = double(count * length), attention = double(g.heads * g.head_dim);
    double const linears = 2.0 * g.hidden * (3 * attention + 2.0 * g.ffn_hidden) + 2.0 * attention * g.hidden +
                           2.0 * g.ffn_hidden * g.hidden;
    double const products = 4.0 * double(length) * double(length) * attention * double(count);
    return double(g.depth) * (tokens * linears + products) + 2.0 * double(count) * g.hidden * g.dimensions;
}

/** @brief Embeddings of `count` texts of `length` bytes on `threads` threads: calls/s, tokens/s, share of peak. */
void bench_forward(model_weights_t const &weights, char const *name, std::size_t count, std::size_t length,
                   std::size_t threads, std::size_t repeats, double peak) {
    std::vector<std::uint8_t> bytes;
    std::vector<std::size_t> offsets;
    make_texts(count, length, bytes, offsets);
    text_batch_t const batch{bytes.data(), offsets.data(), count, false};
    std::vector<float> embeddings(count * weights.geometry.dimensions);
    text_outputs_t outputs;
    outputs.embeddings = embeddings.data();
    outputs.embeddings_stride = weights.geometry.dimensions;
    pool_t pool(threads);
    forward_hooks_t hooks;
    hooks.parallel = pool.parallel;
    scratch_t scratch;
    auto [wall, cpu] = time_median(repeats, [&] { text_forward(weights, batch, outputs, scratch, hooks, nullptr); });
    double const flops = forward_flops(weights.geometry, count, length);
    std::printf("  %s, %zu x %zu bytes, %zu thread%s: %9.1f calls/s, %9.0f tokens/s wall, %6.1f us/call, %.1f GFLOP/s"
                " (%.0f%% of the ceiling)",
                name, count, length, threads, threads == 1 ? "" : "s", 1 / wall, double(count * length) / wall,
                wall * 1e6, flops / wall * 1e-9, 100 * flops / wall * 1e-9 / peak);
    if (threads == 1) std::printf("; CPU time: %9.0f tokens/s, %6.1f us/call", double(count * length) / cpu, cpu * 1e6);
    std::printf("; scratch %.1f MiB\n", double(scratch.capacity()) / (1 << 20));
}

} // namespace

int main(int argc, char **argv) {
    std::string tiny = "tests/data/tiny.safetensors", small;
    std::size_t repeats = 15;
    bool small_only = false;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--tiny") == 0) tiny = argv[i + 1];
        else if (std::strcmp(argv[i], "--small") == 0) small = argv[i + 1];
        else if (std::strcmp(argv[i], "--repeats") == 0) repeats = std::strtoul(argv[i + 1], nullptr, 10);
        else if (std::strcmp(argv[i], "--small-only") == 0) small_only = std::strcmp(argv[i + 1], "0") != 0;
    }
    uform_cpu_class_t const native = cpu_class_native();
    std::printf("CPU class %d; %u hardware threads\n", int(native), std::thread::hardware_concurrency());
    auto const [peak1, peak1_wall] = fma_peak(1);
    auto const [peak2, peak2_wall] = fma_peak(2);
    std::printf("F32 FMA ceiling: %.1f GFLOP/s on 1 thread, %.1f on 2 (CPU time; wall-clock %.1f and %.1f)\n", peak1,
                peak2, peak1_wall, peak2_wall);

    if (!small_only) bench_gemm(2048, 512, 2048, repeats, peak1, peak2);

    pool_t loader(2);
    // The native class (AMX tiles where the OS grants them) and, where the machine has AVX-512, the F32 FMA path.
    std::vector<std::pair<char const *, uform_cpu_class_t>> paths{{"native", uform_cpu_class_auto_k}};
    if (!small_only && native != uform_cpu_class_intel_skylake_k &&
        cpu_class_available(uform_cpu_class_intel_skylake_k))
        paths.emplace_back("F32 FMA", uform_cpu_class_intel_skylake_k);
    for (auto [name, cpu_class] : paths) {
        if (small_only) break;
        model_t model;
        if (!load(tiny, model, loader.parallel, cpu_class)) continue;
        std::printf("tiny, %s%s, weights %.2f MiB:\n", name, model.weights.amx ? " (AMX tiles)" : "",
                    double(model.weights.bytes()) / (1 << 20));
        bench_forward(model.weights, "tiny", 8, 64, 1, repeats * 20, peak1);
        bench_forward(model.weights, "tiny", 1, 16, 1, repeats * 100, peak1);
    }
    if (!small.empty()) {
        for (auto [name, cpu_class] : paths) {
            model_t model;
            if (!load(small, model, loader.parallel, cpu_class)) continue;
            std::printf("small, %s%s, weights %.1f MiB:\n", name, model.weights.amx ? " (AMX tiles)" : "",
                        double(model.weights.bytes()) / (1 << 20));
            bench_forward(model.weights, "small", 32, 256, 2, repeats, peak2);
            bench_forward(model.weights, "small", 32, 256, 1, std::max<std::size_t>(repeats / 3, 3), peak1);
        }
        rusage usage{};
        getrusage(RUSAGE_SELF, &usage);
        std::printf("peak RSS %.1f MiB%s\n", double(usage.ru_maxrss) / 1024,
                    small_only ? "" : " (with the GEMM's buffers and every model loaded one after the other)");
    }
    return 0;
}
