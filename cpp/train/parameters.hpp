// The trainer's parameters (docs/model.md, "Training", Parameters): every trained tensor as an F32 master, the BF16
// copy the forward reads, its gradient and AdamW moments, plus the packed weight panels the trunk multiplies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <uform/train.h>
#include <uform/types.h>

#include "common/checkpoint.hpp"
#include "cpp/kernels/kernels.hpp"
#include "cpp/kernels/product.hpp"
#include "cpp/parallel.hpp"

namespace uform::train {

/// One trained tensor: F32 master, its BF16-rounded copy the forward reads (F32 holding BF16 values, row-major; empty
/// for a `panelled` weight, whose copy only its packed panels hold), its gradient and AdamW moments.
struct tensor_t {
    std::string name;
    std::size_t rank = 1, shape[2] = {0, 1}; // rank 1: shape[1] is 1
    std::vector<float> master, copy, grad, moment1, moment2;
    bool decays = false;   // docs/model.md: every 2-D tensor but embed.byte.weight
    bool panelled = false; // a product's weight (every 2-D tensor but embed.byte.weight): `parameters_t::panels`

    /// Values in the tensor.
    std::size_t count() const noexcept { return shape[0] * shape[1]; }
};

/// Every trained tensor of a model, in the order of tests/data/train/batch.json "parameters" (the checkpoint's
/// tensors sorted by name, then trainer.contrastive.log_scale, trainer.contrastive.bias,
/// trainer.late_interaction.log_scale as [1]), the fixed mel filters and choice temperatures, and the packed forms
/// the trunk multiplies.
struct parameters_t {
    geometry_t geometry{};
    std::vector<tensor_t> tensors;
    std::vector<float> mel_filters;  // [mel_bins x (n_fft / 2 + 1)]; empty without audio
    std::vector<float> temperatures; // [choice_groups]

    /// The tensor named `name`, or null.
    tensor_t *find(std::string_view name) noexcept;
    tensor_t const *find(std::string_view name) const noexcept;

    // The trunk's (cpp/train/trunk.cpp), set by `parameters_refresh` unless set before it: the kernels of the
    // machine's class (`ram::kernels_for_training`: products on AMX tiles where granted), and per
    // tensor (same index) the BF16 copy of a panelled weight `W[out x in]` packed as the B of `y = x W^T`
    // (`ram::pack_panels` into `panel_data`; empty otherwise).
    ram::kernels_t const *kernels = nullptr;
    std::vector<std::vector<float>> panel_data;
    std::vector<ram::panels_t> panels;
};

/// Loads a checkpoint file (its header already validated into `checkpoint`; tensors BF16 or F32) into `out`: the
/// masters are the file's values widened to F32, the moments and gradients zero; `trainer.*` tensors in the file, when
/// present, give the scalars, else docs/model.md's initial values for `form`. Answers `io`, `corrupt`, `out-of-memory`.
uform_status_t parameters_load(char const *path, std::size_t path_length, checkpoint_t const &checkpoint,
                               uform_pair_loss_form_t form, parameters_t &out, char const **message) noexcept;

/// Seeded weights for `geometry` (docs/decisions.md, "The generator and the seeded weights"): per tensor the stream
/// (seed, name), `float(z / sqrt(fan_in))` in double (embed.byte.weight `float(z)`), biases 0, norms 1, temperatures
/// 1, the Slaney mel filters of tools/checkpoint/write_checkpoint.py, the scalars for `form`.
uform_status_t parameters_seeded(geometry_t const &geometry, std::uint64_t seed, uform_pair_loss_form_t form,
                                 parameters_t &out, char const **message) noexcept;

/// After the masters moved (and once at init): `copy = bf16(master)` (nearest even) and the packed panels again. A
/// panelled weight's backward packs `bf16(master)` itself, so its master must not move between refresh and backward.
uform_status_t parameters_refresh(parameters_t &parameters, ram::parallel_t const &parallel,
                                  char const **message) noexcept;

} // namespace uform::train
