"""Prompt lookup: drafts copied from a request's own context, for a verify tree's lookup branch.

Code and arithmetic answers repeat their context (a function's signature and names, a problem's
numbers): the tokens that followed an earlier occurrence of the context's last ``n`` tokens are
often what comes next.  A verify tree with lookup nodes (:attr:`DraftTree.lookup
<sglang_dflash.tree.DraftTree.lookup>`) verifies such a continuation beside the drafter's own
drafts; the target decides, so any proposal is lossless.

:func:`propose` says what a proposal is; :class:`NgramIndex` finds the same proposal incrementally
(a server extends it with the tokens each step committed instead of searching the whole context).
A step verifies the branch where some request of its batch has a proposal, and the tree alone where
none has (:meth:`Proposals.step_nodes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

# The n-gram lengths a proposal matches, longest first (in a prototype replay of the shipped
# drafter's kept responses, matching down to one token raised tau more than stopping at two).
MAX_NGRAM, MIN_NGRAM = 3, 1
NO_TOKEN = -1  # a proposal shorter than the lookup branch leaves its deeper nodes to the drafter


def propose(context: Sequence[int], num_tokens: int) -> list[int]:
    """Up to ``num_tokens`` tokens that followed an earlier occurrence of the context's last ``n``
    tokens (``n`` from :data:`MAX_NGRAM` down to :data:`MIN_NGRAM`, the longest that occurs): the
    latest occurrence followed by ``num_tokens`` tokens, else the latest (in a repeated run the
    latest is followed by one token only); [] where none occurs.  A plain search: what
    :class:`NgramIndex` finds incrementally."""
    context = list(context)
    for n in range(MAX_NGRAM, MIN_NGRAM - 1, -1):
        if len(context) <= n:
            continue
        suffix = context[-n:]
        ends = [start + n for start in range(len(context) - n) if context[start : start + n] == suffix]
        if ends:
            full = [end for end in ends if end + num_tokens <= len(context)]
            end = (full or ends)[-1]
            return context[end : end + num_tokens]
    return []


@dataclass(frozen=True)
class Proposals:
    """Proposals for several requests (or a replay's anchors): ``tokens`` [n, num_tokens] long,
    padded with :data:`NO_TOKEN` (an empty proposal is a row of it)."""

    tokens: torch.Tensor

    @classmethod
    def of(cls, proposals: Sequence[list[int]], num_tokens: int) -> Proposals:
        """``proposals`` (each at most ``num_tokens`` tokens), padded."""
        return cls(
            torch.tensor(
                [proposal + [NO_TOKEN] * (num_tokens - len(proposal)) for proposal in proposals],
                dtype=torch.long,
            ).view(len(proposals), num_tokens)
        )

    @property
    def nodes(self) -> list[int]:
        """The lookup nodes each proposal is worth: the whole branch, or none where there is no
        proposal (the drafter's drafts a branch holds there were rarely right)."""
        rows, width = self.tokens.shape
        if width == 0:
            return [0] * rows
        return [width if found else 0 for found in (self.tokens[:, 0] != NO_TOKEN).tolist()]

    def step_nodes(self) -> int:
        """The branch a step verifying all of them gives its tree: what the best proposal is worth."""
        return max(self.nodes, default=0)


class NgramIndex:
    """:func:`propose` over a growing context, in time proportional to the tokens added.

    ``ends[n][gram]`` lists where the occurrences of ``gram`` (``n`` tokens) end, in order, among the
    occurrences that end before the context's last token (the suffix itself is no match)."""

    def __init__(self) -> None:
        self.tokens: list[int] = []
        self.ends: dict[int, dict[tuple[int, ...], list[int]]] = {
            n: {} for n in range(MIN_NGRAM, MAX_NGRAM + 1)
        }

    def extend(self, tokens: Sequence[int]) -> None:
        """Append ``tokens`` to the context."""
        for token in tokens:
            end = len(self.tokens)  # the n-grams ending here stop being the suffix now
            for n, ends in self.ends.items():
                if end >= n:
                    ends.setdefault(tuple(self.tokens[end - n : end]), []).append(end)
            self.tokens.append(int(token))

    def propose(self, num_tokens: int) -> list[int]:
        """:func:`propose` of the context so far."""
        length = len(self.tokens)
        for n in range(MAX_NGRAM, MIN_NGRAM - 1, -1):
            if length <= n:
                continue
            ends = self.ends[n].get(tuple(self.tokens[-n:]))
            if ends:
                # Only occurrences within the last num_tokens tokens lack a full continuation.
                end = next((e for e in reversed(ends) if e + num_tokens <= length), ends[-1])
                return self.tokens[end : end + num_tokens]
        return []


class RequestLookups:
    """One :class:`NgramIndex` per request of a server's decode steps, kept between steps.

    :meth:`proposals` brings each request's index up to its committed tokens and forgets the
    requests a step no longer carries (a request back in a later batch is indexed again)."""

    def __init__(self) -> None:
        self.indexes: dict[str, NgramIndex] = {}

    def proposals(self, contexts: Sequence[tuple[str, Sequence[int]]], num_tokens: int) -> Proposals:
        """Each (request id, committed tokens)'s proposal of up to ``num_tokens`` tokens."""
        kept: dict[str, NgramIndex] = {}
        proposals = []
        for rid, tokens in contexts:
            index = self.indexes.get(rid)
            seen = 0 if index is None else len(index.tokens)
            if index is None or seen > len(tokens) or (seen and index.tokens[-1] != tokens[seen - 1]):
                index = NgramIndex()
            index.extend(tokens[len(index.tokens) :])
            kept[rid] = index
            proposals.append(index.propose(num_tokens))
        self.indexes = kept
        return Proposals.of(proposals, num_tokens)


def proposals_along(context: Sequence[int], first: int, num_tokens: int) -> Proposals:
    """The proposal after every prefix ``context[: a + 1]`` for ``a`` from ``first`` on (a replay's
    anchors): ``len(context) - first`` rows."""
    index = NgramIndex()
    index.extend(context[:first])
    proposals = []
    for anchor in range(first, len(context)):
        index.extend(context[anchor : anchor + 1])
        proposals.append(index.propose(num_tokens))
    return Proposals.of(proposals, num_tokens)
