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
step 40% longer.  So the worker measures them on the target's linears and lm_head at startup
(:func:`fastest_product`) unless told.

There, what makes ``F.linear`` slow at a few rows is MKL packing the weight again on every call
(a small-row GEMM copies its panels before multiplying; the one-row product is a GEMV and does
not).  :func:`packed_product` packs each weight once (MKL's ``cblas_sgemm_pack``, through
``torch.ops.mkl._mkl_reorder_linear_weight``, the op PyTorch's inductor uses for frozen CPU
linears) and multiplies by the packed copy: SmolLM2's 30 layers at 4 rows 17 ms against
``F.linear``'s 23, the lm_head 3.6 ms against 5.3 (2026-12-06, bench/README.md).  The packed copy
costs about a third more memory than the weight (MKL pads its panels), kept beside it for the
server's life.

On a CPU where MKL's GEMM is slow at any row count (an AMD EPYC, 2026-12-07: SmolLM2's 30 layers
by ``F.linear`` 37 ms at one row, 55 at 16, 131 at 80), oneDNN's GEMM over a weight reordered
once (``torch.ops.mkldnn._reorder_linear_weight`` and ``_linear_pointwise``, the ops PyTorch's
inductor uses for frozen CPU linears through oneDNN) took 21, 27 and 90 ms, the lm_head at 16
rows 7.6 ms against 20: :func:`onednn_product`, a third "packed" product, kept and timed like
MKL's (bench/README.md).

The faster product is used only where it is switched on: inside :func:`small_batch_linears` (the
DFLASH worker's decode step on a CPU device), for float32 CPU tensors of ``MIN_ROWS..MAX_ROWS``
rows (``PACKED_MAX_ROWS`` for the packed product, a whole batch's blocks), when
``SGLANG_DFLASH_CPU_SMALL_BATCH_LINEAR`` is ``auto`` (the default) and the startup measurement
found one faster, or ``1`` (``mm(W, x.T)``), ``packed`` or ``onednn``.  Everything else, prefill
and plain decoding among it, keeps ``F.linear``.  The products sum in a different order, so
results differ in the last float32 bits; greedy output stays the target's (the serving tests
compare it with plain decoding).
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Callable, Iterator, Sequence

import torch
import torch.nn.functional as F

ENV = "SGLANG_DFLASH_CPU_SMALL_BATCH_LINEAR"  # auto (measured), 1, packed, onednn or 0 (read by the worker)
SETTINGS = ("auto", "1", "packed", "onednn", "0")
# The products: mm(W, x.T), and MKL's and oneDNN's GEMMs over a once-reordered weight.
MM, PACKED, ONEDNN = "mm", "packed", "onednn"
PACKED_PRODUCTS = (PACKED, ONEDNN)  # those that keep a reordered copy of each weight
# The few-row product must beat F.linear by this factor at startup to be used: the two differ by
# a few percent where neither wins, and a step takes many such products.
PAYS_BELOW = 0.9
# A packed product pays wherever it is not slower: it gains least on the lm_head (one weight read
# from memory, 0.82-1.0 of F.linear's time at 4 rows) and most on the layers' smaller weights
# (0.70 over SmolLM2's step at 4 rows).  Timed on the lm_head alone against 0.9, it was turned down
# in 2 of 8 startups on this Xeon, each such server a fifth slower; the worker now times the whole
# step's weights (0.70, the same in every startup).
PACKED_PAYS_BELOW = 1.0
MIN_ROWS, MAX_ROWS = 2, 16  # one row is a matrix-vector product already; past 16 F.linear catches up
# The packed product keeps beating F.linear far past 16 rows (SmolLM2's 30 layers at 64 rows: 72 ms
# against 93, at 256: 243 against 259), so it takes the verify and draft blocks of a whole batch.
PACKED_MAX_ROWS = 256
# The rows MKL and oneDNN pack a weight for.  The packed copy serves any row count, but its GEMM is tuned to
# this one: packed for 4 rows, 16 rows cost 44 ms over the 30 layers and 64 rows 93 (F.linear's 46
# and 93); packed for 128, 36 and 72, 1-8 rows the same (bench/results/2026-12-06-cpu-packed-for-
# 128-rows/linear-rows).
PACK_FOR_ROWS = 128
# Rows whose few-row product costs about one row's: it reads the weight once and the arithmetic
# hides behind the read.  Measured with mm(W, x.T), the 49152 x 576 lm_head took 15-21 ms for 1-4
# rows and 37 ms for 8; packed for PACK_FOR_ROWS it takes 7.7 ms for 4 and 8.5 for 8 (2026-12-06),
# but the chain's lm_head column passes of 8 rows moved its step within a run's spread, so they
# keep 4.  A tree step's walk reads the lm_head for more rows a call (tree_verify.WALK_MAX_ROWS).
CHEAP_ROWS = 4

_active: str | None = None  # the product inside small_batch_linears, None outside


@contextlib.contextmanager
def small_batch_linears(product: bool | str | None = True) -> Iterator[None]:
    """Within the block, :func:`linear` (and the host's hooked linears) use the few-row
    ``product`` for float32 CPU inputs of ``MIN_ROWS`` to :func:`max_rows` rows: ``True`` or ``"mm"``
    ``mm(W, x.T)``, ``"packed"`` :func:`packed_product`, ``"onednn"`` :func:`onednn_product`;
    ``False`` or ``None`` changes nothing."""
    global _active
    previous = _active
    _active = MM if product is True else (product or None)
    try:
        yield
    finally:
        _active = previous


def applies(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether ``linear(x, weight)`` takes the few-rows path now."""
    if _active is None or x.device.type != "cpu" or x.dim() == 0:
        return False
    if x.dtype != torch.float32 or weight.dtype != torch.float32 or weight.dim() != 2:
        return False
    return MIN_ROWS <= x.numel() // max(x.shape[-1], 1) <= max_rows(weight)


def takes_packed(weight: torch.Tensor) -> bool:
    """Whether ``weight`` takes a packed product now: ``"packed"`` or ``"onednn"`` is active and it
    is a parameter (the weights they pack; a weight made per call would be packed per call)."""
    return _active in PACKED_PRODUCTS and isinstance(weight, torch.nn.Parameter)


def max_rows(weight: torch.Tensor) -> int:
    """The most rows the active product takes for ``weight``: a packed product's where
    :func:`takes_packed`, ``mm(W, x.T)``'s otherwise."""
    return PACKED_MAX_ROWS if takes_packed(weight) else MAX_ROWS


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``F.linear(x, weight, bias)``, computed as ``mm(weight, x.T).T`` where :func:`applies`."""
    if not applies(x, weight):
        return F.linear(x, weight, bias)
    return few_row_product(x, weight, bias)


def few_row_product(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``x @ weight.T (+ bias)`` by the active product, for callers that checked :func:`applies`:
    :func:`packed_product` or :func:`onednn_product` for parameters when ``"packed"`` or
    ``"onednn"`` is active, ``mm(weight, x.T).T`` else."""
    if takes_packed(weight):
        return _packed_multiply(_active)(x, weight, bias)
    return mm_product(x, weight, bias)


def mm_product(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``mm(weight, x.T).T (+ bias)`` in ``x``'s leading shape."""
    rows = x.reshape(-1, x.shape[-1])
    out = torch.mm(weight, rows.t()).t().contiguous()
    if bias is not None:
        out += bias
    return out.view(*x.shape[:-1], weight.shape[0])


def _has_ops(library_available: Callable[[], bool], namespace: str, ops: tuple[str, ...]) -> bool:
    """Whether ``library_available()`` and ``torch.ops.<namespace>`` has every op of ``ops``."""
    table = getattr(torch.ops, namespace, None)
    try:
        return library_available() and all(hasattr(table, op) for op in ops)
    except RuntimeError:  # an op namespace without the op
        return False


def packed_available() -> bool:
    """Whether this torch has MKL's packed GEMM ops (x86 builds with MKL; not ARM)."""
    return _has_ops(torch.backends.mkl.is_available, "mkl", ("_mkl_reorder_linear_weight", "_mkl_linear"))


def onednn_available() -> bool:
    """Whether this torch has oneDNN's reordered-weight linear ops (builds with oneDNN)."""
    return _has_ops(
        torch.backends.mkldnn.is_available, "mkldnn", ("_reorder_linear_weight", "_linear_pointwise")
    )


# (product, id(weight)) -> (a weak reference to it, its version when packed, the packed copy).
# Weights are parameters that live as long as the server; the weak reference drops the entry with
# the weight, and the version repacks a weight written in place (a weight update).
_packed: dict[tuple[str, int], tuple[weakref.ref, int, torch.Tensor]] = {}


def _reorder(weight: torch.Tensor, product: str) -> torch.Tensor:
    """``weight`` reordered for ``product``'s GEMM, tuned to :data:`PACK_FOR_ROWS` rows."""
    if product == ONEDNN:
        return torch.ops.mkldnn._reorder_linear_weight(weight.detach(), PACK_FOR_ROWS)
    return torch.ops.mkl._mkl_reorder_linear_weight(weight.detach(), PACK_FOR_ROWS)


def packed_weight(weight: torch.Tensor, product: str = PACKED) -> torch.Tensor:
    """``product``'s packed copy of ``weight`` ([N, K] float32; MKL's by default), made on first
    use and kept."""
    key = (product, id(weight))
    entry = _packed.get(key)
    if entry is not None and entry[0]() is weight and entry[1] == weight._version:
        return entry[2]
    # One copy serves every row count (packed_product_is_exact checks it); PACK_FOR_ROWS tunes it.
    packed = _reorder(weight, product)
    _packed[key] = (weakref.ref(weight, lambda _, key=key: _packed.pop(key, None)), weight._version, packed)
    return packed


def forget_packed(keep: str | None = None) -> None:
    """Drop every packed copy but ``keep``'s (after a weight update, none: loaders write
    ``param.data`` in place, which leaves a parameter's version as it was); the next product packs
    the new weights."""
    for key in [key for key in _packed if key[0] != keep]:
        del _packed[key]


def packed_product(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``x @ weight.T (+ bias)`` by MKL's GEMM over :func:`packed_weight`, in ``x``'s leading shape.

    ``_mkl_linear`` multiplies by the packed copy when the rows given equal the count it was told,
    and calls ``F.linear`` otherwise; it is told the actual rows, since the packed copy is the same
    for any (:func:`packed_product_is_exact` checks that at startup)."""
    rows = x.reshape(-1, x.shape[-1])
    out = torch.ops.mkl._mkl_linear(rows, packed_weight(weight), weight, bias, rows.shape[0])
    return out.view(*x.shape[:-1], weight.shape[0])


def onednn_product(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``x @ weight.T (+ bias)`` by oneDNN's GEMM over ``packed_weight(weight, ONEDNN)``, in ``x``'s
    leading shape (one reordered copy serves every row count: :func:`packed_product_is_exact`)."""
    rows = x.reshape(-1, x.shape[-1])
    out = torch.ops.mkldnn._linear_pointwise(rows, packed_weight(weight, ONEDNN), bias, "none", [None], "")
    return out.view(*x.shape[:-1], weight.shape[0])


def _packed_multiply(product: str) -> Callable[..., torch.Tensor]:
    """The multiply of packed product ``product`` (looked up at call time, so tests may wrap it)."""
    return onednn_product if product == ONEDNN else packed_product


def packed_product_is_exact(
    rows: range = range(MIN_ROWS, PACKED_MAX_ROWS + 1), product: str = PACKED
) -> bool:
    """Whether ``product`` (:func:`packed_product` by default, or :func:`onednn_product`) equals
    ``F.linear`` (to float32 rounding) at every row count in ``rows`` on this torch: the guard on one
    packed copy serving every row count.  The weight's sides are no multiple of the libraries'
    panel widths, so their edge cases run too."""
    if not (onednn_available() if product == ONEDNN else packed_available()):
        return False
    multiply = _packed_multiply(product)
    generator = torch.Generator().manual_seed(0)
    weight = torch.nn.Parameter(torch.randn(200, 72, generator=generator), requires_grad=False)
    bias = torch.randn(200, generator=generator)
    with torch.inference_mode():
        for count in rows:
            x = torch.randn(count, weight.shape[1], generator=generator)
            if not torch.allclose(multiply(x, weight, bias), F.linear(x, weight, bias), atol=1e-4):
                return False
    return True


def fastest_times(
    weights: torch.Tensor | Sequence[torch.Tensor],
    products: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]],
    rows: int = CHEAP_ROWS,
    repeats: int = 5,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Each of ``products``' fastest ms (by name) over ``rows`` rows of ``weights`` (one weight, or
    every weight of a step, each multiplied in turn) in ``repeats`` timings, the products taken in
    turns after one warm-up of each (other work on the machine only adds time, and in turns it
    falls on all of them; the packed product packs in its warm-up)."""
    weights = [weights] if isinstance(weights, torch.Tensor) else list(weights)
    inputs = {w.shape[1]: torch.randn(rows, w.shape[1], dtype=w.dtype) for w in weights}

    def ms(multiply: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> float:
        began = clock()
        for weight in weights:
            multiply(inputs[weight.shape[1]], weight)
        return (clock() - began) * 1e3

    times: dict[str, list[float]] = {name: [] for name in products}
    with torch.inference_mode():
        for multiply in products.values():
            ms(multiply)
        for _ in range(repeats):
            for name, multiply in products.items():
                times[name].append(ms(multiply))
    return {name: min(taken) for name, taken in times.items()}


def pays(product: str, few_ms: float, linear_ms: float) -> bool:
    """Whether ``product`` at ``few_ms`` pays against ``F.linear`` at ``linear_ms``: under
    :data:`PAYS_BELOW` of its time (:data:`PACKED_PAYS_BELOW` for the packed products)."""
    return few_ms < (PACKED_PAYS_BELOW if product in PACKED_PRODUCTS else PAYS_BELOW) * linear_ms


def fastest_product(
    weights: torch.Tensor | Sequence[torch.Tensor],
) -> tuple[str | None, dict[str, float]]:
    """The few-row product to use on this CPU, timed on ``weights`` (the target's linears and
    lm_head) in one round of turns with ``F.linear``: the fastest of :data:`MM`, :data:`PACKED` and
    :data:`ONEDNN` (the packed two where this torch has them and :func:`packed_product_is_exact`)
    that pays against ``F.linear``, else None; and every time measured (ms, by name).  Only the
    chosen product's packed copies are kept."""
    weights = [weights] if isinstance(weights, torch.Tensor) else list(weights)
    products: dict[str, Callable[..., torch.Tensor]] = {"F.linear": F.linear, MM: mm_product}
    for product in PACKED_PRODUCTS:
        if packed_product_is_exact(product=product):
            products[product] = _packed_multiply(product)
    times = fastest_times(weights, products)
    paying = [(times[p], p) for p in products if p != "F.linear" and pays(p, times[p], times["F.linear"])]
    chosen = min(paying)[1] if paying else None
    # The timing packed every weight for each packed product; a step multiplies by the chosen one's.
    forget_packed(keep=chosen)
    for weight in weights:  # a packed product packs parameters only: no other copy is kept
        if not isinstance(weight, torch.nn.Parameter):
            _packed.pop((chosen, id(weight)), None)
    return chosen, times


class SmallBatchLinear(torch.nn.Linear):
    """``nn.Linear`` computed by :func:`linear` (the same parameters and state dict)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)
