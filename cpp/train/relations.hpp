// The relations of a step's items as the contrastive and late-interaction terms read them (docs/model.md, "Training",
// Relations; docs/decisions.md, "Relations and the terms"): per anchor its candidates D(i) with weights c_ij and its
// positives P(i) with weights w_ij, as train_losses.relations builds them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <uform/train.h>

namespace uform::train {

/// Per anchor its candidates, compressed sparse rows: anchor `a` (item `first_anchor + a`) owns entries
/// `offsets[a] .. offsets[a + 1]`, items ascending. P(i) is inside D(i) under every negatives, so one list holds
/// both: every entry is a candidate (`candidate` = c_ij > 0), and a positive too when `positive` (w_ij) is above 0.
struct relations_t {
    /// Items the anchors are scored against (the step's, or a mesh's gathered items).
    std::size_t items = 0;
    /// The item index of anchor 0: anchors are the items `first_anchor .. first_anchor + anchors()`.
    std::size_t first_anchor = 0;
    /// One per anchor plus one: where each anchor's entries start in `ids`.
    std::vector<std::size_t> offsets;
    /// The candidate item j of each entry.
    std::vector<std::size_t> ids;
    /// c_ij of each entry, positive (the reference's F32 of the double product).
    std::vector<float> candidate;
    /// w_ij of each entry: above zero for the positives P(i), zero for the other candidates.
    std::vector<float> positive;

    /// Dense rows of the anchor being built (w_ij, the hard weights, whether j is allowed): kept between builds so
    /// that a steady loop allocates nothing.
    std::vector<float> positive_row, hard_row;
    std::vector<char> allowed_row;

    /// Anchors described.
    std::size_t anchors() const noexcept { return offsets.empty() ? 0 : offsets.size() - 1; }
};

/// What the relations are built from: the step's bags and edges, validated by the ABI layer already.
struct relations_args_t {
    /// Items in the step (a mesh's gathered items, when the anchors are scored against the world's).
    std::size_t items = 0;
    /// Each item's bag (`items` entries); null puts each item in its own bag.
    std::size_t const *bags = nullptr;
    /// Whether each item has a bag (`items` entries; an item without one is in its own); null: every item has one.
    std::uint8_t const *bagged = nullptr;
    /// The attract, repel and ignore edges (all-zero sets for none), of the items `edge_first ..`: an edge set's
    /// entry k is item `edge_first + k`'s and its ids name items less `edge_first` (a mesh rank's own items).
    uform_relations_t edges{};
    /// The item of the edge sets' first entry (0 in one process).
    std::size_t edge_first = 0;
    /// Which items are negatives: `mesh` is `device` and `mesh-and-hard` is `device` with hard weights; over a mesh
    /// the caller passes the gathered items for those two.
    uform_negatives_t negatives = uform_negatives_device_k;
    /// Multiplier of the repel edges' weights in c_ij (zero already replaced by 2).
    float hard_negative_weight = 2.0f;
};

/// Builds the candidates and positives of the anchors `first_anchor .. first_anchor + anchors` (all items for one
/// process): w_ij = 1 for bag mates, an attract edge's weight replacing it; c_ij = hard weight * the repel edge's
/// weight on H(i) under `hard` and `mesh-and-hard`, else 1; `hard` keeps only P(i) and H(i); ignore edges remove j
/// from all; never i itself. Edges listed twice: the later wins. Answers out-of-memory, else ok.
uform_status_t build_relations(relations_args_t const &args, std::size_t first_anchor, std::size_t anchors,
                               relations_t &relations, char const **message) noexcept;

/// Anchors with at least one positive: the InfoNCE term's count.
std::size_t anchors_with_positives(relations_t const &relations) noexcept;

/// Anchors with at least one candidate: the sigmoid term's count.
std::size_t anchors_with_candidates(relations_t const &relations) noexcept;

/// Queries (anchors on the `query` side) with a positive on the `document` side: the late-interaction term's
/// count. `sides` holds one side per item of `relations.items`, or is null (all `none`: no queries).
std::size_t queries_with_positive_documents(relations_t const &relations,
                                            uform_late_interaction_side_t const *sides) noexcept;

} // namespace uform::train
