"""Stand-ins for the GPU-only parts of SGLang that our drafter touches (KV pool, attention backend)."""

import torch
from sglang.srt.layers.radix_attention import AttentionType

POOL_SIZE = 64


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
    """TARGET_VERIFY attention: prefix from the pool, block from the call, causality by layer type."""

    def __init__(self, pool, req_to_token):
        self.pool, self.req_to_token = pool, req_to_token

    def forward(self, q, k, v, layer, fb, save_kv_cache=True, **kwargs):
        if save_kv_cache:
            self.pool.set_kv_buffer(layer, fb.out_cache_loc, k, v)
        b = fb.spec_info.draft_token_num
        heads, dim = layer.tp_q_head_num, layer.head_dim
        q = q.view(-1, b, heads, dim)
        out = torch.empty_like(q)
        for r in range(q.shape[0]):
            slots = self.req_to_token[fb.req_pool_indices[r], : fb.seq_lens[r] + b]
            keys = self.pool.k[layer.layer_id][slots].transpose(0, 1)
            values = self.pool.v[layer.layer_id][slots].transpose(0, 1)
            causal = layer.attn_type != AttentionType.ENCODER_ONLY
            mask = torch.ones(b, keys.shape[1], dtype=torch.bool)
            if causal:
                mask[:, -b:] = torch.ones(b, b, dtype=torch.bool).tril()
            o = torch.nn.functional.scaled_dot_product_attention(
                q[r].transpose(0, 1), keys, values, attn_mask=mask, scale=layer.scaling, enable_gqa=True)
            out[r] = o.transpose(0, 1)
        return out.reshape(-1, heads * dim)
