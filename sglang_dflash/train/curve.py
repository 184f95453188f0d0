"""Plot acceptance against training progress from ``train_log.jsonl`` (and measured tau files).

    python -m sglang_dflash.train.curve --log OUT/train_log.jsonl --tau tau-humaneval.json tau-gsm8k.json \\
        --out tau-curve.png
    # a warm-started run (train --init-drafter) continues the curve of the run it started from:
    python -m sglang_dflash.train.curve --run RUN1/train_log.jsonl RUN1/tau-*.json \\
        --run RUN2/train_log.jsonl RUN2/tau-*.json --out tau-curve.png
    # a log, tau or summary file may be gzip-compressed (RUN/train_log.jsonl.gz, RUN/tau-SET.json.gz,
    # RUN/train_summary.json.gz): read as it is

The curve is the held-out teacher-forced estimate ``1 + heldout_accept`` logged during training
(self-distilled held-out sequences, every block position, fixed anchors); measured tau files
(``eval-tau --json-out``) are drawn as points at the step they were measured (the run's last).
Chained runs (``--run``, each warm-started from the one before) are drawn on one axis of
cumulative steps, or with ``--cpu-hours`` of cumulative training CPU-hours (each log row's
``seconds`` times the run's training threads, read from the ``train_summary.json`` beside its log):
what a drafter's tau cost to train, across sessions.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
from collections.abc import Sequence
from typing import TextIO


def open_text(path: str, mode: str = "r") -> TextIO:
    """``path`` opened as UTF-8 text (``mode`` "r", "w" or "a"), through gzip when it ends in ``.gz``
    (the drafter folder keeps earlier runs' logs, tau files and the kept greedy responses
    compressed; appending adds a gzip member, which gzip readers take as one stream)."""
    if path.endswith(".gz"):
        return gzip.open(path, mode + "t", encoding="utf-8")
    return open(path, mode, encoding="utf-8")


def read_log(path: str) -> list[dict]:
    """Rows of ``train_log.jsonl`` (or of ``train_log.jsonl.gz``); a resumed run may repeat steps, the
    last row per step wins."""
    rows: dict[int, dict] = {}
    with open_text(path) as f:
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


AXES = ("steps", "cpu-hours")


def training_threads(log_path: str) -> int:
    """The training threads of the run whose log this is, from the ``train_summary.json`` beside it.

    It may be gzip-compressed (``train_summary.json.gz``, as earlier runs' folders keep it).
    1 without that file or where the run left the thread count to torch (``threads`` unset): its
    CPU-hours are then a lower bound.
    """
    paths = (
        os.path.join(os.path.dirname(log_path), name)
        for name in ("train_summary.json", "train_summary.json.gz")
    )
    summary = next((path for path in paths if os.path.exists(path)), None)
    if summary is None:
        return 1
    with open_text(summary) as f:
        return int(json.load(f)["config"].get("threads") or 1)


def _run_x(log_path: str, rows: list[dict], axis: str) -> list[float]:
    """Each held-out row's place on ``axis`` within its own run."""
    if axis == "steps":
        return [r["step"] + 1 for r in rows]
    untimed = [r["step"] for r in rows if "seconds" not in r]
    if untimed:
        raise ValueError(
            f"{log_path}: rows of steps {untimed[:5]} have no seconds; expected a training log with "
            "elapsed seconds for --cpu-hours"
        )
    threads = training_threads(log_path)
    return [r["seconds"] * threads / 3600 for r in rows]


def chain_runs(
    runs: Sequence[tuple[str, Sequence[str]]], axis: str = "steps"
) -> list[tuple[float, list[dict], list[float]]]:
    """(offset, held-out rows, their places on the chained axis) per run: run k starts where runs
    0..k-1 ended, in steps or in training CPU-hours (``axis``)."""
    if axis not in AXES:
        raise ValueError(f"axis is {axis!r}; expected one of {AXES}")
    chained, offset = [], 0.0
    for log_path, _ in runs:
        rows = _heldout_rows(log_path)
        xs = [offset + x for x in _run_x(log_path, rows, axis)]
        chained.append((offset, rows, xs))
        offset = xs[-1]
    return chained


def _tau_points(
    runs: Sequence[tuple[str, Sequence[str]]], ends: Sequence[float]
) -> dict[str, list[tuple[float, dict]]]:
    """Measured tau files per set name (``tau-SET.json`` or ``tau-SET.json.gz``), each at the place its
    run ended."""
    points: dict[str, list[tuple[float, dict]]] = {}
    for (_, tau_paths), x in zip(runs, ends):
        for path in tau_paths:
            with open_text(path) as f:
                result = json.load(f)
            name = os.path.basename(path).removesuffix(".gz").removesuffix(".json").removeprefix("tau-")
            points.setdefault(name, []).append((x, result))
    return points


def plot_runs(
    runs: Sequence[tuple[str, Sequence[str]]],
    out_path: str,
    final_step: int | None = None,
    axis: str = "steps",
) -> str:
    """Write the PNG of chained runs ``[(train_log, [tau files])]``; returns its path.

    Run k is offset by runs 0..k-1 on ``axis`` (steps or training CPU-hours), its tau points drawn
    where it ended (``final_step`` overrides that for the last run, on the steps axis); one set's
    points over several runs are joined, one legend entry per set.
    """
    if final_step is not None and axis != "steps":
        raise ValueError(f"final_step is {final_step}; expected None on the {axis} axis")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..bench.report import save_figure

    fig, ax = plt.subplots(figsize=(7, 4.2))
    chained = chain_runs(runs, axis)
    all_rows = [row for _, rows, _ in chained for row in rows]
    for index, (offset, rows, xs) in enumerate(chained):
        label = "held-out self-distilled data, teacher-forced (1 + accepted drafts per block)"
        ax.plot(
            xs,
            [1 + r["heldout_accept"] for r in rows],
            marker="o",
            ms=3,
            color="C0",
            label=label if index == 0 else None,
        )
        if index:
            ax.axvline(offset, color="grey", linewidth=0.8, linestyle=":")
    ends = [xs[-1] for _, _, xs in chained]
    if final_step is not None:
        ends[-1] = final_step
    unit = "step" if axis == "steps" else "CPU-hour"
    for index, ((name, points), marker) in enumerate(zip(_tau_points(runs, ends).items(), "s^Dv<>ph")):
        x, last = points[-1]
        where = f"{x:.0f}" if axis == "steps" else f"{x:.1f}"
        label = (
            f"{name}: tau {last['mean_tau']:.2f} at {unit} {where} "
            f"({last['prompts']} prompts, reference, greedy)"
        )
        if len(points) > 1:
            label = f"{name}: measured tau per run, {points[0][1]['mean_tau']:.2f} -> {last['mean_tau']:.2f}"
        ax.plot(
            [x for x, _ in points],
            [r["mean_tau"] for _, r in points],
            marker=marker,
            ms=7 if len(points) > 1 else 8,
            color=f"C{index + 1}",  # C0 is the held-out curve
            linestyle="-" if len(points) > 1 else "none",
            label=label,
        )
    chain_note = " (runs chained by warm starts)" if len(runs) > 1 else ""
    if axis == "steps":
        ax.set_xlabel("training step" + chain_note)
        top = ax.secondary_xaxis(
            "top",
            functions=(lambda s: s * _blocks_per_step(all_rows), lambda b: b / _blocks_per_step(all_rows)),
        )
        top.set_xlabel("training blocks (anchors)")
    else:
        ax.set_xlabel("training CPU-hours (wall time x threads)" + chain_note)
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
    parser.add_argument(
        "--cpu-hours",
        action="store_true",
        help="x axis: cumulative training CPU-hours (log seconds x the run's threads) instead of steps",
    )
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if bool(args.log) == bool(args.run):
        parser.error(f"--log is {args.log!r} and --run is {args.run!r}; expected exactly one of them")
    runs = [(args.log, args.tau)] if args.log else [(run[0], run[1:]) for run in args.run]
    if args.cpu_hours and args.final_step is not None:
        parser.error(
            f"--final-step is {args.final_step}; expected it only on the steps axis (without --cpu-hours)"
        )
    print(plot_runs(runs, args.out, args.final_step, "cpu-hours" if args.cpu_hours else "steps"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
