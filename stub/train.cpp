// The stub's trainer and mesh: steps score deterministic embeddings with real losses, so their stats
// mean something; calibration fits real temperatures to the stub's deterministic choice logits; saves write a valid
// checkpoint of the trainer's geometry (zero weights, unit norms, the fitted temperatures). RAM and VRAM trainers
// behave alike: a RAM trainer counts as one device.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <random>
#include <vector>

#include "common/backend.hpp"
#include "common/checkpoint_writer.hpp"
#include "common/checks.hpp"
#include "common/media_geometry.hpp"
#include "common/scalars.hpp"
#include "common/schedule.hpp"
#include "stub/rows.hpp"

namespace uform::backend {

struct trainer_t {
    uform_trainer_init_vram_args_t args;
    geometry_t geometry;
    std::size_t devices;
    std::size_t world_devices;
    std::uint64_t seed;
    std::size_t step = 0;
    std::vector<float> embeddings;         // one row per item of a step, at most the batch's bound
    std::vector<std::uint64_t> seeds;      // one per item
    std::vector<std::size_t> tokens;       // one per item
    std::vector<float> queries, documents; // token vectors of one query and one document
    std::vector<float> direction;          // a bag's direction
    std::vector<float> temperatures;       // one per choice group, 1 until calibrated
};

struct mesh_t {
    std::size_t host_index, host_count, first_rank, world_devices;
};

namespace {

using namespace uform::stub;

constexpr std::size_t late_tokens_k = 16; // token vectors per item the stub's MaxSim looks at
constexpr double scale_k = 1.0 / 0.07;    // InfoNCE's initial learned temperature

/// The weight of the edge `from -> to`, or zero when the set has none.
float edge_weight(uform_edges_t const &edges, std::size_t from, std::size_t to) noexcept {
    if (!edges.offsets_count) return 0;
    for (std::size_t e = edges.offsets[from]; e != edges.offsets[from + 1]; ++e)
        if (edges.ids[e] == to) return edges.weights_count ? edges.weights[e] : 1.0f;
    return 0;
}

bool linked(uform_edges_t const &edges, std::size_t a, std::size_t b) noexcept {
    return edge_weight(edges, a, b) > 0 || edge_weight(edges, b, a) > 0;
}

void add_scaled_unit(float *row, std::size_t columns, float const *direction, float lambda) noexcept {
    double sum = 0;
    for (std::size_t i = 0; i != columns; ++i) {
        row[i] += lambda * direction[i];
        sum += double(row[i]) * row[i];
    }
    float const scale = sum > 0 ? float(1.0 / std::sqrt(sum)) : 0.0f;
    for (std::size_t i = 0; i != columns; ++i) row[i] *= scale;
}

void fill_tensor(void *context, tensor_plan_t const &plan, std::byte *bytes) noexcept {
    auto const &trainer = *static_cast<trainer_t const *>(context);
    std::string_view const name = plan.name;
    if (name.ends_with("norm.weight")) {
        std::uint16_t const one = f32_to_bf16(1.0f);
        for (std::size_t i = 0; i != plan.elements(); ++i) std::memcpy(bytes + 2 * i, &one, 2);
    } else if (name == "head.choice.temperatures") {
        std::memcpy(bytes, trainer.temperatures.data(), 4 * std::min(plan.elements(), trainer.temperatures.size()));
    }
}

/// One step's items as the losses read them: their bags, their positives and their embeddings.
struct step_items_t {
    trainer_t &trainer;
    trainer_step_t const &step;
    std::size_t n, dims;
    float lambda; // how far an item's rows are pulled toward its bag's direction

    std::size_t bag_of(std::size_t i) const noexcept { return step.bags.empty() ? i : step.bags[i]; }
    /// Whether `j` is a positive of `i` (the same bag, or attracted), with its weight.
    bool positive(std::size_t i, std::size_t j, float &weight) const noexcept {
        float const attract = edge_weight(step.relations.attract, i, j);
        weight = attract > 0 ? attract : 1.0f;
        return bag_of(i) == bag_of(j) || attract > 0;
    }
    /// The dot product of the embeddings of `i` and `j`.
    double similarity(std::size_t i, std::size_t j) const noexcept {
        std::vector<float> const &e = trainer.embeddings;
        double sum = 0;
        for (std::size_t c = 0; c != dims; ++c) sum += double(e[i * dims + c]) * e[j * dims + c];
        return sum;
    }
};

/// One loss term of a step, and whether the batch had anything to score it on.
struct loss_t {
    float value = 0;
    bool present = false;
};

/// Reads each item's seed and token count into the trainer, reading media files as the encoders do; adds the
/// tokens to `tokens`.
uform_status_t read_items(step_items_t const &s, std::size_t &tokens, char const **message) noexcept {
    geometry_t const &g = s.trainer.geometry;
    for (std::size_t i = 0; i != s.n; ++i) {
        std::span<char const> const bytes = s.step.contents.item(i);
        uform_modality_t const modality = s.step.modalities[i];
        std::size_t count = 0;
        std::uint64_t seed;
        if (modality == uform_modality_text_k) {
            seed = fnv1a(item_seed(modality), bytes.data(), bytes.size());
            count = bytes.size();
        } else {
            char path[max_path_bytes_k + 1];
            path_terminated(bytes.data(), bytes.size(), path);
            file_digest_t const digest = digest_file(path, item_seed(modality));
            if (digest.status) return fail(message, digest.status, digest_message(digest.status));
            seed = digest.hash;
            if (modality == uform_modality_image_k) count = g.image_max_patches;
            else if (modality == uform_modality_video_k) count = g.video_max_patches_per_frame;
            else count = audio_shape(g, digest.length > 44 ? (digest.length - 44) / 2 : 0, g.audio_max_patches).patches;
        }
        s.trainer.seeds[i] = seed;
        s.trainer.tokens[i] = count;
        tokens += count;
    }
    return uform_status_ok_k;
}

/// Fills each item's embedding: its own row, pulled toward its bag's direction as steps go by.
void place_embeddings(step_items_t const &s) noexcept {
    trainer_t &t = s.trainer;
    for (std::size_t i = 0; i != s.n; ++i) {
        float *row = t.embeddings.data() + i * s.dims;
        fill_row(t.seeds[i] ^ t.seed, surface_embedding_k, 0, s.dims, true, row);
        fill_row(fnv1a_u64(t.seed, s.bag_of(i)), surface_bag_k, 0, s.dims, true, t.direction.data());
        add_scaled_unit(row, s.dims, t.direction.data(), s.lambda);
    }
}

/// The pair loss over every ordered pair of items, as the trainer's contrastive settings shape it.
loss_t contrastive_loss(step_items_t const &s) noexcept {
    uform_contrastive_t const &c = s.trainer.args.contrastive;
    double total = 0;
    std::size_t counted = 0;
    for (std::size_t i = 0; i != s.n; ++i) {
        double positives = 0, negatives = 0, pairs = 0;
        bool any = false;
        for (std::size_t j = 0; j != s.n; ++j) {
            if (j == i || linked(s.step.relations.ignore, i, j)) continue;
            float weight;
            bool const hard = edge_weight(s.step.relations.repel, i, j) > 0;
            double const logit = scale_k * s.similarity(i, j);
            if (s.positive(i, j, weight) && !hard) {
                any = true;
                if (c.form == uform_pair_loss_form_info_nce_k) positives += weight * std::exp(logit);
                else pairs += weight * std::log1p(std::exp(-(10.0 * s.similarity(i, j) - 10.0))), ++counted;
                continue;
            }
            if (c.negatives == uform_negatives_hard_k && !hard) continue;
            double const h = hard ? c.hard_negative_weight : 1.0;
            if (c.form == uform_pair_loss_form_info_nce_k) negatives += h * std::exp(logit);
            else pairs += h * std::log1p(std::exp(10.0 * s.similarity(i, j) - 10.0)), ++counted;
        }
        if (c.form == uform_pair_loss_form_info_nce_k) {
            if (any) total += -std::log(positives / (positives + negatives)), ++counted;
        } else total += pairs;
    }
    if (!counted) return {};
    return {float(total / double(counted)), true};
}

/// A stand-in for the masked-byte loss: the cross-entropy of a uniform byte guess, shrinking as steps go by,
/// present when any text item is nonempty.
loss_t masking_loss(step_items_t const &s) noexcept {
    bool present = false;
    for (std::size_t i = 0; i != s.n; ++i)
        present |= s.step.modalities[i] == uform_modality_text_k && s.step.contents.item_size(i) != 0;
    if (!present) return {};
    return {float(std::log(256.0) / (1.0 + double(s.trainer.step) / 1000.0)), true};
}

/// The late-interaction loss: each query's MaxSim against every document, as InfoNCE over the documents.
loss_t late_interaction_loss(step_items_t const &s) noexcept {
    trainer_t &t = s.trainer;
    std::size_t const width = t.geometry.token_width;
    auto vectors = [&](std::size_t item, float *out) {
        std::size_t const count = std::min(t.tokens[item], late_tokens_k);
        fill_row(fnv1a_u64(t.seed, s.bag_of(item)), surface_bag_k, 1, width, true, t.direction.data());
        for (std::size_t k = 0; k != count; ++k) {
            fill_row(t.seeds[item] ^ t.seed, surface_token_vector_k, k, width, true, out + k * width);
            add_scaled_unit(out + k * width, width, t.direction.data(), s.lambda);
        }
        return count;
    };
    double total = 0;
    std::size_t counted = 0;
    for (std::size_t q = 0; q != s.n; ++q) {
        if (s.step.sides[q] != uform_late_interaction_side_query_k) continue;
        std::size_t const query_tokens = vectors(q, t.queries.data());
        if (!query_tokens) continue;
        double positives = 0, all = 0;
        bool any = false;
        for (std::size_t d = 0; d != s.n; ++d) {
            if (d == q || s.step.sides[d] != uform_late_interaction_side_document_k) continue;
            std::size_t const document_tokens = vectors(d, t.documents.data());
            double score = 0;
            for (std::size_t k = 0; k != query_tokens && document_tokens; ++k) {
                double best = -1e30;
                for (std::size_t u = 0; u != document_tokens; ++u) {
                    double dot = 0;
                    for (std::size_t w = 0; w != width; ++w)
                        dot += double(t.queries[k * width + w]) * t.documents[u * width + w];
                    best = std::max(best, dot);
                }
                score += best / double(query_tokens);
            }
            double const weight = std::exp(scale_k * score);
            all += weight;
            float unused;
            if (s.positive(q, d, unused)) positives += weight, any = true;
        }
        if (any) total += -std::log(positives / all), ++counted;
    }
    if (!counted) return {};
    return {float(total / double(counted)), true};
}

/// The choices loss: the cross-entropy of each text's targets against its legal bytes' softmax.
loss_t choices_loss(step_items_t const &s) noexcept {
    double total = 0;
    std::size_t counted = 0;
    for (std::size_t i = 0; i != s.n; ++i) {
        std::span<char const> const legal = s.step.choices.item(i);
        if (legal.empty()) continue;
        std::span<char const> const text = s.step.contents.item(i);
        std::uint64_t const seed = fnv1a(item_seed(uform_modality_text_k), text.data(), text.size());
        double peak = -1e30, sum = 0;
        for (char byte : legal) peak = std::max(peak, double(choice_logit(seed, static_cast<unsigned char>(byte))));
        for (char byte : legal) sum += std::exp(double(choice_logit(seed, static_cast<unsigned char>(byte))) - peak);
        std::span<float const> const targets = s.step.choice_targets.item(i);
        for (std::size_t j = 0; j != legal.size(); ++j) {
            double const log_p =
                double(choice_logit(seed, static_cast<unsigned char>(legal[j]))) - peak - std::log(sum);
            total -= double(targets[j]) * log_p;
        }
        ++counted;
    }
    if (!counted) return {};
    return {float(total / double(counted)), true};
}

/// Whether item `i` has a teacher: a nonzero teacher row (train.h).
bool has_teacher(step_items_t const &s, std::size_t i) noexcept {
    std::size_t const width = s.step.teacher_width;
    if (!width) return false;
    float const *row = s.step.teacher.data() + i * width;
    return std::any_of(row, row + width, [](float v) { return v != 0; });
}

/// The cosine of teacher rows `i` and `j`.
double teacher_cosine(step_items_t const &s, std::size_t i, std::size_t j) noexcept {
    std::size_t const width = s.step.teacher_width;
    float const *a = s.step.teacher.data() + i * width, *b = s.step.teacher.data() + j * width;
    double dot = 0, aa = 0, bb = 0;
    for (std::size_t k = 0; k != width; ++k)
        dot += double(a[k]) * b[k], aa += double(a[k]) * a[k], bb += double(b[k]) * b[k];
    return dot / std::sqrt(aa * bb);
}

/// The distillation loss (docs/model.md, "Distillation"): per item with a teacher, the KL divergence of the softmax
/// of its student cosines to the other such items from the teacher's, each at its temperature.
loss_t distill_loss(step_items_t const &s) noexcept {
    uform_distill_t const &d = s.trainer.args.distill;
    double total = 0;
    std::size_t counted = 0;
    for (std::size_t i = 0; i != s.n; ++i) {
        if (!has_teacher(s, i)) continue;
        double top_t = -1e300, top_s = -1e300, sum_t = 0, sum_s = 0, cross = 0;
        bool any = false;
        for (std::size_t j = 0; j != s.n; ++j)
            if (j != i && has_teacher(s, j)) {
                top_t = std::max(top_t, teacher_cosine(s, i, j) / d.teacher_temperature);
                top_s = std::max(top_s, s.similarity(i, j) / d.student_temperature);
                any = true;
            }
        if (!any) continue;
        for (std::size_t j = 0; j != s.n; ++j)
            if (j != i && has_teacher(s, j)) {
                sum_t += std::exp(teacher_cosine(s, i, j) / d.teacher_temperature - top_t);
                sum_s += std::exp(s.similarity(i, j) / d.student_temperature - top_s);
            }
        double const lse_t = top_t + std::log(sum_t), lse_s = top_s + std::log(sum_s);
        for (std::size_t j = 0; j != s.n; ++j)
            if (j != i && has_teacher(s, j)) {
                double const log_p = teacher_cosine(s, i, j) / d.teacher_temperature - lse_t;
                cross += std::exp(log_p) * (log_p - (s.similarity(i, j) / d.student_temperature - lse_s));
            }
        total += cross, ++counted;
    }
    if (!counted) return {};
    return {float(total / double(counted)), true};
}

/// The stub's logits of one held-out item's legal bytes, at temperature 1.
void item_logits(std::span<char const> text, std::span<char const> legal, std::vector<double> &logits) {
    std::uint64_t const seed = fnv1a(item_seed(uform_modality_text_k), text.data(), text.size());
    logits.clear();
    for (char byte : legal) logits.push_back(choice_logit(seed, static_cast<unsigned char>(byte)));
}

/// The cross-entropy of `targets` against the softmax of `beta * logits`, and its derivative in `beta`.
void item_loss(std::span<double const> logits, std::span<float const> targets, double beta, double &loss,
               double &slope) noexcept {
    double peak = -1e300, sum = 0, expected = 0, wanted = 0, dot = 0;
    for (double z : logits) peak = std::max(peak, beta * z);
    for (double z : logits) sum += std::exp(beta * z - peak);
    for (std::size_t k = 0; k != logits.size(); ++k) {
        double const p = std::exp(beta * logits[k] - peak) / sum;
        expected += p * logits[k];
        wanted += double(targets[k]) * logits[k];
        dot += double(targets[k]) * (beta * logits[k]);
    }
    double target_mass = 0;
    for (float t : targets) target_mass += t;
    loss = target_mass * (peak + std::log(sum)) - dot;
    slope = expected - wanted;
}

/// A step's loss terms.
struct step_losses_t {
    loss_t masking, contrastive, late, choosing, distilling;
};

/// Fills a step's stats from its loss terms, weighted as the trainer's arguments say.
void fill_stats(trainer_t const &trainer, step_losses_t const &losses, std::size_t items, std::size_t tokens,
                uform_trainer_step_stats_t &stats) noexcept {
    uform_trainer_init_vram_args_t const &a = trainer.args;
    auto const &[masking, contrastive, late, choosing, distilling] = losses;
    float const weighted[5] = {masking.present ? a.masking.weight * masking.value : 0,
                               contrastive.present ? a.contrastive.weight * contrastive.value : 0,
                               late.present ? a.late_interaction.weight * late.value : 0,
                               choosing.present ? a.choices.weight * choosing.value : 0,
                               distilling.present ? a.distill.weight * distilling.value : 0};
    double norm = 0;
    for (float term : weighted) norm += double(term) * term;
    stats.step = trainer.step;
    stats.loss = weighted[0] + weighted[1] + weighted[2] + weighted[3] + weighted[4];
    stats.masking_loss = masking.value;
    stats.contrastive_loss = contrastive.value;
    stats.late_interaction_loss = late.value;
    stats.choices_loss = choosing.value;
    stats.distill_loss = distilling.value;
    stats.gradient_norm = float(0.5 * std::sqrt(norm));
    stats.learning_rate = float(uform::learning_rate(a.schedule, trainer.step));
    stats.items = items;
    stats.tokens = tokens;
}

} // namespace

uform_status_t trainer_init(trainer_config_t const &config, call_t &, trainer_t *&trainer,
                            char const **message) noexcept {
    try {
        auto made = std::make_unique<trainer_t>();
        made->args = config.args;
        made->geometry = config.geometry;
        made->devices = config.residency == uform_residency_vram_k ? config.devices.size() : 1;
        made->world_devices = config.world_devices;
        made->seed = fnv1a_u64(fnv_offset_k, config.args.seed);
        std::size_t const items = config.args.batch.max_segments_per_device * made->devices;
        made->embeddings.resize(items * config.geometry.dimensions);
        made->seeds.resize(items);
        made->tokens.resize(items);
        std::size_t const width = std::max<std::size_t>(1, config.geometry.token_width);
        made->queries.resize(late_tokens_k * width);
        made->documents.resize(late_tokens_k * width);
        made->direction.resize(std::max(config.geometry.dimensions, width));
        made->temperatures.assign(config.geometry.choice_groups, 1.0f);
        trainer = made.release();
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory making the trainer's buffers");
    }
}

void trainer_free(trainer_t *trainer) noexcept { delete trainer; }

uform_status_t trainer_step(trainer_t &trainer, call_t &call, trainer_step_t const &step,
                            uform_trainer_step_stats_t &stats, uform_rows_t &embeddings,
                            char const **message) noexcept {
    geometry_t const &g = trainer.geometry;
    std::size_t const n = step.contents.count, dims = g.dimensions;
    uform_objective_t const objective = trainer.args.objective;
    bool const joint = objective == uform_objective_joint_k;
    float const lambda = float(2.0 * double(trainer.step) / (double(trainer.step) + 50.0));
    step_items_t const items{trainer, step, n, dims, lambda};

    std::size_t tokens = 0;
    if (uform_status_t status = read_items(items, tokens, message)) return status;
    place_embeddings(items);
    step_losses_t losses;
    if ((joint || objective == uform_objective_contrastive_k) && n >= 2) losses.contrastive = contrastive_loss(items);
    if (joint || objective == uform_objective_masking_k) losses.masking = masking_loss(items);
    if ((joint || objective == uform_objective_late_interaction_k) && !step.sides.empty() && g.token_width)
        losses.late = late_interaction_loss(items);
    if ((joint || objective == uform_objective_choices_k) && step.choices.count) losses.choosing = choices_loss(items);
    if ((joint || objective == uform_objective_distill_k) && step.teacher_width)
        losses.distilling = distill_loss(items);
    if (!losses.masking.present && !losses.contrastive.present && !losses.late.present && !losses.choosing.present &&
        !losses.distilling.present && objective == uform_objective_distill_k)
        return fail(message, uform_status_invalid_argument_k,
                    "the step has nothing to learn from: no two items with a teacher (no weight changed)");

    if (call.report(1, 1)) return fail(message, uform_status_cancelled_k, "a progress handler stopped the step");

    if (call.has_arena()) {
        if (!call.allocate_rows(embeddings, n, n, dims, uform_scalar_f32_k, false))
            return fail(message, uform_status_out_of_memory_k, "out of memory for the step's embeddings");
        if (n) std::memcpy(embeddings.data, trainer.embeddings.data(), n * dims * sizeof(float));
    }
    fill_stats(trainer, losses, n, tokens, stats);
    ++trainer.step;
    return uform_status_ok_k;
}

uform_status_t trainer_calibrate(trainer_t &trainer, call_t &call, trainer_calibrate_t const &calibrate,
                                 uform_trainer_calibrate_stats_t &stats, char const **message) noexcept {
    try {
        std::size_t const n = calibrate.texts.count, groups = trainer.temperatures.size();
        std::vector<std::vector<double>> logits(n);
        for (std::size_t i = 0; i != n; ++i) {
            item_logits(calibrate.texts.item(i), calibrate.choices.item(i), logits[i]);
            stats.tokens += calibrate.texts.item_size(i) + 1;
            if (call.report(i + 1, n))
                return fail(message, uform_status_cancelled_k, "a progress handler stopped the calibration");
        }
        auto group_of = [&](std::size_t i) { return calibrate.groups.empty() ? 0 : calibrate.groups[i]; };
        // The group's summed loss and slope at `beta`.
        auto group_at = [&](std::size_t g, double beta, double &loss, double &slope) {
            loss = slope = 0;
            for (std::size_t i = 0; i != n; ++i) {
                if (group_of(i) != g) continue;
                double item, item_slope;
                item_loss(logits[i], calibrate.targets.item(i), beta, item, item_slope);
                loss += item, slope += item_slope;
            }
        };
        double before = 0, after = 0;
        for (std::size_t g = 0; g != groups; ++g) {
            bool const any = std::any_of(calibrate.groups.begin(), calibrate.groups.end(),
                                         [&](std::size_t group) { return group == g; }) ||
                             (calibrate.groups.empty() && g == 0 && n != 0);
            if (!any) continue;
            // decisions.md "Calibration": bisect the convex loss's slope over log beta in [ln 0.01, ln 100].
            double low = std::log(0.01), high = std::log(100.0), loss, slope, beta;
            group_at(g, std::exp(low), loss, slope);
            if (slope >= 0) beta = std::exp(low);
            else if (group_at(g, std::exp(high), loss, slope), slope <= 0) beta = std::exp(high);
            else {
                for (int halving = 0; halving != 200; ++halving) {
                    double const middle = (low + high) / 2;
                    group_at(g, std::exp(middle), loss, slope);
                    (slope < 0 ? low : high) = middle;
                }
                beta = std::exp((low + high) / 2);
            }
            trainer.temperatures[g] = float(1.0 / beta);
            group_at(g, 1.0, loss, slope);
            before += loss;
            group_at(g, 1.0 / double(trainer.temperatures[g]), loss, slope);
            after += loss;
            ++stats.groups_fitted;
        }
        stats.items = n;
        stats.loss_before = n ? float(before / double(n)) : 0.0f;
        stats.loss_after = n ? float(after / double(n)) : 0.0f;
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the held-out items' logits");
    }
}

uform_status_t trainer_save(trainer_t &trainer, call_t &, char const *path, std::size_t path_length,
                            char const **message) noexcept {
    try {
        std::vector<tensor_plan_t> const plan = checkpoint_plan(trainer.geometry);
        return checkpoint_write(path, path_length, trainer.geometry, plan, fill_tensor, &trainer, message);
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory planning the checkpoint");
    }
}

uform_status_t mesh_identity(unsigned char (&identity)[mesh_identity_bytes_k], char const **message) noexcept {
    try {
        std::random_device device;
        for (unsigned char &byte : identity) byte = static_cast<unsigned char>(device());
        return uform_status_ok_k;
    } catch (...) {
        return fail(message, uform_status_internal_k, "no source of randomness for the mesh's identity");
    }
}

uform_status_t mesh_join(mesh_join_t const &join, mesh_t *&mesh, uform_multimem_tier_t &tier,
                         char const **message) noexcept {
    mesh = new (std::nothrow) mesh_t{join.host_index, join.host_count, join.first_rank, join.world_devices};
    if (!mesh) return fail(message, uform_status_out_of_memory_k, "out of memory joining the mesh");
    tier = uform_multimem_tier_none_k;
    return uform_status_ok_k;
}

void mesh_free(mesh_t *mesh) noexcept { delete mesh; }

uform_status_t mesh_rendezvous(mesh_rendezvous_t const &, mesh_t *&mesh, char const **message) noexcept {
    mesh = nullptr;
    return fail(message, uform_status_unsupported_k, "the stub joins no RAM mesh");
}

} // namespace uform::backend
