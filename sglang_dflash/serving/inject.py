"""Target context -> draft KV pool ("K/V injection into every layer").

For every newly committed token (prefill/extend chunks, and the verify block after acceptance)
the target's captured hidden states of the chosen layers ``[N, K*H]`` become one context
feature per token (``fc`` + RMSNorm), and every draft layer's K (k_proj, k_norm, RoPE at the
token's position) and V (v_proj) are written into the draft KV pool at the token's slot.

Data flow: one GEMM for the projection, one GEMM for all layers' K and V at once
(``[N, H] x [H, L*2*Hkv*D]``), then per layer one fused Triton launch that normalises, rotates
and scatters K and copies V (:func:`~sglang_dflash.kernels.norm_rope.write_kv_triton`).  The
PyTorch path (:func:`~sglang_dflash.kernels.norm_rope.write_kv_torch`, or the pool's own
``set_kv_buffer`` for quantised KV caches) computes the same thing and is what tests compare to.

Cached radix prefixes need nothing: their slots already hold the draft K/V written when those
tokens were first committed (slot ids are shared between the target and draft pools).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..kernels.norm_rope import norm_rope_torch, write_kv_torch, write_kv_triton
from ..kernels.small_batch_linear import linear


class ContextInjector:
    """Writes projected target context into the draft KV pool for given (position, slot) pairs."""

    def __init__(self, model, kv_pool, use_triton: bool | None = None) -> None:
        self.model = model
        self.pool = kv_pool
        self.refresh()
        self.num_layers = len(model.layers)
        # This rank's K/V heads under tensor parallelism (all of them on one rank).
        self.kv_heads, self.head_dim = model.layers[0].num_kv_heads, model.dflash.head_dim
        direct = self._pool_stores_model_dtype()
        self.use_triton = (self.weight.is_cuda and direct) if use_triton is None else use_triton
        self._write: Callable = write_kv_triton if self.use_triton else write_kv_torch
        self._direct = direct

    def refresh(self) -> None:
        """Re-read the stacked K/V projection and k_norm weights (after loading or updating weights)."""
        self.weight = self.model.context_kv_weight()
        self.bias = self.model.context_kv_bias()
        self.k_norm = torch.stack([layer.k_norm_weight.detach() for layer in self.model.layers])

    def _pool_stores_model_dtype(self) -> bool:
        """Raw buffer writes are exact only when the pool stores the model dtype unscaled."""
        if getattr(self.pool, "is_quantized_kv_cache", False):
            return False
        store = getattr(self.pool, "store_dtype", getattr(self.pool, "dtype", None))
        return store == self.weight.dtype and getattr(self.pool, "dtype", store) == store

    def layer_kv(self, target_hidden: torch.Tensor) -> torch.Tensor:
        """[N, K*H] -> [N, L, 2, Hkv, D] un-normalised, un-rotated K and V of every layer."""
        context = self.model.project_context(target_hidden)
        kv = linear(context, self.weight, self.bias)
        return kv.view(-1, self.num_layers, 2, self.kv_heads, self.head_dim)

    @torch.no_grad()
    def __call__(self, target_hidden: torch.Tensor, positions: torch.Tensor, slots: torch.Tensor) -> None:
        if target_hidden.shape[0] == 0:
            return
        kv = self.layer_kv(target_hidden)
        cos_sin, eps = self.model.cos_sin, self.model.eps
        for layer in range(self.num_layers):
            keys, values = kv[:, layer, 0], kv[:, layer, 1]
            if self._direct:
                self._write(
                    keys,
                    values,
                    self.k_norm[layer],
                    positions,
                    slots,
                    cos_sin,
                    self.pool.get_key_buffer(layer),
                    self.pool.get_value_buffer(layer),
                    eps,
                )
            else:  # quantised / scaled KV cache: let the pool store it
                k = norm_rope_torch(keys, self.k_norm[layer], positions, cos_sin, eps)
                self.pool.set_kv_buffer(self.model.layers[layer].attn, slots, k, values)
