// The trainer's objectives against the PyTorch training goldens (tests/data/train/, tools/reference/README.md "The
// training goldens"): the contrastive, late-interaction and distillation variants on the step-0 embeddings and token
// vectors, the masking sampler bit for bit, the schedule, the calibration, and AdamW against torch.optim.AdamW's own
// numbers.
//
// Prints "N passed, M failed" and exits nonzero on a failure. RAM build only (it includes cpp/).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cpp/train/calibrate.hpp"
#include "cpp/train/losses.hpp"
#include "cpp/train/masking.hpp"
#include "cpp/train/optimizer.hpp"
#include "cpp/train/relations.hpp"
#include "tests/unit/train_goldens.hpp"

namespace {

/// The terms' buffers, reused by every call as the trainer reuses them.
uform::train::loss_scratch_t scratch;

int passed = 0, failed = 0;

void check(bool ok, std::string const &what) {
    if (ok) {
        ++passed;
        return;
    }
    ++failed;
    std::printf("FAILED: %s\n", what.c_str());
}

/// `|a - b| <= tolerance |b|`.
bool near(double a, double b, double tolerance) { return std::abs(a - b) <= tolerance * std::abs(b); }

/// Units in the last place between two finite F32 values of the same sign.
std::uint32_t ulps(float a, float b) {
    std::uint32_t const x = std::bit_cast<std::uint32_t>(a), y = std::bit_cast<std::uint32_t>(b);
    return x > y ? x - y : y - x;
}

/// A JSON array of numbers as `value_type_`s.
template <typename value_type_>
std::vector<value_type_> numbers(goldens::json_t const &array) {
    std::vector<value_type_> out;
    for (auto const &item : array.items) out.push_back(static_cast<value_type_>(item.value));
    return out;
}

/// One edge set of batch.json, owning the arrays `uform_edges_t` points at.
struct edges_t {
    std::vector<std::size_t> offsets, ids;
    std::vector<float> weights;
    uform_edges_t view() const {
        return {offsets.data(), offsets.size(), ids.data(), ids.size(), weights.data(), weights.size()};
    }
};

edges_t edges_of(goldens::json_t const &set) {
    return {numbers<std::size_t>(set["offsets"]), numbers<std::size_t>(set["ids"]), numbers<float>(set["weights"])};
}

uform_negatives_t negatives_of(std::string const &name) {
    uform_negatives_t out = uform_negatives_device_k;
    out = name == "mesh" ? uform_negatives_mesh_k : out;
    out = name == "hard" ? uform_negatives_hard_k : out;
    return name == "mesh-and-hard" ? uform_negatives_mesh_and_hard_k : out;
}

/// The batch's bags, edges and sides.
struct step_relations_t {
    std::vector<std::size_t> bags;
    edges_t attract, repel, ignore;
    std::vector<uform_late_interaction_side_t> sides;

    explicit step_relations_t(goldens::json_t const &batch)
        : bags(numbers<std::size_t>(batch["bags"])), attract(edges_of(batch["relations"]["attract"])),
          repel(edges_of(batch["relations"]["repel"])), ignore(edges_of(batch["relations"]["ignore"])) {
        for (auto const &side : batch["sides"].items)
            sides.push_back(side.text == "query"      ? uform_late_interaction_side_query_k
                            : side.text == "document" ? uform_late_interaction_side_document_k
                                                      : uform_late_interaction_side_none_k);
    }

    uform::train::relations_t build(uform_negatives_t negatives) const {
        uform::train::relations_args_t args;
        args.items = bags.size();
        args.bags = bags.data();
        args.edges = {attract.view(), repel.view(), ignore.view()};
        args.negatives = negatives;
        args.hard_negative_weight = 2.0f;
        uform::train::relations_t out;
        char const *message = nullptr;
        check(uform::train::build_relations(args, 0, args.items, out, &message) == uform_status_ok_k,
              "build_relations");
        return out;
    }
};

/// (1), (3): every (form, negatives) contrastive variant on step0.z, and step0.terms[1].
void contrastive_variants(goldens::json_t const &batch, std::map<std::string, goldens::tensor_t> const &golden) {
    step_relations_t const step(batch);
    std::vector<float> const z(golden.at("step0.z").values.begin(), golden.at("step0.z").values.end());
    std::size_t const items = step.bags.size(), dim = z.size() / items;
    auto const &variants = batch["variants"]["contrastive"];
    double worst_loss = 0, worst_cosine = 1, worst_relative = 0;
    for (std::size_t v = 0; v != variants.size(); ++v) {
        std::string const form = variants[v][0].text, negatives = variants[v][1].text;
        std::string const what = "contrastive " + form + " " + negatives;
        auto const relations = step.build(negatives_of(negatives));
        bool const sigmoid = form == "sigmoid";
        float const log_scale = sigmoid ? float(std::log(10.0)) : float(std::log(1 / 0.07)), bias = sigmoid ? -10 : 0;
        std::size_t const count = sigmoid ? uform::train::anchors_with_candidates(relations)
                                          : uform::train::anchors_with_positives(relations);
        std::vector<float> grad_z(z.size(), 0.0f);
        double grad_log_scale = 0, grad_bias = 0;
        uform::train::term_t term;
        char const *message = nullptr;
        uform_status_t const status =
            sigmoid ? uform::train::sigmoid_pairs(z.data(), dim, relations, log_scale, bias, 1.0 / double(count),
                                                  grad_z.data(), grad_log_scale, grad_bias, term, scratch, &message)
                    : uform::train::info_nce(z.data(), dim, relations, log_scale, 1.0 / double(count), grad_z.data(),
                                             grad_log_scale, term, scratch, &message);
        check(status == uform_status_ok_k && term.finite && term.count == count, what + ": runs");
        double const loss = term.sum / double(term.count), expected = golden.at("variants.contrastive").values[v];
        check(near(loss, expected, 1e-3), what + ": loss " + std::to_string(loss) + " vs " + std::to_string(expected));
        auto const closeness = goldens::compare(
            grad_z.data(), golden.at("variants.contrastive.grad_z").values.data() + v * z.size(), z.size());
        check(closeness.cosine >= 0.999 && closeness.relative <= 1e-2, what + ": grad_z");
        double const *scalars = golden.at("variants.contrastive.grad_scalars").values.data() + 2 * v;
        check(near(grad_log_scale, scalars[0], 1e-3),
              what + ": grad log_scale " + std::to_string(grad_log_scale) + " vs " + std::to_string(scalars[0]));
        check(sigmoid ? near(grad_bias, scalars[1], 1e-3) : grad_bias == 0 && scalars[1] == 0, what + ": grad bias");
        if (negatives == batch["objective"]["negatives"].text && form == batch["objective"]["form"].text)
            check(near(loss, golden.at("step0.terms").values[1], 1e-3), "step0 contrastive term");
        worst_loss = std::max(worst_loss, std::abs(loss - expected) / std::abs(expected));
        worst_cosine = std::min(worst_cosine, closeness.cosine);
        worst_relative = std::max(worst_relative, closeness.relative);
    }
    std::printf("contrastive: loss within %.2e relative, grad_z cosine >= %.9f, relative <= %.2e\n", worst_loss,
                worst_cosine, worst_relative);
}

/// (2), (3): every late-interaction variant on step0.token_vectors, and step0.terms[2].
void late_variants(goldens::json_t const &batch, std::map<std::string, goldens::tensor_t> const &golden) {
    step_relations_t const step(batch);
    auto const &tv = golden.at("step0.token_vectors");
    auto const listed = numbers<std::size_t>(batch["step0.token_vector_items"]);
    auto const &listed_offsets = golden.at("step0.token_vector_offsets").values;
    std::vector<float> const values(tv.values.begin(), tv.values.end());
    std::size_t const items = step.bags.size(), width = tv.shape[1];
    std::vector<std::size_t> offsets(items + 1, 0);
    for (std::size_t i = 0, k = 0; i != items; ++i) {
        std::size_t rows = 0;
        if (k < listed.size() && listed[k] == i) rows = std::size_t(listed_offsets[k + 1] - listed_offsets[k]), ++k;
        offsets[i + 1] = offsets[i] + rows;
    }
    check(offsets[items] == tv.shape[0], "late interaction: the token vectors' rows");
    uform::train::token_vectors_t const vectors{values.data(), offsets.data(), width};
    auto const &variants = batch["variants"]["late_interaction"];
    double worst_loss = 0, worst_cosine = 1, worst_relative = 0;
    for (std::size_t v = 0; v != variants.size(); ++v) {
        std::string const negatives = variants[v].text, what = "late interaction " + negatives;
        auto const relations = step.build(negatives_of(negatives));
        std::size_t const count = uform::train::queries_with_positive_documents(relations, step.sides.data());
        std::vector<float> grad(values.size(), 0.0f);
        double grad_log_scale = 0;
        uform::train::term_t term;
        char const *message = nullptr;
        check(uform::train::late_interaction(vectors, step.sides.data(), relations, float(std::log(1 / 0.07)),
                                             1.0 / double(count), grad.data(), grad_log_scale, term, scratch,
                                             &message) == uform_status_ok_k &&
                  term.finite && term.count == count && count > 0,
              what + ": runs");
        double const loss = term.sum / double(term.count), expected = golden.at("variants.late_interaction").values[v];
        check(near(loss, expected, 1e-3), what + ": loss " + std::to_string(loss) + " vs " + std::to_string(expected));
        auto const closeness = goldens::compare(
            grad.data(), golden.at("variants.late_interaction.grad_token_vectors").values.data() + v * values.size(),
            values.size());
        check(closeness.cosine >= 0.999 && closeness.relative <= 1e-2, what + ": grad token vectors");
        double const expected_scale = golden.at("variants.late_interaction.grad_log_scale").values[v];
        check(near(grad_log_scale, expected_scale, 1e-3), what + ": grad log_scale");
        if (negatives == batch["objective"]["negatives"].text)
            check(near(loss, golden.at("step0.terms").values[2], 1e-3), "step0 late-interaction term");
        worst_loss = std::max(worst_loss, std::abs(loss - expected) / std::abs(expected));
        worst_cosine = std::min(worst_cosine, closeness.cosine);
        worst_relative = std::max(worst_relative, closeness.relative);
    }
    std::printf("late interaction: loss within %.2e relative, grad cosine >= %.9f, relative <= %.2e\n", worst_loss,
                worst_cosine, worst_relative);
}

/// Distillation: every temperature pair on step0.z and the seeded teacher rows (a narrower teacher, the media
/// items' rows zero), against the reference's autograd; then a student that is its own teacher scores zero.
void distill_variants(goldens::json_t const &batch, std::map<std::string, goldens::tensor_t> const &golden) {
    std::vector<float> const z(golden.at("step0.z").values.begin(), golden.at("step0.z").values.end());
    auto const &rows = golden.at("variants.distill.teacher");
    std::vector<float> const raw(rows.values.begin(), rows.values.end());
    std::size_t const items = rows.shape[0], width = rows.shape[1], dim = z.size() / items;
    // The trainer hands the term unit rows (zero rows kept), made unit in double and rounded once.
    std::vector<float> teacher(raw.size(), 0.0f);
    for (std::size_t i = 0; i != items; ++i) {
        double norm = 0;
        for (std::size_t k = 0; k != width; ++k) norm += double(raw[i * width + k]) * raw[i * width + k];
        for (std::size_t k = 0; norm > 0 && k != width; ++k)
            teacher[i * width + k] = float(double(raw[i * width + k]) / std::sqrt(norm));
    }
    auto const &variants = batch["variants"]["distill"];
    double worst_loss = 0, worst_cosine = 1;
    for (std::size_t v = 0; v != variants.size(); ++v) {
        uform::train::distill_items_t const d{z.data(),
                                              dim,
                                              teacher.data(),
                                              width,
                                              items,
                                              0,
                                              items,
                                              float(variants[v][0].value),
                                              float(variants[v][1].value)};
        std::size_t with = 0;
        for (std::size_t i = 0; i != items; ++i) with += uform::train::has_teacher(d, i);
        std::vector<float> grad_z(z.size(), 0.0f);
        uform::train::term_t term;
        char const *message = nullptr;
        std::string const what = "distill " + std::to_string(v);
        check(uform::train::distill(d, 1.0 / double(with), grad_z.data(), term, scratch, &message) ==
                      uform_status_ok_k &&
                  term.finite && term.count == with && with >= 2 && with < items,
              what + ": runs over the items with a teacher");
        double const loss = term.sum / double(term.count), expected = golden.at("variants.distill").values[v];
        check(near(loss, expected, 1e-3), what + ": loss " + std::to_string(loss) + " vs " + std::to_string(expected));
        auto const closeness = goldens::compare(
            grad_z.data(), golden.at("variants.distill.grad_z").values.data() + v * z.size(), z.size());
        check(closeness.cosine >= 0.999 && closeness.relative <= 1e-2, what + ": grad_z");
        worst_loss = std::max(worst_loss, std::abs(loss - expected) / std::abs(expected));
        worst_cosine = std::min(worst_cosine, closeness.cosine);
    }
    std::printf("distill: loss within %.2e relative, grad_z cosine >= %.9f\n", worst_loss, worst_cosine);
    uform::train::distill_items_t const own{z.data(), dim, z.data(), dim, items, 0, items, 0.1f, 0.1f};
    std::vector<float> grad_z(z.size(), 0.0f);
    uform::train::term_t term;
    check(uform::train::distill(own, 1.0, grad_z.data(), term, scratch, nullptr) == uform_status_ok_k &&
              std::abs(term.sum) < 1e-4 * double(items),
          "distill: a student that is its own teacher scores zero");
}

/// Whether `sample_mask` draws `expected` ([[position, token], ...]) for one text.
bool masks_as(std::uint64_t seed, std::size_t step, std::size_t item, std::string const &text,
              goldens::json_t const &expected) {
    uform::train::mask_t mask;
    char const *message = nullptr;
    if (uform::train::sample_mask(seed, step, item, text, 0.15f, 3.0f, mask, &message) != uform_status_ok_k)
        return false;
    if (mask.positions.size() != expected.size()) return false;
    for (std::size_t k = 0; k != expected.size(); ++k)
        if (mask.positions[k] != expected[k][0].index() || mask.tokens[k] != expected[k][1].index()) return false;
    return true;
}

/// (4): the generator check's mask and the injected masks of the batch.
void masks(goldens::json_t const &batch) {
    auto const &sampler = batch["generator_checks"]["mask_sampler"];
    check(masks_as(std::uint64_t(sampler["seed"].value), sampler["step"].index(), sampler["item"].index(),
                   sampler["text"].text, sampler["mask"]),
          "mask sampler: generator check");
    auto const &injected = batch["masks"];
    std::size_t masked = 0;
    for (std::size_t k = 0; k != injected["items"].keys.size(); ++k) {
        std::size_t const item = std::stoul(injected["items"].keys[k]);
        check(masks_as(std::uint64_t(injected["seed"].value), injected["step"].index(), item,
                       batch["items"][item]["text"].text, injected["items"].items[k]),
              "mask sampler: injected mask of item " + std::to_string(item));
        ++masked;
    }
    check(masked == 10, "mask sampler: every maskable item");
    uform::train::mask_t mask;
    check(uform::train::sample_mask(1, 0, 0, "abc", 0.0f, 3.0f, mask, nullptr) == uform_status_invalid_argument_k &&
              uform::train::sample_mask(1, 0, 0, "abc", 0.5f, NAN, mask, nullptr) == uform_status_invalid_argument_k,
          "mask sampler: refuses a bad ratio or span");
    check(uform::train::sample_mask(1, 0, 0, "", 0.5f, 3.0f, mask, nullptr) == uform_status_ok_k &&
              mask.positions.empty(),
          "mask sampler: an empty text");
    check(uform::train::sample_mask(1, 0, 0, "abcdefgh", 1.0f, 3.0f, mask, nullptr) == uform_status_ok_k &&
              mask.positions.size() == 8,
          "mask sampler: ratio 1 masks every byte");
}

/// (5): the rate of every step of the trajectory.
void schedule(goldens::json_t const &batch, std::map<std::string, goldens::tensor_t> const &golden) {
    auto const &s = batch["schedule"];
    uform_schedule_t const resolved{s["steps"].index(),
                                    s["warmup_steps"].index(),
                                    float(s["learning_rate"].value),
                                    float(s["min_learning_rate"].value),
                                    float(s["weight_decay"].value),
                                    float(s["clip_norm"].value)};
    auto const &trajectory = golden.at("trajectory");
    bool all = true;
    for (std::size_t k = 0; k != trajectory.shape[0]; ++k)
        all = all && near(uform::train::learning_rate(resolved, k), trajectory.values[k * 7 + 6], 1e-6);
    check(all, "schedule: the trajectory's rates");
    check(uform::train::learning_rate(resolved, 25) == double(resolved.min_learning_rate), "schedule: min after steps");
}

/// (6): the fitted temperatures.
void calibration(goldens::json_t const &batch, std::map<std::string, goldens::tensor_t> const &golden) {
    auto const &logits64 = golden.at("calibration.logits").values;
    std::vector<float> const logits(logits64.begin(), logits64.end());
    std::vector<std::size_t> offsets;
    for (double o : golden.at("calibration.logit_offsets").values) offsets.push_back(std::size_t(o));
    std::vector<float> targets;
    std::vector<std::size_t> groups;
    for (auto const &item : batch["calibration"].items) {
        for (auto const &t : item["targets"].items) targets.push_back(float(t.value));
        groups.push_back(item["group"].index());
    }
    uform::train::calibration_items_t const items{logits.data(), targets.data(), offsets.data(), groups.data(),
                                                  groups.size()};
    float temperatures[3] = {0, 0, 0};
    check(uform::train::fit_temperatures(items, 3, temperatures, nullptr) == uform_status_ok_k, "calibration: runs");
    auto const &expected = golden.at("calibration.temperatures").values;
    check(near(temperatures[0], expected[0], 1e-4) && near(temperatures[1], expected[1], 1e-4),
          "calibration: T_g " + std::to_string(temperatures[0]) + ", " + std::to_string(temperatures[1]));
    check(temperatures[2] == 1.0f, "calibration: a group without items keeps 1");
    check(uform::train::fit_temperatures(items, 1, temperatures, nullptr) == uform_status_invalid_argument_k,
          "calibration: refuses a group out of range");
}

/// (7): AdamW with clipping against torch.optim.AdamW (foreach=False) through train_optim.Optimizer: three tensors
/// (decayed [2, 3], `embed.byte.weight` [2, 2] not decayed, a bias [3]), masters `((e * 13 + len(name)) % 7 - 3) /
/// 8`, step k's gradients `((e * 37 + 11 k + 5 t) % 17 - 8) / 4 * (k + 1)` (t the tensor's index), Schedule(steps
/// 5, warm-up 2, lr 0.05, min 0.005, weight decay 0.1, clip 6): step 0 is not clipped, steps 1-4 are. The expected
/// numbers are torch's, printed as F32 bits: the moments must match bit for bit, the masters within one unit in the
/// last place, since torch's vectorised `sqrt` is not correctly rounded (on AVX-512 16% of its results are one unit
/// off; a numpy replay of torch's operations with a correctly rounded square root gives our bits exactly).
void adamw(uform::ram::parallel_t const &parallel, std::string const &how) {
    struct tensor_t {
        char const *name;
        bool decays;
        std::vector<std::uint32_t> master, moment1, moment2;
        std::vector<float> values{}, grad{}, m{}, v{};
    };
    std::vector<tensor_t> tensors{{"w",
                                   true,
                                   {0xbe4fda02, 0xbeba40f1, 0x3ef3e9f3, 0x3e7f8ba5, 0x3e0720fa, 0xbdb9a542},
                                   {0x3e57d7f8, 0x3d6c3bec, 0x3c664fab, 0xbe3ae624, 0xbe45ee4b, 0x3e5da79a},
                                   {0x3f3074cc, 0x3f291d91, 0x3f6151e4, 0x3f06c5c9, 0x3ee57038, 0x3eef27d1}},
                                  {"embed.byte.weight",
                                   false,
                                   {0xbd2ebd69, 0xbd8d0f02, 0xbe9e4c06, 0xbee00715},
                                   {0x3ea96420, 0xbea36163, 0x3db9a63e, 0x3da395f0},
                                   {0x3f524975, 0x3f213d11, 0x3ef15767, 0x3ed2079f}},
                                  {"b",
                                   false,
                                   {0xbe8da0db, 0xbece6a7e, 0x3e855fa0},
                                   {0xbd3c260b, 0xbd6846a1, 0x3eb4c21e},
                                   {0x3ef27ffd, 0x3ececa6d, 0x3f13157f}}};
    double const norms[5] = {4.373213921133975, 8.200609733428363, 14.735162028291375, 16.30950643030009,
                             21.0282548015759};
    uform_schedule_t const schedule{5, 2, 0.05f, 0.005f, 0.1f, 6.0f};
    // torch's rates: the reference's double knobs, not the F32 ones of uform_schedule_t.
    double const rates[5] = {0.025, 0.05, 0.05, 0.03875, 0.016250000000000007};
    std::vector<uform::train::adamw_view_t> views;
    for (auto &t : tensors) {
        std::size_t const count = t.master.size();
        for (std::size_t e = 0; e != count; ++e)
            t.values.push_back(float(double(int((e * 13 + std::string(t.name).size()) % 7) - 3) / 8));
        t.grad.assign(count, 0), t.m.assign(count, 0), t.v.assign(count, 0);
        views.push_back({t.values.data(), t.grad.data(), t.m.data(), t.v.data(), count, t.decays});
    }
    bool norms_ok = true, rates_ok = true;
    for (std::size_t k = 0; k != 5; ++k) {
        for (std::size_t t = 0; t != tensors.size(); ++t)
            for (std::size_t e = 0; e != tensors[t].grad.size(); ++e)
                tensors[t].grad[e] = float(double(int((e * 37 + k * 11 + t * 5) % 17) - 8) / 4 * double(k + 1));
        double const norm = uform::train::gradient_norm(views);
        norms_ok = norms_ok && near(norm, norms[k], 1e-15);
        rates_ok = rates_ok && near(uform::train::learning_rate(schedule, k), rates[k], 1e-6);
        uform::train::scale_gradients(views, uform::train::clip_factor(norm, schedule.clip_norm), parallel);
        uform::train::adamw_step(views, k, rates[k], 0.1, {}, parallel);
    }
    check(norms_ok, "adamw " + how + ": gradient norms");
    check(rates_ok, "adamw " + how + ": rates");
    for (auto const &t : tensors)
        for (std::size_t e = 0; e != t.master.size(); ++e)
            check(std::bit_cast<std::uint32_t>(t.m[e]) == t.moment1[e] &&
                      std::bit_cast<std::uint32_t>(t.v[e]) == t.moment2[e] &&
                      ulps(t.values[e], std::bit_cast<float>(t.master[e])) <= 1,
                  "adamw " + how + ": " + t.name + "[" + std::to_string(e) + "]");
    check(uform::train::clip_factor(0.0, 1.0) == 1.0 && uform::train::clip_factor(4.0, 1.0) == 0.25, "clip factor");
}

/// Bad input: a NaN embedding or logit is reported, never passed on silently.
void not_finite(goldens::json_t const &batch) {
    step_relations_t const step(batch);
    auto const relations = step.build(uform_negatives_device_k);
    std::size_t const items = step.bags.size(), dim = 4;
    std::vector<float> z(items * dim, 0.5f), grad(items * dim, 0.0f);
    z[3] = NAN;
    double grad_log_scale = 0, grad_bias = 0;
    uform::train::term_t term;
    check(uform::train::info_nce(z.data(), dim, relations, 2.0f, 1.0, grad.data(), grad_log_scale, term, scratch,
                                 nullptr) == uform_status_ok_k &&
              !term.finite,
          "InfoNCE: a NaN is reported");
    check(uform::train::sigmoid_pairs(z.data(), dim, relations, 2.0f, 0.0f, 1.0, grad.data(), grad_log_scale, grad_bias,
                                      term, scratch, nullptr) == uform_status_ok_k &&
              !term.finite,
          "sigmoid: a NaN is reported");
    std::vector<float> logits(256, 0.0f), grad_logits(256, 0.0f);
    std::uint8_t const target = 7;
    check(uform::train::masking_cross_entropy(logits.data(), &target, 1, 1.0, grad_logits.data()).finite &&
              std::abs(uform::train::masking_cross_entropy(logits.data(), &target, 1, 1.0, grad_logits.data()).sum -
                       std::log(256.0)) < 1e-12,
          "masking: uniform logits give ln 256");
    logits[9] = INFINITY;
    check(!uform::train::masking_cross_entropy(logits.data(), &target, 1, 1.0, grad_logits.data()).finite,
          "masking: an infinite logit is reported");
    float const choice_logits[3] = {1.0f, 2.0f, 2.0f}, targets[3] = {0.0f, 0.5f, 0.5f};
    std::size_t const offsets[2] = {0, 3};
    float choice_grad[3] = {0, 0, 0};
    auto const choice = uform::train::choices_cross_entropy(choice_logits, targets, offsets, 1, 1.0, choice_grad);
    double const lse = std::log(std::exp(1.0) + 2 * std::exp(2.0));
    check(choice.finite && choice.count == 1 && std::abs(choice.sum - (lse - 2)) < 1e-12 &&
              std::abs(choice_grad[0] - std::exp(1.0 - lse)) < 1e-7 &&
              std::abs(choice_grad[1] - (std::exp(2.0 - lse) - 0.5)) < 1e-7,
          "choices: duplicate legal bytes are separate entries");
}

/// Runs tasks in reverse order, as if on four threads: the element-wise loops must not care.
void reversed(void *, std::size_t count, void *fn_context, uform::ram::task_fn_t fn) noexcept {
    for (std::size_t task = count; task-- != 0;) fn(fn_context, task, task % 4);
}

} // namespace

int main() {
    auto const batch = goldens::batch();
    auto const golden = goldens::read_safetensors(goldens::directory() + "/train.safetensors");
    contrastive_variants(batch, golden);
    late_variants(batch, golden);
    distill_variants(batch, golden);
    masks(batch);
    schedule(batch, golden);
    calibration(batch, golden);
    adamw({}, "one thread");
    adamw({4, nullptr, reversed}, "four threads");
    not_finite(batch);
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
