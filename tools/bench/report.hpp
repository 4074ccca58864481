/**
 * @file report.hpp
 * @brief What the benchmarks of tools/bench/ share: a wall clock, medians, comma lists on the command line, and
 * the records they print, one per line, as text or as JSON objects that tools/bench/text_compare.py and
 * tools/bench/media_compare.py read.
 */
#ifndef UFORM_TOOLS_BENCH_REPORT_HPP
#define UFORM_TOOLS_BENCH_REPORT_HPP

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <time.h>

namespace uform::bench {

/** @brief Seconds of wall-clock time. */
inline double wall_now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/** @brief Seconds of the calling thread's CPU time. */
inline double thread_cpu_now() {
    timespec now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return double(now.tv_sec) + double(now.tv_nsec) * 1e-9;
}

/** @brief The median of `values`: the middle one, or the mean of the middle two (as Python's `statistics.median`). */
inline double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    std::size_t const half = values.size() / 2;
    if (values.empty()) return 0;
    return values.size() % 2 ? values[half] : (values[half - 1] + values[half]) / 2;
}

/** @brief SplitMix64's output for `index`: the benchmark texts' source of bytes, easy to repeat in any language. */
inline std::uint64_t splitmix64(std::uint64_t index) {
    std::uint64_t z = (index + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/** @brief `count` printable texts of `length` bytes, packed: byte k is `32 + splitmix64(k) % 95`. */
inline void make_texts(std::size_t count, std::size_t length, std::vector<std::uint8_t> &bytes,
                       std::vector<std::size_t> &offsets) {
    bytes.resize(count * length);
    for (std::size_t k = 0; k != bytes.size(); ++k) bytes[k] = static_cast<std::uint8_t>(32 + splitmix64(k) % 95);
    offsets.resize(count + 1);
    for (std::size_t i = 0; i <= count; ++i) offsets[i] = i * length;
}

/** @brief Splits `list` at commas. */
inline std::vector<std::string> split(std::string const &list) {
    std::vector<std::string> items;
    for (std::size_t start = 0; start <= list.size();) {
        std::size_t const end = std::min(list.find(',', start), list.size());
        if (end > start) items.push_back(list.substr(start, end - start));
        start = end + 1;
    }
    return items;
}

/** @brief One measurement: a kind and named fields, printed as one line of text or as one JSON object. */
class record_t {
  public:
    explicit record_t(char const *kind) : kind_(kind) {}

    /** @brief Adds a string field. */
    record_t &text(char const *key, std::string value) {
        fields_.push_back({key, std::move(value), true});
        return *this;
    }
    /** @brief Adds a numeric field; JSON gets `null` for a non-finite value. */
    record_t &number(char const *key, double value) {
        char buffer[32] = "null";
        if (std::isfinite(value)) std::snprintf(buffer, sizeof buffer, "%.6g", value);
        fields_.push_back({key, buffer, false});
        return *this;
    }
    /** @brief Prints the record on a line of its own and flushes, so a reading pipe sees it at once. */
    void print(bool json) const {
        if (json) {
            std::printf("{\"kind\": \"%s\"", kind_);
            for (field_t const &field : fields_)
                std::printf(field.quoted ? ", \"%s\": \"%s\"" : ", \"%s\": %s", field.key, field.value.c_str());
            std::printf("}\n");
        } else {
            std::printf("%-8s", kind_);
            for (std::size_t i = 0; i != fields_.size(); ++i)
                std::printf("%s%s %s", i ? ", " : " ", fields_[i].key, fields_[i].value.c_str());
            std::printf("\n");
        }
        std::fflush(stdout);
    }

  private:
    struct field_t {
        char const *key;
        std::string value;
        bool quoted;
    };
    char const *kind_;
    std::vector<field_t> fields_;
};

} // namespace uform::bench

#endif // UFORM_TOOLS_BENCH_REPORT_HPP
