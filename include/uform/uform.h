/**
 * @file uform.h
 * @brief UForm: a pocket-sized multimodal encoder library. Include this header for the whole C ABI.
 *
 * - `types.h`: statuses, enumerations, executors, arenas, rows, tapes and outcomes, and the lifetime rules.
 * - `model.h`: loading checkpoints into host memory or onto GPUs, and describing them.
 * - `encode.h`: the seven verbs of a model.
 * - `train.h`: the mesh and the trainer.
 *
 * Conventions: every fallible function returns a `uform_status_t` (zero is success) and writes a static
 * message through its nullable last parameter; every enumeration has `uform_<enum>_name` and (but for the
 * multimem tier) `uform_<enum>_parse`; every argument struct's all-zero value is its documented default.
 *
 * The Rust binding is generated from these headers by `tools/uform-gen`, which reads `@uform` annotations in
 * the doc comments: tools/uform-gen/README.md ("Annotations") documents them.
 */
#ifndef UFORM_H
#define UFORM_H

/* The three version macros are written by `cargo run -p uform-gen` from Cargo.toml's version: edit that. */
/** @brief The major version of the C ABI: bumped on any incompatible change. */
#define UFORM_VERSION_MAJOR 0
/** @brief The minor version of the C ABI: bumped when symbols are added. */
#define UFORM_VERSION_MINOR 1
/** @brief The patch version of the library. */
#define UFORM_VERSION_PATCH 0

#include "types.h"
#include "model.h"
#include "encode.h"
#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The library's version as `"MAJOR.MINOR.PATCH"`, which may differ from the headers' macros. */
char const *uform_version(void);

/** @brief The residencies this build carries, such as `"ram"`, `"ram,cuda"` or `"stub"`. */
char const *uform_build_flavor(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* UFORM_H */
