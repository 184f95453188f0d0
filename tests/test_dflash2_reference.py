"""Reference speculative generation with DFlash2 drafters: greedy == the target's greedy, sampling lossless.

Greedy: random and oracle DFlash2 drafters (tiny Llama and Qwen3 targets, and SmolLM2-135M) give
exactly the target's own greedy continuation.  Sampling: the chi-square test of
``test_sampling_lossless`` (N = 12,000 requests, the first K tokens' exact filtered distribution)
with a DFlash2 drafter whose proposal is sparse (3 candidates of a 6-token vocabulary); reporting a
dense proposal instead of the realised sparse one is detected (p < 1e-6).
"""

import functools
import os

import pytest
import torch
from cpu_server import SHIPPED_SMOLLM2_DRAFTER
from stats import chi_square_pvalue
from test_reference import PROMPTS, make_pair, plain_greedy
from test_sampling_lossless import SETTINGS, exact_distribution, sampled_counts

import sglang_dflash.dflash2 as dflash2
from sglang_dflash import SamplingParams, load_drafter, spec_generate
from sglang_dflash.dflash2 import DFlash2DraftModel, dflash2_from_dflash, make_tiny_dflash2_drafter
from sglang_dflash.smollm2 import IM_END_ID
from sglang_dflash.testing import make_tiny_drafter, make_tiny_target

make_dflash2_pair = functools.partial(make_pair, make_drafter=make_tiny_dflash2_drafter)


@pytest.mark.parametrize("family", ["llama", "qwen3"])
@pytest.mark.parametrize("block_size", [2, 5, 16])
@pytest.mark.parametrize("kind", ["random", "oracle", "partial-oracle"])
def test_greedy_output_equals_target_greedy(family, block_size, kind):
    target, drafter = make_dflash2_pair(family, block_size, kind)
    assert isinstance(drafter, DFlash2DraftModel)
    max_new = 40
    result = spec_generate(target, drafter, PROMPTS, SamplingParams(max_new_tokens=max_new))
    assert result.token_ids == plain_greedy(target, PROMPTS, max_new)
    assert [1 + sum(a) for a in result.accept_lens] == [max_new] * len(PROMPTS)
    tau = result.mean_tau
    if kind == "oracle":
        assert tau >= 0.75 * block_size, (
            f"the oracle DFlash2 drafter should be accepted almost always, {tau=}"
        )
    elif kind == "partial-oracle" and block_size > 2:
        lengths = {a for row in result.accept_lens for a in row}
        assert 1.3 < tau < block_size and len(lengths) >= 3, f"expected ragged acceptance: {tau=}, {lengths}"


def test_mixed_greedy_and_sampled_rows_keep_greedy_rows_exact():
    target, drafter = make_dflash2_pair("qwen3", 5, "partial-oracle")
    params = [
        SamplingParams(max_new_tokens=30),
        SamplingParams(temperature=0.8, max_new_tokens=30),
        SamplingParams(max_new_tokens=30),
        SamplingParams(temperature=1.2, top_k=5, max_new_tokens=30),
    ]
    prompts = PROMPTS[:4]
    result = spec_generate(target, drafter, prompts, params, generator=torch.Generator().manual_seed(0))
    greedy = plain_greedy(target, [prompts[0], prompts[2]], 30)
    assert [result.token_ids[0], result.token_ids[2]] == greedy
    assert all(len(t) == 30 for t in result.token_ids)


def test_seeded_dflash2_rows_are_reproducible_in_any_batch():
    target, drafter = make_dflash2_pair("llama", 4, "partial-oracle")
    seeded = SamplingParams(temperature=1.0, max_new_tokens=24, seed=1234)
    other = SamplingParams(temperature=0.7, max_new_tokens=24, seed=99)
    alone = spec_generate(target, drafter, [PROMPTS[1]], [seeded]).token_ids[0]
    batched = spec_generate(target, drafter, [PROMPTS[0], PROMPTS[1]], [other, seeded]).token_ids[1]
    assert alone == batched


@pytest.mark.slow
def test_smollm2_greedy_equals_target_and_both_generations_run(smollm2_float32):
    """SmolLM2-135M with random drafters of both generations: exact greedy output, tau about 1."""
    target, tokenizer = smollm2_float32
    chats = ["What is the capital of France?", "Write a Python function that adds two numbers."]
    prompts = [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": c}], add_generation_prompt=True, tokenize=True
        )
        for c in chats
    ]
    prompts = [list(p["input_ids"] if hasattr(p, "keys") else p) for p in prompts]
    params = SamplingParams(max_new_tokens=32, stop_token_ids=(IM_END_ID,))
    dflash2_drafter = make_tiny_dflash2_drafter(
        target.config, seed=0, std=0.02, num_layers=1, block_size=16, mask_token_id=6,
        selector_top_k=16, selector_rank=64,
    )  # fmt: skip
    dflash_drafter = make_tiny_drafter(
        target.config, seed=0, std=0.02, num_layers=1, block_size=16, mask_token_id=6
    )
    plain = [
        target.generate(
            torch.tensor([p]),
            attention_mask=torch.ones(1, len(p), dtype=torch.long),
            max_new_tokens=32,
            do_sample=False,
            eos_token_id=IM_END_ID,
            pad_token_id=IM_END_ID,
        )[0, len(p) :].tolist()
        for p in prompts
    ]
    for drafter in (dflash2_drafter, dflash_drafter):
        result = spec_generate(target, drafter, prompts, params)
        assert result.token_ids == plain, type(drafter).__name__
        assert 1 <= result.mean_tau < 2, f"a random drafter is rarely accepted: {result.mean_tau}"


SHIPPED = SHIPPED_SMOLLM2_DRAFTER


@pytest.mark.slow
def test_shipped_drafter_as_dflash2_drafts_what_it_drafts(smollm2_float32):
    """Identity convolutions and zero codebooks: the DFlash2 path drafts the DFlash drafter's argmax,
    so greedy acceptance is the same, step by step, and clearly above a random drafter's."""
    if not os.path.exists(os.path.join(SHIPPED, "config.json")):
        pytest.skip("drafters/smollm2-135m-instruct holds no drafter")
    target, tokenizer = smollm2_float32
    shipped = load_drafter(SHIPPED, target.config)
    converted = dflash2_from_dflash(shipped)
    assert isinstance(converted, DFlash2DraftModel) and converted.config.selector_top_k == 16
    prompts = [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": c}], add_generation_prompt=True, tokenize=True
        )
        for c in ["Write a Python function that counts the vowels in a string.", "What is 12 + 7 - 5?"]
    ]
    prompts = [list(p["input_ids"] if hasattr(p, "keys") else p) for p in prompts]
    params = SamplingParams(max_new_tokens=40, stop_token_ids=(IM_END_ID,))
    dflash, dflash2_result = (spec_generate(target, d, prompts, params) for d in (shipped, converted))
    assert dflash2_result.token_ids == dflash.token_ids
    assert dflash2_result.accept_lens == dflash.accept_lens
    assert dflash2_result.mean_tau > 1.2, dflash2_result.mean_tau


# ---------------------------------------------------------------------------- sampled: lossless
@pytest.fixture(scope="module")
def dflash2_pair():
    """The lossless test's tiny-vocab target and a DFlash2 drafter proposing 3 of its 6 tokens."""
    target = make_tiny_target(
        "llama",
        seed=11,
        vocab_size=6,
        hidden_size=16,
        head_dim=4,
        intermediate_size=32,
        num_hidden_layers=4,
        initializer_range=0.2,
    )
    drafter = make_tiny_dflash2_drafter(
        target.config,
        seed=12,
        std=0.3,
        block_size=4,
        mask_token_id=0,
        target_layer_ids=[1, 2],
        conv_group_size=4,
        selector_top_k=3,
        selector_rank=4,
    )
    return target, drafter


LOSSLESS_SETTINGS = [
    "temperature 1",
    "temperature 0.7, top-k 4, top-p 0.9",
    "temperature 1, frequency 1.5, repetition 1.3",
]


@pytest.mark.slow
@pytest.mark.parametrize("per_request_seeds", [False, True], ids=["generator", "seeded"])
@pytest.mark.parametrize("name", LOSSLESS_SETTINGS)
def test_dflash2_sampling_matches_target_distribution(dflash2_pair, name, per_request_seeds):
    target, drafter = dflash2_pair
    params = SETTINGS[name]
    counts, result = sampled_counts(target, drafter, params, seed=0, per_request_seeds=per_request_seeds)
    assert any(a > 1 for row in result.accept_lens for a in row), "drafts must sometimes be accepted"
    assert any(a == 1 for row in result.accept_lens for a in row), "and sometimes rejected"
    assert chi_square_pvalue(counts, exact_distribution(target, params)) > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("per_request_seeds", [False, True], ids=["generator", "seeded"])
def test_a_dense_proposal_in_place_of_the_sparse_one_is_detected(
    dflash2_pair, monkeypatch, per_request_seeds
):
    """Verifying against a proposal over the whole vocabulary, not the realised q over the candidates,
    biases the output."""
    target, drafter = dflash2_pair
    params = SETTINGS["temperature 1"]

    def spread(q, candidate_ids, vocab_size):
        return torch.full((*q.shape[:-1], vocab_size), 1.0 / vocab_size)

    monkeypatch.setattr(dflash2, "dense_proposal", spread)
    counts, _ = sampled_counts(target, drafter, params, seed=0, per_request_seeds=per_request_seeds)
    assert chi_square_pvalue(counts, exact_distribution(target, params)) < 1e-6
