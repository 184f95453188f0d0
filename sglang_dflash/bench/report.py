"""Benchmark report: the raw JSON in, a summary table (markdown) and a speedup plot (PNG) out."""

from __future__ import annotations

import io
import json
import math
import os
import re

from .metrics import agreement_with_baseline, speedups, summarize_group


def summarize(raw: dict) -> list[dict]:
    """One row per (dataset, concurrency, mode) with metrics, output agreement and throughput ratios.

    ``speedup`` is the ratio to ``baseline``, ``vs_builtin`` to SGLang's built-in DFLASH, both within
    the same (dataset, concurrency) of the same run.
    """
    by_key: dict[tuple, dict[str, dict]] = {}
    for mode_result in raw["modes"]:
        for group in mode_result["groups"]:
            by_key.setdefault((group["dataset"], group["concurrency"]), {})[mode_result["mode"]] = group
    rows = []
    for (dataset, concurrency), groups in sorted(by_key.items()):
        summary = {mode: summarize_group(g["samples"], g["wall_seconds"]) for mode, g in groups.items()}
        ratios = speedups(summary)
        versus_builtin = speedups(summary, baseline="dflash-builtin")
        for mode, s in summary.items():
            row = {
                "dataset": dataset,
                "concurrency": concurrency,
                "mode": mode,
                **s,
                "speedup": ratios.get(mode, math.nan),
                "vs_builtin": versus_builtin.get(mode, math.nan),
            }
            if "baseline" in groups and raw.get("temperature", 0) == 0:
                row["exact_match_rate"] = agreement_with_baseline(
                    groups[mode]["samples"], groups["baseline"]["samples"]
                )["exact_match_rate"]
            row["greedy_consistency"] = groups[mode].get("greedy_consistency", {}).get("rate")
            profile = groups[mode].get("step_profile") or {}
            for name in PHASE_NAMES:
                row[name] = profile.get(name)
            row["profiled_steps"] = profile.get("steps")
            row["widths"] = profile.get("widths")
            row["width_ms"] = profile.get("width_ms")
            row["graphs"] = profile.get("graphs")
            row["staged"] = profile.get("staged")
            row["linears"] = profile.get("linears")
            row["step_cost"] = step_cost(row.get("tau"), row["speedup"])
            rows.append(row)
    return rows


# The worker's step phases (``SGLANG_DFLASH_PROFILE``, ``worker.WallClockProfiler``, in this order).
# On a GPU (``worker.StepProfiler``) CUDA events time draft, verify, accept_inject and the device
# gap between steps, step_ms and host_ms stay host wall clock, and the finer details are not timed.
PHASE_NAMES = (
    "step_ms",
    "host_ms",
    "prepare_ms",
    "draft_ms",
    "verify_ms",
    "accept_inject_ms",
    "accept_ms",
    "publish_ms",
    "inject_ms",
    "gpu_gap_ms",
)


def step_cost(tau: float | None, speedup: float) -> float | None:
    """One speculative step's cost in plain decoding steps, ``tau / speedup``: a step emits tau
    tokens where a plain step emits one, so at equal throughput it costs tau plain steps."""
    if tau is None or speedup is None or math.isnan(speedup) or speedup <= 0:
        return None
    return tau / speedup


def _fmt(value, digits=2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


COLUMNS = [
    ("dataset", 0),
    ("concurrency", 0),
    ("mode", 0),
    ("output_tokens_per_s", 1),
    ("speedup", 2),
    ("vs_builtin", 2),
    ("tau", 2),
    ("latency_p50", 2),
    ("latency_p90", 2),
    ("ttft_p50", 3),
    ("exact_match_rate", 2),
    ("greedy_consistency", 3),
    ("draft_ms", 3),
    ("verify_ms", 3),
]


PHASE_COLUMNS = [
    ("dataset", 0),
    ("concurrency", 0),
    ("mode", 0),
    ("tau", 2),
    ("speedup", 2),
    ("step_cost", 2),
    ("profiled_steps", 0),
    ("widths", 0),  # steps per verify width, "width:steps"
    ("width_ms", 0),  # mean step time per verify width, "width:ms"
    ("graphs", 0),  # GPU: steps whose draft / verify pass replayed a CUDA graph, "draft n/N verify n/N"
    ("staged", 0),  # CPU: staged steps, second-pass requests, onward requests cut, "n/N second m cut k"
    ("linears", 0),  # CPU: the product the step's linears took (the worker's startup timing)
    *((name, 1) for name in PHASE_NAMES),
]


def markdown_table(rows: list[dict], columns: list[tuple[str, int]] = COLUMNS) -> str:
    header = "| " + " | ".join(name for name, _ in columns) + " |"
    sep = "|" + "|".join("---" for _ in columns) + "|"
    lines = [header, sep]
    for row in rows:
        lines.append("| " + " | ".join(_fmt(row.get(name), digits) for name, digits in columns) + " |")
    return "\n".join(lines) + "\n"


def phase_table(rows: list[dict]) -> str:
    """Per-phase ms per step of the profiled modes, with tau, speedup and step cost (in plain steps)."""
    profiled = [r for r in rows if r.get("step_ms") is not None]
    if not profiled:
        return ""
    return (
        "\n## Step profile (ms per decode step; step_cost = tau / speedup, in plain steps)\n\n"
        "Wall clock on CPU. On a GPU: draft, verify, accept_inject and gpu_gap (device time between "
        "steps) from CUDA events; step_ms (the worker's decode call) and host_ms (the scheduler "
        "between steps) on the host's clock.\n\n" + markdown_table(profiled, PHASE_COLUMNS)
    )


def agg_pyplot():
    """``matplotlib.pyplot`` drawing off-screen (Agg), or None where matplotlib is not installed
    (a bench script then writes its JSON and markdown without the plot)."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: str, colors: int = 64) -> None:
    """``fig`` as a PNG of at most ``colors`` palette colours (about a third of the bytes of a
    truecolour one for these line plots), so committed results keep the checkout small enough to
    travel to the GPU host (``tests/test_repo_size.py``)."""
    from PIL import Image  # matplotlib's own dependency

    drawn = io.BytesIO()
    fig.savefig(drawn, format="png", dpi=120)
    drawn.seek(0)
    with Image.open(drawn) as image:
        image.convert("RGB").quantize(colors=colors).save(path, optimize=True)


def write_markdown(path: str, lines: list[str]) -> None:
    """A markdown file of these lines."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def plot_speedups(rows: list[dict], path: str) -> bool:
    """Speedup over baseline vs concurrency, one line per mode, one panel per dataset; False (no
    file) when no row has a speedup: every mode failed, or no baseline ran beside the others."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if math.isfinite(r["speedup"])]
    datasets = sorted({r["dataset"] for r in rows})
    if not datasets:  # the table lists every row; there is nothing to plot against a baseline
        return False
    fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 3.8), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        for mode in sorted({r["mode"] for r in rows}):
            pts = sorted(
                (r["concurrency"], r["speedup"])
                for r in rows
                if r["dataset"] == dataset and r["mode"] == mode
            )
            if pts:
                ax.plot([c for c, _ in pts], [s for _, s in pts], marker="o", label=mode)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xscale("log", base=2)
        levels = sorted({r["concurrency"] for r in rows})
        ax.set_xticks(levels, [str(c) for c in levels])
        ax.set_xlabel("concurrency")
        ax.set_ylabel("throughput / baseline")
        ax.set_title(dataset)
        ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return True


def readable_json(obj: object) -> str:
    """Indented JSON with every list of integers (token ids) on one line.

    Token ids are most of a run's bytes; one per line would make a committed result several times
    larger (the checkout must stay small enough to travel to the GPU host).
    """
    text = json.dumps(obj, indent=1)
    return re.sub(r"\[[\d,\s-]*\]", lambda m: "[" + "".join(m.group(0)[1:-1].split()) + "]", text)


def write_report(raw: dict, out_dir: str, stem: str = "results") -> dict[str, str]:
    """Write ``stem.json`` (raw + summary rows), ``stem.md`` and ``stem.png``; returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    rows = summarize(raw)
    paths = {ext: os.path.join(out_dir, f"{stem}.{ext}") for ext in ("json", "md", "png")}
    with open(paths["json"], "w", encoding="utf-8") as f:
        f.write(readable_json({**raw, "summary": rows}))
    env = raw.get("environment", {})
    with open(paths["md"], "w", encoding="utf-8") as f:
        f.write(f"# Benchmark: {env.get('model', '?')} on {env.get('gpu', '?')}\n\n")
        f.write(
            f"temperature {raw.get('temperature')}, max_new_tokens {raw.get('max_new_tokens')}, "
            f"drafter {env.get('drafter', '?')}\n\n"
        )
        f.write(markdown_table(rows))
        f.write(phase_table(rows))
        for failure in raw.get("failed_modes", []):
            f.write(f"\n**mode {failure['mode']} failed**: {failure['error']}\n")
    try:
        if not plot_speedups(rows, paths["png"]):
            paths.pop("png")
    except ImportError:  # a GPU host without matplotlib: re-render later with `sglang-dflash bench-report`
        print("matplotlib is not installed: no PNG written; run `sglang-dflash bench-report` where it is")
        paths.pop("png")
    return paths
