"""What the trainer's feature pass costs on CPU in float32 and under bf16 autocast, on stored records.

``train --features-from-tokens`` computes each drawn record's context features with one
teacher-forced target pass (``TokenFeatureStores``); on the drafter recipe's two CPU cores that
pass is about two thirds of a training step (py-spy on the forty-seventh run).  This times the pass
on the same records with ``--feature-precision fp32`` and ``bf16``, the two interleaved round by
round (this machine's speed drifts), and measures how far the bf16 features move from the float32
ones (relative to the features' mean magnitude, after both are rounded to the stores' float16).

    taskset -c 0-1 python bench/feature_pass.py --out bench/results/<run>/feature-pass

Writes ``rows.json``, ``results.md`` and ``results.png`` (seconds per record per round).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time

import torch

from sglang_dflash.bench.report import agg_pyplot, save_figure, write_markdown
from sglang_dflash.train.tokens import TokenFeatureStores

HERE = os.path.dirname(os.path.abspath(__file__))
DRAFTER = os.path.join(HERE, "..", "drafters", "smollm2-135m-instruct")
DEFAULT_TARGET = os.path.expanduser("~/.cache/sglang-dflash/models/smollm2-135m-instruct")
DEFAULT_STORES = ("default", "stock-functions", "score-problems")  # the first mix, code, stories
PRECISIONS = ("fp32", "bf16")


def time_pass(
    stores: TokenFeatureStores, records: list[dict], max_seq_len: int, precision: str
) -> tuple[float, list]:
    """Seconds per record of the feature pass over ``records`` at ``precision``, and the features."""
    stores.bf16_target = precision == "bf16"
    started = time.perf_counter()
    features = [stores.features(r, max_seq_len) for r in records]
    return (time.perf_counter() - started) / len(records), features


def feature_drift(exact: list[torch.Tensor], fast: list[torch.Tensor]) -> dict[str, float]:
    """How far ``fast`` is from ``exact``: the mean absolute difference over the mean magnitude, and
    the largest difference relative to its own element (a few hidden dimensions of a Llama's
    residual stream run hundreds of times larger than the rest, and bf16 rounds them in proportion)."""
    exact_flat = torch.cat([e.flatten() for e in exact])
    diffs = torch.cat([(f - e).flatten() for e, f in zip(exact, fast)]).abs()
    relative = diffs / exact_flat.abs().clamp_min(exact_flat.abs().mean())
    return {
        "mean": diffs.mean().item() / exact_flat.abs().mean().item(),
        "max_relative": relative.max().item(),
    }


def write_report(out: str, rows: list[dict], drift: dict[str, float], meta: dict) -> None:
    """``results.md`` (one row per round) and ``results.png``."""
    fp32 = statistics.median(r["fp32_s"] for r in rows)
    bf16 = statistics.median(r["bf16_s"] for r in rows)
    lines = [
        f"The trainer's feature pass, {meta['records']} records ({meta['tokens']} tokens, at most "
        f"{meta['max_seq_len']} each) from {', '.join(meta['stores'])}, {meta['threads']} thread(s)",
        "",
        "| round | fp32 s per record | bf16 s per record | fp32 / bf16 |",
        "|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['round']} | {r['fp32_s']:.3f} | {r['bf16_s']:.3f} | {r['fp32_s'] / r['bf16_s']:.2f}x |"
        )
    lines += [
        f"| median | {fp32:.3f} | {bf16:.3f} | **{fp32 / bf16:.2f}x** |",
        "",
        f"bf16 features against float32 ones: mean absolute difference {drift['mean']:.4f} of the "
        f"features' mean magnitude; the largest {drift['max_relative']:.3f} of its own element's (at "
        "least the mean magnitude).",
    ]
    write_markdown(os.path.join(out, "results.md"), lines)
    plt = agg_pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for name in PRECISIONS:
        ax.plot([r["round"] for r in rows], [r[f"{name}_s"] for r in rows], marker="o", label=name)
    ax.set_xlabel("round")
    ax.set_ylabel("seconds per record")
    ax.set_ylim(bottom=0)
    ax.set_title("feature pass per record")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, os.path.join(out, "results.png"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default=DEFAULT_TARGET)
    parser.add_argument("--stores", nargs="+", default=list(DEFAULT_STORES), help="names under token-data/")
    parser.add_argument("--records", type=int, default=16, help="records drawn at random among the stores")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-seq-len", type=int, default=512, help="the recipe's train --max-seq-len")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    for name in ("records", "rounds", "threads", "max_seq_len"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')} is {getattr(args, name)}; expected an integer >= 1")
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(args.threads)
    with open(os.path.join(DRAFTER, "config.json"), encoding="utf-8") as f:
        layer_ids = json.load(f)["dflash_config"]["target_layer_ids"]
    target = (
        AutoModelForCausalLM.from_pretrained(args.target, dtype=torch.float32).eval().requires_grad_(False)
    )
    paths = [os.path.join(DRAFTER, "token-data", name) for name in args.stores]
    # One opening (the stores read, the target's weights hashed once); each pass sets its precision.
    stores = TokenFeatureStores.open(paths, target, layer_ids)
    records = random.Random(0).sample(stores.records, args.records)
    rows, computed = [], {}
    with torch.inference_mode():
        for round_ in range(1, args.rounds + 1):
            row = {"round": round_}
            # Alternate which precision goes first, so a drifting machine favours neither.
            for name in PRECISIONS if round_ % 2 else PRECISIONS[::-1]:
                row[f"{name}_s"], computed[name] = time_pass(stores, records, args.max_seq_len, name)
            rows.append(row)
            print(json.dumps(row), flush=True)
    drift = feature_drift(computed["fp32"], computed["bf16"])
    meta = {
        "records": len(records),
        "tokens": sum(min(len(r["input_ids"]), args.max_seq_len) for r in records),
        "max_seq_len": args.max_seq_len,
        "stores": args.stores,
        "threads": args.threads,
        "layer_ids": layer_ids,
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "rows.json"), "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "rows": rows, "drift": drift}, f, indent=1)
    write_report(args.out, rows, drift, meta)
    print(open(os.path.join(args.out, "results.md"), encoding="utf-8").read())


if __name__ == "__main__":
    main()
