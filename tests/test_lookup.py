"""Prompt lookup (sglang_dflash.lookup): the proposal a tree's lookup branch verifies, found by a plain
search and incrementally (a server's per-request index, a replay's anchors) alike."""

import random

import pytest
import torch

from sglang_dflash.lookup import NO_TOKEN, NgramIndex, Proposals, RequestLookups, proposals_along, propose


def test_a_proposal_follows_the_latest_earlier_occurrence_of_the_longest_suffix():
    # The 3-token suffix (9, 1, 2) never occurred before; the 2-token (1, 2) did, latest at 4.
    context = [1, 2, 3, 7, 1, 2, 5, 9, 1, 2]
    assert propose(context, 3) == [5, 9, 1]
    # Near the context's end the proposal is shorter; the suffix itself is no match.
    assert propose([4, 5, 4], 3) == [5, 4]
    assert propose([4, 5, 6], 3) == []
    assert propose([], 2) == [] and propose([8], 2) == []


def test_a_proposal_prefers_the_latest_occurrence_followed_by_as_many_tokens_as_asked():
    # In a repeated run the latest occurrence of (10, 10, 10) is followed by one token only.
    assert propose([10] * 6, 3) == [10, 10, 10]
    assert propose([1, 2, 7, 8, 9, 1, 2, 5, 1, 2], 3) == [5, 1, 2]
    assert propose([1, 2, 7, 8, 9, 1, 2, 5, 1, 2], 4) == [7, 8, 9, 1]  # the latest has 3 after it
    assert propose([1, 2, 7, 1, 2], 4) == [7, 1, 2]  # none has 4 after it: the latest


@pytest.mark.parametrize("seed", range(4))
def test_the_incremental_index_proposes_what_the_plain_search_does_at_every_prefix(seed):
    rng = random.Random(seed)
    context = [rng.randrange(6 if seed % 2 else 20) for _ in range(160)]
    index = NgramIndex()
    for end in range(1, len(context) + 1):
        index.extend(context[end - 1 : end])
        for k in (1, 4, 8):
            assert index.propose(k) == propose(context[:end], k), (end, k)


def test_a_replays_proposals_are_the_plain_searchs_after_every_anchor():
    rng = random.Random(5)
    context = [rng.randrange(8) for _ in range(60)]
    along = proposals_along(context, 20, 4)
    assert along.tokens.shape == (40, 4) and len(along.nodes) == 40
    for row, anchor in enumerate(range(20, 60)):
        expected = propose(context[: anchor + 1], 4)
        assert along.tokens[row].tolist() == expected + [NO_TOKEN] * (4 - len(expected))
        assert along.nodes[row] == (4 if expected else 0)


def test_request_lookups_follow_each_request_and_forget_the_ones_a_step_no_longer_carries():
    lookups = RequestLookups()
    first = [1, 2, 3, 1, 2]
    out = lookups.proposals([("a", first), ("b", [7, 8])], 3)
    assert out.tokens.tolist() == [[3, 1, 2], [NO_TOKEN] * 3] and out.nodes == [3, 0]
    assert out.tokens.dtype == torch.long and out.step_nodes() == 3
    # "a" grows by two committed tokens: its index extends (no rebuild), "b" is gone.
    index = lookups.indexes["a"]
    out = lookups.proposals([("a", first + [3, 1])], 2)
    assert lookups.indexes["a"] is index and set(lookups.indexes) == {"a"}
    assert out.tokens.tolist() == [propose(first + [3, 1], 2)] == [[2, 3]]
    # A context that is no longer an extension of the indexed one (a reused id) is indexed anew.
    out = lookups.proposals([("a", [5, 6, 5])], 2)
    assert lookups.indexes["a"] is not index and out.tokens.tolist() == [[6, 5]]


def test_a_step_verifies_the_branch_where_some_request_has_a_proposal():
    proposals = Proposals.of([[], [3, 4]], 8)
    assert proposals.nodes == [0, 8] and proposals.step_nodes() == 8
    assert proposals.tokens.tolist() == [[NO_TOKEN] * 8, [3, 4] + [NO_TOKEN] * 6]
    assert Proposals.of([[], []], 8).step_nodes() == 0
    assert Proposals.of([], 8).step_nodes() == 0 and Proposals.of([], 8).tokens.shape == (0, 8)
