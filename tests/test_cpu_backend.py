"""DFLASH on SGLang's CPU device without a server: block attention against plain SDPA over the
whole sequence, the server-argument handling for ``--device cpu``, and ServerArgs through the
real host (in a fresh interpreter, ``tests/scenarios/plugin_host.py``, as hooks patch SGLang
process-wide)."""

from types import SimpleNamespace

import pytest
import scenarios
import torch
from cpu_server import cpu_environment
from sglang_fakes import radix_layer

from sglang_dflash.config import DFlashConfigError
from sglang_dflash.serving.cpu_backend import block_attention, block_attention_mask, configure_cpu_server_args

radix_attention = pytest.importorskip(
    "sglang.srt.layers.radix_attention", reason="needs the sglang extra installed"
)
AttentionType = radix_attention.AttentionType

HEADS, KV_HEADS, DIM, BLOCK = 4, 2, 8, 4


def layer(attn_type=AttentionType.DECODER, window=-1):
    return radix_layer(HEADS, KV_HEADS, DIM, attn_type, window)


def whole_sequence_attention(q, k, v, causal, window=-1):
    """Every position of one sequence attends to the keys before it (or all keys): [T, H, D] inputs."""
    t = q.shape[0]
    pos = torch.arange(t)
    mask = pos[None, :] <= pos[:, None] if causal else torch.ones(t, t, dtype=torch.bool)
    if window > -1:
        mask &= pos[None, :] >= pos[:, None] - window
        if not causal:  # a bidirectional window reaches ahead as far as behind
            mask &= pos[None, :] <= pos[:, None] + window
    out = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(0, 1),
        k.transpose(0, 1),
        v.transpose(0, 1),
        attn_mask=mask,
        scale=DIM**-0.5,
        enable_gqa=True,
    )
    return out.transpose(0, 1)


@pytest.mark.parametrize(
    "attn_type,window",
    [
        (AttentionType.DECODER, -1),
        (AttentionType.ENCODER_ONLY, -1),
        (AttentionType.DECODER, 5),
        (AttentionType.ENCODER_ONLY, 5),  # a sliding draft layer: only keys near the block
    ],
)
def test_block_attention_equals_attention_over_the_whole_sequence(attn_type, window):
    """Two requests with different prefixes in a shuffled pool: each block row equals the row of
    attention over [prefix ; block] computed in one piece (causal for the target, full for the drafter)."""
    gen = torch.Generator().manual_seed(0)
    prefix_lens = torch.tensor([3, 11])
    pool_size = 64
    key_buffer = torch.randn(pool_size, KV_HEADS, DIM, generator=gen)
    value_buffer = torch.randn(pool_size, KV_HEADS, DIM, generator=gen)
    req_to_token = torch.randperm(pool_size, generator=gen)[: 2 * 24].view(2, 24)
    q = torch.randn(2 * BLOCK, HEADS * DIM, generator=gen)
    out = block_attention(
        q,
        layer(attn_type, window),
        key_buffer,
        value_buffer,
        req_to_token,
        torch.tensor([1, 0]),
        prefix_lens,
        BLOCK,
    )
    for row, (pool_row, prefix) in enumerate(zip([1, 0], prefix_lens.tolist())):
        slots = req_to_token[pool_row, : prefix + BLOCK]
        queries = torch.randn(prefix + BLOCK, HEADS, DIM, generator=gen)
        queries[prefix:] = q[row * BLOCK : (row + 1) * BLOCK].view(BLOCK, HEADS, DIM)
        expected = whole_sequence_attention(
            queries, key_buffer[slots], value_buffer[slots], attn_type != AttentionType.ENCODER_ONLY, window
        )[prefix:]
        torch.testing.assert_close(out[row * BLOCK : (row + 1) * BLOCK].view(BLOCK, HEADS, DIM), expected)


def test_a_single_query_block_needs_no_mask_unless_a_window_hides_keys():
    assert (
        block_attention_mask(prefix_len=5, block_size=1, causal=True, sliding_window=None, device="cpu")
        is None
    )
    assert (
        block_attention_mask(prefix_len=5, block_size=1, causal=True, sliding_window=8, device="cpu") is None
    )
    windowed = block_attention_mask(prefix_len=5, block_size=1, causal=True, sliding_window=2, device="cpu")
    assert windowed.tolist() == [[False, False, False, True, True, True]]


def test_block_mask_is_causal_inside_the_block_and_honours_a_window():
    mask = block_attention_mask(prefix_len=3, block_size=2, causal=True, sliding_window=None, device="cpu")
    assert mask.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]
    windowed = block_attention_mask(prefix_len=3, block_size=2, causal=True, sliding_window=1, device="cpu")
    assert windowed.tolist() == [[False, False, True, True, False], [False, False, False, True, True]]
    assert block_attention_mask(3, 2, causal=False, sliding_window=None, device="cpu") is None


def test_a_bidirectional_window_hides_keys_behind_and_ahead_of_each_query():
    windowed = block_attention_mask(prefix_len=2, block_size=3, causal=False, sliding_window=1, device="cpu")
    assert windowed.tolist() == [
        [False, True, True, True, False],
        [False, False, True, True, True],
        [False, False, False, True, True],
    ]
    # A window that reaches every key is no window: SDPA keeps its fused unmasked kernel.
    assert block_attention_mask(2, 3, causal=False, sliding_window=4, device="cpu") is None
    assert block_attention_mask(2, 3, causal=False, sliding_window=3, device="cpu") is not None


def cpu_args(**overrides):
    fields = dict(
        device="cpu",
        enable_dp_attention=False,
        pp_size=1,
        attention_backend=None,
        speculative_draft_attention_backend=None,
        speculative_num_steps=None,
        speculative_eagle_topk=None,
        speculative_draft_window_size=None,
        speculative_num_draft_tokens=16,
        max_running_requests=None,
        enable_mixed_chunk=True,
        disable_overlap_schedule=False,
    )
    fields.update(overrides)
    return SimpleNamespace(**fields)


@pytest.mark.parametrize("host_default", [None, "intel_amx"])
def test_cpu_server_args_pin_torch_native_and_one_step(host_default):
    args = cpu_args(attention_backend=host_default)
    configure_cpu_server_args(args)
    assert args.attention_backend == args.speculative_draft_attention_backend == "torch_native"
    assert (args.speculative_num_steps, args.speculative_eagle_topk, args.max_running_requests) == (1, 1, 48)
    assert args.enable_mixed_chunk is False


@pytest.mark.parametrize("setting,overlap", [(None, False), ("0", False), ("1", True)])
def test_cpu_server_args_turn_the_overlap_scheduler_off_unless_kept(monkeypatch, setting, overlap):
    """A CPU forward blocks the scheduler: overlap only delays each result by a step (cpu_overlap_setting)."""
    if setting is None:
        monkeypatch.delenv("SGLANG_DFLASH_CPU_OVERLAP", raising=False)
    else:
        monkeypatch.setenv("SGLANG_DFLASH_CPU_OVERLAP", setting)
    args = cpu_args()
    configure_cpu_server_args(args)
    assert args.disable_overlap_schedule is (not overlap)
    monkeypatch.setenv("SGLANG_DFLASH_CPU_OVERLAP", "1")
    kept_off = cpu_args(disable_overlap_schedule=True)  # --disable-overlap-schedule stays
    configure_cpu_server_args(kept_off)
    assert kept_off.disable_overlap_schedule is True


def test_cpu_overlap_setting_refuses_other_values(monkeypatch):
    monkeypatch.setenv("SGLANG_DFLASH_CPU_OVERLAP", "yes")
    with pytest.raises(
        ValueError, match="SGLANG_DFLASH_CPU_OVERLAP is 'yes'; expected '0' \\(default\\) or '1'"
    ):
        configure_cpu_server_args(cpu_args())


@pytest.mark.parametrize(
    "overrides,flag",
    [
        ({"attention_backend": "flashinfer"}, "--attention-backend"),
        ({"speculative_draft_attention_backend": "flashinfer"}, "--speculative-draft-attention-backend"),
        ({"pp_size": 2}, "--pp-size"),
        ({"enable_dp_attention": True}, "--enable-dp-attention"),
    ],
)
def test_cpu_server_args_reject_what_the_cpu_path_cannot_run(overrides, flag):
    with pytest.raises(DFlashConfigError, match=flag):
        configure_cpu_server_args(cpu_args(**overrides))


SERVER_ARGS_FIELDS = [
    "attention_backend",
    "speculative_draft_attention_backend",
    "speculative_num_draft_tokens",
    "speculative_num_steps",
    "disable_overlap_schedule",
]


def cpu_server_args(pair: tuple[str, str], **env: str) -> dict | str:
    """DFLASH ServerArgs for ``--device cpu`` in a host with the CPU settings: the fields our CPU
    handling sets, or the error message."""
    target, drafter = pair
    check = (
        "server_args",
        {"target": target, "draft": drafter, "device": "cpu", "fields": SERVER_ARGS_FIELDS},
    )
    return scenarios.plugin_host({"cpu": check}, env={**cpu_environment(), **env})["cpu"]


def test_server_args_accept_dflash_on_cpu_with_our_plugin(qwen3_pair):
    assert cpu_server_args(qwen3_pair) == {
        "attention_backend": "torch_native",
        "speculative_draft_attention_backend": "torch_native",
        "speculative_num_draft_tokens": 4,
        "speculative_num_steps": 1,
        "disable_overlap_schedule": True,
    }


def test_the_builtin_dflash_still_refuses_cpu(qwen3_pair):
    message = cpu_server_args(qwen3_pair, SGLANG_DFLASH_IMPL="builtin")
    assert isinstance(message, str) and "only supports CUDA" in message, message
