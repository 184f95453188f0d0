"""The split-KV verify kernel that ``SGLANG_DFLASH_SPLITKV_VERIFY=1`` turns on for our target
(SGLang's ``verify_splitkv_fwd``), run on CPU through Triton's interpreter: on our verify's shapes
(a block of 16 per request over prefixes of different lengths, SmolLM2's and a Qwen3's heads) it
computes the verify attention the prefill kernel computes, and it declines the drafter's
bidirectional pass (the backend then runs the prefill kernel)."""

import pytest
import scenarios

pytest.importorskip("sglang.kernels.ops.attention.verify_splitkv", reason="needs the sglang extra installed")

SMOLLM2_HEADS, QWEN3_HEADS = ([9, 3], 64), ([8, 2], 128)
CASES = [
    {"heads": SMOLLM2_HEADS[0], "head_dim": SMOLLM2_HEADS[1], "width": 16, "prefix_lens": [1, 37, 300],
     "dtype": "float32", "causal": True},
    {"heads": SMOLLM2_HEADS[0], "head_dim": SMOLLM2_HEADS[1], "width": 16, "prefix_lens": [5, 129],
     "dtype": "float16", "causal": True},
    {"heads": QWEN3_HEADS[0], "head_dim": QWEN3_HEADS[1], "width": 16, "prefix_lens": [64, 17],
     "dtype": "float32", "causal": True},
    {"heads": SMOLLM2_HEADS[0], "head_dim": SMOLLM2_HEADS[1], "width": 16, "prefix_lens": [40],
     "dtype": "float32", "causal": False},
]  # fmt: skip
TOLERANCE = {"float32": 1e-5, "float16": 2e-3}


@pytest.fixture(scope="module")
def results() -> list[dict]:
    proc = scenarios.run("splitkv_verify", CASES, env={"TRITON_INTERPRET": "1"}, timeout_s=600)
    return scenarios.result_of(proc)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_the_split_kv_kernel_computes_our_verify_attention(results, index):
    result, tolerance = results[index], TOLERANCE[CASES[index]["dtype"]]
    assert result["split_kv_took_it"]
    assert result["split_kv_error"] < tolerance
    assert result["prefill_kernel_error"] < tolerance  # the reference is the host's attention


def test_the_drafters_bidirectional_pass_is_declined(results):
    # The kernel is causal only: it declines and the backend runs its prefill kernel instead.
    assert results[3]["split_kv_took_it"] is False
