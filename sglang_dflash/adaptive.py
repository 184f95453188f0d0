"""Load- and acceptance-adaptive verify width: how many block positions one decode step verifies.

The drafter always drafts the whole block in one pass; the target verifies only the first ``k``
positions (the bonus token + ``k - 1`` drafts), ``k`` from a small fixed set of widths.  ``k = 1``
verifies the bonus token alone: plain decoding (the drafter does not run).  Verifying fewer
positions is a truncation of the block, so greedy output stays the target's and sampled output
stays lossless; only the cost and the expected tokens per step change.

The policy picks, per step, the width with the highest expected throughput for the batch::

    tokens(k)  = bs * (1 + sum_{j<k} h_1 * ... * h_j)   expected committed tokens (accept_lens) per step
    seconds(k) = measured step time at this batch-size bucket and width (median of recent steps)
    k*         = argmax tokens(k) / seconds(k)

``h_d`` is the probability that draft ``d`` is accepted given that drafts ``1..d-1`` were, estimated
per block position from the steps that verified drafts (censored counts: a request reached draft
``d`` if it accepted every draft before it and the step verified ``d``; a step that accepted all
``k - 1`` drafts says nothing about position ``k``).  Each position's estimate is shrunk toward the
one before it, so a position no step has verified yet continues the last measured one.  One ``a``
for every position (a geometric run, the estimate before 2026-12-04) is off wherever acceptance
changes along the block: on the sixtieth SmolLM2 drafter's GSM8K replays (100 prompts) it falls
from 0.58 at the first draft to 0.36 at the fifth, and one ``a`` measured at width 4 expected 2.01
tokens a step there (2.03 committed) and 2.19 from width 8 (2.14); per position the estimate is
exact at the widths measured (2.16 expected from width 8).  Where easy and hard stretches of text
alternate, acceptance rises along the block instead, and one ``a`` undervalues the whole block.
The acceptance counts decay, so the choice follows the text; a step time is the median of the
last ``time_window`` steps measured at that bucket and width, so it follows the load while one
slow step (a prefill or another process taking the core) cannot hold a width's estimate up for
the many steps until it is measured again.
A bucket starts at the narrowest width and climbs: a width is first tried when it neighbours the
best width measured so far (the next narrower or wider candidate), so a batch too large for
drafting pays for one narrow drafting step, never for a whole-block verify (at 16 requests on a
CPU core a width-16 step costs about four plain steps, and each batch-size bucket a draining batch
passes through tried every width once).  Every ``explore_every`` steps at a bucket the neighbour
measured longest ago is tried again, so a drafter that improves (or a load that drops) is noticed
even while plain decoding is chosen, at the cost of one narrow drafting step per
``explore_every`` steps.  A re-measured neighbour whose newest step time alone would make it the
best width is measured again at the next step (``confirm_promising``), until its median says so
too or a step disagrees: its median otherwise rests on samples ``explore_every`` steps apart, and
one slow sample among them held a width that was twice as fast off for about a hundred steps (a
CPU bench at one request verified width 8 on 28 of 95 steps, at twice width 4's step time).
Everything the policy reads is on the host.

Where a step could verify a token tree instead (:mod:`sglang_dflash.tree`: the server serves one at
this batch size and nothing in the batch needs the chain), the tree takes the drafting widths'
place: the policy chooses between plain decoding and the tree, whose expected tokens are the
decayed mean of what its own steps committed per request (before any, the chain's estimate at the
widest width).  A tree commits about as much a step as the chain at a fraction of its rows (the
SmolLM2 drafter's 5-node tree out-accepts its 16-wide chain), so it stands in for the drafting
widths rather than adding probes beside them (side by side at 4 and 16 requests, 2026-12-07: within
the spread of the chain's widths); plain decoding stays, for the batches too large for any
drafting to pay.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

DEFAULT_WIDTHS = (1, 4, 8, 16)
# Where the plugin keeps the checked settings on SGLang's ServerArgs for the worker.
ADAPTIVE_ATTR = "_sglang_dflash_adaptive"
ADAPTIVE_CONFIG_FLAG = "--speculative-adaptive-config"


@dataclasses.dataclass(frozen=True)
class AdaptiveConfig:
    """Settings of :class:`VerifyWidthPolicy` (``--speculative-adaptive-config`` JSON, same keys)."""

    # Candidate verify widths, each capped at the block size; None: DEFAULT_WIDTHS and the whole block.
    widths: tuple[int, ...] | None = None
    explore_every: int = 32  # steps per batch-size bucket between re-measurements
    # Per-step decay of the acceptance counts: about 1 / (1 - decay) steps of evidence (at one
    # request a step sees one or two drafts; 0.9 let a few unlucky steps decide).
    accept_decay: float = 0.95
    time_window: int = 5  # a width's step time is the median of its last time_window measurements
    # Re-measure at once a neighbour whose newest step time alone would make it the best width.
    confirm_promising: bool = True
    # Pseudo-counts: before any evidence the first draft is accepted with probability 0.5; each later
    # position is shrunk with their sum toward the position before it.
    prior_accepted: float = 1.0
    prior_rejected: float = 1.0

    def __post_init__(self) -> None:
        widths = self.widths
        if widths is not None:
            if (
                not isinstance(widths, (list, tuple))
                or not widths
                or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in widths)
            ):
                raise ValueError(f"{ADAPTIVE_CONFIG_FLAG}: widths is {widths!r}; expected integers >= 1")
            object.__setattr__(self, "widths", tuple(sorted(set(widths))))
        for name, least in (("explore_every", 2), ("time_window", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(
                    f"{ADAPTIVE_CONFIG_FLAG}: {name} is {value!r}; expected an integer >= {least}"
                )
        if not isinstance(self.accept_decay, (int, float)) or not 0 <= self.accept_decay < 1:
            raise ValueError(
                f"{ADAPTIVE_CONFIG_FLAG}: accept_decay is {self.accept_decay!r}; expected a number in [0, 1)"
            )
        if not isinstance(self.confirm_promising, bool):
            raise ValueError(
                f"{ADAPTIVE_CONFIG_FLAG}: confirm_promising is {self.confirm_promising!r}; "
                "expected true or false"
            )
        for name in ("prior_accepted", "prior_rejected"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{ADAPTIVE_CONFIG_FLAG}: {name} is {value!r}; expected a number > 0")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> AdaptiveConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"{ADAPTIVE_CONFIG_FLAG}: keys {unknown} are unknown; expected some of {sorted(known)}"
            )
        return cls(**values)

    @classmethod
    def from_flag(cls, value: str | None) -> AdaptiveConfig:
        """The defaults, or ``--speculative-adaptive-config``: a JSON object or the path of a JSON file.

        A value starting with ``{`` (after whitespace) is the object itself (a JSON object that does
        not parse is refused as such, not looked up as a file); anything else is a path, as SGLang
        reads the flag for its own adaptive EAGLE.
        """
        if value is None:
            return cls()
        if value.lstrip().startswith("{"):
            return cls.from_dict(_parse_json(value, value, "a JSON object"))
        try:
            with open(value, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise ValueError(
                f"{ADAPTIVE_CONFIG_FLAG} is {value!r}; expected a JSON object or the path of a "
                f"readable JSON file ({e})"
            ) from e
        values = _parse_json(text, value, "the path of a readable JSON file")
        if not isinstance(values, dict):
            raise ValueError(
                f"{ADAPTIVE_CONFIG_FLAG}: {value} holds {type(values).__name__}; expected a JSON object"
            )
        return cls.from_dict(values)

    def for_block_size(self, block_size: int) -> AdaptiveConfig:
        """The widths this block size can verify: each configured width capped at ``block_size``; by
        default :data:`DEFAULT_WIDTHS` and the whole block.  Widths given explicitly are kept as
        given (``[1]`` is plain decoding that never probes a drafting width)."""
        configured = (*DEFAULT_WIDTHS, block_size) if self.widths is None else self.widths
        return dataclasses.replace(self, widths=tuple(sorted({min(k, block_size) for k in configured})))


def _parse_json(text: str, value: str, expected: str) -> Any:
    """``text`` as JSON; an error naming the flag's ``value`` and what was ``expected`` otherwise."""
    try:
        return json.loads(text)
    except ValueError as e:
        raise ValueError(f"{ADAPTIVE_CONFIG_FLAG} is {value!r}; expected {expected} ({e})") from e


@dataclasses.dataclass(frozen=True)
class TreeStep:
    """The candidate that verifies a token tree of ``nodes`` nodes instead of a chain width."""

    nodes: int


Candidate = int | TreeStep  # a chain width (1: plain decoding) or a tree step


def batch_bucket(bs: int) -> int:
    """Batch sizes share step-time measurements per power of two (1, 2, 4, 8, ...)."""
    return 1 << max(0, int(bs).bit_length() - 1)


@dataclasses.dataclass
class _Timing:
    recent: collections.deque[float]  # the last time_window step times, oldest first
    measured_at: int  # the bucket's step count when last measured

    @property
    def seconds(self) -> float:
        """The estimate: the median of the recent step times."""
        return statistics.median(self.recent)


class VerifyWidthPolicy:
    """Chooses each step's verify width from acceptance seen so far and measured step times."""

    def __init__(self, config: AdaptiveConfig) -> None:
        if config.widths is None:
            raise ValueError(
                "VerifyWidthPolicy: config.widths is None; expected the widths of one block size "
                "(AdaptiveConfig.for_block_size)"
            )
        self.config = config
        # Decayed counts per draft position d = 1 .. widest - 1 (index d - 1): requests that reached
        # draft d (accepted every draft before it, with d verified) and requests that accepted it.
        self.reached = [0.0] * (max(config.widths) - 1)
        self.passed = [0.0] * (max(config.widths) - 1)
        # Decayed counts per tree (by its nodes): requests its steps verified, tokens they committed.
        self.tree_requests: dict[int, float] = {}
        self.tree_tokens: dict[int, float] = {}
        self.timings: dict[tuple[int, Candidate], _Timing] = {}
        self.steps: dict[int, int] = {}  # per bucket
        # The last step's (bs, candidate, start) until the next step starts (None after a prefill).
        self.open_step: tuple[int, Candidate, float] | None = None

    def draft_acceptance(self) -> list[float]:
        """``h_d`` for d = 1 .. widest - 1: draft d's acceptance given that every draft before it was
        accepted, each position's counts shrunk toward the estimate of the position before it."""
        weight = self.config.prior_accepted + self.config.prior_rejected
        estimate = self.config.prior_accepted / weight
        estimates = []
        for reached, passed in zip(self.reached, self.passed, strict=True):
            estimate = (passed + weight * estimate) / (reached + weight)
            estimates.append(estimate)
        return estimates

    def expected_tokens(self, width: Candidate) -> float:
        """Expected tokens one request commits in a step verifying ``width`` positions, or the tree
        of a :class:`TreeStep` (its steps' decayed mean, shrunk toward the widest chain's estimate)."""
        if isinstance(width, TreeStep):
            weight = self.config.prior_accepted + self.config.prior_rejected
            prior = self.expected_tokens(max(self.config.widths))
            tokens = self.tree_tokens.get(width.nodes, 0.0) + weight * prior
            return tokens / (self.tree_requests.get(width.nodes, 0.0) + weight)
        tokens, survive = 1.0, 1.0
        for accept in self.draft_acceptance()[: width - 1]:
            survive *= accept
            tokens += survive
        return tokens

    def candidates(self, tree: TreeStep | None = None) -> tuple[Candidate, ...]:
        """What a step may verify: the configured widths, or with ``tree`` (the tree this step could
        verify) plain decoding and the tree, which takes the drafting widths' place.  Widths of
        ``[1]`` alone stay plain decoding."""
        widths = self.config.widths
        if tree is None or max(widths) <= 1:
            return widths
        return (*(k for k in widths if k <= 1), tree)

    def choose(self, bs: int, tree: TreeStep | None = None) -> Candidate:
        """The width to verify at this step for a batch of ``bs`` requests, or ``tree`` (the tree
        this step could verify instead of the chain, if any)."""
        bucket = batch_bucket(bs)
        step = self.steps.get(bucket, 0)
        self.steps[bucket] = step + 1
        candidates = self.candidates(tree)
        measured = [k for k in candidates if (bucket, k) in self.timings]
        if not measured:
            return candidates[0]
        best = max(measured, key=lambda k: self.expected_throughput(bs, k))
        neighbours = self.neighbours(best, candidates)
        untried = [k for k in neighbours if (bucket, k) not in self.timings]
        if untried:
            return untried[0]
        if self.config.confirm_promising:
            newest = {k: self.expected_throughput(bs, k, newest=True) for k in neighbours}
            most_promising = max(neighbours, key=newest.__getitem__, default=None)
            if most_promising is not None and newest[most_promising] > self.expected_throughput(bs, best):
                return most_promising
        if neighbours and step % self.config.explore_every == self.config.explore_every - 1:
            return min(neighbours, key=lambda k: self.timings[bucket, k].measured_at)
        return best

    def neighbours(self, width: Candidate, candidates: Sequence[Candidate] | None = None) -> list[Candidate]:
        """The candidates (default: the configured widths) just below and just above ``width``: the
        ones worth re-measuring.

        Probing only the neighbours keeps exploration cheap (from plain decoding the policy probes
        the narrowest drafting width, never the whole block) and still lets it climb step by step
        when acceptance or load changes.
        """
        widths = self.config.widths if candidates is None else candidates
        i = widths.index(width)
        return [widths[j] for j in (i - 1, i + 1) if 0 <= j < len(widths)]

    def expected_throughput(self, bs: int, width: Candidate, *, newest: bool = False) -> float:
        """Expected committed tokens per second at this width (needs a measured step time): by its
        median step time, or with ``newest`` by its newest step time alone."""
        timing = self.timings[batch_bucket(bs), width]
        seconds = timing.recent[-1] if newest else timing.seconds
        return bs * self.expected_tokens(width) / max(seconds, 1e-9)

    def step_started(self, now: float) -> None:
        """A decode step starts: the previous one is timed from its start to now.

        Start to start is the whole scheduler cycle a width costs (its passes, the host's batch
        preparation and result processing, the other server processes sharing the cores), not
        only the worker's part.
        """
        if self.open_step is not None:
            bs, width, started = self.open_step
            self.record_time(bs, width, now - started)
        self.open_step = None

    def step_finished(
        self,
        bs: int,
        width: Candidate,
        started: float,
        num_correct_drafts: Sequence[int],
        judged_drafts: Sequence[int] | None = None,
    ) -> None:
        """A step that started at ``started`` accepted these drafts (timed when the next one starts);
        ``judged_drafts`` as in :meth:`record_acceptance`."""
        if isinstance(width, TreeStep):
            self.record_tree_acceptance(width, num_correct_drafts)
        else:
            self.record_acceptance(width, num_correct_drafts, judged_drafts)
        self.open_step = (bs, width, started)

    def cycle_interrupted(self) -> None:
        """Something else ran since the last step (a prefill): that cycle times no width."""
        self.open_step = None

    def record_time(self, bs: int, width: Candidate, seconds: float) -> None:
        """One step's wall time at this batch size and width."""
        bucket = batch_bucket(bs)
        timing = self.timings.get((bucket, width))
        if timing is None:
            recent = collections.deque(maxlen=self.config.time_window)
            timing = self.timings[bucket, width] = _Timing(recent, 0)
        timing.recent.append(seconds)
        timing.measured_at = self.steps.get(bucket, 0)

    def record_acceptance(
        self, width: int, num_correct_drafts: Sequence[int], judged_drafts: Sequence[int] | None = None
    ) -> None:
        """One step's accepted drafts per request, of the ``judged_drafts`` its verify scored (default:
        all ``width - 1``; fewer where a staged verify stopped early, whose later drafts were neither
        accepted nor rejected).  The counts decay at every step, plain decoding's
        too: while the policy decodes plainly it sees no drafts, and evidence from before (often the
        unlucky run of rejections that made it stop drafting) must fade, or one bad stretch would
        keep it from drafting long after the text has changed."""
        self._decay()
        if width <= 1:
            return
        judged = judged_drafts if judged_drafts is not None else [width - 1] * len(num_correct_drafts)
        for accepted, scored in zip(num_correct_drafts, judged, strict=True):
            # Drafts 1..accepted were accepted; draft accepted + 1 was rejected if the step verified it.
            for depth in range(min(accepted + 1, scored)):
                self.reached[depth] += 1
            for depth in range(min(accepted, scored)):
                self.passed[depth] += 1

    def record_tree_acceptance(self, tree: TreeStep, num_correct_drafts: Sequence[int]) -> None:
        """One tree step's accepted drafts per request (its walk's depth); every count decays, as
        at a chain step."""
        self._decay()
        self.tree_requests[tree.nodes] = self.tree_requests.get(tree.nodes, 0.0) + len(num_correct_drafts)
        committed = sum(int(accepted) + 1 for accepted in num_correct_drafts)
        self.tree_tokens[tree.nodes] = self.tree_tokens.get(tree.nodes, 0.0) + committed

    def _decay(self) -> None:
        """Age every acceptance count by one step (``accept_decay``)."""
        decay = self.config.accept_decay
        for depth in range(len(self.reached)):
            self.reached[depth] *= decay
            self.passed[depth] *= decay
        for nodes in self.tree_requests:
            self.tree_requests[nodes] *= decay
            self.tree_tokens[nodes] *= decay
