#!/usr/bin/env python3
"""The PyTorch side of tools/bench/media_compare.py: the file-to-embedding pipeline of one batch of media, decode
included, in a process of its own so that its peak RSS is its own.

    media_worker.py --checkpoint C --media DIR --case images --images 16 --threads 2 --repeats 5 [--embeddings F]
    media_worker.py --checkpoint C --media DIR --case wav --clips 8 --threads 2 --repeats 5

The batch is the files `uform_media_bench` reads: `image_00.jpg`, ... or `clip_00.wav` (`.mp3`), .... Images are
decoded by Pillow; audio by torchaudio (through TorchCodec), averaged to mono and resampled to the model's rate by
torchaudio. The front-ends are those of tools/reference/uform_reference.py (its grid, antialiased resize, patches and
log-mel through torch.stft); the products are plain F32 ones on the reference's weights (the BF16 values are exact
in F32), the items packed into one token matrix as uform packs them, attention per item through
`scaled_dot_product_attention`. Prints one JSON object: the median seconds per call, the tokens and seconds of audio
of a call, the peak RSS and the RSS after the imports; `--embeddings F` writes the last call's embeddings to F
(row-major F32).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys

import numpy as np
import torch
import torch.nn.functional as F
import torchaudio
import torchaudio.functional as AF
from PIL import Image

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from uform_reference import Model, image_grid, rms_norm
from worker import rss_mib, time_calls


class Pipeline:
    """The reference's weights and front-ends, with plain F32 products, from files to embeddings."""

    def __init__(self, checkpoint: str):
        self.model = Model(checkpoint)
        self.cfg, self.w = self.model.cfg, self.model.w

    def image_tokens(self, path: str):
        """One image file's embedded patches [n, hidden] and positions [n, 3]."""
        image = self.cfg.image
        with Image.open(path) as picture:
            rgb = self.model.pixels_to_rgb_float(np.asarray(picture.convert("RGB")))
        gh, gw = image_grid(rgb.shape[1], rgb.shape[2], image["patch_side"], image["max_patches"])
        patches = self.model._patchify(self.model._resize_normalize(rgb, gh, gw), gh, gw)
        tokens = F.linear(patches, self.w["embed.image.weight"], self.w["embed.image.bias"])
        rows = torch.arange(gh).repeat_interleave(gw)
        columns = torch.arange(gw).repeat(gh)
        return tokens, torch.stack([torch.zeros_like(rows), rows, columns], dim=1)

    def audio_tokens(self, path: str):
        """One recording's embedded patches [n, hidden] and positions [n, 3], and its length in seconds."""
        audio = self.cfg.audio
        samples, rate = torchaudio.load(path)
        mono = AF.resample(samples.mean(dim=0), rate, audio["sample_rate"])
        frames = self.model.log_mel(mono)
        per_patch, bins = audio["frames_per_patch"], audio["mel_bins"]
        count = min((frames.shape[0] + per_patch - 1) // per_patch, audio["max_patches"])
        padded = torch.zeros((count * per_patch, bins))
        kept = min(frames.shape[0], count * per_patch)
        padded[:kept] = frames[:kept]
        patches = padded.reshape(count, per_patch * bins)
        tokens = F.linear(patches, self.w["embed.audio.weight"], self.w["embed.audio.bias"])
        index = torch.arange(count)
        return tokens, torch.stack([index, index, index], dim=1), samples.shape[1] / rate

    def embeddings(self, segments: list) -> torch.Tensor:
        """The trunk over the packed segments [(tokens, positions)], then the pooled, normalised embeddings."""
        cfg, w = self.cfg, self.w
        lengths = [tokens.shape[0] for tokens, _ in segments]
        x = torch.cat([tokens for tokens, _ in segments])
        cos, sin = self.model.rope_tables(torch.cat([positions for _, positions in segments]))
        width = cfg.heads * cfg.head_dim
        for i in range(cfg.depth):
            p = f"blocks.{i}."
            qkv = F.linear(rms_norm(x, w[p + "attn_norm.weight"], cfg.norm_eps), w[p + "attn.qkv.weight"])
            q, k, v = qkv.view(-1, 3, cfg.heads, cfg.head_dim).unbind(1)
            q, k = self.model.apply_rope(q, cos, sin), self.model.apply_rope(k, cos, sin)
            attended = [
                F.scaled_dot_product_attention(qs.transpose(0, 1), ks.transpose(0, 1), vs.transpose(0, 1))
                .transpose(0, 1)
                .reshape(-1, width)
                for qs, ks, vs in zip(q.split(lengths), k.split(lengths), v.split(lengths))
            ]
            x = x + F.linear(torch.cat(attended), w[p + "attn.out.weight"])
            gate_up = F.linear(rms_norm(x, w[p + "mlp_norm.weight"], cfg.norm_eps), w[p + "mlp.gate_up.weight"])
            gate, up = gate_up.chunk(2, dim=-1)
            x = x + F.linear(F.silu(gate) * up, w[p + "mlp.down.weight"])
        states = rms_norm(x, w["final_norm.weight"], cfg.norm_eps)
        pooled = torch.stack([item.mean(dim=0) for item in states.split(lengths)])
        return F.normalize(F.linear(pooled, w["head.embedding.weight"]), dim=-1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", required=True, help="a UForm checkpoint with image and audio front-ends")
    parser.add_argument("--media", required=True, help="the folder media_compare.py wrote")
    parser.add_argument("--case", required=True, choices=["images", "wav", "mp3"])
    parser.add_argument("--images", type=int, default=16, help="JPEG files in the batch of `images`")
    parser.add_argument("--clips", type=int, default=8, help="recordings in the batch of `wav` and `mp3`")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--embeddings", help="where to write the embeddings of the last call")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    baseline = rss_mib()
    pipeline = Pipeline(args.checkpoint)
    if args.case == "images":
        paths = [os.path.join(args.media, f"image_{i:02d}.jpg") for i in range(args.images)]
    else:
        paths = [os.path.join(args.media, f"clip_{i:02d}.{args.case}") for i in range(args.clips)]
    last = {}

    def call():
        with torch.inference_mode():
            if args.case == "images":
                segments, seconds = [pipeline.image_tokens(path) for path in paths], 0.0
            else:
                decoded = [pipeline.audio_tokens(path) for path in paths]
                segments, seconds = [item[:2] for item in decoded], sum(item[2] for item in decoded)
            last.update(embeddings=pipeline.embeddings(segments), segments=segments, seconds=seconds)

    result = {"seconds": time_calls(call, args.repeats), "rss_after_import_mib": baseline}
    result["tokens"] = sum(tokens.shape[0] for tokens, _ in last["segments"])
    result["audio_seconds"] = last["seconds"]
    if args.embeddings:
        last["embeddings"].numpy().astype(np.float32).tofile(args.embeddings)
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
