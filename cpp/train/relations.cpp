// Building each anchor's candidates and positives from the bags and edges (train_losses.relations).
#include "cpp/train/relations.hpp"

#include <algorithm>
#include <new>

#include "common/fail.hpp"

namespace uform::train {
namespace {

/// Calls `visit(j, weight)` for each edge of `edges` listed from item `i` (weight 1 when the set has no weights), the
/// sets' entries and ids counted from item `first`.
template <typename visit_t>
void for_each_edge(uform_edges_t const &edges, std::size_t first, std::size_t i, visit_t &&visit) noexcept {
    if (edges.offsets_count == 0) return;
    for (std::size_t e = edges.offsets[i - first]; e != edges.offsets[i - first + 1]; ++e)
        visit(first + edges.ids[e], edges.weights_count ? edges.weights[e] : 1.0f);
}

} // namespace

uform_status_t build_relations(relations_args_t const &args, std::size_t first_anchor, std::size_t anchors,
                               relations_t &relations, char const **message) noexcept {
    try {
        std::size_t const n = args.items;
        relations.items = n;
        relations.first_anchor = first_anchor;
        relations.offsets.assign(1, 0);
        relations.ids.clear();
        relations.candidate.clear();
        relations.positive.clear();
        relations.offsets.reserve(anchors + 1);
        bool const hard_only = args.negatives == uform_negatives_hard_k;
        bool const weighs_hard = hard_only || args.negatives == uform_negatives_mesh_and_hard_k;
        // Dense rows of the anchor at hand: w_ij, the hard weights, and whether j is allowed.
        std::vector<float> &positive = relations.positive_row, &hard = relations.hard_row;
        std::vector<char> &allowed = relations.allowed_row;
        positive.resize(n), hard.resize(n), allowed.resize(n);
        for (std::size_t i = first_anchor; i != first_anchor + anchors; ++i) {
            bool const bagged = args.bags && (!args.bagged || args.bagged[i]);
            for (std::size_t j = 0; j != n; ++j)
                positive[j] =
                    bagged && j != i && (!args.bagged || args.bagged[j]) && args.bags[j] == args.bags[i] ? 1.0f : 0.0f;
            std::fill(hard.begin(), hard.end(), 0.0f);
            std::fill(allowed.begin(), allowed.end(), char(1));
            allowed[i] = 0;
            for_each_edge(args.edges.attract, args.edge_first, i, [&](std::size_t j, float w) { positive[j] = w; });
            for_each_edge(args.edges.repel, args.edge_first, i, [&](std::size_t j, float w) {
                hard[j] = static_cast<float>(double(args.hard_negative_weight) * double(w));
            });
            for_each_edge(args.edges.ignore, args.edge_first, i, [&](std::size_t j, float) { allowed[j] = 0; });
            for (std::size_t j = 0; j != n; ++j) {
                if (!allowed[j]) continue;
                float c = 1.0f;
                if (weighs_hard && hard[j] > 0) c = hard[j];
                else if (hard_only && !(positive[j] > 0)) continue;
                relations.ids.push_back(j);
                relations.candidate.push_back(c);
                relations.positive.push_back(positive[j]);
            }
            relations.offsets.push_back(relations.ids.size());
        }
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory building the step's relations");
    }
}

std::size_t anchors_with_positives(relations_t const &relations) noexcept {
    std::size_t count = 0;
    for (std::size_t a = 0; a != relations.anchors(); ++a)
        for (std::size_t e = relations.offsets[a]; e != relations.offsets[a + 1]; ++e)
            if (relations.positive[e] > 0) {
                ++count;
                break;
            }
    return count;
}

std::size_t anchors_with_candidates(relations_t const &relations) noexcept {
    std::size_t count = 0;
    for (std::size_t a = 0; a != relations.anchors(); ++a) count += relations.offsets[a + 1] != relations.offsets[a];
    return count;
}

std::size_t queries_with_positive_documents(relations_t const &relations,
                                            uform_late_interaction_side_t const *sides) noexcept {
    if (!sides) return 0;
    std::size_t count = 0;
    for (std::size_t a = 0; a != relations.anchors(); ++a) {
        if (sides[relations.first_anchor + a] != uform_late_interaction_side_query_k) continue;
        for (std::size_t e = relations.offsets[a]; e != relations.offsets[a + 1]; ++e)
            if (relations.positive[e] > 0 && sides[relations.ids[e]] == uform_late_interaction_side_document_k) {
                ++count;
                break;
            }
    }
    return count;
}

} // namespace uform::train
