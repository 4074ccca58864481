#!/usr/bin/env python3
"""PyTorch's side of tools/bench/train_compare.py: one full training step of the small geometry, run in a process of
its own so that its peak RSS is its own.

    train_worker.py step --checkpoint C --texts 32 --bytes 256 --threads 2 --steps 3 [--bf16] [--device cuda]
                         [--compile]
    train_worker.py check --checkpoint C --texts 4 --bytes 32

`step` times the step `uform_train_bench` times: the forward of `texts` texts of `bytes` bytes (byte k of the batch is
`32 + splitmix64(k) % 95`, as tools/bench/text_worker.py and text_bench.cpp write it), contrastive InfoNCE over bags of
two (items 2k and 2k + 1 in bag k, every other item of the batch a negative, docs/model.md "Contrastive, InfoNCE"), the
backward, the gradient norm and clipping, and AdamW (`torch.optim.AdamW`, betas 0.9 and 0.95) at the trainer's
default schedule, over every tensor the trainer trains. It prints one JSON object: the median seconds of `steps`
steps after one warm-up step and their median process CPU time, tokens per second, the losses of every step, the
peak RSS of the process, the peak RSS from the first step on (VmHWM after resetting it through
/proc/self/clear_refs) and the RSS after the imports and after the load. The forward is eager PyTorch in F32
(the BF16 weights are exact in F32), or with `--bf16` under `torch.autocast("cpu", torch.bfloat16)` (master
weights, gradients and moments stay F32; the similarities and the loss are F32 either way). `--device cuda` runs the
step on the GPU (autocast on "cuda", each timed step ending with a synchronisation) and `--compile` runs the forward
through `torch.compile`, falling back to eager when compiling fails (`compiled` says which ran); scripts/gpu-check.sh
--train sets that run beside the CUDA trainer's (uform_train_bench --vram).

`check` runs one step of the same module in F32 on a few texts beside tools/reference/train_model.py's
`TrainableModel` within `uform_reference.exact_arithmetic()` (no BF16 rounding: the same maths in F32) and prints
the loss difference and, over every trained tensor, the largest gradient and updated-weight differences relative to
the tensor's largest magnitude, so the baseline is known to compute docs/model.md's step and not a cheaper one.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "reference"))

from worker import rss_mib, text_ids  # noqa: E402

# docs/model.md's optimiser: AdamW's betas and epsilon; the schedule is the trainer's default (`uform_schedule_t` zeros).
BETAS = (0.9, 0.95)
EPS = 1e-8
# Tensors the trainer does not train (docs/model.md, "Parameters").
FIXED = ("frontend.audio.mel_filters", "head.choice.temperatures")


def peak_mib() -> float:
    """VmHWM, the resident set's high-water mark since the process began or since `reset_peak`, in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def reset_peak():
    """Resets VmHWM to the current resident set (Linux: writing 5 to /proc/self/clear_refs)."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


def trainable_model(checkpoint: str, length: int):
    """The small geometry's text forward as a trainable torch module over every trained tensor of `checkpoint`, in
    F32, and its configuration. `forward(ids)` takes a [batch, length] tensor of bytes and answers the unit
    embeddings; `params` maps each trained tensor's checkpoint name (and the trainer's three scalars) to its
    parameter."""
    import math

    import torch
    import torch.nn.functional as F
    from uform_reference import Model

    reference = Model(checkpoint)
    cfg = reference.cfg

    class TrainableText(torch.nn.Module):
        """docs/model.md's trunk in plain torch ops: `F.linear` products, `F.rms_norm`, attention through
        `scaled_dot_product_attention`, RoPE with every section at the byte's index (a text's positions are
        `(i, i, i)`), the embedding as the normalised head of the mean of the final-normed states."""

        def __init__(self, weights: dict):
            super().__init__()
            self.names = [name for name in weights if name not in FIXED]
            self.tensors = torch.nn.ParameterList(torch.nn.Parameter(weights[name].float()) for name in self.names)
            # docs/model.md's InfoNCE initial values: both scales ln(1 / 0.07), the bias 0.
            self.log_scale = torch.nn.Parameter(torch.tensor([math.log(1 / 0.07)]))
            self.scalars = torch.nn.ParameterList(
                torch.nn.Parameter(torch.tensor([value])) for value in (0.0, math.log(1 / 0.07))
            )
            half = cfg.head_dim // 2
            freq = torch.tensor([cfg.rope_theta ** (-2.0 * j / cfg.head_dim) for j in range(half)], dtype=torch.float64)
            angle = torch.arange(length, dtype=torch.float64)[:, None] * freq[None, :]
            self.register_buffer("cos", torch.cos(angle).float())
            self.register_buffer("sin", torch.sin(angle).float())
            self.index = {name: i for i, name in enumerate(self.names)}

        def params(self) -> dict:
            """Every trained tensor by its checkpoint name, the trainer's scalars included (bias and the
            late-interaction scale take no gradient here, as in the trainer's contrastive InfoNCE step)."""
            named = {name: self.tensors[i] for i, name in enumerate(self.names)}
            named["trainer.contrastive.log_scale"] = self.log_scale
            named["trainer.contrastive.bias"] = self.scalars[0]
            named["trainer.late_interaction.log_scale"] = self.scalars[1]
            return named

        def weight(self, name: str):
            return self.tensors[self.index[name]]

        def rope(self, x):
            half = cfg.head_dim // 2
            x1, x2 = x[..., :half], x[..., half:]
            return torch.cat([x1 * self.cos - x2 * self.sin, x2 * self.cos + x1 * self.sin], dim=-1)

        def norm(self, x, name: str):
            return F.rms_norm(x, (cfg.hidden,), self.weight(name), cfg.norm_eps)

        def forward(self, ids):
            batch = ids.shape[0]
            x = F.embedding(ids, self.weight("embed.byte.weight"))
            for i in range(cfg.depth):
                p = f"blocks.{i}."
                qkv = F.linear(self.norm(x, p + "attn_norm.weight"), self.weight(p + "attn.qkv.weight"))
                q, k, v = qkv.view(batch, length, 3, cfg.heads, cfg.head_dim).permute(2, 0, 3, 1, 4)
                o = F.scaled_dot_product_attention(self.rope(q), self.rope(k), v)
                o = o.transpose(1, 2).reshape(batch, length, cfg.heads * cfg.head_dim)
                x = x + F.linear(o, self.weight(p + "attn.out.weight"))
                gate, up = F.linear(self.norm(x, p + "mlp_norm.weight"), self.weight(p + "mlp.gate_up.weight")).chunk(
                    2, dim=-1
                )
                x = x + F.linear(F.silu(gate) * up, self.weight(p + "mlp.down.weight"))
            pooled = self.norm(x, "final_norm.weight").mean(dim=1)
            return F.normalize(F.linear(pooled, self.weight("head.embedding.weight")), dim=-1)

    return TrainableText(reference.w), cfg


def info_nce(z, log_scale):
    """docs/model.md's contrastive InfoNCE over bags of two with the device's items as negatives: anchor i's positive
    is i ^ 1, its candidates every j != i (c_ij = 1), scale `min(exp(log_scale), 100)`, the mean over the anchors.
    `z` are unit embeddings; the similarities are F32 products of F32 vectors."""
    import torch
    import torch.nn.functional as F

    z = z.float()
    scale = torch.clamp(torch.exp(log_scale[0]), max=100.0)
    scores = (scale * (z @ z.T)).masked_fill(torch.eye(z.shape[0], dtype=torch.bool, device=z.device), -torch.inf)
    partners = torch.arange(z.shape[0], device=z.device) ^ 1
    return F.cross_entropy(scores, partners)


class Trainer:
    """The step: forward, loss, backward, gradient norm and clipping at 1, AdamW at the scheduled rate on every
    trained tensor (decay 0.01 on the 2-D weights other than embed.byte.weight; a tensor the batch does not reach
    gets a zero gradient, so its decay and moments still apply, as the trainer's do)."""

    def __init__(self, model, bf16: bool, compile: bool = False):
        import torch

        from train_model import decays
        from train_optim import Schedule

        self.model, self.bf16, self.schedule, self.k = model, bf16, Schedule(), 0
        self.device = next(model.parameters()).device.type
        self.forward = torch.compile(model) if compile else model
        self.params = model.params()
        decayed = [p for name, p in self.params.items() if decays(name, p.shape)]
        plain = [p for name, p in self.params.items() if not decays(name, p.shape)]
        groups = [{"params": decayed, "weight_decay": self.schedule.weight_decay}, {"params": plain, "weight_decay": 0}]
        self.adamw = torch.optim.AdamW(groups, lr=self.schedule.learning_rate, betas=BETAS, eps=EPS, fused=True)

    def step(self, ids) -> float:
        """One step on the [texts, bytes] tensor `ids`; answers the loss."""
        import torch

        with torch.autocast(self.device, dtype=torch.bfloat16, enabled=self.bf16):
            z = self.forward(ids)
        loss = info_nce(z, self.model.log_scale)
        loss.backward()
        for p in self.params.values():
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        torch.nn.utils.clip_grad_norm_(list(self.params.values()), self.schedule.clip_norm, foreach=True)
        for group in self.adamw.param_groups:
            group["lr"] = self.schedule.rate(self.k)
        self.adamw.step()
        self.adamw.zero_grad(set_to_none=False)
        self.k += 1
        return float(loss.detach())


def run_step(args) -> dict:
    import torch

    torch.set_num_threads(args.threads)
    after_import = rss_mib()
    model = trainable_model(args.checkpoint, args.bytes)[0].to(args.device)
    trainer = Trainer(model, args.bf16, args.compile)
    ids = torch.tensor(text_ids(args.texts, args.bytes), dtype=torch.long, device=args.device)
    after_load = rss_mib()
    reset_peak()
    compiled = args.compile
    try:
        first = trainer.step(ids)
    except Exception as error:  # torch.compile's toolchain may be missing: the eager forward then
        if not args.compile:
            raise
        print(f"torch.compile failed ({type(error).__name__}); eager instead", file=sys.stderr)
        trainer.forward, compiled = model, False
        first = trainer.step(ids)
    synchronize = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    losses, seconds, cpu = [first], [], []
    for _ in range(args.steps):
        synchronize()
        start, cpu_start = time.perf_counter(), time.process_time()
        losses.append(trainer.step(ids))
        synchronize()
        seconds.append(time.perf_counter() - start)
        cpu.append(time.process_time() - cpu_start)
    median = statistics.median(seconds)
    return {
        "mode": "bf16-autocast" if args.bf16 else "f32",
        "device": args.device,
        "compiled": compiled,
        "threads": args.threads,
        "texts": args.texts,
        "bytes": args.bytes,
        "seconds": median,
        "seconds_all": seconds,
        "cpu_seconds": statistics.median(cpu),
        "tokens_per_s": args.texts * args.bytes / median,
        "loss_first": losses[0],
        "loss_last": losses[-1],
        "losses": losses,
        "step_peak_rss_mib": peak_mib(),
        "rss_after_import_mib": after_import,
        "rss_after_load_mib": after_load,
    }


def relative(a, b) -> float:
    """The largest difference of `a` and `b` relative to `b`'s largest magnitude (absolute where `b` is zero)."""
    scale = float(b.abs().max())
    return float((a - b).abs().max()) / (scale if scale > 0 else 1.0)


def check(args) -> dict:
    """One F32 step of the module beside the reference's trainable model without BF16 rounding."""
    import torch

    import uform_reference as ref
    from train_batch import Batch, Item
    from train_losses import Objective, joint, terms
    from train_model import TrainableModel
    from train_optim import Optimizer, Schedule

    rows = text_ids(args.texts, args.bytes)
    model = trainable_model(args.checkpoint, args.bytes)[0]
    trainer = Trainer(model, bf16=False)
    ours_loss = trainer.step(torch.tensor(rows, dtype=torch.long))
    ours = trainer.params

    reference = TrainableModel(args.checkpoint)
    batch = Batch(items=[Item("text", text=bytes(row)) for row in rows], bags=[i // 2 for i in range(len(rows))])
    objective = Objective(terms=("contrastive",))
    with ref.exact_arithmetic():
        loss = joint(terms(reference, reference.forward(batch, {}), batch, objective), objective)
        loss.backward()
    gradients = {name: p.grad.clone() for name, p in reference.params.items() if p.grad is not None}
    Optimizer(reference.params, Schedule()).step(0)

    # The module's gradients are gone after its step; a second module recomputes them without stepping.
    fresh = trainable_model(args.checkpoint, args.bytes)[0]
    info_nce(fresh(torch.tensor(rows, dtype=torch.long)), fresh.log_scale).backward()
    fresh_params = fresh.params()
    gradient = max(relative(fresh_params[name].grad, g) for name, g in gradients.items())
    missing = sorted(name for name, p in fresh_params.items() if p.grad is not None and name not in gradients)
    weights = {name: relative(ours[name].detach(), p.detach()) for name, p in reference.params.items()}
    worst = max(weights, key=weights.get)
    return {
        "loss": ours_loss,
        "loss_reference": float(loss.detach()),
        "gradient_relative": gradient,
        "gradients_missing_in_reference": missing,
        "weights_relative": weights[worst],
        "weights_worst": worst,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["step", "check"])
    parser.add_argument("--checkpoint", required=True, help="a UForm checkpoint of docs/model.md's format")
    parser.add_argument("--texts", type=int, default=32, help="texts per step, an even count (bags of two)")
    parser.add_argument("--bytes", type=int, default=256, help="bytes per text")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3, help="timed steps after the warm-up step")
    parser.add_argument("--bf16", action="store_true", help="step: the forward under BF16 autocast")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="step: where the step runs")
    parser.add_argument("--compile", action="store_true", help="step: the forward through torch.compile")
    args = parser.parse_args()
    if args.texts < 2 or args.texts % 2:
        parser.error("--texts must be even: the items form bags of two")
    result = run_step(args) if args.mode == "step" else check(args)
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
