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
 * The Rust binding is generated from these headers. Its generator reads `@uform` annotations in the doc
 * comments: `@uform enum` (with `skip=NAME` to leave an enumerator out, `print-only` for no parse),
 * `@uform flags`, `@uform rust=NAME` on an enumerator to spell its Rust name, `@uform config NAME` on an
 * argument struct (Rust `NAMEConfig`), `@uform path LENGTH` and `@uform str LENGTH` on a pointer field or
 * parameter with its length, `@uform bytes LENGTH` on a `void const *` field with its length (Rust
 * `&[u8]`), `@uform slice POINTER COUNT` on a function filling a caller's array, and the verb annotations
 * described in `encode.h`. A pointer field followed by a field of the same name plus
 * `_count` forms one slice; `progress` with `progress_context` forms one handler.
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
