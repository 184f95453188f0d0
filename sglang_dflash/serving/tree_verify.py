"""Serving a verify tree (:mod:`sglang_dflash.tree`): when a step may use it, and its KV bookkeeping.

A tree step drafts the block as usual, verifies the tree's ``n <= block_size`` nodes in one target
pass (positions ``seq_len + depth``, each node reading the prefix and its ancestors: the CPU block
attention's tree mask), walks it greedily and commits the walked path.  The nodes' K/V were written
to the request's first ``n`` block slots in node order; the walked path's nodes are not the first
columns, so :func:`commit_path_slots` permutes those reserved slots in ``req_to_token`` to put the
path's slots at positions ``seq_len .. seq_len + accepted``: no K/V is copied, and the request holds
the same slots as before.
"""

from __future__ import annotations

import enum
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..kernels import small_batch_linear
from ..speculative import BatchSampling
from ..tree import TREE_FILE, WIDE_TREE_FILE, DraftTree, load_tree

logger = logging.getLogger(__name__)

# The values of a tree variable that name no file: the chain, and the drafter folder's tree.
TREE_OFF_VALUES = ("", "off")
TREE_AUTO_VALUE = "auto"
# "auto" (default): the drafter folder's verify-tree.json when it has one and this server can run
# it; "off": the chain; or a tree file's path.
VERIFY_TREE_ENV = "SGLANG_DFLASH_VERIFY_TREE"
DEFAULT_VERIFY_TREE = TREE_AUTO_VALUE
# "auto" (default): the drafter folder's wide-batch-tree.json, on CPU, beside a verify tree; "off":
# steps past the verify tree's row budget verify the chain; or a tree file's path.
WIDE_TREE_ENV = "SGLANG_DFLASH_WIDE_BATCH_TREE"
TREE_FIRST_DEPTH_ENV = "SGLANG_DFLASH_TREE_FIRST_DEPTH"
DEFAULT_TREE_FIRST_DEPTH = 0
TREE_MAX_ROWS_ENV = "SGLANG_DFLASH_TREE_MAX_ROWS"
# A tree step's target pass multiplies every weight by requests x nodes rows; on CPU up to about 8
# cost what the chain's first pass of 4 columns does (30 layers: 23 ms at 4 rows, 28 at 8, 36 at
# 16; bench/results/2026-12-06-cpu-packed-for-128-rows/linear-rows), so a wider batch verifies the chain.
DEFAULT_TREE_MAX_ROWS = 8


# Lookup nodes added to every served tree (sglang_dflash.lookup), within its block's KV slots.
PROMPT_LOOKUP_ENV = "SGLANG_DFLASH_PROMPT_LOOKUP"
DEFAULT_PROMPT_LOOKUP = 8
# The most target rows (requests x (tree nodes + branch nodes)) a step spends on a lookup branch:
# past it the branch is cut, to nothing for wide batches.  On this Xeon's two cores the 5-node
# wide-batch tree with a branch of 8 paid at four requests (52 rows: 1.54-1.70x plain against
# 1.37-1.45x without it) and lost at sixteen (208 rows; bench/README.md, "A lookup branch").
LOOKUP_MAX_ROWS_ENV = "SGLANG_DFLASH_LOOKUP_MAX_ROWS"
DEFAULT_LOOKUP_MAX_ROWS = 64
# A step verifies its lookup branch only where some request of its batch has a proposal ("1",
# default: the tree alone where none has; sglang_dflash.lookup.Proposals) or at every step within
# the rows budget ("0": the drafter's drafts where no request has a proposal, as served before).
LOOKUP_BY_PROPOSAL_ENV = "SGLANG_DFLASH_LOOKUP_BY_PROPOSAL"


def whole_number_setting(name: str, default: int, minimum: int) -> int:
    """The environment setting ``name`` (``default`` where unset): a whole number >= ``minimum``,
    anything else refused naming it."""
    value = os.environ.get(name, str(default)).strip()
    if not (value.isdigit() and int(value) >= minimum):
        raise ValueError(f"sglang-dflash: {name} is {value!r}; expected a whole number >= {minimum}")
    return int(value)


def prompt_lookup_setting() -> int:
    """``SGLANG_DFLASH_PROMPT_LOOKUP``: the nodes of the lookup branch every served tree gets
    (:meth:`DraftTree.with_lookup`), default :data:`DEFAULT_PROMPT_LOOKUP`; 0 for none.  A branch
    the drafter's block cannot hold beside a tree is cut to what it holds
    (:func:`with_lookup_branch`)."""
    return whole_number_setting(PROMPT_LOOKUP_ENV, DEFAULT_PROMPT_LOOKUP, 0)


def lookup_max_rows_setting() -> int:
    """``SGLANG_DFLASH_LOOKUP_MAX_ROWS``: the rows a step's lookup branch may bring its tree to,
    default :data:`DEFAULT_LOOKUP_MAX_ROWS`."""
    return whole_number_setting(LOOKUP_MAX_ROWS_ENV, DEFAULT_LOOKUP_MAX_ROWS, 1)


def lookup_by_proposal_setting() -> bool:
    """``SGLANG_DFLASH_LOOKUP_BY_PROPOSAL``: whether a step verifies its lookup branch only where
    some request has a proposal (on unless "0")."""
    from .worker import env_switch  # the servers' on/off parser (its module loads SGLang)

    return env_switch(LOOKUP_BY_PROPOSAL_ENV)


def with_lookup_branch(tree: DraftTree | None, num_nodes: int, block_size: int) -> DraftTree | None:
    """``tree`` with a lookup branch of ``num_nodes`` nodes, or as many as the block has KV slots
    for beside its nodes (none: the tree as it is, as is a tree file with a branch of its own)."""
    if tree is None or tree.lookup:
        return tree
    nodes = min(num_nodes, block_size - tree.num_nodes)
    if nodes < num_nodes:
        logger.info(
            "sglang-dflash: a lookup branch of %d nodes (of %s=%d) beside the tree's %d in a block of %d",
            max(nodes, 0), PROMPT_LOOKUP_ENV, num_nodes, tree.num_nodes, block_size,
        )  # fmt: skip
    return tree.with_lookup(nodes) if nodes > 0 else tree


def request_contexts(batch) -> list[tuple[str, list[int]]]:
    """Per request of a decode batch, (its id, its prompt and committed tokens): what a tree's
    lookup branch proposes from (:class:`sglang_dflash.lookup.RequestLookups`)."""
    return [(req.rid, req.origin_input_ids + req.output_ids) for req in batch.reqs]


def verify_tree_value() -> str:
    """``SGLANG_DFLASH_VERIFY_TREE`` as set, else its default ``auto``."""
    return os.environ.get(VERIFY_TREE_ENV, DEFAULT_VERIFY_TREE).strip()


def verify_tree_setting(
    server_args, block_size: int, device: torch.device | str, selector: bool = False
) -> DraftTree | None:
    """The tree ``SGLANG_DFLASH_VERIFY_TREE`` names, checked against this server, or None.

    A tree file this server cannot run is refused with every reason; under ``auto`` the server
    verifies the chain instead and logs why (``selector``: a DFlash2 drafter, which chooses its
    drafts by its own walk)."""
    value = verify_tree_value()
    path = _tree_file(VERIFY_TREE_ENV, value, server_args, TREE_FILE)
    if path is None:
        return None
    tree = load_tree(path)
    problems = served_tree_problems(server_args, tree, block_size, device, selector)
    if torch.device(device).type != "cpu":
        problems.extend(gpu_tree_problems(server_args, tree, block_size, device, value == TREE_AUTO_VALUE))
    explicit = VERIFY_TREE_ENV in os.environ
    return _tree_or_chain(tree, path, problems, by_default=value == TREE_AUTO_VALUE, explicit=explicit)


def names_tree_file(value: str) -> bool:
    """Whether a tree variable's ``value`` names a tree file (neither off nor auto)."""
    return value not in (*TREE_OFF_VALUES, TREE_AUTO_VALUE)


def _tree_file(env: str, value: str, server_args, folder_file: str) -> str | None:
    """The tree file ``env``, set to ``value``, names: None for ``off`` (or empty), the drafter
    folder's ``folder_file`` for ``auto`` (None where it has none), else ``value``, refused unless
    it is a file."""
    if value in TREE_OFF_VALUES:
        return None
    if value == TREE_AUTO_VALUE:
        path = os.path.join(server_args.speculative_draft_model_path, folder_file)
        return path if os.path.exists(path) else None
    if not os.path.isfile(value):
        raise ValueError(
            f"sglang-dflash: {env} is {value!r}; expected 'off', 'auto' or a tree JSON file "
            "(sglang-dflash fit-tree makes one)"
        )
    return value


def served_tree_problems(
    server_args, tree: DraftTree, block_size: int, device: torch.device | str, selector: bool
) -> list[str]:
    """Why this server cannot verify ``tree`` on any device (a GPU's own reasons:
    :func:`gpu_tree_problems`); a tree deeper than the block is refused outright."""
    tree.check_block(block_size)
    problems = []
    if tree.num_nodes > block_size:
        problems.append(f"{tree.num_nodes} nodes; expected <= the block size {block_size} (its KV slots)")
    if torch.device(device).type == "cpu":
        if server_args.attention_backend != "torch_native":
            problems.append(
                f"attention backend {server_args.attention_backend} on {device}; a tree verifies on CPU "
                "with torch_native"
            )
    if getattr(server_args, "tp_size", 1) != 1:
        problems.append(f"tp size {server_args.tp_size}; expected 1")
    if selector:
        problems.append("a DFlash2 drafter chooses its drafts by its selector; expected a DFlash drafter")
    return problems


def _tree_or_chain(
    tree: DraftTree,
    path: str,
    problems: list[str],
    by_default: bool,
    explicit: bool,
    role: str = "verify tree",
) -> DraftTree | None:
    """``tree`` if nothing stops it; else None (the chain) for a tree taken by default, with the
    reasons logged, and a ValueError naming them for a tree file someone named."""
    if problems and by_default:
        # Only a tree someone asked for is worth a warning; by default the chain is simply served.
        log = logger.warning if explicit else logger.info
        log("sglang-dflash: %s %s not used (%s): the chain", role, path, "; ".join(problems))
        return None
    if problems:
        raise ValueError(f"sglang-dflash: {role} {path}: " + "; ".join(problems))
    logger.info("sglang-dflash %s %s: %d nodes, depth %d", role, path, tree.num_nodes, tree.max_depth)
    return tree


def wide_batch_tree_setting(
    server_args,
    block_size: int,
    device: torch.device | str,
    verify_tree: DraftTree | None,
) -> DraftTree | None:
    """The tree ``SGLANG_DFLASH_WIDE_BATCH_TREE`` names for the steps wider than ``verify_tree``'s
    row budget (:func:`tree_max_rows`), or None: those steps verify the chain.

    ``auto`` (default): the drafter folder's ``wide-batch-tree.json`` where it has one, beside a
    verify tree, on CPU; ``off``; or a tree file.  A wide-batch tree has fewer nodes than the verify
    tree (on CPU a step's target pass costs by its rows, requests x nodes) and is CPU-only: a GPU
    verifies one tree, of the block's width, at every batch size.  With ``--speculative-adaptive``
    the width policy chooses between it and plain decoding, as for the verify tree."""
    value = os.environ.get(WIDE_TREE_ENV, TREE_AUTO_VALUE).strip()
    by_default = value == TREE_AUTO_VALUE
    if by_default and verify_tree is None:
        return None
    path = _tree_file(WIDE_TREE_ENV, value, server_args, WIDE_TREE_FILE)
    if path is None:
        return None
    if verify_tree is None:
        raise ValueError(
            f"sglang-dflash: {WIDE_TREE_ENV} names {path}, but no verify tree is served; expected one "
            f"beside it ({VERIFY_TREE_ENV}), whose row budget the wide-batch tree's steps exceed"
        )
    tree = load_tree(path)
    problems = served_tree_problems(server_args, tree, block_size, device, selector=False)
    if tree.num_nodes >= verify_tree.num_nodes:
        problems.append(
            f"{tree.num_nodes} nodes; expected fewer than the verify tree's {verify_tree.num_nodes}"
        )
    if torch.device(device).type != "cpu":
        problems.append(f"device {device}; expected CPU (a GPU verifies one tree, of the block's width)")
    explicit = WIDE_TREE_ENV in os.environ
    return _tree_or_chain(tree, path, problems, by_default, explicit, role="wide-batch tree")


# A drafter folder's wider trees (sglang-dflash fit-tree), tree-<drafts>.json; the one of the block's
# width is what a GPU verifies (the verify's CUDA graphs take that width).
TREES_DIR = "verify-trees"


def block_width_tree_file(drafter_path: str, block_size: int) -> str:
    """The drafter folder's tree of ``block_size`` nodes (``block_size - 1`` drafts)."""
    return os.path.join(drafter_path, TREES_DIR, f"tree-{block_size - 1}.json")


def gpu_tree_problems(
    server_args, tree: DraftTree, block_size: int, device: torch.device | str, by_default: bool
) -> list[str]:
    """Why a GPU server cannot verify ``tree``: its target's verify passes run our split-KV kernel
    (triton backend, ``SGLANG_DFLASH_SPLITKV`` on), whose causal calls read the tree's mask
    (:class:`~sglang_dflash.kernels.block_attention.BlockMasks`), at the block's width (the width
    the verify CUDA graphs are captured at).  ``by_default`` (``auto``): not measured on a GPU yet,
    so a GPU server verifies a tree only when its file is named."""
    from .plugin import splitkv_setting

    problems, splitkv = [], splitkv_setting()
    if server_args.attention_backend != "triton" or not splitkv:
        problems.append(
            f"attention backend {server_args.attention_backend} on {device}"
            f"{'' if splitkv else ' without the split-KV kernel'}; a tree verifies on GPUs "
            "with triton and the split-KV kernel (SGLANG_DFLASH_SPLITKV on)"
        )
    if tree.num_nodes != block_size:
        problems.append(
            f"{tree.num_nodes} nodes on {device}; expected the block size {block_size} on a GPU "
            f"(the verify's width), e.g. the drafter's {TREES_DIR}/tree-{block_size - 1}.json"
        )
    if by_default and not problems:
        problems.append(f"not measured on {device} yet: name the tree file to verify it there")
    return problems


def attention_the_kernel_leaves(model_runner) -> list[str]:
    """What of the target's attention SGLang's triton backend would run with its own (causal) kernel
    rather than our split-KV kernel, which a GPU tree's mask needs: layers with a window, a soft
    cap, scaled K/V, xai temperature or sinks, and a deterministic or context-parallel backend."""
    from sglang.srt.layers.radix_attention import RadixAttention

    left = []
    backend = getattr(model_runner, "attn_backend", None)
    if getattr(backend, "enable_deterministic", False):
        left.append("the deterministic backend")
    if getattr(backend, "dcp_size", 1) > 1:
        left.append(f"decode context parallelism {backend.dcp_size}")
    for name, module in model_runner.model.named_modules():
        if isinstance(module, RadixAttention):
            windowed = (module.sliding_window_size or -1) > -1
            capped = (module.logit_cap or 0) > 0
            scaled = module.k_scale is not None or module.v_scale is not None
            if windowed or capped or scaled or (getattr(module, "xai_temperature_len", -1) or -1) > 0:
                left.append(name)
        elif isinstance(getattr(module, "sinks", None), torch.Tensor):
            left.append(name)
    return left


def check_gpu_tree_target(model_runner, device: torch.device | str, block_size: int) -> None:
    """Refuse a GPU server's verify tree where a target pass would attend causally instead of by
    the tree: no block mask armed at the block's width, or attention our kernel leaves to the host's."""
    from ..kernels.block_attention import BlockMasks

    if BlockMasks.armed(device, block_size) is None:
        raise ValueError(
            f"sglang-dflash: verify tree on {device}: no block mask armed at width {block_size}; expected "
            "the split-KV kernel's, armed when the target's triton backend starts (SGLANG_DFLASH_SPLITKV "
            f"on, {VERIFY_TREE_ENV} naming the tree file)"
        )
    left = attention_the_kernel_leaves(model_runner)
    if left:
        raise ValueError(
            f"sglang-dflash: verify tree on {device}: {', '.join(left[:3])}"
            f"{f' and {len(left) - 3} more' if len(left) > 3 else ''} run SGLang's causal kernel, not "
            "the split-KV kernel that attends by the tree; expected none: verify the chain "
            f"({VERIFY_TREE_ENV}=off)"
        )


def tree_first_pass_nodes(tree: DraftTree | None) -> int:
    """``SGLANG_DFLASH_TREE_FIRST_DEPTH``: the verify's first pass scores the nodes down to that
    depth for every request, a second pass the deeper ones only for the requests whose walk reaches
    them; "0" (default: a tree step takes few rows, :data:`DEFAULT_TREE_MAX_ROWS`, where one pass
    costs about what a staged first pass does) verifies every node in one pass.  Returns the first
    pass's nodes."""
    depth = whole_number_setting(TREE_FIRST_DEPTH_ENV, DEFAULT_TREE_FIRST_DEPTH, 0)
    if tree is None:
        return 0
    split = tree.nodes_to_depth(depth) if depth > 0 else None
    return tree.num_nodes if split is None else split


def tree_max_rows(
    tree: DraftTree | None, device: torch.device | str = "cpu", sampled: bool = False, wide: bool = False
) -> int | None:
    """``SGLANG_DFLASH_TREE_MAX_ROWS``: the most target rows (requests x tree nodes) a step verifies
    ``tree`` for; a larger batch verifies the wide-batch tree (``wide``: the server has one), else
    the chain.  Default :data:`DEFAULT_TREE_MAX_ROWS` for greedy steps on CPU, and for ``sampled``
    steps (with sampled rows) beside a wide-batch tree; None (no limit) on a GPU, where a tree
    verifies the block's width, the chain's rows, and for sampled steps without a wide-batch tree,
    whose chain is dearer than any tree of at most the block's width (the drafter's and the
    target's logits over the whole vocabulary at every block position, where a tree step scores
    its few nodes); never under the tree's own nodes (one request always verifies the tree)."""
    value = os.environ.get(TREE_MAX_ROWS_ENV, "").strip()
    if value and not (value.isdigit() and int(value) >= 1):
        raise ValueError(f"sglang-dflash: {TREE_MAX_ROWS_ENV} is {value!r}; expected a whole number >= 1")
    if tree is None:
        return 0
    if not value and ((sampled and not wide) or torch.device(device).type != "cpu"):
        return None
    return max(int(value) if value else DEFAULT_TREE_MAX_ROWS, tree.num_nodes)


def tree_max_requests(
    tree: DraftTree | None, device: torch.device | str, sampled: bool, wide: bool = False
) -> int | None:
    """The most requests a step verifies ``tree`` for (:func:`tree_max_rows` over the tree's nodes;
    0 without a tree, None for any number)."""
    rows = tree_max_rows(tree, device, sampled, wide)
    return None if rows is None else rows // (1 if tree is None else tree.num_nodes)


@dataclass(frozen=True)
class ServedTree:
    """A tree as a server's steps verify it: the tree, its ancestor mask on the server's device,
    and the nodes its first target pass scores (:func:`tree_first_pass_nodes`)."""

    tree: DraftTree
    mask: torch.Tensor
    split: int

    @classmethod
    def on(cls, tree: DraftTree, device: torch.device | str) -> ServedTree:
        return cls(tree, tree.device_tables(device).ancestors, tree_first_pass_nodes(tree))


class VerifyTrees:
    """Which tree a step verifies: the verify tree for steps within its row budget
    (:func:`tree_max_requests`), the wide-batch tree (fewer nodes) for wider ones, else the chain;
    each with a lookup branch of up to ``lookup`` nodes (:func:`with_lookup_branch`), cut where the
    step's rows would pass ``lookup_max_rows`` (:meth:`branch_nodes`)."""

    def __init__(
        self,
        verify_tree: DraftTree | None,
        wide_tree: DraftTree | None,
        device: torch.device | str,
        lookup: int = 0,
        block_size: int = 16,
        lookup_max_rows: int = DEFAULT_LOOKUP_MAX_ROWS,
    ) -> None:
        self.lookup_max_rows = lookup_max_rows
        # Per tree, its served forms by branch nodes: [k] has a branch of k (a file's own cut alike).
        self.narrow = _served_branches(verify_tree, lookup, block_size, device)
        self.wide = _served_branches(wide_tree, lookup, block_size, device)
        # Greedy steps (False) and steps with sampled rows (True).
        self.max_requests = {
            sampled: tree_max_requests(verify_tree, device, sampled, wide_tree is not None)
            for sampled in (False, True)
        }

    def for_step(self, bs: int, sampled: bool, wanted_branch: int | None = None) -> ServedTree | None:
        """The tree a step of ``bs`` requests verifies (``sampled``: with sampled rows), or None;
        its lookup branch at most ``wanted_branch`` nodes (what the step's proposals are worth,
        :meth:`sglang_dflash.lookup.Proposals.step_nodes`; None: as many as the budget allows)."""
        limit = self.max_requests[sampled]
        use_narrow = self.narrow is not None and (limit is None or bs <= limit)
        forms = self.narrow if use_narrow else self.wide
        if forms is None:
            return None
        nodes = self.branch_nodes(bs, forms[0].tree.num_nodes, len(forms) - 1)
        return forms[nodes if wanted_branch is None else min(nodes, wanted_branch)]

    def is_wide(self, served: ServedTree) -> bool:
        """Whether ``served`` is a form of the wide-batch tree (a step profile counts its steps)."""
        return any(served is form for form in self.wide or ())

    def branch_nodes(self, bs: int, tree_nodes: int, most: int) -> int:
        """The lookup branch a step of ``bs`` requests gives a tree of ``tree_nodes``: ``most``
        nodes, or fewer, to none, where ``bs`` x (tree + branch) would pass the rows' budget."""
        return max(0, min(most, self.lookup_max_rows // bs - tree_nodes))


def _served_branches(
    tree: DraftTree | None, lookup: int, block_size: int, device: torch.device | str
) -> list[ServedTree] | None:
    """``tree`` served with a lookup branch of 0, 1, ... up to ``lookup`` nodes (as many as the
    block holds: :func:`with_lookup_branch`), or up to its own (a tree file's)."""
    if tree is None:
        return None
    full = with_lookup_branch(tree, lookup, block_size)
    return [ServedTree.on(full.cut_lookup(k), device) for k in range(full.lookup + 1)]


# lm_head rows a call of the packed few-row product scores for about the cost of reading the weight
# once (SmolLM2's 49152 x 576 on two cores: 1 row 5.8 ms, 4 rows 7.7, 8 rows 8.5, 16 rows 10.4): more
# than small_batch_linear.CHEAP_ROWS, which the chain's column passes keep.
WALK_MAX_ROWS = 16


def walk_lm_head_rows(bs: int, first_pass_nodes: int, few_rows: bool, cheap_rows: int) -> int:
    """Rows the walk's lm_head calls take at most (:class:`NodeArgmax`'s ``cheap_rows``).

    With the few-row product a call reads the whole lm_head whatever its rows, so the first call
    scores every first-pass node up to :data:`WALK_MAX_ROWS` (a tree step of the default budget,
    :func:`tree_max_rows`, all of them) rather than paying the read again for each depth walked.
    With ``F.linear`` a row costs its own arithmetic: one row a call."""
    return max(cheap_rows, min(bs * first_pass_nodes, WALK_MAX_ROWS)) if few_rows else 1


class TreeWalk(enum.Enum):
    """How a tree step learns the target's token after the nodes its walk reaches."""

    # CPU, sampled rows: every node scored in one pass, a node's token drawn only when the walk
    # reaches it (DraftTree.sampled_walk).
    DRAWS_WHEN_WALKED = "draws when walked"
    # Every node's token from one call (argmax, or a GPU's draws), walked in tensor ops
    # (DraftTree.greedy_accept_argmax): a GPU step reads nothing back to the host.
    AT_ONCE = "at once"
    # CPU, greedy, deferred logits: the lm_head a few nodes at a time where the walk goes
    # (NodeArgmax), deeper nodes maybe from a second target pass.
    NODE_ARGMAX = "node argmax"


@dataclass(frozen=True)
class WalkPlan:
    """A tree step's walk, the nodes its first target pass scores (``split``: all of them but for
    :attr:`TreeWalk.NODE_ARGMAX`) and the rows a :class:`NodeArgmax` call takes."""

    walk: TreeWalk
    split: int
    cheap_rows: int = 1


def plan_tree_walk(
    served: ServedTree,
    bs: int,
    *,
    on_gpu: bool,
    sampled: bool,
    deferred: bool,
    can_split: bool,
    few_rows: bool,
) -> WalkPlan:
    """The walk of a step of ``bs`` requests verifying ``served`` (``sampled``: with sampled rows;
    ``deferred``: the verify's lm_head waits for the walk; ``can_split``: the batch may take a second
    pass for some of its requests; ``few_rows``: the linears run the few-row product)."""
    width = served.tree.num_nodes
    if sampled and not on_gpu:
        return WalkPlan(TreeWalk.DRAWS_WHEN_WALKED, width)
    if on_gpu or not deferred:  # a GPU (sampled rows too), or no lm_head deferred to the walk
        return WalkPlan(TreeWalk.AT_ONCE, width)
    split = served.split if can_split else width
    cheap_rows = walk_lm_head_rows(bs, split, few_rows, small_batch_linear.CHEAP_ROWS)
    # The whole tree at once where the walk's first lm_head call would score it all anyway.
    if split == width and bs * width <= cheap_rows:
        return WalkPlan(TreeWalk.AT_ONCE, width, cheap_rows)
    return WalkPlan(TreeWalk.NODE_ARGMAX, split, cheap_rows)


def tree_step_applies(batch, sampling: BatchSampling, has_penalties: bool, has_grammar: bool) -> bool:
    """Whether a step may verify a tree (:meth:`VerifyTrees.for_step` says which): its requests are
    greedy or sampled without a seed, and nothing changes or reports their logits (penalties,
    grammar, logit_bias, logprobs, hidden states); any other batch verifies the chain.

    A seeded sampled row's tokens differ between a tree step and a chain step (the tree commits
    the target's draw at each position, the chain accepts sampled drafts), and whether a step
    verifies the tree depends on the batch; so seeded rows take the chain, whose tokens do not
    depend on the batch (:class:`~sglang_dflash.speculative.SeededDraws`)."""
    if not sampling.all_greedy and sampling.seeds is not None:
        return False
    return logits_left_alone(batch, has_penalties, has_grammar) and not batch.return_hidden_states


def logits_left_alone(batch, has_penalties: bool, has_grammar: bool) -> bool:
    """Whether nothing changes or reports a step's target logits (penalties, grammar,
    ``logit_bias``, logprobs): then a greedy step needs only the rows its acceptance reads (deferred
    verify logits) and a tree step may verify."""
    if has_penalties or has_grammar:
        return False
    return batch.sampling_info.logit_bias is None and not batch.return_logprob


def path_order(on_path: torch.Tensor) -> torch.Tensor:
    """[bs, n] node indices with each request's walked path first (in depth order), then the rest."""
    width = on_path.shape[1]
    columns = torch.arange(width, device=on_path.device)
    return torch.where(on_path, columns, columns + width).argsort(dim=1)


def commit_path_slots(
    req_to_token: torch.Tensor,
    req_pool_indices: torch.Tensor,
    seq_lens: torch.Tensor,
    slots: torch.Tensor,
    order: torch.Tensor,
) -> torch.Tensor:
    """Point positions ``seq_len .. seq_len + n - 1`` of every request at its node slots ``slots``
    [bs, n] in ``order`` (:func:`path_order`); returns those slots [bs, n] in position order."""
    placed = slots.gather(1, order)
    columns = torch.arange(order.shape[1], device=seq_lens.device)
    rows = req_pool_indices.to(torch.long)[:, None]
    req_to_token[rows, seq_lens.to(torch.long)[:, None] + columns[None, :]] = placed.to(req_to_token.dtype)
    return placed


class NodeArgmax:
    """The target's argmax after tree nodes, for :meth:`DraftTree.greedy_walk`, computed a few rows
    at a time and kept.

    Each lm_head call reads the whole lm_head (on CPU most of its cost for a few rows), so a call
    for a node the walk reached also computes the next nodes of its subtree, level by level in node
    order (its children first; a fitted tree numbers each depth's nodes by frequency, so the
    likeliest next reads come first), up to ``cheap_rows`` rows over the requests asking.  Nodes
    ``split ..`` come from a second target pass, run once by ``second_pass(requests)`` for the
    requests whose walk reaches them (all at one depth); ``first_pass(rows)`` and the second pass's
    ``argmax(rows)`` take row ``request * nodes_in_pass + node_in_pass``.
    """

    def __init__(
        self,
        tree: DraftTree,
        bs: int,
        split: int,
        first_pass: Callable[[torch.Tensor], torch.Tensor],
        second_pass: Callable[[torch.Tensor], Callable[[torch.Tensor], torch.Tensor]],
        cheap_rows: int,
        device: torch.device | str,
    ) -> None:
        self.width, self.split, self.cheap_rows = tree.num_nodes, split, cheap_rows
        self.first_pass, self.second_pass = first_pass, second_pass
        self.known = torch.zeros(bs, self.width, dtype=torch.bool)
        self.tokens = torch.zeros(bs, self.width, dtype=torch.long, device=device)
        self.second_rows: torch.Tensor | None = None  # request -> its row in the second pass, or -1
        self.second_argmax: Callable[[torch.Tensor], torch.Tensor] | None = None
        self.subtree = _subtrees_by_pass(tree, split)
        self.rows_computed = 0

    def __call__(self, requests: torch.Tensor, nodes: torch.Tensor) -> torch.Tensor:
        missing = ~self.known[requests.cpu(), nodes.cpu()]
        if missing.any():
            self._compute(requests[missing.to(requests.device)], nodes[missing.to(nodes.device)])
        return self.tokens[requests, nodes]

    def run_second_pass(self, reach: torch.Tensor) -> None:
        """Score the nodes past the first pass for ``reach`` (requests), once."""
        if self.second_argmax is not None:
            raise RuntimeError("a tree verify's second pass runs once a step")
        self.second_argmax = self.second_pass(reach)
        self.second_rows = torch.full((self.known.shape[0],), -1, dtype=torch.long)
        self.second_rows[reach.cpu()] = torch.arange(len(reach))

    def _compute(self, requests: torch.Tensor, nodes: torch.Tensor) -> None:
        late = nodes >= self.split
        if late.any() and self.second_argmax is None:
            self.run_second_pass(requests[late])
        budget = max(1, self.cheap_rows // len(requests))
        chosen: list[tuple[int, int]] = []
        for request, node in zip(requests.tolist(), nodes.tolist()):
            unknown = [m for m in self.subtree[node] if not self.known[request, m]]
            chosen.extend((request, m) for m in unknown[:budget])
        first = [(r, m) for r, m in chosen if m < self.split]
        second = [(r, m) for r, m in chosen if m >= self.split]
        if first:
            self._fill(first, self.first_pass, lambda r, m: r * self.split + m)
        if second:
            if self.second_rows is None or any(int(self.second_rows[r]) < 0 for r, _ in second):
                raise RuntimeError("a tree walk reached later nodes after their pass had run")
            later = self.width - self.split
            self._fill(
                second, self.second_argmax, lambda r, m: int(self.second_rows[r]) * later + m - self.split
            )

    def _fill(self, pairs: list[tuple[int, int]], argmax, row_of: Callable[[int, int], int]) -> None:
        device = self.tokens.device
        rows = torch.tensor([row_of(r, m) for r, m in pairs], dtype=torch.long, device=device)
        found = argmax(rows)
        requests = torch.tensor([r for r, _ in pairs], dtype=torch.long)
        columns = torch.tensor([m for _, m in pairs], dtype=torch.long)
        self.tokens[requests.to(device), columns.to(device)] = found.to(torch.long)
        self.known[requests, columns] = True
        self.rows_computed += len(pairs)


def _subtrees_by_pass(tree: DraftTree, split: int) -> list[list[int]]:
    """Per node, itself and its descendants in node order, within the node's own pass."""
    children: list[list[int]] = [[] for _ in range(tree.num_nodes)]
    for child, parent in enumerate(tree.parents, start=1):
        children[parent].append(child)
    out = []
    for node in range(tree.num_nodes):
        late = node >= split
        order, frontier = [node], [node]
        while frontier:
            frontier = [c for n in frontier for c in children[n] if (c >= split) == late]
            order.extend(frontier)
        out.append(order)
    return out
