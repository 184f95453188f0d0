"""What a verify row costs on this CPU: one decode step's linears at 1..64 rows, each product.

A DFLASH step multiplies every target weight by ``bs x width`` rows where plain decoding multiplies
it by ``bs``.  Whether that is nearly free (memory-bound: the weight is read once either way) or
costs in proportion to the rows (compute-bound) decides which verify widths can pay for themselves,
and it depends on the CPU and its thread count.  This times the linears of a Llama-shaped model
(SmolLM2-135M's by default: 30 layers of qkv 960x576, o 576x576, gate_up 3072x576, down 576x1536,
distinct weights so they stream from memory as in a step) at each row count with ``F.linear`` and
with the few-row products the worker chooses from (``mm(W, x.T)``, where torch has MKL the
packed product, packed for 4 rows and for ``PACK_FOR_ROWS``, and where it has oneDNN oneDNN's
GEMM over weights reordered for ``PACK_FOR_ROWS``: ``kernels/small_batch_linear.py``),
and the same products on one layer's weights kept in cache (GFLOP/s of the kernel itself).

    taskset -c 0 python bench/cpu_linear_rows.py --threads 1 --out bench/results/<run>/linear-rows

Writes ``rows.json``, ``results.md`` and ``results.png`` (ms per step's linears against rows).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from sglang_dflash.bench.report import agg_pyplot, save_figure, write_markdown
from sglang_dflash.kernels import small_batch_linear

# (out, in) of one SmolLM2-135M layer's linears: fused qkv, o, fused gate_up, down.
SMOLLM2_LAYER = ((960, 576), (576, 576), (3072, 576), (576, 1536))
Product = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def packed_for(pack_rows: int) -> Product:
    """MKL's GEMM over a copy of each weight packed once for ``pack_rows`` rows (the worker's
    ``packed`` product; the row count tunes the packed GEMM, any count multiplies correctly)."""
    copies: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def product(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        entry = copies.get(id(w))
        if entry is None or entry[0] is not w:
            entry = copies[id(w)] = (w, torch.ops.mkl._mkl_reorder_linear_weight(w, pack_rows))
        return torch.ops.mkl._mkl_linear(x, entry[1], w, None, x.shape[0])

    return product


PRODUCTS: dict[str, Product] = {
    "F.linear": lambda x, w: F.linear(x, w),
    "mm(W, x.T)": lambda x, w: torch.mm(w, x.t()),
}
if small_batch_linear.packed_available():  # x86 torch builds with MKL
    PACK_NOW = small_batch_linear.PACK_FOR_ROWS
    PRODUCTS["packed for 4 rows"] = packed_for(4)  # the worker's packing before 2026-12-06's second change
    PRODUCTS[f"packed for {PACK_NOW} rows"] = packed_for(PACK_NOW)
if small_batch_linear.onednn_available():  # torch builds with oneDNN
    # The worker's own product: reordered once per weight for PACK_FOR_ROWS rows.
    PRODUCTS[f"oneDNN for {small_batch_linear.PACK_FOR_ROWS} rows"] = small_batch_linear.onednn_product


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    """The median wall time of ``run`` over ``repeats`` calls, after one warm-up call."""
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def step_linears_ms(layers: list[list[torch.Tensor]], rows: int, product, repeats: int) -> float:
    """Milliseconds for every layer's linears at ``rows`` rows (weights streamed from memory)."""
    inputs = {w.shape[1]: torch.randn(rows, w.shape[1]) for w in layers[0]}
    return 1e3 * median_seconds(
        lambda: [product(inputs[w.shape[1]], w) for ws in layers for w in ws], repeats
    )


def in_cache_gflops(weights: list[torch.Tensor], rows: int, product, calls: int) -> float:
    """GFLOP/s of ``product`` over one layer's weights called again and again (kept in cache)."""
    inputs = {w.shape[1]: torch.randn(rows, w.shape[1]) for w in weights}
    flops = 2 * rows * sum(w.numel() for w in weights) * calls
    seconds = median_seconds(
        lambda: [product(inputs[w.shape[1]], w) for _ in range(calls) for w in weights], 5
    )
    return flops / seconds / 1e9


def write_report(out: str, rows: list[dict], threads: int) -> None:
    """``results.md`` (one row per row count) and ``results.png``."""
    names = list(PRODUCTS)
    lines = [
        f"Linears of one decode step (ms, weights from memory) and in-cache GFLOP/s, {threads} thread(s)",
        "",
        "| rows | "
        + " | ".join(f"{n} ms" for n in names)
        + " | "
        + " | ".join(f"{n} GFLOP/s" for n in names)
        + " |",
        "|---|" + "---|" * (2 * len(names)),
    ]
    for r in rows:
        ms = " | ".join(f"{r['step_ms'][n]:.1f}" for n in names)
        gf = " | ".join(f"{r['in_cache_gflops'][n]:.1f}" for n in names)
        lines.append(f"| {r['rows']} | {ms} | {gf} |")
    write_markdown(os.path.join(out, "results.md"), lines)
    plt = agg_pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name in names:
        ax.plot([r["rows"] for r in rows], [r["step_ms"][name] for r in rows], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("rows (requests x verify width)")
    ax.set_ylabel("ms for one step's linears")
    ax.set_title(f"{threads} thread(s)")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, os.path.join(out, "results.png"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rows", default="1,2,4,8,12,16,32,64", help="comma-separated row counts")
    parser.add_argument("--layers", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    try:
        row_counts = [int(r) for r in args.rows.split(",")]
    except ValueError:
        raise SystemExit(f"--rows is {args.rows!r}; expected comma-separated integers >= 1") from None
    if not row_counts or min(row_counts) < 1 or args.threads < 1 or args.layers < 1:
        raise SystemExit(
            f"--rows {args.rows!r}, --threads {args.threads}, --layers {args.layers}; expected integers >= 1"
        )
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    generator = torch.Generator().manual_seed(0)
    layers = [
        [torch.randn(shape, generator=generator) for shape in SMOLLM2_LAYER] for _ in range(args.layers)
    ]
    from tqdm import tqdm

    rows = []
    for count in tqdm(row_counts, desc="rows", unit="count"):
        rows.append(
            {
                "rows": count,
                "step_ms": {n: step_linears_ms(layers, count, p, args.repeats) for n, p in PRODUCTS.items()},
                "in_cache_gflops": {n: in_cache_gflops(layers[0], count, p, 20) for n, p in PRODUCTS.items()},
            }
        )
    with open(os.path.join(args.out, "rows.json"), "w", encoding="utf-8") as f:
        json.dump({"args": vars(args), "torch": torch.__version__, "rows": rows}, f, indent=1)
    write_report(args.out, rows, args.threads)


if __name__ == "__main__":
    main()
