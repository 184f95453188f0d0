"""Pure step functions: block building, filtering, greedy and speculative-sampling acceptance, stops."""

import pytest
import torch

from sglang_dflash.speculative import (
    BatchSampling,
    SamplingParams,
    block_positions,
    build_block,
    greedy_accept,
    residual_distribution,
    sampling_probs,
    speculative_sampling_accept,
    truncate_at_stop,
)
from stats import chi_square_pvalue


def batch(n=1, **kw):
    return BatchSampling.from_params([SamplingParams(**kw)] * n)


def test_block_is_last_token_then_masks_at_absolute_positions():
    block = build_block(torch.tensor([7, 9]), 4, mask_token_id=63)
    assert block.tolist() == [[7, 63, 63, 63], [9, 63, 63, 63]]
    assert block_positions(torch.tensor([5, 0]), 4).tolist() == [[5, 6, 7, 8], [0, 1, 2, 3]]


def one_hot_logits(tokens, vocab=10):
    return torch.nn.functional.one_hot(torch.tensor(tokens), vocab).float()[None] * 5


def test_greedy_accept_longest_matching_prefix_plus_bonus():
    # target argmax after each block position: 3, 4, 8, 1 ; drafts 3, 4, 5
    accept, emitted = greedy_accept(torch.tensor([[3, 4, 5]]), one_hot_logits([3, 4, 8, 1]))
    assert accept.tolist() == [2] and emitted[0, :3].tolist() == [3, 4, 8]
    accept, emitted = greedy_accept(torch.tensor([[3, 4, 8]]), one_hot_logits([3, 4, 8, 1]))
    assert accept.tolist() == [3] and emitted[0].tolist() == [3, 4, 8, 1]
    accept, emitted = greedy_accept(torch.tensor([[2, 4, 8]]), one_hot_logits([3, 4, 8, 1]))
    assert accept.tolist() == [0] and emitted[0, 0].item() == 3


def test_truncate_at_stop_and_budget():
    emitted = torch.tensor([[5, 2, 6, 7], [5, 6, 7, 8], [5, 6, 7, 2]])
    stops = torch.tensor([[2], [2], [2]])
    count, hit = truncate_at_stop(emitted, torch.tensor([4, 4, 3]), torch.tensor([10, 3, 10]), stops)
    assert count.tolist() == [2, 3, 3]  # stop kept; budget cut; stop beyond the committed tokens ignored
    assert hit.tolist() == [True, False, False]


def test_sampling_probs_filters():
    logits = torch.log(torch.tensor([[[0.4, 0.3, 0.2, 0.1]]]))
    assert torch.allclose(sampling_probs(logits, batch(temperature=1.0)), torch.tensor([0.4, 0.3, 0.2, 0.1]))
    assert torch.allclose(sampling_probs(logits, batch(temperature=1.0, top_k=2)), torch.tensor([4 / 7, 3 / 7, 0, 0]))
    assert torch.allclose(sampling_probs(logits, batch(temperature=1.0, top_p=0.5)), torch.tensor([4 / 7, 3 / 7, 0, 0]))
    assert torch.allclose(sampling_probs(logits, batch(temperature=1.0, top_p=0.75)), torch.tensor([4 / 9, 3 / 9, 2 / 9, 0]))
    assert torch.allclose(sampling_probs(logits, batch(temperature=1.0, min_p=0.6)), torch.tensor([4 / 7, 3 / 7, 0, 0]))
    assert sampling_probs(logits, batch(temperature=0.0)).tolist() == [[[1.0, 0.0, 0.0, 0.0]]]
    hot = sampling_probs(logits, batch(temperature=0.5))
    assert torch.allclose(hot, torch.softmax(logits / 0.5, -1))


def test_sampling_params_reject_bad_values():
    for kw, needle in [({"temperature": -1}, "temperature=-1"), ({"top_p": 0}, "top_p=0"),
                       ({"min_p": 1.0}, "min_p=1.0"), ({"max_new_tokens": 0}, "max_new_tokens=0"),
                       ({"top_k": 1.5}, "top_k=1.5")]:
        with pytest.raises(ValueError, match=needle):
            SamplingParams(**kw)


def test_residual_distribution():
    p, q = torch.tensor([0.5, 0.5, 0.0]), torch.tensor([1.0, 0.0, 0.0])
    assert residual_distribution(p, q).tolist() == [0.0, 1.0, 0.0]
    assert torch.equal(residual_distribution(p, p), p)


def test_speculative_sampling_first_token_follows_target_exactly():
    """P(first emitted token = x) = q(x) min(1, p/q) + rejection mass * residual(x) = p(x)."""
    gen = torch.Generator().manual_seed(0)
    n, vocab = 100_000, 5
    p = torch.tensor([[0.05, 0.5, 0.1, 0.3, 0.05], [0.2, 0.2, 0.2, 0.2, 0.2]])
    q = torch.tensor([[0.6, 0.1, 0.1, 0.1, 0.1]])
    drafts = torch.multinomial(q.expand(n, -1), 1, replacement=True, generator=gen)
    accept, emitted = speculative_sampling_accept(drafts, q.expand(n, 1, vocab), p.expand(n, 2, vocab), gen)
    counts = torch.bincount(emitted[:, 0], minlength=vocab)
    assert chi_square_pvalue(counts, p[0]) > 1e-3
    # Without the residual step the first token is biased towards the draft: the same test rejects it.
    drafts_accepted = accept == 1
    biased = torch.where(drafts_accepted, drafts[:, 0], torch.multinomial(p[:1].expand(n, -1), 1, generator=gen)[:, 0])
    assert chi_square_pvalue(torch.bincount(biased, minlength=vocab), p[0]) < 1e-6
    # After a full accept the bonus comes from the next position's distribution.
    bonus = emitted[drafts_accepted, 1]
    assert chi_square_pvalue(torch.bincount(bonus, minlength=vocab), p[1]) > 1e-3


def test_greedy_is_a_special_case_of_speculative_sampling():
    logits = torch.randn(3, 4, 11, generator=torch.Generator().manual_seed(1))
    draft_logits = logits[:, :3].clone()
    draft_logits[1, 1] = -draft_logits[1, 1]  # row 1 diverges at its second draft
    greedy = batch(3, temperature=0.0)
    drafts = draft_logits.argmax(-1)
    accept_g, emitted_g = greedy_accept(drafts, logits)
    accept_s, emitted_s = speculative_sampling_accept(drafts, sampling_probs(draft_logits, greedy), sampling_probs(logits, greedy))
    assert torch.equal(accept_g, accept_s) and accept_g.tolist() == [3, 1, 3]
    for row, a in enumerate(accept_g.tolist()):
        assert torch.equal(emitted_g[row, : a + 1], emitted_s[row, : a + 1])


def test_unfiltered_fast_path_equals_filters_that_keep_everything():
    logits = torch.randn(2, 3, 9, generator=torch.Generator().manual_seed(3))
    sampling = BatchSampling.from_params([SamplingParams(temperature=0.7), SamplingParams(temperature=0.0)])
    assert torch.allclose(sampling_probs(logits, sampling, apply_filters=False), sampling_probs(logits, sampling))
