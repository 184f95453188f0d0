"""The DFlash training objective: many anchored blocks per sequence in one drafter forward.

For a training sequence x[0..T) (prompt + the target's own response):

- the frozen target gives the hidden states of the chosen layers for every token; the drafter
  projects them (``fc`` + ``hidden_norm``) into context features and per-layer K/V;
- ``num_anchors`` anchor positions a are sampled among tokens whose successor is a response token;
  each anchor starts a block ``[x[a], MASK x (block_size-1)]`` at positions a..a+block_size-1;
- a block's queries see the context features of the tokens before its anchor (exactly what is
  committed at inference time) and every token of their own block, nothing of other blocks;
- block position i (1..block_size-1) is trained to predict x[a+i], the target's next token, with
  cross-entropy weighted by ``exp(-(i-1)/gamma)``: a miss early in the block ends acceptance, so
  early positions matter most (``gamma=None`` weighs all positions equally);
- with a distillation weight alpha (``train --distill-weight``), each position's loss is
  ``(1 - alpha) * CE + alpha * KL(p || q)``: p the target's own next-token distribution at the
  label's position (``lm_head`` of its final hidden state one token before), q the drafter's.  The
  labels are p's argmax (the target's greedy tokens); p adds how sure the target is and what it
  would say instead.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..draft_model import BlockVisibility, DFlashDraftModel

IGNORE = -100


@dataclass
class BlockBatch:
    """Blocks of a batch of sequences, flattened per row: [R, A*block_size] tensors."""

    tokens: torch.Tensor  # block input ids (anchor token, then mask tokens)
    positions: torch.Tensor  # absolute positions a..a+block_size-1
    labels: torch.Tensor  # x[a+i] for i >= 1 inside the loss region, else IGNORE
    block_ids: torch.Tensor  # which block (0..A-1) each query belongs to; -1 for padding blocks
    anchors: torch.Tensor  # [R, A] anchor positions (-1 for padding)

    @property
    def block_size(self) -> int:
        """Queries per block: each row holds its A blocks' queries one block after the other."""
        return self.positions.shape[1] // self.anchors.shape[1]

    def to(self, device: torch.device | str) -> BlockBatch:
        """The same blocks with every tensor on ``device``."""
        return BlockBatch(*(getattr(self, f.name).to(device) for f in dataclasses.fields(self)))


def sample_anchors(
    loss_mask: torch.Tensor, num_anchors: int, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Up to ``num_anchors`` distinct anchors per row [R, A] (-1 padded), sorted.

    Candidates are positions a whose next token x[a+1] is in the loss region (a response token).
    """
    rows, length = loss_mask.shape
    candidates = torch.zeros_like(loss_mask, dtype=torch.bool)
    candidates[:, :-1] = loss_mask[:, 1:].bool()
    anchors = torch.full((rows, num_anchors), -1, dtype=torch.long)
    for r in range(rows):
        pool = torch.nonzero(candidates[r]).flatten()
        if pool.numel() == 0:
            continue
        pick = pool[torch.randperm(pool.numel(), generator=generator)[:num_anchors]]
        anchors[r, : pick.numel()] = pick.sort().values
    return anchors


def build_blocks(
    input_ids: torch.Tensor,
    loss_mask: torch.Tensor,
    anchors: torch.Tensor,
    block_size: int,
    mask_token_id: int,
) -> BlockBatch:
    """Block inputs, positions and labels for every anchor (see module doc)."""
    rows, length = input_ids.shape
    num_anchors = anchors.shape[1]
    offsets = torch.arange(block_size)
    valid_block = anchors >= 0
    positions = anchors.clamp(min=0)[:, :, None] + offsets[None, None, :]  # [R, A, block_size]
    tokens = torch.full((rows, num_anchors, block_size), mask_token_id, dtype=torch.long)
    tokens[:, :, 0] = input_ids.gather(1, anchors.clamp(min=0))
    in_range = positions < length
    target_pos = positions.clamp(max=length - 1)
    labels = input_ids.gather(1, target_pos.view(rows, -1)).view(rows, num_anchors, block_size)
    supervised = in_range & loss_mask.bool().gather(1, target_pos.view(rows, -1)).view_as(in_range)
    supervised &= valid_block[:, :, None] & (offsets[None, None, :] >= 1)
    labels = torch.where(supervised, labels, torch.full_like(labels, IGNORE))
    block_ids = torch.where(valid_block, torch.arange(num_anchors)[None, :], -1)[:, :, None].expand(
        -1, -1, block_size
    )
    flat = [t.reshape(rows, num_anchors * block_size) for t in (tokens, positions, labels, block_ids)]
    return BlockBatch(*flat, anchors)


def position_weights(block_size: int, gamma: float | None) -> torch.Tensor:
    """Loss weight of block positions 0..block_size-1 (position 0, the anchor, is never supervised)."""
    i = torch.arange(block_size, dtype=torch.float32)
    weights = torch.ones(block_size) if gamma is None else torch.exp(-(i - 1).clamp(min=0) / gamma)
    weights[0] = 0.0
    return weights


def context_visibility(blocks: BlockBatch, context_valid: torch.Tensor) -> torch.Tensor:
    """[R, A*block_size, T]: query q sees context token t iff t < anchor(q) and t is a real token."""
    anchor_of_query = blocks.anchors.clamp(min=0).repeat_interleave(blocks.block_size, dim=1)
    t = torch.arange(context_valid.shape[1], device=context_valid.device)
    return (t[None, None, :] < anchor_of_query[:, :, None]) & context_valid[:, None, :]


def block_hidden(
    drafter: DFlashDraftModel,
    embed: nn.Embedding,
    target_features: torch.Tensor,
    context_valid: torch.Tensor,
    blocks: BlockBatch,
) -> torch.Tensor:
    """The drafter's output hidden states [R, A*block_size, H] for every block query, in one forward.

    ``target_features`` [R, T, K*H] are the frozen target's concatenated hidden states,
    ``context_valid`` [R, T] marks real (non-padding) tokens.
    """
    rows, length, _ = target_features.shape
    ctx_positions = torch.arange(length, device=target_features.device)[None].expand(rows, -1)
    context = drafter.project_context(target_features)
    context_kv = drafter.context_kv(context, ctx_positions)
    attention = block_attention(drafter, blocks, ctx_positions, context_visibility(blocks, context_valid))
    return drafter(embed(blocks.tokens), blocks.positions, context_kv, attention)


def block_attention(
    drafter: DFlashDraftModel,
    blocks: BlockBatch,
    context_positions: torch.Tensor,
    context_visible: torch.Tensor,
) -> dict[bool, dict[bool, torch.Tensor | BlockVisibility]]:
    """The attention pattern of a batch of blocks, keyed as :meth:`DFlashDraftModel.attention_masks`.

    Where every layer is bidirectional and full (the published drafters), the pattern stays
    factored (:class:`~sglang_dflash.draft_model.BlockVisibility`): the dense mask's scores grow
    with the square of the blocks per sequence (a step of 128 blocks a sequence took 3.6 times one
    of 32 on CPU, docs/training.md), the factored ones linearly.  Padding blocks (id -1) then see
    only their own block instead of every padding block: their positions carry no loss either way.
    """
    config = drafter.config
    layers = range(config.num_hidden_layers)
    if any(config.layer_is_sliding(i) or config.layer_is_causal(i) for i in layers):
        return drafter.attention_masks(blocks.positions, context_positions, context_visible, blocks.block_ids)
    return {False: {False: BlockVisibility(context_visible, blocks.block_size)}}


def distillation_kl(
    logits: torch.Tensor,
    lm_head: nn.Module,
    target_final: torch.Tensor | None,
    positions: torch.Tensor,
    supervised: torch.Tensor,
) -> torch.Tensor:
    """KL(p || q) per supervised query [N]: q from the drafter's ``logits`` [N, V], p the target's
    next-token distribution for the same token (its logits at the position before the label's)."""
    if target_final is None:
        raise ValueError(
            "dflash_loss: target_final is None with a distill weight; expected the target's final "
            "hidden states [R, T, H] (train --features-from-tokens computes them)"
        )
    rows = torch.arange(positions.shape[0], device=positions.device)[:, None].expand_as(positions)
    before = target_final[rows[supervised], positions[supervised] - 1]
    with torch.no_grad():
        teacher = F.log_softmax(lm_head(before.to(lm_head.weight.dtype)).float(), dim=-1)
    return (teacher.exp() * (teacher - F.log_softmax(logits, dim=-1))).sum(-1)


@dataclass
class LossOutput:
    loss: torch.Tensor
    ce: torch.Tensor  # the weighted cross-entropy alone (``loss`` without distillation)
    accuracy: torch.Tensor  # [block_size] top-1 accuracy per block position (nan where unsupervised)
    expected_accept: torch.Tensor  # mean accepted drafts per block if verified greedily against the labels


def dflash_loss(
    drafter: DFlashDraftModel,
    embed: nn.Embedding,
    lm_head: nn.Module,
    target_features: torch.Tensor,
    context_valid: torch.Tensor,
    blocks: BlockBatch,
    weights: torch.Tensor,
    target_final: torch.Tensor | None = None,
    distill_weight: float = 0.0,
) -> LossOutput:
    """Weighted cross-entropy (and KL to the target, ``distill_weight`` > 0) of all blocks of a batch
    in one drafter forward.

    ``target_features`` [R, T, K*H] are the frozen target's concatenated hidden states,
    ``context_valid`` [R, T] marks real (non-padding) tokens, ``target_final`` [R, T, H] the
    target's final hidden states (needed with ``distill_weight``).
    """
    rows = target_features.shape[0]
    block_size = weights.numel()
    hidden = block_hidden(drafter, embed, target_features, context_valid, blocks)

    supervised = blocks.labels != IGNORE
    logits = lm_head(hidden[supervised].to(lm_head.weight.dtype)).float()
    labels = blocks.labels[supervised]
    pos_in_block = torch.arange(blocks.labels.shape[1], device=hidden.device) % block_size
    w = weights.to(hidden.device)[pos_in_block[None].expand(rows, -1)[supervised]]
    ce = F.cross_entropy(logits, labels, reduction="none")
    w_total = w.sum().clamp_min(1e-8)
    ce_loss = (ce * w).sum() / w_total
    loss = ce_loss
    if distill_weight > 0:
        kl = distillation_kl(logits, lm_head, target_final, blocks.positions, supervised)
        loss = (1 - distill_weight) * ce_loss + distill_weight * (kl * w).sum() / w_total

    with torch.no_grad():
        correct = torch.zeros_like(blocks.labels, dtype=torch.float32)
        correct[supervised] = (logits.argmax(-1) == labels).float()
        per_pos = correct.view(rows, -1, block_size)
        sup = supervised.view(rows, -1, block_size)
        accuracy = per_pos.sum((0, 1)) / sup.sum((0, 1)).clamp_min(1)
        accuracy = torch.where(sup.sum((0, 1)) > 0, accuracy, torch.full_like(accuracy, math.nan))
        # Acceptance if verified against the labels: a run of hits from position 1 (unsupervised ends it).
        hits = (per_pos[..., 1:] * sup[..., 1:]).cumprod(-1).sum(-1)
        full_blocks = sup[..., 1].bool()
        expected_accept = hits[full_blocks].mean() if full_blocks.any() else torch.tensor(math.nan)
    return LossOutput(loss, ce_loss, accuracy, expected_accept)
