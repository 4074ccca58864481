// One optimiser step of the CPU trainer.
#include "step.hpp"

#include <algorithm>
#include <cmath>
#include <new>

#include "../../c/fail.hpp"

namespace uform::train {
namespace {

/// Whether the objective optimises `term` (the joint one optimises every term).
bool optimises(uform_objective_t objective, uform_objective_t term) noexcept {
    return objective == uform_objective_joint_k || objective == term;
}

/// The scalar tensor `name`'s value (zero when the trainer has none).
float scalar(parameters_t const &p, std::string_view name) noexcept {
    tensor_t const *t = p.find(name);
    return t ? t->master[0] : 0.0f;
}

/// Adds `value` to the gradient of the scalar tensor `name`.
void add_scalar_grad(parameters_t &p, std::string_view name, double value) noexcept {
    if (tensor_t *t = p.find(name)) t->grad[0] += float(value);
}

/// Grows `buffer` to `count` values and zeroes them; false when out of memory.
bool zeroed(std::vector<float> &buffer, std::size_t count) noexcept {
    try {
        buffer.resize(std::max(buffer.size(), count));
    } catch (std::bad_alloc const &) {
        return false;
    }
    std::fill_n(buffer.data(), count, 0.0f);
    return true;
}

/// Asks the poll hook whether to stop.
bool stop(poll_t poll) noexcept { return poll.fn && poll.fn(poll.context); }

/// Tells the progress hook `completed` of two phases are done; true when it asks to stop.
bool stop(progress_t progress, std::size_t completed) noexcept {
    return progress.fn && progress.fn(progress.context, completed, 2);
}

} // namespace

uform_status_t trainer_core_t::step(batch_t const &batch, ram::parallel_t const &parallel, poll_t poll,
                                    progress_t progress, step_report_t &report, char const **message) noexcept {
    parameters_t &p = parameters;
    geometry_t const &g = p.geometry;
    settings_t const &s = settings;
    std::size_t const items = batch.segments.size();
    bool const choices = batch.choice_offsets && optimises(s.objective, uform_objective_choices_k);
    bool const masking = !batch.mask_rows.empty() && optimises(s.objective, uform_objective_masking_k);
    bool const late =
        !batch.sides.empty() && g.has_token_head && optimises(s.objective, uform_objective_late_interaction_k);
    bool const contrastive = optimises(s.objective, uform_objective_contrastive_k);
    report = {};

    // The rows of byte logits: the masked positions, then each choice item's CHOOSE.
    try {
        rows_.clear();
        if (masking) rows_.assign(batch.mask_rows.begin(), batch.mask_rows.end());
        if (choices)
            for (std::size_t i = 0; i != items; ++i)
                if (batch.choice_offsets[i + 1] != batch.choice_offsets[i])
                    rows_.push_back({i, batch.segments[i].count - 1});
        token_vector_flags_.assign(late ? items : 0, 0);
        for (std::size_t i = 0; late && i != items; ++i)
            token_vector_flags_[i] = batch.sides[i] != uform_late_interaction_side_none_k;
        relations_args_t const args{items, batch.bags.empty() ? nullptr : batch.bags.data(), batch.relations,
                                    s.contrastive.negatives, s.contrastive.hard_negative_weight};
        if (uform_status_t status = build_relations(args, 0, items, relations_, message)) return status;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the step");
    }
    std::size_t const mask_count = masking ? batch.mask_rows.size() : 0;

    trunk_outputs_t out;
    trunk_request_t const request{batch.segments, token_vector_flags_, rows_};
    if (uform_status_t status = trunk_.forward(p, request, parallel, poll, out, message)) return status;
    report.tokens = out.tokens;
    report.embeddings = out.z;
    if (stop(progress, 1)) return fail(message, uform_status_cancelled_k, "the step was cancelled");

    // The terms, each adding weight / count times its sum's gradient to the outputs' gradients.
    std::size_t const token_rows = late ? out.token_vector_offsets[items] : 0;
    if (!zeroed(grad_z_, items * g.dimensions) || !zeroed(grad_token_vectors_, token_rows * g.token_width) ||
        !zeroed(grad_logits_, rows_.size() * 256))
        return fail(message, uform_status_out_of_memory_k, "out of memory for the step's gradients");
    for (tensor_t &t : p.tensors) std::fill(t.grad.begin(), t.grad.end(), 0.0f);
    bool finite = true;
    double loss = 0;

    if (contrastive) {
        std::size_t const count = s.contrastive.form == uform_pair_loss_form_sigmoid_k
                                      ? anchors_with_candidates(relations_)
                                      : anchors_with_positives(relations_);
        if (count) {
            double const weight = double(s.contrastive.weight) / double(count);
            double grad_log_scale = 0, grad_bias = 0;
            term_t term;
            float const log_scale = scalar(p, "trainer.contrastive.log_scale");
            uform_status_t const status =
                s.contrastive.form == uform_pair_loss_form_sigmoid_k
                    ? sigmoid_pairs(out.z, g.dimensions, relations_, log_scale, scalar(p, "trainer.contrastive.bias"),
                                    weight, grad_z_.data(), grad_log_scale, grad_bias, term, loss_scratch_, message)
                    : info_nce(out.z, g.dimensions, relations_, log_scale, weight, grad_z_.data(), grad_log_scale, term,
                               loss_scratch_, message);
            if (status) return status;
            add_scalar_grad(p, "trainer.contrastive.log_scale", grad_log_scale);
            add_scalar_grad(p, "trainer.contrastive.bias", grad_bias);
            report.contrastive = term.sum / double(count);
            loss += s.contrastive.weight * report.contrastive;
            finite = finite && term.finite;
        }
    }
    if (late) {
        std::size_t const count = queries_with_positive_documents(relations_, batch.sides.data());
        if (count) {
            double const weight = double(s.late_interaction.weight) / double(count);
            double grad_log_scale = 0;
            term_t term;
            token_vectors_t const vectors{out.token_vectors, out.token_vector_offsets, g.token_width};
            if (uform_status_t status = late_interaction(
                    vectors, batch.sides.data(), relations_, scalar(p, "trainer.late_interaction.log_scale"), weight,
                    grad_token_vectors_.data(), grad_log_scale, term, loss_scratch_, message))
                return status;
            add_scalar_grad(p, "trainer.late_interaction.log_scale", grad_log_scale);
            report.late_interaction = term.sum / double(count);
            loss += s.late_interaction.weight * report.late_interaction;
            finite = finite && term.finite;
        }
    }
    if (mask_count) {
        double const weight = double(s.masking.weight) / double(mask_count);
        term_t const term =
            masking_cross_entropy(out.logits, batch.mask_targets.data(), mask_count, weight, grad_logits_.data());
        report.masking = term.sum / double(mask_count);
        loss += s.masking.weight * report.masking;
        finite = finite && term.finite;
    }
    if (rows_.size() > mask_count) {
        // Each choice item's legal logits gathered from its CHOOSE row, and their gradients scattered back.
        std::size_t const choice_items = rows_.size() - mask_count;
        std::size_t const entries = batch.choice_offsets[items] - batch.choice_offsets[0];
        try {
            legal_logits_.resize(std::max(legal_logits_.size(), entries));
            choice_offsets_.resize(choice_items + 1);
        } catch (std::bad_alloc const &) {
            return fail(message, uform_status_out_of_memory_k, "out of memory for the step's choices");
        }
        if (!zeroed(grad_legal_, entries))
            return fail(message, uform_status_out_of_memory_k, "out of memory for the step's choices");
        std::size_t at = 0, row = mask_count;
        choice_offsets_[0] = 0;
        for (std::size_t i = 0, c = 0; i != items; ++i) {
            std::size_t const begin = batch.choice_offsets[i], end = batch.choice_offsets[i + 1];
            if (begin == end) continue;
            for (std::size_t k = begin; k != end; ++k) legal_logits_[at++] = out.logits[row * 256 + batch.choices[k]];
            choice_offsets_[++c] = at;
            ++row;
        }
        // Targets of the choice items, contiguous as their logits are.
        float const *targets = batch.choice_targets + batch.choice_offsets[0];
        double const weight = double(s.choices.weight) / double(choice_items);
        term_t const term = choices_cross_entropy(legal_logits_.data(), targets, choice_offsets_.data(), choice_items,
                                                  weight, grad_legal_.data());
        at = 0, row = mask_count;
        for (std::size_t i = 0; i != items; ++i) {
            std::size_t const begin = batch.choice_offsets[i], end = batch.choice_offsets[i + 1];
            if (begin == end) continue;
            for (std::size_t k = begin; k != end; ++k) grad_logits_[row * 256 + batch.choices[k]] += grad_legal_[at++];
            ++row;
        }
        report.choices = term.sum / double(choice_items);
        loss += s.choices.weight * report.choices;
        finite = finite && term.finite;
    }
    report.loss = loss;
    if (!finite || !std::isfinite(loss))
        return fail(message, uform_status_corrupt_k, "the step's loss is not finite: no weight was updated");
    if (stop(poll)) return fail(message, uform_status_cancelled_k, "the step was cancelled");

    if (uform_status_t status = trunk_.backward(p, grad_z_.data(), late ? grad_token_vectors_.data() : nullptr,
                                                rows_.empty() ? nullptr : grad_logits_.data(), parallel, poll, message))
        return status;
    if (stop(progress, 2)) return fail(message, uform_status_cancelled_k, "the step was cancelled");

    try {
        views_.clear();
        for (tensor_t &t : p.tensors)
            views_.push_back({t.master.data(), t.grad.data(), t.moment1.data(), t.moment2.data(), t.count(), t.decays});
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the optimiser");
    }
    double const norm = gradient_norm(views_);
    report.gradient_norm = norm;
    if (!std::isfinite(norm))
        return fail(message, uform_status_corrupt_k, "the step's gradient is not finite: no weight was updated");
    if (stop(poll)) return fail(message, uform_status_cancelled_k, "the step was cancelled");

    // From here on the step completes: the update is not interrupted.
    uform_schedule_t const &schedule = s.schedule;
    scale_gradients(views_, clip_factor(norm, schedule.clip_norm), parallel);
    report.learning_rate = learning_rate(schedule, steps);
    adamw_step(views_, steps, report.learning_rate, schedule.weight_decay, adamw_t{}, parallel);
    ++steps;
    return parameters_refresh(p, parallel, message);
}

uform_status_t trainer_core_t::choice_logits(std::span<segment_t const> segments, std::uint8_t const *choices,
                                             std::size_t const *offsets, ram::parallel_t const &parallel, poll_t poll,
                                             std::vector<float> &out, char const **message) noexcept {
    std::size_t const items = segments.size();
    try {
        rows_.clear();
        for (std::size_t i = 0; i != items; ++i) rows_.push_back({i, segments[i].count - 1});
        token_vector_flags_.clear();
        out.resize(offsets[items] - offsets[0]);
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for calibration");
    }
    trunk_outputs_t logits;
    if (uform_status_t status =
            trunk_.forward(parameters, {segments, token_vector_flags_, rows_}, parallel, poll, logits, message))
        return status;
    for (std::size_t i = 0, at = 0; i != items; ++i)
        for (std::size_t k = offsets[i]; k != offsets[i + 1]; ++k) out[at++] = logits.logits[i * 256 + choices[k]];
    return uform_status_ok_k;
}

} // namespace uform::train
