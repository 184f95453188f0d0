"""Plot acceptance against training progress from ``train_log.jsonl`` (and measured tau files).

    python -m sglang_dflash.train.curve --log OUT/train_log.jsonl --tau tau-humaneval.json tau-gsm8k.json \\
        --out tau-curve.png
    # a warm-started run (train --init-drafter) continues the curve of the run it started from:
    python -m sglang_dflash.train.curve --run RUN1/train_log.jsonl RUN1/tau-*.json \\
        --run RUN2/train_log.jsonl RUN2/tau-*.json --out tau-curve.png

The curve is the held-out teacher-forced estimate ``1 + heldout_accept`` logged during training
(self-distilled held-out sequences, every block position, fixed anchors); measured tau files
(``eval-tau --json-out``) are drawn as points at the step they were measured (the run's last).
Chained runs (``--run``, each warm-started from the one before) are drawn on one axis of
cumulative steps.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence


def read_log(path: str) -> list[dict]:
    """Rows of ``train_log.jsonl``; a resumed run may repeat steps, the last row per step wins."""
    rows: dict[int, dict] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                rows[row["step"]] = row
    return [rows[s] for s in sorted(rows)]


def plot_curve(log_path: str, tau_paths: Sequence[str], out_path: str, final_step: int | None = None) -> str:
    """Write the PNG of one run; returns its path."""
    return plot_runs([(log_path, list(tau_paths))], out_path, final_step)


def _heldout_rows(log_path: str) -> list[dict]:
    rows = [r for r in read_log(log_path) if r.get("heldout_accept") is not None]
    if not rows:
        raise ValueError(
            f"{log_path}: no row has heldout_accept; expected training with --heldout and --eval-every"
        )
    return rows


def chain_runs(runs: Sequence[tuple[str, Sequence[str]]]) -> list[tuple[int, list[dict]]]:
    """(step offset, held-out rows) per run: run k starts where runs 0..k-1 ended."""
    chained, offset = [], 0
    for log_path, _ in runs:
        rows = _heldout_rows(log_path)
        chained.append((offset, rows))
        offset += rows[-1]["step"] + 1
    return chained


def plot_runs(runs: Sequence[tuple[str, Sequence[str]]], out_path: str, final_step: int | None = None) -> str:
    """Write the PNG of chained runs ``[(train_log, [tau files])]``; returns its path.

    Run k's steps are offset by the steps of runs 0..k-1, its tau points drawn at its last step
    (``final_step`` overrides that for the last run).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..bench.report import save_figure

    fig, ax = plt.subplots(figsize=(7, 4.2))
    markers, all_rows = iter("s^Dv<>ph"), []
    for index, ((_, tau_paths), (offset, rows)) in enumerate(zip(runs, chain_runs(runs))):
        all_rows += rows
        steps = [offset + r["step"] + 1 for r in rows]
        label = "held-out self-distilled data, teacher-forced (1 + accepted drafts per block)"
        ax.plot(
            steps,
            [1 + r["heldout_accept"] for r in rows],
            marker="o",
            ms=3,
            color="C0",
            label=label if index == 0 else None,
        )
        last = index == len(runs) - 1
        x = final_step if last and final_step is not None else steps[-1]
        for path in tau_paths:
            with open(path, encoding="utf-8") as f:
                result = json.load(f)
            name = os.path.basename(path).removesuffix(".json").removeprefix("tau-")
            ax.plot(
                [x],
                [result["mean_tau"]],
                marker=next(markers),
                ms=8,
                linestyle="none",
                label=(
                    f"{name}: tau {result['mean_tau']:.2f} at step {x} "
                    f"({result['prompts']} prompts, reference, greedy)"
                ),
            )
        if index:
            ax.axvline(offset, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xlabel("training step" + (" (runs chained by warm starts)" if len(runs) > 1 else ""))
    top = ax.secondary_xaxis(
        "top", functions=(lambda s: s * _blocks_per_step(all_rows), lambda b: b / _blocks_per_step(all_rows))
    )
    top.set_xlabel("training blocks (anchors)")
    ax.set_ylabel("tokens per verify step (tau)")
    ax.grid(alpha=0.3)
    ax.axhline(3.0, color="grey", linestyle="--", linewidth=1, label="goal: tau 3.0")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    save_figure(fig, out_path)
    plt.close(fig)
    return out_path


def _blocks_per_step(rows: list[dict]) -> float:
    last = rows[-1]
    return last.get("blocks", 0) / max(1, last["step"] + 1) or 1.0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--log", help="one run's train_log.jsonl")
    parser.add_argument("--tau", nargs="*", default=[], help="with --log: its measured tau files")
    parser.add_argument(
        "--run",
        nargs="+",
        action="append",
        metavar="LOG [TAU ...]",
        help="instead of --log: a run's train_log.jsonl and tau files; repeat for warm-started runs in order",
    )
    parser.add_argument("--final-step", type=int, default=None)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if bool(args.log) == bool(args.run):
        parser.error(f"--log is {args.log!r} and --run is {args.run!r}; expected exactly one of them")
    runs = [(args.log, args.tau)] if args.log else [(run[0], run[1:]) for run in args.run]
    print(plot_runs(runs, args.out, args.final_step))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
