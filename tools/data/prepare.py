#!/usr/bin/env python3
"""Prepares the training run's data from Debian packages alone, into one data directory.

    python3 tools/data/prepare.py                      # everything, into target/data
    python3 tools/data/prepare.py --out DIR --audio 500 --jobs 2

Sources (installed by scripts/setup.sh): WordNet 3.0 (`wordnet-base`, /usr/share/wordnet), Fashion-MNIST
(`dataset-fashion-mnist`, /usr/share/datasets/fashion-mnist), speech from `espeak-ng` resampled to 16 kHz by
`sox`. Nothing is downloaded. The tool writes only under the data directory (`--out`), is cached (a stage whose
configuration and outputs are unchanged is skipped; images and clips that exist are kept) and re-runnable.
It needs python3 alone (no numpy). docs/data.md describes the files, the split and the sources.
"""

import argparse
import gzip
import hashlib
import json
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

FORMAT_VERSION = 4
SEED = 13  # every random choice below derives from it (and from the item's key, not from the order)
WORDNET = "/usr/share/wordnet"
FASHION = "/usr/share/datasets/fashion-mnist"
PACKAGES = ["wordnet-base", "dataset-fashion-mnist", "espeak-ng", "sox"]

# Fashion-MNIST's ten labels, each with the names its captions use (the first is the class's label).
FASHION_CLASSES = [
    ("T-shirt/top", ["T-shirt", "top", "tee shirt"]),
    ("Trouser", ["pair of trousers", "pair of pants"]),
    ("Pullover", ["pullover", "sweater", "jumper"]),
    ("Dress", ["dress", "frock"]),
    ("Coat", ["coat", "jacket"]),
    ("Sandal", ["sandal", "summer sandal"]),
    ("Shirt", ["shirt", "button-up shirt"]),
    ("Sneaker", ["sneaker", "running shoe"]),
    ("Bag", ["bag", "handbag"]),
    ("Ankle boot", ["ankle boot", "short boot"]),
]
# Caption templates; the last two are held out: template 8 for validation, 9 for test.
FASHION_TEMPLATES = [
    "a photo of {a}",
    "a grayscale picture of {a}",
    "a small black and white image of {a}",
    "{a} on a black background",
    "a low-resolution photo of {a}",
    "a product shot of {a}",
    "a thumbnail showing {a}",
    "{name}",
    "a centered picture of {a}",
    "an image of {a}",
]
FASHION_TEMPLATE_SPLIT = ["train"] * 8 + ["validation", "test"]

# espeak-ng voices (+variant) and speeds (words per minute) the clips draw from.
VOICES = ["en-us", "en-us+f3", "en-gb", "en-gb+f2", "en-gb-scotland", "en-gb-x-rp+m3", "en-029", "en-us+m5"]
SPEEDS = [130, 160, 190]

# Attract weights between the roles of items that share a group (symmetric). docs/data.md.
ROLE_WEIGHTS = [
    ("lemma", "lemma", 1.0),
    ("lemma", "gloss", 0.5),
    ("lemma", "example", 0.25),
    ("gloss", "gloss", 1.0),
    ("gloss", "example", 0.5),
    ("example", "example", 0.5),
    ("speech-lemma", "lemma", 1.0),
    ("speech-lemma", "gloss", 0.5),
    ("speech-lemma", "example", 0.25),
    ("speech-lemma", "speech-lemma", 1.0),
    ("speech-lemma", "speech-gloss", 0.5),
    ("speech-gloss", "gloss", 1.0),
    ("speech-gloss", "lemma", 0.5),
    ("speech-gloss", "example", 0.25),
    ("speech-gloss", "speech-gloss", 1.0),
    ("image", "caption", 1.0),
    ("image", "image", 0.5),
    ("caption", "caption", 0.5),
]
ANTONYM_WEIGHT = 1.0
SISTER_WEIGHT = 1.0
SIMILAR_WEIGHT = 0.25
MAX_SISTERS = 8  # repel edges to sister terms per synset, drawn with the seed
MAX_LOOKALIKES = 4  # repel edges to one-edit lookalike lemmas per common synset, drawn with the seed
LOOKALIKE_WEIGHT = 1.0
INFLECTIONS = {"s", "es", "d", "ed", "r", "er", "y", "n"}


# ------------------------------------------------------------------------------------------------ utilities


class Progress:
    """A carriage-return progress line on stderr: label, count, percentage, rate and ETA."""

    def __init__(self, label, total):
        self.label, self.total, self.start, self.last, self.shown = label, total, time.time(), 0.0, -1
        self.show(0, force=True)

    def show(self, done, force=False):
        now = time.time()
        if not force and now - self.last < 0.2 and done < self.total:
            return
        self.last, self.shown = now, done
        elapsed = now - self.start
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - done) / rate if rate > 0 else 0.0
        width = 24
        filled = int(width * done / self.total) if self.total else width
        bar = "#" * filled + "." * (width - filled)
        pct = 100.0 * done / self.total if self.total else 100.0
        sys.stderr.write(f"\r{self.label:<10} [{bar}] {done}/{self.total} {pct:5.1f}% {rate:8.0f}/s ETA {eta:5.0f}s ")
        sys.stderr.flush()

    def close(self):
        if self.shown != self.total:
            self.show(self.total, force=True)
        sys.stderr.write(f" {time.time() - self.start:.1f}s\n")
        sys.stderr.flush()


def log(message):
    sys.stderr.write(f"prepare: {message}\n")
    sys.stderr.flush()


def fraction(*parts):
    """A stable value in [0, 1) from the seed and a key: the split and every draw use it, not the file order."""
    digest = hashlib.sha256(":".join([str(SEED), *map(str, parts)]).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def clean(text):
    return " ".join(text.replace("\t", " ").replace("\r", " ").replace("\n", " ").split())


def write_atomic(path, text_or_bytes):
    tmp = path + ".tmp"
    mode = "wb" if isinstance(text_or_bytes, bytes) else "w"
    with open(tmp, mode, **({} if mode == "wb" else {"encoding": "utf-8", "newline": "\n"})) as f:
        f.write(text_or_bytes)
    os.replace(tmp, path)


def package_version(name):
    try:
        answer = subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], capture_output=True, text=True)
        return answer.stdout or None
    except OSError:
        return None


# ------------------------------------------------------------------------------------------------ WordNet

POS_FILES = [("n", "noun"), ("v", "verb"), ("a", "adj"), ("r", "adv")]
SENSE_POS = {"1": "n", "2": "v", "3": "a", "4": "r", "5": "a"}  # a sense key's ss_type: 5 is an adjective satellite
# WordNet's lexicographer files by number (lexnames(5WN)), each synset's line names one: a coarse kind, the
# "supersense" ("cat" and "feline" are noun.animal, "truck" noun.artifact), written to groups.tsv.
LEXNAMES = ["adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact", "noun.attribute",
            "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling", "noun.food", "noun.group",
            "noun.location", "noun.motive", "noun.object", "noun.person", "noun.phenomenon", "noun.plant",
            "noun.possession", "noun.process", "noun.quantity", "noun.relation", "noun.shape", "noun.state",
            "noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition", "verb.communication",
            "verb.competition", "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
            "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather", "adj.ppl"]
MARKER = re.compile(r"\((a|p|ip)\)$")
QUOTED = re.compile(r'"([^"]*)"')
QUOTED_AND_SOURCE = re.compile(r'"[^"]*"(\s*-+\s*[^;"]*)?')  # an example and its attribution ("..." - Shakespeare)


class Synset:
    __slots__ = ("key", "pos", "sat", "lemmas", "gloss", "examples", "hypernyms", "antonyms", "similar", "split",
                 "tagged", "uses", "lemma_uses", "lexname")

    def __init__(self, key, pos, sat):
        self.key, self.pos, self.sat = key, pos, sat
        self.lemmas, self.examples, self.hypernyms, self.antonyms, self.similar = [], [], [], set(), []
        self.gloss, self.split, self.tagged, self.uses = "", "", 0, 0
        self.lemma_uses = {}  # lower-cased lemma -> how often its sense of this synset was tagged
        self.lexname = ""  # its lexicographer file, LEXNAMES


def split_of(key, validation=0.1, test=0.1):
    value = fraction("split", key)
    return "test" if value < test else "validation" if value < test + validation else "train"


def parse_gloss(gloss):
    examples = [clean(e) for e in QUOTED.findall(gloss) if clean(e)]
    definition = QUOTED_AND_SOURCE.sub("", gloss)
    definition = re.sub(r"(;\s*)+", "; ", definition)
    definition = clean(definition).strip(" ;,:-")
    return definition, examples


def parse_wordnet(root, limit):
    """Every synset of data.{noun,verb,adj,adv}: lemmas, gloss, examples, hypernyms, antonyms, similar-to."""
    synsets = {}
    lines = 0
    for pos, name in POS_FILES:
        with open(os.path.join(root, "data." + name), encoding="latin-1") as f:
            for line in f:
                if line.startswith("  "):
                    continue
                head, _, gloss = line.rstrip("\n").partition(" | ")
                fields = head.split()
                offset, ss_type, w_cnt = fields[0], fields[2], int(fields[3], 16)
                key = pos + offset
                synset = Synset(key, pos, ss_type == "s")
                synset.lexname = LEXNAMES[int(fields[1])]
                words = fields[4 : 4 + 2 * w_cnt : 2]
                for word in words:
                    lemma = MARKER.sub("", word).replace("_", " ")
                    if lemma not in synset.lemmas:
                        synset.lemmas.append(lemma)
                at = 4 + 2 * w_cnt
                p_cnt = int(fields[at])
                for i in range(p_cnt):
                    symbol, target, target_pos = fields[at + 1 + 4 * i : at + 4 + 4 * i]
                    target_key = ("a" if target_pos == "s" else target_pos) + target
                    if symbol in ("@", "@i"):
                        synset.hypernyms.append(target_key)
                    elif symbol == "!":
                        synset.antonyms.add(target_key)
                    elif symbol == "&":
                        synset.similar.append(target_key)
                synset.gloss, synset.examples = parse_gloss(gloss.strip())
                synsets[key] = synset
                lines += 1
    # index.pos: senses in frequency order; a synset is "tagged" when some lemma's sense of it was seen in the
    # semantic concordances (sense number <= tagsense_cnt), and its lemmas are ranked by that sense number.
    sense_rank = {}
    senses = {}  # (pos, lemma) -> synset keys in sense-number order
    for pos, name in POS_FILES:
        with open(os.path.join(root, "index." + name), encoding="latin-1") as f:
            for line in f:
                if line.startswith("  "):
                    continue
                fields = line.split()
                lemma, synset_cnt, p_cnt = fields[0].replace("_", " "), int(fields[2]), int(fields[3])
                tagsense_cnt = int(fields[5 + p_cnt])
                offsets = fields[6 + p_cnt : 6 + p_cnt + synset_cnt]
                senses[(pos, fields[0])] = [pos + offset for offset in offsets]
                for rank, offset in enumerate(offsets):
                    key = pos + offset
                    sense_rank[(key, lemma)] = rank
                    if rank < tagsense_cnt and key in synsets:
                        synsets[key].tagged += 1
    # cntlist.rev: "sense_key sense_number tag_cnt", how often each sense was tagged in the concordances; a synset's
    # uses are the sum over its lemmas' senses, the weight the trainer draws it by (docs/data.md, "Sampling a batch").
    with open(os.path.join(root, "cntlist.rev"), encoding="latin-1") as f:
        for line in f:
            sense_key, number, tag_cnt = line.split()
            lemma, _, lex_sense = sense_key.partition("%")
            pos = SENSE_POS.get(lex_sense[:1])
            keys = senses.get((pos, lemma), ())
            if pos and 0 < int(number) <= len(keys) and keys[int(number) - 1] in synsets:
                synset = synsets[keys[int(number) - 1]]
                synset.uses += int(tag_cnt)
                word = lemma.replace("_", " ")
                synset.lemma_uses[word] = synset.lemma_uses.get(word, 0) + int(tag_cnt)
    for synset in synsets.values():
        # Common senses (tagged in the concordances) always train, so the shipped model knows everyday words; the
        # held-out splits are drawn from the other synsets (docs/data.md, "Split").
        synset.split = "train" if synset.tagged else split_of(synset.key)
        # The canonical lemma first: lowest sense number of its word (most frequent sense), then synset order.
        order = {l: i for i, l in enumerate(synset.lemmas)}
        synset.lemmas.sort(key=lambda l: (sense_rank.get((synset.key, l.lower()), 99), order[l]))
    if limit:
        keep = sorted(synsets, key=lambda k: fraction("limit", k))[:limit]
        synsets = {k: synsets[k] for k in sorted(keep)}
    return synsets


def sisters(synsets):
    """Co-hyponyms within one split: synsets sharing a hypernym, at most MAX_SISTERS per synset (seeded)."""
    children = {}
    for synset in synsets.values():
        for parent in synset.hypernyms:
            children.setdefault(parent, []).append(synset.key)
    result = {}
    for synset in synsets.values():
        candidates = set()
        for parent in synset.hypernyms:
            for other in children.get(parent, ()):
                if other != synset.key and synsets[other].split == synset.split:
                    candidates.add(other)
        candidates -= synset.antonyms
        chosen = sorted(candidates, key=lambda o: fraction("sister", synset.key, o))[:MAX_SISTERS]
        result[synset.key] = chosen
    return result


def lookalikes(synsets):
    """Common synsets (some use in the concordances) whose canonical lemmas share a one-letter deletion ("cat" and
    "car", "truck" and "track", "begin" and "being") and which share no lemma and no hypernym link, at most MAX_LOOKALIKES per synset (seeded),
    symmetric: hard negatives that teach the model meaning over spelling. Inflections ("cat", "cats") are skipped."""
    common = [s for s in synsets.values() if s.uses and len(s.lemmas[0]) >= 3 and s.lemmas[0].isalpha()]
    by_variant = {}
    for synset in common:
        word = synset.lemmas[0].lower()
        for variant in {word} | {word[:i] + word[i + 1 :] for i in range(len(word))}:
            by_variant.setdefault(variant, []).append(synset.key)
    candidates = {}
    for keys in by_variant.values():
        for a in keys:
            for b in keys:
                x, y = synsets[a], synsets[b]
                u, v = sorted((x.lemmas[0].lower(), y.lemmas[0].lower()), key=len)
                if a == b or x.split != y.split or set(x.lemmas) & set(y.lemmas) or u == v:
                    continue
                if v.startswith(u) and v[len(u) :] in INFLECTIONS or b in x.hypernyms or a in y.hypernyms:
                    continue
                candidates.setdefault(a, set()).add(b)
    result = {}
    for a, others in candidates.items():
        result[a] = sorted(others, key=lambda o: fraction("lookalike", *sorted((a, o))))[:MAX_LOOKALIKES]
    return result


# ------------------------------------------------------------------------------------------------ Fashion-MNIST


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, count = struct.unpack(">II", data[:8])
    if magic == 2051:
        rows, cols = struct.unpack(">II", data[8:16])
        return count, rows, cols, data[16:]
    if magic == 2049:
        return count, 1, 1, data[8:]
    raise ValueError(f"{path}: not an IDX file (magic {magic})")


def png(width, height, pixels, channels=1):
    """An 8-bit PNG of gray (1 channel) or RGB (3) pixels, rows top to bottom."""
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    row = width * channels
    raw = b"".join(b"\x00" + pixels[r * row : (r + 1) * row] for r in range(height))
    colour = {1: 0, 3: 2}[channels]
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def article(name):
    return ("an " if name[0].lower() in "aeiou" else "a ") + name


def fashion_images(root, out, validation, limit):
    """Writes every image as an 8-bit grayscale PNG; returns [(relative path, class, split)]."""
    sets = []
    for source, prefix in (("train", "train"), ("test", "t10k")):
        count, rows, cols, pixels = read_idx(os.path.join(root, f"{prefix}-images-idx3-ubyte.gz"))
        label_count, _, _, labels = read_idx(os.path.join(root, f"{prefix}-labels-idx1-ubyte.gz"))
        assert count == label_count, (count, label_count)
        for i in range(count):
            if source == "test":
                split = "test"
            else:
                split = "validation" if fraction("fashion", i) < validation else "train"
            sets.append((f"images/fashion-mnist/{source}/{i:05d}.png", labels[i], split, pixels, i * rows * cols,
                         rows, cols))
    if limit:
        sets = sorted(sets, key=lambda s: fraction("fashion-limit", s[0]))[:limit]
        sets.sort(key=lambda s: s[0])
    for source in ("train", "test"):
        os.makedirs(os.path.join(out, "images", "fashion-mnist", source), exist_ok=True)
    progress = Progress("images", len(sets))
    written = 0
    for n, (path, label, split, pixels, at, rows, cols) in enumerate(sets):
        full = os.path.join(out, path)
        if not os.path.exists(full):
            write_atomic(full, png(cols, rows, pixels[at : at + rows * cols]))
            written += 1
        if n % 256 == 0:
            progress.show(n)
    progress.close()
    return [(path, label, split) for path, label, split, *_ in sets], written


# ------------------------------------------------------------------------------------------------ outliers

OUTLIER_KINDS = ["solid", "linear", "radial", "stripes", "checks", "noise", "clouds", "blocks"]


def outlier_pixels(kind, rng, width, height, gray):
    """One full-frame pattern of `kind` as RGB rows: none of them is a garment on a black ground."""
    def colour():
        if gray:
            v = rng.randrange(256)
            return (v, v, v)
        return tuple(rng.randrange(256) for _ in range(3))

    def mix(a, b, t):
        t = min(1.0, max(0.0, t))
        return tuple(int(round(x + (y - x) * t)) for x, y in zip(a, b))

    a, b = colour(), colour()
    if kind == "solid":
        return lambda x, y: a
    if kind == "linear":
        angle = rng.uniform(0, 2 * math.pi)
        dx, dy = math.cos(angle), math.sin(angle)
        span = abs(dx) * width + abs(dy) * height
        low = min(0, dx * width) + min(0, dy * height)
        return lambda x, y: mix(a, b, (dx * x + dy * y - low) / span)
    if kind == "radial":
        cx, cy, r = rng.uniform(0, width), rng.uniform(0, height), rng.uniform(0.3, 1.0) * max(width, height)
        return lambda x, y: mix(a, b, math.hypot(x - cx, y - cy) / r)
    if kind == "stripes":
        period, angle = rng.randint(2, max(3, width // 3)), rng.uniform(0, math.pi)
        dx, dy = math.cos(angle), math.sin(angle)
        return lambda x, y: a if int((dx * x + dy * y) / period) % 2 == 0 else b
    if kind == "checks":
        cell = rng.randint(2, max(3, width // 3))
        return lambda x, y: a if (x // cell + y // cell) % 2 == 0 else b
    if kind == "noise":
        spread = rng.randint(16, 128)

        def noise(x, y):
            if not gray:
                return mix(a, b, rng.random())
            v = max(0, min(255, a[0] + rng.randint(-spread, spread)))
            return (v, v, v)
        return noise
    if kind == "clouds":  # octaves of random grids, bilinearly upsampled: smooth, photo-like texture
        octaves = []
        for level in range(1, 5):
            n = 2**level + 1
            octaves.append((n, [[rng.random() for _ in range(n)] for _ in range(n)], 0.5**level))
        total = sum(w for _, _, w in octaves)

        def at(x, y):
            value = 0.0
            for n, grid, w in octaves:
                u, v = x / width * (n - 1), y / height * (n - 1)
                i, j = min(int(u), n - 2), min(int(v), n - 2)
                fu, fv = u - i, v - j
                top = grid[j][i] * (1 - fu) + grid[j][i + 1] * fu
                bottom = grid[j + 1][i] * (1 - fu) + grid[j + 1][i + 1] * fu
                value += w * (top * (1 - fv) + bottom * fv)
            return mix(a, b, 0.5 + 2.5 * (value / total - 0.5))  # stretched: averaged octaves are flat
        return at
    # blocks: rectangles of random colours over a ground that is not black
    ground = a if sum(a) >= 120 else mix(a, (255, 255, 255), 0.5)
    rects = [(rng.randrange(width), rng.randrange(height), rng.randint(2, width), rng.randint(2, height), colour())
             for _ in range(rng.randint(2, 6))]

    def blocks(x, y):
        for rx, ry, rw, rh, c in reversed(rects):
            if rx <= x < rx + rw and ry <= y < ry + rh:
                return c
        return ground
    return blocks


def outlier_images(out, count, validation):
    """Writes `count` synthetic full-frame pictures (gradients, stripes, checks, noise, clouds, blocks; gray or
    colour; 16 to 64 pixels a side) as PNGs, each from its own seeded generator; returns [(path, kind, split)].
    They train as negatives alone (docs/data.md, "Outlier pictures"): the Fashion-MNIST captions learn to tell a
    garment on a black ground from any picture that is not one."""
    os.makedirs(os.path.join(out, "images", "outliers"), exist_ok=True)
    rows, written = [], 0
    progress = Progress("outliers", count)
    for i in range(count):
        rng = random.Random(f"{SEED}:outlier:{i}")
        kind = OUTLIER_KINDS[i % len(OUTLIER_KINDS)]
        width, height, gray = rng.randint(16, 64), rng.randint(16, 64), rng.random() < 0.5
        path = f"images/outliers/{i:05d}.png"
        split = "validation" if fraction("outlier", i) < validation else "train"
        full = os.path.join(out, path)
        if not os.path.exists(full):
            at = outlier_pixels(kind, rng, width, height, gray)
            pixels = bytes(v for y in range(height) for x in range(width) for v in at(x, y))
            write_atomic(full, png(width, height, pixels, channels=3))
            written += 1
        rows.append((path, kind, split))
        if i % 64 == 0:
            progress.show(i)
    progress.close()
    return rows, written


# ------------------------------------------------------------------------------------------------ speech


def speech_plan(synsets, count, gloss_share, max_gloss_words):
    """Which clips to speak: `count` in all, split in the synsets' proportions, tagged (common) synsets first;
    every `1 / gloss_share`-th clip speaks a short gloss instead of the lemma. Returns dicts sorted by path."""
    if count <= 0:
        return []
    eligible = [s for s in synsets.values() if re.fullmatch(r"[A-Za-z][A-Za-z' -]{1,30}", s.lemmas[0])]
    eligible.sort(key=lambda s: (s.tagged == 0, fraction("speech", s.key)))
    by_split = {"train": [], "validation": [], "test": []}
    for s in eligible:
        by_split[s.split].append(s)
    total = sum(len(v) for v in by_split.values()) or 1
    plan = []
    for split, members in by_split.items():
        quota = round(count * len(members) / total)
        for s in members[:quota]:
            short = s.gloss and len(s.gloss.split()) <= max_gloss_words and re.fullmatch(r"[ -~]+", s.gloss)
            if short and fraction("speech-kind", s.key) < gloss_share:
                role, text = "speech-gloss", s.gloss
            else:
                role, text = "speech-lemma", s.lemmas[0]
            voice = VOICES[int(fraction("voice", s.key) * len(VOICES))]
            speed = SPEEDS[int(fraction("speed", s.key) * len(SPEEDS))]
            name = f"{s.key}-{role[7:]}-{voice.replace('+', '_')}-{speed}.wav"
            plan.append({"path": f"audio/{s.key[0]}/{name}", "key": s.key, "role": role, "text": text,
                         "voice": voice, "speed": speed})
    plan.sort(key=lambda c: c["path"])
    return plan[:count]


def speak(out, clip):
    """espeak-ng to WAV on a pipe, sox to 16 kHz mono 16-bit PCM with the trailing silence trimmed."""
    full = os.path.join(out, clip["path"])
    if os.path.exists(full):
        return 0.0
    start = time.time()
    tmp = full + ".tmp.wav"
    espeak = subprocess.Popen(["espeak-ng", "-v", clip["voice"], "-s", str(clip["speed"]), "--stdout", clip["text"]],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    sox = subprocess.run(["sox", "-q", "-t", "wav", "-", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed-integer",
                          tmp, "reverse", "silence", "1", "0.02", "0.1%", "reverse"],
                         stdin=espeak.stdout, stderr=subprocess.PIPE)
    espeak.stdout.close()
    if espeak.wait() != 0 or sox.returncode != 0:
        raise RuntimeError(f"speaking {clip['path']} failed: {sox.stderr.decode(errors='replace')}")
    os.replace(tmp, full)
    return time.time() - start


def speak_all(out, plan, jobs):
    for sub in {os.path.dirname(c["path"]) for c in plan}:
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    progress = Progress("audio", len(plan))
    seconds, made = 0.0, 0
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for n, spent in enumerate(pool.map(lambda c: speak(out, c), plan)):
            if spent > 0:
                seconds, made = seconds + spent, made + 1
            progress.show(n + 1)
    progress.close()
    return made, seconds


def wav_seconds(path):
    with open(path, "rb") as f:
        header = f.read(64)
    at = header.find(b"data")
    if at < 0:
        return 0.0
    (size,) = struct.unpack("<I", header[at + 4 : at + 8])
    rate = struct.unpack("<I", header[24:28])[0]
    return size / (2.0 * rate)


# ------------------------------------------------------------------------------------------------ choices


def choices(synsets, sister_map, max_bytes, calibration):
    """One item per synset with a gloss: "Which word means: <gloss>? A) .. B) .. C) .. D) .. Answer:", legal bytes
    ABCD, a one-hot target. Distractors: canonical lemmas of other synsets of the same part of speech and split
    (a sister term first when there is one), sharing no lemma with the answer's synset."""
    pools = {}
    for s in synsets.values():
        pools.setdefault((s.pos, s.split), []).append(s.key)
    for members in pools.values():
        members.sort()
    rows = []
    for s in synsets.values():
        if not s.gloss:
            continue
        answer = s.lemmas[0]
        own = {l.lower() for l in s.lemmas}
        rng = random.Random(f"{SEED}:choice:{s.key}")
        picked, seen = [], set(own)
        candidates = [k for k in sister_map.get(s.key, ())][:1]
        pool = pools[(s.pos, s.split)]
        tries = 0
        while len(picked) < 3 and tries < 50:
            key = candidates.pop() if candidates else pool[rng.randrange(len(pool))]
            tries += 1
            word = synsets[key].lemmas[0]
            if key == s.key or word.lower() in seen or set(l.lower() for l in synsets[key].lemmas) & own:
                continue
            picked.append(word)
            seen.add(word.lower())
        if len(picked) < 3:
            continue
        position = rng.randrange(4)
        options = picked[:position] + [answer] + picked[position:]
        text = "Which word means: {}? {} Answer:".format(
            s.gloss, " ".join(f"{letter}) {word}" for letter, word in zip("ABCD", options)))
        if len(text.encode()) > max_bytes:
            continue
        split = s.split
        if split == "validation" and fraction("calibration", s.key) < calibration:
            split = "calibration"
        targets = " ".join("1" if i == position else "0" for i in range(4))
        rows.append((split, s.key, "ABCD"[position], "ABCD", targets, text))
    rows.sort(key=lambda r: r[1])
    return rows


# ------------------------------------------------------------------------------------------------ the index


def build_index(synsets, sister_map, lookalike_map, images, clips):
    """Groups (bags), items sorted by group, and edges between groups. Returns (groups, items, edges)."""
    groups, items, edges = [], [], []
    group_of = {}
    clips_of = {}
    for clip in clips:
        clips_of.setdefault(clip["key"], []).append(clip)
    for key in sorted(synsets):
        s = synsets[key]
        members = [("text", "lemma", l, s.lemma_uses.get(l.lower(), 0)) for l in s.lemmas]
        if s.gloss:
            members.append(("text", "gloss", s.gloss, 0))
        members += [("text", "example", e, 0) for e in s.examples]
        members += [("audio", c["role"], c["path"], 0) for c in clips_of.get(key, ())]
        group_of[key] = len(groups)
        groups.append([len(groups), s.split, "wordnet", f"wn:{key}", len(items), len(members), s.lemmas[0],
                       s.uses, s.lexname])
        items += [[len(items) + i, group_of[key], s.split, m, r, clean(c), u]
                  for i, (m, r, c, u) in enumerate(members)]
    by_class = {}
    for path, label, split in images:
        by_class.setdefault((label, split), []).append(path)
    for label, (class_name, names) in enumerate(FASHION_CLASSES):
        for split in ("train", "validation", "test"):
            captions = []
            for template, template_split in zip(FASHION_TEMPLATES, FASHION_TEMPLATE_SPLIT):
                if template_split == split:
                    captions += [template.format(a=article(n), name=n) for n in names]
            members = [("text", "caption", c) for c in captions]
            members += [("image", "image", p) for p in by_class.get((label, split), ())]
            groups.append([len(groups), split, "fashion-mnist", f"fmnist:{label}:{split}", len(items), len(members),
                           class_name, 0, "-"])
            items += [[len(items) + i, groups[-1][0], split, m, r, c, 0] for i, (m, r, c) in enumerate(members)]
    for key in sorted(synsets):
        s = synsets[key]
        g = group_of[key]
        for other in sorted(s.antonyms):
            if other in synsets and synsets[other].split == s.split:
                edges.append(("repel", "antonym", g, group_of[other], ANTONYM_WEIGHT))
        for other in sister_map.get(key, ()):
            edges.append(("repel", "sister", g, group_of[other], SISTER_WEIGHT))
        for other in lookalike_map.get(key, ()):
            edges.append(("repel", "lookalike", g, group_of[other], LOOKALIKE_WEIGHT))
        for other in s.similar:
            if other in synsets and synsets[other].split == s.split:
                edges.append(("attract", "similar", g, group_of[other], SIMILAR_WEIGHT))
        for other in s.hypernyms:
            if other in synsets and synsets[other].split == s.split:
                edges.append(("none", "hypernym", g, group_of[other], 1.0))
    # Symmetrise the sister and lookalike edges (a pair chosen from one side only is added from the other), then sort.
    for relation, weight in (("sister", SISTER_WEIGHT), ("lookalike", LOOKALIKE_WEIGHT)):
        present = {(e[2], e[3]) for e in edges if e[1] == relation}
        for a, b in list(present):
            if (b, a) not in present:
                edges.append(("repel", relation, b, a, weight))
    edges = sorted(set(edges), key=lambda e: (e[2], e[3], e[1]))
    return groups, items, edges


def tsv(rows, header):
    lines = ["#" + "\t".join(header)]
    for row in rows:
        lines.append("\t".join(f"{v:g}" if isinstance(v, float) else str(v) for v in row))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------ main


def media_present(out):
    """Whether every image and clip items.tsv and outliers.tsv name is on disk (the cache check; about a second)."""
    with open(os.path.join(out, "items.tsv"), encoding="utf-8") as f:
        paths = [fields[5] for fields in (line.rstrip("\n").split("\t") for line in f)
                 if len(fields) >= 6 and fields[3] in ("image", "audio")]
    with open(os.path.join(out, "outliers.tsv"), encoding="utf-8") as f:
        paths += [line.split("\t")[0] for line in f if not line.startswith("#")]
    for path in paths:
        if not os.path.exists(os.path.join(out, path)):
            log(f"{path} is missing: preparing again")
            return False
    return True


OUTPUTS = ["groups.tsv", "items.tsv", "edges.tsv", "choices.tsv", "roles.tsv", "outliers.tsv"]
"""The index files the data directory holds besides the manifest."""


def parse_args():
    """The command line's options."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(repo, "target", "data"),
                        help="the data directory (default: %(default)s)")
    parser.add_argument("--audio", type=int, default=4000, help="spoken clips to make (default: %(default)s; 0: none)")
    parser.add_argument("--audio-gloss-share", type=float, default=0.25, help="share of clips that speak a short gloss")
    parser.add_argument("--max-gloss-words", type=int, default=8, help="longest gloss spoken, in words")
    parser.add_argument("--images", type=int, default=0, help="Fashion-MNIST images to keep (default: all 70,000)")
    parser.add_argument("--outliers", type=int, default=2000,
                        help="synthetic pictures that are not garments, negatives alone (default: %(default)s)")
    parser.add_argument("--synsets", type=int, default=0, help="WordNet synsets to keep (default: all)")
    parser.add_argument("--choice-max-bytes", type=int, default=320, help="longest choice item text in bytes")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="espeak-ng pipelines at once")
    parser.add_argument("--force", action="store_true", help="rebuild the index files even when cached")
    parser.add_argument("--teacher", action="store_true",
                        help="also the teacher's embeddings (tools/data/teacher_data.py; scripts/setup-teacher.sh)")
    parser.add_argument("--teacher-extra", type=int, default=20000,
                        help="other English texts per source for the teacher (default: %(default)s; 0: none)")
    parser.add_argument("--teacher-families", type=int, default=30000,
                        help="sentence families (a sentence, a synonym swap, a look-alike swap) for the teacher "
                             "(default: %(default)s; 0: none)")
    parser.add_argument("--teacher-pairs", type=int, default=2000, help="held-out text pairs with teacher cosines")
    parser.add_argument("--teacher-limit", type=int, default=None,
                        help="embed at most N more texts now and index what the store holds (a partial store: "
                             "items without a row train without the teacher; default: every text)")
    return parser.parse_args()


def check_sources(args):
    """Exits with a hint when the corpora, or the tools the audio needs, are missing."""
    for source in (WORDNET, FASHION):
        if not os.path.isdir(source):
            sys.exit(f"prepare: {source} is missing; run scripts/setup.sh (it installs {', '.join(PACKAGES)})")
    if args.audio and not (shutil.which("espeak-ng") and shutil.which("sox")):
        sys.exit("prepare: espeak-ng and sox are needed for audio (scripts/setup.sh), or pass --audio 0")


def run_config(args):
    """What the outputs depend on: the options, this script's hash and the corpora packages' versions."""
    return {"format": FORMAT_VERSION, "seed": SEED, "audio": args.audio, "audio_gloss_share": args.audio_gloss_share,
            "max_gloss_words": args.max_gloss_words, "images": args.images, "outliers": args.outliers,
            "synsets": args.synsets, "choice_max_bytes": args.choice_max_bytes,
            "script": hashlib.sha256(open(__file__, "rb").read()).hexdigest()[:16],
            "packages": {p: package_version(p) for p in PACKAGES}}


def up_to_date(out, config, old, force):
    """Whether the last run's outputs stand (same config, every file and medium present); logs so when they do."""
    if force or not all(os.path.exists(os.path.join(out, o)) for o in OUTPUTS):
        return False
    if old.get("config") != config or not media_present(out):
        return False
    counts = old["counts"]
    log(f"{out} is up to date ({counts['items']} items, {counts['choices']} choices); --force rebuilds")
    return True


def make_audio(out, synsets, args, old, timings):
    """Plans and speaks the clips not yet on disk, recording the timings; the plan and its seconds of speech."""
    start = time.time()
    plan = speech_plan(synsets, args.audio, args.audio_gloss_share, args.max_gloss_words)
    made, spent = speak_all(out, plan, max(1, args.jobs)) if plan else (0, 0.0)
    timings["audio_s"] = round(time.time() - start, 2)
    timings["audio_clips_made"] = made
    if made:
        timings["audio_s_per_clip"] = round(spent / made, 4)
        timings["audio_clips_per_s"] = round(made / max(timings["audio_s"], 1e-9), 1)
    elif old.get("timings", {}).get("audio_s_per_clip"):  # all cached: keep the last measurement
        for name in ("audio_s_per_clip", "audio_clips_per_s"):
            timings[name] = old["timings"].get(name)
    audio_seconds = sum(wav_seconds(os.path.join(out, c["path"])) for c in plan)
    each = f", {spent / made:.3f} s each in one pipeline" if made else ""
    log(f"audio: {len(plan)} clips ({made} made now{each}), {audio_seconds / 60:.1f} min of speech")
    return plan, audio_seconds


def write_tables(out, synsets, sister_map, images, outliers, plan, choice_max_bytes):
    """Builds and writes the index files; the groups, items, edges and choice rows."""
    choice_rows = choices(synsets, sister_map, choice_max_bytes, calibration=0.5)
    groups, items, edges = build_index(synsets, sister_map, lookalikes(synsets), images, plan)
    tables = [
        ("groups.tsv", groups, ["group", "split", "source", "key", "first_item", "items", "label", "uses", "lexname"]),
        ("items.tsv", items, ["item", "group", "split", "modality", "role", "content", "uses"]),
        ("edges.tsv", edges, ["objective", "relation", "from_group", "to_group", "weight"]),
        ("roles.tsv", ROLE_WEIGHTS, ["role_a", "role_b", "weight"]),
        ("outliers.tsv", outliers, ["path", "kind", "split"]),
        ("choices.tsv", [[i, *r] for i, r in enumerate(choice_rows)],
         ["choice", "split", "synset", "answer", "legal", "targets", "text"]),
    ]
    for name, rows, header in tables:
        write_atomic(os.path.join(out, name), tsv(rows, header))
    return groups, items, edges, choice_rows


def count_by(rows, column):
    """How many rows hold each value of `column`, by value."""
    result = {}
    for r in rows:
        result[r[column]] = result.get(r[column], 0) + 1
    return dict(sorted(result.items()))


def main():
    args = parse_args()
    check_sources(args)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    config = run_config(args)
    manifest_path = os.path.join(out, "manifest.json")
    old = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            old = json.load(f)
    if not up_to_date(out, config, old, args.force):
        build(args, out, config, old)
    if args.teacher:
        import teacher_data

        repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        teacher_data.stage(out, teacher_data.default_command(repo), args.teacher_extra, args.teacher_pairs,
                           args.teacher_limit, args.teacher_families)


def build(args, out, config, old):
    """The stages of the index: WordNet, the images, the outliers, the speech, the tables and the manifest (`old`: the
    last run's, whose timings a cached stage keeps)."""
    timings = {}
    start = time.time()
    synsets = parse_wordnet(WORDNET, args.synsets)
    sister_map = sisters(synsets)
    timings["wordnet_s"] = round(time.time() - start, 2)
    log(f"WordNet: {len(synsets)} synsets in {timings['wordnet_s']} s")

    start = time.time()
    images, written = fashion_images(FASHION, out, validation=5000 / 60000, limit=args.images)
    timings["images_s"] = round(time.time() - start, 2)
    log(f"Fashion-MNIST: {len(images)} images ({written} written now) in {timings['images_s']} s")

    start = time.time()
    outliers, written = outlier_images(out, args.outliers, validation=0.1)
    timings["outliers_s"] = round(time.time() - start, 2)
    log(f"outliers: {len(outliers)} pictures ({written} written now) in {timings['outliers_s']} s")

    plan, audio_seconds = make_audio(out, synsets, args, old, timings)

    start = time.time()
    groups, items, edges, choice_rows = write_tables(out, synsets, sister_map, images, outliers, plan,
                                                     args.choice_max_bytes)
    timings["index_s"] = round(time.time() - start, 2)

    counts = {
        "synsets": len(synsets), "groups": len(groups), "items": len(items), "edges": len(edges),
        "choices": len(choice_rows), "images": len(images), "outliers": len(outliers), "audio_clips": len(plan),
        "audio_minutes": round(audio_seconds / 60, 1),
        "items_by_role": count_by(items, 4), "items_by_split": count_by(items, 2),
        "groups_by_split": count_by(groups, 1), "edges_by_relation": count_by(edges, 1),
        "choices_by_split": count_by(choice_rows, 0),
        "synsets_by_pos": count_by([(s.pos,) for s in synsets.values()], 0),
    }
    sizes = {name: os.path.getsize(os.path.join(out, name)) for name in OUTPUTS}
    manifest = {"config": config, "counts": counts, "timings": timings, "bytes": sizes,
                "sources": {"wordnet": WORDNET, "fashion_mnist": FASHION}}
    write_atomic(os.path.join(out, "manifest.json"), json.dumps(manifest, indent=1) + "\n")
    log(f"wrote {len(groups)} groups, {len(items)} items, {len(edges)} edges, {len(choice_rows)} choices to {out} "
        f"in {timings['index_s']} s")


if __name__ == "__main__":
    main()
