#!/usr/bin/env python3
"""The teacher stage of prepare.py (`--teacher`): the distillation teacher's embedding of every text, cached by content.

    python3 tools/data/prepare.py --teacher        # the index files, then this stage, into target/data/teacher

It needs python3 alone: the teacher itself (tools/data/teacher.py) runs in the environment scripts/setup-teacher.sh
makes, as a child process this stage starts, and only for texts the store does not hold yet. docs/data.md, "The
teacher", describes the files, the store and the held-out pairs.
"""

import hashlib
import json
import os
import shlex
import struct
import subprocess
import sys
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from prepare import Progress, clean, fraction, log, tsv, write_atomic  # noqa: E402
import teacher_families  # noqa: E402

KEY_DIGITS = 32  # a text's content key: the first 32 hex digits of the SHA-256 of its UTF-8 bytes
CHUNK = 2048  # texts embedded between two appends to the store (what an interruption loses at most)
TEXT_ROLES = ("lemma", "gloss", "example", "caption")
PAIR_KINDS = ("synset", "related", "random")  # the held-out pairs' kinds, a third of them each
GCIDE = "/usr/share/dictd/gcide.dict.dz"
GCIDE_INDEX = "/usr/share/dictd/gcide.index"
FORTUNES = "/usr/share/games/fortunes"
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


# ------------------------------------------------------------------------------------------------ the store


def text_key(text):
    """A text's content key: the first KEY_DIGITS hex digits of sha256(UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:KEY_DIGITS]


def store_paths(store):
    return os.path.join(store, "keys.txt"), os.path.join(store, "rows.f32")


def load_keys(store, width):
    """The store's keys whose rows are complete, as {key: row}. An interrupted append may leave a partial last key line
    or rows beyond the keys: both are cut, so the store always holds whole rows, row i for key line i."""
    keys_path, rows_path = store_paths(store)
    if not os.path.exists(keys_path) or not os.path.exists(rows_path):
        for path in (keys_path, rows_path):
            write_atomic(path, b"")
        return {}
    with open(keys_path, "rb") as f:
        data = f.read()
    complete = data[: data.rfind(b"\n") + 1]
    keys = complete.decode("ascii").split("\n")[:-1]
    row_bytes = 4 * width
    n = min(len(keys), os.path.getsize(rows_path) // row_bytes)
    if n != len(keys) or len(complete) != len(data) or os.path.getsize(rows_path) != n * row_bytes:
        log(f"teacher store: keeping the {n} complete rows an interrupted append left")
        write_atomic(keys_path, "".join(k + "\n" for k in keys[:n]).encode("ascii"))
        os.truncate(rows_path, n * row_bytes)
    return {k: i for i, k in enumerate(keys[:n])}


def write_pending(path, texts):
    """`key<TAB>text` lines, the texts the teacher is asked for (no text holds a tab or a newline: clean())."""
    write_atomic(path, "".join(f"{text_key(t)}\t{t}\n" for t in texts))


def read_pending(path):
    with open(path, encoding="utf-8") as f:
        return [tuple(line.rstrip("\n").split("\t", 1)) for line in f]


def append(store, pending_path, width, embed, chunk=CHUNK):
    """Embeds the pending texts the store lacks, CHUNK at a time, appending each chunk's rows and then its keys;
    `embed(texts, progress)` returns len(texts) rows as little-endian F32 bytes. Called by the teacher's process."""
    have = load_keys(store, width)
    todo, seen = [], set(have)
    for key, text in read_pending(pending_path):
        if key not in seen and key == text_key(text):
            seen.add(key)
            todo.append((key, text))
    keys_path, rows_path = store_paths(store)
    bar = Progress("teacher", len(todo))
    with open(rows_path, "ab") as rows, open(keys_path, "ab") as keys:
        for at in range(0, len(todo), chunk):
            part = todo[at : at + chunk]
            data = embed([t for _, t in part], lambda done, at=at: bar.show(at + done))
            if len(data) != 4 * width * len(part):
                sys.exit(f"teacher store: {len(data)} bytes for {len(part)} rows of width {width}")
            rows.write(data)
            rows.flush()
            keys.write("".join(k + "\n" for k, _ in part).encode("ascii"))
            keys.flush()
    bar.close()


def read_row(f, row, width):
    """Row `row` of an open rows.f32."""
    f.seek(4 * width * row)
    return struct.unpack(f"<{width}f", f.read(4 * width))


# ------------------------------------------------------------------------------------------------ the texts


def text_items(out):
    """The text items of items.tsv: (item, group, split, role, text)."""
    rows = []
    with open(os.path.join(out, "items.tsv"), encoding="utf-8") as f:
        f.readline()
        for line in f:
            item, group, split, modality, role, content, _ = line.rstrip("\n").split("\t")
            if modality == "text":
                rows.append((int(item), int(group), split, role, content))
    return rows


def b64_number(digits):
    value = 0
    for c in digits:
        value = value * 64 + B64.index(c)
    return value


def gcide_paragraphs(entry):
    """The definitions and quotations of one GCIDE entry as plain sentences (its headword line, the source marks such
    as `[1913 Webster]`, cross-reference braces, sense numbers and attributions removed)."""
    import re

    body = entry.split("\n", 1)[1] if "\n" in entry else ""
    texts = []
    for paragraph in body.split("\n\n"):
        text = clean(re.sub(r"\[[^\]]*\]", " ", paragraph)).replace("{", "").replace("}", "")
        text = re.sub(r"^[^\[\]]*\]\s*", "", text)  # the end of an etymology the headword's line began
        text = re.sub(r"^(\d+\.|\([a-z]\))\s*", "", text)
        text = re.sub(r"^(\([A-Z][A-Za-z. &]*\)\s*)+", "", text)
        text = re.sub(r"\s*--\s*[A-Z][\w.,' &-]*$", "", text).strip()
        if 4 <= len(text.split()) <= 60 and text[:1].isalpha() and "?" not in text[:3]:
            texts.append(text)
    return texts


def gcide_texts():
    """Webster's 1913 definitions and quotations from dict-gcide (the dictzip file is gzip-readable)."""
    import gzip

    if not (os.path.exists(GCIDE) and os.path.exists(GCIDE_INDEX)):
        log(f"{GCIDE} is missing (scripts/setup-teacher.sh installs dict-gcide): no GCIDE texts")
        return []
    with gzip.open(GCIDE) as f:
        data = f.read()
    texts = []
    with open(GCIDE_INDEX, encoding="utf-8") as f:
        for line in f:
            word, offset, length = line.rstrip("\n").split("\t")
            if word.startswith("00-database"):
                continue
            begin = b64_number(offset)
            texts += gcide_paragraphs(data[begin : begin + b64_number(length)].decode("utf-8", "replace"))
    return texts


def description_texts():
    """Package descriptions: each summary line (three words or more) `apt-cache dumpavail` prints, and the first
    paragraph of the long descriptions the package lists and dpkg's status hold (apt keeps most long ones in
    translation files, which a minimal system lacks)."""
    try:
        dump = subprocess.run(["apt-cache", "dumpavail"], capture_output=True, text=True, errors="replace").stdout
    except OSError:
        log("apt-cache is missing: no package descriptions")
        dump = ""
    if os.path.exists("/var/lib/dpkg/status"):
        with open("/var/lib/dpkg/status", encoding="utf-8", errors="replace") as f:
            dump += "\n\n" + f.read()
    texts = []
    for record in dump.split("\n\n"):
        lines = record.split("\n")
        for at, line in enumerate(lines):
            if line.startswith("Description:"):
                summary = clean(line[len("Description:") :])
                if len(summary.split()) >= 3:
                    texts.append(summary)
                long = []
                for more in lines[at + 1 :]:
                    if not more.startswith(" ") or more == " .":
                        break
                    long.append(more)
                text = clean(" ".join(long))
                if 6 <= len(text.split()) <= 80:
                    texts.append(text)
                break
    return texts


def fortune_texts():
    """The fortunes-min cookies (fortunes, literature, riddles), `%`-separated."""
    texts = []
    for name in ("fortunes", "literature", "riddles"):
        path = os.path.join(FORTUNES, name)
        if not os.path.exists(path):
            log(f"{path} is missing (scripts/setup-teacher.sh installs fortunes-min)")
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for cookie in f.read().split("\n%\n"):
                text = clean(cookie.replace("%", " "))
                if 3 <= len(text.split()) <= 80:
                    texts.append(text)
    return texts


def extra_texts(limit):
    """(source, text) of the other English Debian ships, at most `limit` per source (0: none), drawn by
    fraction("extra", source, text) so a larger limit keeps the smaller one's texts. All are train."""
    result = []
    for source, read in (("gcide", gcide_texts), ("debian-description", description_texts),
                         ("fortune", fortune_texts)):
        if not limit:
            break
        texts = sorted(set(read()), key=lambda t: fraction("extra", source, t))[:limit]
        result += [(source, t) for t in sorted(texts)]
    return result


# ------------------------------------------------------------------------------------------------ held-out pairs


def edge_partners(out, groups):
    """Pairs of the given groups joined by an edge of edges.tsv (any relation), each once."""
    pairs = set()
    with open(os.path.join(out, "edges.tsv"), encoding="utf-8") as f:
        f.readline()
        for line in f:
            _, _, a, b, _ = line.split("\t")
            a, b = int(a), int(b)
            if a < b and a in groups and b in groups:
                pairs.add((a, b))
    return sorted(pairs)


def held_out_pairs(out, items, count):
    """`count` pairs of test text items, a third of each kind: `synset` (two texts of one test synset), `related` (two
    test synsets an edge joins: sister terms, antonyms, similar-to, a hypernym), `random` (two test synsets). Draws are
    by fraction(), so the pairs depend on the data alone. Returns (kind, item_a, item_b)."""
    by_group = {}
    for item, group, split, role, _ in items:
        if split == "test" and role != "caption":
            by_group.setdefault(group, []).append(item)
    groups = sorted(by_group)
    pick = lambda key, choices: choices[int(fraction(*key) * len(choices))]
    candidates = {
        "synset": [(a, b) for g in groups for i, a in enumerate(by_group[g]) for b in by_group[g][i + 1 :]],
        "related": [(pick(("pair", a, b, 0), by_group[a]), pick(("pair", a, b, 1), by_group[b]))
                    for a, b in edge_partners(out, set(groups))],
        "random": [],
    }
    if len(groups) > 1:
        for n in range(4 * count):
            a, b = pick(("random", n, 0), groups), pick(("random", n, 1), groups)
            if a != b:
                candidates["random"].append((pick(("pair", a, b, 0), by_group[a]), pick(("pair", a, b, 1), by_group[b])))
    chosen, taken = [], set()
    for at, kind in enumerate(PAIR_KINDS):
        quota = (count - len(chosen)) // (len(PAIR_KINDS) - at)
        ranked = sorted(set(candidates[kind]), key=lambda p: fraction("held-out pair", kind, *p))
        fresh = [p for p in ranked if p not in taken and p[::-1] not in taken][:quota]
        taken.update(fresh)
        chosen += [(kind, a, b) for a, b in fresh]
    return chosen


# ------------------------------------------------------------------------------------------------ the stage


def teacher_info(command):
    """The teacher's {"name", "sha256", "width"}, from its `info` command."""
    answer = subprocess.run(command + ["info"], capture_output=True, text=True)
    if answer.returncode != 0:
        sys.exit(f"prepare: the teacher ({' '.join(command)}) failed: {answer.stderr.strip()[-400:]}\n"
                 "prepare: scripts/setup-teacher.sh makes its environment")
    return json.loads(answer.stdout)


def open_store(store, info):
    """The store's rows by key; a store of another teacher (name, hash or width) is emptied first."""
    os.makedirs(store, exist_ok=True)
    path = os.path.join(store, "teacher.json")
    if os.path.exists(path):
        with open(path) as f:
            if json.load(f) != info:
                log(f"teacher store: {store} holds another teacher's rows; starting it again")
                for name in store_paths(store):
                    write_atomic(name, b"")
    write_atomic(path, json.dumps(info) + "\n")
    return load_keys(store, info["width"])


def embed_missing(command, store, info, texts, limit=None):
    """Asks the teacher for the texts the store lacks, in the order given, at most `limit` of them (None: all);
    (embedded, seconds)."""
    have = open_store(store, info)
    missing = [t for t in dict.fromkeys(texts) if text_key(t) not in have][:limit]
    if not missing:
        return 0, 0.0
    pending = os.path.join(store, "pending.tsv")
    write_pending(pending, missing)
    log(f"teacher: {len(missing)} texts to embed ({len(have)} in the store)")
    start = time.time()
    if subprocess.run(command + ["append", pending, store]).returncode != 0:
        sys.exit("prepare: the teacher failed; run it again to resume (the store keeps every finished chunk)")
    os.remove(pending)
    return len(missing), time.time() - start


def write_pairs(out, store, info, items, rows, count):
    """teacher/pairs.tsv: the held-out pairs with the teacher's cosines; their number by kind."""
    text_of = {item: (text, rows[text_key(text)]) for item, _, _, _, text in items}
    lines = []
    with open(store_paths(store)[1], "rb") as f:
        for n, (kind, a, b) in enumerate(held_out_pairs(out, items, count)):
            u, v = read_row(f, text_of[a][1], info["width"]), read_row(f, text_of[b][1], info["width"])
            cosine = sum(x * y for x, y in zip(u, v)) / max(1e-12, sum(x * x for x in u) * sum(y * y for y in v)) ** 0.5
            lines.append((n, kind, a, b, round(cosine, 6), text_of[a][0], text_of[b][0]))
    write_atomic(os.path.join(store, "pairs.tsv"),
                 tsv(lines, ["pair", "kind", "item_a", "item_b", "cosine", "text_a", "text_b"]))
    return {kind: sum(line[1] == kind for line in lines) for kind in PAIR_KINDS}


def stage(out, command, extra_limit, pair_count, limit=None, family_limit=0):
    """The teacher stage: embeds what is missing (at most `limit` texts now; None: all), then writes
    teacher/{items,extra,families,pairs}.tsv and manifest.json over the texts the store holds. The texts go to the teacher
    WordNet's first, each part in the order of its content keys, so that the rows of a store stopped early (a
    `limit`, an interruption) are a uniform sample of every role and split; the teacher sorts each chunk by length."""
    start = time.time()
    store = os.path.join(out, "teacher")
    info = teacher_info(command)
    items = text_items(out)
    extras = extra_texts(extra_limit)
    families = teacher_families.families(items, extras, family_limit)
    log(f"teacher: {info['name']} ({info['width']} wide), {len(items)} text items, {len(extras)} other texts, "
        f"{len(families)} sentence families")
    ordered = sorted((t for *_, t in items), key=text_key) + sorted((t for _, t in extras), key=text_key)
    ordered += sorted({t for family in families for t in family[1:]}, key=text_key)
    embedded, seconds = embed_missing(command, store, info, ordered, limit)
    rows = load_keys(store, info["width"])
    absent = [t for t in ordered if text_key(t) not in rows]
    if absent and limit is None:
        sys.exit(f"prepare: the teacher store lacks {len(absent)} texts (first: {absent[0]!r})")
    if absent:
        log(f"teacher: a partial store: {len(absent)} of {len(ordered)} texts have no row yet (their items train "
            "without the teacher); run --teacher again without --teacher-limit to complete it")
        items = [item for item in items if text_key(item[-1]) in rows]
        extras = [extra for extra in extras if text_key(extra[1]) in rows]
        families = [family for family in families if all(text_key(t) in rows for t in family)]
    write_atomic(os.path.join(store, "items.tsv"),
                 tsv([(item, rows[text_key(t)]) for item, *_, t in items], ["item", "row"]))
    write_atomic(os.path.join(store, "extra.tsv"),
                 tsv([(n, s, "train", rows[text_key(t)], t) for n, (s, t) in enumerate(extras)],
                     ["extra", "source", "split", "row", "content"]))
    write_atomic(os.path.join(store, "families.tsv"),
                 tsv([(n, m, "train", rows[text_key(t)], t) for n, family in enumerate(families)
                      for m, t in enumerate(family)], ["family", "member", "split", "row", "content"]))
    pairs = write_pairs(out, store, info, items, rows, pair_count)
    manifest = {"teacher": info, "rows": len(rows), "row_bytes": 4 * info["width"], "complete": not absent,
                "counts": {"items": len(items), "extra": len(extras), "families": len(families), "pairs": pairs,
                           "extra_by_source": {s: n for s, n in Counter(s for s, _ in extras).items()}},
                "config": {"extra_limit": extra_limit, "family_limit": family_limit, "pairs": pair_count, "chunk": CHUNK, "limit": limit},
                "timings": {"embedded_now": embedded, "embed_s": round(seconds, 1),
                            "texts_per_s": round(embedded / seconds, 1) if seconds else None,
                            "stage_s": round(time.time() - start, 1)}}
    write_atomic(os.path.join(store, "manifest.json"), json.dumps(manifest, indent=1) + "\n")
    log(f"teacher: {embedded} texts embedded now in {seconds:.0f} s; {len(rows)} rows, pairs {pairs}")


def default_command(repo):
    """The teacher's command line: UFORM_TEACHER (shell words) or the venv's python running teacher.py."""
    if os.environ.get("UFORM_TEACHER"):
        return shlex.split(os.environ["UFORM_TEACHER"])
    return [os.path.join(repo, "target", "teacher", "venv", "bin", "python"), os.path.join(HERE, "teacher.py")]
