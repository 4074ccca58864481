// The stub's trainer and mesh: steps score deterministic embeddings with real losses, so their stats
// mean something; saves write a valid checkpoint of the trainer's geometry (zero weights, unit norms).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <random>
#include <vector>

#include "../c/backend.hpp"
#include "../c/checkpoint_writer.hpp"
#include "../c/checks.hpp"
#include "../c/scalars.hpp"
#include "rows.hpp"

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

float learning_rate(uform_schedule_t const &s, std::size_t step) noexcept {
    if (step < s.warmup_steps) return s.learning_rate * float(step + 1) / float(s.warmup_steps);
    double const span = double(std::max<std::size_t>(1, s.steps - s.warmup_steps));
    double const progress = std::min(1.0, double(step - s.warmup_steps) / span);
    return float(s.min_learning_rate +
                 (s.learning_rate - s.min_learning_rate) * 0.5 * (1.0 + std::cos(3.14159265358979323846 * progress)));
}

void fill_tensor(void *, tensor_plan_t const &plan, std::byte *bytes) noexcept {
    std::string_view const name = plan.name;
    if (name.ends_with("norm.weight")) {
        std::uint16_t const one = f32_to_bf16(1.0f);
        for (std::size_t i = 0; i != plan.elements(); ++i) std::memcpy(bytes + 2 * i, &one, 2);
    } else if (name == "head.choice.temperatures") {
        float const one = 1.0f;
        for (std::size_t i = 0; i != plan.elements(); ++i) std::memcpy(bytes + 4 * i, &one, 4);
    }
}

} // namespace

uform_status_t trainer_init(trainer_config_t const &config, call_t &, trainer_t *&trainer,
                            char const **message) noexcept {
    try {
        auto made = std::make_unique<trainer_t>();
        made->args = config.args;
        made->geometry = config.geometry;
        made->devices = config.devices.size();
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
    float const lambda = float(2.0 * double(trainer.step) / (double(trainer.step) + 50.0));

    // Items: their seeds and token counts, reading media files as the encoders do.
    std::size_t tokens = 0;
    for (std::size_t i = 0; i != n; ++i) {
        std::span<char const> const bytes = step.contents.item(i);
        uform_modality_t const modality = step.modalities[i];
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
            bool truncated = false;
            if (modality == uform_modality_image_k) count = g.image_max_patches;
            else if (modality == uform_modality_video_k) count = g.video_max_patches_per_frame;
            else
                count = audio_patches(digest.length > 44 ? (digest.length - 44) / 2 : 0, g.audio_n_fft, g.audio_hop,
                                      g.audio_frames_per_patch, g.audio_max_patches, truncated);
        }
        trainer.seeds[i] = seed;
        trainer.tokens[i] = count;
        tokens += count;
    }
    auto bag_of = [&](std::size_t i) { return step.bags.empty() ? i : step.bags[i]; };
    auto positive = [&](std::size_t i, std::size_t j, float &weight) {
        float const attract = edge_weight(step.relations.attract, i, j);
        weight = attract > 0 ? attract : 1.0f;
        return bag_of(i) == bag_of(j) || attract > 0;
    };

    // Embeddings: each item's own row, pulled toward its bag's direction as steps go by.
    std::vector<float> &e = trainer.embeddings;
    std::vector<float> &direction = trainer.direction;
    for (std::size_t i = 0; i != n; ++i) {
        float *row = e.data() + i * dims;
        fill_row(trainer.seeds[i] ^ trainer.seed, surface_embedding_k, 0, dims, true, row);
        fill_row(fnv1a_u64(trainer.seed, bag_of(i)), surface_bag_k, 0, dims, true, direction.data());
        add_scaled_unit(row, dims, direction.data(), lambda);
    }
    auto similarity = [&](std::size_t i, std::size_t j) {
        double sum = 0;
        for (std::size_t c = 0; c != dims; ++c) sum += double(e[i * dims + c]) * e[j * dims + c];
        return sum;
    };

    float contrastive = 0, masking = 0, late = 0, choosing = 0;
    bool has_contrastive = false, has_masking = false, has_late = false, has_choices = false;
    uform_contrastive_t const &c = trainer.args.contrastive;
    if ((objective == uform_objective_joint_k || objective == uform_objective_contrastive_k) && n >= 2) {
        double total = 0;
        std::size_t counted = 0;
        for (std::size_t i = 0; i != n; ++i) {
            double positives = 0, negatives = 0, pairs = 0;
            bool any = false;
            for (std::size_t j = 0; j != n; ++j) {
                if (j == i || linked(step.relations.ignore, i, j)) continue;
                float weight;
                bool const hard = edge_weight(step.relations.repel, i, j) > 0;
                double const logit = scale_k * similarity(i, j);
                if (positive(i, j, weight) && !hard) {
                    any = true;
                    if (c.form == uform_pair_loss_form_info_nce_k) positives += weight * std::exp(logit);
                    else pairs += weight * std::log1p(std::exp(-(10.0 * similarity(i, j) - 10.0))), ++counted;
                    continue;
                }
                if (c.negatives == uform_negatives_hard_k && !hard) continue;
                double const h = hard ? c.hard_negative_weight : 1.0;
                if (c.form == uform_pair_loss_form_info_nce_k) negatives += h * std::exp(logit);
                else pairs += h * std::log1p(std::exp(10.0 * similarity(i, j) - 10.0)), ++counted;
            }
            if (c.form == uform_pair_loss_form_info_nce_k) {
                if (any) total += -std::log(positives / (positives + negatives)), ++counted;
            } else total += pairs;
        }
        if (counted) {
            contrastive = float(total / double(counted));
            has_contrastive = true;
        }
    }
    if (objective == uform_objective_joint_k || objective == uform_objective_masking_k) {
        for (std::size_t i = 0; i != n; ++i)
            has_masking |= step.modalities[i] == uform_modality_text_k && step.contents.item_size(i) != 0;
        // A stand-in: the cross-entropy of a uniform byte guess, shrinking as steps go by.
        if (has_masking) masking = float(std::log(256.0) / (1.0 + double(trainer.step) / 1000.0));
    }
    if ((objective == uform_objective_joint_k || objective == uform_objective_late_interaction_k) &&
        !step.sides.empty() && g.token_width) {
        std::size_t const width = g.token_width;
        auto vectors = [&](std::size_t item, float *out) {
            std::size_t const count = std::min(trainer.tokens[item], late_tokens_k);
            fill_row(fnv1a_u64(trainer.seed, bag_of(item)), surface_bag_k, 1, width, true, direction.data());
            for (std::size_t t = 0; t != count; ++t) {
                fill_row(trainer.seeds[item] ^ trainer.seed, surface_token_vector_k, t, width, true, out + t * width);
                add_scaled_unit(out + t * width, width, direction.data(), lambda);
            }
            return count;
        };
        double total = 0;
        std::size_t counted = 0;
        for (std::size_t q = 0; q != n; ++q) {
            if (step.sides[q] != uform_late_interaction_side_query_k) continue;
            std::size_t const query_tokens = vectors(q, trainer.queries.data());
            if (!query_tokens) continue;
            double positives = 0, all = 0;
            bool any = false;
            for (std::size_t d = 0; d != n; ++d) {
                if (d == q || step.sides[d] != uform_late_interaction_side_document_k) continue;
                std::size_t const document_tokens = vectors(d, trainer.documents.data());
                double score = 0;
                for (std::size_t t = 0; t != query_tokens && document_tokens; ++t) {
                    double best = -1e30;
                    for (std::size_t u = 0; u != document_tokens; ++u) {
                        double dot = 0;
                        for (std::size_t k = 0; k != width; ++k)
                            dot += double(trainer.queries[t * width + k]) * trainer.documents[u * width + k];
                        best = std::max(best, dot);
                    }
                    score += best / double(query_tokens);
                }
                double const weight = std::exp(scale_k * score);
                all += weight;
                float unused;
                if (positive(q, d, unused)) positives += weight, any = true;
            }
            if (any) total += -std::log(positives / all), ++counted;
        }
        if (counted) {
            late = float(total / double(counted));
            has_late = true;
        }
    }
    if ((objective == uform_objective_joint_k || objective == uform_objective_choices_k) && step.choices.count) {
        double total = 0;
        std::size_t counted = 0;
        for (std::size_t i = 0; i != n; ++i) {
            std::span<char const> const legal = step.choices.item(i);
            if (legal.empty()) continue;
            std::span<char const> const text = step.contents.item(i);
            std::uint64_t const seed = fnv1a(item_seed(uform_modality_text_k), text.data(), text.size());
            double peak = -1e30, sum = 0;
            for (char byte : legal) peak = std::max(peak, double(choice_logit(seed, static_cast<unsigned char>(byte))));
            for (char byte : legal)
                sum += std::exp(double(choice_logit(seed, static_cast<unsigned char>(byte))) - peak);
            std::span<float const> const targets = step.choice_targets.item(i);
            for (std::size_t j = 0; j != legal.size(); ++j) {
                double const log_p =
                    double(choice_logit(seed, static_cast<unsigned char>(legal[j]))) - peak - std::log(sum);
                total -= double(targets[j]) * log_p;
            }
            ++counted;
        }
        if (counted) {
            choosing = float(total / double(counted));
            has_choices = true;
        }
    }

    if (call.report(1, 1)) return fail(message, uform_status_cancelled_k, "a progress handler stopped the step");

    if (call.has_arena()) {
        if (!call.allocate_rows(embeddings, n, n, dims, uform_scalar_f32_k, false))
            return fail(message, uform_status_out_of_memory_k, "out of memory for the step's embeddings");
        if (n) std::memcpy(embeddings.data, e.data(), n * dims * sizeof(float));
    }
    uform_trainer_init_vram_args_t const &a = trainer.args;
    float const weighted[4] = {
        has_masking ? a.masking.weight * masking : 0, has_contrastive ? a.contrastive.weight * contrastive : 0,
        has_late ? a.late_interaction.weight * late : 0, has_choices ? a.choices.weight * choosing : 0};
    double norm = 0;
    for (float term : weighted) norm += double(term) * term;
    stats.step = trainer.step;
    stats.loss = weighted[0] + weighted[1] + weighted[2] + weighted[3];
    stats.masking_loss = masking;
    stats.contrastive_loss = contrastive;
    stats.late_interaction_loss = late;
    stats.choices_loss = choosing;
    stats.gradient_norm = float(0.5 * std::sqrt(norm));
    stats.learning_rate = learning_rate(a.schedule, trainer.step);
    stats.items = n;
    stats.tokens = tokens;
    ++trainer.step;
    return uform_status_ok_k;
}

uform_status_t trainer_save(trainer_t &trainer, call_t &, char const *path, std::size_t path_length,
                            char const **message) noexcept {
    try {
        std::vector<tensor_plan_t> const plan = checkpoint_plan(trainer.geometry);
        return checkpoint_write(path, path_length, trainer.geometry, plan, fill_tensor, nullptr, message);
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

} // namespace uform::backend
