"""Plot acceptance against training progress from ``train_log.jsonl`` (and measured tau files).

    python -m sglang_dflash.train.curve --log OUT/train_log.jsonl --tau tau-humaneval.json tau-gsm8k.json \\
        --out tau-curve.png

The curve is the held-out teacher-forced estimate ``1 + heldout_accept`` logged during training
(self-distilled held-out sequences, every block position, fixed anchors); measured tau files
(``eval-tau --json-out``) are drawn as points at the step they were measured (the final one).
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
    """Write the PNG; returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in read_log(log_path) if r.get("heldout_accept") is not None]
    if not rows:
        raise ValueError(
            f"{log_path}: no row has heldout_accept; expected training with --heldout and --eval-every"
        )
    fig, ax = plt.subplots(figsize=(7, 4.2))
    steps = [r["step"] + 1 for r in rows]
    ax.plot(
        steps,
        [1 + r["heldout_accept"] for r in rows],
        marker="o",
        ms=3,
        label="held-out self-distilled data, teacher-forced (1 + accepted drafts per block)",
    )
    x = final_step if final_step is not None else steps[-1]
    for path, marker in zip(tau_paths, "s^Dv"):
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
        name = os.path.basename(path).removesuffix(".json").removeprefix("tau-")
        ax.plot(
            [x],
            [result["mean_tau"]],
            marker=marker,
            ms=8,
            linestyle="none",
            label=f"{name}: tau {result['mean_tau']:.2f} ({result['prompts']} prompts, reference, greedy)",
        )
    ax.set_xlabel("training step")
    top = ax.secondary_xaxis(
        "top", functions=(lambda s: s * _blocks_per_step(rows), lambda b: b / _blocks_per_step(rows))
    )
    top.set_xlabel("training blocks (anchors)")
    ax.set_ylabel("tokens per verify step (tau)")
    ax.grid(alpha=0.3)
    ax.axhline(3.0, color="grey", linestyle="--", linewidth=1, label="goal: tau 3.0")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(out_path, dpi=120)
    plt.close(fig)
    return out_path


def _blocks_per_step(rows: list[dict]) -> float:
    last = rows[-1]
    return last.get("blocks", 0) / max(1, last["step"] + 1) or 1.0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--log", required=True)
    parser.add_argument("--tau", nargs="*", default=[])
    parser.add_argument("--final-step", type=int, default=None)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    print(plot_curve(args.log, args.tau, args.out, args.final_step))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
