"""Load- and acceptance-adaptive verify width: how many block positions one decode step verifies.

The drafter always drafts the whole block in one pass; the target verifies only the first ``k``
positions (the bonus token + ``k - 1`` drafts), ``k`` from a small fixed set of widths.  ``k = 1``
verifies the bonus token alone: plain decoding (the drafter does not run).  Verifying fewer
positions is a truncation of the block, so greedy output stays the target's and sampled output
stays lossless; only the cost and the expected tokens per step change.

The policy picks, per step, the width with the highest expected throughput for the batch::

    tokens(k)  = bs * (1 - a**k) / (1 - a)       expected committed tokens (accept_lens) per step
    seconds(k) = measured step time at this batch-size bucket and width (decaying mean)
    k*         = argmax tokens(k) / seconds(k)

``a`` is the probability that a draft is accepted given that the previous one was, estimated
from the steps that verified drafts (a censored geometric count: ``s`` accepted drafts, ``f``
rejections seen; a step that accepted all ``k - 1`` drafts says nothing about position ``k``).
Both the acceptance counts and the step times decay, so the choice follows the text and the load.
Widths never measured at a bucket are tried once first; every ``explore_every`` steps at a bucket
the neighbouring width (next narrower or wider candidate) measured longest ago is tried again, so
a drafter that improves (or a load that drops) is noticed even while plain decoding is chosen,
at the cost of one narrow drafting step per ``explore_every`` steps.  Everything the policy reads
is on the host.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

DEFAULT_WIDTHS = (1, 4, 8, 16)
# Where the plugin keeps the checked settings on SGLang's ServerArgs for the worker.
ADAPTIVE_ATTR = "_sglang_dflash_adaptive"
ADAPTIVE_CONFIG_FLAG = "--speculative-adaptive-config"


@dataclasses.dataclass(frozen=True)
class AdaptiveConfig:
    """Settings of :class:`VerifyWidthPolicy` (``--speculative-adaptive-config`` JSON, same keys)."""

    widths: tuple[int, ...] = DEFAULT_WIDTHS  # candidate verify widths (capped at the block size)
    explore_every: int = 32  # steps per batch-size bucket between re-measurements
    accept_decay: float = 0.9  # per-step decay of the acceptance counts
    time_decay: float = 0.7  # weight of the previous mean step time when a new one is measured
    prior_accepted: float = 1.0  # pseudo-counts: before any evidence a = 0.5
    prior_rejected: float = 1.0

    def __post_init__(self) -> None:
        widths = self.widths
        if (
            not isinstance(widths, (list, tuple))
            or not widths
            or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in widths)
        ):
            raise ValueError(f"{ADAPTIVE_CONFIG_FLAG}: widths is {widths!r}; expected integers >= 1")
        object.__setattr__(self, "widths", tuple(sorted(set(widths))))
        if (
            isinstance(self.explore_every, bool)
            or not isinstance(self.explore_every, int)
            or self.explore_every < 2
        ):
            raise ValueError(
                f"{ADAPTIVE_CONFIG_FLAG}: explore_every is {self.explore_every!r}; expected an integer >= 2"
            )
        for name in ("accept_decay", "time_decay"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0 <= value < 1:
                raise ValueError(f"{ADAPTIVE_CONFIG_FLAG}: {name} is {value!r}; expected a number in [0, 1)")
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
        """The widths this block size can verify: those <= block_size, plus the whole block."""
        widths = sorted({k for k in self.widths if k <= block_size} | {block_size})
        return dataclasses.replace(self, widths=tuple(widths))


def _parse_json(text: str, value: str, expected: str) -> Any:
    """``text`` as JSON; an error naming the flag's ``value`` and what was ``expected`` otherwise."""
    try:
        return json.loads(text)
    except ValueError as e:
        raise ValueError(f"{ADAPTIVE_CONFIG_FLAG} is {value!r}; expected {expected} ({e})") from e


def expected_accept_lens(accept_prob: float, width: int) -> float:
    """Expected tokens committed by one step verifying ``width`` positions: ``sum a**i, i < width``."""
    if accept_prob >= 1.0:
        return float(width)
    return (1.0 - accept_prob**width) / (1.0 - accept_prob)


def batch_bucket(bs: int) -> int:
    """Batch sizes share step-time measurements per power of two (1, 2, 4, 8, ...)."""
    return 1 << max(0, int(bs).bit_length() - 1)


@dataclasses.dataclass
class _Timing:
    seconds: float  # decaying mean step time
    measured_at: int  # the bucket's step count when last measured


class VerifyWidthPolicy:
    """Chooses each step's verify width from acceptance seen so far and measured step times."""

    def __init__(self, config: AdaptiveConfig) -> None:
        self.config = config
        self.accepted = 0.0  # decayed count of accepted drafts
        self.rejected = 0.0  # decayed count of rejections (a step that stopped before its last draft)
        self.timings: dict[tuple[int, int], _Timing] = {}
        self.steps: dict[int, int] = {}  # per bucket

    @property
    def accept_prob(self) -> float:
        """Estimated probability that the next draft is accepted after an accepted one."""
        s = self.accepted + self.config.prior_accepted
        return s / (s + self.rejected + self.config.prior_rejected)

    def choose(self, bs: int) -> int:
        """The width to verify at this step for a batch of ``bs`` requests."""
        bucket = batch_bucket(bs)
        step = self.steps.get(bucket, 0)
        self.steps[bucket] = step + 1
        widths = self.config.widths
        unmeasured = [k for k in widths if (bucket, k) not in self.timings]
        if unmeasured:
            return unmeasured[0]
        best = max(widths, key=lambda k: self.expected_throughput(bs, k))
        neighbours = self.neighbours(best)
        if neighbours and step % self.config.explore_every == self.config.explore_every - 1:
            return min(neighbours, key=lambda k: self.timings[bucket, k].measured_at)
        return best

    def neighbours(self, width: int) -> list[int]:
        """The candidate widths just below and just above ``width``: the ones worth re-measuring.

        Probing only the neighbours keeps exploration cheap (from plain decoding the policy probes
        the narrowest drafting width, never the whole block) and still lets it climb step by step
        when acceptance or load changes.
        """
        widths = self.config.widths
        i = widths.index(width)
        return [widths[j] for j in (i - 1, i + 1) if 0 <= j < len(widths)]

    def expected_throughput(self, bs: int, width: int) -> float:
        """Expected committed tokens per second at this width (needs a measured step time)."""
        seconds = self.timings[batch_bucket(bs), width].seconds
        return bs * expected_accept_lens(self.accept_prob, width) / max(seconds, 1e-9)

    def observe(self, bs: int, width: int, seconds: float, num_correct_drafts: Sequence[int] | None) -> None:
        """Fold in one finished step: its wall time and, per request, the drafts it accepted."""
        bucket = batch_bucket(bs)
        previous = self.timings.get((bucket, width))
        if previous is not None:
            decay = self.config.time_decay
            seconds = decay * previous.seconds + (1 - decay) * seconds
        self.timings[bucket, width] = _Timing(seconds, self.steps.get(bucket, 0))
        if width > 1 and num_correct_drafts:
            decay = self.config.accept_decay
            self.accepted = decay * self.accepted + sum(num_correct_drafts)
            self.rejected = decay * self.rejected + sum(1 for n in num_correct_drafts if n < width - 1)
