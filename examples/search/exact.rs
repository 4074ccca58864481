//! Exact search, the reference an approximate index is scored against: every query's cosine with every item, by
//! brute force over `f32` unit rows, and the recall of an index's answers against it.

/// The keys of the `top` items of `items` (rows of `width` unit `f32`) with the highest cosine to each row of
/// `queries`, best first, ties broken by the lower key; the queries split over `threads` threads.
pub fn top(
    items: &[f32],
    queries: &[f32],
    width: usize,
    top: usize,
    threads: usize,
) -> Vec<Vec<u64>> {
    let queries: Vec<&[f32]> = queries.chunks(width).collect();
    let per_thread = queries.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|scope| {
        let workers: Vec<_> = queries
            .chunks(per_thread)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|query| nearest(items, query, top))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| worker.join().expect("an exact-search thread panicked"))
            .collect()
    })
}

/// The `top` nearest items to one query.
fn nearest(items: &[f32], query: &[f32], top: usize) -> Vec<u64> {
    // (similarity, key), kept sorted best first; a linear insertion is cheap for a top 10.
    let mut best: Vec<(f32, u64)> = Vec::with_capacity(top + 1);
    for (key, item) in items.chunks(query.len()).enumerate() {
        let similarity = dot(item, query);
        if best.len() == top && similarity <= best[top - 1].0 {
            continue;
        }
        let at = best.partition_point(|&(s, _)| s >= similarity);
        best.insert(at, (similarity, key as u64));
        best.truncate(top);
    }
    best.into_iter().map(|(_, key)| key).collect()
}

/// The mean share of each query's exact top that an index's answer for it holds.
pub fn recall(found: &[Vec<u64>], truth: &[Vec<u64>]) -> f64 {
    let shares = found.iter().zip(truth).map(|(found, truth)| {
        let hits = truth.iter().filter(|key| found.contains(key)).count();
        hits as f64 / truth.len().max(1) as f64
    });
    shares.sum::<f64>() / truth.len().max(1) as f64
}

/// The `top` of `candidates` (keys of `items`, rows as wide as `query`) with the highest cosine to `query`.
pub fn rerank(items: &[f32], query: &[f32], candidates: &[u64], top: usize) -> Vec<u64> {
    let width = query.len();
    let mut scored: Vec<(f32, u64)> = candidates
        .iter()
        .map(|&key| {
            let item = &items[key as usize * width..][..width];
            (dot(item, query), key)
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(top).map(|(_, key)| key).collect()
}

/// The dot product of two rows, their cosine when both are unit rows.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
