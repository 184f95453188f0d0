"""Triton kernels against their PyTorch twins, and the twins against the reference drafter."""

import pytest
import torch

from sglang_dflash.config import draft_config_for_target
from sglang_dflash.draft_model import DFlashDraftModel, cos_sin_cache
from sglang_dflash.kernels.norm_rope import norm_rope_torch, norm_rope_triton, write_kv_torch, write_kv_triton
from sglang_dflash.testing import init_drafter_weights, tiny_target_config


@pytest.fixture(scope="module")
def drafter():
    cfg = draft_config_for_target(tiny_target_config("qwen3", head_dim=16, hidden_size=64), num_layers=2)
    return init_drafter_weights(DFlashDraftModel(cfg), seed=0).eval()


@torch.no_grad()
def test_torch_twin_equals_the_reference_context_keys(drafter):
    cfg = drafter.config
    context = torch.randn(1, 7, cfg.hidden_size)
    positions = torch.tensor([[3, 4, 5, 9, 10, 11, 40]])
    ref_k, ref_v = drafter.layers[1].self_attn.key_value(context, positions, drafter.inv_freq)
    attn = drafter.layers[1].self_attn
    keys = attn.k_proj(context[0]).view(7, cfg.num_key_value_heads, cfg.head_dim)
    cs = cos_sin_cache(cfg.head_dim, cfg.rope_parameters, 64)
    k = norm_rope_torch(keys, attn.k_norm.weight, positions[0], cs, cfg.rms_norm_eps)
    assert torch.allclose(k, ref_k[0].transpose(0, 1), atol=1e-5)
    values = attn.v_proj(context[0]).view(7, cfg.num_key_value_heads, cfg.head_dim)
    assert torch.allclose(values, ref_v[0].transpose(0, 1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_triton_norm_rope_matches_twin(dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(5, 3, 16, generator=g).to(dtype)
    w = torch.rand(16, generator=g).to(dtype) + 0.5
    pos = torch.tensor([0, 7, 7, 31, 2])
    cs = cos_sin_cache(16, {"rope_type": "default", "rope_theta": 10000.0}, 32)
    expected = norm_rope_torch(x, w, pos, cs, 1e-6)
    got = norm_rope_triton(x, w, pos, cs, 1e-6)
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    assert torch.allclose(got.float(), expected.float(), atol=tol, rtol=tol)
    inplace = x.clone()
    norm_rope_triton(inplace, w, pos, cs, 1e-6, out=inplace)
    assert torch.equal(inplace, got)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_triton_kv_write_matches_twin_and_touches_only_its_slots(dtype):
    g = torch.Generator().manual_seed(1)
    keys = torch.randn(4, 2, 8, generator=g).to(dtype)
    values = torch.randn(4, 2, 8, generator=g).to(dtype)
    w = torch.rand(8, generator=g).to(dtype) + 0.5
    pos, slots = torch.tensor([5, 6, 7, 8]), torch.tensor([11, 3, 19, 0])
    cs = cos_sin_cache(8, {"rope_type": "default", "rope_theta": 500.0}, 16)
    buffers = {}
    for name, fn in (("torch", write_kv_torch), ("triton", write_kv_triton)):
        kb = torch.full((20, 2, 8), 7.0, dtype=dtype)
        vb = torch.full((20, 2, 8), 7.0, dtype=dtype)
        fn(keys, values, w, pos, slots, cs, kb, vb, 1e-6)
        buffers[name] = (kb, vb)
    (kt, vt), (kk, vk) = buffers["torch"], buffers["triton"]
    assert torch.allclose(kk.float(), kt.float(), atol=2e-2) and torch.equal(vk, vt)
    untouched = torch.ones(20, dtype=torch.bool)
    untouched[slots] = False
    assert (kk[untouched] == 7).all() and (vk[untouched] == 7).all()


def test_unsupported_head_dim_is_rejected():
    with pytest.raises(ValueError, match="head_dim=12"):
        norm_rope_triton(
            torch.randn(2, 1, 12), torch.ones(12), torch.zeros(2, dtype=torch.long), torch.zeros(4, 12), 1e-6
        )
