"""Teacher-forced greedy consistency: exact greedy outputs have gap 0, corrupted tokens are caught."""

import torch

from sglang_dflash import SamplingParams, spec_generate
from sglang_dflash.evaluation import (
    ConsistencyReport,
    exact_match_summary,
    first_divergence,
    teacher_forced_gaps,
)
from sglang_dflash.testing import make_tiny_drafter, make_tiny_target

PROMPTS = [[3, 4, 5], [7], [9, 10, 11, 12, 13]]


def test_greedy_outputs_are_fully_consistent_and_corruption_is_caught():
    target = make_tiny_target("llama", seed=4)
    drafter = make_tiny_drafter(target.config, seed=5)
    outputs = spec_generate(target, drafter, PROMPTS, SamplingParams(max_new_tokens=12)).token_ids
    gaps = teacher_forced_gaps(target, PROMPTS, outputs, batch_size=2)
    assert [g.numel() for g in gaps] == [12, 12, 12]
    assert all(torch.all(g <= 1e-5) for g in gaps)
    report = ConsistencyReport.from_gaps(gaps)
    assert report.rate == 1.0 and report.tokens == 36

    corrupted = [list(o) for o in outputs]
    logits = target(torch.tensor([PROMPTS[1] + corrupted[1][:4]])).logits[0, -1]
    corrupted[1][4] = int(logits.argmin())  # the least likely token at position 4
    bad = ConsistencyReport.from_gaps(teacher_forced_gaps(target, PROMPTS, corrupted), margin=0.5)
    assert bad.consistent == 35 and bad.max_gap > 0.5
    assert bad.per_request[1] < 1.0 and bad.per_request[0] == 1.0


def test_exact_match_and_first_divergence():
    assert first_divergence([1, 2, 3], [1, 2, 3]) is None
    assert first_divergence([1, 2, 3], [1, 5, 3]) == 1
    assert first_divergence([1, 2], [1, 2, 3]) == 2
    summary = exact_match_summary([[1, 2], [1, 2, 3], [4]], [[1, 2], [1, 9, 3], [5]])
    assert summary["exact_match_rate"] == 1 / 3 and summary["first_divergence"] == [None, 1, 0]
