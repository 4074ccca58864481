/**
 * @file executors.c
 * @brief Executors of every kind: their statuses at init, residency, width, drain moods, and GPU devices.
 */
#include "common.h"

#include <unistd.h>

/** The width a RAM executor made with zero threads owns: 7/8 of the online cores, at least one. */
static size_t default_threads(void) {
    long const cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t const threads = cores > 0 ? (size_t)cores * 7 / 8 : 0;
    return threads ? threads : 1;
}

/* The width of a RAM executor asked for `threads`: WASI has no threads, so there it owns none whatever it was asked,
 * and the calling thread runs every loop. */
#if defined(__wasi__)
#define OWNED_THREADS(threads) ((void)(threads), (size_t)0)
#else
#define OWNED_THREADS(threads) (threads)
#endif

static void ram_executors(void) {
    uform_executor_t executor = NULL;
    uform_residency_t residency = uform_residency_vram_k;
    size_t width = 0;
    size_t node = 0;

    /* Zero threads take 7/8 of the cores, at least one. */
    if (CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 0, &executor, MSG))) {
        CHECK(executor != NULL);
        CHECK_OK(uform_executor_residency(executor, &residency, MSG));
        CHECK(residency == uform_residency_ram_k);
        CHECK_OK(uform_executor_width(executor, &width, MSG));
        CHECK_SIZE(width, OWNED_THREADS(default_threads()));
        CHECK_OK(uform_executor_drain(executor, uform_mood_spinning_k, MSG));
        CHECK_OK(uform_executor_drain(executor, uform_mood_sleeping_k, MSG));
        CHECK_OK(uform_executor_drain(executor, uform_mood_spinning_k, NULL));
        CHECK_STATUS(uform_executor_drain(executor, (uform_mood_t)2, MSG), uform_status_invalid_argument_k);
        CHECK_STATUS(uform_executor_drain(executor, (uform_mood_t)-1, NULL), uform_status_invalid_argument_k);
        CHECK_STATUS(uform_executor_residency(executor, NULL, MSG), uform_status_invalid_argument_k);
        CHECK_STATUS(uform_executor_width(executor, NULL, MSG), uform_status_invalid_argument_k);
        uform_executor_free(executor);
    }

    /* An explicit thread count is the width. */
    executor = NULL;
    if (CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 3, &executor, MSG))) {
        CHECK_OK(uform_executor_width(executor, &width, MSG));
        CHECK_SIZE(width, OWNED_THREADS(3));
        uform_executor_free(executor);
    }

    /* The portable floor exists everywhere; so does NUMA node 0. */
    executor = NULL;
    if (CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_serial_k, 1, &executor, MSG)))
        uform_executor_free(executor);
    executor = NULL;
    if (CHECK_OK(uform_executor_init_ram(&node, 1, uform_cpu_class_auto_k, 1, &executor, MSG)))
        uform_executor_free(executor);

    /* Threads interleaved over node 0 twice over; a node that does not exist is named clearly. */
    executor = NULL;
    if (CHECK_OK(uform_executor_init_ram(&node, 1, uform_cpu_class_auto_k, 3, &executor, MSG))) {
        CHECK_OK(uform_executor_width(executor, &width, MSG));
        CHECK_SIZE(width, OWNED_THREADS(3));
        uform_executor_free(executor);
    }
    node = 4096;
    executor = NULL;
    CHECK_STATUS(uform_executor_init_ram(&node, 1, uform_cpu_class_auto_k, 1, &executor, MSG),
                 uform_status_not_found_k);
    CHECK(executor == NULL);
    CHECK(test_message_ != NULL && strstr(test_message_, "NUMA node") != NULL);
    node = (size_t)-1;
    CHECK_STATUS(uform_executor_init_ram(&node, 1, uform_cpu_class_auto_k, 0, &executor, NULL),
                 uform_status_not_found_k);
    node = 0;

    /* A class this hardware lacks. */
    executor = NULL;
#if !defined(__wasm__)
    CHECK_STATUS(uform_executor_init_ram(NULL, 0, uform_cpu_class_wasm_v128_relaxed_k, 1, &executor, MSG),
                 uform_status_unsupported_k);
    CHECK_STATUS(uform_executor_init_ram(NULL, 0, uform_cpu_class_wasm_simd128_k, 1, &executor, MSG),
                 uform_status_unsupported_k);
#endif
#if defined(__x86_64__) || defined(_M_X64)
    CHECK_STATUS(uform_executor_init_ram(NULL, 0, uform_cpu_class_arm_neon_k, 1, &executor, MSG),
                 uform_status_unsupported_k);
#elif defined(__aarch64__)
    CHECK_STATUS(uform_executor_init_ram(NULL, 0, uform_cpu_class_intel_haswell_k, 1, &executor, MSG),
                 uform_status_unsupported_k);
#endif

    /* Refusals. */
    CHECK_STATUS(uform_executor_init_ram(NULL, 0, (uform_cpu_class_t)14, 1, &executor, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_executor_init_ram(NULL, 1, uform_cpu_class_auto_k, 1, &executor, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, NULL, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 1, NULL, NULL),
                 uform_status_invalid_argument_k);
}

static void local_and_pool_executors(void) {
    uform_executor_t executor = NULL;
    uform_residency_t residency = uform_residency_vram_k;
    size_t width = 99;
    int pool_stand_in = 0;

    if (CHECK_OK(uform_executor_init_local(&executor, MSG))) {
        CHECK(executor != NULL);
        CHECK_OK(uform_executor_residency(executor, &residency, MSG));
        CHECK(residency == uform_residency_ram_k);
        CHECK_OK(uform_executor_width(executor, &width, MSG));
        CHECK_SIZE(width, 0);
        CHECK_OK(uform_executor_drain(executor, uform_mood_sleeping_k, MSG));
        CHECK_OK(uform_executor_drain(executor, uform_mood_spinning_k, MSG));
        CHECK_STATUS(uform_executor_drain(executor, (uform_mood_t)9, MSG), uform_status_invalid_argument_k);
        uform_executor_free(executor);
    }
    CHECK_STATUS(uform_executor_init_local(NULL, MSG), uform_status_invalid_argument_k);

    /* Borrowing a ForkUnion pool is not designed yet; a missing pool is a null pointer. */
    executor = NULL;
    CHECK_STATUS(uform_executor_init_pool(NULL, 0, uform_cpu_class_auto_k, &pool_stand_in, 0, &executor, MSG),
                 uform_status_unsupported_k);
    CHECK_STATUS(uform_executor_init_pool(NULL, 0, uform_cpu_class_auto_k, NULL, 0, &executor, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_executor_init_pool(NULL, 0, uform_cpu_class_auto_k, &pool_stand_in, 0, NULL, MSG),
                 uform_status_invalid_argument_k);

    /* Null handles. */
    CHECK_STATUS(uform_executor_residency(NULL, &residency, MSG), uform_status_invalid_argument_k);
    CHECK_STATUS(uform_executor_width(NULL, &width, MSG), uform_status_invalid_argument_k);
    CHECK_STATUS(uform_executor_drain(NULL, uform_mood_spinning_k, MSG), uform_status_invalid_argument_k);
    uform_executor_free(NULL);
}

static void gpu_devices(void) {
    uform_gpu_device_t devices[8];
    size_t count = 99, i, expected;
    memset(devices, 0xEE, sizeof(devices));

    if (!CHECK_OK(uform_gpu_devices(NULL, 0, &count, MSG))) return;
    if (build_is_stub()) {
        expected = stub_gpu_count();
        CHECK_SIZE(count, expected);
    } else if (!build_has_gpus()) {
        CHECK_SIZE(count, 0);
    }
    expected = count;

    /* A capacity of one fills one entry, leaves the rest alone, and still answers the whole count. */
    if (expected >= 2) {
        count = 0;
        CHECK_OK(uform_gpu_devices(devices, 1, &count, MSG));
        CHECK_SIZE(count, expected);
        CHECK(memchr(devices[0].name, 0, sizeof(devices[0].name)) != NULL && devices[0].name[0] != '\0');
        CHECK((unsigned char)devices[1].name[0] == 0xEE && (unsigned char)devices[1].pci_bus_id[0] == 0xEE);
    }

    /* A larger capacity fills every device. */
    count = 0;
    memset(devices, 0xEE, sizeof(devices));
    CHECK_OK(uform_gpu_devices(devices, 8, &count, MSG));
    CHECK_SIZE(count, expected);
    for (i = 0; i < count && i < 8; ++i) {
        CHECK(memchr(devices[i].name, 0, sizeof(devices[i].name)) != NULL && devices[i].name[0] != '\0');
        CHECK(memchr(devices[i].pci_bus_id, 0, sizeof(devices[i].pci_bus_id)) != NULL &&
              devices[i].pci_bus_id[0] != '\0');
        CHECK(devices[i].memory_bytes > 0);
        CHECK(devices[i].multiprocessors > 0);
        CHECK(devices[i].gpu_class != uform_gpu_class_auto_k && uform_gpu_class_name(devices[i].gpu_class) != NULL);
    }
    if (count >= 2) CHECK(strcmp(devices[0].pci_bus_id, devices[1].pci_bus_id) != 0);

    /* Refusals. */
    CHECK_STATUS(uform_gpu_devices(devices, 8, NULL, MSG), uform_status_invalid_argument_k);
    CHECK_STATUS(uform_gpu_devices(NULL, 2, &count, MSG), uform_status_invalid_argument_k);
}

static void vram_executors(void) {
    uform_executor_t executor = NULL;
    uform_residency_t residency = uform_residency_ram_k;
    size_t count = 0, width = 0;
    size_t devices[2] = {0, 1};
    size_t scratch[2] = {1u << 20, 1u << 20};
    void *streams[2] = {&count, &width};
    int pool_stand_in = 0;

    CHECK_OK(uform_gpu_devices(NULL, 0, &count, MSG));
    if (count == 0) {
        CHECK_STATUS(
            uform_executor_init_vram(devices, 1, uform_gpu_class_auto_k, NULL, 0, NULL, NULL, 0, 0, &executor, MSG),
            uform_status_unsupported_k);
        return;
    }

    if (CHECK_OK(
            uform_executor_init_vram(devices, 1, uform_gpu_class_auto_k, NULL, 0, NULL, NULL, 0, 0, &executor, MSG))) {
        CHECK_OK(uform_executor_residency(executor, &residency, MSG));
        CHECK(residency == uform_residency_vram_k);
        CHECK_OK(uform_executor_width(executor, &width, MSG));
        CHECK_SIZE(width, 1);
        CHECK_OK(uform_executor_drain(executor, uform_mood_spinning_k, MSG));
        CHECK_OK(uform_executor_drain(executor, uform_mood_sleeping_k, MSG));
        uform_executor_free(executor);
    }
    if (count >= 2) {
        executor = NULL;
        if (CHECK_OK(uform_executor_init_vram(devices, 2, uform_gpu_class_auto_k, NULL, 0, NULL, scratch, 2, 1u << 20,
                                              &executor, MSG))) {
            CHECK_OK(uform_executor_width(executor, &width, MSG));
            CHECK_SIZE(width, 2);
            uform_executor_free(executor);
        }
    }
    executor = NULL;
    if (CHECK_OK(
            uform_executor_init_vram(devices, 1, uform_gpu_class_auto_k, NULL, 0, NULL, scratch, 1, 0, &executor, MSG)))
        uform_executor_free(executor);

    /* Borrowed streams and memory pools are not designed yet. */
    CHECK_STATUS(
        uform_executor_init_vram(devices, 1, uform_gpu_class_auto_k, streams, 1, NULL, NULL, 0, 0, &executor, MSG),
        uform_status_unsupported_k);
    CHECK_STATUS(uform_executor_init_vram(devices, 1, uform_gpu_class_auto_k, NULL, 0, &pool_stand_in, NULL, 0, 0,
                                          &executor, MSG),
                 uform_status_unsupported_k);

    /* A device that does not exist. */
    devices[0] = count;
    CHECK_STATUS(
        uform_executor_init_vram(devices, 1, uform_gpu_class_auto_k, NULL, 0, NULL, NULL, 0, 0, &executor, MSG),
        uform_status_not_found_k);
    devices[0] = 0;

    /* Refusals: no devices, null arrays, unknown classes (invalid-argument); counts that are neither zero nor
     * the devices' (counts that disagree: shape-mismatch). */
    CHECK_STATUS(
        uform_executor_init_vram(devices, 0, uform_gpu_class_auto_k, NULL, 0, NULL, NULL, 0, 0, &executor, MSG),
        uform_status_invalid_argument_k);
    CHECK_STATUS(uform_executor_init_vram(NULL, 1, uform_gpu_class_auto_k, NULL, 0, NULL, NULL, 0, 0, &executor, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(
        uform_executor_init_vram(devices, 1, uform_gpu_class_auto_k, streams, 2, NULL, NULL, 0, 0, &executor, MSG),
        uform_status_shape_mismatch_k);
    CHECK_STATUS(
        uform_executor_init_vram(devices, 1, uform_gpu_class_auto_k, NULL, 1, NULL, NULL, 0, 0, &executor, MSG),
        uform_status_invalid_argument_k);
    CHECK_STATUS(
        uform_executor_init_vram(devices, 1, uform_gpu_class_auto_k, NULL, 0, NULL, scratch, 2, 0, &executor, MSG),
        uform_status_shape_mismatch_k);
    CHECK_STATUS(
        uform_executor_init_vram(devices, 1, uform_gpu_class_auto_k, NULL, 0, NULL, NULL, 1, 0, &executor, MSG),
        uform_status_invalid_argument_k);
    CHECK_STATUS(uform_executor_init_vram(devices, 1, (uform_gpu_class_t)7, NULL, 0, NULL, NULL, 0, 0, &executor, MSG),
                 uform_status_invalid_argument_k);
    CHECK_STATUS(uform_executor_init_vram(devices, 1, uform_gpu_class_auto_k, NULL, 0, NULL, NULL, 0, 0, NULL, MSG),
                 uform_status_invalid_argument_k);
}

int main(void) {
    ram_executors();
    local_and_pool_executors();
    gpu_devices();
    vram_executors();
    return test_report("executors");
}
