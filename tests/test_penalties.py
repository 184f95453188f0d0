"""Penalties under DFLASH are exact: every block position sees the committed tokens plus the drafts
before it, so greedy output equals plain decoding penalised by SGLang's own penalizers."""

import pytest
import torch
from host_sampling import host_penalized_greedy
from test_reference import PROMPTS, make_pair

from sglang_dflash import SamplingParams, spec_generate
from sglang_dflash.speculative import Penalties, apply_penalties_

pytest.importorskip("sglang", reason="the oracle is SGLang's own penalizers")

STOP = 2  # stands in for the eos token (the tiny targets have none)
MAX_NEW = 30
PENALTIES = {
    "frequency 1.3, presence -0.3": dict(frequency_penalty=1.3, presence_penalty=-0.3),
    "presence 0.8": dict(presence_penalty=0.8),
    "repetition 1.6": dict(repetition_penalty=1.6),
    "repetition 0.7, frequency -0.4": dict(repetition_penalty=0.7, frequency_penalty=-0.4),
}


def params(**penalties) -> SamplingParams:
    return SamplingParams(max_new_tokens=MAX_NEW, stop_token_ids=(STOP,), **penalties)


@pytest.mark.parametrize("name", sorted(PENALTIES))
def test_greedy_output_with_penalties_equals_plain_decoding(name):
    """The partial oracle drafts token 7 everywhere: chains of repeated drafts that the penalties
    must count one position at a time."""
    target, drafter = make_pair("llama", 8, "partial-oracle")
    per_row = [params(**PENALTIES[name]), params(), params(**PENALTIES[name]), params(**PENALTIES[name])]
    result = spec_generate(target, drafter, PROMPTS, per_row)
    expected = [host_penalized_greedy(target, p, sp, STOP) for p, sp in zip(PROMPTS, per_row)]
    assert result.token_ids == expected
    assert result.token_ids[0] != host_penalized_greedy(target, PROMPTS[0], params(), STOP), (
        "the penalty must change the output, or this test shows nothing"
    )
    assert max(a for row in result.accept_lens for a in row) > 1, "drafts must be accepted"


def test_min_new_tokens_blocks_the_stop_token_until_reached():
    target, drafter = make_pair("llama", 4, "partial-oracle")
    prompt = PROMPTS[2:3]
    free = spec_generate(target, drafter, prompt, params()).token_ids[0]
    first_new = next(i for i in range(1, len(free)) if free[i] not in free[:i])  # a token said early
    stop = free[first_new]
    early_stop = SamplingParams(max_new_tokens=MAX_NEW, stop_token_ids=(stop,))
    assert len(spec_generate(target, drafter, prompt, early_stop).token_ids[0]) == first_new + 1
    held = SamplingParams(max_new_tokens=MAX_NEW, stop_token_ids=(stop,), min_new_tokens=first_new + 8)
    tokens = spec_generate(target, drafter, prompt, held).token_ids[0]
    assert stop not in tokens[: first_new + 8]
    assert tokens == host_penalized_greedy(target, prompt[0], held, eos_token_id=stop)


def test_each_block_position_counts_the_drafts_before_it():
    logits = torch.zeros(1, 4, 6)
    penalties = Penalties.of_rows([[1, 1]], [params(frequency_penalty=1.0)], vocab_size=6)
    apply_penalties_(logits, penalties, chain=torch.tensor([[3, 3, 1]]))
    assert logits[0, :, 1].tolist() == [-2.0, -2.0, -2.0, -3.0]
    assert logits[0, :, 3].tolist() == [0.0, -1.0, -2.0, -2.0]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("frequency_penalty", 2.5),
        ("presence_penalty", -3.0),
        ("repetition_penalty", 0.0),
        ("min_new_tokens", -1),
    ],
)
def test_bad_penalties_are_refused_naming_the_field(field, value):
    with pytest.raises(ValueError, match=f"SamplingParams: {field} is {value!r}; expected"):
        SamplingParams(**{field: value})
