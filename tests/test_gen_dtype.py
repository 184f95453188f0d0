"""bench/gen_dtype.py: its agreement measures (the timing itself runs on the real target: docs/training.md,
"Token stores")."""

import pytest
import torch
from bench_scripts import load_bench_script

from sglang_dflash.testing import make_tiny_target
from sglang_dflash.train.data import generate_batch


@pytest.fixture(scope="module")
def gen_dtype():
    return load_bench_script("gen_dtype")


def test_the_shared_prefix_is_a_share_of_the_reference(gen_dtype):
    assert gen_dtype._shared_prefix_share([1, 2, 3, 4], [1, 2, 9, 4]) == 0.5
    assert gen_dtype._shared_prefix_share([1, 2], [1, 2, 3]) == 1.0
    assert gen_dtype._shared_prefix_share([5, 6], [7]) == 0.0


def test_the_argmax_share_is_one_for_the_targets_own_greedy_tokens_and_falls_for_others(gen_dtype):
    target = make_tiny_target("llama", seed=0)
    prompts = [[3, 4, 5], [7, 8, 9, 10]]
    with torch.inference_mode():
        greedy = generate_batch(target, prompts, 8, None)
    assert gen_dtype._argmax_share(target, prompts, greedy) == 1.0
    changed = [[(t + 1) % 64 for t in r] for r in greedy]  # none of them the argmax any more
    assert gen_dtype._argmax_share(target, prompts, changed) == 0.0
    half = [r[:4] + c[4:] for r, c in zip(greedy, changed)]
    assert gen_dtype._argmax_share(target, prompts, half) == 0.5
