"""docs/model.md's training terms ("Training": Relations, Contrastive, Late interaction, Masking, Choices, Joint,
Distillation).

Each term answers per-unit losses with the item each unit belongs to (an anchor, a query, a masked item, a
choice item): `(owners, losses)`. A term's value is `losses.sum() / len(losses)`, its count over the whole
batch (mesh); a device of a split batch contributes the units it owns over that same global count, so the
parts add up to the whole (`joint(..., owned=...)`). Similarities are F32 products of the F32 embeddings,
never BF16-rounded.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from train_batch import Batch

NEGATIVES = ("device", "mesh", "hard", "mesh-and-hard")
FORMS = ("info-nce", "sigmoid")
TERMS = ("masking", "contrastive", "late_interaction", "choices")


@dataclass
class Objective:
    """Which terms a step optimises and how (the C API's objective, masking, contrastive, late-interaction and
    choices knobs, zeros already replaced by their defaults). `terms` lists the terms taken (joint: all)."""

    terms: tuple = TERMS
    form: str = "info-nce"
    negatives: str = "device"
    hard_negative_weight: float = 2.0
    weights: dict = None

    def weight(self, term: str) -> float:
        return 1.0 if not self.weights else self.weights.get(term, 1.0)


def relations(batch: Batch, negatives: str, hard_negative_weight: float):
    """Dense [N, N] matrices from anchor i (row) to item j (column): `W` the positive weights (P(i) = W > 0)
    and `C` the candidate weights (D(i) = C > 0, c_ij the value). One process: `mesh` = `device`.

    Bags give w_ij = 1; an attract edge i -> j sets w_ij to its weight (replacing the bag's 1). A repel edge
    marks j in H(i) with c_ij = hard_negative_weight * its weight, under `hard` and `mesh-and-hard`. Ignore
    edges remove j from P(i), H(i) and D(i). D(i) never holds i."""
    if negatives not in NEGATIVES:
        raise ValueError(f"unknown negatives {negatives!r}")
    n = len(batch.items)
    W = torch.zeros((n, n), dtype=torch.float64)
    for i in range(n):
        for j in range(n):
            if i != j and batch.bag_of(i) == batch.bag_of(j):
                W[i, j] = 1.0
    for i, j, w in batch.attract:
        W[i, j] = 1.0 if w is None else w
    hard = torch.zeros((n, n), dtype=torch.float64)
    for i, j, w in batch.repel:
        hard[i, j] = hard_negative_weight * (1.0 if w is None else w)
    allowed = ~torch.eye(n, dtype=torch.bool)
    for i, j, _ in batch.ignore:
        allowed[i, j] = False
    W = torch.where(allowed, W, torch.zeros_like(W))
    if negatives in ("device", "mesh"):
        C = allowed.to(torch.float64)
    elif negatives == "hard":
        C = torch.where(hard > 0, hard, (W > 0).to(torch.float64))
    else:
        C = torch.where(hard > 0, hard, torch.ones_like(hard))
    return W, torch.where(allowed, C, torch.zeros_like(C))


def _info_nce_rows(scores: torch.Tensor, W: torch.Tensor, C: torch.Tensor):
    """Per anchor row with a positive: `sum_p (w_ip / W_i) (log sum_{j in D} c_ij exp(x_ij) - x_ip)`."""
    rows = torch.nonzero((W > 0).any(dim=1)).flatten()
    x, w, c = scores[rows], W[rows].to(scores.dtype), C[rows].to(scores.dtype)
    log_c = torch.where(c > 0, torch.log(torch.where(c > 0, c, torch.ones_like(c))), torch.full_like(c, -torch.inf))
    lse = torch.logsumexp(x + log_c, dim=1)
    pos = w > 0
    per = torch.where(pos, (w / w.sum(dim=1, keepdim=True)) * (lse[:, None] - x), torch.zeros_like(x))
    return rows, per.sum(dim=1)


def info_nce(z: torch.Tensor, W, C, scale: torch.Tensor):
    """Contrastive InfoNCE with graded positives: (anchors with P(i) non-empty, their l_i)."""
    return _info_nce_rows(scale * (z @ z.T), W, C)


def sigmoid_pairs(z: torch.Tensor, W, C, scale: torch.Tensor, bias: torch.Tensor):
    """Contrastive sigmoid: per anchor with at least one pair in D(i), `sum_{j in D(i)} weight_ij *
    softplus(-y_ij (t s_ij + b))`, y = 1 and weight w_ij for j in P(i), else y = -1 and weight c_ij."""
    rows = torch.nonzero((C > 0).any(dim=1)).flatten()
    s = (z @ z.T)[rows]
    w, c = W[rows].to(z.dtype), C[rows].to(z.dtype)
    pos = w > 0
    y = torch.where(pos, torch.ones_like(s), -torch.ones_like(s))
    weight = torch.where(pos, w, c)
    per = torch.where(weight > 0, weight * F.softplus(-y * (scale * s + bias)), torch.zeros_like(s))
    return rows, per.sum(dim=1)


def maxsim(q: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """`S(q, d) = mean_a max_b <q_a, d_b>`; 0 when either side has no token vectors."""
    if q.shape[0] == 0 or d.shape[0] == 0:
        return torch.zeros((), dtype=q.dtype)
    return (q @ d.T).max(dim=1).values.mean()


def late_interaction(token_vectors: dict, batch: Batch, W, C, scale: torch.Tensor):
    """MaxSim InfoNCE: per query with a positive document, InfoNCE over the document-side items of D(q)."""
    n = len(batch.items)
    queries = [i for i in range(n) if batch.side_of(i) == "query"]
    docs = [i for i in range(n) if batch.side_of(i) == "document"]
    if not queries or not docs:
        return torch.zeros(0, dtype=torch.long), torch.zeros(0)
    S = torch.stack([torch.stack([maxsim(token_vectors[q], token_vectors[d]) for d in docs]) for q in queries])
    qi, di = torch.tensor(queries), torch.tensor(docs)
    rows, losses = _info_nce_rows(scale * S, W[qi][:, di], C[qi][:, di])
    return qi[rows], losses


def masking(fwd):
    """Masked-byte cross-entropy: one unit per chosen position, owned by its item."""
    items = sorted(fwd.mask_logits)
    if not items:
        return torch.zeros(0, dtype=torch.long), torch.zeros(0)
    owners = torch.cat([torch.full((len(fwd.mask_targets[i]),), i, dtype=torch.long) for i in items])
    logits = torch.cat([fwd.mask_logits[i] for i in items])
    targets = torch.cat([fwd.mask_targets[i] for i in items])
    return owners, F.cross_entropy(logits, targets, reduction="none")


def choices(fwd, batch: Batch):
    """Choice cross-entropy `- sum_k target_k log p_k`, p the softmax over the legal bytes at temperature 1."""
    items = sorted(fwd.choice_logits)
    if not items:
        return torch.zeros(0, dtype=torch.long), torch.zeros(0)
    losses = []
    for i in items:
        logits = fwd.choice_logits[i]
        t = torch.tensor(batch.items[i].targets, dtype=logits.dtype)
        losses.append(-(t * torch.log_softmax(logits, dim=0)).sum())
    return torch.tensor(items, dtype=torch.long), torch.stack(losses)


def distill(z: torch.Tensor, teacher: torch.Tensor, student_temperature: float, teacher_temperature: float):
    """Distillation (docs/model.md, "Distillation"): over the items T with a nonzero teacher row (when T has two at
    least), per anchor i of T, `KL(P_i || Q_i)` over the others of T, P_i the softmax of the teacher cosines
    `<u_i, u_j> / teacher_temperature` (u the rows made unit in F64, rounded to F32), Q_i the softmax of the student
    similarities `<z_i, z_j> / student_temperature`. The products are F32, the softmaxes F64."""
    ids = torch.nonzero((teacher != 0).any(dim=1)).flatten()
    if len(ids) < 2:
        return ids[:0], torch.zeros(0, dtype=torch.float64)
    u = F.normalize(teacher[ids].to(torch.float64), dim=1).to(z.dtype)
    zz = z[ids]
    off = ~torch.eye(len(ids), dtype=torch.bool)
    far = torch.full((len(ids), len(ids)), -1e30, dtype=torch.float64)
    t = torch.where(off, (u @ u.T).to(torch.float64) / teacher_temperature, far)
    s = torch.where(off, (zz @ zz.T).to(torch.float64) / student_temperature, far)
    log_p, log_q = torch.log_softmax(t, dim=1), torch.log_softmax(s, dim=1)
    per = torch.where(off, log_p.exp() * (log_p - log_q), torch.zeros_like(t))
    return ids, per.sum(dim=1)


def terms(model, fwd, batch: Batch, objective: Objective) -> dict:
    """Every term of `objective.terms` the batch has data for: name -> (owners, losses)."""
    W, C = relations(batch, objective.negatives, objective.hard_negative_weight)
    out = {}
    if "masking" in objective.terms:
        out["masking"] = masking(fwd)
    if "contrastive" in objective.terms:
        scale = model.scale("trainer.contrastive.log_scale")
        if objective.form == "info-nce":
            out["contrastive"] = info_nce(fwd.z, W, C, scale)
        elif objective.form == "sigmoid":
            out["contrastive"] = sigmoid_pairs(fwd.z, W, C, scale, model.params["trainer.contrastive.bias"][0])
        else:
            raise ValueError(f"unknown form {objective.form!r}")
    if "late_interaction" in objective.terms:
        out["late_interaction"] = late_interaction(
            fwd.token_vectors, batch, W, C, model.scale("trainer.late_interaction.log_scale"))
    if "choices" in objective.terms:
        out["choices"] = choices(fwd, batch)
    return {k: v for k, v in out.items() if len(v[1])}


def term_values(parts: dict) -> dict:
    """Each term's value: the mean of its units."""
    return {k: losses.sum() / len(losses) for k, (_, losses) in parts.items()}


def joint(parts: dict, objective: Objective, owned=None) -> torch.Tensor:
    """`sum weight * term`; with `owned` (a set of item indices) only the units those items own, each term
    still divided by its count over the whole batch (one device's share of a split step)."""
    total = None
    for k, (owners, losses) in parts.items():
        keep = losses if owned is None else losses[torch.tensor([int(o) in owned for o in owners], dtype=torch.bool)]
        v = objective.weight(k) * keep.sum() / len(losses)
        total = v if total is None else total + v
    return total
