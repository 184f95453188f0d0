"""Our split-KV block attention on a GPU, in bf16 (Triton's interpreter emulates bf16 wrongly, so
the CPU tests use float32/float16), eagerly and replayed from a captured CUDA graph with new
inputs written into the captured tensors (as SGLang replays its verify graphs)."""

import block_attention_cases
import pytest
import torch
from block_attention_cases import SMOLLM2, host_arguments
from block_attention_cases import expected as reference

from sglang_dflash.kernels.block_attention import block_attention_splitkv

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
