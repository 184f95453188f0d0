"""The DFlash drafter in pure PyTorch (the reference the SGLang model is checked against).

Data flow for one draft step:

1. ``project_context``: concat of the target's hidden states at ``target_layer_ids`` ->
   ``fc`` -> ``hidden_norm``: one context feature per committed token.
2. ``context_kv``: every draft layer turns each context feature into its own K (k_proj, k_norm,
   RoPE at the token's absolute position) and V (v_proj).  These live in a :class:`DraftContextCache`
   and are computed once per committed token ("K/V injection into every layer").
3. ``forward``: the block (last accepted token + mask tokens, embedded with the target's
   embeddings) attends bidirectionally over [context K/V ; block K/V] in every layer; the final
   norm's output goes through the target's lm_head (outside this module).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .config import DFlashConfig


class RMSNorm(nn.Module):
    """Qwen3/Llama RMSNorm: normalise in float32, scale in the input dtype."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.to(x.dtype)


def rope_inv_freq(head_dim: int, rope_parameters: dict) -> torch.Tensor:
    """Inverse frequencies for the supported RoPE types (default, linear, llama3)."""
    theta = rope_parameters["rope_theta"]
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    rope_type = rope_parameters["rope_type"]
    if rope_type == "linear":
        inv_freq = inv_freq / rope_parameters["factor"]
    elif rope_type == "llama3":
        factor = rope_parameters["factor"]
        low, high = rope_parameters.get("low_freq_factor", 1.0), rope_parameters.get("high_freq_factor", 4.0)
        old_len = rope_parameters.get("original_max_position_embeddings", 8192)
        wavelen = 2 * math.pi / inv_freq
        smooth = (old_len / wavelen - low) / (high - low)
        scaled = torch.where(wavelen > old_len / low, inv_freq / factor, inv_freq)
        mid = (wavelen <= old_len / low) & (wavelen >= old_len / high)
        inv_freq = torch.where(mid, (1 - smooth) * inv_freq / factor + smooth * inv_freq, scaled)
    return inv_freq.float()


def cos_sin_cache(head_dim: int, rope_parameters: dict, max_positions: int) -> torch.Tensor:
    """SGLang's RoPE cache layout: [max_positions, head_dim] = [cos | sin] of position * inv_freq."""
    freqs = (
        torch.arange(max_positions, dtype=torch.float32)[:, None]
        * rope_inv_freq(head_dim, rope_parameters)[None, :]
    )
    return torch.cat([freqs.cos(), freqs.sin()], dim=-1)


def apply_rope(x: torch.Tensor, positions: torch.Tensor, inv_freq: torch.Tensor) -> torch.Tensor:
    """Rotate ``x`` [bs, heads, T, D] by absolute ``positions`` [bs, T] (rotate-half convention)."""
    angles = positions.to(torch.float32)[:, None, :, None] * inv_freq.to(x.device)[None, None, None, :]
    emb = torch.cat([angles, angles], dim=-1)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class DFlashMLP(nn.Module):
    def __init__(self, config: DFlashConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


# Blocks whose context scores are computed together.  A sequence's blocks come sorted by anchor
# (objective.sample_anchors), so a group's scores stop at the last context column any of its
# queries sees instead of running over the whole context: about half the scores for many groups.
GROUP_BLOCKS = 16


@dataclass(frozen=True)
class BlockVisibility:
    """Training's attention pattern kept factored, for layers that are neither causal nor sliding.

    Query q (of ``A`` blocks of ``block_size`` queries each, block-major) sees the context entries
    ``context_visible[:, q]`` [R, A*block_size, T] and the queries of its own block.  The dense mask
    of the same pattern is [R, A*block_size, T + A*block_size], almost all of its block-to-block
    part False: its scores grow with the square of the blocks a sequence trains on, these linearly.
    """

    context_visible: torch.Tensor
    block_size: int

    @functools.cached_property
    def groups(self) -> list[tuple[int, int, int]]:
        """(first block, end block, context columns any of their queries sees) per GROUP_BLOCKS blocks."""
        rows, queries, length = self.context_visible.shape
        blocks = queries // self.block_size
        seen = self.context_visible.view(rows, blocks, self.block_size, length).any(dim=2).any(dim=0)
        spans = []
        for first in range(0, blocks, GROUP_BLOCKS):
            end = min(first + GROUP_BLOCKS, blocks)
            columns = seen[first:end].any(dim=0).nonzero()
            spans.append((first, end, int(columns.max()) + 1 if columns.numel() else 0))
        return spans


def blockwise_attention(
    q: torch.Tensor,
    context_kv: tuple[torch.Tensor, torch.Tensor],
    block_kv: tuple[torch.Tensor, torch.Tensor],
    visibility: BlockVisibility,
) -> torch.Tensor:
    """Attention of block queries q [R, h, A*b, d] over [visible context ; own block] in one softmax.

    The same output as scaled_dot_product_attention over [context K/V ; block K/V] with the dense
    mask of ``visibility`` (every query sees its own block, so no row is empty).
    """
    b = visibility.block_size
    outputs = []
    for first, end, columns in visibility.groups:
        queries = slice(first * b, end * b)
        outputs.append(
            _group_attention(
                q[:, :, queries],
                (context_kv[0][:, :, :columns], context_kv[1][:, :, :columns]),
                (block_kv[0][:, :, queries], block_kv[1][:, :, queries]),
                visibility.context_visible[:, queries, :columns],
                b,
            )
        )
    return torch.cat(outputs, dim=2)


def _group_attention(
    q: torch.Tensor,
    context_kv: tuple[torch.Tensor, torch.Tensor],
    block_kv: tuple[torch.Tensor, torch.Tensor],
    context_visible: torch.Tensor,
    size: int,
) -> torch.Tensor:
    """:func:`blockwise_attention` for consecutive blocks and the context columns they can see."""
    rows, heads, queries, dim = q.shape
    blocks = queries // size
    k_ctx, v_ctx = context_kv
    kv_heads, context_len = k_ctx.shape[1], k_ctx.shape[2]
    per_kv = heads // kv_heads  # query head j * per_kv + g reads K/V head j (GQA), as SDPA's enable_gqa
    scale = 1.0 / math.sqrt(dim)
    # Query heads grouped under their K/V head, so the context K/V are read without copies.
    q_grouped = q.reshape(rows, kv_heads, per_kv * queries, dim)
    by_block = (rows, kv_heads, per_kv, blocks, size)
    ctx_scores = (q_grouped @ k_ctx.transpose(-1, -2)).view(*by_block, context_len) * scale
    hidden = ~context_visible.view(rows, 1, 1, blocks, size, context_len)
    ctx_scores = ctx_scores.masked_fill(hidden, float("-inf"))
    q_b = q.reshape(*by_block, dim)
    k_b, v_b = (t.reshape(rows, kv_heads, 1, blocks, size, dim) for t in block_kv)
    own_scores = (q_b @ k_b.transpose(-1, -2)) * scale
    probs = torch.cat([ctx_scores, own_scores], dim=-1).softmax(dim=-1).to(v_ctx.dtype)
    from_context = probs[..., :context_len].reshape(rows, kv_heads, per_kv * queries, context_len) @ v_ctx
    from_block = probs[..., context_len:] @ v_b
    return (from_context.view(*by_block, dim) + from_block).reshape(rows, heads, queries, dim)


class DFlashAttention(nn.Module):
    """Qwen3 attention whose keys/values are [context K/V ; block K/V]."""

    def __init__(self, config: DFlashConfig) -> None:
        super().__init__()
        h, d = config.hidden_size, config.head_dim
        self.num_heads, self.num_kv_heads, self.head_dim = (
            config.num_attention_heads,
            config.num_key_value_heads,
            d,
        )
        self.q_proj = nn.Linear(h, self.num_heads * d, bias=config.attention_bias)
        self.k_proj = nn.Linear(h, self.num_kv_heads * d, bias=config.attention_bias)
        self.v_proj = nn.Linear(h, self.num_kv_heads * d, bias=config.attention_bias)
        self.o_proj = nn.Linear(self.num_heads * d, h, bias=config.attention_bias)
        self.q_norm = RMSNorm(d, config.rms_norm_eps)
        self.k_norm = RMSNorm(d, config.rms_norm_eps)

    def _heads(self, x: torch.Tensor, n: int) -> torch.Tensor:
        return x.view(*x.shape[:-1], n, self.head_dim).transpose(1, 2)

    def key_value(
        self, x: torch.Tensor, positions: torch.Tensor, inv_freq: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """K (k_norm + RoPE) and V of ``x`` [bs, T, H]: used for context features and block tokens alike."""
        k = apply_rope(self.k_norm(self._heads(self.k_proj(x), self.num_kv_heads)), positions, inv_freq)
        return k, self._heads(self.v_proj(x), self.num_kv_heads)

    def forward(
        self,
        x: torch.Tensor,
        positions: torch.Tensor,
        context_kv: tuple[torch.Tensor, torch.Tensor],
        mask: torch.Tensor | BlockVisibility,
        inv_freq: torch.Tensor,
    ) -> torch.Tensor:
        q = apply_rope(self.q_norm(self._heads(self.q_proj(x), self.num_heads)), positions, inv_freq)
        k_blk, v_blk = self.key_value(x, positions, inv_freq)
        context = (context_kv[0].to(k_blk.dtype), context_kv[1].to(v_blk.dtype))
        if isinstance(mask, BlockVisibility):
            out = blockwise_attention(q, context, (k_blk, v_blk), mask)
        else:
            k, v = torch.cat([context[0], k_blk], dim=2), torch.cat([context[1], v_blk], dim=2)
            out = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, enable_gqa=self.num_heads != self.num_kv_heads
            )
        return self.o_proj(out.transpose(1, 2).reshape(*x.shape[:-1], -1))


class DFlashDecoderLayer(nn.Module):
    def __init__(self, config: DFlashConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.self_attn = DFlashAttention(config)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = DFlashMLP(config)

    def forward(self, x, positions, context_kv, mask, inv_freq) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), positions, context_kv, mask, inv_freq)
        return x + self.mlp(self.post_attention_layernorm(x))


def left_pack_order(valid: torch.Tensor) -> torch.Tensor:
    """Column order [bs, W] that left-pads every row of ``valid`` [bs, T], keeping valid entries in order.

    W is the largest number of valid entries in a row; columns no row needs are dropped.
    """
    width = int(valid.sum(1).max().item()) if valid.numel() else 0
    # A stable sort puts invalid entries first and keeps the valid ones in their original order.
    return torch.sort(valid.to(torch.int8), dim=1, stable=True).indices[:, valid.shape[1] - width :]


def gather_kv_columns(kv: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """Reorder the sequence axis of a K or V tensor [bs, heads, T, D] per row by ``order`` [bs, W]."""
    return kv.gather(2, order[:, None, :, None].expand(-1, kv.shape[1], -1, kv.shape[3]))


@dataclass
class DraftContextCache:
    """Per-row, per-layer K/V of the projected context of every committed token.

    Rows grow by different amounts each step (ragged acceptance), so new entries are padded and
    ``valid`` marks real ones; :meth:`compact` squeezes the padding out again.
    """

    keys: list[torch.Tensor]
    values: list[torch.Tensor]
    valid: torch.Tensor  # [bs, T] bool
    positions: torch.Tensor  # [bs, T] long
    _appends_since_compact: int = field(default=0, repr=False)

    @property
    def length(self) -> int:
        return self.valid.shape[1]

    def append(
        self,
        keys: list[torch.Tensor],
        values: list[torch.Tensor],
        valid: torch.Tensor,
        positions: torch.Tensor,
    ) -> None:
        self.keys = [torch.cat([a, b], dim=2) for a, b in zip(self.keys, keys)]
        self.values = [torch.cat([a, b], dim=2) for a, b in zip(self.values, values)]
        self.valid = torch.cat([self.valid, valid], dim=1)
        self.positions = torch.cat([self.positions, positions], dim=1)
        self._appends_since_compact += 1
        if self._appends_since_compact >= 8:
            self.compact()

    def compact(self) -> None:
        """Left-pad every row: keep its valid entries in order, drop columns no row needs."""
        self._appends_since_compact = 0
        order = left_pack_order(self.valid)
        self.valid = self.valid.gather(1, order)
        self.positions = self.positions.gather(1, order)
        self.keys = [gather_kv_columns(k, order) for k in self.keys]
        self.values = [gather_kv_columns(v, order) for v in self.values]

    def select_rows(self, rows: torch.Tensor) -> None:
        self.keys = [k[rows] for k in self.keys]
        self.values = [v[rows] for v in self.values]
        self.valid, self.positions = self.valid[rows], self.positions[rows]


class DFlashDraftModel(nn.Module):
    """The drafter: context projection, K/V-injected decoder layers, final norm (no embeddings/lm_head)."""

    # The decoder layer type (DFlash2 wraps attention and MLP in convolutions: sglang_dflash.dflash2).
    layer_class: type[nn.Module] = DFlashDecoderLayer
    generation = 1  # the DFlashConfig.generation this class runs

    def __init__(self, config: DFlashConfig) -> None:
        super().__init__()
        if config.generation != self.generation:
            # A DFlash2 config built as a DFlash drafter would silently drop its convolutions and selector.
            raise ValueError(
                f"{type(self).__name__}: config generation is {config.generation} ({config.architecture}); "
                f"expected {self.generation} (sglang_dflash.checkpoint.drafter_class picks the class)"
            )
        self.config = config
        h = config.hidden_size
        self.fc = nn.Linear(config.num_context_layers * h, h, bias=False)
        self.hidden_norm = RMSNorm(h, config.rms_norm_eps)
        self.layers = nn.ModuleList(self.layer_class(config) for _ in range(config.num_hidden_layers))
        self.norm = RMSNorm(h, config.rms_norm_eps)
        self.register_buffer(
            "inv_freq", rope_inv_freq(config.head_dim, config.rope_parameters), persistent=False
        )

    @property
    def block_size(self) -> int:
        return self.config.block_size

    @property
    def mask_token_id(self) -> int:
        return self.config.mask_token_id

    # --------------------------------------------------------------- context
    @staticmethod
    def select_target_features(
        hidden_states: tuple[torch.Tensor, ...], layer_ids: tuple[int, ...]
    ) -> torch.Tensor:
        """Concat HF ``hidden_states[id + 1]`` (the output of target layer ``id``) over the chosen layers."""
        return torch.cat([hidden_states[i + 1] for i in layer_ids], dim=-1)

    def project_context(self, target_features: torch.Tensor) -> torch.Tensor:
        """[.., K*H] concatenated target hidden states -> [.., H] context feature (fc + RMSNorm)."""
        return self.hidden_norm(self.fc(target_features.to(self.fc.weight.dtype)))

    def context_kv(
        self, context: torch.Tensor, positions: torch.Tensor
    ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Each layer's K/V of projected context features [bs, T, H] at ``positions`` [bs, T]."""
        return [layer.self_attn.key_value(context, positions, self.inv_freq) for layer in self.layers]

    def new_cache(self, batch_size: int, device: torch.device | str, dtype: torch.dtype) -> DraftContextCache:
        shape = (batch_size, self.config.num_key_value_heads, 0, self.config.head_dim)
        empty = [torch.zeros(shape, device=device, dtype=dtype) for _ in self.layers]
        return DraftContextCache(
            keys=empty,
            values=list(empty),
            valid=torch.zeros(batch_size, 0, dtype=torch.bool, device=device),
            positions=torch.zeros(batch_size, 0, dtype=torch.long, device=device),
        )

    def extend_cache(
        self,
        cache: DraftContextCache,
        target_features: torch.Tensor,
        valid: torch.Tensor,
        positions: torch.Tensor,
    ) -> None:
        """Project newly committed tokens' target features and append their K/V to ``cache``."""
        kv = self.context_kv(self.project_context(target_features), positions)
        cache.append([k for k, _ in kv], [v for _, v in kv], valid, positions)

    # --------------------------------------------------------------- block
    def attention_masks(
        self,
        query_positions: torch.Tensor,
        context_positions: torch.Tensor,
        context_visible: torch.Tensor,
        query_block: torch.Tensor | None = None,
    ) -> dict[bool, dict[bool, torch.Tensor]]:
        """Boolean masks [bs, 1, block_size, T + block_size] keyed by (is_sliding, is_causal).

        A query sees the context entries in ``context_visible`` [bs, block_size, T] and the queries of its own
        block (``query_block`` ids, default: one block per row); sliding layers further restrict by
        distance and are causal inside the block unless the config says otherwise.
        """
        if query_block is None:
            query_block = torch.zeros_like(query_positions)
        same_block = query_block[:, :, None] == query_block[:, None, :]
        qpos = query_positions[:, :, None]
        kpos = torch.cat([context_positions, query_positions], dim=1)[:, None, :]
        base = torch.cat([context_visible, same_block], dim=2)
        masks: dict[bool, dict[bool, torch.Tensor]] = {}
        for idx in range(self.config.num_hidden_layers):
            sliding, causal = self.config.layer_is_sliding(idx), self.config.layer_is_causal(idx)
            if masks.get(sliding, {}).get(causal) is not None:
                continue
            m = base
            if causal:
                m = m & (kpos <= qpos)
            if sliding:
                window = self.config.sliding_window
                m = m & (qpos - kpos < window) & (causal | (kpos - qpos < window))
            masks.setdefault(sliding, {})[causal] = m[:, None]
        return masks

    def forward(
        self,
        block_embeds: torch.Tensor,
        block_positions: torch.Tensor,
        context_kv: list[tuple[torch.Tensor, torch.Tensor]],
        masks: dict[bool, dict[bool, torch.Tensor]],
    ) -> torch.Tensor:
        """Denoise the block(s) in one pass; returns final-norm hidden states [bs, block_size, H]."""
        x = block_embeds.to(self.fc.weight.dtype)
        for idx, layer in enumerate(self.layers):
            mask = masks[self.config.layer_is_sliding(idx)][self.config.layer_is_causal(idx)]
            x = layer(x, block_positions, context_kv[idx], mask, self.inv_freq)
        return self.norm(x)

    def draft_block(
        self, block_embeds: torch.Tensor, block_positions: torch.Tensor, cache: DraftContextCache
    ) -> torch.Tensor:
        """Inference: one block per row over the cached context; hidden states [bs, block_size, H]."""
        block_start = block_positions[:, :1]
        visible = cache.valid & (cache.positions < block_start)
        visible = visible[:, None, :].expand(-1, block_positions.shape[1], -1)
        masks = self.attention_masks(block_positions, cache.positions, visible)
        return self.forward(block_embeds, block_positions, list(zip(cache.keys, cache.values)), masks)
