"""Pure step functions: block building, filtering, draft choice, greedy and speculative-sampling
acceptance, stops."""

import pytest
import torch
from stats import chi_square_pvalue

from sglang_dflash.speculative import (
    BatchSampling,
    SamplingParams,
    accept,
    block_positions,
    build_block,
    draft_tokens,
    greedy_accept,
    residual_distribution,
    sampling_probs,
    speculative_sampling_accept,
    truncate_at_stop,
)


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
    num_correct_drafts, emitted = greedy_accept(torch.tensor([[3, 4, 5]]), one_hot_logits([3, 4, 8, 1]))
    assert num_correct_drafts.tolist() == [2] and emitted[0, :3].tolist() == [3, 4, 8]
    num_correct_drafts, emitted = greedy_accept(torch.tensor([[3, 4, 8]]), one_hot_logits([3, 4, 8, 1]))
    assert num_correct_drafts.tolist() == [3] and emitted[0].tolist() == [3, 4, 8, 1]
    num_correct_drafts, emitted = greedy_accept(torch.tensor([[2, 4, 8]]), one_hot_logits([3, 4, 8, 1]))
    assert num_correct_drafts.tolist() == [0] and emitted[0, 0].item() == 3


def test_truncate_at_stop_and_budget():
    emitted = torch.tensor([[5, 2, 6, 7], [5, 6, 7, 8], [5, 6, 7, 2]])
    stops = torch.tensor([[2], [2], [2]])
    count, hit = truncate_at_stop(emitted, torch.tensor([4, 4, 3]), torch.tensor([10, 3, 10]), stops)
    assert count.tolist() == [2, 3, 3]  # stop kept; budget cut; stop beyond the committed tokens ignored
    assert hit.tolist() == [True, False, False]


def test_sampling_probs_filters():
    logits = torch.log(torch.tensor([[[0.4, 0.3, 0.2, 0.1]]]))
    assert torch.allclose(sampling_probs(logits, batch(temperature=1.0)), torch.tensor([0.4, 0.3, 0.2, 0.1]))
    top_two, top_three = torch.tensor([4 / 7, 3 / 7, 0, 0]), torch.tensor([4 / 9, 3 / 9, 2 / 9, 0])
    assert torch.allclose(sampling_probs(logits, batch(temperature=1.0, top_k=2)), top_two)
    assert torch.allclose(sampling_probs(logits, batch(temperature=1.0, top_p=0.5)), top_two)
    assert torch.allclose(sampling_probs(logits, batch(temperature=1.0, top_p=0.75)), top_three)
    assert torch.allclose(sampling_probs(logits, batch(temperature=1.0, min_p=0.6)), top_two)
    assert sampling_probs(logits, batch(temperature=0.0)).tolist() == [[[1.0, 0.0, 0.0, 0.0]]]
    hot = sampling_probs(logits, batch(temperature=0.5))
    assert torch.allclose(hot, torch.softmax(logits / 0.5, -1))


def test_sampling_params_reject_bad_values():
    for kw, needle in [
        ({"temperature": -1}, "temperature is -1"),
        ({"top_p": 0}, "top_p is 0"),
        ({"min_p": 1.0}, "min_p is 1.0"),
        ({"max_new_tokens": 0}, "max_new_tokens is 0"),
        ({"top_k": 1.5}, "top_k is 1.5"),
    ]:
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
    num_correct_drafts, emitted = speculative_sampling_accept(
        drafts, q.expand(n, 1, vocab), p.expand(n, 2, vocab), gen
    )
    counts = torch.bincount(emitted[:, 0], minlength=vocab)
    assert chi_square_pvalue(counts, p[0]) > 1e-3
    # Without the residual step the first token is biased towards the draft: the same test rejects it.
    drafts_accepted = num_correct_drafts == 1
    resampled = torch.multinomial(p[:1].expand(n, -1), 1, generator=gen)[:, 0]
    biased = torch.where(drafts_accepted, drafts[:, 0], resampled)
    assert chi_square_pvalue(torch.bincount(biased, minlength=vocab), p[0]) < 1e-6
    # After a full accept the bonus token comes from the next position's distribution.
    bonus_tokens = emitted[drafts_accepted, 1]
    assert chi_square_pvalue(torch.bincount(bonus_tokens, minlength=vocab), p[1]) > 1e-3


def test_greedy_is_a_special_case_of_speculative_sampling():
    logits = torch.randn(3, 4, 11, generator=torch.Generator().manual_seed(1))
    draft_logits = logits[:, :3].clone()
    draft_logits[1, 1] = -draft_logits[1, 1]  # row 1 diverges at its second draft
    greedy = batch(3, temperature=0.0)
    drafts = draft_logits.argmax(-1)
    correct_g, emitted_g = greedy_accept(drafts, logits)
    correct_s, emitted_s = speculative_sampling_accept(
        drafts, sampling_probs(draft_logits, greedy), sampling_probs(logits, greedy)
    )
    assert torch.equal(correct_g, correct_s) and correct_g.tolist() == [3, 1, 3]
    for row, n in enumerate(correct_g.tolist()):
        assert torch.equal(emitted_g[row, : n + 1], emitted_s[row, : n + 1])


def test_unfiltered_fast_path_equals_filters_that_keep_everything():
    logits = torch.randn(2, 3, 9, generator=torch.Generator().manual_seed(3))
    sampling = BatchSampling.from_params([SamplingParams(temperature=0.7), SamplingParams(temperature=0.0)])
    unfiltered = sampling_probs(logits, sampling, apply_filters=False)
    assert torch.allclose(unfiltered, sampling_probs(logits, sampling))


# ---------------------------------------------------------------------------- draft_tokens / accept
MIXED = [SamplingParams(), SamplingParams(temperature=1.0), SamplingParams(temperature=0.7, top_k=4)]


def step_logits(bs, block_size=4, vocab=11, seed=5):
    """Target logits [bs, block_size, V] and draft logits close to them [bs, block_size - 1, V]."""
    g = torch.Generator().manual_seed(seed)
    target_logits = torch.randn(bs, block_size, vocab, generator=g) * 3
    return target_logits, target_logits[:, :-1] + torch.randn(bs, block_size - 1, vocab, generator=g)


def test_from_params_sets_the_fast_path_flags_from_the_params():
    assert BatchSampling.from_params([SamplingParams()] * 2).all_greedy
    assert not BatchSampling.from_params(MIXED).all_greedy
    assert not BatchSampling.from_params([SamplingParams(temperature=1.0)]).needs_filters
    assert BatchSampling.from_params([SamplingParams(temperature=1.0, top_p=0.9)]).needs_filters
    assert BatchSampling.from_params([SamplingParams(temperature=1.0, min_p=0.1)]).needs_filters
    assert BatchSampling.from_params(MIXED).needs_filters  # the top-k row


def test_filters_of_greedy_rows_do_not_make_a_batch_need_filters():
    params = [SamplingParams(top_k=3), SamplingParams(temperature=1.0)]
    assert not BatchSampling.from_params(params).needs_filters


def test_select_keeps_the_fast_path_flags():
    greedy = BatchSampling.from_params([SamplingParams()] * 3).select(torch.tensor([0, 2]))
    assert greedy.all_greedy and greedy.temperature.tolist() == [0.0, 0.0]
    mixed = BatchSampling.from_params(MIXED).select(torch.tensor([1]))
    assert not mixed.all_greedy and mixed.needs_filters and mixed.top_k.tolist() == [-1]


def test_all_greedy_batch_drafts_the_argmax_and_no_distributions():
    _, draft_logits = step_logits(2)
    drafts, draft_probs = draft_tokens(draft_logits, batch(2, temperature=0.0))
    assert torch.equal(drafts, draft_logits.argmax(-1)) and draft_probs is None


def test_mixed_batch_greedy_rows_draft_the_argmax():
    _, draft_logits = step_logits(3)
    drafts, draft_probs = draft_tokens(
        draft_logits, BatchSampling.from_params(MIXED), torch.Generator().manual_seed(0)
    )
    assert torch.equal(drafts[0], draft_logits[0].argmax(-1))
    assert draft_probs.shape == draft_logits.shape


def test_mixed_batch_draft_distributions_are_the_filtered_sampling_probs():
    _, draft_logits = step_logits(3)
    sampling = BatchSampling.from_params(MIXED)
    _, draft_probs = draft_tokens(draft_logits, sampling, torch.Generator().manual_seed(0))
    assert torch.equal(draft_probs, sampling_probs(draft_logits, sampling))


def test_sampled_drafts_follow_the_generator():
    _, draft_logits = step_logits(3)
    sampling = BatchSampling.from_params(MIXED)
    first, _ = draft_tokens(draft_logits, sampling, torch.Generator().manual_seed(7))
    again, _ = draft_tokens(draft_logits, sampling, torch.Generator().manual_seed(7))
    assert torch.equal(first, again)


def test_all_greedy_batch_accepts_by_the_greedy_rule():
    target_logits, draft_logits = step_logits(2)
    drafts = draft_logits.argmax(-1)
    got = accept(drafts, None, target_logits, batch(2, temperature=0.0))
    expected = greedy_accept(drafts, target_logits)
    assert all(torch.equal(a, b) for a, b in zip(got, expected))


def test_mixed_batch_greedy_rows_accept_as_greedy_accept():
    target_logits, draft_logits = step_logits(3)
    sampling = BatchSampling.from_params(MIXED)
    drafts, draft_probs = draft_tokens(draft_logits, sampling, torch.Generator().manual_seed(0))
    generator = torch.Generator().manual_seed(1)
    num_correct_drafts, emitted = accept(drafts, draft_probs, target_logits, sampling, generator)
    greedy_correct, greedy_emitted = greedy_accept(drafts, target_logits)
    assert num_correct_drafts[0] == greedy_correct[0] and torch.equal(emitted[0], greedy_emitted[0])


def test_mixed_batch_sampled_rows_accept_as_speculative_sampling():
    target_logits, draft_logits = step_logits(3)
    sampling = BatchSampling.from_params(MIXED)
    drafts, draft_probs = draft_tokens(draft_logits, sampling, torch.Generator().manual_seed(0))
    generator = torch.Generator().manual_seed(1)
    num_correct_drafts, emitted = accept(drafts, draft_probs, target_logits, sampling, generator)
    expected_correct, expected_emitted = speculative_sampling_accept(
        drafts, draft_probs, sampling_probs(target_logits, sampling), torch.Generator().manual_seed(1)
    )
    assert torch.equal(num_correct_drafts[1:], expected_correct[1:])
    assert torch.equal(emitted[1:], expected_emitted[1:])


def test_greedy_acceptance_column_by_column_commits_what_the_whole_block_commits():
    """Deferred verify logits (CPU, greedy batches): the target's argmax is asked for block columns
    0 and 1 one at a time, then for all the rest at once, only for the requests still accepting;
    the committed tokens are greedy_accept's."""
    from sglang_dflash.speculative import greedy_accept_by_columns

    g = torch.Generator().manual_seed(0)
    bs, width, vocab = 6, 5, 4  # a small vocabulary: drafts match often, rejections come at every column
    target_logits = torch.randn(bs, width, vocab, generator=g)
    drafts = torch.randint(0, vocab, (bs, width - 1), generator=g)
    drafts[0] = target_logits[0, :-1].argmax(-1)  # one request accepts the whole block
    asked = []

    def column_argmax(requests: torch.Tensor, start: int, stop: int) -> torch.Tensor:
        asked.append((requests.tolist(), start, stop))
        return target_logits[requests, start:stop].argmax(-1)

    num_correct, emitted = greedy_accept_by_columns(drafts, column_argmax)
    expected_correct, expected_emitted = greedy_accept(drafts, target_logits)
    assert num_correct.tolist() == expected_correct.tolist() == [4, 0, 1, 0, 0, 1]
    for r in range(bs):
        n = int(num_correct[r]) + 1
        assert torch.equal(emitted[r, :n], expected_emitted[r, :n])
    # Column 0 for all, column 1 for the three that accepted their first draft, the rest for the one
    # that accepted its second.
    assert asked == [([0, 1, 2, 3, 4, 5], 0, 1), ([0, 2, 5], 1, 2), ([0], 2, 5)]


@pytest.mark.parametrize("cheap_rows", [2, 4, 12, 64])
def test_wider_column_passes_commit_what_the_whole_block_commits(cheap_rows):
    from sglang_dflash.speculative import greedy_accept_by_columns

    g = torch.Generator().manual_seed(2)
    bs, width, vocab = 7, 9, 3  # rejections at every column, some requests accept everything
    target_logits = torch.randn(bs, width, vocab, generator=g)
    drafts = torch.randint(0, vocab, (bs, width - 1), generator=g)
    drafts[:2] = target_logits[:2, :-1].argmax(-1)
    drafts[2, :5] = target_logits[2, :5].argmax(-1)
    num_correct, emitted = greedy_accept_by_columns(
        drafts, lambda rows, start, stop: target_logits[rows, start:stop].argmax(-1), cheap_rows
    )
    expected_correct, expected_emitted = greedy_accept(drafts, target_logits)
    assert num_correct.tolist() == expected_correct.tolist()
    assert len(set(num_correct.tolist())) >= 3
    for r in range(bs):
        n = int(num_correct[r]) + 1
        assert torch.equal(emitted[r, :n], expected_emitted[r, :n])


@pytest.mark.parametrize(
    "requests, cheap_rows, passes",
    [
        ([0], 4, [(0, 4), (4, 8)]),  # one request: four columns in one pass, then the rest
        ([0, 1], 4, [(0, 2), (2, 8)]),  # two requests: two columns each
        ([0, 1, 2, 3, 4], 4, [(0, 1), (1, 2), (2, 8)]),  # more requests than cheap rows: one column
        ([0], 1, [(0, 1), (1, 2), (2, 8)]),  # F.linear's lm_head: one column at a time
    ],
)
def test_a_pass_asks_as_many_columns_as_fit_in_the_cheap_rows(requests, cheap_rows, passes):
    from sglang_dflash.speculative import greedy_accept_by_columns

    bs, width, vocab = len(requests), 8, 5
    target_logits = torch.randn(bs, width, vocab, generator=torch.Generator().manual_seed(1))
    drafts = target_logits[:, :-1].argmax(-1)  # every draft accepted: every pass is asked for
    asked = []

    def column_argmax(rows: torch.Tensor, start: int, stop: int) -> torch.Tensor:
        asked.append((start, stop))
        return target_logits[rows, start:stop].argmax(-1)

    num_correct, emitted = greedy_accept_by_columns(drafts, column_argmax, cheap_rows)
    assert asked == passes
    assert num_correct.tolist() == [width - 1] * bs
    assert torch.equal(emitted, target_logits.argmax(-1))
