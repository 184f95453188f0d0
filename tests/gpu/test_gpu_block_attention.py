"""Our split-KV block attention on a GPU, in bf16 (Triton's interpreter emulates bf16 wrongly, so
the CPU tests use float32/float16), eagerly and replayed from a captured CUDA graph with new
inputs written into the captured tensors (as SGLang replays its verify graphs)."""

import block_attention_cases
import pytest
import torch
from block_attention_cases import SMOLLM2, TREE_15, host_arguments
from block_attention_cases import expected as reference

from sglang_dflash.kernels.block_attention import BlockMasks, block_attention_splitkv, block_attention_torch
from sglang_dflash.tree import DraftTree

pytestmark = pytest.mark.gpu


def problem(prefix_lens, seed=0):
    return block_attention_cases.problem(*SMOLLM2, 16, prefix_lens, torch.bfloat16, seed=seed, device="cuda")


def run(p, causal, out):
    return block_attention_splitkv(*host_arguments(p, causal, out))


@pytest.mark.parametrize("causal", [True, False], ids=["verify", "draft"])
def test_bf16_block_attention_matches_the_definition(causal):
    p = problem([1, 37, 300, 2000])
    out = torch.zeros_like(p["q"])
    assert run(p, causal, out)
    assert (out.float() - reference(p, causal).float()).abs().max().item() < 2e-2


def test_a_captured_graph_replays_with_new_inputs():
    p = problem([40, 300])
    out = torch.zeros_like(p["q"])
    run(p, True, out)  # compile before capturing
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run(p, True, out)
    fresh = problem([40, 300], seed=1)
    for name in ("q", "k", "v", "k_buffer", "v_buffer"):
        p[name].copy_(fresh[name])
    graph.replay()
    torch.cuda.synchronize()
    assert (out.float() - reference(p, True).float()).abs().max().item() < 2e-2


def test_a_graph_captured_with_an_armed_mask_replays_the_tree_and_then_the_chain(monkeypatch):
    """Captured while the armed mask is causal (SGLang captures before any step), replayed with a
    verify tree's mask in place, then with the causal mask back: both as the definition."""
    monkeypatch.setattr(BlockMasks, "held", {})
    monkeypatch.setattr(BlockMasks, "trees_in_place", set())
    tree_mask = DraftTree(*TREE_15).ancestor_mask("cuda")
    BlockMasks.arm("cuda", 16)
    p = problem([40, 300])
    out = torch.zeros_like(p["q"])
    run(p, True, out)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run(p, True, out)
    with BlockMasks.holding(tree_mask):
        graph.replay()
        torch.cuda.synchronize()
    by_tree = block_attention_torch(
        p["q"], p["k"], p["v"], p["k_buffer"], p["v_buffer"], p["kv_indices"], p["prefix_lens"], True,
        p["q"].shape[2] ** -0.5, block_mask=tree_mask,
    )  # fmt: skip
    assert (out.float() - by_tree.float()).abs().max().item() < 2e-2
    graph.replay()
    torch.cuda.synchronize()
    assert (out.float() - reference(p, True).float()).abs().max().item() < 2e-2
