#!/usr/bin/env python3
"""Writes the trainer's goldens, tests/data/train/, from the PyTorch training reference on the tiny checkpoint.

    python make_train_goldens.py            # rewrite tests/data/train/*
    python make_train_goldens.py --check    # regenerate in memory, compare numerically with the files

One mixed batch (texts in bags with attract, repel and ignore edges, late-interaction queries and documents,
choice items, an image, an audio clip, a video) is described exactly in `batch.json`, with the masks injected;
`train.safetensors` holds what the C++ trainer is checked against: each term and the joint loss at step 0, the
gradient of every trained tensor, every contrastive and late-interaction variant's loss and gradient with
respect to its inputs, 20 AdamW steps' losses and the tensors after them, fitted temperatures, and checks of
the seeded generator and the mask sampler. tools/reference/README.md ("The training goldens") gives the format.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import struct
import sys
import tempfile
import wave
import zlib

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import uform_reference as ref  # noqa: E402
from make_goldens import CHECKPOINT, ROOT, Lcg, printable_text, test_image  # noqa: E402
from train_batch import Batch, Item, sample_mask  # noqa: E402
from train_calibrate import fit_temperatures  # noqa: E402
from train_losses import FORMS, NEGATIVES, TERMS, Objective, distill, info_nce, joint, late_interaction, \
    relations, sigmoid_pairs, term_values, terms  # noqa: E402
from train_model import SCALE_CAP, TrainableModel, scalar_inits, seeded_value  # noqa: E402
from train_optim import Optimizer, Schedule  # noqa: E402
from train_random import Stream, fnv1a64  # noqa: E402

OUT = os.path.join(ROOT, "tests", "data", "train")
GOLDENS_VERSION = "1"
FULL_LIMIT = 4096  # tensors with at most this many values are stored whole, larger ones as sketches
SKETCH_WIDTH = 1024
STEPS = 20
MASK_SEED = 2026
INIT_SEED = 42
BUDGET = 1 << 20
DISTILL_WIDTH = 7  # a teacher narrower than the student: the term never compares the two widths
DISTILL_TEMPERATURES = ((0.05, 0.05), (0.1, 0.02), (1.0, 1.0))  # (student, teacher)

OBJECTIVE = Objective(terms=TERMS, form="info-nce", negatives="mesh-and-hard", hard_negative_weight=2.0,
                      weights={"masking": 1.0, "contrastive": 0.5, "late_interaction": 0.7, "choices": 0.3})
SCHEDULE = Schedule(steps=STEPS, warmup_steps=4, learning_rate=2e-3, min_learning_rate=2e-4, weight_decay=0.1,
                    clip_norm=2.0)

TEXTS = {  # item index: (text, bag, side)
    0: (b"a cat sits on the mat", 0, "none"),
    1: (b"the cat is on the mat", 0, "none"),
    2: (b"a dog runs in the park", 1, "none"),
    3: (b"dogs play outside all day", 1, "none"),
    4: (b"stock prices fell sharply", 2, "none"),
    5: (b"", 3, "none"),
    6: (b"where is the cat?", 4, "query"),
    7: (b"the cat sleeps on a warm mat", 4, "document"),
    8: (b"bananas are yellow fruit", 5, "document"),
    9: (b"cats like mats", 4, "document"),
    15: (b"yellow fruit", 5, "query"),
}
CHOICES = {  # item index: (prompt, legal bytes, targets, bag)
    10: (b"Is the sky blue? Answer y or n: ", b"yn", (0.875, 0.125), 6),
    11: (b"Pick one of A, B, C, D: ", b"ABCD", (0.0, 0.0, 1.0, 0.0), 7),
}
MEDIA_BAGS = {12: 0, 13: 8, 14: 9}  # the image, the audio clip, the video
ATTRACT = [(1, 0, 0.25), (2, 3, 0.5), (6, 9, 0.3), (13, 2, 2.0), (14, 12, 1.0)]
REPEL = [(0, 4, 1.5), (6, 8, 1.0), (12, 4, 0.5), (15, 7, 2.0)]
IGNORE = [(0, 2, None), (7, 8, None), (14, 1, None)]
CALIBRATION = [  # held-out choice items: (prompt, legal bytes, label targets, group)
    (b"The sky is blue. Answer y or n: ", b"yn", (1.0, 0.0), 0),
    (b"Fire is cold. Answer y or n: ", b"yn", (0.0, 1.0), 0),
    (b"Water is wet. Answer y or n: ", b"yn", (1.0, 0.0), 0),
    (b"Pick C of A, B, C, D: ", b"ABCD", (0.0, 0.0, 1.0, 0.0), 1),
    (b"Pick one of A, B, C, D: ", b"ABCD", (0.0, 0.0, 1.0, 0.0), 1),
    (b"Pick B of A, B, C, D: ", b"ABCD", (0.0, 1.0, 0.0, 0.0), 1),
]
AUDIO_RATE = 16000


# ------------------------------------------------------------------------------------------- the batch


def image_pixels() -> np.ndarray:
    """33x50 gray: the inference goldens' gradient plus noise (grid 6x9, 54 tokens)."""
    return test_image(33, 50, 1, 41)


def audio_samples() -> np.ndarray:
    """0.3 s at 16 kHz (30 frames, 8 patches): a 440 Hz tone and LCG noise, quantised to 16 bits, as F32 x/32768."""
    n = np.arange(AUDIO_RATE * 3 // 10, dtype=np.float64)
    x = 0.4 * np.sin(2 * math.pi * 440.0 * n / AUDIO_RATE) + 0.1 * (Lcg(43).uniform(n.size) - 0.5)
    return (np.round(x * 32767).astype(np.int16).astype(np.float32) / 32768).astype(np.float32)


def video_clip():
    """Three 16x24 frames at 0, 1, 2 s of a 2.5 s clip: frames 0 and 1 sampled (one tubelet, grid 3x4)."""
    return [test_image(16, 24, 3, 44 + k) for k in range(3)], [0.0, 1.0, 2.0], 2.5


def build_batch() -> Batch:
    frames, stamps, duration = video_clip()
    n = len(TEXTS) + len(CHOICES) + len(MEDIA_BAGS)
    items, bags, sides = [None] * n, [0] * n, ["none"] * n
    for i, (text, bag, side) in TEXTS.items():
        items[i], bags[i], sides[i] = Item("text", text), bag, side
    for i, (prompt, legal, targets, bag) in CHOICES.items():
        items[i], bags[i] = Item("text", prompt, choices=legal, targets=targets), bag
    items[12] = Item("image", pixels=image_pixels())
    items[13] = Item("audio", samples=audio_samples(), sample_rate=AUDIO_RATE)
    items[14] = Item("video", frames=frames, timestamps=stamps, duration=duration)
    for i, bag in MEDIA_BAGS.items():
        bags[i] = bag
    return Batch(items, bags=bags, attract=ATTRACT, repel=REPEL, ignore=IGNORE, sides=sides)


def batch_masks(batch: Batch) -> dict:
    return {i: sample_mask(MASK_SEED, 0, i, it.text) for i, it in enumerate(batch.items) if it.is_maskable}


def png_gray(pixels: np.ndarray) -> bytes:
    """An 8-bit grayscale PNG (filter 0 on every row, zlib level 9): decodes to exactly these pixels."""
    h, w = pixels.shape[:2]

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + pixels[r, :, 0].tobytes() for r in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def wav_bytes(samples: np.ndarray) -> bytes:
    """16-bit PCM mono at 16 kHz; its samples decode to exactly `samples` (x * 32768 are integers)."""
    out = io.BytesIO()
    with wave.open(out, "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(AUDIO_RATE)
        f.writeframes(np.round(samples.astype(np.float64) * 32768).astype("<i2").tobytes())
    return out.getvalue()


def edges_csr(edges: list, n: int) -> dict:
    """An edge list as the C API's `uform_edges_t`: offsets, ids, weights (empty when every weight is None)."""
    rows = [[(j, w) for i2, j, w in edges if i2 == i] for i in range(n)]
    offs = [0]
    for r in rows:
        offs.append(offs[-1] + len(r))
    weights = [w for r in rows for _, w in r]
    return {"offsets": offs, "ids": [j for r in rows for j, _ in r],
            "weights": [] if all(w is None for w in weights) else weights}


def describe(batch: Batch, masks: dict) -> dict:
    """batch.json: everything a C++ or Rust test needs to feed the identical batch."""
    n = len(batch.items)
    items = []
    for i, it in enumerate(batch.items):
        d = {"index": i, "modality": it.modality}
        if it.modality == "text":
            d["text"] = it.text.decode("ascii")
            if it.is_choice:
                d["choices"] = it.choices.decode("ascii")
                d["targets"] = list(it.targets)
        elif it.modality == "image":
            d.update(tensor="image.pixels", shape=list(it.pixels.shape), file="image.png")
        elif it.modality == "audio":
            d.update(tensor="audio.samples", sample_rate=it.sample_rate, file="audio.wav")
        else:
            d.update(tensor="video.frames", shape=[len(it.frames), *it.frames[0].shape],
                     timestamps=it.timestamps, duration=it.duration)
        items.append(d)
    return {
        "goldens_version": GOLDENS_VERSION,
        "checkpoint": "tests/data/tiny.safetensors",
        "items": items,
        "bags": batch.bags,
        "relations": {k: edges_csr(getattr(batch, k), n) for k in ("attract", "repel", "ignore")},
        "sides": batch.sides,
        "masks": {"seed": MASK_SEED, "step": 0, "note": "injected at every step; item: [[position, input token]]",
                  "items": {str(i): [list(p) for p in m] for i, m in sorted(masks.items())}},
        "objective": {"terms": list(OBJECTIVE.terms), "form": OBJECTIVE.form, "negatives": OBJECTIVE.negatives,
                      "hard_negative_weight": OBJECTIVE.hard_negative_weight, "weights": OBJECTIVE.weights},
        "scalars": scalar_inits(OBJECTIVE.form),
        "schedule": {"steps": SCHEDULE.steps, "warmup_steps": SCHEDULE.warmup_steps,
                     "learning_rate": SCHEDULE.learning_rate, "min_learning_rate": SCHEDULE.min_learning_rate,
                     "weight_decay": SCHEDULE.weight_decay, "clip_norm": SCHEDULE.clip_norm, "applied": STEPS},
        "optimizer": {"kind": "AdamW", "beta1": 0.9, "beta2": 0.95, "eps": 1e-8},
        "calibration": [{"text": p.decode("ascii"), "choices": c.decode("ascii"), "targets": list(t), "group": g}
                        for p, c, t, g in CALIBRATION],
    }


# ------------------------------------------------------------------------------------------- sketches


def sketch(name: str, values: np.ndarray) -> np.ndarray:
    """The count sketch of a tensor (README): element e (row-major) adds +-value to bucket
    `((w >> 32) * 1024) >> 32`, w = draw e of Stream(0, "sketch/" + name), minus when w is odd; F64."""
    w = Stream(0, "sketch/" + name).draws(0, values.size)
    bucket = ((w >> np.uint64(32)) * np.uint64(SKETCH_WIDTH)) >> np.uint64(32)
    sign = np.where((w & np.uint64(1)) == 1, -1.0, 1.0)
    return np.bincount(bucket.astype(np.int64), weights=sign * values.reshape(-1).astype(np.float64),
                       minlength=SKETCH_WIDTH)


def tensor_entries(prefix: str, name: str, values: np.ndarray) -> list:
    """`prefix.name` F32 whole (at most FULL_LIMIT values), else `prefix.name.sketch` F64 [SKETCH_WIDTH]."""
    if values.size <= FULL_LIMIT:
        return [(f"{prefix}.{name}", values.astype(np.float32))]
    return [(f"{prefix}.{name}.sketch", sketch(name, values))]


def f32(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.float32).numpy()


def grads_of(model) -> dict:
    return {n: p.grad.detach().clone() if p.grad is not None else torch.zeros_like(p)
            for n, p in model.params.items()}


# ------------------------------------------------------------------------------------------- the runs


def contrastive_variants(z: torch.Tensor, batch: Batch):
    """Each (form, negatives): the term's value and its gradient in z, log_scale and bias (initial scalars)."""
    losses, gz, gs = [], [], []
    for form in FORMS:
        for negatives in NEGATIVES:
            W, C = relations(batch, negatives, OBJECTIVE.hard_negative_weight)
            zz = z.detach().clone().requires_grad_(True)
            init = scalar_inits(form)
            ls = torch.tensor(init["trainer.contrastive.log_scale"], dtype=torch.float32, requires_grad=True)
            b = torch.tensor(init["trainer.contrastive.bias"], dtype=torch.float32, requires_grad=True)
            scale = torch.clamp(torch.exp(ls), max=SCALE_CAP)
            _, per = info_nce(zz, W, C, scale) if form == "info-nce" else sigmoid_pairs(zz, W, C, scale, b)
            loss = per.sum() / len(per)
            loss.backward()
            losses.append(float(loss.detach()))
            gz.append(f32(zz.grad))
            gs.append([float(ls.grad), float(b.grad) if b.grad is not None else 0.0])
    return np.array(losses), np.stack(gz), np.array(gs)


def late_variants(token_vectors: dict, batch: Batch):
    """Each negatives: the late-interaction term and its gradient in the token vectors and log_scale."""
    items = sorted(token_vectors)
    losses, gt, gs = [], [], []
    for negatives in NEGATIVES:
        W, C = relations(batch, negatives, OBJECTIVE.hard_negative_weight)
        tv = {i: token_vectors[i].detach().clone().requires_grad_(True) for i in items}
        ls = torch.tensor(math.log(1 / 0.07), dtype=torch.float32, requires_grad=True)
        _, per = late_interaction(tv, batch, W, C, torch.clamp(torch.exp(ls), max=SCALE_CAP))
        loss = per.sum() / len(per)
        loss.backward()
        losses.append(float(loss.detach()))
        gt.append(np.concatenate([f32(tv[i].grad) for i in items]))
        gs.append(float(ls.grad))
    return np.array(losses), np.stack(gt), np.array(gs)


def clear_grads(model):
    for p in model.params.values():
        p.grad = None


def upstream_inputs(fwd) -> list:
    """The forward's outputs the losses read, each retaining its gradient for `upstream_entries`: z, the token
    vectors (items ascending), the masked items' logits (items ascending), the choice items' legal-byte logits."""
    groups = [[fwd.z], [fwd.token_vectors[i] for i in sorted(fwd.token_vectors)],
              [fwd.mask_logits[i] for i in sorted(fwd.mask_logits)],
              [fwd.choice_logits[i] for i in sorted(fwd.choice_logits)]]
    for group in groups:
        for t in group:
            t.retain_grad()
    return groups


def upstream_entries(fwd, groups) -> list:
    """The joint loss's gradients at the trunk's outputs (what a trunk's backward starts from): `upstream.z`,
    `upstream.token_vectors` (laid out as `step0.token_vectors`), `upstream.mask_logits` [M, 256] (rows in
    batch.json's masks order), `upstream.choice_logits` (the legal bytes' logits, flattened in item order)."""
    def cat(group):
        return np.concatenate([f32(t.grad if t.grad is not None else torch.zeros_like(t)).reshape(-1 if t.ndim < 2
                               else t.shape[0], *t.shape[1:]) for t in group])
    return [("upstream.z", cat(groups[0])), ("upstream.token_vectors", cat(groups[1])),
            ("upstream.mask_logits", cat(groups[2])), ("upstream.choice_logits", cat(groups[3]))]


def frontend_entries(model, batch: Batch, masks: dict) -> list:
    """The media items' front-end inputs as the trunk reads them: patch vectors and (t, h, w) positions."""
    out = []
    for i, it in enumerate(batch.items):
        if it.modality == "text":
            continue
        seg = model.segment(it, masks.get(i))
        vectors = seg.extras["tubelets" if it.modality == "video" else "patches"]
        out += [(f"step0.patches.{it.modality}", f32(vectors)), (f"step0.positions.{it.modality}",
                                                                np.asarray(seg.positions.numpy(), dtype=np.int64))]
    return out


def distill_teacher(batch: Batch) -> np.ndarray:
    """Seeded teacher rows, one per item of the batch, of DISTILL_WIDTH columns; the media items' rows are zero (no
    teacher), and two texts share a direction (a near-duplicate the student should learn)."""
    rng = Lcg(36)
    rows = (rng.uniform(len(batch.items) * DISTILL_WIDTH) * 2 - 1).astype(np.float32).reshape(-1, DISTILL_WIDTH)
    for i, item in enumerate(batch.items):
        if item.modality != "text":
            rows[i] = 0
    rows[1] = rows[0] * np.float32(3) + np.float32(0.01)
    return rows


def distill_variants(z: torch.Tensor, teacher: np.ndarray):
    """Each (student, teacher) temperature pair: the distillation term and its gradient in z."""
    losses, gz = [], []
    for student_temperature, teacher_temperature in DISTILL_TEMPERATURES:
        zz = z.detach().clone().requires_grad_(True)
        _, per = distill(zz, torch.from_numpy(teacher), student_temperature, teacher_temperature)
        loss = per.sum() / len(per)
        loss.backward()
        losses.append(float(loss.detach()))
        gz.append(f32(zz.grad))
    return np.array(losses), np.stack(gz)


def step0_entries(model, batch: Batch, masks: dict, names: list, desc: dict) -> list:
    """Step 0: the embeddings and token vectors, each term, the joint loss's gradient of every tensor, each
    term's own gradient norms, and every contrastive and late-interaction variant on those inputs."""
    fwd = model.forward(batch, masks)
    parts = terms(model, fwd, batch, OBJECTIVE)
    values = term_values(parts)
    li_items = sorted(fwd.token_vectors)
    desc["step0.token_vector_items"] = li_items
    out = [("step0.z", f32(fwd.z)),
           ("step0.token_vectors", np.concatenate([f32(fwd.token_vectors[i]) for i in li_items])),
           ("step0.token_vector_offsets", np.cumsum([0] + [len(fwd.token_vectors[i]) for i in li_items]))]
    term_norms = []
    for k in TERMS:
        clear_grads(model)
        values[k].backward(retain_graph=True)
        term_norms.append([float(g.double().norm()) for g in grads_of(model).values()])
    clear_grads(model)
    loss = joint(parts, OBJECTIVE)
    upstream = upstream_inputs(fwd)
    loss.backward()
    grads = grads_of(model)
    out += upstream_entries(fwd, upstream) + frontend_entries(model, batch, masks)
    clear_grads(model)
    out += [("step0.terms", np.array([float(values[k].detach()) for k in TERMS] + [float(loss.detach())])),
            ("grad.norms", np.array([float(grads[n].double().norm()) for n in names])),
            ("grad.term_norms", np.array(term_norms))]
    for n in names:
        out += tensor_entries("grad", n, grads[n].numpy())
    cl, cz, cs = contrastive_variants(fwd.z, batch)
    ll, lt, lgs = late_variants(fwd.token_vectors, batch)
    teacher = distill_teacher(batch)
    dl, dz = distill_variants(fwd.z, teacher)
    desc["variants"] = {"contrastive": [[f, n] for f in FORMS for n in NEGATIVES], "late_interaction": list(NEGATIVES),
                        "distill": [list(t) for t in DISTILL_TEMPERATURES]}
    return out + [("variants.distill.teacher", teacher), ("variants.distill", dl), ("variants.distill.grad_z", dz),
                  ("variants.contrastive", cl), ("variants.contrastive.grad_z", cz),
                  ("variants.contrastive.grad_scalars", cs), ("variants.late_interaction", ll),
                  ("variants.late_interaction.grad_token_vectors", lt),
                  ("variants.late_interaction.grad_log_scale", lgs)]


def trajectory_entries(model, batch: Batch, masks: dict, names: list) -> list:
    """STEPS AdamW steps on the same batch and masks: per step the terms, the joint loss, the gradient norm
    before clipping and the rate; then every tensor."""
    opt = Optimizer(model.params, SCHEDULE)
    rows = []
    for k in range(STEPS):
        parts = terms(model, model.forward(batch, masks), batch, OBJECTIVE)
        values = term_values(parts)
        loss = joint(parts, OBJECTIVE)
        loss.backward()
        stats = opt.step(k)
        rows.append([float(values[t].detach()) for t in TERMS]
                    + [float(loss.detach()), stats["gradient_norm"], stats["learning_rate"]])
    out = [("trajectory", np.array(rows)),
           ("after.norms", np.array([float(model.params[n].detach().double().norm()) for n in names]))]
    for n in names:
        out += tensor_entries("after", n, model.params[n].detach().numpy())
    return out


def calibration_entries(model) -> list:
    """The held-out choice items' logits with the model frozen, and the temperatures fitted to them."""
    cal = Batch([Item("text", p, choices=c, targets=t) for p, c, t, _ in CALIBRATION])
    with torch.no_grad():
        fwd = model.forward(cal, {})
    logits = [fwd.choice_logits[i].numpy().astype(np.float32) for i in range(len(CALIBRATION))]
    temps = fit_temperatures(logits, [t for _, _, t, _ in CALIBRATION], [g for *_, g in CALIBRATION],
                             model.cfg.choice_groups)
    return [("calibration.logits", np.concatenate(logits)),
            ("calibration.logit_offsets", np.cumsum([0] + [len(x) for x in logits])),
            ("calibration.temperatures", temps)]


def generate(checkpoint: str) -> tuple:
    """Runs everything; answers (tensors [(name, array)], batch.json dict, media files {name: bytes})."""
    batch = build_batch()
    masks = batch_masks(batch)
    model = TrainableModel(checkpoint, form=OBJECTIVE.form)
    names = list(model.params)
    desc = describe(batch, masks)
    desc["parameters"] = [{"name": n, "shape": list(model.params[n].shape),
                           "stored": "whole" if model.params[n].numel() <= FULL_LIMIT else "sketch"} for n in names]
    it = batch.items
    tensors = [("image.pixels", it[12].pixels), ("audio.samples", it[13].samples),
               ("video.frames", np.stack(it[14].frames))]
    tensors += step0_entries(model, batch, masks, names, desc)
    tensors += trajectory_entries(model, batch, masks, names)
    tensors += calibration_entries(model)
    desc["generator_checks"] = generator_checks(model)
    tensors = [(n, np.asarray(a, dtype=np.int64) if np.asarray(a).dtype.kind == "i" else np.asarray(a))
               for n, a in tensors]
    media = {"image.png": png_gray(it[12].pixels), "audio.wav": wav_bytes(it[13].samples)}
    return tensors, desc, media


def generator_checks(model) -> dict:
    """Bit-exact checks of the generator: SplitMix64 draws, the seeded initial tensors, and the mask sampler."""
    seeded = {}
    for name, p in model.params.items():
        if name.startswith("trainer."):
            continue
        v = seeded_value(name, tuple(p.shape), INIT_SEED)
        seeded[name] = {"fnv1a64_f32_le": f"{fnv1a64(v.astype('<f4').tobytes()):016x}",
                        "first": [float(x) for x in v.reshape(-1)[:4]]}
    text = printable_text(300, 5)
    return {
        "splitmix64": {"seed": INIT_SEED, "label": "embed.byte.weight",
                       "draws_0_to_3": [f"{int(w):016x}" for w in Stream(INIT_SEED, "embed.byte.weight").draws(0, 4)]},
        "seeded_init": {"seed": INIT_SEED, "tensors": seeded},
        "mask_sampler": {"seed": MASK_SEED, "step": 3, "item": 5, "text": text.decode("ascii"),
                         "mask": [list(x) for x in sample_mask(MASK_SEED, 3, 5, text)]},
    }


# ------------------------------------------------------------------------------------------- files


def metadata(sha: str) -> dict:
    return {"uform.goldens": "train", "uform.goldens.version": GOLDENS_VERSION, "uform.version": ref.MODEL_VERSION,
            "checkpoint": "tests/data/tiny.safetensors", "checkpoint.sha256": sha,
            "generator": "tools/reference/make_train_goldens.py", "torch": torch.__version__,
            "batch": "batch.json", "layout": "tools/reference/README.md, 'The training goldens'"}


def write(folder: str, checkpoint: str) -> dict:
    tensors, desc, media = generate(checkpoint)
    os.makedirs(folder, exist_ok=True)
    sizes = {"train.safetensors": ref.write_safetensors(os.path.join(folder, "train.safetensors"), tensors,
                                                        metadata(ref.Model(checkpoint).sha256))}
    text = json.dumps(desc, indent=1) + "\n"
    with open(os.path.join(folder, "batch.json"), "w") as f:
        f.write(text)
    sizes["batch.json"] = len(text.encode())
    for name, data in media.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
        sizes[name] = len(data)
    return sizes


def compare(a_dir: str, b_dir: str) -> int:
    """Numeric comparison of two golden folders: relative Frobenius difference per tensor, batch.json equal."""
    def load(d):
        with open(os.path.join(d, "train.safetensors"), "rb") as f:
            return ref.read_safetensors(f.read())[1]

    a, b = load(a_dir), load(b_dir)
    worst, bad = 0.0, []
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            bad.append(name)
            continue
        x, y = a[name][1].double(), b[name][1].double()
        rel = float((x - y).norm() / max(float(y.norm()), 1e-30)) if x.shape == y.shape else math.inf
        worst = max(worst, rel)
        if rel > 1e-4:
            bad.append(f"{name} ({rel:.1e})")
    with open(os.path.join(a_dir, "batch.json")) as f1, open(os.path.join(b_dir, "batch.json")) as f2:
        same_json = f1.read() == f2.read()
    print(f"worst relative difference {worst:.1e}; batch.json {'equal' if same_json else 'DIFFERS'}")
    for name in bad:
        print(f"  differs: {name}")
    return 0 if same_json and not bad else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", default=CHECKPOINT)
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--check", action="store_true", help="regenerate into a temporary folder and compare")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    target = tempfile.mkdtemp() if args.check else args.out
    sizes = write(target, args.checkpoint)
    for name, size in sizes.items():
        print(f"{name}: {size} bytes")
    total = sum(sizes.values())
    print(f"total {total} bytes ({total / 2**20:.3f} MiB)")
    if total >= BUDGET:
        print("the training goldens exceed 1 MiB", file=sys.stderr)
        return 1
    return compare(target, args.out) if args.check else 0


if __name__ == "__main__":
    sys.exit(main())
