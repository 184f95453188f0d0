"""Reference speculative generation is lossless: greedy output == the target's own greedy output."""

import pytest
import torch

from sglang_dflash import SamplingParams, spec_generate
from sglang_dflash.testing import arrange_oracle, make_tiny_drafter, make_tiny_target

PROMPTS = [[5], [3, 4, 5, 6, 7], [9, 8, 7, 6, 5, 4, 3, 2, 1], [11, 12]]


def plain_greedy(target, prompts, max_new_tokens, stop_token_ids=()):
    """The target's own greedy continuation, one unpadded prompt at a time."""
    outputs = []
    for prompt in prompts:
        out = target.generate(
            torch.tensor([prompt]),
            attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=0,
            eos_token_id=list(stop_token_ids) or None,
        )
        outputs.append(out[0, len(prompt) :].tolist())
    return outputs


def make_pair(family, block_size, kind, seed=0, make_drafter=make_tiny_drafter):
    """A tiny target and a 2-layer drafter for it: random, an oracle (drafts every token right), or
    a partial oracle (some drafts right); ``make_drafter`` picks the generation."""
    target = make_tiny_target(family, seed=seed)
    drafter = make_drafter(target.config, seed=seed + 1, num_layers=2, block_size=block_size)
    if kind == "oracle":
        arrange_oracle(target, drafter, token_id=7, strength=100.0)
    elif kind == "partial-oracle":
        arrange_oracle(target, drafter, token_id=7, strength=4.0)
    return target, drafter


@pytest.mark.parametrize("family", ["llama", "qwen3"])
@pytest.mark.parametrize("block_size", [2, 4, 16])
@pytest.mark.parametrize("kind", ["random", "oracle", "partial-oracle"])
def test_greedy_output_equals_target_greedy(family, block_size, kind):
    target, drafter = make_pair(family, block_size, kind)
    max_new = 40
    result = spec_generate(target, drafter, PROMPTS, SamplingParams(max_new_tokens=max_new))
    assert result.token_ids == plain_greedy(target, PROMPTS, max_new)
    assert result.finish_reasons == ["length"] * len(PROMPTS)
    # Every committed token is counted once: the prefill token plus the accepted lengths.
    assert [1 + sum(a) for a in result.accept_lens] == [max_new] * len(PROMPTS)
    assert all(1 <= a <= block_size for lengths in result.accept_lens for a in lengths)
    tau = result.mean_tau
    if kind == "random":
        assert tau < 1 + 0.5 * (block_size - 1), f"a random drafter should rarely be accepted, tau={tau}"
    elif kind == "oracle":
        assert tau >= 0.75 * block_size, f"the oracle drafter should be accepted almost always, tau={tau}"
    elif block_size > 2:
        lengths = {a for row in result.accept_lens for a in row}
        assert 1.3 < tau < block_size and len(lengths) >= 3, f"expected ragged acceptance: {tau=}, {lengths}"


def test_stop_tokens_end_rows_at_different_steps():
    target, drafter = make_pair("llama", 4, "partial-oracle")
    free = spec_generate(target, drafter, PROMPTS, SamplingParams(max_new_tokens=30)).token_ids
    stop = free[1][5]  # a token that occurs mid-generation for at least one row
    params = SamplingParams(max_new_tokens=30, stop_token_ids=(stop,))
    result = spec_generate(target, drafter, PROMPTS, params)
    assert result.token_ids == plain_greedy(target, PROMPTS, 30, (stop,))
    for tokens, reason in zip(result.token_ids, result.finish_reasons):
        assert (reason == "stop") == (stop in tokens)
        assert stop not in tokens[:-1]
    assert "stop" in result.finish_reasons


def test_max_new_tokens_one_and_budget_inside_a_block():
    target, drafter = make_pair("qwen3", 16, "oracle")
    one = spec_generate(target, drafter, PROMPTS, SamplingParams(max_new_tokens=1))
    assert one.token_ids == plain_greedy(target, PROMPTS, 1) and one.num_verify_steps == [0] * len(PROMPTS)
    five = spec_generate(target, drafter, PROMPTS, SamplingParams(max_new_tokens=5))
    assert five.token_ids == plain_greedy(target, PROMPTS, 5) and five.accept_lens == [[4]] * len(PROMPTS)


def test_per_row_budgets_and_mixed_greedy_and_sampled_rows():
    target, drafter = make_pair("llama", 4, "partial-oracle")
    params = [
        SamplingParams(max_new_tokens=12),
        SamplingParams(temperature=1.0, max_new_tokens=20),
        SamplingParams(max_new_tokens=25),
        SamplingParams(temperature=0.7, top_k=5, max_new_tokens=3),
    ]
    result = spec_generate(target, drafter, PROMPTS, params, generator=torch.Generator().manual_seed(0))
    assert [len(t) for t in result.token_ids] == [12, 20, 25, 3]
    assert result.token_ids[0] == plain_greedy(target, PROMPTS[:1], 12)[0]
    assert result.token_ids[2] == plain_greedy(target, PROMPTS[2:3], 25)[0]


def test_batch_rows_are_independent():
    target, drafter = make_pair("qwen3", 4, "partial-oracle")
    together = spec_generate(target, drafter, PROMPTS, SamplingParams(max_new_tokens=20))
    for row, prompt in enumerate(PROMPTS):
        alone = spec_generate(target, drafter, [prompt], SamplingParams(max_new_tokens=20))
        assert alone.token_ids[0] == together.token_ids[row]
        assert alone.accept_lens[0] == together.accept_lens[row]


def test_bad_inputs_fail_early():
    target, drafter = make_pair("llama", 4, "random")
    with pytest.raises(ValueError, match="block_size is 1"):
        spec_generate(target, drafter, PROMPTS, block_size=1)
    with pytest.raises(ValueError, match="non-empty"):
        spec_generate(target, drafter, [[1], []])
    with pytest.raises(ValueError, match="2 SamplingParams for 4 prompts"):
        spec_generate(target, drafter, PROMPTS, [SamplingParams()] * 2)
