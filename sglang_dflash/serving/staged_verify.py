"""A greedy verify in two passes: the target scores the first columns of every request's block,
then the rest only for the requests whose drafts all matched there.

On CPU a verify of 16 requests x 16 positions is compute-bound (256 rows through every linear), and
even one request's 16 rows cost more than its first 4, yet with tau about 2 only one request in six
or seven gets past its fourth draft: the positions after a request's first rejected draft are work
that no committed token reads.  The target is causal, so its argmax and captured features at block
column ``c`` depend only on columns ``0 .. c``: scoring columns ``[0, first)`` of every request,
then ``[first, width)`` of the requests still accepting, commits the same tokens, injects the same
features and writes the same KV at every committed position as one pass over the whole block (the
rest of each block lies past its new seq_len, where the next block writes before anything reads).
The worker stages every all-greedy CPU step with deferred verify logits
(:class:`~.outputs.DeferredLogits`) wider than ``first``; ``SGLANG_DFLASH_STAGED_VERIFY`` sets it.

The second pass is a whole pass through the target for a few requests, so it costs nearly what a
small batch's decode step costs: at 16 requests, two requests' dozen more tokens can be worth less
than the time it takes.  :class:`SecondPassGate` runs it only when the tokens it is expected to add
per millisecond beat the rate the steps commit tokens at; otherwise those requests commit what the
first pass verified (their ``first`` accepted tokens, the last one as the bonus token) and draft on
from there at the next step, as a verify of ``first`` columns would have.  Either way every
committed token is the target's; ``SGLANG_DFLASH_SECOND_PASS`` (auto, always, never) sets it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import NamedTuple

import torch

from .. import speculative as spec
from .outputs import ColumnArgmax

# First-pass columns of a staged verify ("4", default), or "0": every verify in one pass.
STAGED_VERIFY_ENV = "SGLANG_DFLASH_STAGED_VERIFY"
DEFAULT_FIRST_COLUMNS = 4
# When the second pass runs: "auto" (default, when it pays: SecondPassGate), "always", "never".
SECOND_PASS_ENV = "SGLANG_DFLASH_SECOND_PASS"
SECOND_PASS_POLICIES = ("auto", "always", "never")


class VerifyPass(NamedTuple):
    """One target pass over some requests' block columns: ``n`` requests x ``w`` columns, row-major."""

    final: torch.Tensor  # [n * w, H] final hidden states (what the lm_head reads)
    aux: torch.Tensor  # [n * w, K*H] the captured context features (what the drafter reads)
    logits: Callable[[torch.Tensor], torch.Tensor]  # final hidden rows -> float32 logits [rows, V]


class StagedVerify(NamedTuple):
    """A staged verify's result, shaped as one pass over the whole block of every request."""

    argmax: ColumnArgmax  # ``argmax(requests, start, stop)``, the first pass's columns already known
    aux: torch.Tensor  # [bs * width, K*H]; rows no pass scored are zero and lie past every commit
    second_pass_requests: int  # how many requests the second pass scored (0: it did not run)
    onward: torch.Tensor  # the requests whose drafts 1 .. first all matched (batch rows)
    cut_requests: int  # onward requests left at the first pass's columns (the gate said no)


def first_pass_columns() -> int:
    """``SGLANG_DFLASH_STAGED_VERIFY``: the first pass's columns (default 4), 0 for no staging."""
    value = os.environ.get(STAGED_VERIFY_ENV, str(DEFAULT_FIRST_COLUMNS)).strip()
    if not value.isdigit():
        raise ValueError(
            f"sglang-dflash: {STAGED_VERIFY_ENV} is {value!r}; expected a whole number of block "
            f"columns (default {DEFAULT_FIRST_COLUMNS}), or 0 to verify every block in one pass"
        )
    return int(value)


def second_pass_policy() -> str:
    """``SGLANG_DFLASH_SECOND_PASS``: when a staged verify's second pass runs (default ``auto``)."""
    value = os.environ.get(SECOND_PASS_ENV, "auto").strip().lower()
    if value not in SECOND_PASS_POLICIES:
        raise ValueError(
            f"sglang-dflash: {SECOND_PASS_ENV} is {value!r}; expected one of "
            f"{', '.join(SECOND_PASS_POLICIES)} (auto: when it adds tokens faster than the steps commit them)"
        )
    return value


class _Mean:
    """An exponentially weighted mean (None until the first sample) and its number of samples."""

    def __init__(self, weight: float) -> None:
        self.weight, self.value, self.count = weight, None, 0

    def add(self, sample: float) -> None:
        self.value = sample if self.value is None else self.value + self.weight * (sample - self.value)
        self.count += 1


class SecondPassGate:
    """Decides, each staged step, whether the second pass pays; learns what it needs as steps run.

    Running it for ``n`` onward requests over ``c`` columns each is worth it when the tokens it
    adds, ``n x`` (measured tokens a second pass of ``c`` columns adds per onward request: an
    adaptive width of 8 leaves it 4, the whole block 12), per millisecond it takes beat the rate
    the steps commit tokens at: then the steps' mean rate rises.  A pass's time is predicted on the
    line through the mean (rows, ms) of recent first passes and of recent second passes (a pass
    reads every weight whatever its rows, then pays per row; a second pass's time includes drafting
    its requests' later columns).  Until a second pass of that many columns has run
    ``trust_after`` times it runs; after ``explore_every`` cuts in a row it runs once anyway (so
    :meth:`pays` counts the cuts it answers), so that an unlucky first few (a request that went on
    and then accepted nothing more) cannot stop it for good.  ``always`` and ``never`` fix the
    answer.
    """

    def __init__(
        self, policy: str = "auto", weight: float = 0.1, trust_after: int = 3, explore_every: int = 8
    ) -> None:
        if policy not in SECOND_PASS_POLICIES:
            raise ValueError(f"SecondPassGate: policy is {policy!r}; expected one of {SECOND_PASS_POLICIES}")
        self.policy = policy
        self.rate = _Mean(weight)  # committed tokens per ms of a decode step
        self.weight, self.trust_after, self.explore_every = weight, trust_after, explore_every
        self.cuts_in_a_row = 0
        self.gains: dict[int, _Mean] = {}  # per second-pass columns: tokens added per onward request
        self.first_rows, self.first_ms = _Mean(weight), _Mean(weight)
        self.second_rows, self.second_ms = _Mean(weight), _Mean(weight)

    def observe_pass(self, second: bool, rows: int, ms: float) -> None:
        """A first (``second=False``) or second pass over ``rows`` block rows took ``ms``."""
        (self.second_rows if second else self.first_rows).add(rows)
        (self.second_ms if second else self.first_ms).add(ms)

    def observe_step(self, tokens: int, ms: float) -> None:
        """A decode step committed ``tokens`` (all its requests together) in ``ms``."""
        if ms > 0:
            self.rate.add(tokens / ms)

    def observe_gain(self, requests: int, columns: int, added_tokens: int) -> None:
        """A second pass over ``columns`` columns of ``requests`` onward requests let them commit
        ``added_tokens`` more than the first pass's columns alone would have."""
        if requests:
            self.gains.setdefault(columns, _Mean(self.weight)).add(added_tokens / requests)

    def predicted_ms(self, rows: int) -> float | None:
        """A second pass's time over ``rows`` rows (None until one has been measured)."""
        if self.second_ms.value is None:
            return None
        per_row = 0.0
        if self.first_rows.value is not None and abs(self.first_rows.value - self.second_rows.value) >= 1:
            per_row = (self.first_ms.value - self.second_ms.value) / (
                self.first_rows.value - self.second_rows.value
            )
        return max(self.second_ms.value + max(per_row, 0.0) * (rows - self.second_rows.value), 1e-3)

    def pays(self, requests: int, columns: int) -> bool:
        """Whether to run the second pass over ``columns`` columns of ``requests`` onward requests."""
        if self.policy != "auto":
            return self.policy == "always"
        ms = self.predicted_ms(requests * columns)
        gain = self.gains.get(columns)
        unknown = ms is None or self.rate.value is None or gain is None or gain.count < self.trust_after
        if unknown or requests * gain.value >= self.rate.value * ms:
            self.cuts_in_a_row = 0
            return True
        self.cuts_in_a_row += 1
        if self.cuts_in_a_row >= self.explore_every:
            self.cuts_in_a_row = 0
            return True
        return False


def stages_verify(first: int, width: int) -> bool:
    """Whether a step verifying ``width`` positions per request stages its verify with ``first``
    first-pass columns (0: never).  Measured on CPU (bench/README.md, "A staged verify"), it pays
    from one request up: a 16-row pass costs more than a 4-row one even where reading the weights
    dominates, and the second pass runs in about one step in six."""
    return 0 < first < width


def staged_verify(
    tokens: torch.Tensor,
    first: int,
    run_pass: Callable[[torch.Tensor, int, int], VerifyPass],
    cheap_rows: int = 1,
    gate: SecondPassGate | None = None,
    clock: Callable[[], float] = time.perf_counter,
    fill_drafts: Callable[[torch.Tensor], None] | None = None,
) -> StagedVerify:
    """Greedy-verify ``tokens`` [bs, width] ([bonus token, drafts] per request) in two passes.

    ``run_pass(requests, start, stop)`` scores block columns ``start .. stop - 1`` of ``requests``
    (batch rows), reading the KV of the columns before ``start`` that an earlier pass wrote.  The
    first pass scores columns ``[0, first)`` of every request; a request goes on to the second pass,
    columns ``[first, width)``, when its drafts 1 .. ``first`` all equal the target's argmax (the
    last of them is judged by the first pass's last column), if ``gate`` (default: always) says
    it pays; otherwise their verify stops at the first pass's columns (:meth:`ColumnArgmax.cut`).
    ``cheap_rows`` as in :func:`~sglang_dflash.speculative.greedy_accept_by_columns`.
    ``fill_drafts(requests)``, if given, writes the drafts after column ``first`` of those requests
    into ``tokens`` before their second pass: only the requests that get there need them.
    """
    bs, width = tokens.shape
    if not 0 < first < width:
        raise ValueError(f"a staged verify's first pass takes 1 to {width - 1} columns, got {first}")
    gate = gate if gate is not None else SecondPassGate("always")
    everyone = torch.arange(bs, device=tokens.device)
    started = clock()
    head = run_pass(everyone, 0, first)
    gate.observe_pass(False, bs * first, (clock() - started) * 1e3)
    final = head.final.new_zeros((bs * width, head.final.shape[-1]))
    aux = head.aux.new_zeros((bs * width, head.aux.shape[-1]))
    argmax = ColumnArgmax(final, width, head.logits)
    head_rows = argmax.rows(everyone, 0, first)
    final[head_rows], aux[head_rows] = head.final, head.aux
    # The same by-columns acceptance the step runs next, over the first pass's columns: the step's
    # own call then finds those rows computed (ColumnArgmax keeps them).
    accepted, emitted = spec.greedy_accept_by_columns(tokens[:, 1:first], argmax, cheap_rows)
    onward = (accepted == first - 1) & (emitted[:, first - 1] == tokens[:, first])
    argmax.settle(everyone[~onward], first, width)
    later = everyone[onward]
    rows = later.numel() * (width - first)
    if not rows:
        return StagedVerify(argmax, aux, 0, later, 0)
    if not gate.pays(later.numel(), width - first):
        argmax.cut(later, first)
        return StagedVerify(argmax, aux, 0, later, later.numel())
    started = clock()
    if fill_drafts is not None:
        fill_drafts(later)
    tail = run_pass(later, first, width)
    gate.observe_pass(True, rows, (clock() - started) * 1e3)
    tail_rows = argmax.rows(later, first, width)
    final[tail_rows], aux[tail_rows] = tail.final, tail.aux
    return StagedVerify(argmax, aux, later.numel(), later, 0)


def learn_second_pass(
    gate: SecondPassGate, staged: StagedVerify, accept_lens: torch.Tensor, first: int
) -> None:
    """What a staged step's second pass added: its onward requests' tokens past the ``first`` that
    the first pass's columns alone would have committed."""
    if staged.second_pass_requests:
        added = int((accept_lens[staged.onward] - first).sum())
        gate.observe_gain(staged.second_pass_requests, staged.argmax.width - first, added)


def judged_acceptance(
    num_correct_drafts: torch.Tensor, staged: StagedVerify | None, first: int
) -> tuple[list[int], list[int] | None]:
    """(accepted drafts, drafts judged) per request for the width policy: a request whose verify
    was cut after the first pass's columns accepted all ``first`` drafts judged there, and its
    later ones were never judged (not rejected).  ``None``: every request judged the whole width."""
    if staged is None or not staged.cut_requests:
        return num_correct_drafts.tolist(), None
    accepted = num_correct_drafts.clone()
    judged = torch.full_like(accepted, staged.argmax.width - 1)
    accepted[staged.onward], judged[staged.onward] = first, first
    return accepted.tolist(), judged.tolist()
