/**
 * @file dispatch.c
 * @brief The CPU class a RAM model dispatches as, and the refusal of a pinned class the machine cannot run.
 *
 * A model loaded with `auto` describes a named class, and pinning that class explicitly describes it again.
 * `$UFORM_TEST_CPU_CLASS`, when set, names the class `auto` must pick (scripts/arm-check.sh sets it per QEMU CPU:
 * `arm-neon` for `neoverse-n1`, `arm-sve2` for `max`). `$UFORM_TEST_CPU_CLASS_ABSENT`, when set, lists classes
 * (space-separated) this machine must refuse exactly as it refuses a class of the other architecture: the same
 * status and message from `uform_executor_init_ram` and from `uform_model_load_ram`.
 */
#include "common.h"

/** A class no build for this architecture can run; `auto` off x86-64 and AArch64. */
static uform_cpu_class_t foreign_class(void) {
#if defined(__x86_64__) || defined(_M_X64)
    return uform_cpu_class_arm_neon_k;
#elif defined(__aarch64__)
    return uform_cpu_class_intel_haswell_k;
#else
    return uform_cpu_class_auto_k;
#endif
}

/** Loads the tiny checkpoint pinned to `cpu_class` on the calling thread; the status, and the message in `message`. */
static uform_status_t load_pinned(uform_cpu_class_t cpu_class, uform_model_t *model, char const **message) {
    uform_model_load_ram_args_t args;
    memset(&args, 0, sizeof(args));
    args.path = tiny_path();
    args.path_length = strlen(args.path);
    args.cpu_class = cpu_class;
    *model = NULL;
    return uform_model_load_ram(&args, model, message);
}

/** The class a model loaded with `cpu_class` describes; `auto` (a counted failure) when it does not load. */
static uform_cpu_class_t described_class(uform_cpu_class_t cpu_class) {
    uform_model_t model = NULL;
    uform_model_description_t description;
    uform_cpu_class_t described = uform_cpu_class_auto_k;
    if (!CHECK_OK(load_pinned(cpu_class, &model, MSG))) return described;
    if (CHECK_OK(uform_model_describe(model, &description, MSG))) described = description.cpu_class;
    uform_model_free(model);
    return described;
}

/** `auto` picks a named class, the expected one when the environment names it, and pinning it picks it again. */
static void dispatched_class(void) {
    uform_cpu_class_t const dispatched = described_class(uform_cpu_class_auto_k);
    char const *expected_name = getenv("UFORM_TEST_CPU_CLASS");
    uform_cpu_class_t expected = uform_cpu_class_auto_k;
    CHECK(dispatched != uform_cpu_class_auto_k && uform_cpu_class_name(dispatched));
    printf("dispatched as %s\n", uform_cpu_class_name(dispatched) ? uform_cpu_class_name(dispatched) : "(unnamed)");
    if (expected_name && *expected_name && CHECK_OK(uform_cpu_class_parse(expected_name, &expected)))
        CHECK_STRING(uform_cpu_class_name(dispatched), uform_cpu_class_name(expected));
    if (dispatched != uform_cpu_class_auto_k) CHECK(described_class(dispatched) == dispatched);
}

/** Pinning `cpu_class` answers what pinning a class of the other architecture answers, at both doors. */
static void refused_as_foreign(uform_cpu_class_t cpu_class) {
    uform_executor_t executor = NULL;
    uform_model_t model = NULL;
    char const *foreign_message = NULL, *message = NULL;
    uform_status_t const foreign = uform_executor_init_ram(NULL, 0, foreign_class(), 1, &executor, &foreign_message);
    CHECK(foreign != uform_status_ok_k);
    CHECK_STATUS(uform_executor_init_ram(NULL, 0, cpu_class, 1, &executor, &message), foreign);
    CHECK_STRING(message, foreign_message);
    CHECK(executor == NULL);
    foreign_message = message = NULL;
    uform_status_t const foreign_load = load_pinned(foreign_class(), &model, &foreign_message);
    CHECK(foreign_load != uform_status_ok_k && model == NULL);
    CHECK_STATUS(load_pinned(cpu_class, &model, &message), foreign_load);
    CHECK_STRING(message, foreign_message);
    CHECK(model == NULL);
}

/** Every class `$UFORM_TEST_CPU_CLASS_ABSENT` names is refused as a foreign one. */
static void absent_classes(void) {
    char const *listed = getenv("UFORM_TEST_CPU_CLASS_ABSENT");
    char names[256];
    if (!listed || !*listed) return;
    if (!CHECK(strlen(listed) < sizeof(names))) return;
    strcpy(names, listed);
    for (char *name = strtok(names, " "); name; name = strtok(NULL, " ")) {
        uform_cpu_class_t cpu_class = uform_cpu_class_auto_k;
        if (!CHECK_OK(uform_cpu_class_parse(name, &cpu_class))) continue;
        printf("%s is refused\n", name);
        refused_as_foreign(cpu_class);
    }
}

int main(void) {
    dispatched_class();
    if (foreign_class() != uform_cpu_class_auto_k) absent_classes();
    return test_report("dispatch");
}
