/* Embeds three captions and three pictures with the shipped model, then names the picture nearest each caption. */
#include <uform/uform.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { items_k = 3 };

/* Lays `items` end to end in `data`, as a tape: item `i` spans `data[offsets[i]]` up to `data[offsets[i + 1]]`. */
static void pack(char const *const items[items_k], char *data, size_t offsets[items_k + 1]) {
    size_t i;
    offsets[0] = 0;
    for (i = 0; i != items_k; ++i) {
        memcpy(data + offsets[i], items[i], strlen(items[i]));
        offsets[i + 1] = offsets[i] + strlen(items[i]);
    }
}

/* Prints a failure's status and message; answers whether there was one. */
static int failed(uform_status_t status, char const *message) {
    if (status != uform_status_ok_k) fprintf(stderr, "%s: %s\n", uform_status_name(status), message);
    return status != uform_status_ok_k;
}

int main(void) {
    char const *const captions[items_k] = {"an image of a sneaker", "an image of a bag", "an image of a dress"};
    char const *const files[items_k] = {"tests/data/media/fashion-sneaker.png", "tests/data/media/fashion-bag.png",
                                        "tests/data/media/fashion-dress.png"};
    char const *message = "";
    char texts[256], paths[256];
    size_t text_offsets[items_k + 1], path_offsets[items_k + 1], i, j, k, columns;
    float *captions_rows, cosines[items_k];
    uform_model_load_ram_args_t load = {0};
    uform_model_description_t description;
    uform_model_t model = NULL;
    uform_arena_t arena = NULL;
    uform_encoded_t encoded;

    load.path = "models/uform-wordnet-small.safetensors";
    load.path_length = strlen(load.path);
    if (failed(uform_model_load_ram(&load, &model, &message), message) ||
        failed(uform_model_describe(model, &description, &message), message) ||
        failed(uform_arena_init(NULL, &arena, &message), message))
        return 1;
    columns = description.dimensions;
    captions_rows = malloc(items_k * columns * sizeof(float));
    if (captions_rows == NULL) return 1;

    /* A NULL executor runs on the calling thread; NULL args take the defaults: F32 unit rows. */
    pack(captions, texts, text_offsets);
    if (failed(uform_text_encode(model, NULL, texts, text_offsets[items_k], text_offsets, items_k,
                                 uform_outputs_embeddings_k, NULL, arena, &encoded, NULL, &message),
               message))
        return 1;
    for (i = 0; i != items_k; ++i) /* copied out: the next call into the arena overwrites its rows */
        memcpy(captions_rows + i * columns, (char const *)encoded.embeddings.data + i * encoded.embeddings.stride,
               columns * sizeof(float));

    pack(files, paths, path_offsets);
    if (failed(uform_image_encode(model, NULL, paths, path_offsets[items_k], path_offsets, items_k,
                                  uform_outputs_embeddings_k, NULL, arena, &encoded, NULL, &message),
               message))
        return 1;
    for (i = 0; i != items_k; ++i) {
        size_t best = 0;
        for (j = 0; j != items_k; ++j) { /* unit rows: their dot product is their cosine */
            float const *image = (float const *)((char const *)encoded.embeddings.data + j * encoded.embeddings.stride);
            cosines[j] = 0;
            for (k = 0; k != columns; ++k) cosines[j] += captions_rows[i * columns + k] * image[k];
            if (cosines[j] > cosines[best]) best = j;
        }
        printf("%-22s %s (%+.3f)\n", captions[i], files[best], cosines[best]);
    }

    free(captions_rows);
    uform_arena_free(arena);
    uform_model_free(model);
    return 0;
}
