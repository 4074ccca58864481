#!/usr/bin/env python3
"""Tests of tools/data: a small preparation into a temporary directory, checked, re-run from its cache.

    python3 tools/data/test_data.py          # about 30 s on two cores; needs scripts/setup.sh's data packages

The batches drawn from a data directory are the training tool's (tools/train/src/data/, tested there by
`cargo test -p uform-train`; `uform-train batches` prints them as JSON); this file checks what prepare.py writes.
"""

import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import prepare  # noqa: E402


def read_tsv(path):
    """A TSV file's rows, its `#` header line skipped."""
    with open(path, encoding="utf-8") as f:
        f.readline()
        return [line.rstrip("\n").split("\t") for line in f]


class Data:
    """A data directory as prepare.py writes it (docs/data.md), read into lists, and the invariants it promises."""

    def __init__(self, root):
        self.root = root
        groups = read_tsv(os.path.join(root, "groups.tsv"))
        self.groups = [(g[1], g[2], g[3], int(g[4]), int(g[5]), g[6]) for g in groups]  # split source key first n label
        self.uses = [int(g[7]) for g in groups]  # how often a synset's senses were tagged in the concordances
        self.lexnames = [g[8] if g[8][:5] in ("noun.", "verb.") else None for g in groups]
        self.items = [(int(i[1]), i[2], i[3], i[4], i[5]) for i in read_tsv(os.path.join(root, "items.tsv"))]
        self.roles = {}
        for a, b, w in read_tsv(os.path.join(root, "roles.tsv")):
            self.roles[(a, b)] = self.roles[(b, a)] = float(w)
        self.edges = [(o, r, int(a), int(b), float(w)) for o, r, a, b, w in read_tsv(os.path.join(root, "edges.tsv"))]
        self.choices = [(c[1], c[2], c[3], c[4], [float(t) for t in c[5].split()], c[6])
                        for c in read_tsv(os.path.join(root, "choices.tsv"))]
        self.outliers = {}  # split -> synthetic pictures that are not garments
        for path, _, split in read_tsv(os.path.join(root, "outliers.tsv")):
            self.outliers.setdefault(split, []).append(path)

    def check(self):
        """Every invariant docs/data.md promises; raises AssertionError on the first broken one."""
        at = 0
        for g, (split, source, key, first, n, label) in enumerate(self.groups):
            assert first == at and n > 0, (g, first, at)
            for i in range(first, first + n):
                assert self.items[i][0] == g and self.items[i][1] == split, (g, i)
            at += n
            assert self.uses[g] >= 0 and (source == "wordnet" or self.uses[g] == 0), g
            roles = [self.items[i][3] for i in range(first, first + n)]
            for r in set(roles):
                for s in set(roles):
                    if r != s or roles.count(r) > 1:
                        assert (r, s) in self.roles, (g, r, s)
        assert at == len(self.items)
        for group, split, modality, role, content in self.items:
            assert modality in ("text", "image", "audio") and content, (group, role)
            if modality != "text":
                assert os.path.isfile(os.path.join(self.root, content)), content
        for objective, _, a, b, w in self.edges:
            if objective in ("attract", "repel"):
                assert a != b and w > 0 and self.groups[a][0] == self.groups[b][0], (a, b)
        for paths in self.outliers.values():
            for path in paths:
                assert os.path.isfile(os.path.join(self.root, path)), path
        for split, synset, answer, legal, targets, text in self.choices:
            assert len(targets) == len(legal) and abs(sum(targets) - 1) < 1e-6, synset
            assert targets[legal.index(answer)] == 1.0 and text.endswith("Answer:"), synset


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
        data = Data(self.out)
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
        clips = [i[4] for i in Data(self.out).items if i[2] == "audio"]
        self.assertTrue(clips)
        for clip in clips:
            with open(os.path.join(self.out, clip), "rb") as f:
                header = f.read(44)
            self.assertEqual(header[:4], b"RIFF")
            self.assertEqual(int.from_bytes(header[22:24], "little"), 1)  # channels
            self.assertEqual(int.from_bytes(header[24:28], "little"), 16000)  # rate
            self.assertEqual(int.from_bytes(header[34:36], "little"), 16)  # bits

    def test_outlier_pictures_are_rgb_pngs(self):
        data = Data(self.out)
        self.assertEqual(sum(len(v) for v in data.outliers.values()), 40)
        self.assertGreater(len(data.outliers["train"]), 20)
        for path in data.outliers["train"][:8]:  # every kind: 8-bit RGB, 16 to 64 pixels a side
            with open(os.path.join(self.out, path), "rb") as f:
                head = f.read(26)
            width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
            self.assertEqual((head[:8], head[24], head[25]), (b"\x89PNG\r\n\x1a\n", 8, 2))
            self.assertTrue(16 <= width <= 64 and 16 <= height <= 64, (width, height))

    def test_some_synsets_are_tagged_and_some_not(self):
        data = Data(self.out)
        train = [g for g, group in enumerate(data.groups) if group[:2] == ("train", "wordnet")]
        used = sum(data.uses[g] > 0 for g in train) / len(train)
        self.assertTrue(0 < used < 1, used)

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
        clip = next(i[4] for i in Data(self.out).items if i[2] == "audio")
        os.remove(os.path.join(self.out, clip))
        healed = subprocess.run(self.command, capture_output=True, text=True)
        self.assertEqual(healed.returncode, 0, healed.stderr)
        self.assertIn("(1 made now", healed.stderr)
        self.assertTrue(os.path.isfile(os.path.join(self.out, clip)))


# A stand-in for the teacher (tools/data/teacher.py) with its command line, `info` and `append PENDING STORE`: a text's
# row is 8 values from its SHA-256, so a test can recompute any row without torch.
STAND_IN = """
import hashlib, json, struct, sys
sys.path.insert(0, {here!r})
import teacher_data
if sys.argv[1] == "info":
    print(json.dumps({{"name": "stand-in", "sha256": "0" * 64, "width": 8}}))
else:
    def embed(texts, progress):
        progress(len(texts))
        return b"".join(struct.pack("<8f", *[b - 127.5 for b in hashlib.sha256(t.encode()).digest()[:8]]) for t in texts)
    teacher_data.append(sys.argv[3], sys.argv[2], 8, embed)
"""


def stand_in_row(text):
    """The stand-in teacher's row of a text."""
    import hashlib

    return [b - 127.5 for b in hashlib.sha256(text.encode()).digest()[:8]]


class TeacherStage(unittest.TestCase):
    """prepare.py --teacher over a small data directory, through the stand-in (UFORM_TEACHER): a partial store, then
    the whole one, which embeds only what the first left."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = os.path.join(cls.tmp.name, "data")
        stand_in = os.path.join(cls.tmp.name, "stand_in.py")
        with open(stand_in, "w") as f:
            f.write(STAND_IN.format(here=HERE))
        cls.env = dict(os.environ, UFORM_TEACHER=f"{sys.executable} {stand_in}")
        cls.command = [sys.executable, os.path.join(HERE, "prepare.py"), "--out", cls.out, "--synsets", "300",
                       "--images", "30", "--audio", "0", "--outliers", "10", "--jobs", "2", "--teacher",
                       "--teacher-extra", "5", "--teacher-pairs", "30", "--teacher-families", "20"]
        cls.runs = [subprocess.run(cls.command + more, capture_output=True, text=True, env=cls.env)
                    for more in (["--teacher-limit", "50"], [])]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def teacher_file(self, name):
        return read_tsv(os.path.join(self.out, "teacher", name))

    def test_a_partial_store_is_completed_from_where_it_stopped(self):
        for run in self.runs:
            self.assertEqual(run.returncode, 0, run.stderr[-2000:])
        self.assertIn("a partial store", self.runs[0].stderr)
        self.assertIn("teacher: 50 texts to embed (0 in the store)", self.runs[0].stderr)
        self.assertIn("(50 in the store)", self.runs[1].stderr)
        with open(os.path.join(self.out, "teacher", "manifest.json")) as f:
            manifest = json.load(f)
        self.assertTrue(manifest["complete"])
        self.assertEqual(manifest["teacher"], {"name": "stand-in", "sha256": "0" * 64, "width": 8})

    def test_every_text_item_has_its_own_row(self):
        data = Data(self.out)
        texts = {i: item[4] for i, item in enumerate(data.items) if item[2] == "text"}
        rows = {int(item): int(row) for item, row in self.teacher_file("items.tsv")}
        self.assertEqual(set(rows), set(texts))
        with open(os.path.join(self.out, "teacher", "rows.f32"), "rb") as f:
            store = f.read()
        for item in sorted(rows)[:: max(1, len(rows) // 50)]:
            row = struct.unpack_from("<8f", store, 32 * rows[item])
            self.assertEqual(list(row), stand_in_row(texts[item]), texts[item])
        for _, source, split, row, content in self.teacher_file("extra.tsv"):
            self.assertEqual((split, list(struct.unpack_from("<8f", store, 32 * int(row)))),
                             ("train", stand_in_row(content)), source)

    def test_held_out_pairs_are_test_texts_with_the_teachers_cosine(self):
        data = Data(self.out)
        pairs = self.teacher_file("pairs.tsv")
        self.assertEqual(len(pairs), 30)
        self.assertLessEqual({p[1] for p in pairs}, {"synset", "related", "random"})
        self.assertIn("synset", {p[1] for p in pairs})
        for _, kind, a, b, cosine, text_a, text_b in pairs:
            for item, text in ((int(a), text_a), (int(b), text_b)):
                self.assertEqual((data.items[item][1], data.items[item][2], data.items[item][4]), ("test", "text", text))
            u, v = stand_in_row(text_a), stand_in_row(text_b)
            expected = sum(x * y for x, y in zip(u, v)) / math.sqrt(sum(x * x for x in u) * sum(y * y for y in v))
            self.assertAlmostEqual(float(cosine), expected, places=5)
            if kind == "synset":
                self.assertEqual(data.items[int(a)][0], data.items[int(b)][0])

    def test_families_are_training_sentences_and_one_word_variants_with_their_rows(self):
        data = Data(self.out)
        train = {item[4] for item in data.items if item[1] == "train" and item[2] == "text"}
        extras = {content for *_, content in self.teacher_file("extra.tsv")}
        with open(os.path.join(self.out, "teacher", "rows.f32"), "rb") as f:
            store = f.read()
        families = {}
        for family, member, split, row, content in self.teacher_file("families.tsv"):
            self.assertEqual(split, "train")
            self.assertEqual(list(struct.unpack_from("<8f", store, 32 * int(row))), stand_in_row(content))
            families.setdefault(int(family), []).append((int(member), content))
        self.assertTrue(families)
        self.assertLessEqual(len(families), 20)
        for members in families.values():
            self.assertEqual([m for m, _ in members], list(range(len(members))))
            self.assertIn(len(members), (2, 3))
            base = members[0][1].split(" ")
            self.assertIn(members[0][1], train | extras)
            for _, variant in members[1:]:
                words = variant.split(" ")
                self.assertEqual(len(words), len(base))
                self.assertEqual(sum(a != b for a, b in zip(base, words)), 1, (base, words))


class Families(unittest.TestCase):
    def test_a_variant_swaps_one_content_word_and_keeps_the_capital(self):
        import teacher_families

        synonyms = {"soup": ["broth"], "the": ["this"]}
        lookalikes = {"soup": ["soap"]}
        self.assertEqual(teacher_families.variant("The soup is hot", synonyms, "synonym"), "The broth is hot")
        self.assertEqual(teacher_families.variant("Soup is hot", lookalikes, "lookalike"), "Soap is hot")
        self.assertIsNone(teacher_families.variant("the is a", synonyms, "synonym"), "stop words are kept")

    def test_lookalikes_share_no_synset_and_synonyms_come_from_training_synsets(self):
        import teacher_families

        items = [(0, 0, "train", "lemma", "soup"), (1, 0, "train", "lemma", "broth"),
                 (2, 1, "train", "lemma", "soap"), (3, 2, "test", "lemma", "stew"), (4, 2, "test", "lemma", "soup"),
                 (5, 3, "train", "lemma", "sour"), (6, 3, "train", "lemma", "soup")]
        synonyms, lookalikes = teacher_families.vocabulary(items)
        self.assertEqual(synonyms["soup"], ["broth"])
        self.assertNotIn("stew", synonyms)
        self.assertEqual(lookalikes["soup"], ["soap"], "sour shares a synset with soup")


if __name__ == "__main__":
    unittest.main(verbosity=2)
