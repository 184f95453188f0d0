"""The split-KV block attention (``kernels.block_attention``) that ``SGLANG_DFLASH_SPLITKV=1`` puts
in place of SGLang's prefill kernel for our verify and draft passes, run on CPU through Triton's
interpreter (``conftest``): causal and bidirectional blocks over prefixes of 0-300 cached tokens,
SmolLM2's and a Qwen3's heads, against the PyTorch definition, SGLang's prefill kernel (what the
backend runs otherwise) and SGLang's own split-KV verify kernel (causal only)."""

import pytest
import torch
from block_attention_cases import QWEN3, SMOLLM2, TREE_15, expected, host_arguments, problem

from sglang_dflash.kernels.block_attention import (
    BlockMasks,
    _Scratch,
    block_attention_splitkv,
    block_attention_torch,
    num_splits,
)
from sglang_dflash.tree import DraftTree

extend_attention = pytest.importorskip(
    "sglang.kernels.ops.attention.extend_attention", reason="needs the sglang extra installed"
)
verify_splitkv = pytest.importorskip("sglang.kernels.ops.attention.verify_splitkv")

TOLERANCE = {torch.float32: 1e-5, torch.float16: 2e-3}


@pytest.mark.parametrize("causal", [True, False], ids=["verify", "draft"])
@pytest.mark.parametrize(
    "heads, d, width, prefix_lens, dtype",
    [
        (*SMOLLM2, 16, [1, 37, 300], torch.float32),
        (*SMOLLM2, 16, [5, 129], torch.float16),
        (*QWEN3, 16, [64, 17], torch.float32),
        (*SMOLLM2, 5, [0, 33, 70], torch.float32),  # a width below 16 rows; a request with no prefix
        ((4, 4), 80, 16, [90, 3], torch.float32),  # a head dim that is no power of two; no grouping
    ],
    ids=["smollm2", "smollm2-fp16", "qwen3", "width-5", "head-dim-80"],
)
def test_split_kv_block_attention_equals_the_definition_and_the_hosts_kernel(
    heads, d, width, prefix_lens, dtype, causal
):
    p = problem(heads, d, width, prefix_lens, dtype)
    ours, host = torch.zeros_like(p["q"]), torch.zeros_like(p["q"])
    assert block_attention_splitkv(*host_arguments(p, causal, ours)) is True
    want = expected(p, causal)
    assert (ours.float() - want.float()).abs().max().item() < TOLERANCE[dtype]
    if all(prefix_lens):  # the host's prefill kernel needs a prefix
        extend_attention.extend_attention_fwd(*host_arguments(p, causal, host))
        assert (host.float() - want.float()).abs().max().item() < TOLERANCE[dtype]


def test_sglangs_split_kv_verify_kernel_agrees_on_the_causal_verify_and_declines_the_draft(monkeypatch):
    # SGLang's merge multiplies every split's partial output by its weight, the splits that did not
    # run included (weight 0): their scratch is never written, so NaN bits left there by an earlier
    # allocation make the sum NaN (CI met it once). Zeroed scratch keeps this comparison about the
    # arithmetic; ours is checked against poisoned scratch below.
    monkeypatch.setattr(verify_splitkv, "_VK_CACHE", {})
    monkeypatch.setattr(torch, "empty", torch.zeros)
    p = problem(*SMOLLM2, 16, [1, 37, 300], torch.float32)
    host = torch.zeros_like(p["q"])
    assert verify_splitkv.verify_splitkv_fwd(*host_arguments(p, True, host)) is True
    assert (host - expected(p, True)).abs().max().item() < 1e-5
    assert verify_splitkv.verify_splitkv_fwd(*host_arguments(p, False, host)) is False


@pytest.mark.parametrize("causal", [True, False], ids=["verify", "draft"])
def test_split_kv_block_attention_never_reads_a_split_it_did_not_write(monkeypatch, causal):
    """Prefixes of 1 and 300 tokens share one split count, so the short request leaves most of its
    splits empty; their scratch holds NaN here and must weigh nothing in the merge."""
    p = problem(*SMOLLM2, 16, [1, 300], torch.float32)
    want = expected(p, causal)
    monkeypatch.setattr(_Scratch, "buffers", {})
    monkeypatch.setattr(torch, "empty", lambda *a, **k: torch.full(a, float("nan"), **k))
    out = torch.zeros_like(p["q"])
    assert block_attention_splitkv(*host_arguments(p, causal, out)) is True
    assert (out - want).abs().max().item() < 1e-5


@pytest.mark.parametrize(
    "change, value",
    [("custom_mask", torch.ones(4, dtype=torch.bool)), ("sinks", torch.zeros(9)), ("sliding_window_size", 64),
     ("logit_cap", 30.0), ("k_scale", 0.5)],
)  # fmt: skip
def test_what_it_does_not_serve_is_left_to_the_hosts_kernel(change, value):
    p = problem(*SMOLLM2, 16, [3, 20], torch.float32)
    out = torch.zeros_like(p["q"])
    args = list(host_arguments(p, True, out))
    names = {"custom_mask": 9, "k_scale": 13}
    kwargs = {}
    if change in names:
        args[names[change]] = value
    else:
        kwargs[change] = value
    assert block_attention_splitkv(*args, **kwargs) is False
    assert not out.any()  # untouched


def test_a_ragged_batch_is_left_to_the_hosts_kernel():
    p = problem(*SMOLLM2, 16, [3, 20], torch.float32)
    args = list(host_arguments(p, True, torch.zeros_like(p["q"])))
    args[12] = 8  # the backend's block width disagrees with the rows per request
    assert block_attention_splitkv(*args) is False


def test_split_count_follows_the_average_prefix_within_bounds():
    assert [num_splits(keys, 2) for keys in (0, 600, 2 * 1100, 2 * 3000, 2 * 100_000)] == [4, 4, 8, 16, 16]


@pytest.fixture
def armed_masks(monkeypatch):
    """A clean mask registry for the test (the kernel module's is process-wide)."""
    monkeypatch.setattr(BlockMasks, "held", {})
    monkeypatch.setattr(BlockMasks, "trees_in_place", set())
    return BlockMasks


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_a_causal_call_attends_by_the_tree_while_its_mask_is_in_place(armed_masks, dtype):
    tree_mask = DraftTree(*TREE_15).ancestor_mask()
    p = problem(*SMOLLM2, 16, [1, 37, 300], dtype)
    armed_masks.arm("cpu", 16)
    with armed_masks.holding(tree_mask):
        ours = torch.zeros_like(p["q"])
        assert block_attention_splitkv(*host_arguments(p, True, ours)) is True
    want = block_attention_torch(
        p["q"], p["k"], p["v"], p["k_buffer"], p["v_buffer"], p["kv_indices"], p["prefix_lens"], True,
        p["q"].shape[2] ** -0.5, block_mask=tree_mask,
    )  # fmt: skip
    assert (ours.float() - want.float()).abs().max().item() < TOLERANCE[dtype]
    assert (want.float() - expected(p, True).float()).abs().max().item() > 0.1  # the tree changed it
    # After the step the armed mask is causal again: a chain's verify is the causal attention.
    assert torch.equal(armed_masks.armed("cpu", 16), torch.ones(16, 16, dtype=torch.int8).tril())
    causal = torch.zeros_like(p["q"])
    assert block_attention_splitkv(*host_arguments(p, True, causal)) is True
    assert (causal.float() - expected(p, True).float()).abs().max().item() < TOLERANCE[dtype]


def test_the_drafters_bidirectional_call_and_other_widths_ignore_the_armed_mask(armed_masks):
    armed_masks.arm("cpu", 16)
    with armed_masks.holding(DraftTree(*TREE_15).ancestor_mask()):
        p = problem(*SMOLLM2, 16, [5, 40], torch.float32)
        draft = torch.zeros_like(p["q"])
        assert block_attention_splitkv(*host_arguments(p, False, draft)) is True
        assert (draft - expected(p, False)).abs().max().item() < 1e-5
        narrow = problem(*SMOLLM2, 8, [5, 40], torch.float32)  # no mask armed for width 8: causal
        out = torch.zeros_like(narrow["q"])
        assert block_attention_splitkv(*host_arguments(narrow, True, out)) is True
        assert (out - expected(narrow, True)).abs().max().item() < 1e-5


def test_a_tree_pass_the_kernel_cannot_serve_raises_instead_of_attending_causally(armed_masks):
    p = problem(*SMOLLM2, 16, [3, 20], torch.float32)
    args = list(host_arguments(p, True, torch.zeros_like(p["q"])))
    assert block_attention_splitkv(*args, logit_cap=30.0) is False  # no tree: the host's kernel runs
    armed_masks.arm("cpu", 16)
    with armed_masks.holding(DraftTree(*TREE_15).ancestor_mask()):
        with pytest.raises(RuntimeError, match="does not serve .*SGLANG_DFLASH_VERIFY_TREE=off"):
            block_attention_splitkv(*args, logit_cap=30.0)
        args[10] = False  # the drafter's bidirectional pass is not the tree's business
        assert block_attention_splitkv(*args, logit_cap=30.0) is False


def test_holding_a_mask_nobody_armed_is_refused(armed_masks):
    with pytest.raises(RuntimeError, match="no block mask armed for width 16 on cpu"):
        with armed_masks.holding(DraftTree(*TREE_15).ancestor_mask()):
            pass
