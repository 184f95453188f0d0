"""Stand-ins for the GPU-only parts of SGLang that our drafter touches (KV pool, attention backend)."""

from types import SimpleNamespace

import torch

from sglang_dflash.serving.cpu_backend import block_attention

POOL_SIZE = 64


def radix_layer(heads: int, kv_heads: int, dim: int, attn_type, window: int = -1) -> SimpleNamespace:
    """The attributes of a RadixAttention layer that the block attention reads."""
    return SimpleNamespace(
        tp_q_head_num=heads,
        tp_k_head_num=kv_heads,
        qk_head_dim=dim,
        v_head_dim=dim,
        scaling=dim**-0.5,
        attn_type=attn_type,
        is_cross_attention=False,
        sliding_window_size=window,
    )


class TorchPool:
    """The parts of SGLang's MHATokenToKVPool the drafter and the injector use."""

    def __init__(self, layers, heads, dim, dtype=torch.float32, size=POOL_SIZE):
        self.k = [torch.zeros(size, heads, dim, dtype=dtype) for _ in range(layers)]
        self.v = [torch.zeros(size, heads, dim, dtype=dtype) for _ in range(layers)]
        self.dtype = self.store_dtype = dtype

    def get_key_buffer(self, layer_id):
        return self.k[layer_id]

    def get_value_buffer(self, layer_id):
        return self.v[layer_id]

    def set_kv_buffer(self, layer, loc, cache_k, cache_v):
        self.k[layer.layer_id][loc] = cache_k.to(self.dtype)
        self.v[layer.layer_id][loc] = cache_v.to(self.dtype)


class TorchBlockAttention:
    """TARGET_VERIFY attention through the product's CPU block attention (prefix from the pool, block
    from the call)."""

    def __init__(self, pool, req_to_token):
        self.pool, self.req_to_token = pool, req_to_token

    def forward(self, q, k, v, layer, fb, save_kv_cache=True, **kwargs):
        if save_kv_cache:
            self.pool.set_kv_buffer(layer, fb.out_cache_loc, k, v)
        key_buffer, value_buffer = self.pool.k[layer.layer_id], self.pool.v[layer.layer_id]
        return block_attention(
            q,
            layer,
            key_buffer,
            value_buffer,
            self.req_to_token,
            fb.req_pool_indices,
            fb.seq_lens,
            fb.spec_info.draft_token_num,
        )
