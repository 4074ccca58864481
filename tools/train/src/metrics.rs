//! The evaluation's arithmetic, apart from any model: the rank of a query's first relevant candidate, recall@k over
//! ranks and its value by chance, MaxSim over token vectors, the expected calibration error, re-tempering choice
//! probabilities, and Spearman's rank correlation.

/// The dot product of two rows of one width, in eight independent lanes so that it vectorises.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a_chunks, b_chunks) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for lane in 0..8 {
            lanes[lane] += x[lane] * y[lane];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// The 0-based rank of a query's best-scored relevant candidate among `scores` (one per candidate): how many
/// candidates that are neither relevant nor `excluded` score at least as high. Ties count against the query, so a
/// scorer that gives many candidates the same score (TF-IDF's zeros) gains nothing from the order of the list.
/// `relevant` must name at least one candidate; answers `scores.len()` when it names none.
pub fn rank(scores: &[f32], relevant: &[usize], excluded: &[usize]) -> usize {
    let Some(best) = relevant
        .iter()
        .map(|&r| scores[r])
        .max_by(|a, b| a.total_cmp(b))
    else {
        return scores.len();
    };
    scores
        .iter()
        .enumerate()
        .filter(|&(c, &score)| score >= best && !relevant.contains(&c) && !excluded.contains(&c))
        .count()
}

/// Recall@k over the ranks of [`rank`]: the share of queries whose best relevant candidate is among the first `k`.
pub fn recall(ranks: &[usize], k: usize) -> f64 {
    if ranks.is_empty() {
        return 0.0;
    }
    ranks.iter().filter(|&&r| r < k).count() as f64 / ranks.len() as f64
}

/// Recall@k of a scorer that ranks `candidates` in a uniformly random order when `relevant` of them are relevant:
/// one minus the chance that the first `k` drawn without replacement miss them all.
pub fn chance_recall(candidates: usize, relevant: usize, k: usize) -> f64 {
    let mut miss = 1.0;
    for i in 0..k.min(candidates) {
        let left = (candidates - i) as f64;
        miss *= ((left - relevant as f64) / left).max(0.0);
    }
    1.0 - miss
}

/// MaxSim scores of each query against every document, `S(q, d) = mean over q's rows of the max over d's rows of
/// their dot product` (docs/model.md's late interaction): `scores[q][d]`. Rows are row-major token vectors of `width`
/// columns; document `d` spans rows `offsets[d]..offsets[d + 1]` of `documents`. The queries are taken together so that
/// each document row is read once for all of them. An empty query scores 0 everywhere; an empty document scores
/// `-inf`, so it never outranks a nonempty one.
pub fn max_sim(
    queries: &[&[f32]],
    documents: &[f32],
    offsets: &[usize],
    width: usize,
) -> Vec<Vec<f32>> {
    let count = offsets.len().saturating_sub(1);
    let mut scores = vec![Vec::with_capacity(count); queries.len()];
    let mut best: Vec<Vec<f32>> = queries.iter().map(|q| vec![0.0; q.len() / width]).collect();
    for span in offsets.windows(2) {
        best.iter_mut().for_each(|b| b.fill(f32::NEG_INFINITY));
        for d in documents[span[0] * width..span[1] * width].chunks_exact(width) {
            for (query, best) in queries.iter().zip(&mut best) {
                for (max, q) in best.iter_mut().zip(query.chunks_exact(width)) {
                    *max = max.max(dot(q, d));
                }
            }
        }
        for (scores, best) in scores.iter_mut().zip(&best) {
            let sum: f32 = best.iter().sum();
            scores.push(if best.is_empty() {
                0.0
            } else {
                sum / best.len() as f32
            });
        }
    }
    scores
}

/// The expected calibration error over `bins` equal-width bins of confidence in `[0, 1]`: the share-weighted mean of
/// |accuracy - mean confidence| per bin, a confidence `c` falling in bin `min(floor(c * bins), bins - 1)`.
pub fn expected_calibration_error(confidences: &[f32], correct: &[bool], bins: usize) -> f64 {
    let mut sums = vec![(0usize, 0f64, 0usize); bins];
    for (&confidence, &right) in confidences.iter().zip(correct) {
        let bin = ((confidence as f64 * bins as f64) as usize).min(bins - 1);
        sums[bin].0 += 1;
        sums[bin].1 += confidence as f64;
        sums[bin].2 += usize::from(right);
    }
    let total = confidences.len().max(1) as f64;
    sums.iter()
        .filter(|(count, _, _)| *count > 0)
        .map(|&(count, confidence, right)| {
            let n = count as f64;
            (n / total) * (right as f64 / n - confidence / n).abs()
        })
        .sum()
}

/// The probabilities `softmax(z / t)` became at temperature 1, from those at temperature `t`: since `log p_k = z_k / t
/// - c`, `softmax(z)` is `p^t`, renormalised.
pub fn retempered(probabilities: &[f32], temperature: f32) -> Vec<f32> {
    let powered: Vec<f64> = probabilities
        .iter()
        .map(|&p| (p as f64).powf(temperature as f64))
        .collect();
    let sum: f64 = powered.iter().sum();
    powered.iter().map(|&p| (p / sum) as f32).collect()
}

/// Each value's rank from 1 in ascending order, tied values sharing the mean of their ranks.
fn fractional_ranks(values: &[f32]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        let shared = (start + end + 1) as f64 / 2.0; // the mean of ranks start + 1 ..= end
        for &i in &order[start..end] {
            ranks[i] = shared;
        }
        start = end;
    }
    ranks
}

/// Spearman's rank correlation of two equally long lists: the Pearson correlation of their fractional ranks (ties
/// share their mean rank); 0 when either list is constant or shorter than two.
pub fn spearman(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len(), "spearman takes two lists of one length");
    let (ra, rb) = (fractional_ranks(a), fractional_ranks(b));
    let n = a.len() as f64;
    let mean = (n + 1.0) / 2.0;
    let (mut ab, mut aa, mut bb) = (0.0, 0.0, 0.0);
    for (x, y) in ra.iter().zip(&rb) {
        ab += (x - mean) * (y - mean);
        aa += (x - mean) * (x - mean);
        bb += (y - mean) * (y - mean);
    }
    if aa == 0.0 || bb == 0.0 {
        return 0.0;
    }
    ab / (aa * bb).sqrt()
}

/// The index of the largest value (the first of equals); 0 for an empty slice.
pub fn argmax(values: &[f32]) -> usize {
    let mut best = 0;
    for (i, &value) in values.iter().enumerate() {
        if value > values[best] {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn dot_matches_the_plain_sum_past_the_lanes() {
        let a: Vec<f32> = (0..11).map(|i| i as f32).collect();
        let b: Vec<f32> = (0..11).map(|i| (i % 3) as f32 - 1.0).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert_eq!(dot(&a, &b), plain);
        assert_eq!(dot(&a[..3], &b[..3]), plain - dot(&a[3..], &b[3..]));
    }

    #[test]
    fn rank_counts_what_outranks_the_best_relevant_candidate() {
        let scores = [0.1, 0.9, 0.5, 0.7, 0.5];
        assert_eq!(rank(&scores, &[1], &[]), 0);
        assert_eq!(rank(&scores, &[3], &[]), 1);
        // The best of two relevant candidates counts; the other relevant one is not a competitor.
        assert_eq!(rank(&scores, &[0, 3], &[]), 1);
        // Ties count against the query, an excluded candidate not at all.
        assert_eq!(rank(&scores, &[2], &[]), 3);
        assert_eq!(rank(&scores, &[2], &[1]), 2);
        assert_eq!(rank(&scores, &[], &[]), 5);
    }

    #[test]
    fn recall_is_the_share_of_ranks_below_k() {
        let ranks = [0, 3, 9, 10, 50];
        assert!(close(recall(&ranks, 1), 0.2));
        assert!(close(recall(&ranks, 10), 0.6));
        assert!(close(recall(&[], 10), 0.0));
    }

    #[test]
    fn chance_recall_follows_drawing_without_replacement() {
        assert!(close(chance_recall(100, 1, 1), 0.01));
        assert!(close(chance_recall(100, 1, 10), 0.1));
        // Two relevant of four, two drawn: miss both with (2/4)(1/3).
        assert!(close(chance_recall(4, 2, 2), 1.0 - 1.0 / 6.0));
        assert!(close(chance_recall(5, 1, 10), 1.0));
    }

    #[test]
    fn max_sim_averages_each_query_rows_best_match() {
        // Width 2: query 0 rows e1 and e2, query 1 row e2, query 2 empty; document 0 rows e1 and (0.6, 0.8),
        // document 1 empty, document 2 row -e1.
        let queries: [&[f32]; 3] = [&[1.0, 0.0, 0.0, 1.0], &[0.0, 1.0], &[]];
        let documents = [1.0, 0.0, 0.6, 0.8, -1.0, 0.0];
        let offsets = [0, 2, 2, 3];
        let scores = max_sim(&queries, &documents, &offsets, 2);
        assert!(close(scores[0][0] as f64, (1.0 + 0.8) / 2.0));
        assert_eq!(scores[0][1], f32::NEG_INFINITY);
        assert!(close(scores[0][2] as f64, (-1.0 + 0.0) / 2.0));
        assert!(close(scores[1][0] as f64, 0.8));
        assert_eq!(scores[1][2], 0.0);
        assert_eq!(scores[2], [0.0; 3]);
    }

    #[test]
    fn calibration_error_weighs_each_bins_gap() {
        // Bin [0.9, 1.0]: two items at 0.95, one right (gap 0.45); bin [0.5, 0.6): two at 0.5, both right (gap 0.5).
        let confidences = [0.95, 0.95, 0.5, 0.5];
        let correct = [true, false, true, true];
        assert!(close(
            expected_calibration_error(&confidences, &correct, 10),
            0.5 * 0.45 + 0.5 * 0.5
        ));
        // Perfectly calibrated: accuracy equals confidence in every bin; a confidence of 1 falls in the last bin.
        let confidences = [0.25, 0.25, 0.25, 0.25, 1.0];
        let correct = [true, false, false, false, true];
        assert!(expected_calibration_error(&confidences, &correct, 15) < 1e-6);
    }

    #[test]
    fn spearman_correlates_ranks_and_shares_ties() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert!(close(spearman(&a, &[10.0, 20.0, 25.0, 90.0, 100.0]), 1.0));
        assert!(close(spearman(&a, &[5.0, 4.0, 3.0, 2.0, 1.0]), -1.0));
        // Ranks (1, 2, 3) against (1.5, 1.5, 3): co-deviation 1.5, deviations 2 and 1.5.
        assert!(close(
            spearman(&[0.1, 0.2, 0.3], &[7.0, 7.0, 9.0]),
            1.5 / 3f64.sqrt()
        ));
        assert_eq!(spearman(&a, &[1.0; 5]), 0.0);
        assert_eq!(spearman(&[], &[]), 0.0);
        // Without ties it is 1 - 6 sum(d^2) / (n (n^2 - 1)): d = (0, 0, 1, -1, 0) gives 0.9.
        assert!(close(spearman(&a, &[1.0, 2.0, 4.0, 3.0, 5.0]), 0.9));
    }

    #[test]
    fn retempering_undoes_a_temperature() {
        let logits = [2.0f32, 0.5, -1.0];
        let softmax = |t: f32| {
            let e: Vec<f32> = logits.iter().map(|z| (z / t).exp()).collect();
            let s: f32 = e.iter().sum();
            e.iter().map(|x| x / s).collect::<Vec<f32>>()
        };
        for (a, b) in retempered(&softmax(2.5), 2.5).iter().zip(softmax(1.0)) {
            assert!(close(*a as f64, b as f64));
        }
        assert_eq!(argmax(&[0.1, 0.7, 0.7, 0.2]), 1);
    }
}
