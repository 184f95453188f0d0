"""DFLASH on SGLang's CPU device without a server: block attention against plain SDPA over the
whole sequence, the server-argument handling for ``--device cpu``, and ServerArgs through the
real host (in a fresh interpreter, as hooks patch SGLang process-wide)."""

from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("sglang", reason="needs the sglang extra installed")

from cpu_server import cpu_environment  # noqa: E402
from sglang.srt.layers.radix_attention import AttentionType  # noqa: E402
from test_sglang_plugin import run_python  # noqa: E402

from sglang_dflash.config import DFlashConfigError  # noqa: E402
from sglang_dflash.serving.cpu_backend import (  # noqa: E402
    block_attention,
    block_attention_mask,
    configure_cpu_server_args,
)
from sglang_dflash.testing import save_tiny_pair  # noqa: E402

HEADS, KV_HEADS, DIM, BLOCK = 4, 2, 8, 4


def layer(attn_type=AttentionType.DECODER, window=-1):
    return SimpleNamespace(tp_q_head_num=HEADS, tp_k_head_num=KV_HEADS, qk_head_dim=DIM, v_head_dim=DIM,
                           scaling=DIM**-0.5, attn_type=attn_type, is_cross_attention=False,
                           sliding_window_size=window)


def whole_sequence_attention(q, k, v, causal, window=-1):
    """Every position of one sequence attends to the keys before it (or all keys): [T, H, D] inputs."""
    t = q.shape[0]
    pos = torch.arange(t)
    mask = pos[None, :] <= pos[:, None] if causal else torch.ones(t, t, dtype=torch.bool)
    if window > -1:
        mask &= pos[None, :] >= pos[:, None] - window
    out = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), attn_mask=mask, scale=DIM**-0.5, enable_gqa=True)
    return out.transpose(0, 1)


@pytest.mark.parametrize("attn_type,window", [(AttentionType.DECODER, -1), (AttentionType.ENCODER_ONLY, -1),
                                              (AttentionType.DECODER, 5)])
def test_block_attention_equals_attention_over_the_whole_sequence(attn_type, window):
    """Two requests with different prefixes in a shuffled pool: each block row equals the row of
    attention over [prefix ; block] computed in one piece (causal for the target, full for the drafter)."""
    gen = torch.Generator().manual_seed(0)
    prefix_lens = torch.tensor([3, 11])
    pool_size = 64
    key_buffer = torch.randn(pool_size, KV_HEADS, DIM, generator=gen)
    value_buffer = torch.randn(pool_size, KV_HEADS, DIM, generator=gen)
    req_to_token = torch.randperm(pool_size, generator=gen)[:2 * 24].view(2, 24)
    q = torch.randn(2 * BLOCK, HEADS * DIM, generator=gen)
    out = block_attention(q, layer(attn_type, window), key_buffer, value_buffer, req_to_token, torch.tensor([1, 0]),
                          prefix_lens, BLOCK)
    for row, (pool_row, prefix) in enumerate(zip([1, 0], prefix_lens.tolist())):
        slots = req_to_token[pool_row, : prefix + BLOCK]
        queries = torch.randn(prefix + BLOCK, HEADS, DIM, generator=gen)
        queries[prefix:] = q[row * BLOCK:(row + 1) * BLOCK].view(BLOCK, HEADS, DIM)
        expected = whole_sequence_attention(queries, key_buffer[slots], value_buffer[slots],
                                            attn_type != AttentionType.ENCODER_ONLY, window)[prefix:]
        torch.testing.assert_close(out[row * BLOCK:(row + 1) * BLOCK].view(BLOCK, HEADS, DIM), expected)


def test_block_mask_is_causal_inside_the_block_and_honours_a_window():
    mask = block_attention_mask(prefix_len=3, block_size=2, causal=True, sliding_window=None, device="cpu")
    assert mask.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]
    windowed = block_attention_mask(prefix_len=3, block_size=2, causal=True, sliding_window=1, device="cpu")
    assert windowed.tolist() == [[False, False, True, True, False], [False, False, False, True, True]]
    assert block_attention_mask(3, 2, causal=False, sliding_window=None, device="cpu") is None


def cpu_args(**overrides):
    fields = dict(device="cpu", enable_dp_attention=False, pp_size=1, attention_backend=None,
                  speculative_draft_attention_backend=None, speculative_num_steps=None, speculative_eagle_topk=None,
                  speculative_draft_window_size=None, speculative_num_draft_tokens=16, max_running_requests=None,
                  enable_mixed_chunk=True)
    fields.update(overrides)
    return SimpleNamespace(**fields)


@pytest.mark.parametrize("host_default", [None, "intel_amx"])
def test_cpu_server_args_pin_torch_native_and_one_step(host_default):
    args = cpu_args(attention_backend=host_default)
    configure_cpu_server_args(args)
    assert (args.attention_backend, args.speculative_draft_attention_backend) == ("torch_native", "torch_native")
    assert (args.speculative_num_steps, args.speculative_eagle_topk, args.max_running_requests) == (1, 1, 48)
    assert args.enable_mixed_chunk is False


@pytest.mark.parametrize("overrides,flag", [
    ({"attention_backend": "flashinfer"}, "--attention-backend"),
    ({"speculative_draft_attention_backend": "flashinfer"}, "--speculative-draft-attention-backend"),
    ({"pp_size": 2}, "--pp-size"),
    ({"enable_dp_attention": True}, "--enable-dp-attention"),
    ({"speculative_draft_window_size": 8}, "--speculative-draft-window-size"),
])
def test_cpu_server_args_reject_what_the_cpu_path_cannot_run(overrides, flag):
    with pytest.raises(DFlashConfigError, match=flag):
        configure_cpu_server_args(cpu_args(**overrides))


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    return save_tiny_pair(str(tmp_path_factory.mktemp("cpu-pair")), "qwen3", block_size=4, num_layers=2)


def server_args_code(target: str, drafter: str) -> str:
    return f"""
        load_plugins()
        from sglang.srt.server_args import ServerArgs
        try:
            sa = ServerArgs(model_path={target!r}, speculative_algorithm="DFLASH", device="cpu",
                            speculative_draft_model_path={drafter!r})
            result = dict(attention=sa.attention_backend, draft=sa.speculative_draft_attention_backend,
                          block=sa.speculative_num_draft_tokens, steps=sa.speculative_num_steps)
        except Exception as e:
            result = dict(error=str(e))
        print("RESULT " + json.dumps(result))
    """


def test_server_args_accept_dflash_on_cpu_with_our_plugin(pair):
    result = run_python(server_args_code(*pair), env_extra=cpu_environment())
    assert result == {"attention": "torch_native", "draft": "torch_native", "block": 4, "steps": 1}


def test_the_builtin_dflash_still_refuses_cpu(pair):
    result = run_python(server_args_code(*pair), env_extra={**cpu_environment(), "SGLANG_DFLASH_IMPL": "builtin"})
    assert "only supports CUDA" in result.get("error", ""), result
