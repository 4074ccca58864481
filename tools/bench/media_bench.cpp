// The RAM residency's file verbs, decoding included, through the public C API alone: images per second over
// a batch of JPEG files and seconds of audio per second over a batch of WAV or MP3 recordings, each batch one call
// asking for F32 embeddings. Prints the median wall-clock and process CPU time of the calls. Not a test: the CMake
// target `uform_media_bench` builds it in the RAM configuration, and tools/bench/media_compare.py writes its inputs
// and runs it beside a PyTorch pipeline.
//
//   uform_media_bench --model small.safetensors --media build/bench/media [--only images,wav,mp3] [--images 16]
//                     [--clips 8] [--threads 1,2] [--repeats 5] [--json] [--embeddings DIR]
//
// The media folder holds `image_00.jpg`, `image_01.jpg`, ... and `clip_00.wav`, `clip_00.mp3`, ...; the first
// `--images` and `--clips` of them make the batches. Each case runs once per thread count: one thread is the calling
// thread (a `NULL` executor); N threads are a RAM executor owning N - 1 threads, whose loops the calling thread
// joins. `--embeddings DIR` writes each case's embeddings, as computed on the first thread count, to
// `DIR/<case>.f32` (row-major F32, `dimensions` columns), for a comparison with other pipelines.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>
#include <time.h>

#include <uform/uform.h>

#include "tools/bench/arguments.hpp"
#include "tools/bench/report.hpp"

namespace {

using namespace uform::bench;

/// Seconds of CPU time of the whole process, every thread's.
double process_cpu_now() {
    timespec now;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return double(now.tv_sec) + double(now.tv_nsec) * 1e-9;
}

/// What the command line chose.
struct options_t {
    std::string model, media, embeddings;
    std::vector<std::string> only{"images", "wav", "mp3"};
    std::size_t images = 16, clips = 8, repeats = 5;
    std::vector<std::size_t> threads{1, 2};
    bool json = false;
};

/// A tape of paths, as the file verbs take it.
struct paths_t {
    std::string data;
    std::vector<std::size_t> offsets{0};

    /// Appends `path`.
    void add(std::string const &path) {
        data += path;
        offsets.push_back(data.size());
    }
    /// Paths in the tape.
    std::size_t count() const { return offsets.size() - 1; }
};

/// What one call of a case did, from its verb's stats.
struct call_stats_t {
    std::size_t tokens = 0;
    double audio_seconds = 0;
};

/// One call of the verb of case `name` (`images`, `wav` or `mp3`) on `paths`, F32 embeddings into `arena`.
uform_status_t encode(std::string const &name, uform_model_t model, uform_executor_t executor, paths_t const &paths,
                      uform_arena_t arena, uform_encoded_t &encoded, call_stats_t &stats, char const **message) {
    if (name == "images") {
        uform_image_encode_stats_t image_stats{};
        uform_image_encode_args_t args{};
        args.scalar = uform_scalar_f32_k;
        args.stats = &image_stats;
        uform_status_t const status =
            uform_image_encode(model, executor, paths.data.data(), paths.data.size(), paths.offsets.data(),
                               paths.count(), uform_outputs_embeddings_k, &args, arena, &encoded, nullptr, message);
        stats.tokens = image_stats.tokens;
        return status;
    }
    uform_audio_encode_stats_t audio_stats{};
    uform_audio_encode_args_t args{};
    args.scalar = uform_scalar_f32_k;
    args.stats = &audio_stats;
    uform_status_t const status =
        uform_audio_encode(model, executor, paths.data.data(), paths.data.size(), paths.offsets.data(), paths.count(),
                           uform_outputs_embeddings_k, &args, arena, &encoded, nullptr, message);
    stats.tokens = audio_stats.tokens;
    stats.audio_seconds = audio_stats.seconds;
    return status;
}

/// Writes the F32 `rows` to `path`, packed; false with a message on standard error on failure.
bool write_embeddings(std::string const &path, uform_rows_t const &rows) {
    std::FILE *file = std::fopen(path.c_str(), "wb");
    bool written = file != nullptr;
    for (std::size_t row = 0; written && row != rows.count; ++row)
        written = std::fwrite(static_cast<char const *>(rows.data) + row * rows.stride, sizeof(float), rows.columns,
                              file) == rows.columns;
    if (file) written = std::fclose(file) == 0 && written;
    if (!written) std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return written;
}

/// Times case `name` on `threads` threads: a warm-up call, then the median of `repeats` calls.
bool bench_case(options_t const &options, uform_model_t model, std::string const &name, std::size_t threads,
                bool keep_embeddings) {
    bool const images = name == "images";
    paths_t paths;
    char path[64];
    for (std::size_t i = 0; i != (images ? options.images : options.clips); ++i) {
        std::snprintf(path, sizeof path, images ? "/image_%02zu.jpg" : "/clip_%02zu.%s", i, name.c_str());
        paths.add(options.media + path);
    }
    char const *message = "";
    uform_executor_t executor = nullptr;
    if (threads > 1 && uform_executor_init_ram(nullptr, 0, uform_cpu_class_auto_k, threads - 1, &executor, &message) !=
                           uform_status_ok_k) {
        std::fprintf(stderr, "cannot make an executor of %zu threads: %s\n", threads - 1, message);
        return false;
    }
    uform_arena_t arena = nullptr;
    if (uform_arena_init(nullptr, &arena, &message) != uform_status_ok_k) {
        std::fprintf(stderr, "cannot make an arena: %s\n", message);
        uform_executor_free(executor);
        return false;
    }
    uform_encoded_t encoded{};
    call_stats_t stats;
    std::vector<double> wall, cpu;
    bool ok = true;
    for (std::size_t call = 0; ok && call <= options.repeats; ++call) {
        double const wall_start = wall_now(), cpu_start = process_cpu_now();
        uform_status_t const status = encode(name, model, executor, paths, arena, encoded, stats, &message);
        double const wall_seconds = wall_now() - wall_start, cpu_seconds = process_cpu_now() - cpu_start;
        if (status != uform_status_ok_k) {
            std::fprintf(stderr, "%s failed (%s): %s\n", name.c_str(), uform_status_name(status), message);
            ok = false;
        } else if (call != 0) { // the first call warms up
            wall.push_back(wall_seconds);
            cpu.push_back(cpu_seconds);
        }
    }
    if (ok && keep_embeddings && !options.embeddings.empty())
        ok = write_embeddings(options.embeddings + "/" + name + ".f32", encoded.embeddings);
    uform_arena_free(arena);
    uform_executor_free(executor);
    if (!ok) return false;
    double const seconds = median(wall);
    record_t record("media");
    record.text("case", name)
        .number("threads", double(threads))
        .number("files", double(paths.count()))
        .number("tokens", double(stats.tokens))
        .number("seconds_per_call", seconds)
        .number("cpu_seconds_per_call", median(cpu))
        .number("files_per_s", double(paths.count()) / seconds);
    if (!images)
        record.number("audio_seconds", stats.audio_seconds)
            .number("audio_seconds_per_s", stats.audio_seconds / seconds);
    record.print(options.json);
    return true;
}

/// Reads the command line into `options`; false when the bench should exit with `exit_code` (`--help`, or an error
/// already on standard error).
bool parse(int argc, char **argv, options_t &options, int &exit_code) {
    arguments_t arguments("uform_media_bench");
    arguments.text("--model", options.model, "the checkpoint (required)")
        .text("--media", options.media, "the folder of media files (required)", "DIR")
        .text("--embeddings", options.embeddings, "where to write the embeddings", "DIR")
        .list("--only", options.only, "the cases: images, wav, mp3")
        .count("--images", options.images, "images a call")
        .count("--clips", options.clips, "clips a call")
        .count("--repeats", options.repeats, "calls timed per median")
        .counts("--threads", options.threads, "the thread counts each case runs with")
        .flag("--json", options.json, "one JSON object per line");
    if (!arguments.parse(argc, argv, exit_code)) return false;
    exit_code = 2;
    if (options.model.empty() || options.media.empty()) {
        std::fprintf(stderr, "needs --model PATH and --media DIR\n");
        return false;
    }
    if (options.threads.empty()) {
        std::fprintf(stderr, "--threads needs at least one count\n");
        return false;
    }
    return true;
}

} // namespace

int main(int argc, char **argv) {
    options_t options;
    if (int exit_code = 0; !parse(argc, argv, options, exit_code)) return exit_code;
    uform_model_load_ram_args_t load{};
    load.path = options.model.data();
    load.path_length = options.model.size();
    uform_model_t model = nullptr;
    char const *message = "";
    if (uform_model_load_ram(&load, &model, &message) != uform_status_ok_k) {
        std::fprintf(stderr, "cannot load %s: %s\n", options.model.c_str(), message);
        return 1;
    }
    uform_model_description_t description{};
    uform_model_describe(model, &description, &message);
    record_t("machine")
        .number("hardware_threads", std::thread::hardware_concurrency())
        .number("cpu_class", double(description.cpu_class))
        .number("weights_mib", double(description.weight_bytes) / (1 << 20))
        .print(options.json);
    bool ok = true;
    for (std::string const &name : options.only) {
        if (name != "images" && name != "wav" && name != "mp3") {
            std::fprintf(stderr, "unknown case %s: images, wav or mp3\n", name.c_str());
            ok = false;
            break;
        }
        for (std::size_t i = 0; ok && i != options.threads.size(); ++i)
            ok = bench_case(options, model, name, options.threads[i], i == 0);
    }
    uform_model_free(model);
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    record_t("rss").number("peak_mib", double(usage.ru_maxrss) / 1024).print(options.json);
    return ok ? 0 : 1;
}
