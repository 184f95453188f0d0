"""Per-request seeds (SGLang's ``sampling_seed`` under ``--enable-deterministic-inference``): a seeded
sampled request gives the same tokens whatever batch it shares, and its draws are uniform.

That the seeded output still has the target's distribution is tested with the unseeded path in
``test_sampling_lossless.py`` (parametrized ``seeded``); the worker's seeded steps are compared with
the reference token for token in ``test_sglang_worker_step.py``.
"""

import math

import pytest
import torch

from sglang_dflash import SamplingParams, spec_generate
from sglang_dflash.speculative import (
    ACCEPT_DRAW,
    DRAFT_DRAW,
    BatchSampling,
    SeededDraws,
    sample_from,
    seeded_uniforms,
)
from sglang_dflash.testing import make_tiny_drafter, make_tiny_target


def test_uniforms_depend_on_seed_position_and_draw_only_and_are_uniform():
    positions = torch.arange(200_000).view(2, -1)
    u = seeded_uniforms(torch.tensor([7, 7]), positions, DRAFT_DRAW)
    assert u.dtype == torch.float64 and 0 <= u.min() and u.max() < 1
    flat = u.flatten()
    assert abs(flat.mean().item() - 0.5) < 0.005 and abs(flat.var().item() - 1 / 12) < 0.002
    # the ten deciles are each hit about a tenth of the time
    counts = torch.bincount((flat * 10).long(), minlength=10).double() / flat.numel()
    assert torch.allclose(counts, torch.full((10,), 0.1, dtype=torch.float64), atol=0.004)
    # neighbouring positions are not correlated
    assert abs(torch.corrcoef(torch.stack([flat[:-1], flat[1:]]))[0, 1].item()) < 0.01
    same = seeded_uniforms(torch.tensor([7]), torch.tensor([[123]]), DRAFT_DRAW)
    assert same.item() == u[0, 123].item()  # one row, or two: the same draw
    others = [
        seeded_uniforms(torch.tensor([8]), torch.tensor([[123]]), DRAFT_DRAW),
        seeded_uniforms(torch.tensor([7]), torch.tensor([[124]]), DRAFT_DRAW),
        seeded_uniforms(torch.tensor([7]), torch.tensor([[123]]), ACCEPT_DRAW),
    ]
    assert all(o.item() != same.item() for o in others)


def test_seeded_sampling_follows_the_distribution_and_never_picks_an_impossible_token():
    probs = torch.tensor([0.5, 0.0, 0.3, 0.2, 0.0])
    n = 40_000
    draws = SeededDraws(torch.arange(n), torch.zeros(n, dtype=torch.long))
    tokens = sample_from(probs.expand(n, 1, -1), draws)[:, 0]
    freq = torch.bincount(tokens, minlength=5).double() / n
    assert freq[1] == 0 and freq[4] == 0
    assert torch.allclose(freq, probs.double(), atol=0.01)
    assert torch.equal(tokens, sample_from(probs.expand(n, 1, -1), draws)[:, 0])  # reproducible


def test_a_row_without_a_seed_uses_sglangs_default_and_a_bad_seed_is_refused():
    batch = BatchSampling.from_params([SamplingParams(temperature=1, seed=3), SamplingParams(temperature=1)])
    assert batch.seeds.tolist() == [3, 42] and batch.select(torch.tensor([1])).seeds.tolist() == [42]
    assert BatchSampling.from_params([SamplingParams(temperature=1)]).seeds is None
    generator = torch.Generator()
    unseeded = BatchSampling.from_params([SamplingParams(temperature=1)])
    assert unseeded.draws(torch.tensor([5]), generator) is generator
    with pytest.raises(ValueError, match="SamplingParams: seed is 1.5; expected an integer or None"):
        SamplingParams(seed=1.5)


@pytest.fixture(scope="module")
def tiny_pair():
    target = make_tiny_target("llama", seed=5, initializer_range=0.3)
    return target, make_tiny_drafter(target.config, seed=6, std=0.3, block_size=4)


PROMPTS = [[1, 2, 3], [4, 5], [6, 7, 8, 9, 10], [11]]


def test_a_seeded_request_gives_the_same_tokens_alone_and_in_any_batch(tiny_pair):
    target, drafter = tiny_pair
    params = SamplingParams(temperature=1.0, top_k=20, max_new_tokens=24, seed=1234)
    alone = spec_generate(target, drafter, [PROMPTS[2]], params).token_ids[0]
    others = [
        SamplingParams(temperature=0.8, max_new_tokens=n, seed=s) for n, s in ((5, 1), (30, 2), (12, 3))
    ]
    for batch in ([0, 2, 1], [2, 3], [3, 1, 0, 2]):
        rows = [params if p == 2 else others[i % 3] for i, p in enumerate(batch)]
        result = spec_generate(target, drafter, [PROMPTS[p] for p in batch], rows)
        assert result.token_ids[batch.index(2)] == alone, batch
    # A generator is not consulted once rows are seeded.
    assert (
        spec_generate(
            target, drafter, [PROMPTS[2]], params, generator=torch.Generator().manual_seed(9)
        ).token_ids[0]
        == alone
    )


def test_different_seeds_give_different_samples(tiny_pair):
    target, drafter = tiny_pair
    outputs = {
        tuple(
            spec_generate(
                target, drafter, [PROMPTS[0]], SamplingParams(temperature=1.0, max_new_tokens=16, seed=seed)
            ).token_ids[0]
        )
        for seed in range(6)
    }
    assert len(outputs) == 6
    # and at temperature 0 the seed changes nothing
    greedy = {
        tuple(
            spec_generate(target, drafter, [PROMPTS[0]], SamplingParams(max_new_tokens=16, seed=s)).token_ids[
                0
            ]
        )
        for s in range(3)
    }
    assert len(greedy) == 1


def test_seeded_acceptance_uses_the_same_draw_as_a_fresh_batch_would():
    """The accept draws of a step come from (seed, position): a block starting later reads shifted draws."""
    draws = SeededDraws(torch.tensor([5, 6]), torch.tensor([10, 20]))
    u = draws.uniforms(3, ACCEPT_DRAW)
    assert torch.equal(u[:, 1:], draws.shifted(1).uniforms(2, ACCEPT_DRAW))
    assert torch.equal(u[1], SeededDraws(torch.tensor([6]), torch.tensor([20])).uniforms(3, ACCEPT_DRAW)[0])
    assert not math.isclose(u[0, 0].item(), draws.uniforms(1, DRAFT_DRAW)[0, 0].item())
