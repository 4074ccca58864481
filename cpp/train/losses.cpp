// The loss terms' forward and backward (train_losses.py): InfoNCE, the sigmoid form, MaxSim late interaction, the
// masking and choice cross-entropies, and distillation.
#include "cpp/train/losses.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <vector>

#include "common/fail.hpp"

namespace uform::train {
namespace {

/// The scale's cap (docs/model.md).
constexpr float scale_cap = 100.0f;

/// The F32 similarity of two F32 vectors: the exact dot product accumulated in double, rounded once.
float dot(float const *a, float const *b, std::size_t dim) noexcept {
    double sum = 0;
    for (std::size_t k = 0; k != dim; ++k) sum += double(a[k]) * double(b[k]);
    return static_cast<float>(sum);
}

/// `out += factor * v` in double.
void add_scaled(double *out, float const *v, double factor, std::size_t dim) noexcept {
    for (std::size_t k = 0; k != dim; ++k) out[k] += factor * double(v[k]);
}

/// Adds the double accumulators to the caller's F32 gradient; false when one is not finite.
bool add_gradient(float *grad, std::vector<double> const &accumulated) noexcept {
    bool finite = true;
    for (std::size_t k = 0; k != accumulated.size(); ++k) {
        finite = finite && std::isfinite(accumulated[k]);
        grad[k] += static_cast<float>(accumulated[k]);
    }
    return finite;
}

/// `log(1 + exp(x))` without overflow.
double softplus(double x) noexcept { return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x))); }

/// `1 / (1 + exp(-x))` without overflow.
double sigmoid(double x) noexcept {
    if (x >= 0) return 1 / (1 + std::exp(-x));
    double const e = std::exp(x);
    return e / (1 + e);
}

/// InfoNCE over one anchor's scored candidates: `x` the scores, `c` and `w` the weights, `count` entries; answers
/// the anchor's loss and leaves in `x` each score's gradient `q_j - w_j / W`. The anchor has a positive.
double info_nce_row(double *x, float const *c, float const *w, std::size_t count) noexcept {
    double top = -std::numeric_limits<double>::infinity(), total_w = 0;
    for (std::size_t e = 0; e != count; ++e) top = std::max(top, x[e] + std::log(double(c[e])));
    double sum = 0;
    for (std::size_t e = 0; e != count; ++e) sum += double(c[e]) * std::exp(x[e] - top);
    for (std::size_t e = 0; e != count; ++e) total_w += double(w[e]);
    double const lse = top + std::log(sum), norm = 1 / sum;
    double loss = 0;
    for (std::size_t e = 0; e != count; ++e) {
        double const share = w[e] > 0 ? double(w[e]) / total_w : 0.0;
        loss += share * (lse - x[e]);
        x[e] = double(c[e]) * std::exp(x[e] - top) * norm - share;
    }
    return loss;
}

} // namespace

scale_t scale_of(float log_scale) noexcept {
    float const e = std::exp(log_scale);
    return e <= scale_cap ? scale_t{e, e} : scale_t{scale_cap, 0.0f};
}

uform_status_t info_nce(float const *z, std::size_t dim, relations_t const &relations, float log_scale,
                        double gradient_weight, float *grad_z, double &grad_log_scale, term_t &term,
                        loss_scratch_t &scratch, char const **message) noexcept {
    try {
        scale_t const scale = scale_of(log_scale);
        std::vector<double> &accumulated = scratch.accumulated, &x = scratch.x, &s = scratch.s;
        accumulated.assign(relations.items * dim, 0.0);
        double grad_scale = 0;
        term = {};
        for (std::size_t a = 0; a != relations.anchors(); ++a) {
            std::size_t const begin = relations.offsets[a], count = relations.offsets[a + 1] - begin;
            float const *w = relations.positive.data() + begin;
            if (std::none_of(w, w + count, [](float v) { return v > 0; })) continue;
            std::size_t const i = relations.first_anchor + a;
            std::size_t const *ids = relations.ids.data() + begin;
            x.resize(count);
            s.resize(count);
            for (std::size_t e = 0; e != count; ++e) {
                s[e] = dot(z + i * dim, z + ids[e] * dim, dim);
                x[e] = double(scale.value) * s[e];
            }
            term.sum += info_nce_row(x.data(), relations.candidate.data() + begin, w, count);
            ++term.count;
            for (std::size_t e = 0; e != count; ++e) {
                double const g = gradient_weight * x[e];
                add_scaled(accumulated.data() + i * dim, z + ids[e] * dim, g * scale.value, dim);
                add_scaled(accumulated.data() + ids[e] * dim, z + i * dim, g * scale.value, dim);
                grad_scale += g * s[e];
            }
        }
        grad_log_scale += grad_scale * scale.derivative;
        term.finite = add_gradient(grad_z, accumulated) && std::isfinite(term.sum) && std::isfinite(grad_scale);
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory computing the InfoNCE term");
    }
}

uform_status_t sigmoid_pairs(float const *z, std::size_t dim, relations_t const &relations, float log_scale, float bias,
                             double gradient_weight, float *grad_z, double &grad_log_scale, double &grad_bias,
                             term_t &term, loss_scratch_t &scratch, char const **message) noexcept {
    try {
        scale_t const scale = scale_of(log_scale);
        std::vector<double> &accumulated = scratch.accumulated;
        accumulated.assign(relations.items * dim, 0.0);
        double grad_scale = 0, grad_b = 0;
        term = {};
        for (std::size_t a = 0; a != relations.anchors(); ++a) {
            std::size_t const begin = relations.offsets[a], end = relations.offsets[a + 1];
            if (begin == end) continue;
            std::size_t const i = relations.first_anchor + a;
            double loss = 0;
            for (std::size_t e = begin; e != end; ++e) {
                std::size_t const j = relations.ids[e];
                bool const positive = relations.positive[e] > 0;
                double const y = positive ? 1.0 : -1.0;
                double const weight = positive ? relations.positive[e] : relations.candidate[e];
                double const s = dot(z + i * dim, z + j * dim, dim);
                double const u = double(scale.value) * s + double(bias);
                loss += weight * softplus(-y * u);
                double const g = gradient_weight * weight * -y * sigmoid(-y * u);
                add_scaled(accumulated.data() + i * dim, z + j * dim, g * scale.value, dim);
                add_scaled(accumulated.data() + j * dim, z + i * dim, g * scale.value, dim);
                grad_scale += g * s;
                grad_b += g;
            }
            term.sum += loss;
            ++term.count;
        }
        grad_log_scale += grad_scale * scale.derivative;
        grad_bias += grad_b;
        term.finite = add_gradient(grad_z, accumulated) && std::isfinite(term.sum) && std::isfinite(grad_scale) &&
                      std::isfinite(grad_b);
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory computing the sigmoid contrastive term");
    }
}

namespace {

/// MaxSim of query rows `q` [rows_q x width] against document rows `d` [rows_d x width]: the mean over query rows
/// of the largest F32 dot product, 0 when either side is empty; `best` receives each query row's first best
/// document row.
double maxsim(float const *q, std::size_t rows_q, float const *d, std::size_t rows_d, std::size_t width,
              std::size_t *best) noexcept {
    if (rows_q == 0 || rows_d == 0) return 0;
    double sum = 0;
    for (std::size_t a = 0; a != rows_q; ++a) {
        float top = dot(q + a * width, d, width);
        best[a] = 0;
        for (std::size_t b = 1; b != rows_d; ++b) {
            float const v = dot(q + a * width, d + b * width, width);
            if (v > top) top = v, best[a] = b;
        }
        sum += top;
    }
    return sum / double(rows_q);
}

} // namespace

uform_status_t late_interaction(token_vectors_t const &vectors, uform_late_interaction_side_t const *sides,
                                relations_t const &relations, float log_scale, double gradient_weight,
                                float *grad_values, double &grad_log_scale, term_t &term, loss_scratch_t &scratch,
                                char const **message) noexcept {
    term = {};
    if (!sides) return uform_status_ok_k;
    try {
        scale_t const scale = scale_of(log_scale);
        std::size_t const width = vectors.width, *offsets = vectors.offsets;
        std::vector<double> &accumulated = scratch.accumulated, &x = scratch.x, &S = scratch.s;
        accumulated.assign(offsets[relations.items] * width, 0.0);
        std::vector<float> &c = scratch.c, &w = scratch.w;
        std::vector<std::size_t> &docs = scratch.docs, &best = scratch.best;
        double grad_scale = 0;
        for (std::size_t a = 0; a != relations.anchors(); ++a) {
            std::size_t const q = relations.first_anchor + a;
            if (sides[q] != uform_late_interaction_side_query_k) continue;
            docs.clear(), c.clear(), w.clear();
            for (std::size_t e = relations.offsets[a]; e != relations.offsets[a + 1]; ++e)
                if (sides[relations.ids[e]] == uform_late_interaction_side_document_k) {
                    docs.push_back(relations.ids[e]);
                    c.push_back(relations.candidate[e]);
                    w.push_back(relations.positive[e]);
                }
            if (std::none_of(w.begin(), w.end(), [](float v) { return v > 0; })) continue;
            std::size_t const rows_q = offsets[q + 1] - offsets[q];
            float const *qv = vectors.values + offsets[q] * width;
            best.resize(docs.size() * rows_q);
            x.resize(docs.size());
            S.resize(docs.size());
            for (std::size_t k = 0; k != docs.size(); ++k) {
                std::size_t const d = docs[k];
                S[k] = maxsim(qv, rows_q, vectors.values + offsets[d] * width, offsets[d + 1] - offsets[d], width,
                              best.data() + k * rows_q);
                x[k] = double(scale.value) * S[k];
            }
            term.sum += info_nce_row(x.data(), c.data(), w.data(), docs.size());
            ++term.count;
            for (std::size_t k = 0; k != docs.size(); ++k) {
                std::size_t const d = docs[k], rows_d = offsets[d + 1] - offsets[d];
                double const g = gradient_weight * x[k];
                grad_scale += g * S[k];
                if (rows_q == 0 || rows_d == 0) continue;
                double const per_row = g * scale.value / double(rows_q);
                for (std::size_t r = 0; r != rows_q; ++r) {
                    std::size_t const b = offsets[d] + best[k * rows_q + r];
                    add_scaled(accumulated.data() + (offsets[q] + r) * width, vectors.values + b * width, per_row,
                               width);
                    add_scaled(accumulated.data() + b * width, qv + r * width, per_row, width);
                }
            }
        }
        grad_log_scale += grad_scale * scale.derivative;
        term.finite = add_gradient(grad_values, accumulated) && std::isfinite(term.sum) && std::isfinite(grad_scale);
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory computing the late-interaction term");
    }
}

namespace {

/// Cross-entropy of one softmax over `logits` [count] against `targets` weighing each entry (summing to `mass`):
/// answers `- sum_k t_k log p_k` and adds `weight (mass p_k - t_k)` to `grad`; false in `finite` when not finite.
double soft_cross_entropy(float const *logits, std::size_t count, auto &&target, double weight, float *grad,
                          bool &finite) noexcept {
    double top = -std::numeric_limits<double>::infinity(), sum = 0, mass = 0, dot_t = 0;
    for (std::size_t k = 0; k != count; ++k) top = std::max(top, double(logits[k]));
    for (std::size_t k = 0; k != count; ++k) sum += std::exp(double(logits[k]) - top);
    double const lse = top + std::log(sum);
    for (std::size_t k = 0; k != count; ++k) mass += target(k), dot_t += target(k) * double(logits[k]);
    for (std::size_t k = 0; k != count; ++k) {
        double const g = weight * (mass * std::exp(double(logits[k]) - lse) - target(k));
        finite = finite && std::isfinite(g);
        grad[k] += static_cast<float>(g);
    }
    return mass * lse - dot_t;
}

} // namespace

term_t masking_cross_entropy(float const *logits, std::uint8_t const *targets, std::size_t rows, double gradient_weight,
                             float *grad_logits) noexcept {
    term_t term{0, rows, true};
    for (std::size_t r = 0; r != rows; ++r) {
        auto const target = [t = targets[r]](std::size_t k) { return k == t ? 1.0 : 0.0; };
        term.sum +=
            soft_cross_entropy(logits + r * 256, 256, target, gradient_weight, grad_logits + r * 256, term.finite);
    }
    term.finite = term.finite && std::isfinite(term.sum);
    return term;
}

term_t choices_cross_entropy(float const *logits, float const *targets, std::size_t const *offsets, std::size_t items,
                             double gradient_weight, float *grad_logits) noexcept {
    term_t term{0, items, true};
    for (std::size_t i = 0; i != items; ++i) {
        std::size_t const begin = offsets[i];
        auto const target = [t = targets + begin](std::size_t k) { return double(t[k]); };
        term.sum += soft_cross_entropy(logits + begin, offsets[i + 1] - begin, target, gradient_weight,
                                       grad_logits + begin, term.finite);
    }
    term.finite = term.finite && std::isfinite(term.sum);
    return term;
}

bool has_teacher(distill_items_t const &items, std::size_t i) noexcept {
    float const *row = items.teacher + i * items.width;
    return std::any_of(row, row + items.width, [](float v) { return v != 0; });
}

namespace {

/// One distilled anchor: `a` the teacher's logits, `b` the student's, over its `count` candidates. Answers
/// `KL(softmax(a) || softmax(b))` and leaves in `b` each student logit's gradient `Q_j - P_j`.
double distill_row(double const *a, double *b, std::size_t count) noexcept {
    double top_a = -std::numeric_limits<double>::infinity(), top_b = top_a, sum_a = 0, sum_b = 0;
    for (std::size_t e = 0; e != count; ++e) top_a = std::max(top_a, a[e]), top_b = std::max(top_b, b[e]);
    for (std::size_t e = 0; e != count; ++e) sum_a += std::exp(a[e] - top_a), sum_b += std::exp(b[e] - top_b);
    double const lse_a = top_a + std::log(sum_a), lse_b = top_b + std::log(sum_b);
    double loss = 0;
    for (std::size_t e = 0; e != count; ++e) {
        double const log_p = a[e] - lse_a, log_q = b[e] - lse_b, p = std::exp(log_p);
        loss += p * (log_p - log_q);
        b[e] = std::exp(log_q) - p;
    }
    return loss;
}

} // namespace

uform_status_t distill(distill_items_t const &items, double gradient_weight, float *grad_z, term_t &term,
                       loss_scratch_t &scratch, char const **message) noexcept {
    try {
        std::size_t const dim = items.dim, width = items.width;
        std::vector<double> &accumulated = scratch.accumulated, &a = scratch.x, &b = scratch.s;
        std::vector<std::size_t> &ids = scratch.docs;
        accumulated.assign(items.items * dim, 0.0);
        term = {};
        ids.clear();
        for (std::size_t j = 0; j != items.items; ++j)
            if (has_teacher(items, j)) ids.push_back(j);
        double const inverse_student = 1.0 / double(items.student_temperature);
        double const inverse_teacher = 1.0 / double(items.teacher_temperature);
        for (std::size_t i = items.first_anchor; i != items.first_anchor + items.anchors; ++i) {
            if (ids.size() < 2 || !has_teacher(items, i)) continue;
            a.clear(), b.clear();
            for (std::size_t j : ids)
                if (j != i) {
                    a.push_back(inverse_teacher * dot(items.teacher + i * width, items.teacher + j * width, width));
                    b.push_back(inverse_student * dot(items.z + i * dim, items.z + j * dim, dim));
                }
            term.sum += distill_row(a.data(), b.data(), a.size());
            ++term.count;
            for (std::size_t e = 0, k = 0; k != ids.size(); ++k) {
                std::size_t const j = ids[k];
                if (j == i) continue;
                double const g = gradient_weight * inverse_student * b[e++];
                add_scaled(accumulated.data() + i * dim, items.z + j * dim, g, dim);
                add_scaled(accumulated.data() + j * dim, items.z + i * dim, g, dim);
            }
        }
        term.finite = add_gradient(grad_z, accumulated) && std::isfinite(term.sum);
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory computing the distillation term");
    }
}

} // namespace uform::train
