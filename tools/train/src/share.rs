//! A rank's share of a step's batch when the run trains over a mesh (`--ranks`): every rank draws the same batch
//! from the same seed, then keeps the items whose bag is `bag % ranks == rank`. Bag ids are global, so a bag stays
//! whole on its rank; edges are the rank's own (an edge between items of two ranks is dropped: the trainer takes
//! edges between a rank's own items only), renumbered to the rank's items. The teacher's rows go with their items.

use crate::data::{Batch, Rows};

/// The edges of `rows` between kept items, renumbered by `index` (the kept items' new indices, `None` elsewhere).
fn keep_rows(rows: &Rows, kept: &[usize], index: &[Option<usize>]) -> (Rows, usize) {
    let mut out = Rows {
        offsets: vec![0],
        ..Rows::default()
    };
    let mut dropped = 0;
    for &item in kept {
        for edge in rows.offsets[item]..rows.offsets[item + 1] {
            match index[rows.ids[edge]] {
                Some(neighbour) => {
                    out.ids.push(neighbour);
                    if !rows.weights.is_empty() {
                        out.weights.push(rows.weights[edge]);
                    }
                }
                None => dropped += 1,
            }
        }
        out.offsets.push(out.ids.len());
    }
    (out, dropped)
}

/// The kept items' entries of a per-item list.
fn pick<T: Copy>(all: &[T], kept: &[usize]) -> Vec<T> {
    kept.iter().map(|&item| all[item]).collect()
}

/// The items of a tape (`(data, offsets)`) that are kept, as a tape.
fn keep_tape<T: Copy>(tape: &(Vec<T>, Vec<usize>), kept: &[usize]) -> (Vec<T>, Vec<usize>) {
    let mut out = (Vec::new(), vec![0]);
    for &item in kept {
        out.0
            .extend_from_slice(&tape.0[tape.1[item]..tape.1[item + 1]]);
        out.1.push(out.0.len());
    }
    out
}

/// The kept items' rows of a row-major table `width` wide (empty stays empty).
fn keep_rows_of(table: &[f32], width: usize, kept: &[usize]) -> Vec<f32> {
    if table.is_empty() {
        return Vec::new();
    }
    kept.iter()
        .flat_map(|&item| &table[item * width..(item + 1) * width])
        .copied()
        .collect()
}

/// Rank `rank`'s share of `batch` among `ranks`, and how many edges crossed to another rank and were dropped.
pub fn share(batch: &Batch, rank: usize, ranks: usize) -> (Batch, usize) {
    let kept: Vec<usize> = (0..batch.bags.len())
        .filter(|&item| batch.bags[item] % ranks == rank)
        .collect();
    let mut index = vec![None; batch.bags.len()];
    for (new, &item) in kept.iter().enumerate() {
        index[item] = Some(new);
    }
    let (attract, attract_dropped) = keep_rows(&batch.attract, &kept, &index);
    let (repel, repel_dropped) = keep_rows(&batch.repel, &kept, &index);
    let share = Batch {
        modalities: pick(&batch.modalities, &kept),
        contents: kept
            .iter()
            .map(|&item| batch.contents[item].clone())
            .collect(),
        bags: pick(&batch.bags, &kept),
        sides: pick(&batch.sides, &kept),
        attract,
        repel,
        choices: keep_tape(&batch.choices, &kept),
        targets: keep_tape(&batch.targets, &kept),
        teacher: keep_rows_of(&batch.teacher, batch.teacher_width, &kept),
        teacher_width: batch.teacher_width,
    };
    (share, attract_dropped + repel_dropped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use uform::{LateInteractionSide, Modality};

    /// Four items in bags 0, 1, 0, 1; item 0 attracts 2 (same bag) and repels 1 (another rank's); choices on 3.
    fn batch() -> Batch {
        Batch {
            modalities: vec![Modality::Text; 4],
            contents: ["a", "b", "c", "d"].map(String::from).to_vec(),
            bags: vec![0, 1, 0, 1],
            sides: vec![LateInteractionSide::None; 4],
            attract: Rows {
                offsets: vec![0, 1, 1, 2, 2],
                ids: vec![2, 0],
                weights: vec![0.5, 0.5],
            },
            repel: Rows {
                offsets: vec![0, 1, 1, 1, 1],
                ids: vec![1],
                weights: vec![1.0],
            },
            choices: (b"AB".to_vec(), vec![0, 0, 0, 0, 2]),
            targets: (vec![1.0, 0.0], vec![0, 0, 0, 0, 2]),
            teacher: vec![1.0, 0.0, 2.0, 0.0, 3.0, 0.0, 0.0, 0.0],
            teacher_width: 2,
        }
    }

    #[test]
    fn a_rank_keeps_its_bags_and_their_edges() {
        let (zero, dropped) = share(&batch(), 0, 2);
        assert_eq!(zero.contents, ["a", "c"]);
        assert_eq!(zero.bags, [0, 0]);
        assert_eq!(
            (zero.attract.offsets, zero.attract.ids),
            (vec![0, 1, 2], vec![1, 0])
        );
        assert_eq!(
            (zero.repel.offsets, zero.repel.ids),
            (vec![0, 0, 0], vec![])
        );
        assert_eq!(zero.choices, (vec![], vec![0, 0, 0]));
        assert_eq!(dropped, 1, "item 0 repelled item 1, on rank 1");
        assert_eq!(
            (zero.teacher, zero.teacher_width),
            (vec![1.0, 0.0, 3.0, 0.0], 2)
        );
        let (one, dropped) = share(&batch(), 1, 2);
        assert_eq!(one.contents, ["b", "d"]);
        assert_eq!(one.choices, (b"AB".to_vec(), vec![0, 0, 2]));
        assert_eq!(one.targets, (vec![1.0, 0.0], vec![0, 0, 2]));
        assert_eq!(one.teacher, [2.0, 0.0, 0.0, 0.0], "item 3 has no teacher");
        assert_eq!(dropped, 0);
    }

    #[test]
    fn one_rank_keeps_everything() {
        let (all, dropped) = share(&batch(), 0, 1);
        assert_eq!(all.contents, ["a", "b", "c", "d"]);
        assert_eq!(all.attract.ids, [2, 0]);
        assert_eq!(all.teacher.len(), 8);
        let plain = Batch {
            teacher: Vec::new(),
            teacher_width: 0,
            ..batch()
        };
        assert!(share(&plain, 1, 2).0.teacher.is_empty());
        assert_eq!(dropped, 0);
    }
}
