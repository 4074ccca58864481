// The trainer's loss terms (docs/model.md, "Training"; docs/decisions.md, "Relations and the terms"), forward and
// backward, as tools/reference/train_losses.py computes them. Each term answers the sum of its per-unit losses and its
// count of units, and adds `gradient_weight` times the gradient of that sum to the caller's gradient buffers: the
// caller passes the joint weight over the term's count across the mesh (one process: the local count), so the buffers
// receive the joint loss's gradient. Similarities and MaxSim's dot products are F32 (each an F32 rounding of the
// exact dot product, accumulated in double); the reductions over candidates, units and items are double.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <uform/train.h>

#include "cpp/train/relations.hpp"

namespace uform::train {

/// A term's value over the units one call scored.
struct term_t {
    /// The sum of the per-unit losses.
    double sum = 0;
    /// The units: anchors, queries, masked positions, choice items or distilled anchors.
    std::size_t count = 0;
    /// False when the sum or a gradient it added is NaN or infinite: the caller refuses the step.
    bool finite = true;
};

/// The buffers the contrastive and late-interaction terms work in, kept by the caller between steps so that a steady
/// loop of same-shaped steps allocates nothing after the first.
struct loss_scratch_t {
    std::vector<double> accumulated, x, s;
    std::vector<float> c, w;
    std::vector<std::size_t> docs, best;
};

/// A contrastive or late-interaction scale: `min(exp(log_scale), 100)` in F32 and its derivative in `log_scale`,
/// `exp(log_scale)` up to and including 100 and zero above (torch.clamp's).
struct scale_t {
    /// The scale.
    float value = 0;
    /// d value / d log_scale.
    float derivative = 0;
};

/// The scale of a `trainer.*.log_scale`.
scale_t scale_of(float log_scale) noexcept;

/// InfoNCE with graded positives over the unit embeddings `z` [relations.items x dim], row i's x_ij = scale * s_ij:
/// per anchor with a positive, `sum_p (w_ip / W_i) (log sum_{j in D(i)} c_ij exp(x_ij) - x_ip)`. Adds the gradient
/// to `grad_z` (same shape) and `grad_log_scale`. Answers out-of-memory, else ok.
uform_status_t info_nce(float const *z, std::size_t dim, relations_t const &relations, float log_scale,
                        double gradient_weight, float *grad_z, double &grad_log_scale, term_t &term,
                        loss_scratch_t &scratch, char const **message) noexcept;

/// The sigmoid form over the same candidates: per anchor with a candidate, `sum_{j in D(i)} weight_ij *
/// softplus(-y_ij (scale s_ij + bias))`, y = 1 and weight w_ij on P(i), else y = -1 and weight c_ij. Adds the
/// gradient to `grad_z`, `grad_log_scale` and `grad_bias`. Answers out-of-memory, else ok.
uform_status_t sigmoid_pairs(float const *z, std::size_t dim, relations_t const &relations, float log_scale, float bias,
                             double gradient_weight, float *grad_z, double &grad_log_scale, double &grad_bias,
                             term_t &term, loss_scratch_t &scratch, char const **message) noexcept;

/// Token vectors of a step's items: item i's rows are `offsets[i] .. offsets[i + 1]` of `values`
/// [offsets[items] x width]; items without token vectors (empty, or not on a side) have empty ranges.
struct token_vectors_t {
    /// The vectors, row-major.
    float const *values = nullptr;
    /// One per item plus one.
    std::size_t const *offsets = nullptr;
    /// Columns of a vector.
    std::size_t width = 0;
};

/// MaxSim InfoNCE: S(q, d) = mean_a max_b <q_a, d_b> (0 with an empty side); per query (an anchor on the `query`
/// side) with a positive document, InfoNCE over the `document`-side items of D(q) with c_qd and positives w_qd.
/// `sides` has one side per item (null: none, so no term). Adds the gradient to `grad_values` (the shape of
/// `vectors.values`) and `grad_log_scale`. Answers out-of-memory, else ok.
uform_status_t late_interaction(token_vectors_t const &vectors, uform_late_interaction_side_t const *sides,
                                relations_t const &relations, float log_scale, double gradient_weight,
                                float *grad_values, double &grad_log_scale, term_t &term, loss_scratch_t &scratch,
                                char const **message) noexcept;

/// Masked-byte cross-entropy over `rows` chosen positions: `logits` [rows x 256] the byte head's logits there,
/// `targets` the original bytes. Adds the gradient to `grad_logits` (same shape).
term_t masking_cross_entropy(float const *logits, std::uint8_t const *targets, std::size_t rows, double gradient_weight,
                             float *grad_logits) noexcept;

/// Choice cross-entropy `- sum_k t_k log p_k`, p the softmax at temperature 1 over each choice item's legal bytes'
/// logits (duplicates are separate entries): item i's entries are `offsets[i] .. offsets[i + 1]` of `logits` and
/// `targets`. Adds the gradient to `grad_logits` (one per entry; the caller sums duplicates into the byte's logit).
term_t choices_cross_entropy(float const *logits, float const *targets, std::size_t const *offsets, std::size_t items,
                             double gradient_weight, float *grad_logits) noexcept;

/// The items a distillation term scores: the student's unit embeddings `z` [items x dim] and the teacher's rows
/// `teacher` [items x width], each unit or all-zero (an all-zero row: the item has no teacher); the anchors are the
/// items `first_anchor .. first_anchor + anchors` (a mesh rank's own).
struct distill_items_t {
    float const *z = nullptr;
    std::size_t dim = 0;
    float const *teacher = nullptr;
    std::size_t width = 0;
    std::size_t items = 0, first_anchor = 0, anchors = 0;
    /// The student's and the teacher's temperatures, positive.
    float student_temperature = 1, teacher_temperature = 1;
};

/// Whether row `i` of `items.teacher` is nonzero: the item has a teacher.
bool has_teacher(distill_items_t const &items, std::size_t i) noexcept;

/// Distillation (docs/model.md, "Distillation"): per anchor with a teacher and another item with one (the set T),
/// `KL(P_i || Q_i) = sum_{j in T, j != i} P_ij (log P_ij - log Q_ij)`, P_i the softmax of the teacher cosines
/// `<u_i, u_j> / teacher_temperature`, Q_i the softmax of the student's `<z_i, z_j> / student_temperature`. Adds the
/// gradient to `grad_z` (the shape of `z`). Answers out-of-memory, else ok.
uform_status_t distill(distill_items_t const &items, double gradient_weight, float *grad_z, term_t &term,
                       loss_scratch_t &scratch, char const **message) noexcept;

} // namespace uform::train
