// The RAM backend's hardware facts: NUMA nodes from sysfs, CPU classes from NumKong's capabilities (through
// cpp/kernels), and the set-up every owned worker thread runs first. The GPUs are cuda/'s, or no_gpu.cpp's none.
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>
#if defined(__linux__)
#include <sched.h>
#endif

#include "cpp/kernels/cpu_class.hpp"
#include "cpp/backend/ram.hpp"

namespace uform::backend {
namespace {

/// Reads a small sysfs file into `buffer` (NUL-terminated) with plain system calls, which allocate nothing;
/// false when it is missing or empty.
bool read_small_file(char const *path, char *buffer, std::size_t capacity) noexcept {
    int const descriptor = ::open(path, O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return false;
    std::size_t length = 0;
    while (length + 1 < capacity) {
        ssize_t const got = ::read(descriptor, buffer + length, capacity - 1 - length);
        if (got <= 0) break;
        length += std::size_t(got);
    }
    ::close(descriptor);
    buffer[length] = 0;
    return length != 0;
}

/// Calls `visit(first, last)` for every range of a sysfs list such as `0-3,8,10-11`; false when it is malformed.
template <typename visit_type_>
bool parse_list(char const *text, visit_type_ &&visit) noexcept {
    char const *cursor = text;
    auto number = [&](std::size_t &value) noexcept {
        if (*cursor < '0' || *cursor > '9') return false;
        value = 0;
        while (*cursor >= '0' && *cursor <= '9') {
            value = value * 10 + std::size_t(*cursor - '0');
            if (value > (std::size_t(1) << 20)) return false;
            ++cursor;
        }
        return true;
    };
    while (*cursor && *cursor != '\n') {
        std::size_t first = 0, last = 0;
        if (!number(first)) return false;
        last = first;
        if (*cursor == '-') {
            ++cursor;
            if (!number(last) || last < first) return false;
        }
        visit(first, last);
        if (*cursor == ',') ++cursor;
    }
    return true;
}

/// NUMA nodes from `/sys/devices/system/node/online`: one past the highest node online, at least one.
std::size_t probe_numa_nodes() noexcept {
    char text[256];
    if (!read_small_file("/sys/devices/system/node/online", text, sizeof(text))) return 1;
    std::size_t highest = 0;
    bool any = false;
    if (!parse_list(text, [&](std::size_t, std::size_t last) noexcept {
            highest = last > highest ? last : highest;
            any = true;
        }))
        return 1;
    return any ? highest + 1 : 1;
}

/// Pins the calling thread to the CPUs of NUMA node `node`; does nothing where the OS does not say which.
void pin_to_node(std::size_t node) noexcept {
#if defined(__linux__)
    char path[96];
    std::snprintf(path, sizeof(path), "/sys/devices/system/node/node%zu/cpulist", node);
    char text[4096];
    if (!read_small_file(path, text, sizeof(text))) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    bool any = false;
    bool const parsed = parse_list(text, [&](std::size_t first, std::size_t last) noexcept {
        for (std::size_t cpu = first; cpu <= last && cpu < CPU_SETSIZE; ++cpu) {
            CPU_SET(cpu, &set);
            any = true;
        }
    });
    if (parsed && any) (void)::sched_setaffinity(0, sizeof(set), &set);
#else
    (void)node;
#endif
}

} // namespace

std::size_t numa_nodes() noexcept {
    static std::size_t const nodes = probe_numa_nodes();
    return nodes;
}

bool cpu_class_available(uform_cpu_class_t cpu_class) noexcept { return ram::cpu_class_available(cpu_class); }

uform_cpu_class_t cpu_class_native() noexcept { return ram::cpu_class_native(); }

void worker_start(uform_residency_t residency, std::span<std::size_t const> numa_nodes, std::size_t worker,
                  std::size_t) noexcept {
    if (residency != uform_residency_ram_k) return;
    if (!numa_nodes.empty()) pin_to_node(numa_nodes[worker % numa_nodes.size()]);
    // The executor's class is not known here: configure for everything the hardware has (AMX tiles, SME state).
    (void)ram::cpu_class_configure_thread(uform_cpu_class_auto_k);
}

} // namespace uform::backend
