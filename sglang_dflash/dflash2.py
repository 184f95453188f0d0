"""DFlash2 drafters (``architectures: ["DFlash2DraftModel"]``) in pure PyTorch.

A DFlash2 drafter is a DFlash drafter (:mod:`sglang_dflash.draft_model`: same context projection,
K/V injection, block of ``[bonus token, MASK ...]``) with two additions, checked against the public
format (z-lab/dflash ``dflash/model.py`` and test fixtures, vLLM ``qwen3_dflash2.py`` and its
DFlash2 speculator):

**Grouped in-block convolution**, twice per layer (``attention_conv`` around attention,
``mlp_conv`` around the MLP).  With ``T = conv_kernel_size`` taps, ``g = conv_group_size`` and
``G = H / g`` channel groups, a convolution has ``base_kernel`` ``B [2, T, H]`` and
``kernel_projection.weight`` ``W [2*T*G, H]``.  For the normed layer input ``u_t`` of block row
``t`` (``t`` = the row's position inside its block, 0 for the bonus token)::

    D_t = (W u_t).view(2, T, G)                                     # dynamic coefficients, sides 0, 1
    conv_s(x)_t[c] = sum_{j=0}^{min(T-1, t)} (B[s, j, c] + D_t[s, j, c // g]) * x_{t-j}[c]

A row reads only rows of its own block, at or before it (causal inside the block, never across
blocks or requests).  A layer, with ``n = input_layernorm(x)`` and ``m`` the post-attention norm::

    x = x + conv_1(attention(conv_0(n)))        # D from n; Q and the block's K/V use conv_0(n)
    x = x + conv_1'(mlp(conv_0'(m)))            # D' from m

The context K/V (projected target features) do not pass through any convolution.  Block embeddings
are multiplied by ``input_embedding_scale`` (default 1).

**Candidate selector** over the final-norm hidden states ``h_i`` of draft positions ``i = 1 .. n``
(``n = block_size - 1``), with ``K = selector_top_k`` and rank ``r = selector_rank``::

    (c_i[k], l_i[k]) = top-K of lm_head(h_i)                        # the target's head, descending
    u_i[k] = softcap(output_multiplier * l_i[k])                     # softcap(v) = cap * tanh(v / cap)
    z_i    = hidden_projection.weight @ h_i                          # [r]
    prev_1[j] = anchor (the block's bonus token);  prev_i[j] = c_{i-1}[j]  for i > 1
    S_i[j, k] = u_i[k] + sum_r predecessor_codebook[prev_i[j], r] * z_i[r] * successor_codebook[c_i[k], r]

**Walk** (one path through the lattice, ``j_0 = 0``: position 1's rows are all the anchor)::

    greedy:  j_i = argmax_k S_i[j_{i-1}, k]                 (the first candidate on ties)
    sampled: j_i ~ q_i = softmax(S_i[j_{i-1}, :] / temperature)   (inverse CDF of one uniform)
    draft_i = c_i[j_i]

The sparse proposal is ``q_i`` on the vocabulary: ``q_i[c_i[k]]`` as above, 0 for every other token.
It depends on the drafts before position ``i`` only, so speculative sampling with it
(:func:`~sglang_dflash.speculative.speculative_sampling_accept`) keeps the output distribution
exactly the target's; greedy rows are verified by argmax as in DFlash.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .config import DRAFT2_ARCHITECTURE, DFlashConfig, draft_config_for_target
from .draft_model import DFlashDecoderLayer, DFlashDraftModel
from .speculative import DRAFT_DRAW, BatchSampling, Penalties, SeededDraws, apply_penalties_


# ---------------------------------------------------------------------------- convolution
def grouped_block_conv(
    x: torch.Tensor, coefficients: torch.Tensor, base: torch.Tensor, block_size: int
) -> torch.Tensor:
    """One side of the grouped in-block convolution (module docstring) over rows of whole blocks.

    ``x`` [N, H] holds N / block_size blocks of contiguous rows (row % block_size = position in its
    block); ``coefficients`` [N, T, G] are the rows' dynamic coefficients of this side and ``base``
    [T, H] its base kernel.  Taps shift rows inside the block axis, so no value, not even a NaN,
    crosses from one block into the next.
    """
    n, h = x.shape
    taps, groups = coefficients.shape[1], coefficients.shape[2]
    if n % block_size:
        raise ValueError(
            f"grouped_block_conv: rows is {n}; expected a multiple of block_size={block_size} "
            "(every request's block contiguous and whole)"
        )
    blocks = x.view(n // block_size, block_size, groups, h // groups)
    kernel = base.to(x.dtype).view(1, 1, taps, groups, h // groups) + coefficients.to(x.dtype).view(
        n // block_size, block_size, taps, groups, 1
    )
    out = kernel[:, :, 0] * blocks
    for tap in range(1, min(taps, block_size)):
        # Row t reads row t - tap of the same block; the block's first `tap` rows have no such row.
        out[:, tap:] += kernel[:, tap:, tap] * blocks[:, :-tap]
    return out.view(n, h)


class GroupedBlockConv(nn.Module):
    """``attention_conv`` / ``mlp_conv``: both sides' coefficients come from the sublayer's input."""

    def __init__(self, config: DFlashConfig) -> None:
        super().__init__()
        self.taps, self.groups = config.conv_kernel_size, config.conv_num_groups
        self.base_kernel = nn.Parameter(torch.zeros(2, self.taps, config.hidden_size))
        self.kernel_projection = nn.Linear(config.hidden_size, 2 * self.taps * self.groups, bias=False)

    def prepare(self, u: torch.Tensor, block_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Side 0 applied to ``u`` [N, H], and side 1's coefficients [N, T, G] (for :meth:`finish`)."""
        coefficients = self.kernel_projection(u).view(u.shape[0], 2, self.taps, self.groups)
        return grouped_block_conv(u, coefficients[:, 0], self.base_kernel[0], block_size), coefficients[:, 1]

    def finish(self, y: torch.Tensor, coefficients: torch.Tensor, block_size: int) -> torch.Tensor:
        """Side 1 applied to the sublayer's output ``y`` [N, H]."""
        return grouped_block_conv(y, coefficients, self.base_kernel[1], block_size)


def _rows(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(-1, x.shape[-1])


class DFlash2DecoderLayer(DFlashDecoderLayer):
    """A DFlash layer whose attention and MLP are each wrapped in a :class:`GroupedBlockConv`.

    Input ``x`` [bs, block_size, H]: one block per row (the inference layout of the reference).
    """

    def __init__(self, config: DFlashConfig) -> None:
        super().__init__(config)
        self.attention_conv = GroupedBlockConv(config)
        self.mlp_conv = GroupedBlockConv(config)

    def forward(self, x, positions, context_kv, mask, inv_freq) -> torch.Tensor:
        shape, block = x.shape, x.shape[1]
        normed, after = self.attention_conv.prepare(_rows(self.input_layernorm(x)), block)
        attn = self.self_attn(normed.view(shape), positions, context_kv, mask, inv_freq)
        x = x + self.attention_conv.finish(_rows(attn), after, block).view(shape)
        normed, after = self.mlp_conv.prepare(_rows(self.post_attention_layernorm(x)), block)
        return x + self.mlp_conv.finish(_rows(self.mlp(normed)), after, block).view(shape)


# ---------------------------------------------------------------------------- selector
def top_candidates(logits: torch.Tensor, config: DFlashConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """Candidate ids [.., K] (descending logit) and unary scores [.., K] (float32) of logits [.., V]."""
    values, ids = torch.topk(logits, config.selector_top_k, dim=-1)
    unary = values.float() * config.output_multiplier
    cap = config.final_logit_softcapping
    if cap is not None:
        unary = torch.tanh(unary / cap) * cap
    return ids, unary


class CandidateSelector(nn.Module):
    """``candidate_selector``: codebooks [V, r] (no ``.weight`` suffix) and ``hidden_projection`` [r, H]."""

    def __init__(self, config: DFlashConfig) -> None:
        super().__init__()
        rank = config.selector_rank
        self.predecessor_codebook = nn.Parameter(torch.zeros(config.vocab_size, rank))
        self.successor_codebook = nn.Parameter(torch.zeros(config.vocab_size, rank))
        self.hidden_projection = nn.Linear(config.hidden_size, rank, bias=False)

    def lattice(
        self,
        hidden: torch.Tensor,
        candidate_ids: torch.Tensor,
        unary: torch.Tensor,
        anchor_ids: torch.Tensor,
    ) -> torch.Tensor:
        """Scores S [bs, n, K (predecessor slot), K (candidate slot)], float32 (module docstring).

        ``hidden`` [bs, n, H] final-norm states of the draft positions, ``candidate_ids`` and
        ``unary`` [bs, n, K], ``anchor_ids`` [bs] the blocks' bonus tokens.
        """
        top_k = candidate_ids.shape[-1]
        z = self.hidden_projection(hidden.to(self.hidden_projection.weight.dtype)).float()
        previous = torch.cat([anchor_ids[:, None, None].expand(-1, 1, top_k), candidate_ids[:, :-1]], dim=1)
        pred = self.predecessor_codebook[previous].float() * z[:, :, None, :]  # [bs, n, K, r]
        succ = self.successor_codebook[candidate_ids].float()  # [bs, n, K, r]
        return unary[:, :, None, :] + torch.einsum("bnpr,bncr->bnpc", pred, succ)


def inverse_cdf_slots(probs: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """Slot [bs] for probs [bs, K] and uniforms [bs]: the first slot whose cumulative mass exceeds u."""
    cdf = probs.to(torch.float64).cumsum(-1)
    target = (uniforms.to(torch.float64) * cdf[:, -1])[:, None]
    return torch.searchsorted(cdf, target, right=True)[:, 0].clamp_(max=probs.shape[-1] - 1)


def walk_lattice(
    scores: torch.Tensor, temperature: torch.Tensor, uniforms: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Walk S [bs, n, K, K]: chosen slots [bs, n] and the realised rows' proposals q [bs, n, K].

    ``temperature`` [bs]: 0 walks greedily (q is then one-hot at the choice), else samples
    softmax(row / temperature) with ``uniforms`` [bs, n] (needed unless every row is greedy).
    """
    bs, n, top_k, _ = scores.shape
    greedy = temperature <= 0
    scale = torch.where(greedy, torch.ones_like(temperature), temperature).float()[:, None]
    rows = torch.arange(bs, device=scores.device)
    previous = torch.zeros(bs, dtype=torch.long, device=scores.device)
    slots, proposals = [], []
    for i in range(n):
        row = scores[rows, i, previous]  # [bs, K]: the successors of the previous choice
        choice = row.argmax(-1)
        q = torch.softmax(row / scale, dim=-1)
        if uniforms is not None:
            choice = torch.where(greedy, choice, inverse_cdf_slots(q, uniforms[:, i]))
        q = torch.where(greedy[:, None], F.one_hot(choice, top_k).to(q.dtype), q)
        slots.append(choice)
        proposals.append(q)
        previous = choice
    return torch.stack(slots, dim=1), torch.stack(proposals, dim=1)


def dense_proposal(q: torch.Tensor, candidate_ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """The sparse proposal q [bs, n, K] over candidate slots as a distribution [bs, n, V] (0 elsewhere)."""
    out = torch.zeros(*q.shape[:-1], vocab_size, dtype=torch.float32, device=q.device)
    return out.scatter_(-1, candidate_ids, q.float())


def draft_uniforms(
    generator: torch.Generator | SeededDraws | None, bs: int, n: int, device: torch.device
) -> torch.Tensor:
    """One uniform [bs, n] per draft position: a seeded request's ``DRAFT_DRAW`` at that position."""
    if isinstance(generator, SeededDraws):
        return generator.uniforms(n, DRAFT_DRAW)
    return torch.rand(bs, n, generator=generator, dtype=torch.float64, device=device)


# ---------------------------------------------------------------------------- the drafter
class DFlash2DraftModel(DFlashDraftModel):
    """A DFlash drafter with in-block convolutions and a candidate selector (module docstring)."""

    layer_class = DFlash2DecoderLayer
    generation = 2

    def __init__(self, config: DFlashConfig) -> None:
        super().__init__(config)
        self.candidate_selector = CandidateSelector(config)

    def forward(self, block_embeds, block_positions, context_kv, masks) -> torch.Tensor:
        """As :meth:`DFlashDraftModel.forward`, embeddings scaled first; exactly one block per row
        (the convolutions take the row length as the block size)."""
        return super().forward(
            block_embeds * self.config.input_embedding_scale, block_positions, context_kv, masks
        )

    def propose(
        self,
        hidden: torch.Tensor,
        anchor_ids: torch.Tensor,
        lm_head: nn.Module,
        sampling: BatchSampling,
        generator: torch.Generator | SeededDraws | None = None,
        penalties: Penalties | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Drafts [bs, n] for draft positions' hidden states [bs, n, H] and their proposals [bs, n, V]
        (:func:`select_drafts`), the logits from the target's ``lm_head`` with ``penalties`` applied."""
        logits = lm_head(hidden)
        if penalties is not None:
            apply_penalties_(logits, penalties)
        return select_drafts(
            self.config, self.candidate_selector, hidden, logits, anchor_ids, sampling, generator
        )


def select_drafts(
    config: DFlashConfig,
    selector: CandidateSelector,
    hidden: torch.Tensor,
    logits: torch.Tensor,
    anchor_ids: torch.Tensor,
    sampling: BatchSampling,
    generator: torch.Generator | SeededDraws | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The selector's draft step, shared by the reference and the SGLang worker.

    ``hidden`` [bs, n, H] final-norm states and ``logits`` [bs, n, V] (penalties already applied)
    of the draft positions, ``anchor_ids`` [bs] the blocks' bonus tokens.  Returns drafts [bs, n] and
    their sparse proposals [bs, n, V], or None when every row is greedy (argmax verification needs
    none), as :func:`~sglang_dflash.speculative.draft_tokens` returns.
    """
    candidate_ids, unary = top_candidates(logits, config)
    scores = selector.lattice(hidden, candidate_ids, unary, anchor_ids)
    bs, n = candidate_ids.shape[:2]
    uniforms = None if sampling.all_greedy else draft_uniforms(generator, bs, n, hidden.device)
    slots, q = walk_lattice(scores, sampling.temperature, uniforms)
    drafts = candidate_ids.gather(-1, slots[..., None])[..., 0]
    if sampling.all_greedy:
        return drafts, None
    return drafts, dense_proposal(q, candidate_ids, logits.shape[-1])


# ---------------------------------------------------------------------------- construction
def dflash2_config_for_target(
    target_config: Any,
    conv_kernel_size: int = 2,
    conv_group_size: int | None = None,
    selector_rank: int = 8,
    selector_top_k: int = 4,
    **kwargs: Any,
) -> DFlashConfig:
    """A DFlash2 drafter config that fits ``target_config`` (``kwargs``: :func:`draft_config_for_target`).

    ``conv_group_size`` defaults to the largest of 16, 8, 4, 2, 1 that divides the hidden size.
    """
    config = draft_config_for_target(target_config, **kwargs)
    if conv_group_size is None:
        conv_group_size = next(g for g in (16, 8, 4, 2, 1) if config.hidden_size % g == 0)
    return config.replace(
        architecture=DRAFT2_ARCHITECTURE,
        conv_kernel_size=conv_kernel_size,
        conv_group_size=conv_group_size,
        selector_rank=selector_rank,
        selector_top_k=selector_top_k,
    )


def init_dflash2_weights(model: DFlash2DraftModel, seed: int = 0, std: float = 0.1) -> DFlash2DraftModel:
    """Random but well-conditioned: Normal(0, std) matrices, unit norms, and convolutions near identity
    (base kernel 1 at tap 0, ``std`` elsewhere) so a random drafter's signal survives its layers."""
    from .testing import init_drafter_weights

    init_drafter_weights(model, seed, std)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("base_kernel"):
                p[:, 0] += 1.0
    return model


def make_tiny_dflash2_drafter(
    target_config: Any, seed: int = 0, std: float = 0.1, block_size: int = 4, **config_kwargs: Any
) -> DFlash2DraftModel:
    """A random DFlash2 drafter for ``target_config``; ``config_kwargs`` go to
    :func:`dflash2_config_for_target`."""
    config = dflash2_config_for_target(target_config, block_size=block_size, **config_kwargs)
    return init_dflash2_weights(DFlash2DraftModel(config), seed, std).eval()


def dflash2_from_dflash(
    drafter: DFlashDraftModel, conv_kernel_size: int = 2, selector_rank: int = 8, selector_top_k: int = 16
) -> DFlash2DraftModel:
    """A DFlash2 drafter that drafts greedily exactly what the DFlash ``drafter`` drafts.

    Its convolutions are the identity (base kernel 1 at tap 0, 0 elsewhere, no dynamic part) and
    its codebooks are zero, so every lattice score is the unary logit and the greedy walk picks each
    position's argmax.  Sampled rows draw from the top ``selector_top_k`` candidates instead of the
    whole vocabulary (still lossless).  A trained DFlash drafter so becomes a DFlash2 drafter with a
    known acceptance, which exercises the whole DFlash2 path where no trained DFlash2 drafter fits.
    """
    config = drafter.config.replace(
        architecture=DRAFT2_ARCHITECTURE,
        conv_kernel_size=conv_kernel_size,
        conv_group_size=next(g for g in (16, 8, 4, 2, 1) if drafter.config.hidden_size % g == 0),
        selector_rank=selector_rank,
        selector_top_k=selector_top_k,
    )
    model = DFlash2DraftModel(config).to(drafter.fc.weight.dtype)
    missing, unexpected = model.load_state_dict(drafter.state_dict(), strict=False)
    if unexpected or any(not (k.startswith("candidate_selector.") or "_conv." in k) for k in missing):
        raise ValueError(f"dflash2_from_dflash: tensors missing {missing}, unexpected {unexpected}")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name in missing:
                p.zero_()
            if name.endswith("base_kernel"):
                p[:, 0] = 1.0
    return model.eval()
