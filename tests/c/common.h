/**
 * @file common.h
 * @brief What every C test shares: counting checks, tapes, the tiny checkpoint's path, row decoding.
 *
 * Include it first: it asks for POSIX 2008 (`mkdtemp`, `clock_gettime`) before any system header.
 * Every test's `main` ends with `return test_report("name");`, which prints "N passed, M failed".
 */
#ifndef UFORM_TESTS_C_COMMON_H
#define UFORM_TESTS_C_COMMON_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <math.h>
#include <stdio.h>
#if defined(__wasi__)
#include <errno.h>
#include <sys/stat.h>
#endif
#include <stdlib.h>
#include <string.h>

#include <uform/uform.h>

/* ---------------------------------------------------------------------------------------------------------- */
/* Counting checks                                                                                             */
/* ---------------------------------------------------------------------------------------------------------- */

static int test_passed_ = 0;
static int test_failed_ = 0;
/** The message out-pointer the `MSG` macro hands to the library; reset before each `CHECK_STATUS`. */
static char const *test_message_ = NULL;

/** The message out-pointer to pass as a call's last argument, so a failing check can print the message. */
#define MSG (&test_message_)

static inline char const *status_text(uform_status_t status) {
    char const *name = uform_status_name(status);
    return name ? name : "<unnamed>";
}

static inline int check_(int ok, char const *what, char const *file, int line) {
    if (ok) {
        ++test_passed_;
        return 1;
    }
    ++test_failed_;
    fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what);
    return 0;
}

static inline int check_status_(uform_status_t got, uform_status_t expected, char const *what, char const *file,
                                int line) {
    if (got == expected) {
        ++test_passed_;
        return 1;
    }
    ++test_failed_;
    fprintf(stderr, "%s:%d: FAILED: %s\n    expected %s, got %s (message: %s)\n", file, line, what,
            status_text(expected), status_text(got), test_message_ ? test_message_ : "none");
    return 0;
}

static inline int check_size_(size_t got, size_t expected, char const *what, char const *file, int line) {
    if (got == expected) {
        ++test_passed_;
        return 1;
    }
    ++test_failed_;
    fprintf(stderr, "%s:%d: FAILED: %s\n    expected %zu, got %zu\n", file, line, what, expected, got);
    return 0;
}

static inline int check_string_(char const *got, char const *expected, char const *what, char const *file, int line) {
    if (got && expected ? strcmp(got, expected) == 0 : got == expected) {
        ++test_passed_;
        return 1;
    }
    ++test_failed_;
    fprintf(stderr, "%s:%d: FAILED: %s\n    expected \"%s\", got \"%s\"\n", file, line, what,
            expected ? expected : "(null)", got ? got : "(null)");
    return 0;
}

/** Counts one check of a condition; evaluates to 1 when it held. */
#define CHECK(condition) check_(!!(condition), #condition, __FILE__, __LINE__)
/** Counts one check that a call answered `expected`, printing both names and the message otherwise. */
#define CHECK_STATUS(call, expected)                                                                                   \
    (test_message_ = NULL, check_status_((call), (expected), #call " == " #expected, __FILE__, __LINE__))
/** Counts one check that a call succeeded. */
#define CHECK_OK(call) CHECK_STATUS(call, uform_status_ok_k)
/** Counts one check that two sizes are equal, printing both otherwise. */
#define CHECK_SIZE(got, expected)                                                                                      \
    check_size_((size_t)(got), (size_t)(expected), #got " == " #expected, __FILE__, __LINE__)
/** Counts one check that a string equals another (both may be `NULL`). */
#define CHECK_STRING(got, expected) check_string_((got), (expected), #got " == " #expected, __FILE__, __LINE__)

/** Prints the tally and answers the exit code of `main`. */
static inline int test_report(char const *name) {
    printf("%s: %d passed, %d failed\n", name, test_passed_, test_failed_);
    return test_failed_ ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Tapes                                                                                                       */
/* ---------------------------------------------------------------------------------------------------------- */

/** A byte tape with room for 128 items and 16 KiB of data: `data`, `length`, `offsets` (count + 1), `count`. */
typedef struct test_tape_t {
    char data[16384];
    size_t length;
    size_t offsets[129];
    size_t count;
} test_tape_t;

static inline void tape_clear(test_tape_t *tape) {
    tape->length = 0;
    tape->count = 0;
    tape->offsets[0] = 0;
}

/** Appends one item of `length` bytes. */
static inline void tape_push(test_tape_t *tape, void const *bytes, size_t length) {
    if (tape->count >= 128 || tape->length + length > sizeof(tape->data)) {
        fprintf(stderr, "test tape overflow\n");
        abort();
    }
    if (length) memcpy(tape->data + tape->length, bytes, length);
    tape->length += length;
    tape->offsets[++tape->count] = tape->length;
}

/** Makes a tape of NUL-terminated strings, without their terminators. */
static inline void tape_of(test_tape_t *tape, char const *const *items, size_t count) {
    size_t i;
    tape_clear(tape);
    for (i = 0; i != count; ++i) tape_push(tape, items[i], strlen(items[i]));
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Data, files and the build                                                                                   */
/* ---------------------------------------------------------------------------------------------------------- */

/** The tiny checkpoint: `$UFORM_TEST_DATA/tiny.safetensors`, or `tests/data/tiny.safetensors` without it. */
static inline char const *tiny_path(void) {
    static char path[4096];
    char const *directory = getenv("UFORM_TEST_DATA");
    if (!directory || !*directory) directory = "tests/data";
    snprintf(path, sizeof(path), "%s/tiny.safetensors", directory);
    return path;
}

/** Loads the tiny checkpoint into host memory on the calling thread; `NULL` (a counted failure) otherwise. */
static inline uform_model_t load_tiny(void) {
    uform_model_load_ram_args_t args;
    uform_model_t model = NULL;
    memset(&args, 0, sizeof(args));
    args.path = tiny_path();
    args.path_length = strlen(args.path);
    if (!CHECK_OK(uform_model_load_ram(&args, &model, MSG))) {
        fprintf(stderr, "cannot load %s: set UFORM_TEST_DATA to the directory of tiny.safetensors\n", args.path);
        return NULL;
    }
    return model;
}

/** Reads a whole file into a `malloc`ed buffer; `NULL` when it cannot. */
static inline unsigned char *read_whole_file(char const *path, size_t *length) {
    FILE *file = fopen(path, "rb");
    unsigned char *buffer = NULL;
    long size;
    *length = 0;
    if (!file) return NULL;
    if (fseek(file, 0, SEEK_END) == 0 && (size = ftell(file)) >= 0 && fseek(file, 0, SEEK_SET) == 0) {
        buffer = (unsigned char *)malloc((size_t)size + 1);
        if (buffer && fread(buffer, 1, (size_t)size, file) == (size_t)size) *length = (size_t)size;
        else free(buffer), buffer = NULL;
    }
    fclose(file);
    return buffer;
}

/** Writes `length` bytes to `path`; answers 1 on success. */
static inline int write_whole_file(char const *path, void const *bytes, size_t length) {
    FILE *file = fopen(path, "wb");
    int ok;
    if (!file) return 0;
    ok = fwrite(bytes, 1, length, file) == length;
    return fclose(file) == 0 && ok;
}

/** Makes a fresh directory under `$TMPDIR` (or `/tmp`) into `path`; answers 1 on success. */
static inline int make_temp_directory(char *path, size_t capacity, char const *tag) {
    char const *root = getenv("TMPDIR");
    if (!root || !*root) root = "/tmp";
#if defined(__wasi__)
    {
        /* WASI has no mkdtemp; scripts/wasi-run.py opens a fresh host folder as each module's /tmp, where a counter
         * names new directories. */
        static unsigned made = 0;
        unsigned attempt;
        for (attempt = 0; attempt != 1000; ++attempt) {
            snprintf(path, capacity, "%s/uform-%s-%u", root, tag, made++);
            if (mkdir(path, 0700) == 0) return 1;
            if (errno != EEXIST) return 0;
        }
        return 0;
    }
#else
    snprintf(path, capacity, "%s/uform-%s-XXXXXX", root, tag);
    return mkdtemp(path) != NULL;
#endif
}

/** `directory/name`, in one of sixteen buffers taken in rotation, so that one call may name several such paths. */
static inline char const *joined_path(char const *directory, char const *name) {
    static char paths[16][4200];
    static unsigned next = 0;
    char *path = paths[next++ % 16];
    snprintf(path, sizeof(paths[0]), "%s/%s", directory, name);
    return path;
}

/** Whether this build is the stub (`uform_build_flavor` names `stub`). */
static inline int build_is_stub(void) {
    char const *flavor = uform_build_flavor();
    return flavor && strstr(flavor, "stub") != NULL;
}

/** Whether this build drives GPUs: the stub simulates them, CUDA and ROCm builds have them. */
static inline int build_has_gpus(void) {
    char const *flavor = uform_build_flavor();
    return flavor && (strstr(flavor, "stub") || strstr(flavor, "cuda") || strstr(flavor, "rocm"));
}

/** GPUs the stub simulates: `$UFORM_STUB_GPUS`, else 2. */
static inline size_t stub_gpu_count(void) {
    char const *text = getenv("UFORM_STUB_GPUS");
    return text && *text ? (size_t)strtoul(text, NULL, 10) : 2;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Rows                                                                                                        */
/* ---------------------------------------------------------------------------------------------------------- */

static inline float f32_from_bf16(uint16_t bits) {
    uint32_t wide = (uint32_t)bits << 16;
    float value;
    memcpy(&value, &wide, sizeof(value));
    return value;
}

static inline float f32_from_f16(uint16_t bits) {
    int sign = bits >> 15, exponent = (bits >> 10) & 0x1F, mantissa = bits & 0x3FF;
    double value;
    if (exponent == 0) value = ldexp((double)mantissa, -24);
    else if (exponent == 31) value = mantissa ? NAN : INFINITY;
    else value = ldexp((double)(mantissa | 0x400), exponent - 25);
    return (float)(sign ? -value : value);
}

static inline float f32_from_e4m3(uint8_t bits) {
    int sign = bits >> 7, exponent = (bits >> 3) & 0xF, mantissa = bits & 0x7;
    double value;
    if ((bits & 0x7F) == 0x7F) return NAN;
    if (exponent == 0) value = ldexp((double)mantissa, -9);
    else value = ldexp((double)(mantissa | 0x8), exponent - 10);
    return (float)(sign ? -value : value);
}

static inline float f32_from_e5m2(uint8_t bits) {
    int sign = bits >> 7, exponent = (bits >> 2) & 0x1F, mantissa = bits & 0x3;
    double value;
    if (exponent == 0) value = ldexp((double)mantissa, -16);
    else if (exponent == 31) value = mantissa ? NAN : INFINITY;
    else value = ldexp((double)(mantissa | 0x4), exponent - 17);
    return (float)(sign ? -value : value);
}

/** The first byte of row `row`. */
static inline unsigned char const *row_bytes(uform_rows_t const *rows, size_t row) {
    return (unsigned char const *)rows->data + row * rows->stride;
}

/** Value `column` of row `row` as a float: `i8` divided by 127, `b1` as +1 or -1 (zero bits read -1). */
static inline float row_value(uform_rows_t const *rows, size_t row, size_t column) {
    unsigned char const *bytes = row_bytes(rows, row);
    uint16_t half;
    float single;
    switch (rows->scalar) {
    case uform_scalar_f32_k: memcpy(&single, bytes + column * 4, 4); return single;
    case uform_scalar_f16_k: memcpy(&half, bytes + column * 2, 2); return f32_from_f16(half);
    case uform_scalar_bf16_k: memcpy(&half, bytes + column * 2, 2); return f32_from_bf16(half);
    case uform_scalar_e4m3_k: return f32_from_e4m3(bytes[column]);
    case uform_scalar_e5m2_k: return f32_from_e5m2(bytes[column]);
    case uform_scalar_i8_k: return (float)(signed char)bytes[column] / 127.0f;
    case uform_scalar_b1_k: return (bytes[column / 8] >> (column % 8)) & 1 ? 1.0f : -1.0f;
    default: return NAN;
    }
}

/** The L2 norm of one row, decoded as `row_value` does. */
static inline double row_norm(uform_rows_t const *rows, size_t row) {
    double sum = 0;
    size_t column;
    for (column = 0; column != rows->columns; ++column) {
        double value = row_value(rows, row, column);
        sum += value * value;
    }
    return sqrt(sum);
}

/** One row of the library's view decoded as `row_value` does into `out`, `rows->columns` values. */
static inline void row_f32(uform_rows_t const *rows, size_t row, float *out) {
    size_t c;
    for (c = 0; c != rows->columns; ++c) out[c] = row_value(rows, row, c);
}

/** The cosine of two F32 rows in double: 1 when both are zero, 0 when one is; their squared norms into `aa_out`
 *  and `bb_out` when not `NULL`. */
static inline double cosine_f64(float const *a, float const *b, size_t columns, double *aa_out, double *bb_out) {
    double ab = 0, aa = 0, bb = 0;
    size_t c;
    for (c = 0; c != columns; ++c) {
        ab += (double)a[c] * b[c];
        aa += (double)a[c] * a[c];
        bb += (double)b[c] * b[c];
    }
    if (aa_out) *aa_out = aa;
    if (bb_out) *bb_out = bb;
    if (aa == 0 && bb == 0) return 1;
    if (aa == 0 || bb == 0) return 0;
    return ab / sqrt(aa * bb);
}

/** Whether every byte of a row's values (not its padding) is zero. */
static inline int row_is_zero(uform_rows_t const *rows, size_t row) {
    unsigned char const *bytes = row_bytes(rows, row);
    size_t i, length = uform_scalar_bytes(rows->scalar, rows->columns);
    for (i = 0; i != length; ++i)
        if (bytes[i]) return 0;
    return 1;
}

/** Whether two rows hold the same value bytes (padding excluded); both views must share scalar and columns. */
static inline int rows_equal(uform_rows_t const *a, size_t row_a, uform_rows_t const *b, size_t row_b) {
    return a->scalar == b->scalar && a->columns == b->columns &&
           memcmp(row_bytes(a, row_a), row_bytes(b, row_b), uform_scalar_bytes(a->scalar, a->columns)) == 0;
}

/** Whether a view is the empty view of a surface left out or a call that published nothing. */
static inline int rows_empty(uform_rows_t const *rows) {
    return rows->data == NULL && rows->count == 0 && rows->columns == 0 && rows->items == 0;
}

/** Whether all three views of an encoding are empty. */
static inline int encoded_empty(uform_encoded_t const *encoded) {
    return rows_empty(&encoded->embeddings) && rows_empty(&encoded->states) && rows_empty(&encoded->token_vectors);
}

/** Checks the shape of a rows tape: `items` items, ascending offsets from 0 to `count`, host memory. */
static inline int check_rows_tape_(uform_rows_t const *rows, size_t items, size_t columns, char const *file, int line) {
    size_t i;
    int ok = rows->data != NULL || rows->count == 0;
    ok = ok && rows->offsets != NULL && rows->items == items && rows->columns == columns;
    ok = ok && rows->stride >= uform_scalar_bytes(rows->scalar, rows->columns);
    if (ok && rows->residency == uform_residency_ram_k) {
        ok = rows->offsets[0] == 0 && rows->offsets[items] == rows->count;
        for (i = 0; ok && i != items; ++i) ok = rows->offsets[i] <= rows->offsets[i + 1];
    }
    return check_(ok, "a rows tape of the expected items and columns, offsets ascending from 0 to count", file, line);
}
#define CHECK_ROWS_TAPE(rows, items, columns) check_rows_tape_((rows), (items), (columns), __FILE__, __LINE__)

/** Checks the shape of one-row-per-item rows: `items` rows of `columns`, no offsets. */
static inline int check_rows_per_item_(uform_rows_t const *rows, size_t items, size_t columns, char const *file,
                                       int line) {
    int ok = (rows->data != NULL || items == 0) && rows->offsets == NULL && rows->count == items &&
             rows->items == items && rows->columns == columns &&
             rows->stride >= uform_scalar_bytes(rows->scalar, rows->columns);
    return check_(ok, "one row per item of the expected columns, without offsets", file, line);
}
#define CHECK_ROWS_PER_ITEM(rows, items, columns) check_rows_per_item_((rows), (items), (columns), __FILE__, __LINE__)

/** Checks that every row of a view is a unit row (within `tolerance`), but for zero rows when `allow_zero`. */
static inline int check_unit_rows_(uform_rows_t const *rows, double tolerance, int allow_zero, char const *file,
                                   int line) {
    size_t row;
    int ok = 1;
    for (row = 0; ok && row != rows->count; ++row) {
        double norm = row_norm(rows, row);
        if (allow_zero && row_is_zero(rows, row)) continue;
        ok = fabs(norm - 1.0) <= tolerance;
        if (!ok) fprintf(stderr, "    row %zu has norm %f\n", row, norm);
    }
    return check_(ok, "unit rows", file, line);
}
#define CHECK_UNIT_ROWS(rows, tolerance) check_unit_rows_((rows), (tolerance), 0, __FILE__, __LINE__)
#define CHECK_UNIT_ROWS_OR_ZERO(rows, tolerance) check_unit_rows_((rows), (tolerance), 1, __FILE__, __LINE__)

/** A progress handler's record: calls, the last `completed` and `total`, and whether `completed` ever fell. */
typedef struct test_progress_t {
    size_t calls;
    size_t last_completed;
    size_t total;
    int regressed;
    int overshot;
    size_t stop_at_call;      /**< Answer `true` (stop) from this call on, counted from 1; zero: never. */
    size_t stop_at_completed; /**< Answer `true` once `completed` reaches this; zero: never. */
} test_progress_t;

static inline bool test_progress(void *context, size_t completed, size_t total) {
    test_progress_t *progress = (test_progress_t *)context;
    if (progress->calls && completed < progress->last_completed) progress->regressed = 1;
    if (completed > total) progress->overshot = 1;
    ++progress->calls;
    progress->last_completed = completed;
    progress->total = total;
    return (progress->stop_at_call && progress->calls >= progress->stop_at_call) ||
           (progress->stop_at_completed && completed >= progress->stop_at_completed);
}

#endif /* UFORM_TESTS_C_COMMON_H */
