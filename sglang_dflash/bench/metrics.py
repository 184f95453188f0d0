"""Benchmark metrics from recorded per-request samples (pure Python: tested on CPU).

A sample is a dict per request: ``output_ids``, ``latency`` and ``ttft`` (seconds),
``completion_tokens``, and for speculative modes ``spec_verify_ct``.  A run groups samples by
(mode, dataset, concurrency) with the wall time of the whole group.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ..evaluation import exact_match_summary


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in [0, 100]); nan for no values."""
    if not values:
        return math.nan
    xs = sorted(values)
    k = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def mean_tau(samples: Iterable[dict]) -> float | None:
    """Tokens per verify step: completion tokens / verify steps over all requests (None without spec)."""
    tokens = steps = 0
    for s in samples:
        if s.get("spec_verify_ct"):
            tokens += s["completion_tokens"]
            steps += s["spec_verify_ct"]
    return tokens / steps if steps else None


def summarize_group(samples: list[dict], wall_seconds: float) -> dict:
    """Throughput, latency and acceptance of one (mode, dataset, concurrency) group."""
    tokens = sum(s["completion_tokens"] for s in samples)
    return {
        "requests": len(samples),
        "output_tokens": tokens,
        "wall_seconds": wall_seconds,
        "output_tokens_per_s": tokens / wall_seconds if wall_seconds > 0 else math.nan,
        "latency_p50": percentile([s["latency"] for s in samples], 50),
        "latency_p90": percentile([s["latency"] for s in samples], 90),
        "ttft_p50": percentile([s["ttft"] for s in samples if s.get("ttft") is not None], 50),
        "tau": mean_tau(samples),
    }


def speedups(summary: dict[str, dict], baseline: str = "baseline") -> dict[str, float]:
    """Throughput ratio of every mode to ``baseline`` within one (dataset, concurrency)."""
    base = summary.get(baseline, {}).get("output_tokens_per_s")
    if not base or math.isnan(base):
        return {}
    return {mode: s["output_tokens_per_s"] / base for mode, s in summary.items()}


def agreement_with_baseline(samples: list[dict], baseline_samples: list[dict]) -> dict:
    """Token-for-token equality with the baseline's outputs (matched by request id)."""
    base = {s["id"]: s["output_ids"] for s in baseline_samples}
    pairs = [(s["output_ids"], base[s["id"]]) for s in samples if s["id"] in base]
    return exact_match_summary([a for a, _ in pairs], [b for _, b in pairs])
