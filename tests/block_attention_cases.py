"""Block-attention problems shared by the CPU (Triton interpreter) and GPU tests of
``sglang_dflash.kernels.block_attention``: a block of ``width`` queries per request over its cached
prefix, in the argument layout SGLang's Triton backend passes to ``extend_attention_fwd``."""

import torch

from sglang_dflash.kernels.block_attention import block_attention_torch

SMOLLM2, QWEN3 = ((9, 3), 64), ((8, 2), 128)  # (query heads, K/V heads), head dim
# A verify tree over 16 nodes, (parents, ranks): the shipped drafter's verify-trees/tree-15.json.
TREE_15 = ((0, 0, 0, 0, 1, 1, 2, 1, 5, 5, 6, 5, 9, 9, 13), (0, 1, 2, 3, 0, 1, 0, 2, 0, 1, 0, 2, 0, 1, 0))


def problem(heads, d, width, prefix_lens, dtype, seed=0, device="cpu") -> dict:
    g = torch.Generator(device=device).manual_seed(seed)
    (hq, hkv), bs = heads, len(prefix_lens)
    pool = sum(prefix_lens) + 64

    def rand(*shape):
        return torch.randn(*shape, generator=g, device=device).to(dtype)

    return dict(
        q=rand(bs * width, hq, d),
        k=rand(bs * width, hkv, d),
        v=rand(bs * width, hkv, d),
        k_buffer=rand(pool, hkv, d),
        v_buffer=rand(pool, hkv, d),
        kv_indices=torch.randperm(pool, generator=g, device=device)[: sum(prefix_lens)].to(torch.int64),
        kv_indptr=torch.tensor([0, *torch.tensor(prefix_lens).cumsum(0).tolist()], dtype=torch.int32).to(
            device
        ),
        qo_indptr=torch.arange(0, (bs + 1) * width, width, dtype=torch.int32, device=device),
        width=width,
        prefix_lens=prefix_lens,
    )


def host_arguments(p: dict, causal: bool, out: torch.Tensor) -> tuple:
    """SGLang's extend_attention_fwd argument list, as the Triton backend passes it."""
    return (
        p["q"], p["k"], p["v"], out, p["k_buffer"], p["v_buffer"], p["qo_indptr"], p["kv_indptr"],
        p["kv_indices"], None, causal, None, p["width"], 1.0, 1.0, p["q"].shape[2] ** -0.5,
    )  # fmt: skip


def expected(p: dict, causal: bool) -> torch.Tensor:
    return block_attention_torch(
        p["q"], p["k"], p["v"], p["k_buffer"], p["v_buffer"], p["kv_indices"], p["prefix_lens"], causal,
        p["q"].shape[2] ** -0.5,
    )  # fmt: skip
