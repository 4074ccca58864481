/**
 * @file load_shrinking.c
 * @brief A checkpoint overwritten in place while a path load runs (as a deploy does): the load reads each tensor
 * with `pread` as it needs it, so a file truncated from its progress handler answers `io`, never raising SIGBUS; and
 * a file that is shorter than its header says answers `corrupt`.
 */
#include "common.h"

#include <unistd.h>

static char path[4096];

/** Truncates the copy at the handler's first call, as a writer replacing it would. */
static bool truncate_copy(void *context, size_t completed, size_t total) {
    size_t *calls = (size_t *)context;
    (void)completed, (void)total;
    if ((*calls)++ == 0) CHECK(truncate(path, 64) == 0);
    return false;
}

int main(void) {
    char directory[4096];
    size_t length = 0, calls = 0;
    unsigned char *bytes = read_whole_file(tiny_path(), &length);
    uform_model_load_ram_args_t args;
    uform_model_t model = NULL;
    if (!CHECK(bytes != NULL) || !CHECK(make_temp_directory(directory, sizeof(directory), "shrinking")))
        return test_report("load_shrinking");
    snprintf(path, sizeof(path), "%s/model.safetensors", directory);
    CHECK(write_whole_file(path, bytes, length));

    memset(&args, 0, sizeof(args));
    args.path = path;
    args.path_length = strlen(path);
    args.progress = truncate_copy;
    args.progress_context = &calls;
    if (build_is_stub()) { /* the stub reads the header alone, before the handler runs */
        CHECK_OK(uform_model_load_ram(&args, &model, MSG));
        uform_model_free(model);
    } else {
        CHECK_STATUS(uform_model_load_ram(&args, &model, MSG), uform_status_io_k);
        CHECK(calls >= 1); /* the file shrank during the load */
        CHECK(model == NULL);
    }

    /* Loading the truncated file now answers a status. */
    args.progress = NULL;
    model = NULL;
    CHECK(uform_model_load_ram(&args, &model, MSG) == uform_status_corrupt_k);
    CHECK(model == NULL);

    unlink(path);
    rmdir(directory);
    free(bytes);
    return test_report("load_shrinking");
}
