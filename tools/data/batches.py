#!/usr/bin/env python3
"""Reads a data directory written by tools/data/prepare.py, checks it, and samples batches from it.

    python3 tools/data/batches.py                          # check target/data, print one train batch's summary
    python3 tools/data/batches.py DIR --split validation --batches 3 --json batch.json

This is the reference of the batch recipe in docs/data.md ("Sampling a batch"): a trainer loop in Rust or C++
reads the same TSV files and does the same. A batch is what `uform_trainer_step` takes: per item its modality and
content (text, or the media file's path), its bag, the attract and repel edges between the batch's items as
compressed sparse rows with weights, and for choice items their legal bytes and target probabilities.
"""

import argparse
import itertools
import json
import math
import os
import random
import sys
import time


def read_tsv(path):
    with open(path, encoding="utf-8") as f:
        header = f.readline().lstrip("#").rstrip("\n").split("\t")
        return header, [line.rstrip("\n").split("\t") for line in f]


class Data:
    def __init__(self, root):
        self.root = root
        _, groups = read_tsv(os.path.join(root, "groups.tsv"))
        _, items = read_tsv(os.path.join(root, "items.tsv"))
        _, edges = read_tsv(os.path.join(root, "edges.tsv"))
        _, roles = read_tsv(os.path.join(root, "roles.tsv"))
        _, choices = read_tsv(os.path.join(root, "choices.tsv"))
        self.groups = [(g[1], g[2], g[3], int(g[4]), int(g[5]), g[6]) for g in groups]  # split source key first n label
        self.uses = [int(g[7]) for g in groups]  # how often a synset's senses were tagged in the concordances
        # A noun or verb synset's lexicographer file ("noun.animal"), whose items attract at `supersense`; None for
        # adjectives and adverbs (almost all of them adj.all or adv.all, a kind too broad to teach) and classes.
        self.lexnames = [g[8] if g[8][:5] in ("noun.", "verb.") else None for g in groups]
        self.items = [(int(i[1]), i[2], i[3], i[4], i[5]) for i in items]  # group split modality role content
        # A lemma in a rare sense of its word: not its synset's canonical lemma, never tagged in this sense, in a
        # synset used less than the word's most used sense ("cat" in "Caterpillar, cat"); drawn at `rare_senses`.
        dominant = {}
        for i in items:
            if i[4] == "lemma":
                dominant[i[5].lower()] = max(dominant.get(i[5].lower(), 0), int(i[6]))
        self.rare = {int(i[0]) for i in items if i[4] == "lemma" and int(i[0]) != int(groups[int(i[1])][4])
                     and int(i[6]) == 0 and int(groups[int(i[1])][7]) < dominant[i[5].lower()]}
        # Rare by the lemma's own count (`rare_by_lemma`): never tagged in this sense while tagged in another, whatever
        # its synset's uses ("cat" in "guy, hombre, cat, bozo", a synset tagged 33 times, all of them "guy").
        self.rare_by_lemma = {int(i[0]) for i in items if i[4] == "lemma" and int(i[0]) != int(groups[int(i[1])][4])
                              and int(i[6]) == 0 and dominant[i[5].lower()] > 0}
        self.roles = {}
        for a, b, w in roles:
            self.roles[(a, b)] = self.roles[(b, a)] = float(w)
        self.edges = {}  # from_group -> [(to_group, objective, weight)]
        self.hypernyms = {}  # hyponym group -> [hypernym group]
        for objective, relation, a, b, w in edges:
            if objective in ("attract", "repel"):
                self.edges.setdefault(int(a), []).append((int(b), objective, float(w)))
            elif relation == "hypernym":
                self.hypernyms.setdefault(int(a), []).append(int(b))
        self.choices = [(c[1], c[2], c[3], c[4], [float(t) for t in c[5].split()], c[6]) for c in choices]
        self.by_split = {}
        for g, group in enumerate(self.groups):
            self.by_split.setdefault((group[0], group[1]), []).append(g)
        self.choices_by_split = {}
        for c, choice in enumerate(self.choices):
            self.choices_by_split.setdefault(choice[0], []).append(c)
        self.outliers = {}  # split -> synthetic pictures that are not garments (outliers.tsv; none in older data)
        if os.path.exists(os.path.join(root, "outliers.tsv")):
            for path, _, split in read_tsv(os.path.join(root, "outliers.tsv"))[1]:
                self.outliers.setdefault(split, []).append(path)

    def check(self, media=True):
        """Every invariant docs/data.md promises; raises AssertionError on the first broken one."""
        at = 0
        for g, (split, source, key, first, n, label) in enumerate(self.groups):
            assert first == at and n > 0, (g, first, at)
            for i in range(first, first + n):
                assert self.items[i][0] == g and self.items[i][1] == split, (g, i)
            at += n
        assert at == len(self.items)
        for g, (_, source, *_) in enumerate(self.groups):
            assert self.uses[g] >= 0 and (source == "wordnet" or self.uses[g] == 0), g
        for group, split, modality, role, content in self.items:
            assert modality in ("text", "image", "audio") and content, (group, role)
            if modality != "text" and media:
                assert os.path.isfile(os.path.join(self.root, content)), content
        for a, targets in self.edges.items():
            for b, objective, w in targets:
                assert a != b and w > 0 and self.groups[a][0] == self.groups[b][0], (a, b)
        for g, (_, _, _, first, n, _) in enumerate(self.groups):
            roles = {self.items[i][3] for i in range(first, first + n)}
            for r in roles:
                for s in roles:
                    if r != s or sum(self.items[i][3] == r for i in range(first, first + n)) > 1:
                        assert (r, s) in self.roles, (g, r, s)
        for split, paths in self.outliers.items():
            for path in paths if media else ():
                assert os.path.isfile(os.path.join(self.root, path)), path
        for split, synset, answer, legal, targets, text in self.choices:
            assert len(targets) == len(legal) and abs(sum(targets) - 1) < 1e-6, synset
            assert targets[legal.index(answer)] == 1.0 and text.endswith("Answer:"), synset

    def read(self, i, rng, articles):
        """An item's content as a batch holds it: a media item's path joined to the data directory; a lower-case noun
        lemma behind its article ("a cat", "an owl") or a verb lemma behind "to" with probability `articles`."""
        group, _, modality, role, content = self.items[i]
        if modality != "text":
            return os.path.join(self.root, content)
        pos = self.groups[group][2][3:4]  # wn:<pos><offset>
        if role == "lemma" and pos in ("n", "v") and content[:1].islower() and content[:1].isascii():
            if rng.random() < articles:
                return ("to" if pos == "v" else "an" if content[0] in "aeiou" else "a") + " " + content
        return content

    def batch(self, rng, split, groups=34, images=10, per_group=3, hard=0.5, choices=4, common=0.75, articles=0.25,
              class_images=3, rare_senses=0.0, floor=1.0, cap=math.inf, hypernyms=0.0, hypernym_weight=0.35,
              rare_by_lemma=False, vocabulary=0, supersense=0.0, outliers=0, vocabulary_common=None):
        """The recipe of docs/data.md: WordNet groups drawn with weight `floor + min(uses, cap)^common` (each possibly
        followed by one of its repel partners, then at `hypernyms` by one of its hypernyms, their items attracting at
        `hypernym_weight`), image class groups, up to `per_group` items from a synset (a lemma in a rare sense of
        its word kept at `rare_senses`; a share `articles` of noun and verb lemmas behind "a"/"an"/"to"), a caption and
        `class_images` images from a class, `choices` choice items; edges within the batch. `vocabulary` more WordNet
        groups drawn the same way after the others (with the exponent `vocabulary_common` when given) take their
        lemmas alone; `rare_by_lemma` judges a sense rare by the
        lemma's own tag count; items of two noun or verb synsets of one lexicographer file ("noun.animal") attract at
        `supersense` unless an edge joins them already; `outliers` pictures of outliers.tsv follow, each in a bag of its
        own with no edge (negatives alone), then the choice items."""
        assert floor > 0, "a synset weighing nothing could never fill a batch"
        wordnet = self.by_split.get((split, "wordnet"), [])
        fashion = self.by_split.get((split, "fashion-mnist"), [])
        def running(exponent):
            return list(itertools.accumulate(floor + min(self.uses[g], cap) ** exponent for g in wordnet))

        chosen, taken = [], set()

        def draw(limit, weights):
            while len(chosen) < limit and len(taken) < len(wordnet):
                g = rng.choices(wordnet, cum_weights=weights)[0]
                if g in taken:
                    continue
                chosen.append(g)
                taken.add(g)
                partners = [b for b, objective, _ in self.edges.get(g, ()) if objective == "repel" and b not in taken]
                if partners and rng.random() < hard and len(chosen) < limit:
                    b = partners[rng.randrange(len(partners))]
                    chosen.append(b)
                    taken.add(b)
                parents = [h for h in self.hypernyms.get(g, ()) if h not in taken]
                if hypernyms > 0 and len(chosen) < limit and parents and rng.random() < hypernyms:
                    h = parents[rng.randrange(len(parents))]
                    chosen.append(h)
                    taken.add(h)

        draw(groups - images, running(common))
        start = len(chosen)
        if vocabulary:
            draw(start + vocabulary, running(common if vocabulary_common is None else vocabulary_common))
        lemmas_only = range(start, len(chosen))  # the vocabulary groups' bags, hypernyms drawn beside them included
        rare = self.rare_by_lemma if rare_by_lemma else self.rare
        chosen += rng.sample(fashion, min(images, len(fashion)))
        members, bags = [], []
        for bag, g in enumerate(chosen):
            _, source, _, first, n, _ = self.groups[g]
            ids = list(range(first, first + n))
            if source == "fashion-mnist":
                captions = [i for i in ids if self.items[i][3] == "caption"]
                pictures = [i for i in ids if self.items[i][3] == "image"]
                pick = [rng.choice(captions)] + rng.sample(pictures, min(class_images, len(pictures)))
            else:
                others = [i for i in ids[1:] if (bag not in lemmas_only or self.items[i][3] == "lemma")
                          and (i not in rare or rng.random() < rare_senses)]
                pick = [ids[0]] + rng.sample(others, min(per_group - 1, len(others)))  # the canonical lemma first
            members += pick
            bags += [bag] * len(pick)
        attract = [[] for _ in members]
        repel = [[] for _ in members]
        group_of = [self.items[i][0] for i in members]
        position = {}
        for p, g in enumerate(group_of):
            position.setdefault(g, []).append(p)
        for p, i in enumerate(members):
            for q, j in enumerate(members):
                if p != q and bags[p] == bags[q]:
                    attract[p].append((q, self.roles[(self.items[i][3], self.items[j][3])]))
            for b, objective, w in self.edges.get(group_of[p], ()):
                for q in position.get(b, ()):
                    (attract if objective == "attract" else repel)[p].append((q, w))
            for h in self.hypernyms.get(group_of[p], ()) if hypernyms > 0 else ():
                for q in position.get(h, ()):
                    attract[p].append((q, hypernym_weight))
                    attract[q].append((p, hypernym_weight))
        if supersense > 0:
            kinds = {}  # lexicographer file -> the positions of its items
            for p, g in enumerate(group_of):
                if self.lexnames[g]:
                    kinds.setdefault(self.lexnames[g], []).append(p)
            for p, g in enumerate(group_of):
                joined = {q for q, _ in attract[p]} | {q for q, _ in repel[p]}
                attract[p] += [(q, supersense) for q in kinds.get(self.lexnames[g], ())
                               if group_of[q] != g and q not in joined]
        modalities = [self.items[i][2] for i in members]
        contents = [self.read(i, rng, articles) for i in members]
        legal, targets = [""] * len(members), [[] for _ in members]
        pictures = self.outliers.get(split, []) if outliers else []
        assert len(pictures) >= outliers, f"{outliers} outlier pictures a batch, but {split} has {len(pictures)}"
        for path in rng.sample(pictures, outliers) if outliers else ():
            modalities.append("image")
            contents.append(os.path.join(self.root, path))
            bags.append(bags[-1] + 1)
            attract.append([])
            repel.append([])
            legal.append("")
            targets.append([])
        pool = self.choices_by_split.get(split, [])
        for c in rng.sample(pool, min(choices, len(pool))):
            _, _, _, letters, target, text = self.choices[c]
            modalities.append("text")
            contents.append(text)
            bags.append(bags[-1] + 1)
            attract.append([])
            repel.append([])
            legal.append(letters)
            targets.append(target)

        def csr(rows):
            offsets, ids, weights = [0], [], []
            for row in rows:
                for q, w in sorted(row):
                    ids.append(q)
                    weights.append(w)
                offsets.append(len(ids))
            return {"offsets": offsets, "ids": ids, "weights": weights}

        return {"groups": chosen, "modalities": modalities, "contents": contents, "bags": bags, "attract": csr(attract),
                "repel": csr(repel), "choices": legal, "choice_targets": targets}


def main():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", nargs="?", default=os.path.join(repo, "target", "data"))
    parser.add_argument("--split", default="train", choices=["train", "validation", "test"])
    parser.add_argument("--batches", type=int, default=1)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--json", help="write the batches here as JSON")
    parser.add_argument("--no-check", action="store_true", help="skip checking the files")
    args = parser.parse_args()
    start = time.time()
    data = Data(args.root)
    print(f"loaded {len(data.groups)} groups, {len(data.items)} items, "
          f"{sum(len(v) for v in data.edges.values())} attract/repel edges, {len(data.choices)} choices "
          f"in {time.time() - start:.1f} s", file=sys.stderr)
    if not args.no_check:
        start = time.time()
        data.check()
        print(f"checked in {time.time() - start:.1f} s", file=sys.stderr)
    rng = random.Random(args.seed)
    batches = [data.batch(rng, args.split) for _ in range(args.batches)]
    for b in batches:
        kinds = {}
        for m in b["modalities"]:
            kinds[m] = kinds.get(m, 0) + 1
        print(f"batch: {len(b['modalities'])} items {kinds}, {max(b['bags']) + 1} bags, "
              f"{len(b['attract']['ids'])} attract and {len(b['repel']['ids'])} repel edges, "
              f"{sum(1 for c in b['choices'] if c)} choice items")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(batches, f, indent=1)


if __name__ == "__main__":
    main()
