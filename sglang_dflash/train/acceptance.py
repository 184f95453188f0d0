"""Acceptance length (tau) of a drafter with the reference implementation, resumable per batch.

``measure_tau`` runs :func:`~sglang_dflash.reference.spec_generate` over prompts in batches and
appends every finished batch to a ``.partial.jsonl`` file next to the JSON result, so an
interrupted measurement continues where it stopped; the result counts every committed token and
every verify step (tau = tokens / verify steps).

Greedy DFlash is lossless, so its output is the target's own greedy response, the same for every
drafter.  Given that response, the verify steps are determined by the drafter alone: at each step
the block starts at the last committed token, sees the target's features of every token before
it, and commits its run of correct drafts plus one.  :func:`replay_spec` computes exactly that
teacher-forced (one target pass over prompt + response, one drafter pass over every anchor, the
lm_head only where a run is still alive) instead of decoding, so ``measure_tau(responses=...)``
gives the reference's tau without its per-step cost.  :func:`greedy_responses` makes and keeps
those responses (resumable, tied to the target's weights and the prompts).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn
from tqdm import tqdm

from ..draft_model import DFlashDraftModel
from ..lookup import NO_TOKEN, proposals_along
from ..reference import SpecResult, spec_generate
from ..speculative import SamplingParams
from ..tree import DraftTree, last_match
from .curve import open_text
from .data import generate_batch
from .objective import IGNORE, block_hidden, build_blocks
from .tokens import json_sha256, weights_sha256
from .trainer import target_features

# Blocks per drafter pass in a replay: a pass's attention scores grow with (anchors x block) x
# (length + anchors x block); 64 blocks of 16 keep them near 60 MB for a 512-token sequence.
REPLAY_ANCHORS_PER_PASS = 64


def _read_partial(path: str | None) -> list[dict]:
    if not path or not os.path.exists(path):
        return []
    entries = []
    with open_text(path, "r") as f:
        try:
            for line in f:
                try:
                    entries.append(json.loads(line))
                except json.JSONDecodeError:  # a line torn by a kill mid-write: that batch reruns
                    continue
        except EOFError:  # a gzip member torn by a kill mid-write: what came before it stands
            torn = True
        else:
            torn = False
    if torn:  # members appended after a torn one would never be read: write the file anew
        with open_text(path, "w") as f:
            f.writelines(json.dumps(entry) + "\n" for entry in entries)
    return entries


def _resume(path: str | None, settings: dict | None, remedy: str) -> list[dict]:
    """The entries kept in ``path``, whose first line must hold these ``settings`` (``remedy``:
    what to do instead, named in the error for a file made under other settings)."""
    done = _read_partial(path)
    if done and done[0].get("settings") != settings:
        raise ValueError(f"{path}: settings are {done[0].get('settings')}; expected {settings} ({remedy})")
    return done


def measure_tau(
    target: nn.Module,
    drafter: DFlashDraftModel,
    prompts: Sequence[Sequence[int]],
    params: SamplingParams,
    batch_size: int = 8,
    partial_path: str | None = None,
    settings: dict | None = None,
    max_minutes: float | None = None,
    responses: Sequence[Sequence[int]] | None = None,
    tree: DraftTree | None = None,
) -> dict:
    """tau over ``prompts``; batches already in ``partial_path`` (same ``settings``) are not rerun.

    With ``max_minutes`` no new batch starts after that many minutes; the result then covers the
    finished batches only (``complete`` is false) and a rerun continues.  With ``responses`` (the
    target's greedy response to every prompt, :func:`greedy_responses`) each batch is replayed
    teacher-forced (:func:`replay_spec`) instead of decoded; greedy ``params`` only.  ``tree``
    verifies a token tree instead of the chain (:mod:`sglang_dflash.tree`), decoded or replayed.
    """
    if responses is not None and len(responses) != len(prompts):
        raise ValueError(
            f"measure_tau: got {len(responses)} responses for {len(prompts)} prompts; expected one per prompt"
        )
    started = time.time()
    done = _resume(partial_path, settings, "delete the partial file to measure with new settings")
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
        if responses is None:
            result = spec_generate(target, drafter, prompts[start : start + batch_size], params, tree=tree)
        else:
            result = replay_spec(
                target,
                drafter,
                prompts[start : start + batch_size],
                responses[start : start + batch_size],
                params,
                tree,
            )
        entry = {
            "settings": settings,
            "start": start,
            "seconds": round(time.time() - began, 1),
            "tau": result.tau,
            "tokens": [sum(a) for a in result.accept_lens],
            "verify_steps": result.num_verify_steps,
            "finish_reasons": result.finish_reasons,
        }
        entry["commits"] = commit_histogram(result.accept_lens, drafter.block_size)
        if isinstance(result, ReplayResult):
            entry["block_hits"] = [sum(h) for h in result.block_hits]
            entry["blocks"] = [len(h) for h in result.block_hits]
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
    summary = {
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
    if done and all("commits" in d for d in done):
        histogram = [sum(column) for column in zip(*(d["commits"] for d in done), strict=True)]
        summary["steps_per_commit"] = histogram
        summary["draft_acceptance"] = draft_acceptance(histogram)
    if done and all("blocks" in d for d in done):
        # Correct drafts in a row per block over every anchor of the responses: the trainer's
        # held-out acceptance, measured on these prompts (compare it to see the data's domain gap).
        summary["teacher_forced_accept"] = sum(sum(d["block_hits"]) for d in done) / max(
            1, sum(sum(d["blocks"]) for d in done)
        )
    return summary


def commit_histogram(accept_lens: Sequence[Sequence[int]], block_size: int) -> list[int]:
    """Verify steps by the tokens they committed: entry ``c`` counts the steps that committed ``c``
    (1 .. ``block_size``; entry 0 stays 0)."""
    histogram = [0] * (block_size + 1)
    for lens in accept_lens:
        for committed in lens:
            histogram[committed] += 1
    return histogram


def draft_acceptance(histogram: Sequence[int]) -> list[float | None]:
    """Per block position ``d`` (1 .. block_size - 1): the share of steps that accepted draft ``d``
    among those that accepted every draft before it (None where no step got there).  A constant
    share is a geometric run of accepted drafts; the adaptive verify width estimates these.  A step
    cut by the response's end counts as a rejection there (rare: one step per response at most)."""
    at_least = [sum(histogram[c:]) for c in range(len(histogram))]
    return [
        round(at_least[d + 1] / at_least[d], 4) if at_least[d] else None for d in range(1, len(histogram) - 1)
    ]


def replay_walk(hits: Sequence[int]) -> list[int]:
    """Tokens committed per verify step (the reference's ``accept_lens``) along a fixed response.

    ``hits[a]`` is how many drafts the block anchored at response token ``a`` gets right in a row
    (``len(hits)`` = response tokens after the first, which the prefill commits).  A step commits
    those drafts plus the target's own next token, cut at the response's end.
    """
    commits, anchor = [], 0
    while anchor < len(hits):
        commit = min(int(hits[anchor]) + 1, len(hits) - anchor)
        commits.append(commit)
        anchor += commit
    return commits


@torch.no_grad()
def block_hits(
    target: nn.Module,
    drafter: DFlashDraftModel,
    prompt: Sequence[int],
    response: Sequence[int],
    tree: DraftTree | None = None,
) -> torch.Tensor:
    """Correct drafts in a row [len(response) - 1] of the block anchored at every response token.

    Teacher-forced: the target's features come from one pass over ``prompt + response``; block
    ``a`` holds response token ``a`` and mask tokens and sees the features of the tokens before
    it, as at inference.  Position ``k``'s logits are computed only for blocks whose first
    ``k - 1`` drafts were right (the lm_head is most of the cost).  With a ``tree``
    (:mod:`sglang_dflash.tree`), a draft is right when some child of the node reached so far drafts
    the response's token (the node's rank among the position's logits, taken as the decoder does;
    a lookup branch's node, the context's proposal; no branch where the context has none, as
    when the request decodes alone: :mod:`sglang_dflash.lookup`).
    """
    lm_head = target.get_output_embeddings()
    children = None if tree is None else tree.children_table(lm_head.weight.device)
    lookup = tree.lookup if tree is not None else 0
    if lookup:  # per anchor, the proposal its block's lookup branch verifies
        along = proposals_along(list(prompt) + list(response), len(prompt), lookup)
        proposals = along.tokens.to(lm_head.weight.device)
        wanted = torch.tensor(along.nodes, device=lm_head.weight.device)
    hits, first = [], 0
    for hidden, labels in _block_passes(target, drafter, prompt, response):
        run = torch.zeros(labels.shape[0], dtype=torch.long, device=labels.device)
        node = torch.zeros_like(run)  # the tree node each block has reached (0: the root)
        alive = torch.ones_like(run, dtype=torch.bool)
        for k, rows, logits in _alive_logits(hidden, labels, lm_head, alive):
            if tree is None:  # the chain: the argmax, as the decoder drafts it
                right = logits.argmax(-1) == labels[rows, k]
            else:
                top = logits.topk(children.shape[1], dim=-1).indices
                if lookup and k <= lookup:
                    # Only the root and the branch's nodes have a child of the branch's rank; an
                    # anchor without a proposal has no branch (it decodes alone).
                    proposed = proposals[first + rows, k - 1]
                    top[:, -1] = torch.where(proposed >= 0, proposed, top[:, -1])
                    top[:, -1] = torch.where(wanted[first + rows] >= k, top[:, -1], NO_TOKEN)
                candidates = children[node[rows]]  # [rows, ranks]: child node per rank, -1 if none
                match = (top == labels[rows, k][:, None]) & (candidates >= 0)
                right = match.any(1)
                node[rows] = candidates.gather(1, last_match(match)[:, None])[:, 0]
            run[rows] += right.long()
            alive[rows] = right
        hits.append(run)
        first += labels.shape[0]
    return torch.cat(hits).cpu() if hits else torch.zeros(0, dtype=torch.long)


@torch.no_grad()
def block_ranks(
    target: nn.Module,
    drafter: DFlashDraftModel,
    prompt: Sequence[int],
    response: Sequence[int],
    max_rank: int,
) -> torch.Tensor:
    """[len(response) - 1, block_size - 1]: per anchor (as :func:`block_hits`), the drafter's rank of
    the response's token at block positions 1, 2, ...: 0 for its argmax, ``max_rank`` for any rank
    from ``max_rank`` on (the positions after it are not scored), -1 past the response's end or
    after a ``max_rank``.  :func:`~sglang_dflash.tree.fit_tree` fits a verify tree to such rows."""
    lm_head, size = target.get_output_embeddings(), drafter.block_size
    out = []
    for hidden, labels in _block_passes(target, drafter, prompt, response):
        ranks = torch.full((labels.shape[0], size - 1), -1, dtype=torch.long, device=labels.device)
        alive = torch.ones(labels.shape[0], dtype=torch.bool, device=labels.device)
        for k, rows, logits in _alive_logits(hidden, labels, lm_head, alive):
            top = logits.topk(max_rank, dim=-1).indices
            match = top == labels[rows, k][:, None]
            rank = torch.where(match.any(1), match.int().argmax(1), max_rank)
            ranks[rows, k - 1] = rank
            alive[rows] = rank < max_rank
        out.append(ranks)
    return torch.cat(out).cpu() if out else torch.zeros(0, size - 1, dtype=torch.long)


def _alive_logits(
    hidden: torch.Tensor, labels: torch.Tensor, lm_head: nn.Module, alive: torch.Tensor
) -> Iterator[tuple[int, torch.Tensor, torch.Tensor]]:
    """Per block position ``k`` = 1, 2, ...: the blocks still ``alive`` whose label there lies inside
    the response, and the lm_head's logits at ``k`` for them (the lm_head is most of the cost, so
    only those); the caller updates ``alive`` in place before the next position."""
    for k in range(1, labels.shape[1]):
        alive &= labels[:, k] != IGNORE
        rows = alive.nonzero().flatten()
        if rows.numel() == 0:
            return
        yield k, rows, lm_head(hidden[rows, k].to(lm_head.weight.dtype))


def _block_passes(
    target: nn.Module, drafter: DFlashDraftModel, prompt: Sequence[int], response: Sequence[int]
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """The drafter's hidden states [A, block_size, H] and labels [A, block_size] of the blocks
    anchored at every response token but the last, :data:`REPLAY_ANCHORS_PER_PASS` at a time.

    Teacher-forced: the target's features come from one pass over ``prompt + response``; block
    ``a`` holds response token ``a`` and mask tokens and sees the features of the tokens before
    it, as at inference."""
    device = target.get_input_embeddings().weight.device
    ids = torch.tensor([list(prompt) + list(response)])  # blocks are built on the CPU
    length, start = ids.shape[1], len(prompt)
    valid = torch.ones_like(ids, dtype=torch.bool, device=device)
    features = target_features(target, drafter.config.target_layer_ids, ids.to(device), valid)
    loss_mask = torch.zeros_like(ids)
    loss_mask[0, start:] = 1
    embed, size = target.get_input_embeddings(), drafter.block_size
    for first in range(start, length - 1, REPLAY_ANCHORS_PER_PASS):
        anchors = torch.arange(first, min(first + REPLAY_ANCHORS_PER_PASS, length - 1))[None]
        blocks = build_blocks(ids, loss_mask, anchors, size, drafter.mask_token_id).to(device)
        hidden = block_hidden(drafter, embed, features, valid, blocks)
        yield hidden.view(-1, size, hidden.shape[-1]), blocks.labels.view(-1, size)


@dataclass
class ReplayResult(SpecResult):
    """A :class:`SpecResult` replayed from fixed responses, with every anchor's run of correct drafts."""

    # Per request: correct drafts in a row of the block anchored at each response token (the
    # walk visits some of them; their mean is the teacher-forced acceptance the trainer logs for
    # its held-out records, here on the evaluation prompts).
    block_hits: list[list[int]] = field(default_factory=list)


def replay_spec(
    target: nn.Module,
    drafter: DFlashDraftModel,
    prompts: Sequence[Sequence[int]],
    responses: Sequence[Sequence[int]],
    params: SamplingParams,
    tree: DraftTree | None = None,
) -> ReplayResult:
    """What greedy :func:`~sglang_dflash.reference.spec_generate` returns, replayed teacher-forced.

    ``responses`` must be the target's greedy responses to ``prompts`` under ``params`` (stop
    tokens included); the result's ``accept_lens`` are those of the reference's verify steps
    (with ``tree``: of ``spec_generate(..., tree=tree)``).
    """
    if params.temperature > 0:
        raise ValueError(
            f"replay_spec: temperature is {params.temperature}; expected 0 (greedy output is fixed)"
        )
    kept = [list(r)[: params.max_new_tokens] for r in responses]
    hits = [block_hits(target, drafter, p, r, tree).tolist() for p, r in zip(prompts, kept, strict=True)]
    return ReplayResult(
        token_ids=kept,
        accept_lens=[replay_walk(h) for h in hits],
        finish_reasons=["stop" if r and r[-1] in params.stop_token_ids else "length" for r in kept],
        num_prompt_tokens=[len(p) for p in prompts],
        block_hits=hits,
    )


def greedy_responses(
    target: nn.Module,
    prompts: Sequence[Sequence[int]],
    params: SamplingParams,
    path: str,
    max_minutes: float | None = None,
) -> list[list[int]] | None:
    """The target's greedy response to every prompt, kept in ``path`` (JSONL, gzip-compressed when
    it ends in ``.gz``; resumable per prompt).

    The first line holds the settings (the target's weight digest, the budget and stop tokens);
    a file made under other settings is refused.  Every other line is one prompt's response, with
    the prompt's position and the digest of its ids, so the file grows with the prompt list and a
    different prompt at a kept position is refused.  Returns ``None`` when ``max_minutes`` ran out
    first (a rerun continues).
    """
    if len(params.stop_token_ids) > 1:
        raise ValueError(
            f"greedy_responses: stop_token_ids is {params.stop_token_ids}; expected at most one stop token"
        )
    settings = {
        "target_sha256": weights_sha256(target),
        "max_new_tokens": params.max_new_tokens,
        "stop_token_ids": list(params.stop_token_ids),
    }
    done = _resume(path, settings, "another target or budget: use another file")
    if not done:
        with open_text(path, "w") as f:
            f.write(json.dumps({"settings": settings}) + "\n")
    digests = [json_sha256(list(p)) for p in prompts]
    responses = {}
    for entry in done[1:]:
        index = entry["index"]
        if index < len(prompts) and entry["prompt_sha256"] != digests[index]:
            raise ValueError(
                f"{path}: prompt {index} has digest {entry['prompt_sha256']}; expected {digests[index]} "
                "(another prompt list: use another file)"
            )
        responses[index] = entry["response"]
    started, stop = time.time(), params.stop_token_ids[0] if params.stop_token_ids else None
    for index in tqdm([i for i in range(len(prompts)) if i not in responses], desc="greedy responses"):
        if max_minutes is not None and time.time() - started > 60 * max_minutes:
            return None
        # One prompt per pass: left padding changes float rounding, and with it near-tied argmaxes.
        responses[index] = generate_batch(target, [prompts[index]], params.max_new_tokens, stop)[0]
        entry = {"index": index, "prompt_sha256": digests[index], "response": responses[index]}
        with open_text(path, "a") as f:
            f.write(json.dumps(entry) + "\n")
    return [responses[i] for i in range(len(prompts))]
