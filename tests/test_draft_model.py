"""The pure PyTorch drafter: K/V injection semantics, incremental context cache, masks, RoPE."""

import math

import pytest
import torch

from sglang_dflash.config import draft_config_for_target
from sglang_dflash.draft_model import DFlashDraftModel, rope_inv_freq
from sglang_dflash.testing import init_drafter_weights, tiny_target_config


def drafter(num_layers=2, **overrides):
    cfg = draft_config_for_target(
        tiny_target_config("qwen3"), num_layers=num_layers, block_size=4, **overrides
    )
    return init_drafter_weights(DFlashDraftModel(cfg), seed=0).eval()


def features(model, batch, length, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, length, model.config.num_context_layers * model.config.hidden_size, generator=g)


def block_inputs(model, batch, start, seed=1):
    g = torch.Generator().manual_seed(seed)
    embeds = torch.randn(batch, model.block_size, model.config.hidden_size, generator=g)
    positions = start + torch.arange(model.block_size)[None].expand(batch, -1)
    return embeds, positions


def full_cache(model, feats):
    b, t, _ = feats.shape
    cache = model.new_cache(b, "cpu", torch.float32)
    model.extend_cache(cache, feats, torch.ones(b, t, dtype=torch.bool), torch.arange(t)[None].expand(b, -1))
    return cache


@torch.no_grad()
def test_matches_a_naive_transcription_of_the_method():
    """One layer, written out with HF's Qwen3 RoPE and an explicit softmax."""
    from transformers import Qwen3Config
    from transformers.models.qwen3.modeling_qwen3 import Qwen3RotaryEmbedding, apply_rotary_pos_emb

    model = drafter(num_layers=1)
    cfg = model.config
    layer, attn = model.layers[0], model.layers[0].self_attn
    feats = features(model, 1, 6)
    embeds, positions = block_inputs(model, 1, start=6)

    def rms(x, w):
        return w * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + cfg.rms_norm_eps)

    rotary = Qwen3RotaryEmbedding(
        Qwen3Config(
            head_dim=cfg.head_dim,
            hidden_size=cfg.hidden_size,
            num_attention_heads=cfg.num_attention_heads,
            rope_parameters=cfg.rope_parameters,
        )
    )
    context = rms(feats @ model.fc.weight.T, model.hidden_norm.weight)  # [1, 6, H]
    h = rms(embeds, layer.input_layernorm.weight)
    d, nq, nkv = cfg.head_dim, cfg.num_attention_heads, cfg.num_key_value_heads
    q = rms((h @ attn.q_proj.weight.T).view(1, 4, nq, d), attn.q_norm.weight).transpose(1, 2)
    kv_in = torch.cat([context, h], dim=1)  # context K/V are injected, block K/V appended
    k = rms((kv_in @ attn.k_proj.weight.T).view(1, 10, nkv, d), attn.k_norm.weight).transpose(1, 2)
    v = (kv_in @ attn.v_proj.weight.T).view(1, 10, nkv, d).transpose(1, 2)
    cos, sin = rotary(v, torch.arange(10)[None])
    q, _ = apply_rotary_pos_emb(q, q, cos[:, 6:], sin[:, 6:])
    k, _ = apply_rotary_pos_emb(k, k, cos, sin)
    k, v = k.repeat_interleave(nq // nkv, 1), v.repeat_interleave(nq // nkv, 1)
    weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1)  # no mask: bidirectional
    x = embeds + (weights @ v).transpose(1, 2).reshape(1, 4, -1) @ attn.o_proj.weight.T
    hm = rms(x, layer.post_attention_layernorm.weight)
    mlp = layer.mlp
    x = (
        x
        + (torch.nn.functional.silu(hm @ mlp.gate_proj.weight.T) * (hm @ mlp.up_proj.weight.T))
        @ mlp.down_proj.weight.T
    )
    expected = rms(x, model.norm.weight)

    got = model.draft_block(embeds, positions, full_cache(model, feats))
    assert torch.allclose(got, expected, atol=1e-5), (got - expected).abs().max()


@torch.no_grad()
def test_incremental_ragged_context_equals_one_shot():
    model = drafter()
    feats = features(model, 2, 12)
    embeds, positions = block_inputs(model, 2, start=12)
    expected = model.draft_block(embeds, positions, full_cache(model, feats))

    # Row 0 commits 3, 1, 8 tokens; row 1 commits 5, 5, 2: padded appends with invalid columns.
    cache = model.new_cache(2, "cpu", torch.float32)
    done = [0, 0]
    for sizes in ([3, 5], [1, 5], [8, 2]):
        width = max(sizes)
        chunk = torch.zeros(2, width, feats.shape[-1])
        valid = torch.zeros(2, width, dtype=torch.bool)
        pos = torch.zeros(2, width, dtype=torch.long)
        for row, n in enumerate(sizes):
            chunk[row, :n] = feats[row, done[row] : done[row] + n]
            valid[row, :n] = True
            pos[row, :n] = torch.arange(done[row], done[row] + n)
            done[row] += n
        model.extend_cache(cache, chunk, valid, pos)
    before = model.draft_block(embeds, positions, cache)
    cache.compact()
    assert cache.length == 12
    after = model.draft_block(embeds, positions, cache)
    assert torch.allclose(before, expected, atol=1e-5) and torch.allclose(after, expected, atol=1e-5)


@torch.no_grad()
def test_context_after_the_block_start_is_invisible():
    model = drafter()
    feats = features(model, 1, 10)
    embeds, positions = block_inputs(model, 1, start=6)
    short = model.draft_block(embeds, positions, full_cache(model, feats[:, :6]))
    long = model.draft_block(embeds, positions, full_cache(model, feats))
    assert torch.allclose(short, long, atol=1e-6)


def test_sliding_layers_are_windowed_and_causal_inside_the_block():
    model = drafter(layer_types=["sliding_attention", "full_attention"], sliding_window=3)
    qpos = torch.arange(5, 9)[None]
    cpos = torch.arange(5)[None]
    masks = model.attention_masks(qpos, cpos, torch.ones(1, 4, 5, dtype=torch.bool))
    full = masks[False][False][0, 0]
    sliding = masks[True][True][0, 0]
    assert full.all()
    # query at position 5 sees keys at 3, 4 (context) and 5 (itself); position 8 sees 6, 7, 8.
    assert sliding[0].nonzero().flatten().tolist() == [3, 4, 5]
    assert sliding[3].nonzero().flatten().tolist() == [6, 7, 8]


@pytest.mark.parametrize(
    "rope",
    [
        {"rope_type": "default", "rope_theta": 10000.0},
        {"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0},
        {
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64,
        },
    ],
)
def test_rope_matches_transformers(rope):
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    hf_config = LlamaConfig(
        hidden_size=64,
        num_attention_heads=1,
        head_dim=64,
        rope_parameters=dict(rope),
        max_position_embeddings=256,
    )
    if rope["rope_type"] == "default":
        expected = 1.0 / (rope["rope_theta"] ** (torch.arange(0, 64, 2).float() / 64))
    else:
        expected, _ = ROPE_INIT_FUNCTIONS[rope["rope_type"]](hf_config, "cpu")
    assert torch.allclose(rope_inv_freq(64, rope), expected.float(), rtol=1e-5)
