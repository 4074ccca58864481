#!/usr/bin/env python3
"""Draws synonym probes from the test split of a prepared data directory into tests/data/probes/synonyms.tsv.

    python3 tools/data/synonym_probes.py                     # from target/data (tools/data/prepare.py)
    python3 tools/data/synonym_probes.py DIR [--count 200]   # from another data directory

A probe is three lemmas: a query and its synonym (two lemmas of one test synset) and an unrelated lemma (a lemma of
another test synset), drawn with Python's `random.Random(13)` and nothing else, so the choice involves no looking at
what a model answers. tests/ram_shipped_model.rs asks the shipped model to rank each synonym above its unrelated
lemma (chance: half the probes). The test split's synsets never trained the model.
"""

import argparse
import os
import random

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "data", "probes", "synonyms.tsv")


def read_tsv(path):
    with open(path, encoding="utf-8") as f:
        f.readline()
        return [line.rstrip("\n").split("\t") for line in f]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=os.path.join(ROOT, "target", "data"))
    parser.add_argument("--count", type=int, default=200)
    args = parser.parse_args()

    lemmas = {}
    for _item, group, split, modality, role, content, _uses in read_tsv(os.path.join(args.data, "items.tsv")):
        if split == "test" and modality == "text" and role == "lemma":
            lemmas.setdefault(int(group), []).append(content)
    synsets = sorted(lemmas)
    with_synonyms = [group for group in synsets if len(set(lemmas[group])) >= 2]
    generator = random.Random(13)
    probes = []
    for group in generator.sample(with_synonyms, args.count):
        query, synonym = generator.sample(sorted(set(lemmas[group])), 2)
        other = generator.choice([g for g in synsets if g != group])
        probes.append((query, synonym, generator.choice(lemmas[other])))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        f.write("#query\tsynonym\tunrelated\n")
        for probe in probes:
            f.write("\t".join(probe) + "\n")
    print(f"wrote {len(probes)} probes from {len(with_synonyms)} test synsets with two lemmas or more to {OUT}")


if __name__ == "__main__":
    main()
