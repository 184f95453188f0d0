"""Acceptance length (tau) of a drafter with the reference implementation, resumable per batch.

``measure_tau`` runs :func:`~sglang_dflash.reference.spec_generate` over prompts in batches and
appends every finished batch to a ``.partial.jsonl`` file next to the JSON result, so an
interrupted measurement continues where it stopped; the result counts every committed token and
every verify step (tau = tokens / verify steps).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence

from torch import nn
from tqdm import tqdm

from ..draft_model import DFlashDraftModel
from ..reference import spec_generate
from ..speculative import SamplingParams


def _read_partial(path: str | None) -> list[dict]:
    if not path or not os.path.exists(path):
        return []
    entries = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:  # a line torn by a kill mid-write: that batch reruns
                continue
    return entries


def measure_tau(
    target: nn.Module,
    drafter: DFlashDraftModel,
    prompts: Sequence[Sequence[int]],
    params: SamplingParams,
    batch_size: int = 8,
    partial_path: str | None = None,
    settings: dict | None = None,
    max_minutes: float | None = None,
) -> dict:
    """tau over ``prompts``; batches already in ``partial_path`` (same ``settings``) are not rerun.

    With ``max_minutes`` no new batch starts after that many minutes; the result then covers the
    finished batches only (``complete`` is false) and a rerun continues.
    """
    started = time.time()
    done = _read_partial(partial_path)
    if done and done[0].get("settings") != settings:
        raise ValueError(
            f"{partial_path}: settings are {done[0].get('settings')}; expected {settings} "
            "(delete the partial file to measure with new settings)"
        )
    starts = range(0, len(prompts), batch_size)
    finished = {d["start"] for d in done}
    for start in tqdm(
        [s for s in starts if s not in finished],
        desc="eval-tau",
        unit="batch",
        initial=len(finished),
        total=len(starts),
    ):
        if max_minutes is not None and time.time() - started > 60 * max_minutes:
            break
        began = time.time()
        result = spec_generate(target, drafter, prompts[start : start + batch_size], params)
        entry = {
            "settings": settings,
            "start": start,
            "seconds": round(time.time() - began, 1),
            "tau": result.tau,
            "tokens": [sum(a) for a in result.accept_lens],
            "verify_steps": result.num_verify_steps,
            "finish_reasons": result.finish_reasons,
        }
        done.append(entry)
        if partial_path:
            with open(
                partial_path, "a", encoding="utf-8"
            ) as f:  # one line per batch: a torn line is the only loss
                f.write(json.dumps(entry) + "\n")
    done = sorted((d for d in done if d["start"] in set(starts)), key=lambda d: d["start"])
    tokens = sum(sum(d["tokens"]) for d in done)
    steps = sum(sum(d["verify_steps"]) for d in done)
    taus = [t for d in done for t in d["tau"]]
    finite = [t for t in taus if not math.isnan(t)]
    return {
        "prompts": len(taus),
        "complete": len(taus) == len(prompts),
        "mean_tau": tokens / max(1, steps),
        "tokens": tokens,
        "verify_steps": steps,
        "mean_request_tau": sum(finite) / max(1, len(finite)),
        "seconds": round(sum(d["seconds"] for d in done), 1),
        "settings": settings,
        "per_request_tau": taus,
        "per_request_tokens": [n for d in done for n in d["tokens"]],
        "per_request_verify_steps": [n for d in done for n in d["verify_steps"]],
    }
