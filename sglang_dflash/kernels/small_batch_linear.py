"""Linear layers over a few rows on CPU: ``torch.mm(weight, x.T)`` where ``F.linear`` is slow.

A DFLASH decode step on CPU multiplies every weight by a handful of rows: one request's verify
block (up to 16 positions), the drafter's block, the lm_head rows greedy acceptance asks for, the
committed tokens' context K/V.  For float32 with 2..16 rows, ``F.linear`` (MKL's ``x @ W.T``) is
2-3x slower than one row on the development CPU, while ``torch.mm(W, x.T)`` reads the weight once
as the one-row product does (SmolLM2's 3072 x 576 MLP weight, weights out of cache: 2.0-2.9 ms with
``F.linear`` at 2-4 rows, 1.1-1.6 ms with ``mm(W, x.T)``; the 49152 x 576 lm_head at 3 rows: 58 ms
against 17 ms).  bench/README.md has the measurements.

The faster product is used only where it is switched on: inside :func:`small_batch_linears` (the
DFLASH worker's decode step on a CPU device), for float32 CPU tensors of ``MIN_ROWS..MAX_ROWS``
rows, unless ``SGLANG_DFLASH_CPU_SMALL_BATCH_LINEAR=0``.  Everything else, prefill and plain
decoding among it, keeps ``F.linear``.  The two products sum in a different order, so results
differ in the last float32 bits; greedy output stays the target's (the serving tests compare it
with plain decoding).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
import torch.nn.functional as F

ENV = "SGLANG_DFLASH_CPU_SMALL_BATCH_LINEAR"  # "0": F.linear everywhere (read by the worker)
MIN_ROWS, MAX_ROWS = 2, 16  # one row is a matrix-vector product already; past 16 F.linear catches up
# Rows whose few-row product costs about one row's: it reads the weight once and the arithmetic
# hides behind the read (the 49152 x 576 lm_head: 15-21 ms for 1-4 rows, 37 ms for 8).
CHEAP_ROWS = 4

_active = False


@contextlib.contextmanager
def small_batch_linears(enabled: bool = True) -> Iterator[None]:
    """Within the block, :func:`linear` (and the host's hooked linears) use ``mm(W, x.T)`` for
    float32 CPU inputs of ``MIN_ROWS..MAX_ROWS`` rows; ``enabled=False`` changes nothing."""
    global _active
    previous = _active
    _active = enabled
    try:
        yield
    finally:
        _active = previous


def applies(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether ``linear(x, weight)`` takes the few-rows path now."""
    if not _active or x.device.type != "cpu" or x.dim() == 0:
        return False
    if x.dtype != torch.float32 or weight.dtype != torch.float32 or weight.dim() != 2:
        return False
    return MIN_ROWS <= x.numel() // max(x.shape[-1], 1) <= MAX_ROWS


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``F.linear(x, weight, bias)``, computed as ``mm(weight, x.T).T`` where :func:`applies`."""
    if not applies(x, weight):
        return F.linear(x, weight, bias)
    return few_row_product(x, weight, bias)


def few_row_product(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``mm(weight, x.T).T (+ bias)`` in ``x``'s leading shape, for callers that checked :func:`applies`."""
    rows = x.reshape(-1, x.shape[-1])
    out = torch.mm(weight, rows.t()).t().contiguous()
    if bias is not None:
        out += bias
    return out.view(*x.shape[:-1], weight.shape[0])


class SmallBatchLinear(torch.nn.Linear):
    """``nn.Linear`` computed by :func:`linear` (the same parameters and state dict)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)
