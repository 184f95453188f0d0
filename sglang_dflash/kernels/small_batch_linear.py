"""Linear layers over a few rows on CPU: ``torch.mm(weight, x.T)`` where ``F.linear`` is slow.

A DFLASH decode step on CPU multiplies every weight by a handful of rows: one request's verify
block (up to 16 positions), the drafter's block, the lm_head rows greedy acceptance asks for, the
committed tokens' context K/V.  For float32 with 2..16 rows, ``F.linear`` (MKL's ``x @ W.T``) is
2-3x slower than one row on the development CPU, while ``torch.mm(W, x.T)`` reads the weight once
as the one-row product does (SmolLM2's 3072 x 576 MLP weight, weights out of cache: 2.0-2.9 ms with
``F.linear`` at 2-4 rows, 1.1-1.6 ms with ``mm(W, x.T)``; the 49152 x 576 lm_head at 3 rows: 58 ms
against 17 ms).  bench/README.md has the measurements.

Not every CPU agrees: on a Xeon with AMX (2026-12-06), ``F.linear`` was as fast or faster at
4-16 rows (the lm_head at 4 rows: 9.1 ms against 12.1), and the few-row product made the DFLASH
step 40% longer.  So the worker measures both on the target's lm_head at startup
(:func:`few_row_product_pays`) unless told.

The faster product is used only where it is switched on: inside :func:`small_batch_linears` (the
DFLASH worker's decode step on a CPU device), for float32 CPU tensors of ``MIN_ROWS..MAX_ROWS``
rows, when ``SGLANG_DFLASH_CPU_SMALL_BATCH_LINEAR`` is ``auto`` (the default) and the startup
measurement found it faster, or ``1``.  Everything else, prefill and plain
decoding among it, keeps ``F.linear``.  The two products sum in a different order, so results
differ in the last float32 bits; greedy output stays the target's (the serving tests compare it
with plain decoding).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F

ENV = "SGLANG_DFLASH_CPU_SMALL_BATCH_LINEAR"  # auto (measured), 1 or 0 (read by the worker)
SETTINGS = ("auto", "1", "0")
# The few-row product must beat F.linear by this factor at startup to be used: the two differ by
# a few percent where neither wins, and a step takes many such products.
PAYS_BELOW = 0.9
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


def few_row_product_pays(
    weight: torch.Tensor,
    rows: int = CHEAP_ROWS,
    repeats: int = 5,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[bool, float, float]:
    """Whether :func:`few_row_product` beats ``F.linear`` over ``rows`` rows of ``weight`` on this
    CPU: (pays, its median ms, F.linear's median ms) over ``repeats`` timings each, after one
    warm-up; it pays below :data:`PAYS_BELOW` of ``F.linear``'s time."""
    x = torch.randn(rows, weight.shape[1], dtype=weight.dtype)

    def median_ms(product: Callable[[], torch.Tensor]) -> float:
        product()
        times = []
        for _ in range(repeats):
            began = clock()
            product()
            times.append((clock() - began) * 1e3)
        return sorted(times)[len(times) // 2]

    with torch.inference_mode():
        linear_ms = median_ms(lambda: F.linear(x, weight))
        few_ms = median_ms(lambda: few_row_product(x, weight))
    return few_ms < PAYS_BELOW * linear_ms, few_ms, linear_ms


class SmallBatchLinear(torch.nn.Linear):
    """``nn.Linear`` computed by :func:`linear` (the same parameters and state dict)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)
