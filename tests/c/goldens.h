/**
 * @file goldens.h
 * @brief Reading the PyTorch goldens of `tests/data/goldens/` (safetensors files) from a C test.
 *
 * A golden is read whole; a tensor is found by its quoted name in the JSON header, then its `dtype` and
 * `data_offsets` are read from the object that follows. That is enough for the files `make_goldens.py` writes
 * (compact JSON, no nested objects inside a tensor's entry). Include `common.h` first.
 */
#ifndef UFORM_TESTS_C_GOLDENS_H
#define UFORM_TESTS_C_GOLDENS_H

#include <stdint.h>

/** One golden file in memory: its bytes, a NUL-terminated copy of its header, where its data begins. */
typedef struct golden_file_t {
    unsigned char *bytes;
    size_t length;
    char *header;
    size_t data_offset;
} golden_file_t;

/** Reads `$UFORM_TEST_DATA/goldens/<name>` (or `tests/data/goldens/<name>`); answers 1 on success. */
static inline int golden_file_open(golden_file_t *file, char const *name) {
    char path[4096];
    char const *directory = getenv("UFORM_TEST_DATA");
    uint64_t header_length = 0;
    int i;
    memset(file, 0, sizeof(*file));
    if (!directory || !*directory) directory = "tests/data";
    snprintf(path, sizeof(path), "%s/goldens/%s", directory, name);
    file->bytes = read_whole_file(path, &file->length);
    if (!file->bytes || file->length < 8) {
        fprintf(stderr, "cannot read %s\n", path);
        return 0;
    }
    for (i = 7; i >= 0; --i) header_length = header_length << 8 | file->bytes[i];
    if (header_length > file->length - 8) return 0;
    file->header = (char *)malloc((size_t)header_length + 1);
    if (!file->header) return 0;
    memcpy(file->header, file->bytes + 8, (size_t)header_length);
    file->header[header_length] = 0;
    file->data_offset = 8 + (size_t)header_length;
    return 1;
}

static inline void golden_file_close(golden_file_t *file) {
    free(file->bytes);
    free(file->header);
    memset(file, 0, sizeof(*file));
}

/** Where tensor `name` of `dtype` ("U8", "I64", "F32", "F64") lies, and its length in bytes; `NULL` when absent
 *  or of another dtype. */
static inline void const *golden_file_tensor(golden_file_t const *file, char const *name, char const *dtype,
                                             size_t *bytes) {
    char key[160], dtype_key[64];
    char const *cursor = file->header;
    snprintf(key, sizeof(key), "\"%s\":{", name);
    snprintf(dtype_key, sizeof(dtype_key), "\"dtype\":\"%s\"", dtype);
    while ((cursor = strstr(cursor, key)) != NULL) {
        char const *object = cursor + strlen(key) - 1, *end = strchr(object, '}'), *found, *offsets;
        unsigned long long begin, finish;
        char *after;
        cursor += strlen(key);
        if (!end) return NULL;
        found = strstr(object, dtype_key);
        offsets = strstr(object, "\"data_offsets\":[");
        if (!found || found > end || !offsets || offsets > end) return NULL;
        begin = strtoull(offsets + strlen("\"data_offsets\":["), &after, 10);
        if (*after != ',') return NULL;
        finish = strtoull(after + 1, &after, 10);
        if (finish < begin || file->data_offset + finish > file->length) return NULL;
        *bytes = (size_t)(finish - begin);
        return file->bytes + file->data_offset + begin;
    }
    return NULL;
}

/** Tensor `name` copied into a `malloc`ed array of `*count` elements of `size` bytes; `NULL` (and a message
 *  unless `optional`) when absent. */
static inline void *golden_file_copy(golden_file_t const *file, char const *name, char const *dtype, size_t size,
                                     size_t *count, int optional) {
    size_t bytes = 0;
    void const *data = golden_file_tensor(file, name, dtype, &bytes);
    void *copy;
    *count = 0;
    if (!data || bytes % size) {
        if (!optional) fprintf(stderr, "the golden has no %s tensor '%s'\n", dtype, name);
        return NULL;
    }
    copy = malloc(bytes ? bytes : 1);
    if (!copy) return NULL;
    memcpy(copy, data, bytes);
    *count = bytes / size;
    return copy;
}

#endif /* UFORM_TESTS_C_GOLDENS_H */
