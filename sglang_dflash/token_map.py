"""The drafter's hot vocabulary (``--speculative-token-map``): the token ids DFLASH may draft.

A token map is SGLang's own file for EAGLE's frequency-ranked drafting (FR-Spec): a torch file
holding a list (or 1-D tensor) of token ids, read by the host's ``load_token_map`` (a local path,
or ``repo_id/filename`` on the hub).  With one, the drafter's logits come from one GEMM against
those rows of the target's lm_head only.  The lm_head is most of a small drafter's cost: SmolLM2's
is 49152 x 576 float32 rows (113 MB read per draft pass on a memory-bound CPU, about a quarter of
a plain decode step), and 8192 hot rows read a sixth of that.

Verification still scores the whole vocabulary, so the output does not change: greedy output is
the target's argmax, and a sampled draft whose distribution is zero outside the map is still a
valid proposal for speculative sampling (the residual ``max(0, p - q)`` keeps every other token's
probability).  Only drafts of tokens outside the map are lost, which costs acceptance, never
correctness.

``sglang-dflash token-map`` builds one from self-distilled token stores: the response tokens the
target itself produced, most frequent first, ties and unseen tokens by token id (BPE merges come
roughly in frequency order).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

import torch

from .config import config_error

TOKEN_MAP_FLAG = "--speculative-token-map"


def check_token_ids(ids: torch.Tensor, vocab_size: int, source: str) -> torch.Tensor:
    """``ids`` as a 1-D int64 tensor of distinct ids below ``vocab_size``; a flag error otherwise."""
    if ids.dim() != 1 or ids.numel() == 0 or ids.is_floating_point() or ids.is_complex():
        raise config_error(
            TOKEN_MAP_FLAG,
            source,
            f"a non-empty list of integer token ids (got a {ids.dtype} tensor of shape {list(ids.shape)})",
        )
    ids = ids.to(torch.int64)
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= vocab_size:
        bad = low if low < 0 else high
        raise config_error(
            TOKEN_MAP_FLAG,
            source,
            f"token ids in 0..{vocab_size - 1} (the target's vocabulary); it holds {bad}",
        )
    distinct = int(torch.unique(ids).numel())
    if distinct != ids.numel():
        raise config_error(
            TOKEN_MAP_FLAG, source, f"distinct token ids; it holds {ids.numel() - distinct} repeated"
        )
    return ids


def read_token_map(path: str, vocab_size: int) -> torch.Tensor:
    """The checked token ids of ``--speculative-token-map`` (read as SGLang reads it for EAGLE)."""
    from sglang.srt.speculative.spec_utils import load_token_map

    try:
        ids = load_token_map(path)
    except Exception as e:  # a missing file, an offline hub, a pickle that is not a list of ints
        raise config_error(
            TOKEN_MAP_FLAG,
            path,
            f"a readable torch file of token ids, or repo_id/filename on the hub ({type(e).__name__}: {e})",
        ) from e
    return check_token_ids(ids, vocab_size, path)


def target_vocab_size(target: str) -> int:
    """``vocab_size`` of the target's config.json (a local model directory)."""
    path = os.path.join(target, "config.json")
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(
            f"token-map: --target is {target!r}; expected a model directory with a config.json ({e})"
        ) from e
    vocab = config.get("vocab_size", config.get("text_config", {}).get("vocab_size"))
    if not isinstance(vocab, int) or vocab < 1:
        raise ValueError(f"{path}: vocab_size is {vocab!r}; expected a positive integer")
    return vocab


def response_token_counts(stores: Sequence[str], vocab_size: int) -> torch.Tensor:
    """[vocab_size] counts of the response tokens (after each record's prompt) in token stores."""
    from .train.tokens import TokenStore

    counts = torch.zeros(vocab_size, dtype=torch.int64)
    for store in stores:
        for record in TokenStore.open(store).records:
            response = torch.tensor(record["input_ids"][record["loss_start"] :], dtype=torch.int64)
            if response.numel() and int(response.max()) >= vocab_size:
                raise ValueError(
                    f"{store}: token id {int(response.max())} is past the vocabulary; expected ids below "
                    f"{vocab_size} (a store of this target)"
                )
            counts += torch.bincount(response, minlength=vocab_size)
    return counts


def hot_token_ids(counts: torch.Tensor, size: int) -> torch.Tensor:
    """The ``size`` most counted token ids, ties (and never-seen tokens) by lower id, sorted by id."""
    if not 0 < size <= counts.numel():
        raise ValueError(f"token-map: --size is {size}; expected 1..{counts.numel()} (the vocabulary size)")
    # A stable sort of -count keeps ids ascending within equal counts.
    order = torch.sort(-counts, stable=True).indices
    return torch.sort(order[:size]).values


def coverage(counts: torch.Tensor, ids: torch.Tensor) -> float:
    """Share of the counted tokens that ``ids`` holds."""
    total = int(counts.sum())
    return float(counts[ids].sum()) / total if total else 0.0


def write_token_map(ids: torch.Tensor, path: str) -> None:
    """Save ids as SGLang's token-map format: a torch file of a list of ints."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    torch.save([int(i) for i in ids], path)
