"""Token-tree verification for DFlash drafts: more accepted tokens for the same verify width.

The drafter scores every block position in one pass; the chain verifies only each position's top
draft, so a step ends at the first position whose top draft is wrong, however close its second was.
A :class:`DraftTree` spends the same verify width on the branches that are right most often
instead: node ``i`` (``1 .. N``) drafts the ``ranks[i]``-th most likely token of block position
``depths[i]`` under its parent node, and the target scores all ``N + 1`` nodes (node 0 is the
block's bonus token) in one pass, each node attending to the prefix, its ancestors and itself::

    chain of 4 (ranks 0,0,0,0)        a tree of 4
    0 -> 1 -> 2 -> 3 -> 4             0 -> 1 (rank 0) -> 3 (rank 0) -> 4 (rank 0)
                                        \\-> 2 (rank 1)

Greedy acceptance walks from the root: at each node the child drafting the target's argmax is
taken (siblings draft distinct tokens, so at most one is), and the step commits the walked path
plus the target's argmax after its last node: the target's own greedy tokens, so verification stays
lossless.  The drafts under a branch are the same position's marginal ranks, which a DFlash drafter
predicts for every position at once (it never conditions on its own drafts).  A sampled row walks
the same way with the target's draw after each node in place of its argmax
(:meth:`DraftTree.target_tokens`): speculative sampling with deterministic drafts, each committed
token a draw from the target's distribution.

A tree is fitted from the drafter's ranks of the target's tokens on a selection set
(:func:`fit_tree`): the ``N`` most frequent rank prefixes, which maximise the expected accepted
length over that set.  A chain of ``block_size - 1`` nodes is the plain DFlash step.

A tree may end in a lookup branch (:meth:`DraftTree.with_lookup`): a chain of nodes from the root
whose drafts are copied from the request's own context (:mod:`sglang_dflash.lookup`) instead of
ranked by the drafter, where the context proposes them (elsewhere they draft the rank one past the
tree's others).  Its first node may then draft the same token as a drafter sibling; the walk takes
the lookup node there (the last match in rank order), whose branch goes deeper more often on a
replay of the shipped drafter's responses.  Either choice is a function of the target's token
after the root, so the walk stays lossless.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import torch

from .speculative import TARGET_DRAW, BatchSampling, SeededDraws, draft_tokens, sample_from, sampling_probs

TREE_FILE = "verify-tree.json"
# A smaller tree for steps of more requests (CPU servers: serving.tree_verify.wide_batch_tree_setting).
WIDE_TREE_FILE = "wide-batch-tree.json"


class TreeTables(NamedTuple):
    """A :class:`DraftTree` as tensors on one device."""

    children: torch.Tensor  # [W, max_rank + 1]: DraftTree.children_table
    ancestors: torch.Tensor  # [W, W] bool: DraftTree.ancestor_mask
    depths: torch.Tensor  # [W]: DraftTree.depths
    ranks: torch.Tensor  # [N]: DraftTree.ranks


@dataclass(frozen=True)
class DraftTree:
    """Nodes ``1 .. N`` as (parent, rank) pairs in an order where every parent precedes its children."""

    parents: tuple[int, ...]
    ranks: tuple[int, ...]
    # The last ``lookup`` nodes are a lookup branch (:meth:`with_lookup`); 0 for none.
    lookup: int = 0
    # TreeTables per device, built once: a serving step copies nothing to the device for its tree.
    _tables: dict[str, TreeTables] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )

    def __post_init__(self) -> None:
        if len(self.parents) != len(self.ranks) or not self.parents:
            raise ValueError(
                f"DraftTree: {len(self.parents)} parents and {len(self.ranks)} ranks; "
                "expected the same number, at least one"
            )
        seen: set[tuple[int, int]] = set()
        for node, (parent, rank) in enumerate(zip(self.parents, self.ranks, strict=True), start=1):
            if not 0 <= parent < node or rank < 0 or (parent, rank) in seen:
                raise ValueError(
                    f"DraftTree: node {node} has parent {parent} and rank {rank}; expected a parent "
                    f"0 .. {node - 1}, a rank >= 0 and no sibling of the same rank"
                )
            seen.add((parent, rank))
        if not 0 <= self.lookup <= len(self.parents):
            raise ValueError(
                f"DraftTree: lookup {self.lookup}; expected 0 .. {len(self.parents)} (the tree's nodes)"
            )
        if self.lookup:
            first = len(self.parents) - self.lookup  # the branch's first node is first + 1
            chain = (
                (0,) + tuple(range(first + 1, len(self.parents))),
                (max(self.ranks[:first], default=-1) + 1,) * self.lookup,
            )
            if (self.parents[first:], self.ranks[first:]) != chain:
                raise ValueError(
                    f"DraftTree: lookup {self.lookup} with parents {self.parents} and ranks {self.ranks}; "
                    "expected the last `lookup` nodes to be a chain from the root drafting the rank one "
                    "past the others' (DraftTree.with_lookup makes one)"
                )

    @classmethod
    def chain(cls, num_drafts: int) -> DraftTree:
        """The plain DFlash step: each position's top draft after the one before."""
        return cls(tuple(range(num_drafts)), (0,) * num_drafts)

    @classmethod
    def from_paths(cls, paths: Iterable[Sequence[int]]) -> DraftTree:
        """The tree whose nodes are the given rank paths (prefix-closed; ordered by depth, then as given)."""
        unique = {tuple(p): None for p in paths}
        missing = [p for p in unique if len(p) > 1 and p[:-1] not in unique]
        if missing or () in unique:
            raise ValueError(
                f"DraftTree.from_paths: paths {missing[:3] or [()]} have no parent path; "
                "expected non-empty, prefix-closed rank paths"
            )
        ordered = sorted(unique, key=len)
        index = {p: i for i, p in enumerate(ordered, start=1)}
        return cls(tuple(index.get(p[:-1], 0) for p in ordered), tuple(p[-1] for p in ordered))

    def with_lookup(self, num_nodes: int) -> DraftTree:
        """This tree (without a lookup branch) and a lookup branch of ``num_nodes`` nodes: a chain
        from the root whose nodes draft the rank one past this tree's highest (the tokens
        :meth:`place_lookup` puts there replace them where the context proposes some)."""
        if num_nodes == 0:
            return self
        if self.lookup:
            raise ValueError(
                f"DraftTree.with_lookup: the tree has a lookup branch of {self.lookup} nodes already"
            )
        first = len(self.parents) + 1
        parents = self.parents + (0,) + tuple(range(first, first + num_nodes - 1))
        return DraftTree(parents, self.ranks + (self.max_rank + 1,) * num_nodes, num_nodes)

    def cut_lookup(self, num_nodes: int) -> DraftTree:
        """This tree with its lookup branch cut to its first ``num_nodes`` nodes (0: no branch)."""
        if not 0 <= num_nodes <= self.lookup:
            raise ValueError(
                f"DraftTree.cut_lookup: num_nodes is {num_nodes}; expected 0 .. {self.lookup} "
                "(the tree's lookup branch)"
            )
        if num_nodes == self.lookup:
            return self
        end = len(self.parents) - self.lookup + num_nodes
        return DraftTree(self.parents[:end], self.ranks[:end], num_nodes)

    def place_lookup(self, drafts: torch.Tensor, proposals: torch.Tensor | None) -> torch.Tensor:
        """Node drafts [bs, N] with the lookup branch's nodes taking ``proposals`` [bs, >= lookup]
        (token ids, their first ``lookup`` columns: a step's branch may be cut shorter than the
        proposals; :data:`sglang_dflash.lookup.NO_TOKEN` keeps the drafter's; a tree without a
        branch takes none)."""
        if not self.lookup:
            return drafts
        proposals = proposals[:, : self.lookup].to(device=drafts.device, dtype=drafts.dtype)
        branch = drafts[:, -self.lookup :]
        drafts = drafts.clone()
        drafts[:, -self.lookup :] = torch.where(proposals >= 0, proposals, branch)
        return drafts

    @property
    def num_nodes(self) -> int:
        """Nodes including the root: the verify width."""
        return len(self.parents) + 1

    @property
    def depths(self) -> list[int]:
        """Block position of every node (0 for the root)."""
        depths = [0]
        for parent in self.parents:
            depths.append(depths[parent] + 1)
        return depths

    @property
    def max_depth(self) -> int:
        return max(self.depths)

    @property
    def max_rank(self) -> int:
        return max(self.ranks)

    def nodes_to_depth(self, depth: int) -> int | None:
        """How many nodes lie at depth <= ``depth`` when they are the tree's first ones (nodes
        ordered by depth, as :meth:`from_paths` orders them), else None."""
        depths = self.depths
        if depths != sorted(depths):
            return None
        return sum(1 for d in depths if d <= depth)

    def paths(self) -> list[tuple[int, ...]]:
        """Every node's rank path from the root (the root's is empty)."""
        out: list[tuple[int, ...]] = [()]
        for parent, rank in zip(self.parents, self.ranks, strict=True):
            out.append(out[parent] + (rank,))
        return out

    def is_chain(self) -> bool:
        return self == DraftTree.chain(len(self.parents))

    def ancestor_mask(self, device: torch.device | str = "cpu") -> torch.Tensor:
        """[W, W] bool: node ``i`` may attend to node ``j`` (``j`` is ``i`` or one of its ancestors)."""
        width = self.num_nodes
        mask = torch.eye(width, dtype=torch.bool)
        for node, parent in enumerate(self.parents, start=1):
            mask[node] |= mask[parent]
        return mask.to(device)

    def to_json(self) -> dict:
        data = {"parents": list(self.parents), "ranks": list(self.ranks)}
        return {**data, "lookup": self.lookup} if self.lookup else data

    @classmethod
    def from_json(cls, data: dict) -> DraftTree:
        return cls(
            tuple(int(p) for p in data["parents"]),
            tuple(int(r) for r in data["ranks"]),
            int(data.get("lookup", 0)),
        )

    def check_block(self, block_size: int) -> None:
        """Refuse a tree deeper than the drafter's block (its positions 1 .. block_size - 1)."""
        if self.max_depth > block_size - 1:
            raise ValueError(
                f"verify tree: depth {self.max_depth}; expected <= {block_size - 1} "
                f"(the drafter's block of {block_size} drafts positions 1 .. {block_size - 1})"
            )

    # ------------------------------------------------------------------ step
    def node_positions(self, seq_lens: torch.Tensor) -> torch.Tensor:
        """[bs, W] positions of the nodes: the block's start plus the node's depth."""
        return seq_lens[:, None] + self.device_tables(seq_lens.device).depths[None, :]

    def draft_tokens(self, draft_logits: torch.Tensor) -> torch.Tensor:
        """Node tokens [bs, N] from the drafter's logits [bs, >= max_depth, V] of block positions 1 ...

        Node ``i`` takes the ``ranks[i]``-th largest logit of position ``depths[i]`` (ties by index,
        as ``torch.topk``; rank 0 is the argmax the chain drafts)."""
        top = draft_logits[:, : self.max_depth].topk(self.max_rank + 1, dim=-1).indices  # [bs, D, k]
        tables = self.device_tables(top.device)
        return top[:, tables.depths[1:] - 1, tables.ranks]

    def children_table(self, device: torch.device | str = "cpu") -> torch.Tensor:
        """[W, max_rank + 1]: the child of node ``n`` drafting rank ``r``, or -1."""
        table = torch.full((self.num_nodes, self.max_rank + 1), -1, dtype=torch.long)
        for child, (parent, rank) in enumerate(zip(self.parents, self.ranks, strict=True), start=1):
            table[parent, rank] = child
        return table.to(device)

    def device_tables(self, device: torch.device | str) -> TreeTables:
        """The tree's tensors on ``device``, made once per device."""
        key = str(torch.device(device))
        if key not in self._tables:
            self._tables[key] = TreeTables(
                self.children_table(device),
                self.ancestor_mask(device),
                torch.tensor(self.depths, device=device),
                torch.tensor(self.ranks, device=device),
            )
        return self._tables[key]

    def greedy_accept(
        self, node_tokens: torch.Tensor, target_logits: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`greedy_walk` over the target's logits [bs, W, V] of every node."""
        return self.greedy_accept_argmax(node_tokens, target_logits.argmax(-1))

    def target_tokens(
        self,
        target_logits: torch.Tensor,
        sampling: BatchSampling,
        generator: torch.Generator | SeededDraws | None = None,
    ) -> torch.Tensor:
        """The target's token after every node [bs, W], from its logits [bs, W, V]: greedy rows'
        argmax, sampled rows' draw from their filtered distribution (a seeded row's node at depth
        ``d`` with the uniform of the position it decides, ``generator.first_positions + d``).

        Walking these with :meth:`greedy_accept_argmax` is lossless speculative sampling with
        deterministic drafts: each committed token is the target's own draw at its node (a draft is
        taken where it equals that draw), so a request's tokens come from the target's distribution
        whatever was drafted; each position is decided by one draw, as plain decoding decides it.
        """
        if sampling.all_greedy:
            return target_logits.argmax(-1)
        probs = sampling_probs(target_logits, sampling, apply_filters=sampling.needs_filters)
        depths = self.device_tables(probs.device).depths
        return sample_from(probs, generator, TARGET_DRAW, columns=depths)

    def sampled_walk(
        self,
        node_tokens: torch.Tensor,
        target_logits: torch.Tensor,
        sampling: BatchSampling,
        generator: torch.Generator | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`greedy_walk` with the target's token after each node drawn (greedy rows: its
        argmax) only when the walk reaches the node, from its logits [bs, W, V] of every node.

        The same speculative sampling as :meth:`target_tokens` then :meth:`greedy_accept_argmax`
        (each node reached draws once, and a node's draw depends on nothing the walk saw), for
        a host that reads the walk back: on CPU, drawing from all 128 nodes of 16 requests took 39
        ms, most of a sampled step's acceptance, where a walk reaches about two nodes a request.
        Unseeded rows only (a seeded row's draws belong to positions: :meth:`target_tokens`)."""
        if sampling.seeds is not None:
            raise ValueError(
                "sglang-dflash: sampled_walk draws unseeded rows only; expected a batch without "
                "seeds (seeded rows verify the chain, or every node's draw by target_tokens)"
            )

        def draw_at(requests: torch.Tensor, nodes: torch.Tensor) -> torch.Tensor:
            rows = target_logits[requests, nodes][:, None]  # [n, 1, V]
            return draft_tokens(rows, sampling.select(requests), generator, TARGET_DRAW)[0][:, 0]

        return self.greedy_walk(node_tokens, draw_at)

    def greedy_accept_argmax(
        self, node_tokens: torch.Tensor, argmax: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`greedy_walk` given the target's argmax [bs, W] after every node, in tensor ops
        only: every request steps down every depth (a request that stopped stays on its last node),
        so nothing is read back to the host and a GPU step does not wait on the walk."""
        bs = node_tokens.shape[0]
        device = node_tokens.device
        children, ancestors = self.device_tables(device)[:2]
        argmax = argmax.to(node_tokens.dtype)
        node = torch.zeros(bs, dtype=torch.long, device=device)
        walking = torch.ones(bs, dtype=torch.bool, device=device)
        path = [node]  # each request's node at every depth: its last accepted one once it stops
        for _ in range(self.max_depth):
            hit, child = _child_drafting(children[node], node_tokens, argmax.gather(1, node[:, None])[:, 0])
            walking = walking & hit
            node = torch.where(walking, child, node)
            path.append(node)
        on_path = ancestors[node]
        emitted = argmax.gather(1, torch.stack(path, dim=1))
        return on_path, on_path.sum(1) - 1, emitted

    def greedy_walk(
        self,
        node_tokens: torch.Tensor,
        argmax_at: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        may_enter: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Walk the tree with the target's argmax, asking it only after the nodes walked.

        ``node_tokens`` [bs, W] (root first); ``argmax_at(requests, nodes)`` -> the target's argmax
        after those nodes (one per request).  Returns (``on_path`` [bs, W] bool: the root and the
        accepted nodes, whose node indices grow with depth; ``num_correct_drafts`` [bs];
        ``emitted`` [bs, max_depth + 1]: the accepted drafts, then the target's token after the
        last of them, repeated to the end).  ``may_enter(requests, nodes)`` -> bool [n], if given,
        may stop a request before a node whose draft is right (a staged verify that does not score
        that node): the step then commits the path so far and the target's token after it (the
        node's own draft), which is lossless too."""
        bs, width = node_tokens.shape
        device = node_tokens.device
        children = self.device_tables(device).children
        on_path = torch.zeros(bs, width, dtype=torch.bool, device=device)
        on_path[:, 0] = True
        emitted = torch.zeros(bs, self.max_depth + 1, dtype=node_tokens.dtype, device=device)
        node = torch.zeros(bs, dtype=torch.long, device=device)
        requests = torch.arange(bs, device=device)  # still accepting
        for depth in range(self.max_depth + 1):
            after = argmax_at(requests, node[requests]).to(node_tokens.dtype)
            emitted[requests, depth:] = after[:, None]  # the bonus token until a child matches
            if depth == self.max_depth:
                break
            hit, child = _child_drafting(children[node[requests]], node_tokens[requests], after)
            if may_enter is not None and hit.any():
                entering = hit.nonzero().flatten()
                hit[entering] = may_enter(requests[entering], child[entering]).to(hit.device)
            requests, child = requests[hit], child[hit]
            if requests.numel() == 0:
                break
            node[requests] = child
            on_path[requests, child] = True
        return on_path, on_path.sum(1) - 1, emitted


def _child_drafting(
    candidates: torch.Tensor, node_tokens: torch.Tensor, after: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Of each row's candidate children [n, ranks] (node indices, -1 for none, in rank order), the
    one whose token in ``node_tokens`` [n, W] is the target's token ``after`` [n]: (whether one
    is [n] bool, which [n]).  Drafter siblings draft distinct tokens; a lookup node may repeat one
    of them, and as the last in rank order it is taken (:func:`last_match`)."""
    drafted = node_tokens.gather(1, candidates.clamp(min=0))
    match = (candidates >= 0) & (drafted == after[:, None])
    return match.any(1), candidates.gather(1, last_match(match)[:, None])[:, 0]


def last_match(match: torch.Tensor) -> torch.Tensor:
    """[n]: the last column of each row of ``match`` [n, k] (bool) that is True (0 where none is):
    a tree walk's rule among children that draft the same token (a lookup node, the last, wins)."""
    columns = torch.arange(match.shape[1], device=match.device)
    return torch.where(match, columns, -1).amax(1).clamp(min=0)


def accepted_depth(ranks: Sequence[int], tree: DraftTree) -> int:
    """How many drafts in a row ``tree`` accepts, given the ranks of the target's tokens at block
    positions 1, 2, ... (a negative rank: past the response's end)."""
    children = tree.children_table().tolist()
    node = depth = 0
    for rank in ranks:
        node = children[node][rank] if 0 <= rank < len(children[node]) else -1
        if node < 0:
            break
        depth += 1
    return depth


def fit_tree(rank_rows: Iterable[Sequence[int]], num_drafts: int, max_rank: int = 8) -> DraftTree:
    """The tree of ``num_drafts`` nodes that accepts the most drafts over ``rank_rows``.

    Each row holds, for one anchor of a selection set, the drafter's rank of the target's token at
    block positions 1, 2, ... (negative past the response's end).  A rank path is accepted at an
    anchor when the row starts with it, so the expected accepted length is the sum of the chosen
    paths' frequencies: the most frequent paths win (ties: shorter first, then smaller ranks), and
    a path is never more frequent than its prefix, so the chosen set stays a tree.
    """
    counts: Counter[tuple[int, ...]] = Counter()
    for row in rank_rows:
        path: tuple[int, ...] = ()
        for rank in row:
            if rank < 0 or rank >= max_rank:
                break
            path += (int(rank),)
            counts[path] += 1
    chosen: list[tuple[int, ...]] = []
    kept: set[tuple[int, ...]] = set()
    for path in sorted(counts, key=lambda p: (-counts[p], len(p), p)):
        if len(chosen) == num_drafts:
            break
        if len(path) == 1 or path[:-1] in kept:
            chosen.append(path)
            kept.add(path)
    if len(chosen) < num_drafts:  # too little data: fill with the chain's next positions
        depth = max((len(p) for p in chosen if set(p) == {0}), default=0)
        while len(chosen) < num_drafts:
            depth += 1
            chosen.append((0,) * depth)
    return DraftTree.from_paths(chosen)


def load_tree(path: str) -> DraftTree:
    """A tree from its JSON file (``{"parents": [...], "ranks": [...]}``), with the file named on error."""
    try:
        with open(path, encoding="utf-8") as f:
            return DraftTree.from_json(json.load(f))
    except (OSError, KeyError, TypeError, ValueError) as e:
        raise ValueError(f"verify tree {path}: {e}; expected JSON with 'parents' and 'ranks' lists") from e


def save_tree(tree: DraftTree, path: str, **extra) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump({**tree.to_json(), **extra}, f, indent=1)
        f.write("\n")
