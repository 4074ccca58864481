/**
 * @file mesh_planted.cpp
 * @brief Whoever can write a mesh's shared directory can plant files in it; none of them may hang a rank, make it
 * read without bound, or outlive its timeout. Under each name a rank waits for (rank 0 reads `<job>.ready.1`, rank 1
 * reads `<job>.attempt`) this plants a FIFO, a symbolic link to `/dev/zero` and a sparse 1 GiB file: the rank answers
 * `timeout` within its timeout and its peak RSS grows by less than 64 MiB. Host counts above the documented maximum
 * (4096) answer `invalid-argument` at once, and the timeout holds for a count at that maximum. (A one-rank mesh over
 * a directory it cannot write is in mesh_faults.cpp, with the other unwritable directories.)
 *
 * An alarm turns a hang into a failure of this test.
 */
#include "mesh_ranks.hpp"

#include <cstdint>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

using namespace mesh_test;

namespace {

/** Peak resident memory of the process so far, in MiB. */
double peak_rss_mib() {
    struct rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return double(usage.ru_maxrss) / 1024.0;
}

/** The kinds of planted file. */
enum plant_t { fifo_k, link_to_zero_k, sparse_k };

char const *plant_name(plant_t plant) {
    return plant == fifo_k ? "a FIFO" : plant == link_to_zero_k ? "a link to /dev/zero" : "a sparse 1 GiB file";
}

/** Plants `plant` at `path`; whether it worked. */
bool plant_at(std::string const &path, plant_t plant) {
    if (plant == fifo_k) return mkfifo(path.c_str(), 0600) == 0;
    if (plant == link_to_zero_k) return symlink("/dev/zero", path.c_str()) == 0;
    int const descriptor = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (descriptor < 0) return false;
    bool const grown = ftruncate(descriptor, off_t(1) << 30) == 0;
    ::close(descriptor);
    return grown;
}

/**
 * For each kind of file and each rank's name: the rank alone (its peer never comes) answers `timeout` within its
 * 2-second timeout plus slack, and reads none of the planted bytes into memory.
 */
void planted(char const *directory) {
    for (plant_t plant : {fifo_k, link_to_zero_k, sparse_k})
        for (std::size_t rank = 0; rank != 2; ++rank) {
            std::string const job = "planted-" + std::to_string(int(plant)) + "-" + std::to_string(rank);
            std::string const name = rank == 0 ? job + ".ready.1" : job + ".attempt";
            if (!CHECK(plant_at(std::string(directory) + "/" + name, plant))) continue;
            double const rss_before = peak_rss_mib();
            uform_mesh_t mesh = NULL;
            auto const start = std::chrono::steady_clock::now();
            CHECK_STATUS(join(directory, job.c_str(), rank, 2, 2, &mesh), uform_status_timeout_k);
            double const seconds = seconds_since(start), grown = peak_rss_mib() - rss_before;
            std::fprintf(stderr, "mesh: %s as %s: rank %zu answered in %.2f s, peak RSS +%.1f MiB\n", plant_name(plant),
                         name.c_str(), rank, seconds, grown);
            CHECK(seconds >= 2.0 && seconds < 5.0);
            CHECK(grown < 64.0);
            CHECK(mesh == NULL);
        }
}

/** Host counts above 4096 are refused at once; at 4096 the rank's timeout still holds. */
void counts(char const *directory) {
    for (std::size_t count : {std::size_t(SIZE_MAX), std::size_t(1000000), std::size_t(4097)}) {
        uform_mesh_t mesh = NULL;
        auto const start = std::chrono::steady_clock::now();
        CHECK_STATUS(join(directory, "counts", 0, count, 4, &mesh), uform_status_invalid_argument_k);
        CHECK(test_message_ && std::strstr(test_message_, "host_domain_count"));
        CHECK(seconds_since(start) < 2.0);
    }
    for (std::size_t rank : {std::size_t(0), std::size_t(4095)}) {
        uform_mesh_t mesh = NULL;
        auto const start = std::chrono::steady_clock::now();
        std::string const job = "most-hosts-" + std::to_string(rank);
        CHECK_STATUS(join(directory, job.c_str(), rank, 4096, 1, &mesh), uform_status_timeout_k);
        double const seconds = seconds_since(start);
        std::fprintf(stderr, "mesh: rank %zu of 4096 alone answered timeout in %.2f s (timeout 1 s)\n", rank, seconds);
        CHECK(seconds >= 1.0 && seconds < 3.5);
    }
}

} // namespace

int main() {
    if (build_is_stub()) return test_report("mesh planted"); // the stub joins no RAM mesh
    char directory[4096];
    if (!CHECK(make_temp_directory(directory, sizeof(directory), "mesh-planted"))) return test_report("mesh planted");
    alarm(120);
    planted(directory);
    counts(directory);
    alarm(0);
    return report_and_clean("mesh planted", directory);
}
