#!/usr/bin/env python3
"""Tests of tools/data: a small preparation into a temporary directory, checked, re-run from its cache.

    python3 tools/data/test_data.py          # about 30 s on two cores; needs scripts/setup.sh's data packages
"""

import json
import os
import random
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import batches  # noqa: E402
import prepare  # noqa: E402


class Gloss(unittest.TestCase):
    def test_examples_and_attribution_leave_the_definition(self):
        definition, examples = prepare.parse_gloss(
            'characterized by diminution; "their views were reductive" - R.H.Rovere')
        self.assertEqual(definition, "characterized by diminution")
        self.assertEqual(examples, ["their views were reductive"])

    def test_several_examples(self):
        self.assertEqual(prepare.parse_gloss('(of a person) tired; "a"; "b c"'), ("(of a person) tired", ["a", "b c"]))


class Split(unittest.TestCase):
    def test_the_split_depends_on_the_key_and_seed_alone(self):
        # docs/data.md: sha256("13:split:<key>"), first 8 bytes big-endian / 2^64; < 0.1 test, < 0.2 validation.
        self.assertAlmostEqual(prepare.fraction("split", "n02084071"), 0.9584082752329183)
        self.assertEqual(prepare.split_of("n02084071"), "train")
        keys = [f"n{i:08d}" for i in range(20000)]
        shares = {s: sum(prepare.split_of(k) == s for k in keys) / len(keys) for s in ("train", "validation", "test")}
        self.assertAlmostEqual(shares["test"], 0.1, delta=0.01)
        self.assertAlmostEqual(shares["validation"], 0.1, delta=0.01)


class Lookalikes(unittest.TestCase):
    def test_common_synsets_spelled_alike_repel_unless_inflected_linked_or_rare(self):
        def synset(key, lemma, uses, hypernyms=()):
            s = prepare.Synset(key, "n", False)
            s.lemmas, s.uses, s.split, s.hypernyms = [lemma], uses, "train", list(hypernyms)
            return s

        synsets = {s.key: s for s in (synset("n1", "cat", 5), synset("n2", "car", 3), synset("n3", "cats", 2),
                                      synset("n4", "cap", 0), synset("n5", "cut", 1, ["n1"]))}
        self.assertEqual(prepare.lookalikes(synsets), {"n1": ["n2"], "n2": ["n1"]})


def write_data(root, groups, edges=(), glosses=False):
    """A hand-made data directory: WordNet groups `(key, lemmas, lemma uses, synset uses[, lexname])` in order, each
    with a gloss after its lemmas when `glosses`, one image class after them, and `edges` as rows of edges.tsv."""
    group_rows, item_rows = [], []
    for g, (key, lemmas, uses, total, *lexname) in enumerate(groups):
        group_rows.append([g, "train", "wordnet", key, len(item_rows), len(lemmas) + glosses, lemmas[0], total,
                           lexname[0] if lexname else "noun.Tops"])
        item_rows += [[len(item_rows) + i, g, "train", "text", "lemma", lemma, use]
                      for i, (lemma, use) in enumerate(zip(lemmas, uses))]
        if glosses:
            item_rows.append([len(item_rows), g, "train", "text", "gloss", f"what {lemmas[0]} means", 0])
    group_rows.append([len(groups), "train", "fashion-mnist", "fmnist:0:train", len(item_rows), 2, "bag", 0, "-"])
    item_rows += [[len(item_rows), len(groups), "train", "text", "caption", "a bag", 0],
                  [len(item_rows) + 1, len(groups), "train", "image", "image", "images/0.png", 0]]
    tables = {"groups.tsv": group_rows, "items.tsv": item_rows, "edges.tsv": list(edges), "choices.tsv": [],
              "roles.tsv": [["lemma", "lemma", 1.0], ["lemma", "gloss", 0.5], ["caption", "image", 1.0]]}
    for name, rows in tables.items():
        with open(os.path.join(root, name), "w", encoding="utf-8") as f:
            f.write(prepare.tsv(rows, ["header"]))
    return batches.Data(root)


class RareSenses(unittest.TestCase):
    def test_a_lemma_in_a_rare_sense_of_its_word_is_drawn_only_when_asked(self):
        # Synsets (uses): "cat, true cat" (18, "cat" tagged 18 times), "Caterpillar, cat" (0), "begin, start" (558,
        # "start" never tagged in it), "start, starting" (30, "start" tagged 30 times); one image class.
        groups = [("wn:n1", ["cat", "true cat"], [18, 0], 18), ("wn:n2", ["Caterpillar", "cat"], [0, 0], 0),
                  ("wn:v3", ["begin", "start"], [500, 0], 558), ("wn:n4", ["start", "starting"], [30, 0], 30)]
        with tempfile.TemporaryDirectory() as root:
            data = write_data(root, groups)
            self.assertEqual(data.rare, {3})  # "cat" in "Caterpillar, cat", not "start" in "begin, start"
            # By the lemma's own count "start" in "begin, start" is rare too: never tagged there, 30 times elsewhere.
            self.assertEqual(data.rare_by_lemma, {3, 5})
            b = data.batch(random.Random(3), "train", groups=5, images=1, hard=0.0, choices=0, class_images=1,
                           articles=0.0, rare_by_lemma=True)
            self.assertEqual(sorted(c for c in b["contents"] if c in ("cat", "start")), ["cat", "start"])
            for rare_senses, expected in ((0.0, False), (1.0, True)):
                rng = random.Random(3)
                beside = False  # whether "cat" was ever drawn in the Caterpillar's bag
                for _ in range(50):
                    b = data.batch(rng, "train", groups=5, images=1, hard=0.0, choices=0, class_images=1,
                                   rare_senses=rare_senses, articles=0.0)
                    self.assertEqual(b["modalities"].count("image"), 1)
                    self.assertEqual(len(b["contents"]), 4 * 2 + 2 - (not expected))  # all lemmas it may draw
                    bag = b["bags"][b["contents"].index("Caterpillar")]
                    beside |= any(c == "cat" and b["bags"][i] == bag for i, c in enumerate(b["contents"]))
                self.assertEqual(beside, expected)


class Hypernyms(unittest.TestCase):
    def test_a_synsets_hypernym_is_drawn_beside_it_and_attracts_its_items(self):
        # "cat" (uses 18) is a "feline" (30); "begin" (558) and "rock" (0) have no hypernym here.
        groups = [("wn:n1", ["cat", "true cat"], [18, 0], 18), ("wn:n2", ["feline", "felid"], [30, 0], 30),
                  ("wn:v3", ["begin", "start"], [500, 58], 558), ("wn:n4", ["rock", "stone"], [0, 0], 0)]
        edges = [["none", "hypernym", 0, 1, 1.0]]
        with tempfile.TemporaryDirectory() as root:
            data = write_data(root, groups, edges)
            self.assertEqual(data.hypernyms, {0: [1]})
            for hypernyms in (0.0, 1.0):
                rng = random.Random(5)
                together = 0  # batches holding both "cat" and "feline"
                for _ in range(60):
                    # Two WordNet groups a batch: "feline" follows a first-drawn "cat" when hypernyms are drawn.
                    b = data.batch(rng, "train", groups=3, images=1, hard=0.0, choices=0, class_images=1,
                                   articles=0.0, per_group=1, common=1.0, cap=20.0, hypernyms=hypernyms)
                    if hypernyms and b["groups"][0] == 0:
                        self.assertEqual(b["groups"][1], 1)
                    if not {0, 1} <= set(b["groups"]):
                        continue
                    together += 1
                    cat, feline = b["contents"].index("cat"), b["contents"].index("feline")
                    attract = b["attract"]
                    rows = [list(zip(attract["ids"][attract["offsets"][p] : attract["offsets"][p + 1]],
                                     attract["weights"][attract["offsets"][p] : attract["offsets"][p + 1]]))
                            for p in (cat, feline)]
                    self.assertEqual(rows, [[(feline, 0.35)], [(cat, 0.35)]] if hypernyms else [[], []])
                self.assertGreater(together, 5)


class Vocabulary(unittest.TestCase):
    def test_vocabulary_groups_take_their_lemmas_alone(self):
        groups = [("wn:n1", ["cat", "true cat"], [18, 0], 18), ("wn:n2", ["feline", "felid"], [30, 0], 30),
                  ("wn:v3", ["begin", "start"], [500, 58], 558), ("wn:n4", ["rock", "stone"], [0, 0], 0),
                  ("wn:n5", ["car", "auto"], [40, 0], 40)]
        with tempfile.TemporaryDirectory() as root:
            data = write_data(root, groups, glosses=True)
            rng = random.Random(7)
            for _ in range(30):
                # Two groups as usual (three items each: two lemmas and the gloss), then two vocabulary groups.
                b = data.batch(rng, "train", groups=3, images=1, hard=0.0, choices=0, class_images=1, articles=0.0,
                               vocabulary=2)
                self.assertEqual(len(b["groups"]), 5)
                for bag in range(4):
                    texts = [c for c, at in zip(b["contents"], b["bags"]) if at == bag]
                    self.assertEqual(len(texts), 2 if bag >= 2 else 3, texts)
                    self.assertEqual(any(t.startswith("what ") for t in texts), bag < 2, texts)


    def test_vocabulary_groups_are_drawn_by_their_own_weights(self):
        groups = [("wn:n1", ["cat"], [18], 18), ("wn:n2", ["rock"], [0], 0), ("wn:n3", ["stone"], [0], 0)]
        with tempfile.TemporaryDirectory() as root:
            data = write_data(root, groups)
            rng = random.Random(3)
            bags = []
            for _ in range(300):  # the group: one of three alike; the vocabulary group: "cat" at 1 + 18^3 to 1 and 1
                b = data.batch(rng, "train", groups=2, images=1, hard=0.0, choices=0, class_images=1, articles=0.0,
                               common=0.0, vocabulary=1, vocabulary_common=3.0)
                bags.append(b["bags"][b["contents"].index("cat")])
            self.assertTrue(70 <= bags.count(0) <= 130, bags.count(0))
            self.assertEqual(bags.count(0) + bags.count(1), 300)


class Supersense(unittest.TestCase):
    def test_items_of_one_lexicographer_file_attract_unless_an_edge_joins_them(self):
        # "cat", "feline" and "dog" are noun.animal, "dog" a sister of "cat" (repel); "truck" noun.artifact; "begin"
        # verb.change; "big" adj.all, like "large": adjectives' files are too broad to attract.
        groups = [("wn:n1", ["cat"], [18], 18, "noun.animal"), ("wn:n2", ["feline"], [0], 0, "noun.animal"),
                  ("wn:n3", ["dog"], [40], 40, "noun.animal"), ("wn:n4", ["truck"], [9], 9, "noun.artifact"),
                  ("wn:v5", ["begin"], [500], 500, "verb.change"), ("wn:a6", ["big"], [50], 50, "adj.all"),
                  ("wn:a7", ["large"], [50], 50, "adj.all")]
        edges = [["repel", "sister", 0, 2, 1.0], ["repel", "sister", 2, 0, 1.0]]
        with tempfile.TemporaryDirectory() as root:
            data = write_data(root, groups, edges)
            for supersense in (0.0, 0.1):
                b = data.batch(random.Random(2), "train", groups=8, images=1, hard=0.0, choices=0, class_images=1,
                               articles=0.0, supersense=supersense)
                at = {c: i for i, c in enumerate(b["contents"])}
                attract = b["attract"]
                pairs = {(b["contents"][p], b["contents"][q], w) for p in range(len(b["contents"]))
                         for q, w in zip(attract["ids"][attract["offsets"][p] : attract["offsets"][p + 1]],
                                         attract["weights"][attract["offsets"][p] : attract["offsets"][p + 1]])}
                self.assertEqual(len(at), 9)  # seven lemmas, a caption, an image
                expected = {("cat", "feline", 0.1), ("feline", "cat", 0.1), ("feline", "dog", 0.1),
                            ("dog", "feline", 0.1)} if supersense else set()
                self.assertEqual({p for p in pairs if p[0] != "a bag" and p[1] != "a bag"}, expected)


@unittest.skipUnless(os.path.isdir(prepare.WORDNET) and os.path.isdir(prepare.FASHION), "scripts/setup.sh first")
class Prepare(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = os.path.join(cls.tmp.name, "data")
        cls.command = [sys.executable, os.path.join(HERE, "prepare.py"), "--out", cls.out, "--synsets", "600",
                       "--images", "300", "--audio", "8", "--outliers", "40", "--jobs", "2"]
        cls.first = subprocess.run(cls.command, capture_output=True, text=True)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_writes_only_under_the_data_directory_and_checks(self):
        self.assertEqual(self.first.returncode, 0, self.first.stderr)
        self.assertEqual(os.listdir(self.tmp.name), ["data"])
        data = batches.Data(self.out)
        data.check()
        with open(os.path.join(self.out, "manifest.json")) as f:
            manifest = json.load(f)
        self.assertEqual(manifest["counts"]["synsets"], 600)
        self.assertEqual(manifest["counts"]["images"], 300)
        self.assertEqual(manifest["counts"]["audio_clips"], len([i for i in data.items if i[2] == "audio"]))
        self.assertEqual(len(data.groups), 600 + 30)
        for (_, _, key, *_), lexname in zip(data.groups, data.lexnames):  # a noun's file is a noun's, ...
            kind = {"wn:n": "noun.", "wn:v": "verb."}.get(key[:4])
            self.assertEqual(lexname and lexname[:5], kind, key)

    def test_clips_are_16_khz_mono_pcm(self):
        clips = [i[4] for i in batches.Data(self.out).items if i[2] == "audio"]
        self.assertTrue(clips)
        for clip in clips:
            with open(os.path.join(self.out, clip), "rb") as f:
                header = f.read(44)
            self.assertEqual(header[:4], b"RIFF")
            self.assertEqual(int.from_bytes(header[22:24], "little"), 1)  # channels
            self.assertEqual(int.from_bytes(header[24:28], "little"), 16000)  # rate
            self.assertEqual(int.from_bytes(header[34:36], "little"), 16)  # bits

    def test_outlier_pictures_are_rgb_pngs_drawn_as_negatives_alone(self):
        data = batches.Data(self.out)
        self.assertEqual(sum(len(v) for v in data.outliers.values()), 40)
        self.assertGreater(len(data.outliers["train"]), 20)
        for path in data.outliers["train"][:8]:  # every kind: 8-bit RGB, 16 to 64 pixels a side
            with open(os.path.join(self.out, path), "rb") as f:
                head = f.read(26)
            width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
            self.assertEqual((head[:8], head[24], head[25]), (b"\x89PNG\r\n\x1a\n", 8, 2))
            self.assertTrue(16 <= width <= 64 and 16 <= height <= 64, (width, height))
        plain = data.batch(random.Random(5), "train", groups=6, images=2, choices=2)
        b = data.batch(random.Random(5), "train", groups=6, images=2, choices=2, outliers=3)
        n = len(plain["modalities"]) - 2  # the items before the choices
        self.assertEqual(b["contents"][:n], plain["contents"][:n])
        self.assertEqual(b["modalities"][n : n + 3], ["image"] * 3)
        self.assertTrue(all("/images/outliers/" in c for c in b["contents"][n : n + 3]))
        self.assertEqual(b["bags"][n:], list(range(b["bags"][n - 1] + 1, b["bags"][n - 1] + 6)))
        for edges in (b["attract"], b["repel"]):
            self.assertTrue(all(j < n for j in edges["ids"]))  # no edge reaches an outlier or a choice item
            self.assertEqual(len(set(edges["offsets"][n:])), 1)  # and none leaves one

    def test_a_batch_has_bags_edges_and_choices(self):
        data = batches.Data(self.out)
        b = data.batch(random.Random(1), "train", groups=12, images=2, per_group=3, hard=1.0, choices=3)
        n = len(b["modalities"])
        self.assertEqual(len(b["bags"]), n)
        for edges in (b["attract"], b["repel"]):
            self.assertEqual(len(edges["offsets"]), n + 1)
            self.assertEqual(len(edges["ids"]), len(edges["weights"]))
            for i in range(n):
                for j in edges["ids"][edges["offsets"][i] : edges["offsets"][i + 1]]:
                    self.assertNotEqual(i, j)
        self.assertEqual(sum(1 for c in b["choices"] if c), 3)
        for legal, targets in zip(b["choices"], b["choice_targets"]):
            self.assertEqual(len(legal), len(targets))

    def test_everyday_synsets_are_drawn_more_and_lemmas_read_behind_articles(self):
        data = batches.Data(self.out)
        train = [g for g, group in enumerate(data.groups) if group[:2] == ("train", "wordnet")]
        used = sum(data.uses[g] > 0 for g in train) / len(train)
        self.assertTrue(0 < used < 1, used)
        rng = random.Random(2)
        drawn = []
        for _ in range(20):
            b = data.batch(rng, "train", groups=12, images=2, hard=0.0, choices=0, common=2.0, articles=0.0)
            drawn += [g for g in b["groups"] if data.groups[g][1] == "wordnet"]
        self.assertGreater(sum(data.uses[g] > 0 for g in drawn) / len(drawn), used + 0.1)
        noun = next(i for i, (g, _, m, role, text) in enumerate(data.items)
                    if role == "lemma" and data.groups[g][2].startswith("wn:n") and text[:1].islower())
        text = data.items[noun][4]
        self.assertEqual(data.read(noun, rng, 0.0), text)
        self.assertEqual(data.read(noun, rng, 1.0), ("an " if text[0] in "aeiou" else "a ") + text)

    def test_a_second_run_is_cached_and_a_forced_one_writes_the_same_bytes(self):
        with open(os.path.join(self.out, "items.tsv"), "rb") as f:
            before = f.read()
        again = subprocess.run(self.command, capture_output=True, text=True)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("up to date", again.stderr)
        forced = subprocess.run(self.command + ["--force"], capture_output=True, text=True)
        self.assertEqual(forced.returncode, 0, forced.stderr)
        self.assertIn("(0 written now)", forced.stderr)
        self.assertIn("(0 made now", forced.stderr)
        with open(os.path.join(self.out, "items.tsv"), "rb") as f:
            self.assertEqual(f.read(), before)
        clip = next(i[4] for i in batches.Data(self.out).items if i[2] == "audio")
        os.remove(os.path.join(self.out, clip))
        healed = subprocess.run(self.command, capture_output=True, text=True)
        self.assertEqual(healed.returncode, 0, healed.stderr)
        self.assertIn("(1 made now", healed.stderr)
        self.assertTrue(os.path.isfile(os.path.join(self.out, clip)))


if __name__ == "__main__":
    unittest.main(verbosity=2)
