// One optimiser step of the CPU trainer.
#include "cpp/train/step.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <new>
#include <span>

#include "common/fail.hpp"

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

/// A setting every rank of a mesh must share, as a double (exact for the sizes, enums and floats it holds), with the
/// message a rank that disagrees answers.
struct shared_setting_t {
    char const *message;
    double value;
};

/// The settings and geometry the ranks of a mesh must share: the objective and its terms, the schedule, the seed (the
/// masks are drawn from it) and the model's shape (rank 0's weights are broadcast into every rank's tensors).
std::array<shared_setting_t, 36> shared_settings(settings_t const &s, parameters_t const &p) noexcept {
    geometry_t const &g = p.geometry;
    double values = 0;
    for (tensor_t const &t : p.tensors) values += double(t.master.size());
    return {{
        {"the mesh's ranks disagree on the objective", double(s.objective)},
        {"the mesh's ranks disagree on masking.ratio", s.masking.ratio},
        {"the mesh's ranks disagree on masking.mean_span", s.masking.mean_span},
        {"the mesh's ranks disagree on masking.weight", s.masking.weight},
        {"the mesh's ranks disagree on contrastive.form", double(s.contrastive.form)},
        {"the mesh's ranks disagree on contrastive.negatives", double(s.contrastive.negatives)},
        {"the mesh's ranks disagree on contrastive.hard_negative_weight", s.contrastive.hard_negative_weight},
        {"the mesh's ranks disagree on contrastive.weight", s.contrastive.weight},
        {"the mesh's ranks disagree on late_interaction.token_width", double(s.late_interaction.token_width)},
        {"the mesh's ranks disagree on late_interaction.weight", s.late_interaction.weight},
        {"the mesh's ranks disagree on choices.groups", double(s.choices.groups)},
        {"the mesh's ranks disagree on choices.weight", s.choices.weight},
        {"the mesh's ranks disagree on distill.student_temperature", s.distill.student_temperature},
        {"the mesh's ranks disagree on distill.teacher_temperature", s.distill.teacher_temperature},
        {"the mesh's ranks disagree on distill.weight", s.distill.weight},
        {"the mesh's ranks disagree on schedule.steps", double(s.schedule.steps)},
        {"the mesh's ranks disagree on schedule.warmup_steps", double(s.schedule.warmup_steps)},
        {"the mesh's ranks disagree on schedule.learning_rate", s.schedule.learning_rate},
        {"the mesh's ranks disagree on schedule.min_learning_rate", s.schedule.min_learning_rate},
        {"the mesh's ranks disagree on schedule.weight_decay", s.schedule.weight_decay},
        {"the mesh's ranks disagree on schedule.clip_norm", s.schedule.clip_norm},
        {"the mesh's ranks disagree on the seed", double(s.seed >> 32)},
        {"the mesh's ranks disagree on the seed", double(s.seed & 0xffffffffu)},
        {"the mesh's ranks disagree on the model's depth", double(g.depth)},
        {"the mesh's ranks disagree on the model's hidden width", double(g.hidden)},
        {"the mesh's ranks disagree on the model's heads", double(g.heads)},
        {"the mesh's ranks disagree on the model's ffn width", double(g.ffn_hidden)},
        {"the mesh's ranks disagree on the model's dimensions", double(g.dimensions)},
        {"the mesh's ranks disagree on the model's token width", double(g.token_width)},
        {"the mesh's ranks disagree on the model's choice groups", double(g.choice_groups)},
        {"the mesh's ranks disagree on the model's image front-end", g.has_image ? 1.0 : 0.0},
        {"the mesh's ranks disagree on the model's video front-end", g.has_video ? 1.0 : 0.0},
        {"the mesh's ranks disagree on the model's audio front-end", g.has_audio ? 1.0 : 0.0},
        {"the mesh's ranks disagree on the model's byte head", g.has_byte_head ? 1.0 : 0.0},
        {"the mesh's ranks disagree on the model's tensors", double(p.tensors.size())},
        {"the mesh's ranks disagree on the model's parameters", values},
    }};
}

} // namespace

uform_status_t trainer_core_t::agree(ram::parallel_t const &parallel, char const **message) noexcept {
    if (mesh) {
        // Every rank checks every rank's shared settings against its own: a difference anywhere is seen everywhere,
        // so all ranks answer `invalid-argument` together, and the mesh stays usable for another trainer.
        auto const shared = shared_settings(settings, parameters);
        std::size_t const n = shared.size(), ranks = mesh->ranks();
        try {
            exchange_.assign(n * (ranks + 1), 0.0);
            bytes_.assign(ranks, n * sizeof(double));
        } catch (std::bad_alloc const &) {
            return fail(message, uform_status_out_of_memory_k, "out of memory making a trainer");
        }
        for (std::size_t k = 0; k != n; ++k) exchange_[k] = shared[k].value;
        if (uform_status_t status = mesh->gather(exchange_.data(), bytes_, exchange_.data() + n, message))
            return status;
        for (std::size_t r = 0; r != ranks; ++r)
            for (std::size_t k = 0; k != n; ++k)
                if (exchange_[n + r * n + k] != shared[k].value)
                    return fail(message, uform_status_invalid_argument_k, shared[k].message);
        for (tensor_t &t : parameters.tensors)
            for (std::vector<float> *values : {&t.master, &t.moment1, &t.moment2})
                if (uform_status_t status = mesh->broadcast(values->data(), values->size() * sizeof(float), message))
                    return status;
        std::uint64_t count = steps;
        if (uform_status_t status = mesh->broadcast(&count, sizeof(count), message)) return status;
        steps = std::size_t(count);
    }
    return residency().refresh(parameters, parallel, message);
}

uform_status_t trainer_core_t::arrange(std::size_t items, bool sides, bool bags, std::size_t teacher_width,
                                       char const **message) noexcept {
    std::size_t const ranks = mesh ? mesh->ranks() : 1, rank = mesh ? mesh->rank() : 0;
    try {
        exchange_.assign(2 * ranks + 2, 0.0);
        layout_.items.assign(ranks, 0);
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the step");
    }
    exchange_[rank] = double(items);
    exchange_[ranks] = sides ? 1.0 : 0.0;
    exchange_[ranks + 1] = bags ? 1.0 : 0.0;
    exchange_[ranks + 2 + rank] = double(teacher_width);
    if (mesh)
        if (uform_status_t status = mesh->sum(exchange_, message)) return status;
    // Every rank sees every rank's width, so ranks that name different ones all refuse the step together.
    layout_.teacher_width = 0;
    for (std::size_t r = 0; r != ranks; ++r) {
        auto const width = std::size_t(exchange_[ranks + 2 + r]);
        if (width && layout_.teacher_width && width != layout_.teacher_width)
            return fail(message, uform_status_invalid_argument_k,
                        "the mesh's ranks name different teacher widths in one step (no weight changed)");
        if (width) layout_.teacher_width = width;
    }
    layout_.first = layout_.world = 0;
    for (std::size_t r = 0; r != ranks; ++r) {
        layout_.items[r] = std::size_t(exchange_[r]);
        if (r < rank) layout_.first += layout_.items[r];
        layout_.world += layout_.items[r];
    }
    layout_.sides = exchange_[ranks] > 0;
    layout_.bags = exchange_[ranks + 1] > 0;
    layout_.arranged = true;
    return uform_status_ok_k;
}

uform_status_t trainer_core_t::gather_relations(batch_t const &batch, bool late, char const **message) noexcept {
    std::size_t const items = batch.segments.size(), world = layout_.world, ranks = mesh->ranks();
    settings_t const &s = settings;
    try {
        local_bags_.assign(items, 0);
        local_flags_.assign(2 * items, 0);
        world_bags_.resize(world);
        world_bagged_.resize(2 * world);
        bytes_.resize(ranks);
        for (std::size_t i = 0; i != items; ++i) {
            local_bags_[i] = batch.bags.empty() ? 0 : batch.bags[i];
            local_flags_[i] = !batch.bags.empty();
        }
        for (std::size_t r = 0; r != ranks; ++r) bytes_[r] = layout_.items[r] * sizeof(std::size_t);
        if (uform_status_t status = mesh->gather(local_bags_.data(), bytes_, world_bags_.data(), message))
            return status;
        // Bag flags, then sides, as bytes: one pass, the world's flags ahead of the world's sides.
        for (std::size_t i = 0; i != items; ++i)
            local_flags_[items + i] = batch.sides.empty() ? 0 : std::uint8_t(batch.sides[i]);
        for (std::size_t r = 0; r != ranks; ++r) bytes_[r] = layout_.items[r];
        if (uform_status_t status = mesh->gather(local_flags_.data(), bytes_, world_bagged_.data(), message))
            return status;
        if (uform_status_t status =
                mesh->gather(local_flags_.data() + items, bytes_, world_bagged_.data() + world, message))
            return status;
        world_sides_.resize(late ? world : 0);
        for (std::size_t i = 0; late && i != world; ++i)
            world_sides_[i] = uform_late_interaction_side_t(world_bagged_[world + i]);
        relations_args_t args;
        args.items = world;
        args.bags = layout_.bags ? world_bags_.data() : nullptr;
        args.bagged = world_bagged_.data();
        args.edges = batch.relations;
        args.edge_first = layout_.first;
        args.negatives = s.contrastive.negatives;
        args.hard_negative_weight = s.contrastive.hard_negative_weight;
        return build_relations(args, layout_.first, items, relations_, message);
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory gathering the step's relations");
    }
}

uform_status_t trainer_core_t::gather_outputs(trunk_outputs_t const &out, bool late, std::size_t width,
                                              char const **message) noexcept {
    std::size_t const items = layout_.items[mesh->rank()], world = layout_.world, ranks = mesh->ranks();
    std::size_t const dim = parameters.geometry.dimensions;
    try {
        world_z_.resize(world * dim);
        for (std::size_t r = 0; r != ranks; ++r) bytes_[r] = layout_.items[r] * dim * sizeof(float);
        if (uform_status_t status = mesh->gather(out.z, bytes_, world_z_.data(), message)) return status;
        if (!late) return uform_status_ok_k;
        // Token vectors: each item's row count, then the rows, rank by rank.
        bool const local = !token_vector_flags_.empty();
        local_rows_.assign(items, 0);
        for (std::size_t i = 0; local && i != items; ++i)
            local_rows_[i] = out.token_vector_offsets[i + 1] - out.token_vector_offsets[i];
        world_rows_.resize(world);
        for (std::size_t r = 0; r != ranks; ++r) bytes_[r] = layout_.items[r] * sizeof(std::size_t);
        if (uform_status_t status = mesh->gather(local_rows_.data(), bytes_, world_rows_.data(), message))
            return status;
        world_token_offsets_.assign(world + 1, 0);
        for (std::size_t i = 0; i != world; ++i) world_token_offsets_[i + 1] = world_token_offsets_[i] + world_rows_[i];
        for (std::size_t r = 0, item = 0; r != ranks; ++r) {
            std::size_t const end = item + layout_.items[r];
            bytes_[r] = (world_token_offsets_[end] - world_token_offsets_[item]) * width * sizeof(float);
            item = end;
        }
        world_tokens_.resize(world_token_offsets_[world] * width);
        return mesh->gather(out.token_vectors, bytes_, world_tokens_.data(), message);
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory gathering the step's embeddings");
    }
}

uform_status_t step_kernels_t::sum_gradients(parameters_t &parameters, collectives_t &mesh, std::vector<float> &bucket,
                                             char const **message) noexcept {
    try {
        bucket.resize(gradient_bucket_floats_k);
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory summing the gradients");
    }
    std::vector<tensor_t> &tensors = parameters.tensors;
    auto grad_of = [&](std::size_t t) noexcept { return std::span<float>(tensors[t].grad); };
    return sum_in_buckets(mesh, tensors.size(), grad_of, std::span<float>(bucket), message);
}

// The step, phase by phase (step.hpp, `step_plan_t`): plan, rows, relations, forward, units, losses, backward,
// update. A phase that fails returns before the update, so no weight, moment or step count changes.

uform_status_t trainer_core_t::plan_step(batch_t const &batch, step_plan_t &plan, char const **message) noexcept {
    settings_t const &s = settings;
    plan = {};
    plan.items = batch.segments.size();
    if (!mesh) {
        if (uform_status_t status =
                arrange(plan.items, !batch.sides.empty(), !batch.bags.empty(), batch.teacher_width, message))
            return status;
    } else if (!layout_.arranged || layout_.items[mesh->rank()] != plan.items) {
        return fail(message, uform_status_internal_k, "a mesh step's items were not arranged first");
    }
    layout_.arranged = false;
    plan.choices = batch.choice_offsets && optimises(s.objective, uform_objective_choices_k);
    plan.masking = !batch.mask_rows.empty() && optimises(s.objective, uform_objective_masking_k);
    // Late interaction runs on every rank when any rank has sides; a rank without computes no token vectors.
    plan.late = layout_.sides && parameters.geometry.has_token_head &&
                optimises(s.objective, uform_objective_late_interaction_k);
    plan.local_late = plan.late && !batch.sides.empty();
    plan.contrastive = optimises(s.objective, uform_objective_contrastive_k);
    bool const world_negatives =
        s.contrastive.negatives == uform_negatives_mesh_k || s.contrastive.negatives == uform_negatives_mesh_and_hard_k;
    plan.gathers = mesh && mesh->ranks() > 1 && world_negatives && (plan.contrastive || plan.late);
    plan.mask_count = plan.masking ? batch.mask_rows.size() : 0;
    plan.distill = layout_.teacher_width != 0 && optimises(s.objective, uform_objective_distill_k);
    plan.distill_gathers = plan.distill && mesh && mesh->ranks() > 1 && !plan.gathers;
    return uform_status_ok_k;
}

uform_status_t trainer_core_t::step_rows(batch_t const &batch, step_plan_t const &plan, char const **message) noexcept {
    try {
        rows_.clear();
        if (plan.masking) rows_.assign(batch.mask_rows.begin(), batch.mask_rows.end());
        if (plan.choices)
            for (std::size_t i = 0; i != plan.items; ++i)
                if (batch.choice_offsets[i + 1] != batch.choice_offsets[i])
                    rows_.push_back({i, batch.segments[i].count - 1});
        token_vector_flags_.assign(plan.local_late ? plan.items : 0, 0);
        for (std::size_t i = 0; plan.local_late && i != plan.items; ++i)
            token_vector_flags_[i] = batch.sides[i] != uform_late_interaction_side_none_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the step");
    }
    return uform_status_ok_k;
}

uform_status_t trainer_core_t::step_relations(batch_t const &batch, step_plan_t &plan, char const **message) noexcept {
    if (plan.gathers) {
        if (uform_status_t status = gather_relations(batch, plan.late, message)) return status;
    } else {
        relations_args_t args;
        args.items = plan.items;
        args.bags = batch.bags.empty() ? nullptr : batch.bags.data();
        args.edges = batch.relations;
        args.negatives = settings.contrastive.negatives;
        args.hard_negative_weight = settings.contrastive.hard_negative_weight;
        if (uform_status_t status = build_relations(args, 0, plan.items, relations_, message)) return status;
    }
    plan.sides = plan.gathers ? (plan.late ? world_sides_.data() : nullptr)
                              : (batch.sides.empty() ? nullptr : batch.sides.data());
    return uform_status_ok_k;
}

uform_status_t trainer_core_t::step_forward(batch_t const &batch, ram::parallel_t const &parallel, poll_t poll,
                                            progress_t progress, step_plan_t &plan, step_report_t &report,
                                            char const **message) noexcept {
    geometry_t const &g = parameters.geometry;
    trunk_request_t const request{batch.segments, token_vector_flags_, rows_};
    if (uform_status_t status = residency().forward(parameters, request, parallel, poll, plan.out, message))
        return status;
    report.tokens = plan.out.tokens;
    report.embeddings = plan.out.z;
    if (stop(progress, 1)) return fail(message, uform_status_cancelled_k, "the step was cancelled");
    if (plan.gathers)
        if (uform_status_t status = gather_outputs(plan.out, plan.late, g.token_width, message)) return status;
    plan.z = plan.gathers ? world_z_.data() : plan.out.z;
    plan.scored = plan.gathers ? layout_.world : plan.items;
    plan.vectors = plan.gathers ? token_vectors_t{world_tokens_.data(), world_token_offsets_.data(), g.token_width}
                                : token_vectors_t{plan.out.token_vectors, plan.out.token_vector_offsets, g.token_width};
    plan.token_rows = plan.gathers && plan.late ? world_token_offsets_[layout_.world]
                      : plan.local_late         ? plan.out.token_vector_offsets[plan.items]
                                                : 0;
    return uform_status_ok_k;
}

uform_status_t trainer_core_t::step_units(step_plan_t &plan, char const **message) noexcept {
    plan.choice_items = rows_.size() - plan.mask_count;
    double *counts = plan.counts;
    counts[0] = counts[1] = 0;
    counts[2] = double(plan.mask_count);
    counts[3] = double(plan.choice_items);
    if (plan.contrastive)
        counts[0] =
            double(settings.contrastive.form == uform_pair_loss_form_sigmoid_k ? anchors_with_candidates(relations_)
                                                                               : anchors_with_positives(relations_));
    if (plan.late && plan.sides) counts[1] = double(queries_with_positive_documents(relations_, plan.sides));
    counts[4] = 0;
    if (plan.distill) {
        distill_items_t const &d = plan.distilled;
        std::size_t with = 0, anchors = 0;
        for (std::size_t i = 0; i != d.items; ++i)
            if (has_teacher(d, i)) ++with, anchors += i >= d.first_anchor && i < d.first_anchor + d.anchors;
        counts[4] = with >= 2 ? double(anchors) : 0.0;
    }
    if (mesh)
        if (uform_status_t status = mesh->sum(std::span<double>(counts, 5), message)) return status;
    // Nothing to learn from over the whole mesh (no items, only empty texts, no term with a unit): refused before
    // anything changes, the schedule not advanced, equally on every rank (the counts are the mesh's).
    if (counts[0] == 0 && counts[1] == 0 && counts[2] == 0 && counts[3] == 0 && counts[4] == 0)
        return fail(message, uform_status_invalid_argument_k,
                    "the step has nothing to learn from: no term has an item (no weight changed)");
    return uform_status_ok_k;
}

uform_status_t trainer_core_t::contrastive_term(step_plan_t &plan, char const **message) noexcept {
    parameters_t &p = parameters;
    settings_t const &s = settings;
    double const weight = double(s.contrastive.weight) / plan.counts[0];
    double grad_log_scale = 0, grad_bias = 0;
    term_t term;
    float const log_scale = scalar(p, "trainer.contrastive.log_scale");
    std::size_t const dimensions = p.geometry.dimensions;
    uform_status_t const status =
        s.contrastive.form == uform_pair_loss_form_sigmoid_k
            ? sigmoid_pairs(plan.z, dimensions, relations_, log_scale, scalar(p, "trainer.contrastive.bias"), weight,
                            grad_z_.data(), grad_log_scale, grad_bias, term, loss_scratch_, message)
            : info_nce(plan.z, dimensions, relations_, log_scale, weight, grad_z_.data(), grad_log_scale, term,
                       loss_scratch_, message);
    if (status) return status;
    add_scalar_grad(p, "trainer.contrastive.log_scale", grad_log_scale);
    add_scalar_grad(p, "trainer.contrastive.bias", grad_bias);
    plan.sums[0] = term.sum;
    plan.sums[5] += term.finite ? 0 : 1;
    return uform_status_ok_k;
}

uform_status_t trainer_core_t::late_interaction_term(step_plan_t &plan, char const **message) noexcept {
    double const weight = double(settings.late_interaction.weight) / plan.counts[1];
    double grad_log_scale = 0;
    term_t term;
    if (uform_status_t status = late_interaction(
            plan.vectors, plan.sides, relations_, scalar(parameters, "trainer.late_interaction.log_scale"), weight,
            grad_token_vectors_.data(), grad_log_scale, term, loss_scratch_, message))
        return status;
    add_scalar_grad(parameters, "trainer.late_interaction.log_scale", grad_log_scale);
    plan.sums[1] = term.sum;
    plan.sums[5] += term.finite ? 0 : 1;
    return uform_status_ok_k;
}

uform_status_t trainer_core_t::step_distill_items(batch_t const &batch, step_plan_t &plan,
                                                  char const **message) noexcept {
    if (!plan.distill) return uform_status_ok_k;
    std::size_t const items = plan.items, width = layout_.teacher_width, dim = parameters.geometry.dimensions;
    bool const world = mesh && mesh->ranks() > 1;
    try {
        // The rank's rows made unit in double, rounded once; an all-zero row (no teacher) stays zero.
        local_teacher_.assign(items * width, 0.0f);
        for (std::size_t i = 0; !batch.teacher.empty() && i != items; ++i) {
            float const *row = batch.teacher.data() + i * width;
            double norm = 0;
            for (std::size_t k = 0; k != width; ++k) norm += double(row[k]) * double(row[k]);
            if (norm == 0) continue;
            double const inverse = 1 / std::sqrt(norm);
            for (std::size_t k = 0; k != width; ++k) local_teacher_[i * width + k] = float(double(row[k]) * inverse);
        }
        if (world) {
            std::size_t const ranks = mesh->ranks();
            bytes_.resize(ranks);
            world_teacher_.resize(layout_.world * width);
            for (std::size_t r = 0; r != ranks; ++r) bytes_[r] = layout_.items[r] * width * sizeof(float);
            if (uform_status_t status = mesh->gather(local_teacher_.data(), bytes_, world_teacher_.data(), message))
                return status;
            if (plan.distill_gathers) {
                distill_z_.resize(layout_.world * dim);
                for (std::size_t r = 0; r != ranks; ++r) bytes_[r] = layout_.items[r] * dim * sizeof(float);
                if (uform_status_t status = mesh->gather(plan.out.z, bytes_, distill_z_.data(), message)) return status;
            }
        }
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the step's teacher rows");
    }
    distill_items_t &d = plan.distilled;
    d.z = !world ? plan.out.z : plan.gathers ? world_z_.data() : distill_z_.data();
    d.dim = dim;
    d.teacher = world ? world_teacher_.data() : local_teacher_.data();
    d.width = width;
    d.items = world ? layout_.world : items;
    d.first_anchor = world ? layout_.first : 0;
    d.anchors = items;
    d.student_temperature = settings.distill.student_temperature;
    d.teacher_temperature = settings.distill.teacher_temperature;
    return uform_status_ok_k;
}

uform_status_t trainer_core_t::distill_term(step_plan_t &plan, char const **message) noexcept {
    double const weight = double(settings.distill.weight) / plan.counts[4];
    float *grad = plan.distill_gathers ? grad_distill_z_.data() : grad_z_.data();
    term_t term;
    if (uform_status_t status = distill(plan.distilled, weight, grad, term, loss_scratch_, message)) return status;
    plan.sums[4] = term.sum;
    plan.sums[5] += term.finite ? 0 : 1;
    return uform_status_ok_k;
}

uform_status_t trainer_core_t::choices_term(batch_t const &batch, step_plan_t &plan, char const **message) noexcept {
    // Each choice item's legal logits gathered from its CHOOSE row, and their gradients scattered back.
    std::size_t const items = plan.items, entries = batch.choice_offsets[items] - batch.choice_offsets[0];
    try {
        legal_logits_.resize(std::max(legal_logits_.size(), entries));
        choice_offsets_.resize(plan.choice_items + 1);
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the step's choices");
    }
    if (!zeroed(grad_legal_, entries))
        return fail(message, uform_status_out_of_memory_k, "out of memory for the step's choices");
    std::size_t at = 0, row = plan.mask_count;
    choice_offsets_[0] = 0;
    for (std::size_t i = 0, c = 0; i != items; ++i) {
        std::size_t const begin = batch.choice_offsets[i], end = batch.choice_offsets[i + 1];
        if (begin == end) continue;
        for (std::size_t k = begin; k != end; ++k) legal_logits_[at++] = plan.out.logits[row * 256 + batch.choices[k]];
        choice_offsets_[++c] = at;
        ++row;
    }
    // Targets of the choice items, contiguous as their logits are.
    float const *targets = batch.choice_targets + batch.choice_offsets[0];
    double const weight = double(settings.choices.weight) / plan.counts[3];
    term_t const term = choices_cross_entropy(legal_logits_.data(), targets, choice_offsets_.data(), plan.choice_items,
                                              weight, grad_legal_.data());
    at = 0, row = plan.mask_count;
    for (std::size_t i = 0; i != items; ++i) {
        std::size_t const begin = batch.choice_offsets[i], end = batch.choice_offsets[i + 1];
        if (begin == end) continue;
        for (std::size_t k = begin; k != end; ++k) grad_logits_[row * 256 + batch.choices[k]] += grad_legal_[at++];
        ++row;
    }
    plan.sums[3] = term.sum;
    plan.sums[5] += term.finite ? 0 : 1;
    return uform_status_ok_k;
}

uform_status_t trainer_core_t::step_losses(batch_t const &batch, step_plan_t &plan, step_report_t &report,
                                           char const **message) noexcept {
    geometry_t const &g = parameters.geometry;
    settings_t const &s = settings;
    if (!zeroed(grad_z_, plan.scored * g.dimensions) || !zeroed(grad_token_vectors_, plan.token_rows * g.token_width) ||
        !zeroed(grad_logits_, rows_.size() * 256) ||
        !zeroed(grad_distill_z_, plan.distill_gathers ? layout_.world * g.dimensions : 0))
        return fail(message, uform_status_out_of_memory_k, "out of memory for the step's gradients");
    if (uform_status_t status = residency().zero_gradients(parameters, message)) return status;
    if (plan.contrastive && plan.counts[0] > 0)
        if (uform_status_t status = contrastive_term(plan, message)) return status;
    if (plan.late && plan.counts[1] > 0 && plan.sides)
        if (uform_status_t status = late_interaction_term(plan, message)) return status;
    if (plan.mask_count) {
        double const weight = double(s.masking.weight) / plan.counts[2];
        term_t const term = masking_cross_entropy(plan.out.logits, batch.mask_targets.data(), plan.mask_count, weight,
                                                  grad_logits_.data());
        plan.sums[2] = term.sum;
        plan.sums[5] += term.finite ? 0 : 1;
    }
    if (plan.choice_items)
        if (uform_status_t status = choices_term(batch, plan, message)) return status;
    if (plan.distill && plan.counts[4] > 0)
        if (uform_status_t status = distill_term(plan, message)) return status;
    if (mesh)
        if (uform_status_t status = mesh->sum(std::span<double>(plan.sums, 6), message)) return status;
    double const term_weights[5] = {s.contrastive.weight, s.late_interaction.weight, s.masking.weight, s.choices.weight,
                                    s.distill.weight};
    double *values[5] = {&report.contrastive, &report.late_interaction, &report.masking, &report.choices,
                         &report.distill};
    double loss = 0;
    for (std::size_t k = 0; k != 5; ++k)
        if (plan.counts[k] > 0) {
            *values[k] = plan.sums[k] / plan.counts[k];
            loss += term_weights[k] * *values[k];
        }
    report.loss = loss;
    if (plan.sums[5] != 0 || !std::isfinite(loss))
        return fail(message, uform_status_corrupt_k, "the step's loss is not finite: no weight was updated");
    return uform_status_ok_k;
}

uform_status_t trainer_core_t::step_backward(step_plan_t const &plan, ram::parallel_t const &parallel, poll_t poll,
                                             progress_t progress, char const **message) noexcept {
    geometry_t const &g = parameters.geometry;
    // A gathered embedding's gradient is summed over the ranks before the backward's products round it.
    float const *grad_z = grad_z_.data();
    float const *grad_tokens = plan.local_late ? grad_token_vectors_.data() : nullptr;
    if (plan.distill_gathers) {
        // Distillation scored the world's embeddings alone: their gradients summed, the rank's own added to its rows.
        std::size_t const dim = g.dimensions;
        if (uform_status_t status = mesh->sum(std::span<float>(grad_distill_z_.data(), layout_.world * dim), message))
            return status;
        float const *own = grad_distill_z_.data() + layout_.first * dim;
        for (std::size_t k = 0; k != plan.items * dim; ++k) grad_z_[k] += own[k];
    }
    if (plan.gathers) {
        if (uform_status_t status = mesh->sum(std::span<float>(grad_z_.data(), plan.scored * g.dimensions), message))
            return status;
        grad_z += layout_.first * g.dimensions;
        if (plan.late) {
            if (uform_status_t status =
                    mesh->sum(std::span<float>(grad_token_vectors_.data(), plan.token_rows * g.token_width), message))
                return status;
            if (grad_tokens) grad_tokens += world_token_offsets_[layout_.first] * g.token_width;
        }
    }
    if (mesh)
        if (uform_status_t status = residency().begin_gradient_sums(parameters, *mesh, message)) return status;
    if (uform_status_t status = residency().backward(
            parameters, grad_z, grad_tokens, rows_.empty() ? nullptr : grad_logits_.data(), parallel, poll, message))
        return status;
    if (stop(progress, 2)) return fail(message, uform_status_cancelled_k, "the step was cancelled");
    if (mesh)
        if (uform_status_t status = residency().sum_gradients(parameters, *mesh, bucket_, message)) return status;
    return uform_status_ok_k;
}

uform_status_t trainer_core_t::step_update(ram::parallel_t const &parallel, poll_t poll, step_report_t &report,
                                           char const **message) noexcept {
    step_kernels_t &k = residency();
    double norm = 0, t = phases ? process_cpu_seconds() : 0;
    if (uform_status_t status = k.gradient_norm(parameters, norm, message)) return status;
    report.gradient_norm = norm;
    if (!std::isfinite(norm))
        return fail(message, uform_status_corrupt_k, "the step's gradient is not finite: no weight was updated");
    if (stop(poll)) return fail(message, uform_status_cancelled_k, "the step was cancelled");

    // From here on the step completes unless its update would overflow: it is not interrupted.
    uform_schedule_t const &schedule = settings.schedule;
    if (uform_status_t status = k.scale_gradients(parameters, clip_factor(norm, schedule.clip_norm), parallel, message))
        return status;
    t = lap(phases, step_phase_t::clip, t);
    report.learning_rate = learning_rate(schedule, steps);
    bool finite = false;
    if (uform_status_t status = k.update_stays_finite(parameters, steps, report.learning_rate, schedule.weight_decay,
                                                      parallel, finite, message))
        return status;
    if (!finite)
        return fail(message, uform_status_corrupt_k, "the step's update would make a weight non-finite: none changed");
    if (uform_status_t status =
            k.update(parameters, steps, report.learning_rate, schedule.weight_decay, parallel, message))
        return status;
    t = lap(phases, step_phase_t::adamw, t);
    ++steps;
    uform_status_t const status = k.refresh(parameters, parallel, message);
    lap(phases, step_phase_t::refresh, t);
    return status;
}

uform_status_t trainer_core_t::step(batch_t const &batch, ram::parallel_t const &parallel, poll_t poll,
                                    progress_t progress, step_report_t &report, char const **message) noexcept {
    report = {};
    step_plan_t plan;
    if (uform_status_t status = plan_step(batch, plan, message)) return status;
    if (uform_status_t status = step_rows(batch, plan, message)) return status;
    if (uform_status_t status = step_relations(batch, plan, message)) return status;
    if (!kernels) ram_kernels_.trunk().time_phases(phases);
    double t = phases ? process_cpu_seconds() : 0;
    if (uform_status_t status = step_forward(batch, parallel, poll, progress, plan, report, message)) return status;
    t = lap(phases, step_phase_t::forward, t);
    if (uform_status_t status = step_distill_items(batch, plan, message)) return status;
    if (uform_status_t status = step_units(plan, message)) return status;
    if (uform_status_t status = step_losses(batch, plan, report, message)) return status;
    t = lap(phases, step_phase_t::losses, t);
    if (stop(poll)) return fail(message, uform_status_cancelled_k, "the step was cancelled");
    double const trunk = phases ? phases[std::size_t(step_phase_t::backward)] : 0;
    if (uform_status_t status = step_backward(plan, parallel, poll, progress, message)) return status;
    lap(phases, step_phase_t::sums, t); // less the trunk's backward, timed by the trunk
    if (phases) phases[std::size_t(step_phase_t::sums)] -= phases[std::size_t(step_phase_t::backward)] - trunk;
    return step_update(parallel, poll, report, message);
}

uform_status_t trainer_core_t::choice_logits(std::span<segment_t const> segments, std::uint8_t const *choices,
                                             std::size_t const *offsets, ram::parallel_t const &parallel, poll_t poll,
                                             std::vector<float> &out, char const **message) noexcept {
    std::size_t const items = segments.size();
    try {
        token_vector_flags_.clear();
        out.resize(offsets[items] - offsets[0]);
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for calibration");
    }
    // In chunks of whole items up to `calibration_chunk_tokens_k` tokens: a training forward keeps every block's
    // activations, so one forward over thousands of items would hold gigabytes for logits of a few bytes each.
    for (std::size_t first = 0, at = 0; first != items;) {
        std::size_t last = first, tokens = 0;
        while (last != items && (last == first || tokens + segments[last].count <= calibration_chunk_tokens_k))
            tokens += segments[last++].count;
        try {
            rows_.clear();
            for (std::size_t i = first; i != last; ++i) rows_.push_back({i - first, segments[i].count - 1});
        } catch (std::bad_alloc const &) {
            return fail(message, uform_status_out_of_memory_k, "out of memory for calibration");
        }
        trunk_outputs_t logits;
        if (uform_status_t status =
                residency().forward(parameters, {segments.subspan(first, last - first), token_vector_flags_, rows_},
                                    parallel, poll, logits, message))
            return status;
        for (std::size_t i = first; i != last; ++i)
            for (std::size_t k = offsets[i]; k != offsets[i + 1]; ++k)
                out[at++] = logits.logits[(i - first) * 256 + choices[k]];
        first = last;
    }
    return uform_status_ok_k;
}

} // namespace uform::train
