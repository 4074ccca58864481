/**
 * @file long_text.c
 * @brief Long texts: past `max_bytes` (16,384 by default) a text answers `limit-exceeded` before any work; within
 * one long text the progress handler is called again and again, so it can stop that text; and a successful call
 * writes no message.
 */
#include "common.h"

static uform_model_t model = NULL;
static uform_executor_t ram = NULL;

/** A tape of one text of `length` bytes, in `malloc`ed memory. */
typedef struct long_tape_t {
    char *data;
    size_t offsets[2];
} long_tape_t;

static long_tape_t long_tape(size_t length) {
    long_tape_t tape;
    size_t i;
    tape.data = (char *)malloc(length + 1);
    for (i = 0; i != length; ++i) tape.data[i] = (char)('a' + (i * 7) % 26);
    tape.offsets[0] = 0;
    tape.offsets[1] = length;
    return tape;
}

static uform_status_t encode(long_tape_t const *tape, size_t max_bytes, test_progress_t *progress,
                             uform_executor_t executor, uform_arena_t arena) {
    uform_text_encode_args_t args;
    uform_encoded_t encoded;
    memset(&args, 0, sizeof(args));
    args.max_bytes = max_bytes;
    if (progress) {
        args.progress = test_progress;
        args.progress_context = progress;
    }
    return uform_text_encode(model, executor, tape->data, tape->offsets[1], tape->offsets, 1,
                             uform_outputs_embeddings_k, &args, arena, &encoded, NULL, MSG);
}

static uform_status_t choose(long_tape_t const *tape, size_t max_bytes, uform_arena_t arena) {
    uform_text_choose_args_t args;
    uform_tape_t probabilities;
    static size_t const choice_offsets[] = {0, 2};
    memset(&args, 0, sizeof(args));
    args.max_bytes = max_bytes;
    return uform_text_choose(model, NULL, tape->data, tape->offsets[1], tape->offsets, 1, "yn", 2, choice_offsets, 1,
                             &args, arena, &probabilities, NULL, MSG);
}

static void limits(uform_arena_t arena) {
    long_tape_t over = long_tape(16385), hundred = long_tape(100), hundred_one = long_tape(101);
    CHECK_STATUS(encode(&over, 0, NULL, NULL, arena), uform_status_limit_exceeded_k);
    CHECK_STATUS(choose(&over, 0, arena), uform_status_limit_exceeded_k);
    CHECK_OK(encode(&hundred, 100, NULL, NULL, arena));
    CHECK_OK(choose(&hundred, 100, arena));
    CHECK_STATUS(encode(&hundred_one, 100, NULL, NULL, arena), uform_status_limit_exceeded_k);
    CHECK_STATUS(choose(&hundred_one, 100, arena), uform_status_limit_exceeded_k);
    CHECK_STATUS(encode(&hundred, ((size_t)1 << 24) + 1, NULL, NULL, arena), uform_status_invalid_argument_k);
    CHECK_STATUS(choose(&hundred, ((size_t)1 << 24) + 1, arena), uform_status_invalid_argument_k);
    /* A tape claiming an item of 2^62 bytes is refused by the limit, before anything reads it. */
    {
        long_tape_t huge = hundred;
        huge.offsets[1] = (size_t)1 << 62;
        CHECK_STATUS(uform_text_encode(model, NULL, huge.data, huge.offsets[1], huge.offsets, 1,
                                       uform_outputs_embeddings_k, NULL, arena, &(uform_encoded_t){0}, NULL, MSG),
                     uform_status_limit_exceeded_k);
    }
    free(over.data), free(hundred.data), free(hundred_one.data);
}

/** The handler is called within the one long text, and stopping there cancels it. */
static void handler_within_an_item(uform_arena_t arena) {
    long_tape_t longest = long_tape(16384);
    test_progress_t progress;
    uform_executor_t const executors[] = {NULL, ram};
    size_t i;
    for (i = 0; i != 2; ++i) {
        memset(&progress, 0, sizeof(progress));
        CHECK_OK(encode(&longest, 0, &progress, executors[i], arena));
        CHECK(progress.calls >= 3); /* polls within the item, then the item's end */
        memset(&progress, 0, sizeof(progress));
        progress.stop_at_call = 2;
        CHECK_STATUS(encode(&longest, 0, &progress, executors[i], arena), uform_status_cancelled_k);
        CHECK_SIZE(progress.calls, 2);
        CHECK_SIZE(progress.last_completed, 0); /* stopped within the item */
    }
    free(longest.data);
}

/** A successful call leaves the message out-pointer alone. */
static void success_writes_no_message(uform_arena_t arena) {
    long_tape_t text = long_tape(300);
    static char const sentinel[] = "untouched";
    test_message_ = sentinel;
    CHECK(encode(&text, 0, NULL, ram, arena) == uform_status_ok_k);
    CHECK(test_message_ == sentinel);
    test_message_ = sentinel;
    CHECK(choose(&text, 0, arena) == uform_status_ok_k);
    CHECK(test_message_ == sentinel);
    free(text.data);
}

int main(void) {
    uform_arena_t arena = NULL;
    model = load_tiny();
    if (!model) return test_report("long_text");
    CHECK_OK(uform_executor_init_ram(NULL, 0, uform_cpu_class_auto_k, 2, &ram, MSG));
    CHECK_OK(uform_arena_init(NULL, &arena, MSG));
    limits(arena);
    if (!build_is_stub()) handler_within_an_item(arena);
    success_writes_no_message(arena);
    uform_arena_free(arena);
    uform_executor_free(ram);
    uform_model_free(model);
    return test_report("long_text");
}
