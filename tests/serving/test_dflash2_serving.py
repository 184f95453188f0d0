"""DFlash2 drafters through the real SGLang scheduler on CPU (SmolLM2-135M-Instruct, float32).

Two drafters: the shipped DFlash drafter converted to DFlash2 (identity convolutions, zero
codebooks: its drafts are accepted, so the selector's drafts reach the verify, see
:func:`sglang_dflash.dflash2.dflash2_from_dflash`), and a random DFlash2 drafter with live
convolutions and codebooks.  Greedy output must be transformers' greedy output of the target;
sampled requests, mixed with greedy ones, must finish.
"""

from __future__ import annotations

import os

import pytest
import torch
from cpu_server import SHIPPED_SMOLLM2_DRAFTER
from serving_checks import dflash_server, mean_tau

from sglang_dflash import SamplingParams
from sglang_dflash.checkpoint import load_drafter, save_drafter
from sglang_dflash.dflash2 import dflash2_from_dflash, make_tiny_dflash2_drafter
from sglang_dflash.testing import with_zlab_attention

pytestmark = pytest.mark.slow
NEW_TOKENS = 32
GREEDY = {"temperature": 0, "max_new_tokens": NEW_TOKENS}


def hf_greedy(model, prompt: list[int], eos: int) -> list[int]:
    out = model.generate(
        torch.tensor([prompt]),
        attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
        max_new_tokens=NEW_TOKENS,
        do_sample=False,
        eos_token_id=eos,
        pad_token_id=eos,
    )
    return out[0, len(prompt) :].tolist()


def assert_drafts_accepted(greedy: list[dict]) -> None:
    tau = mean_tau(greedy)
    assert tau > 1.2, f"the converted shipped drafter's drafts should be accepted: {tau=}"


def check_greedy_and_sampled_rows_share_a_batch(server, chosen: list[list[int]], expected) -> None:
    """Greedy and sampled requests in one batch: the walk samples some rows, verifies all."""
    sampled = {"temperature": 0.8, "top_k": 20, "max_new_tokens": NEW_TOKENS}
    mixed = server.generate_many(chosen, [GREEDY, sampled, GREEDY, sampled], concurrency=4)
    assert [mixed[0]["output_ids"], mixed[2]["output_ids"]] == [expected[0], expected[2]]
    assert all(r["meta_info"]["completion_tokens"] >= 1 for r in mixed)


@pytest.fixture(scope="module")
def drafters(smollm2, tmp_path_factory) -> dict[str, str]:
    from transformers import AutoConfig

    out = {}
    if os.path.exists(os.path.join(SHIPPED_SMOLLM2_DRAFTER, "config.json")):
        converted = dflash2_from_dflash(load_drafter(SHIPPED_SMOLLM2_DRAFTER))
        out["shipped as DFlash2"] = str(tmp_path_factory.mktemp("shipped-dflash2"))
        save_drafter(converted, out["shipped as DFlash2"], dtype=torch.bfloat16)
    random = make_tiny_dflash2_drafter(
        AutoConfig.from_pretrained(smollm2), seed=0, std=0.02, block_size=8, num_layers=1, mask_token_id=6,
        conv_kernel_size=3, selector_top_k=16, selector_rank=32,
    )  # fmt: skip
    out["random DFlash2"] = str(tmp_path_factory.mktemp("random-dflash2"))
    save_drafter(random, out["random DFlash2"], dtype=torch.bfloat16)
    return out


# Each costs minutes of CPU (the random drafter's tau is about 1: one verify step per token); CI serves
# the shipped drafter converted to DFlash2 in z-lab's sliding layout below, with the same checks.
@pytest.mark.heavy
@pytest.mark.parametrize("kind", ["shipped as DFlash2", "random DFlash2"])
def test_greedy_output_equals_the_targets_and_sampled_rows_finish(
    kind, drafters, smollm2, prompts, smollm2_float32, tmp_path_factory
):
    if kind not in drafters:
        pytest.skip("drafters/smollm2-135m-instruct holds no drafter")
    model, tokenizer = smollm2_float32
    chosen = prompts[:4]
    expected = [hf_greedy(model, p, tokenizer.eos_token_id) for p in chosen]
    server = dflash_server(smollm2, (drafters[kind], kind), tmp_path_factory, "dflash2")
    try:
        greedy = server.generate_many(chosen, GREEDY, concurrency=4)
        assert [r["output_ids"] for r in greedy] == expected
        if kind == "shipped as DFlash2":
            assert_drafts_accepted(greedy)
        check_greedy_and_sampled_rows_share_a_batch(server, chosen, expected)
    finally:
        server.shutdown()


WINDOW = 32  # far below every chat prompt's length (HumanEval and GSM8K: 100+ tokens)


def test_zlab_sliding_layout_serves_with_its_window(smollm2, prompts, smollm2_float32, tmp_path_factory):
    """z-lab's published DFlash2 layout (bidirectional sliding-window draft layers), the shipped
    drafter converted, is served on CPU: greedy output is the target's, every request's verify steps
    are the reference drafter's with the same window, which differ from the same drafter's without it
    (the window is honoured end to end, not dropped), its drafts are accepted, and sampled rows share
    a batch with greedy ones."""
    from sglang_dflash.reference import spec_generate

    if not os.path.exists(os.path.join(SHIPPED_SMOLLM2_DRAFTER, "config.json")):
        pytest.skip("drafters/smollm2-135m-instruct holds no drafter")
    model, tokenizer = smollm2_float32
    chosen = prompts[:4]
    path = str(tmp_path_factory.mktemp("zlab-sliding"))
    save_drafter(
        with_zlab_attention(dflash2_from_dflash(load_drafter(SHIPPED_SMOLLM2_DRAFTER)), WINDOW), path
    )
    windowed = load_drafter(path).float().eval()
    sampling = SamplingParams(
        temperature=0.0, max_new_tokens=NEW_TOKENS, stop_token_ids=(tokenizer.eos_token_id,)
    )
    with torch.no_grad():
        expected = spec_generate(model, windowed, chosen, sampling)
        layers = windowed.config.num_hidden_layers
        windowed.config = windowed.config.replace(layer_types=("full_attention",) * layers)
        full = spec_generate(model, windowed, chosen, sampling)
    assert full.num_verify_steps != expected.num_verify_steps, "the window should change some drafts"
    server = dflash_server(smollm2, (path, "z-lab sliding layout"), tmp_path_factory, "dflash2-sliding")
    try:
        got = server.generate_many(chosen, GREEDY, concurrency=4)
        assert [r["output_ids"] for r in got] == expected.token_ids
        assert [r["meta_info"]["spec_verify_ct"] for r in got] == expected.num_verify_steps
        assert_drafts_accepted(got)
        check_greedy_and_sampled_rows_share_a_batch(server, chosen, expected.token_ids)
    finally:
        server.shutdown()
