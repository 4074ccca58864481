#!/usr/bin/env python3
"""One framework's side of tools/bench/text_compare.py, run in a process of its own so that its peak RSS is its own.

    text_worker.py torch --checkpoint C --texts 32 --bytes 256 --threads 2 --repeats 5 [--bf16]
        [--device cuda [--compile]]
    text_worker.py onnx --model M.onnx --texts 32 --bytes 256 --threads 2 --repeats 5
    text_worker.py export --checkpoint C --texts 32 --bytes 256 --out M.onnx
    text_worker.py gemm --shape 2048x512x2048 --threads 2 --repeats 9

`torch` and `onnx` time embedding calls on the same texts as `uform_bench` (byte k of the batch is
`32 + splitmix64(k) % 95`) and print one JSON object: the median seconds per call, the peak RSS and the RSS
after the imports. `gemm` times PyTorch's F32 `torch.mm` of rows x depth by depth x columns, the shape of
`uform_bench`'s GEMM, and prints its median seconds the same way. `export` checks the dense model against
tools/reference/uform_reference.py (embedding cosines) and writes it as ONNX for one batch shape. The `onnx` mode
imports ONNX Runtime and NumPy only. `--device cuda` runs the torch mode on the GPU (scripts/gpu-check.sh), each timed
call ending in `torch.cuda.synchronize()`, and `--compile` wraps the module in `torch.compile` first (falling back to
eager mode, and saying so in the JSON, when compiling fails).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time

MASK64 = (1 << 64) - 1


def splitmix64(index: int) -> int:
    """SplitMix64's output for `index`, as tools/bench/text_bench.cpp computes it."""
    z = ((index + 1) * 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def text_ids(texts: int, length: int) -> list:
    """The benchmark's texts as rows of byte values: `texts` rows of `length`."""
    flat = [32 + splitmix64(k) % 95 for k in range(texts * length)]
    return [flat[i * length : (i + 1) * length] for i in range(texts)]


def rss_mib() -> float:
    """The current resident set in MiB, from /proc/self/status."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def time_calls(call, repeats: int) -> float:
    """Median seconds of `repeats` calls after one warm-up call."""
    call()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def dense_model(checkpoint: str, length: int):
    """The reference's weights as a dense, batched torch module for texts of `length` bytes (all equal), and the
    reference model itself."""
    import torch
    import torch.nn.functional as F

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
    from uform_reference import Model

    class DenseText(torch.nn.Module):
        """docs/model.md's text forward on a [batch, length] tensor of bytes, giving the embeddings: plain matrix
        products in the module's dtype (F32 weights hold the BF16 values exactly), the attention through
        `scaled_dot_product_attention`, RoPE with every section at the byte's index."""

        def __init__(self, cfg, weights: dict):
            super().__init__()
            self.cfg = cfg
            self.weights = torch.nn.ParameterDict(
                {name.replace(".", "_"): torch.nn.Parameter(t, requires_grad=False) for name, t in weights.items()}
            )
            half = cfg.head_dim // 2
            freq = torch.tensor([cfg.rope_theta ** (-2.0 * j / cfg.head_dim) for j in range(half)], dtype=torch.float64)
            angle = torch.arange(length, dtype=torch.float64)[:, None] * freq[None, :]
            self.register_buffer("cos", torch.cos(angle).float())
            self.register_buffer("sin", torch.sin(angle).float())

        def weight(self, name):
            return self.weights[name.replace(".", "_")]

        def norm(self, x, name):
            return x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.cfg.norm_eps) * self.weight(name)

        def rope(self, x):
            half = self.cfg.head_dim // 2
            x1, x2 = x[..., :half], x[..., half:]
            return torch.cat([x1 * self.cos - x2 * self.sin, x2 * self.cos + x1 * self.sin], dim=-1)

        def forward(self, ids):
            cfg, batch = self.cfg, ids.shape[0]
            x = F.embedding(ids, self.weight("embed.byte.weight"))
            for i in range(cfg.depth):
                p = f"blocks.{i}."
                qkv = F.linear(self.norm(x, p + "attn_norm.weight"), self.weight(p + "attn.qkv.weight"))
                q, k, v = qkv.view(batch, length, 3, cfg.heads, cfg.head_dim).permute(2, 0, 3, 1, 4)
                o = F.scaled_dot_product_attention(self.rope(q), self.rope(k), v)
                o = o.transpose(1, 2).reshape(batch, length, cfg.heads * cfg.head_dim)
                x = x + F.linear(o, self.weight(p + "attn.out.weight"))
                gate_up = F.linear(self.norm(x, p + "mlp_norm.weight"), self.weight(p + "mlp.gate_up.weight"))
                gate, up = gate_up.chunk(2, dim=-1)
                x = x + F.linear(F.silu(gate) * up, self.weight(p + "mlp.down.weight"))
            pooled = self.norm(x, "final_norm.weight").mean(dim=1)
            return F.normalize(F.linear(pooled, self.weight("head.embedding.weight")), dim=-1)

    reference = Model(checkpoint)
    needed = ("embed.byte.", "blocks.", "final_norm.", "head.embedding.")
    trunk = {name: t for name, t in reference.w.items() if name.startswith(needed)}
    return DenseText(reference.cfg, trunk).eval(), reference


def run_torch(args) -> dict:
    import torch

    torch.set_num_threads(args.threads)
    baseline = rss_mib()
    model = dense_model(args.checkpoint, args.bytes)[0]
    ids = torch.tensor(text_ids(args.texts, args.bytes), dtype=torch.long, device=args.device)
    model = model.to(args.device)
    if args.bf16:
        model = model.to(torch.bfloat16)
    compiled = False
    if args.compile:
        try:
            candidate = torch.compile(model)
            with torch.inference_mode():
                candidate(ids)
            model, compiled = candidate, True
        except Exception as error:  # noqa: BLE001 - any compiler failure falls back to eager mode
            print(f"torch.compile failed, timing eager mode: {error}", file=sys.stderr)

    def call():
        model(ids)
        if args.device != "cpu":
            torch.cuda.synchronize()

    with torch.inference_mode():
        seconds = time_calls(call, args.repeats)
    return {"seconds": seconds, "rss_after_import_mib": baseline, "device": args.device, "compiled": compiled}


def run_gemm(args) -> dict:
    import torch

    torch.set_num_threads(args.threads)
    baseline = rss_mib()
    rows, depth, columns = (int(part) for part in args.shape.split("x"))
    generator = torch.Generator().manual_seed(1)
    a = torch.randn(rows, depth, generator=generator)
    b = torch.randn(depth, columns, generator=generator)
    return {"seconds": time_calls(lambda: torch.mm(a, b), args.repeats), "rss_after_import_mib": baseline}


def run_onnx(args) -> dict:
    import numpy as np
    import onnxruntime as ort

    baseline = rss_mib()
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    ids = np.array(text_ids(args.texts, args.bytes), dtype=np.int64)
    seconds = time_calls(lambda: session.run(None, {name: ids}), args.repeats)
    return {"seconds": seconds, "rss_after_import_mib": baseline}


def min_cosine(a, b) -> float:
    """The smallest cosine between matching rows of `a` and `b`."""
    import torch

    return float(torch.nn.functional.cosine_similarity(a.float(), b.float(), dim=-1).min())


def export(args) -> dict:
    """Checks the dense model against the reference, then writes it as ONNX; returns the embedding cosines."""
    import numpy as np
    import onnxruntime as ort
    import torch

    model, reference = dense_model(args.checkpoint, args.bytes)
    rows = text_ids(args.texts, args.bytes)
    ids = torch.tensor(rows, dtype=torch.long)
    with torch.inference_mode():
        expected = reference.encode_texts([bytes(row) for row in rows])["embeddings"]
        f32 = model(ids)
    torch.onnx.export(model, (ids,), args.out, input_names=["ids"], output_names=["embeddings"], dynamo=True)
    session = ort.InferenceSession(args.out, providers=["CPUExecutionProvider"])
    onnx = torch.from_numpy(session.run(None, {"ids": ids.numpy().astype(np.int64)})[0])
    with torch.inference_mode():
        bf16 = model.to(torch.bfloat16)(ids)
    return {
        "cosine_f32": min_cosine(f32, expected),
        "cosine_bf16": min_cosine(bf16, expected),
        "cosine_onnx": min_cosine(onnx, expected),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["torch", "onnx", "export", "gemm"])
    parser.add_argument("--checkpoint", help="a UForm checkpoint (torch, export)")
    parser.add_argument("--model", help="an ONNX file written by `export` (onnx)")
    parser.add_argument("--out", help="where `export` writes the ONNX file")
    parser.add_argument("--texts", type=int, help="texts per call (torch, onnx, export)")
    parser.add_argument("--bytes", type=int, help="bytes per text (torch, onnx, export)")
    parser.add_argument("--shape", default="2048x512x2048", help="gemm: rows x depth x columns")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--bf16", action="store_true", help="torch: weights and activations in BF16")
    parser.add_argument("--device", default="cpu", help="torch: where the module runs (cpu, cuda)")
    parser.add_argument("--compile", action="store_true", help="torch: wrap the module in torch.compile")
    args = parser.parse_args()
    if args.mode != "gemm" and (args.texts is None or args.bytes is None):
        parser.error(f"{args.mode} needs --texts and --bytes")
    result = {"torch": run_torch, "onnx": run_onnx, "export": export, "gemm": run_gemm}[args.mode](args)
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
