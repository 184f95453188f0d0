"""The DFlash drafter as an SGLang model (our own class, registered for ``DFlashDraftModel``).

It runs inside the draft ``ModelRunner`` that SGLang builds for the DFLASH algorithm, so its
attention layers are ``RadixAttention`` layers whose K/V live in the draft KV pool the host
allocated (same slot indices as the target's pool, shared ``req_to_token``):

- context K/V of committed tokens are written into that pool by :mod:`.inject` (from the
  target's hidden states, never by running this model);
- a forward pass takes one block per request ([bonus token, MASK x (block_size - 1)] at positions
  seq_len .. seq_len + block_size - 1), writes the block's own K/V into the block's slots and attends
  **bidirectionally** (``AttentionType.ENCODER_ONLY``) over [context ; block] (causally where the
  config says so, and within a sliding window for ``sliding_attention`` layers: CPU only, see
  :func:`draft_window_size`);
- the target's embeddings and lm_head are shared (:meth:`set_embed_and_head`).

The math is the reference drafter's (:mod:`sglang_dflash.draft_model`); fused kernels come from
``sgl_kernel`` on CUDA and from :mod:`sglang_dflash.kernels`.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
import torch.nn.functional as F
from sglang.srt.layers.logits_processor import LogitsProcessorOutput
from sglang.srt.layers.radix_attention import AttentionType, RadixAttention
from torch import nn

from ..checkpoint import check_state_dict, published_name
from ..config import DFlashConfig, config_error
from ..draft_model import cos_sin_cache
from ..kernels.norm_rope import norm_rope_torch, norm_rope_triton
from ..kernels.small_batch_linear import SmallBatchLinear
from .cpu_backend import process_serves_on_cpu
from .tensor_parallel import RowParallelLinear, TPShard, vocab_embedding, vocab_logits


def logit_rows(hidden: torch.Tensor, spec_info, field: str = "logit_columns") -> torch.Tensor:
    """The rows of ``hidden`` [bs * block, H] at the block columns ``(start, stop) =
    spec_info.<field>`` of each request, [bs * (stop - start), H] (every row when it is None or
    absent): the lm_head runs over the ``logit_columns`` only."""
    columns = getattr(spec_info, field, None)
    if columns is None:
        return hidden
    start, stop = columns
    dim = hidden.shape[-1]
    return hidden.view(-1, spec_info.draft_token_num, dim)[:, start:stop].reshape(-1, dim)


# ----------------------------------------------------------------------------- fused ops
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    if x.is_cuda:
        from sgl_kernel import rmsnorm

        return rmsnorm(x, weight, eps)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)


def add_rms_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """(rmsnorm(x + residual), x + residual)."""
    if x.is_cuda:
        from sgl_kernel import fused_add_rmsnorm

        fused_add_rmsnorm(x, residual, weight, eps)  # in place: x <- normed, residual <- sum
        return x, residual
    summed = x + residual
    return rms_norm(summed, weight, eps), summed


def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    if x.is_cuda:
        from sgl_kernel import silu_and_mul as _silu_and_mul

        out = torch.empty(x.shape[:-1] + (d,), dtype=x.dtype, device=x.device)
        _silu_and_mul(x, out)
        return out
    return F.silu(x[..., :d]) * x[..., d:]


def norm_rope(
    x: torch.Tensor, weight: torch.Tensor, positions: torch.Tensor, cos_sin: torch.Tensor, eps: float
) -> torch.Tensor:
    if x.is_cuda:
        return norm_rope_triton(x, weight, positions, cos_sin, eps, out=x)
    return norm_rope_torch(x, weight, positions, cos_sin, eps)


# ----------------------------------------------------------------------------- layers
def draft_window_size(config: DFlashConfig, layer_id: int) -> int:
    """SGLang's ``sliding_window_size`` for a draft layer (-1: none).

    The published drafters let a query see keys less than ``sliding_window`` positions away;
    SGLang's backends keep keys at most ``sliding_window_size`` away, hence the one less.  Only
    our CPU block attention applies it: a GPU server admits only windows that cover its whole
    context (``validation.check_draft_attention``), where no window is exact, and the host's GPU
    backends would look for sliding-window metadata that a full-attention drafter never builds.
    """
    if not config.layer_is_sliding(layer_id) or not process_serves_on_cpu():
        return -1
    return config.sliding_window - 1


class DFlashSGLangLayer(nn.Module):
    """One draft layer; q/k/v and gate/up projections are fused for one GEMM each."""

    def __init__(self, config: DFlashConfig, layer_id: int) -> None:
        super().__init__()
        h, d = config.hidden_size, config.head_dim
        # This rank's heads and MLP rows (everything, on one rank): see .tensor_parallel.
        self.shard = shard = TPShard.current()
        self.first_head, self.num_heads = shard.split(config.num_attention_heads)
        self.first_kv_head, self.num_kv_heads = shard.kv_heads(config.num_key_value_heads)
        self.first_inter, inter = shard.split(config.intermediate_size)
        self.head_dim = d
        self.q_size, self.kv_size = self.num_heads * d, self.num_kv_heads * d
        self.eps = config.rms_norm_eps
        self.qkv_proj = SmallBatchLinear(h, self.q_size + 2 * self.kv_size, bias=config.attention_bias)
        self.o_proj = RowParallelLinear(self.q_size, h, config.attention_bias, shard)
        self.q_norm_weight = nn.Parameter(torch.ones(d))
        self.k_norm_weight = nn.Parameter(torch.ones(d))
        self.input_layernorm_weight = nn.Parameter(torch.ones(h))
        self.post_attention_layernorm_weight = nn.Parameter(torch.ones(h))
        self.gate_up_proj = SmallBatchLinear(h, 2 * inter, bias=False)
        self.down_proj = RowParallelLinear(inter, h, False, shard)
        self.attn = RadixAttention(
            self.num_heads,
            d,
            d**-0.5,
            self.num_kv_heads,
            layer_id=layer_id,
            sliding_window_size=draft_window_size(config, layer_id),
            attn_type=AttentionType.DECODER
            if config.layer_is_causal(layer_id)
            else AttentionType.ENCODER_ONLY,
            prefix=f"layers.{layer_id}.attn",
        )

    def weight_rows(self) -> tuple[slice, slice, slice]:
        """This rank's rows of the published q_proj, k_proj/v_proj and gate_proj/up_proj weights
        (= its columns of o_proj and down_proj); all rows on one rank."""
        d = self.head_dim
        return (
            slice(self.first_head * d, self.first_head * d + self.q_size),
            slice(self.first_kv_head * d, self.first_kv_head * d + self.kv_size),
            slice(self.first_inter, self.first_inter + self.down_proj.weight.shape[1]),
        )

    def forward(self, positions, hidden, residual, forward_batch, cos_sin):
        x, residual = self.input_norm(hidden, residual)
        hidden = self.attention(positions, x, forward_batch, cos_sin)
        x, residual = add_rms_norm(hidden, residual, self.post_attention_layernorm_weight, self.eps)
        return self.mlp(x), residual

    def input_norm(
        self, hidden: torch.Tensor, residual: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(normed input, residual): the first layer's residual is its input."""
        if residual is None:
            return rms_norm(hidden, self.input_layernorm_weight, self.eps), hidden
        return add_rms_norm(hidden, residual, self.input_layernorm_weight, self.eps)

    def attention(self, positions, x: torch.Tensor, forward_batch, cos_sin) -> torch.Tensor:
        """The attention sublayer on normed ``x``, through ``o_proj`` (summed over TP ranks)."""
        q, k, v = self.qkv_proj(x).split([self.q_size, self.kv_size, self.kv_size], dim=-1)
        n = q.shape[0]
        q = norm_rope(
            q.reshape(n, self.num_heads, self.head_dim), self.q_norm_weight, positions, cos_sin, self.eps
        )
        k = norm_rope(
            k.reshape(n, self.num_kv_heads, self.head_dim), self.k_norm_weight, positions, cos_sin, self.eps
        )
        out = self.attn(q.reshape(n, -1), k.reshape(n, -1), v.contiguous(), forward_batch)
        return self.o_proj(out)

    def mlp(self, x: torch.Tensor) -> torch.Tensor:
        """The gated MLP on normed ``x`` (summed over TP ranks)."""
        return self.down_proj(silu_and_mul(self.gate_up_proj(x)))


class DFlashDrafterForSGLang(nn.Module):
    """SGLang entry class for ``architectures: ["DFlashDraftModel"]`` checkpoints."""

    layer_class: type[DFlashSGLangLayer] = DFlashSGLangLayer  # DFlash2: .dflash2_model
    generation = 1  # the DFlashConfig.generation this class runs

    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__()
        if quant_config is not None:
            raise config_error("--quantization", type(quant_config).__name__, "an unquantized DFlash drafter")
        raw = config.to_dict() if hasattr(config, "to_dict") else dict(config)
        self.config = config
        self.dflash = DFlashConfig.from_dict(raw)
        if self.dflash.generation != self.generation:
            # Run as the other generation, a drafter would ignore (or lack) its convolutions and selector.
            expected = f"the architecture of {type(self).__name__}"
            raise config_error("architectures", [self.dflash.architecture], expected)
        h = self.dflash.hidden_size
        self.shard = TPShard.current()
        self.fc = SmallBatchLinear(self.dflash.num_context_layers * h, h, bias=False)
        self.hidden_norm_weight = nn.Parameter(torch.ones(h))
        self.layers = nn.ModuleList(
            self.layer_class(self.dflash, i) for i in range(self.dflash.num_hidden_layers)
        )
        self.norm_weight = nn.Parameter(torch.ones(h))
        self.eps = self.dflash.rms_norm_eps
        self.cos_sin: torch.Tensor | None = None
        self._embed: torch.Tensor | None = None
        self._head: torch.Tensor | None = None
        # --speculative-token-map: the ids the drafter may draft, and their lm_head rows (a copy).
        self.hot_token_ids: torch.Tensor | None = None
        self._hot_head: torch.Tensor | None = None
        self.prepare_rope(self.dflash.max_position_embeddings)
        # Inference only, like the host's own layers: no autograd state on weights or activations.
        self.requires_grad_(False)

    # ------------------------------------------------------------------ wiring
    def prepare_rope(self, max_positions: int) -> None:
        """(Re)build the float32 RoPE cache for positions < ``max_positions``."""
        device = self.fc.weight.device
        self.cos_sin = cos_sin_cache(self.dflash.head_dim, self.dflash.rope_parameters, max_positions).to(
            device
        )

    def set_embed_and_head(self, embed: torch.Tensor, head: torch.Tensor) -> None:
        """Share the target's embedding and lm_head weights (no copy)."""
        self._embed, self._head = embed, head

    def get_embed_and_head(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self._embed, self._head

    def set_hot_vocab(self, token_ids: torch.Tensor | None) -> None:
        """Draft only among ``token_ids`` (:mod:`sglang_dflash.token_map`); None drafts the whole vocabulary.

        Their lm_head rows are copied once into one contiguous matrix, so a draft pass reads those
        rows only; call again after the target's weights change.  The ids are kept in increasing
        order, so that an argmax over the hot logits alone picks, among equal logits, the token the
        whole vocabulary's argmax picks (:meth:`hot_logits`).
        """
        if token_ids is None:
            self.hot_token_ids = self._hot_head = None
            return
        if self._head is None:
            raise RuntimeError("set_embed_and_head() must be called before set_hot_vocab()")
        if self.shard.size > 1:
            raise RuntimeError("a hot vocabulary needs the whole lm_head on one rank (TP size 1)")
        token_ids = token_ids.to(self._head.device).sort().values
        rows = self._head[token_ids]
        if self._hot_head is not None and torch.equal(token_ids, self.hot_token_ids):
            self._hot_head.copy_(rows)  # a refresh: in place, so a captured CUDA graph sees it
            return
        self.hot_token_ids, self._hot_head = token_ids, rows.contiguous()

    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        """The target's embeddings of ``input_ids`` (its vocabulary shard, summed over TP ranks)."""
        return vocab_embedding(input_ids, self._embed, self.shard)

    def logits(self, hidden: torch.Tensor, full_vocab: bool = False) -> torch.Tensor:
        """[N, vocab_size] logits through the target's lm_head (shards gathered over TP ranks).

        With a hot vocabulary (and not ``full_vocab``) only its rows are computed; every other
        token's logit is -inf, so no sampler or argmax can draft it.
        """
        if self._hot_head is None or full_vocab:
            return vocab_logits(hidden, self._head, self.shard)[:, : self.dflash.vocab_size]
        logits = hidden.new_full((hidden.shape[0], self.dflash.vocab_size), float("-inf"))
        logits[:, self.hot_token_ids] = self.hot_logits(hidden)
        return logits

    def hot_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """[N, K] logits of the hot vocabulary's tokens only, column j for ``hot_token_ids[j]``."""
        if self._hot_head is None:
            raise RuntimeError("hot_logits() needs a hot vocabulary (set_hot_vocab)")
        return hidden @ self._hot_head.T

    # ------------------------------------------------------------------ context
    def project_context(self, target_hidden: torch.Tensor) -> torch.Tensor:
        """[N, K*H] captured target hidden states -> [N, H] context features (fc + RMSNorm)."""
        return rms_norm(self.fc(target_hidden.to(self.fc.weight.dtype)), self.hidden_norm_weight, self.eps)

    def context_kv_weight(self) -> torch.Tensor:
        """[L * 2 * Hkv * D, H]: every layer's k_proj and v_proj rows, for one GEMM over the context."""
        rows = [layer.qkv_proj.weight[layer.q_size :] for layer in self.layers]
        return torch.cat(rows, dim=0).contiguous()

    def context_kv_bias(self) -> torch.Tensor | None:
        if self.layers[0].qkv_proj.bias is None:
            return None
        return torch.cat([layer.qkv_proj.bias[layer.q_size :] for layer in self.layers]).contiguous()

    # ------------------------------------------------------------------ forward
    def forward(
        self, input_ids: torch.Tensor, positions: torch.Tensor, forward_batch, **kwargs
    ) -> LogitsProcessorOutput:
        """Denoise one block per request; logits of every block position over the target vocab."""
        if self._embed is None:
            raise RuntimeError("DFlashDrafterForSGLang.set_embed_and_head() must be called before forward()")
        hidden = self.embed(input_ids)
        residual = None
        for layer in self.layers:
            hidden, residual = layer(positions, hidden, residual, forward_batch, self.cos_sin)
        hidden, _ = add_rms_norm(hidden, residual, self.norm_weight, self.eps)
        spec_info = forward_batch.spec_info
        full_vocab = getattr(spec_info, "full_vocab", False)
        rows = logit_rows(hidden, spec_info)
        # The final states of the columns drafted later (``later_columns``), for the worker's lm_head.
        later = (
            None
            if getattr(spec_info, "later_columns", None) is None
            else logit_rows(hidden, spec_info, "later_columns")
        )
        if getattr(spec_info, "hot_logits", False) and not full_vocab:
            return LogitsProcessorOutput(next_token_logits=self.hot_logits(rows), hidden_states=later)
        logits = self.logits(rows, full_vocab=full_vocab)
        return LogitsProcessorOutput(next_token_logits=logits, hidden_states=later)

    # ------------------------------------------------------------------ weights
    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Load the published layout (separate q/k/v, gate/up) into the fused parameters."""
        state = {published_name(name): tensor for name, tensor in weights}
        check_state_dict(self.dflash, state)
        params = dict(self.named_parameters())
        with torch.no_grad():
            params["fc.weight"].copy_(state["fc.weight"])
            params["hidden_norm_weight"].copy_(state["hidden_norm.weight"])
            params["norm_weight"].copy_(state["norm.weight"])
            for i, layer in enumerate(self.layers):
                p = f"layers.{i}."
                q_rows, kv_rows, inter_rows = layer.weight_rows()
                for suffix in ("weight", "bias"):
                    if getattr(layer.qkv_proj, suffix) is None:
                        continue
                    fused = getattr(layer.qkv_proj, suffix)
                    q, kv = layer.q_size, layer.kv_size
                    fused[:q].copy_(state[p + f"self_attn.q_proj.{suffix}"][q_rows])
                    fused[q : q + kv].copy_(state[p + f"self_attn.k_proj.{suffix}"][kv_rows])
                    fused[q + kv :].copy_(state[p + f"self_attn.v_proj.{suffix}"][kv_rows])
                layer.o_proj.weight.copy_(state[p + "self_attn.o_proj.weight"][:, q_rows])
                if layer.o_proj.bias is not None:
                    layer.o_proj.bias.copy_(state[p + "self_attn.o_proj.bias"])
                layer.q_norm_weight.copy_(state[p + "self_attn.q_norm.weight"])
                layer.k_norm_weight.copy_(state[p + "self_attn.k_norm.weight"])
                inter = layer.down_proj.weight.shape[1]
                layer.gate_up_proj.weight[:inter].copy_(state[p + "mlp.gate_proj.weight"][inter_rows])
                layer.gate_up_proj.weight[inter:].copy_(state[p + "mlp.up_proj.weight"][inter_rows])
                layer.down_proj.weight.copy_(state[p + "mlp.down_proj.weight"][:, inter_rows])
                layer.input_layernorm_weight.copy_(state[p + "input_layernorm.weight"])
                layer.post_attention_layernorm_weight.copy_(state[p + "post_attention_layernorm.weight"])


EntryClass = DFlashDrafterForSGLang
