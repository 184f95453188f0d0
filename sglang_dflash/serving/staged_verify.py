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
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NamedTuple

import torch

from .. import speculative as spec
from .outputs import ColumnArgmax

# First-pass columns of a staged verify ("4", default), or "0": every verify in one pass.
STAGED_VERIFY_ENV = "SGLANG_DFLASH_STAGED_VERIFY"
DEFAULT_FIRST_COLUMNS = 4


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


def first_pass_columns() -> int:
    """``SGLANG_DFLASH_STAGED_VERIFY``: the first pass's columns (default 4), 0 for no staging."""
    value = os.environ.get(STAGED_VERIFY_ENV, str(DEFAULT_FIRST_COLUMNS)).strip()
    if not value.isdigit():
        raise ValueError(
            f"sglang-dflash: {STAGED_VERIFY_ENV} is {value!r}; expected a whole number of block "
            f"columns (default {DEFAULT_FIRST_COLUMNS}), or 0 to verify every block in one pass"
        )
    return int(value)


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
) -> StagedVerify:
    """Greedy-verify ``tokens`` [bs, width] ([bonus token, drafts] per request) in two passes.

    ``run_pass(requests, start, stop)`` scores block columns ``start .. stop - 1`` of ``requests``
    (batch rows), reading the KV of the columns before ``start`` that an earlier pass wrote.  The
    first pass scores columns ``[0, first)`` of every request; a request goes on to the second pass,
    columns ``[first, width)``, when its drafts 1 .. ``first`` all equal the target's argmax (the
    last of them is judged by the first pass's last column).  ``cheap_rows`` as in
    :func:`~sglang_dflash.speculative.greedy_accept_by_columns`.
    """
    bs, width = tokens.shape
    if not 0 < first < width:
        raise ValueError(f"a staged verify's first pass takes 1 to {width - 1} columns, got {first}")
    everyone = torch.arange(bs, device=tokens.device)
    head = run_pass(everyone, 0, first)
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
    if later.numel():
        tail = run_pass(later, first, width)
        tail_rows = argmax.rows(later, first, width)
        final[tail_rows], aux[tail_rows] = tail.final, tail.aux
    return StagedVerify(argmax, aux, int(later.numel()))
