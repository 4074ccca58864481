// One optimiser step of the CPU trainer (docs/model.md, "Training"): the forward of a batch, every term the objective
// asks for and the batch has data for, the backward, the gradient norm and clipping, AdamW, and the BF16 copies again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <uform/train.h>

#include "cpp/train/collectives.hpp"
#include "cpp/train/kernels.hpp"
#include "cpp/train/losses.hpp"
#include "cpp/train/optimizer.hpp"
#include "cpp/train/parameters.hpp"
#include "cpp/train/phases.hpp"
#include "cpp/train/relations.hpp"
#include "cpp/train/trunk.hpp"

namespace uform::train {

/// What a trainer optimises and how, from its configuration with every zero default resolved.
struct settings_t {
    uform_objective_t objective = uform_objective_joint_k;
    uform_masking_t masking{};
    uform_contrastive_t contrastive{};
    uform_late_interaction_t late_interaction{};
    uform_choices_t choices{};
    uform_schedule_t schedule{};
    std::uint64_t seed = 0;
    uform_distill_t distill{};
};

/// A step's batch as the trunk and the terms read it: built by the RAM backend from the ABI's items (texts masked,
/// media decoded), or by a test that injects its own masks and decoded frames.
struct batch_t {
    /// One per item: text tokens already masked and followed by CHOOSE for choice items.
    std::span<segment_t const> segments;
    /// The masked positions of every text, in item order, and the original byte at each.
    std::span<logit_row_t const> mask_rows;
    std::span<std::uint8_t const> mask_targets;
    /// Each item's bag; empty puts each item in its own.
    std::span<std::size_t const> bags;
    /// The attract, repel and ignore edges, checked by the ABI layer.
    uform_relations_t relations{};
    /// Each item's late-interaction side; empty for none.
    std::span<uform_late_interaction_side_t const> sides;
    /// Each item's legal choice bytes (`offsets` one per item plus one; null for no choice items) and the targets,
    /// one per legal byte. A choice item's segment ends with CHOOSE.
    std::uint8_t const *choices = nullptr;
    float const *choice_targets = nullptr;
    std::size_t const *choice_offsets = nullptr;
    /// The teacher's rows, `teacher_width` values per item (an all-zero row: no teacher), or empty.
    std::span<float const> teacher;
    std::size_t teacher_width = 0;
};

/// What a step measured: each term's value (zero without data), the joint loss, the gradient norm before clipping,
/// the rate applied, and the tokens through the trunk.
struct step_report_t {
    double masking = 0, contrastive = 0, late_interaction = 0, choices = 0, distill = 0;
    double loss = 0, gradient_norm = 0, learning_rate = 0;
    std::size_t tokens = 0;
    /// The scored unit embeddings, [items x dimensions], valid until the next step.
    float const *embeddings = nullptr;
};

/// The most tokens calibration runs through one forward (`trainer_core_t::choice_logits`); an item longer than this
/// runs alone.
inline constexpr std::size_t calibration_chunk_tokens_k = 8192;

/// A nullable progress hook, told on the calling thread once the forward (1 of 2) and the backward (2 of 2) are done:
/// true stops the step with `cancelled`, before any weight changes.
struct progress_t {
    bool (*fn)(void *context, std::size_t completed, std::size_t total) noexcept = nullptr;
    void *context = nullptr;
};

/// Where a rank's items sit among the world's items of a step (one process: the rank is the world).
struct layout_t {
    /// The world index of the rank's first item, and the world's items.
    std::size_t first = 0, world = 0;
    /// Items of each rank.
    std::vector<std::size_t> items;
    /// Whether any rank's step has late-interaction sides, or bags.
    bool sides = false, bags = false;
    /// The teacher rows' width the ranks with rows named (zero: no rank has any).
    std::size_t teacher_width = 0;
    /// Whether `trainer_core_t::arrange` ran for the next step.
    bool arranged = false;
};

/// What one step decided and produced, phase by phase (`trainer_core_t::step`); a GPU trainer follows the same
/// phases with its own kernels: plan (which terms run), rows (the byte-logit rows and the flagged token vectors),
/// relations (local, or gathered over the mesh), forward (and the gathered outputs), units (each term's count over the
/// mesh), losses, backward (and the gradients' sums over the mesh), update (norm, clip, schedule, AdamW).
struct step_plan_t {
    /// The rank's items.
    std::size_t items = 0;
    /// Which terms the step computes, whether late interaction runs on this rank, and whether it scores the world.
    bool choices = false, masking = false, late = false, local_late = false, contrastive = false, gathers = false;
    /// Whether the distillation term runs, and whether it gathered the embeddings itself (a mesh step that does not
    /// otherwise score the world): its gradient then lands in a buffer of its own, summed over the mesh.
    bool distill = false, distill_gathers = false;
    /// Masked rows, and items with choices.
    std::size_t mask_count = 0, choice_items = 0;
    /// The sides the late-interaction term reads (the world's when gathered), or null.
    uform_late_interaction_side_t const *sides = nullptr;
    /// The forward's outputs.
    trunk_outputs_t out;
    /// The embeddings the terms score (the world's when gathered), their rows, and the token vectors.
    float const *z = nullptr;
    std::size_t scored = 0, token_rows = 0;
    token_vectors_t vectors;
    /// The items the distillation term scores (the world's over a mesh) and the rank's anchors among them.
    distill_items_t distilled;
    /// Each term's units over the mesh (contrastive, late interaction, masking, choices, distillation).
    double counts[5] = {0, 0, 0, 0, 0};
    /// Each term's sum over the rank's units, then whether a term was not finite.
    double sums[6] = {0, 0, 0, 0, 0, 0};
};

/// A trainer's state: its parameters, its residency's kernels, and the host buffers of a step, grown to a high-water
/// mark so that a steady loop of same-shaped steps allocates nothing after the first.
class trainer_core_t {
  public:
    settings_t settings;
    parameters_t parameters;
    /// Optimiser steps applied so far: the schedule's `k` of the next step.
    std::size_t steps = 0;
    /// The mesh the trainer is a rank of (borrowed), or null for one process.
    collectives_t *mesh = nullptr;
    /// The residency's kernels the step runs on (borrowed), or null for the RAM ones the trainer owns.
    step_kernels_t *kernels = nullptr;
    /// Nullable: `step_phase_t::count` seconds to which each step adds its phases' process CPU time (the trunk's own
    /// phases on the RAM kernels alone; cpp/train/phases.hpp). For profiles.
    double *phases = nullptr;

    /// The kernels a step runs on: `kernels`, else the trainer's RAM ones.
    step_kernels_t &residency() noexcept { return kernels ? *kernels : ram_kernels_; }

    /// Makes every rank's weights, moments and step count rank 0's (broadcast), then refreshes the BF16 copies. A
    /// mesh's trainers call it once, together, after loading.
    uform_status_t agree(ram::parallel_t const &parallel, char const **message) noexcept;

    /// Tells the mesh how many items, whether sides and bags, and what teacher width (zero for none) the rank's next
    /// step has, and learns where its items sit among the world's (`layout()`). Over a mesh every rank calls it before
    /// each step; without one `step` arranges itself. Ranks naming different nonzero widths all answer
    /// `invalid-argument`.
    uform_status_t arrange(std::size_t items, bool sides, bool bags, std::size_t teacher_width,
                           char const **message) noexcept;

    /// Where the rank's items of the next (or last) step sit among the world's.
    layout_t const &layout() const noexcept { return layout_; }

    /// Runs one step over `batch` (over a mesh: the rank's share, arranged first). Answers `cancelled` when `poll` or
    /// `progress` asked to stop, and `corrupt` when a term or the gradient norm is not finite (over a mesh: on any
    /// rank): then no weight, moment or step count changed. `parallel` runs the work.
    uform_status_t step(batch_t const &batch, ram::parallel_t const &parallel, poll_t poll, progress_t progress,
                        step_report_t &report, char const **message) noexcept;

    /// The legal-byte logits at CHOOSE, temperature 1, of `segments` (each ending with CHOOSE) under the current
    /// weights: item i's are `offsets[i] .. offsets[i + 1]` of `out`, for the bytes `choices` lists. For calibration.
    uform_status_t choice_logits(std::span<segment_t const> segments, std::uint8_t const *choices,
                                 std::size_t const *offsets, ram::parallel_t const &parallel, poll_t poll,
                                 std::vector<float> &out, char const **message) noexcept;

  private:
    /// Phase plan: arranges the rank's items and decides which terms run.
    uform_status_t plan_step(batch_t const &batch, step_plan_t &plan, char const **message) noexcept;
    /// Phase rows: the byte-logit rows (masked positions, then each choice item's CHOOSE) and token-vector flags.
    uform_status_t step_rows(batch_t const &batch, step_plan_t const &plan, char const **message) noexcept;
    /// Phase relations: the bags and edges as relations, over the world's items when the step gathers.
    uform_status_t step_relations(batch_t const &batch, step_plan_t &plan, char const **message) noexcept;
    /// Phase forward: the trunk over the batch, then the outputs gathered over the mesh when the step scores the world.
    uform_status_t step_forward(batch_t const &batch, ram::parallel_t const &parallel, poll_t poll, progress_t progress,
                                step_plan_t &plan, step_report_t &report, char const **message) noexcept;
    /// Phase units: each term's count over the mesh; a step with none refused.
    uform_status_t step_units(step_plan_t &plan, char const **message) noexcept;
    /// Phase losses: every term's value and its gradients on the outputs, summed over the mesh, and the joint loss.
    uform_status_t step_losses(batch_t const &batch, step_plan_t &plan, step_report_t &report,
                               char const **message) noexcept;
    /// The contrastive term (InfoNCE or sigmoid pairs) of the losses phase.
    uform_status_t contrastive_term(step_plan_t &plan, char const **message) noexcept;
    /// The late-interaction term of the losses phase.
    uform_status_t late_interaction_term(step_plan_t &plan, char const **message) noexcept;
    /// Phase distillation's items: the rank's teacher rows made unit, gathered with the embeddings over a mesh, and
    /// the term's units.
    uform_status_t step_distill_items(batch_t const &batch, step_plan_t &plan, char const **message) noexcept;
    /// The distillation term of the losses phase.
    uform_status_t distill_term(step_plan_t &plan, char const **message) noexcept;
    /// The choice term of the losses phase: legal logits gathered from CHOOSE rows, their gradients scattered back.
    uform_status_t choices_term(batch_t const &batch, step_plan_t &plan, char const **message) noexcept;
    /// Phase backward: gathered outputs' gradients summed, the trunk's backward, every gradient summed over the mesh.
    uform_status_t step_backward(step_plan_t const &plan, ram::parallel_t const &parallel, poll_t poll,
                                 progress_t progress, char const **message) noexcept;
    /// Phase update: the gradient norm, the clip, the schedule's rate and AdamW (refused if it would overflow).
    uform_status_t step_update(ram::parallel_t const &parallel, poll_t poll, step_report_t &report,
                               char const **message) noexcept;
    /// The gathers of a step whose anchors are scored against the world's items: bags, sides, embeddings and token
    /// vectors, and the relations built over them.
    uform_status_t gather_relations(batch_t const &batch, bool late, char const **message) noexcept;
    uform_status_t gather_outputs(trunk_outputs_t const &out, bool late, std::size_t width,
                                  char const **message) noexcept;

    layout_t layout_;
    std::vector<double> exchange_;
    std::vector<std::size_t> bytes_, local_bags_, world_bags_, local_rows_, world_rows_, world_token_offsets_;
    std::vector<std::uint8_t> local_flags_, world_bagged_; // bag flags, then sides: the rank's, the world's
    std::vector<uform_late_interaction_side_t> world_sides_;
    std::vector<float> world_z_, world_tokens_, bucket_; // bucket_: the RAM kernels' gradient sums
    std::vector<float> local_teacher_, world_teacher_, distill_z_, grad_distill_z_;
    ram_kernels_t ram_kernels_;
    relations_t relations_;
    loss_scratch_t loss_scratch_;
    std::vector<logit_row_t> rows_;
    std::vector<std::uint8_t> token_vector_flags_;
    std::vector<float> grad_z_, grad_token_vectors_, grad_logits_, legal_logits_, grad_legal_;
    std::vector<std::size_t> choice_offsets_;
};

} // namespace uform::train
