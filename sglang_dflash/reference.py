"""Reference DFlash speculative generation against a Hugging Face causal LM (CPU-capable, batched).

This is the single source of truth for the algorithm; the SGLang worker is checked against it.
One step for every active row:

    block    = [bonus token, MASK x (block_size - 1)]   at positions seq_len .. seq_len + block_size - 1
    drafts   = draft_tokens(lm_head(drafter(block | context K/V))[1:])   (one non-causal pass)
    verify   = target(block with drafts)                     (one pass, block_size tokens)
    accept   = accept(): longest matching prefix (greedy) / speculative sampling, + 1 bonus token
    commit   = target KV of the block's first accept_lens columns stays valid, the rest is masked;
               their target hidden states are projected into the drafter's context cache

(glossary and shape legend: :mod:`sglang_dflash.speculative`)

A DFlash2 drafter (:mod:`sglang_dflash.dflash2`) chooses its drafts by a walk through its candidate
lattice instead of ``draft_tokens`` (greedy, or sampled with a sparse proposal over the candidates);
verification and commit are the same.

Rows accept different numbers of tokens; both caches keep per-row validity masks and are
compacted (left-padded) so that their length tracks the longest row, not the step count.
Finished rows leave the batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from .dflash2 import DFlash2DraftModel
from .draft_model import DFlashDraftModel, gather_kv_columns, left_pack_order
from .lookup import RequestLookups
from .speculative import (
    TARGET_DRAW,
    BatchSampling,
    Penalties,
    SamplingParams,
    SeededDraws,
    accept,
    apply_penalties_,
    block_positions,
    build_block,
    draft_tokens,
    sample_from,
    sampling_probs,
    truncate_at_stop,
)
from .tree import DraftTree

GREEDY = SamplingParams()  # spec_generate's default: greedy, 128 new tokens


@dataclass
class SpecResult:
    """Generated tokens and acceptance statistics per request."""

    token_ids: list[list[int]]
    # Per request, per verify step: tokens committed (accepted drafts + 1), after stop/budget truncation.
    accept_lens: list[list[int]]
    finish_reasons: list[str]  # "stop" or "length"
    num_prompt_tokens: list[int] = field(default_factory=list)

    @property
    def accept_lengths(self) -> list[list[int]]:
        """Deprecated alias of :attr:`accept_lens` (the same list); read-only."""
        return self.accept_lens

    @property
    def num_verify_steps(self) -> list[int]:
        return [len(a) for a in self.accept_lens]

    @property
    def tau(self) -> list[float]:
        """Mean ``accept_lens`` per request (nan for a request with no verify step)."""
        return [sum(a) / len(a) if a else float("nan") for a in self.accept_lens]

    @property
    def mean_tau(self) -> float:
        """Committed tokens per verify step over the whole batch."""
        steps = sum(self.num_verify_steps)
        return sum(map(sum, self.accept_lens)) / steps if steps else float("nan")


class _TargetCache:
    """The target's HF DynamicCache plus a per-row validity mask over its columns."""

    def __init__(self, config, attention_mask: torch.Tensor) -> None:
        from transformers import DynamicCache

        self.cache = DynamicCache(config=config)
        self.valid = attention_mask.bool()

    def mask_with(self, new_columns: int) -> torch.Tensor:
        ones = torch.ones(self.valid.shape[0], new_columns, dtype=torch.long, device=self.valid.device)
        return torch.cat([self.valid.long(), ones], dim=1)

    def commit(self, block_valid: torch.Tensor) -> None:
        self.valid = torch.cat([self.valid, block_valid], dim=1)
        order = left_pack_order(self.valid)
        self.valid = self.valid.gather(1, order)
        for layer in self.cache.layers:
            layer.keys = gather_kv_columns(layer.keys, order)
            layer.values = gather_kv_columns(layer.values, order)

    def select_rows(self, rows: torch.Tensor) -> None:
        self.cache.batch_select_indices(rows)
        self.valid = self.valid[rows]


def _left_pad(prompts: Sequence[Sequence[int]], device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(p) for p in prompts)
    ids = torch.zeros(len(prompts), width, dtype=torch.long)
    mask = torch.zeros(len(prompts), width, dtype=torch.long)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.tensor(list(prompt), dtype=torch.long)
        mask[row, width - len(prompt) :] = 1
    return ids.to(device), mask.to(device)


def _check_inputs(
    target: nn.Module, drafter: DFlashDraftModel, prompts: Sequence[Sequence[int]], block_size: int
) -> None:
    if not prompts or any(len(p) == 0 for p in prompts):
        lengths = [len(p) for p in prompts][:8]
        raise ValueError(
            f"spec_generate: prompt lengths are {lengths}; expected a non-empty list of non-empty prompts"
        )
    if block_size < 2:
        raise ValueError(
            f"spec_generate: block_size is {block_size}; "
            "expected >= 2 (the bonus token plus at least one draft)"
        )
    if getattr(target.config, "sliding_window", None) and getattr(target.config, "use_sliding_window", True):
        if any(t == "sliding_attention" for t in (getattr(target.config, "layer_types", None) or [])):
            raise NotImplementedError(
                "the reference supports full-attention targets only (sliding-window target layers found)"
            )
    drafter.config.validate_against_target(target.config)


def _sample_first(
    logits: torch.Tensor,
    sampling: BatchSampling,
    generator: torch.Generator | SeededDraws | None,
    penalties: Penalties | None,
) -> torch.Tensor:
    """The prefill's token per row from the target's last logits [bs, V] (the first bonus tokens)."""
    logits = logits[:, None, :].clone()
    if penalties is not None:
        apply_penalties_(logits, penalties)
    return sample_from(sampling_probs(logits, sampling), generator, TARGET_DRAW)[:, 0]


def _penalties(
    tokens: list[list[int]], rows: list[int], params: list[SamplingParams], vocab: int, device
) -> Penalties | None:
    """The step's penalties of the batch rows (request indices ``rows``), or None if no row has any."""
    if not any(params[r].penalized for r in rows):
        return None
    return Penalties.of_rows([tokens[r] for r in rows], [params[r] for r in rows], vocab, device)


def _draft(
    target: nn.Module,
    drafter: DFlashDraftModel,
    block: torch.Tensor,
    positions: torch.Tensor,
    cache,
    sampling: BatchSampling,
    generator: torch.Generator | SeededDraws | None,
    penalties: Penalties | None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One drafter pass: drafts [bs, block_size - 1] and their distributions (see :func:`draft_tokens`)."""
    embeds = target.get_input_embeddings()(block)
    hidden = drafter.draft_block(embeds, positions, cache)
    if isinstance(drafter, DFlash2DraftModel):
        # The walk's predecessor at the first draft position is the block's bonus token.
        draft_hidden, head = hidden[:, 1:].to(embeds.dtype), target.get_output_embeddings()
        return drafter.propose(draft_hidden, block[:, 0], head, sampling, generator, penalties)
    draft_logits = target.get_output_embeddings()(hidden[:, 1:].to(embeds.dtype))
    if penalties is not None:
        apply_penalties_(draft_logits, penalties)
    return draft_tokens(draft_logits, sampling, generator)


@torch.inference_mode()
def spec_generate(
    target: nn.Module,
    drafter: DFlashDraftModel,
    prompts: Sequence[Sequence[int]],
    sampling: SamplingParams | Sequence[SamplingParams] = GREEDY,
    block_size: int | None = None,
    generator: torch.Generator | None = None,
    tree: DraftTree | None = None,
) -> SpecResult:
    """Generate continuations of ``prompts`` with DFlash speculative decoding.

    ``sampling`` is one :class:`SamplingParams` for all rows or one per row (greedy and sampled
    rows can share a batch).  ``block_size`` defaults to the drafter's.  Sampled rows draw from
    ``generator``; once any row has a ``seed``, every row draws from its own seed instead (42 where
    it has none, as SGLang), and a seeded row's output is the same in any batch.  ``tree`` verifies
    a token tree of the drafts instead of their chain (:mod:`sglang_dflash.tree`; rows without
    penalties and a DFlash drafter only; a sampled row commits the target's draw after each node,
    so a seeded row's tokens are those of its plain sampled decoding with the same seed); its
    lookup branch, if any, is verified at the steps where some row has a proposal
    (:meth:`sglang_dflash.lookup.Proposals.step_nodes`), as a server verifies it.
    """
    block_size = block_size or drafter.block_size
    _check_inputs(target, drafter, prompts, block_size)
    params = [sampling] * len(prompts) if isinstance(sampling, SamplingParams) else list(sampling)
    if len(params) != len(prompts):
        raise ValueError(f"got {len(params)} SamplingParams for {len(prompts)} prompts")
    if tree is not None:
        _check_tree(tree, drafter, params, block_size)
    device = target.get_input_embeddings().weight.device
    batch = BatchSampling.from_params(params, device)
    max_new = torch.tensor([p.max_new_tokens for p in params], device=device)
    layer_ids = drafter.config.target_layer_ids

    # Prefill: the whole prompt in one target pass; its features seed the drafter's context.
    input_ids, attention_mask = _left_pad(prompts, device)
    positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    tcache = _TargetCache(target.config, attention_mask)
    out = target(
        input_ids,
        attention_mask=attention_mask,
        position_ids=positions,
        past_key_values=tcache.cache,
        use_cache=True,
        output_hidden_states=True,
        logits_to_keep=1,
    )
    seq_lens = attention_mask.sum(1)
    # The first new token sits at position seq_len; SamplingParams.seed makes rows reproducible.
    vocab = target.get_output_embeddings().weight.shape[0]
    no_output: list[list[int]] = [[] for _ in prompts]
    first_penalties = _penalties(no_output, list(range(len(prompts))), params, vocab, device)
    bonus_tokens = _sample_first(out.logits[:, -1], batch, batch.draws(seq_lens, generator), first_penalties)
    dcache = drafter.new_cache(len(prompts), device, drafter.fc.weight.dtype)
    drafter.extend_cache(
        dcache, drafter.select_target_features(out.hidden_states, layer_ids), attention_mask.bool(), positions
    )

    tokens = [[int(t)] for t in bonus_tokens.tolist()]
    accept_lens_per_request: list[list[int]] = [[] for _ in prompts]
    reasons = ["length"] * len(prompts)
    _, first_stop = truncate_at_stop(
        bonus_tokens[:, None], torch.ones_like(max_new), max_new, batch.stop_token_ids
    )
    for row in torch.nonzero(first_stop).flatten().tolist():
        reasons[row] = "stop"
    active = ~first_stop & (max_new > 1)
    rows = torch.arange(len(prompts), device=device)  # batch position -> request index
    lookups = RequestLookups()  # a tree's lookup branch: each request's context proposals

    while True:
        keep = torch.nonzero(active).flatten()
        if keep.numel() == 0:
            break
        if keep.numel() < rows.numel():
            rows, bonus_tokens, seq_lens = rows[keep], bonus_tokens[keep], seq_lens[keep]
            batch = batch.select(keep)
            tcache.select_rows(keep)
            dcache.select_rows(keep)

        block = build_block(bonus_tokens, block_size, drafter.mask_token_id)
        pos = block_positions(seq_lens, block_size)
        draws = batch.draws(seq_lens + 1, generator)  # the drafts decide positions seq_len + 1 ...
        penalties = _penalties(tokens, rows.tolist(), params, vocab, device)
        if tree is None:
            num_correct_drafts, emitted, committed, pos, out = _chain_step(
                target, drafter, block, pos, tcache, dcache, batch, draws, penalties
            )
        else:
            step_tree, proposals = tree, None  # a tree without a lookup branch indexes no context
            if tree.lookup:
                # The branch where some row has a proposal, the tree alone elsewhere (as a server).
                contexts = [(str(r), list(prompts[r]) + tokens[r]) for r in rows.tolist()]
                found = lookups.proposals(contexts, tree.lookup)
                step_tree, proposals = tree.cut_lookup(found.step_nodes()), found.tokens
            num_correct_drafts, emitted, committed, pos, out = _tree_step(
                target, drafter, step_tree, block, seq_lens, tcache, dcache, batch, draws, proposals
            )
        accept_lens = num_correct_drafts + 1
        # Commit the accepted columns (KV + context features); the others are masked out.
        tcache.commit(committed)
        features = drafter.select_target_features(out.hidden_states, layer_ids)
        drafter.extend_cache(dcache, features, committed, pos)
        seq_lens = seq_lens + accept_lens
        bonus_tokens = emitted.gather(1, num_correct_drafts[:, None])[:, 0]

        produced = torch.tensor([len(tokens[r]) for r in rows.tolist()], device=device)
        count, hit_stop = truncate_at_stop(
            emitted, accept_lens, max_new[rows] - produced, batch.stop_token_ids
        )
        active = ~hit_stop & (produced + count < max_new[rows])
        for i, r in enumerate(rows.tolist()):
            n = int(count[i])
            tokens[r].extend(emitted[i, :n].tolist())
            accept_lens_per_request[r].append(n)
            if bool(hit_stop[i]):
                reasons[r] = "stop"

    return SpecResult(tokens, accept_lens_per_request, reasons, [len(p) for p in prompts])


def _check_tree(
    tree: DraftTree, drafter: DFlashDraftModel, params: Sequence[SamplingParams], block_size: int
) -> None:
    tree.check_block(block_size)
    if isinstance(drafter, DFlash2DraftModel):
        raise ValueError(
            "spec_generate: tree verification drafts by rank; a DFlash2 drafter walks its lattice"
        )
    unsupported = [i for i, p in enumerate(params) if p.penalized]
    if unsupported:
        raise ValueError(
            f"spec_generate: rows {unsupported[:8]} carry penalties; tree verification does not "
            "apply them (expected no penalties, or tree=None)"
        )


StepOutcome = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, object]


def _chain_step(
    target: nn.Module,
    drafter: DFlashDraftModel,
    block: torch.Tensor,
    pos: torch.Tensor,
    tcache: _TargetCache,
    dcache,
    batch: BatchSampling,
    draws,
    penalties: Penalties | None,
) -> StepOutcome:
    """Draft a chain, verify it, accept: (num_correct_drafts, emitted, committed columns, their
    positions, the verify's output)."""
    block_size = block.shape[1]
    drafts, draft_probs = _draft(target, drafter, block, pos, dcache, batch, draws, penalties)
    block[:, 1:] = drafts
    out = target(
        block,
        attention_mask=tcache.mask_with(block_size),
        position_ids=pos,
        past_key_values=tcache.cache,
        use_cache=True,
        output_hidden_states=True,
    )
    target_logits = out.logits
    if penalties is not None:
        apply_penalties_(target_logits, penalties, chain=drafts)
    num_correct_drafts, emitted = accept(drafts, draft_probs, target_logits, batch, draws)
    committed = torch.arange(block_size, device=block.device)[None, :] <= num_correct_drafts[:, None]
    return num_correct_drafts, emitted, committed, pos, out


def _tree_step(
    target: nn.Module,
    drafter: DFlashDraftModel,
    tree: DraftTree,
    block: torch.Tensor,
    seq_lens: torch.Tensor,
    tcache: _TargetCache,
    dcache,
    sampling: BatchSampling,
    draws: torch.Generator | SeededDraws | None,
    proposals: torch.Tensor | None,
) -> StepOutcome:
    """Draft every tree node from one drafter pass (a lookup branch's nodes: ``proposals``
    [bs, >= tree.lookup] where the context has some; None without a branch), verify the tree in one
    target pass (each node sees the prefix and its ancestors), walk it with the target's token
    after every node (its argmax, or a sampled row's draw: :meth:`DraftTree.target_tokens`; see
    :func:`_chain_step` for the result)."""
    embeds = target.get_input_embeddings()(block)
    hidden = drafter.draft_block(embeds, block_positions(seq_lens, block.shape[1]), dcache)
    draft_logits = target.get_output_embeddings()(hidden[:, 1:].to(embeds.dtype))
    drafts = tree.place_lookup(tree.draft_tokens(draft_logits), proposals)
    nodes = torch.cat([block[:, :1], drafts], dim=1)
    node_pos = tree.node_positions(seq_lens)
    # An explicit 4D mask: HF uses it as given (additive, so eager and SDPA read it alike).
    visible = torch.cat(
        [
            tcache.valid[:, None, :].expand(-1, tree.num_nodes, -1),
            tree.ancestor_mask(block.device).expand(block.shape[0], -1, -1),
        ],
        dim=2,
    )
    dtype = target.get_input_embeddings().weight.dtype
    mask = torch.zeros(visible.shape, dtype=dtype, device=block.device)
    mask.masked_fill_(~visible, torch.finfo(dtype).min)
    out = target(
        nodes,
        attention_mask=mask[:, None],
        position_ids=node_pos,
        past_key_values=tcache.cache,
        use_cache=True,
        output_hidden_states=True,
    )
    targets = tree.target_tokens(out.logits, sampling, draws)
    on_path, num_correct_drafts, emitted = tree.greedy_accept_argmax(nodes, targets)
    return num_correct_drafts, emitted, on_path, node_pos, out
