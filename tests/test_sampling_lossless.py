"""Speculative sampling keeps the target's output distribution (and would not without the residual step).

A tiny-vocab target makes the exact distribution of the first tokens enumerable: for every
prefix of up to K-1 generated tokens one target pass gives the filtered next-token distribution.
N speculative samples are then compared with it by a chi-square goodness-of-fit test.

Bound: with N = 12,000 samples, p-value > 1e-3 passes (seeds fixed, so the outcome is fixed too).
Power: removing the residual step (resampling from p instead of norm(max(p - q, 0)) after a
rejection) biases the output towards the drafter; the same test must then give p < 1e-6.
"""

import dataclasses
import itertools

import pytest
import torch
from host_sampling import host_penalized_logits, pytorch_sampler_probs
from stats import chi_square_pvalue

import sglang_dflash.speculative as speculative
from sglang_dflash import SamplingParams, spec_generate
from sglang_dflash.testing import make_tiny_drafter, make_tiny_target

VOCAB, K, N, PROMPT = 6, 3, 12_000, [1, 2, 3]


@pytest.fixture(scope="module")
def pair():
    target = make_tiny_target(
        "llama",
        seed=11,
        vocab_size=VOCAB,
        hidden_size=16,
        head_dim=4,
        intermediate_size=32,
        num_hidden_layers=4,
        initializer_range=0.2,
    )
    drafter = make_tiny_drafter(
        target.config, seed=12, std=0.3, block_size=4, mask_token_id=0, target_layer_ids=[1, 2]
    )
    return target, drafter


@torch.inference_mode()
def exact_distribution(target, params: SamplingParams) -> torch.Tensor:
    """P(first K generated tokens = s) for every s in VOCAB^K, under the filtered target (penalised by
    SGLang's own penalizers and filtered by its pytorch sampler function: checked, not assumed)."""
    filters = (
        torch.tensor([params.top_k if params.top_k > 0 else 1 << 30]),
        torch.tensor([params.top_p]),
        torch.tensor([params.min_p]),
    )
    probs = torch.ones([VOCAB] * K, dtype=torch.float64)
    for length in range(K):
        for prefix in itertools.product(range(VOCAB), repeat=length):
            logits = host_penalized_logits(target, PROMPT, list(prefix), params, eos_token_id=-1)[None]
            step = pytorch_sampler_probs(torch.softmax(logits / params.temperature, -1), *filters)[0].double()
            probs[prefix] *= step.view([VOCAB] + [1] * (K - length - 1))
    return probs


def sampled_counts(target, drafter, params: SamplingParams, seed: int, per_request_seeds=False):
    """Counts of the first K tokens over N requests: one generator for all, or one seed per request
    (:class:`~sglang_dflash.speculative.SeededDraws`, SGLang's ``sampling_seed``)."""
    if per_request_seeds:
        seeded = [dataclasses.replace(params, seed=seed * N + i) for i in range(N)]
        result = spec_generate(target, drafter, [PROMPT] * N, seeded)
    else:
        generator = torch.Generator().manual_seed(seed)
        result = spec_generate(target, drafter, [PROMPT] * N, params, generator=generator)
    seqs = torch.tensor(result.token_ids)
    index = (seqs * torch.tensor([VOCAB ** (K - 1 - i) for i in range(K)])).sum(1)
    return torch.bincount(index, minlength=VOCAB**K).view([VOCAB] * K), result


SETTINGS = {
    "temperature 1": SamplingParams(temperature=1.0, max_new_tokens=K),
    "temperature 0.7, top-k 4, top-p 0.9": SamplingParams(
        temperature=0.7, top_k=4, top_p=0.9, max_new_tokens=K
    ),
    # top-k cuts mass that top-p of the original distribution would keep; min-p trims the tail.
    "temperature 1.5, top-k 3, top-p 0.6, min-p 0.05": SamplingParams(
        temperature=1.5, top_k=3, top_p=0.6, min_p=0.05, max_new_tokens=K
    ),
    # Each position's penalties count the drafts before it.
    "temperature 1, frequency 1.5, repetition 1.3": SamplingParams(
        temperature=1.0, frequency_penalty=1.5, repetition_penalty=1.3, max_new_tokens=K
    ),
}


@pytest.mark.parametrize("per_request_seeds", [False, True], ids=["generator", "seeded"])
@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_speculative_sampling_matches_target_distribution(pair, name, per_request_seeds):
    target, drafter = pair
    params = SETTINGS[name]
    counts, result = sampled_counts(target, drafter, params, seed=0, per_request_seeds=per_request_seeds)
    assert any(a > 1 for row in result.accept_lens for a in row), "drafts must sometimes be accepted"
    assert any(a == 1 for row in result.accept_lens for a in row), "and sometimes rejected"
    assert chi_square_pvalue(counts, exact_distribution(target, params)) > 1e-3


@pytest.mark.parametrize("per_request_seeds", [False, True], ids=["generator", "seeded"])
def test_removing_the_residual_step_is_detected(pair, monkeypatch, per_request_seeds):
    target, drafter = pair
    params = SETTINGS["temperature 1"]
    monkeypatch.setattr(speculative, "residual_distribution", lambda p, q: p)
    counts, _ = sampled_counts(target, drafter, params, seed=0, per_request_seeds=per_request_seeds)
    assert chi_square_pvalue(counts, exact_distribution(target, params)) < 1e-6


# Token ids a hot draft vocabulary keeps (``--speculative-token-map``): the drafter's other logits are
# -inf, as DFlashDrafterForSGLang.logits computes them under a map.
HOT = [1, 2, 4]


@pytest.mark.parametrize(
    "name",
    ["temperature 1", "temperature 1, frequency 1.5, repetition 1.3", "temperature 0.7, top-k 4, top-p 0.9"],
)
def test_drafting_from_a_hot_vocabulary_keeps_the_target_distribution(pair, monkeypatch, name):
    """A draft distribution that is zero outside the map is still a valid proposal: the residual
    step gives the tokens it never drafts their target probability."""
    import sglang_dflash.reference as reference

    target, drafter = pair
    params = SETTINGS[name]
    cold = torch.ones(VOCAB, dtype=torch.bool)
    cold[HOT] = False
    drafted = []

    def hot_drafts(draft_logits, *args, **kwargs):
        drafts, probs = speculative.draft_tokens(
            draft_logits.masked_fill(cold, float("-inf")), *args, **kwargs
        )
        drafted.append(drafts)
        return drafts, probs

    monkeypatch.setattr(reference, "draft_tokens", hot_drafts)
    counts, result = sampled_counts(target, drafter, params, seed=0)
    assert set(torch.cat([d.flatten() for d in drafted]).tolist()) <= set(HOT)
    assert any(a > 1 for row in result.accept_lens for a in row), "drafts must sometimes be accepted"
    assert counts.view(VOCAB, -1).sum(1)[cold].sum() > 0, "tokens outside the map are still generated"
    assert chi_square_pvalue(counts, exact_distribution(target, params)) > 1e-3
