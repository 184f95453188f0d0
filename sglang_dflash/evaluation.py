"""Losslessness checks for GPU runs, where exact match against plain decoding is not a fair test.

SGLang runs the target in bf16, and a 1-token decode step and a 16-token verify pass round
differently, so even a correct speculative decoder drifts from plain decoding at near-ties.  The
fair check is teacher-forced: re-score every output with one target prefill pass (float32) and
ask, at every generated position, how far the emitted token's logit is below the best logit
(its *gap*; 0 = the target's argmax).  A token is **greedy-consistent** when its gap is at most
``margin``.

Why ``NEAR_TIE_MARGIN = 0.5``: bf16 rounding through a deep target moves logits by a few tenths
between two execution orders, which decides ties of that size either way; a genuinely wrong
token (a drafter bug, a stale KV entry) is typically several logits below the argmax.  The
harness also reports the gaps plain decoding itself needs, so the margin is checked, not assumed:
ours must be no worse than plain decoding under the same margin.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

NEAR_TIE_MARGIN = 0.5


@torch.inference_mode()
def teacher_forced_gaps(
    model: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    outputs: Sequence[Sequence[int]],
    batch_size: int = 8,
) -> list[torch.Tensor]:
    """Per request, the logit gap of every generated token under one target pass over prompt+output."""
    device = model.get_input_embeddings().weight.device
    gaps: list[torch.Tensor] = []
    for start in range(0, len(prompts), batch_size):
        rows = [
            list(p) + list(o)
            for p, o in zip(prompts[start : start + batch_size], outputs[start : start + batch_size])
        ]
        width = max(map(len, rows))
        ids = torch.zeros(len(rows), width, dtype=torch.long)
        mask = torch.zeros(len(rows), width, dtype=torch.long)
        for r, row in enumerate(rows):
            ids[r, : len(row)] = torch.tensor(row)
            mask[r, : len(row)] = 1
        logits = model(ids.to(device), attention_mask=mask.to(device)).logits.float()
        for r, (prompt, output) in enumerate(
            zip(prompts[start : start + batch_size], outputs[start : start + batch_size])
        ):
            if not output:
                gaps.append(torch.zeros(0))
                continue
            at = logits[r, len(prompt) - 1 : len(prompt) - 1 + len(output)]
            emitted = torch.tensor(list(output), device=at.device)
            gaps.append((at.max(-1).values - at.gather(1, emitted[:, None])[:, 0]).cpu())
    return gaps


def first_divergence(a: Sequence[int], b: Sequence[int]) -> int | None:
    """Index of the first differing token (or the shorter length if one is a prefix), None if equal."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


@dataclass
class ConsistencyReport:
    """Greedy consistency of a set of outputs (see module doc)."""

    margin: float
    tokens: int = 0
    consistent: int = 0
    argmax: int = 0
    max_gap: float = 0.0
    per_request: list[float] = field(default_factory=list)

    @classmethod
    def from_gaps(cls, gaps: Sequence[torch.Tensor], margin: float = NEAR_TIE_MARGIN) -> ConsistencyReport:
        report = cls(margin=margin)
        for g in gaps:
            report.tokens += g.numel()
            report.consistent += int((g <= margin).sum())
            report.argmax += int((g <= 0).sum())
            report.max_gap = max(report.max_gap, float(g.max()) if g.numel() else 0.0)
            report.per_request.append(float((g <= margin).float().mean()) if g.numel() else 1.0)
        return report

    @property
    def rate(self) -> float:
        """Fraction of generated tokens within ``margin`` of the target's argmax."""
        return self.consistent / self.tokens if self.tokens else 1.0

    @property
    def argmax_rate(self) -> float:
        return self.argmax / self.tokens if self.tokens else 1.0

    def as_dict(self) -> dict:
        return {
            "margin": self.margin,
            "tokens": self.tokens,
            "rate": self.rate,
            "argmax_rate": self.argmax_rate,
            "max_gap": self.max_gap,
        }


def exact_match_summary(ours: Sequence[Sequence[int]], plain: Sequence[Sequence[int]]) -> dict:
    """Fraction of requests equal to plain decoding token for token, and where the others diverge."""
    divergences = [first_divergence(a, b) for a, b in zip(ours, plain)]
    diverged = [d for d in divergences if d is not None]
    return {
        "requests": len(divergences),
        "exact_match_rate": sum(d is None for d in divergences) / max(1, len(divergences)),
        "first_divergence": divergences,
        "median_first_divergence": sorted(diverged)[len(diverged) // 2] if diverged else None,
    }
