"""The block grammar walk (sglang_dflash.grammar) with SGLang's own xgrammar grammar objects.

The verify masks must be exactly those of the host's tree walk (``spec_utils.traverse_tree``) on a
one-branch tree, the grammar must be left where it was, and constrained drafting must draft only
tokens the grammar allows, with the masks of that chain.
"""

import pytest
import torch

pytest.importorskip("sglang.srt.speculative.spec_utils", reason="needs the sglang extra installed")

from sglang.srt.speculative.spec_utils import traverse_tree
from tiny_grammars import allowed_tokens, tiny_grammar_factory

from sglang_dflash import SamplingParams
from sglang_dflash.grammar import BlockGrammar, token_allowed
from sglang_dflash.speculative import BatchSampling, draft_tokens

VOCAB = 64
REGEX = "[0-5a-f]+(,[0-9]+)*"


def chain_bitmask_by_the_host(grammar, tokens: list[int]) -> torch.Tensor:
    """The host's tree walk over the chain tokens[0] -> tokens[1] -> ... (no siblings)."""
    width = len(tokens)
    bitmask = grammar.allocate_vocab_mask(vocab_size=VOCAB, batch_size=width, device="cpu")
    next_token = torch.tensor([*range(1, width), -1])
    traverse_tree(next_token, torch.full((width,), -1), torch.tensor(tokens), grammar, bitmask, VOCAB)
    return bitmask


@pytest.mark.parametrize(
    "drafts",
    [
        [2, 3, 12, 48],  # all allowed
        [2, 7, 3, 4],  # "6" is forbidden: the chain stops at position 1
        [11, 30, 2, 2],  # "t" is forbidden: the chain stops at position 2
        [2, 41, 8, 9],  # a separator then digits: the second regex part
    ],
)
def test_walk_equals_the_hosts_tree_walk_on_one_branch_and_leaves_the_grammar_unchanged(drafts):
    make = tiny_grammar_factory(VOCAB)
    ours, hosts = make(REGEX), make(REGEX)
    for g in (ours, hosts):
        g.accept_token(2)  # the bonus token, accepted when the last step's result was processed
    before = sorted(allowed_tokens(ours, VOCAB))
    block = torch.tensor([[2, *drafts]])

    bitmask = BlockGrammar([ours], VOCAB).walk(block)

    assert torch.equal(bitmask, chain_bitmask_by_the_host(hosts, [2, *drafts]))
    assert sorted(allowed_tokens(ours, VOCAB)) == before
    assert ours.accepted_tokens == [2]


def test_rows_without_a_grammar_or_past_termination_allow_every_token():
    make = tiny_grammar_factory(VOCAB)
    done = make("ab")
    done.accept_token(48)  # "ab": the regex is complete, only the stop token may follow
    done.accept_token(0)
    assert done.is_terminated()
    live = make(REGEX)
    block = torch.tensor([[5, 2, 2], [48, 2, 2], [2, 3, 4]])

    bitmask = BlockGrammar([None, done, live], VOCAB).walk(block)

    everything = bitmask[0].clone().fill_(-1)
    for row in range(6):
        assert torch.equal(bitmask[row], everything)
    assert not torch.equal(bitmask[6], everything)


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_constrained_drafts_are_allowed_and_their_masks_equal_the_walk(temperature):
    make = tiny_grammar_factory(VOCAB)
    grammars = [make(REGEX), None, make("[a-z]+")]
    bs, n = 3, 5
    logits = torch.randn(bs, n, VOCAB, generator=torch.Generator().manual_seed(0))
    logits[..., 7] += 10  # the drafter's favourite, "6", forbidden by both grammars
    sampling = BatchSampling.from_params([SamplingParams(temperature=temperature)] * bs)
    block_grammar = BlockGrammar(grammars, VOCAB, mask_drafts=True)

    drafts, draft_probs = block_grammar.draft(logits, sampling, torch.Generator().manual_seed(1))

    assert drafts.shape == (bs, n)
    assert (draft_probs is None) == (temperature == 0)
    if temperature == 0:
        assert drafts[1].tolist() == [7] * n  # the unconstrained row keeps its favourite
    for r in (0, 2):
        check = make(REGEX if r == 0 else "[a-z]+")
        for token in drafts[r].tolist():
            assert token in allowed_tokens(check, VOCAB)
            check.accept_token(token)
        assert grammars[r].accepted_tokens == []  # rolled back
    bonus = torch.tensor([[1], [1], [11]])
    walked = BlockGrammar(grammars, VOCAB).walk(torch.cat([bonus, drafts], dim=1))
    assert torch.equal(block_grammar.bitmask, walked)
    if temperature:
        for r in (0, 2):  # the draft distributions are those of the masked logits
            forbidden = [t for t in range(VOCAB) if not token_allowed(walked[r * (n + 1)], t, VOCAB)]
            assert float(draft_probs[r, 0, forbidden].sum()) == 0.0


def test_masking_the_target_forbids_exactly_what_the_grammar_forbids():
    make = tiny_grammar_factory(VOCAB)
    grammar = make(REGEX)
    block = torch.tensor([[2, 3, 30, 4]])  # "t" at position 2 ends the chain
    target_logits = torch.zeros(1, 4, VOCAB)

    BlockGrammar([grammar], VOCAB).mask_target(block, target_logits)

    first = {t for t in range(VOCAB) if target_logits[0, 0, t] == 0}
    assert first == allowed_tokens(make(REGEX), VOCAB)
    assert torch.isinf(target_logits[0, 1, 30])  # position 1's mask rejects the draft "t" ...
    assert (target_logits[0, 2:] == 0).all()  # ... so nothing after it is committed: unconstrained


def test_a_batch_without_grammars_gets_no_walk():
    assert BlockGrammar.of_batch(None, VOCAB) is None
    assert BlockGrammar.of_batch([None, None], VOCAB) is None
    with pytest.raises(ValueError, match="grammars is all None"):
        BlockGrammar([None], VOCAB)


def test_seeded_constrained_drafts_read_each_positions_own_draw():
    """Drafts chosen one position at a time under the grammar use the draw of their own position, so
    a row without a grammar drafts exactly what unconstrained seeded drafting gives."""
    make = tiny_grammar_factory(VOCAB)
    bs, n = 2, 5
    logits = torch.randn(bs, n, VOCAB, generator=torch.Generator().manual_seed(3))
    sampling = BatchSampling.from_params([SamplingParams(temperature=1.0, seed=s) for s in (11, 12)])
    draws = sampling.draws(torch.tensor([4, 9]))
    constrained, _ = BlockGrammar([make(REGEX), None], VOCAB, mask_drafts=True).draft(logits, sampling, draws)
    free, _ = draft_tokens(logits, sampling, draws)
    assert constrained[1].tolist() == free[1].tolist()
    assert len(set(free[1].tolist())) > 1  # five positions, five draws


class DeadEndGrammar:
    """A grammar that allows no token once it has accepted ``steps`` tokens: the state a matcher
    reaches when it allowed a token it cannot continue from."""

    def __init__(self, inner, steps: int):
        self.inner, self.steps, self.count = inner, steps, 0

    def accept_token(self, token: int) -> None:
        self.inner.accept_token(token)
        self.count += 1

    def rollback(self, k: int) -> None:
        self.inner.rollback(k)
        self.count -= k

    def is_terminated(self) -> bool:
        return self.inner.is_terminated()

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device) -> torch.Tensor:
        return self.inner.allocate_vocab_mask(vocab_size, batch_size, device)

    def fill_vocab_mask(self, vocab_mask: torch.Tensor, idx: int) -> None:
        self.inner.fill_vocab_mask(vocab_mask, idx)
        if self.count >= self.steps:
            vocab_mask[idx] = 0

    def apply_vocab_mask(self, logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
        self.inner.apply_vocab_mask(logits, vocab_mask)


@pytest.mark.parametrize("temperature", [0.0, 0.5])
def test_a_grammar_dead_end_never_reaches_sampling_and_stops_the_chain(temperature):
    """A row whose grammar allows no token is drafted freely (no NaN distribution to sample) and
    not fed to the grammar; the chain stops there and the grammar is rolled back."""
    make = tiny_grammar_factory(VOCAB)
    dead_end = DeadEndGrammar(make(REGEX), steps=2)
    bs, n = 3, 5
    logits = torch.randn(bs, n, VOCAB, generator=torch.Generator().manual_seed(4))
    sampling = BatchSampling.from_params([SamplingParams(temperature=temperature)] * bs)
    block_grammar = BlockGrammar([dead_end, None, make("[a-z]+")], VOCAB, mask_drafts=True)

    drafts, draft_probs = block_grammar.draft(logits, sampling, torch.Generator().manual_seed(2))

    assert drafts.shape == (bs, n)
    if temperature:
        assert torch.isfinite(draft_probs).all()
    assert dead_end.count == 0 and dead_end.inner.accepted_tokens == []
    width = n + 1
    everything = block_grammar.bitmask[0].clone().fill_(-1)
    assert torch.equal(block_grammar.bitmask[2], everything)  # the dead end, reopened
    assert not torch.equal(block_grammar.bitmask[1], everything)  # before it: the grammar's mask
    assert not torch.equal(block_grammar.bitmask[2 * width + 2], everything)  # other rows untouched


def test_the_target_is_not_masked_to_nothing_at_a_grammar_dead_end():
    make = tiny_grammar_factory(VOCAB)
    block = torch.tensor([[2, 3, 4, 5]])
    target_logits = torch.zeros(1, 4, VOCAB)

    BlockGrammar([DeadEndGrammar(make(REGEX), steps=1)], VOCAB).mask_target(block, target_logits)

    assert torch.isfinite(target_logits[0, 1]).all()  # reopened: the target chooses its own token
    assert torch.isinf(target_logits[0, 0]).any()  # the live row keeps the grammar's mask
