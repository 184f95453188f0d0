"""Our split-KV block attention on a GPU, in bf16 (Triton's interpreter emulates bf16 wrongly, so
the CPU tests use float32/float16), eagerly and replayed from a captured CUDA graph with new
inputs written into the captured tensors (as SGLang replays its verify graphs)."""

import pytest
import torch

from sglang_dflash.kernels.block_attention import block_attention_splitkv, block_attention_torch

pytestmark = pytest.mark.gpu


def problem(prefix_lens, width=16, heads=(9, 3), d=64, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    (hq, hkv), bs, pool = heads, len(prefix_lens), sum(prefix_lens) + 64

    def rand(*shape):
        return torch.randn(*shape, generator=g, device="cuda").to(torch.bfloat16)

    return dict(
        q=rand(bs * width, hq, d),
        k=rand(bs * width, hkv, d),
        v=rand(bs * width, hkv, d),
        k_buffer=rand(pool, hkv, d),
        v_buffer=rand(pool, hkv, d),
        kv_indices=torch.randperm(pool, generator=g, device="cuda")[: sum(prefix_lens)],
        kv_indptr=torch.tensor(
            [0, *torch.tensor(prefix_lens).cumsum(0).tolist()], dtype=torch.int32, device="cuda"
        ),
        qo_indptr=torch.arange(0, (bs + 1) * width, width, dtype=torch.int32, device="cuda"),
        width=width,
        prefix_lens=prefix_lens,
    )


def run(p, causal, out):
    return block_attention_splitkv(
        p["q"], p["k"], p["v"], out, p["k_buffer"], p["v_buffer"], p["qo_indptr"], p["kv_indptr"],
        p["kv_indices"], None, causal, None, p["width"], 1.0, 1.0, p["q"].shape[2] ** -0.5,
    )  # fmt: skip


def reference(p, causal):
    return block_attention_torch(
        p["q"], p["k"], p["v"], p["k_buffer"], p["v_buffer"], p["kv_indices"], p["prefix_lens"], causal,
        p["q"].shape[2] ** -0.5,
    )  # fmt: skip


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
