"""SGLang's split-KV verify kernel and its prefill kernel (the fallback) on CPU, through Triton's
interpreter (``TRITON_INTERPRET=1``, set by the test before Triton loads), against a plain PyTorch
verify attention: causal over [cached prefix ; block], grouped K/V heads.

    TRITON_INTERPRET=1 python -m tests.scenarios.splitkv_verify < cases.json

A case is ``{"heads": [q, kv], "head_dim", "width", "prefix_lens", "dtype", "causal"}``; the result
holds, per case, whether the split-KV kernel took it and each kernel's largest difference from the
reference.  The interpreter emulates bfloat16 wrongly (both kernels come out as garbage there), so
the cases use float32 and float16.
"""

from __future__ import annotations

import json
import os
import sys

from . import print_result


def reference_verify(q, k, v, k_buf, v_buf, kv_indices, prefix_lens, width, scale):
    """Each request's ``width`` queries over its cached prefix and its block, causal in the block."""
    import torch

    group = q.shape[1] // k.shape[1]
    out, start = torch.empty_like(q), 0
    for r, n in enumerate(prefix_lens):
        rows = slice(r * width, (r + 1) * width)
        cached = kv_indices[start : start + n]
        start += n
        keys = torch.cat([k_buf[cached], k[rows]]).repeat_interleave(group, dim=1).float()
        values = torch.cat([v_buf[cached], v[rows]]).repeat_interleave(group, dim=1).float()
        scores = torch.einsum("qhd,khd->hqk", q[rows].float(), keys) * scale
        visible = torch.arange(n + width)[None, :] <= (n + torch.arange(width))[:, None]
        scores = scores.masked_fill(~visible, float("-inf"))
        out[rows] = torch.einsum("hqk,khd->qhd", scores.softmax(-1), values).to(q.dtype)
    return out


def run_case(case: dict, seed: int) -> dict:
    import torch
    from sglang.kernels.ops.attention.extend_attention import extend_attention_fwd
    from sglang.kernels.ops.attention.verify_splitkv import verify_splitkv_fwd

    g = torch.Generator().manual_seed(seed)
    (hq, hkv), d, width, prefix_lens = case["heads"], case["head_dim"], case["width"], case["prefix_lens"]
    dtype = getattr(torch, case["dtype"])
    bs, pool = len(prefix_lens), sum(prefix_lens) + 64

    def rand(*shape):
        return torch.randn(*shape, generator=g).to(dtype)

    k_buf, v_buf = rand(pool, hkv, d), rand(pool, hkv, d)
    kv_indices = torch.randperm(pool, generator=g)[: sum(prefix_lens)].to(torch.int64)
    kv_indptr = torch.tensor([0, *torch.tensor(prefix_lens).cumsum(0).tolist()], dtype=torch.int32)
    qo_indptr = torch.arange(0, (bs + 1) * width, width, dtype=torch.int32)
    q, k, v = rand(bs * width, hq, d), rand(bs * width, hkv, d), rand(bs * width, hkv, d)
    scale = d**-0.5
    causal = case["causal"]
    args = (k_buf, v_buf, qo_indptr, kv_indptr, kv_indices, None, causal, None, width, 1.0, 1.0, scale)
    split_out, extend_out = torch.zeros_like(q), torch.zeros_like(q)
    took = verify_splitkv_fwd(q, k, v, split_out, *args)
    extend_attention_fwd(q, k, v, extend_out, *args)
    expected = reference_verify(q, k, v, k_buf, v_buf, kv_indices, prefix_lens, width, scale)
    return {
        "split_kv_took_it": bool(took),
        "split_kv_error": (split_out.float() - expected.float()).abs().max().item() if took else None,
        "prefill_kernel_error": (extend_out.float() - expected.float()).abs().max().item(),
    }


def main() -> None:
    if os.environ.get("TRITON_INTERPRET") != "1":
        raise SystemExit("splitkv_verify: TRITON_INTERPRET is not '1'; expected Triton's interpreter (CPU)")
    cases = json.load(sys.stdin)
    print_result([run_case(case, seed) for seed, case in enumerate(cases)])


if __name__ == "__main__":
    main()
