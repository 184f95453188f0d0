"""How fast can DFLASH get on this CPU with this drafter, whatever verify width it picks?

Replays real decode steps under a per-step cost model measured on the CPU server:

1. **Steps**: the reference implementation (float32, greedy, one request at a time) decodes held-out
   prompts (``--offset`` skips the first prompts of each set, which the tau protocol measures) and
   records, per step, the drafter's confidence in each draft (its softmax maximum) and how many
   drafts the target accepted out of the whole block.
2. **Costs**: milliseconds of one plain decode step and of a DFLASH step's phases (draft, verify at a
   few widths, accept; ``SGLANG_DFLASH_PROFILE`` of the server, ``bench/README.md``); the verify's
   cost is interpolated linearly between the measured widths.
3. **Replay**: tokens per millisecond against plain decoding for every fixed verify width, for a
   width chosen per step from the drafter's confidences (expected tokens / cost, the drafter's
   probabilities taken at face value), and for an oracle that knows each step's accepted count.

Truncating a block is lossless, so every row is an output-preserving policy; the oracle bounds what
any width policy can reach with this drafter on this machine.

    python bench/width_ceiling.py --target ~/.cache/sglang-dflash/models/smollm2-135m-instruct \\
        --drafter drafters/smollm2-135m-instruct --out bench/results/<run>
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os

WIDTHS = (1, 2, 3, 4, 6, 8, 12, 16)


@dataclasses.dataclass(frozen=True)
class StepCosts:
    """Milliseconds per step on the machine being modelled (one request at a time)."""

    plain: float  # a plain decode step (target forward + lm_head + host)
    draft: float  # the drafter's pass (skipped at width 1)
    verify: tuple[tuple[int, float], ...]  # measured (width, ms) of the target's verify
    accept: float  # acceptance (deferred lm_head rows), injection and host work

    def __post_init__(self) -> None:
        object.__setattr__(self, "verify", tuple(sorted(self.verify)))  # ascending widths, once

    def verify_ms(self, width: int) -> float:
        """The verify's cost at ``width``: linear between the measured widths (flat past the ends)."""
        points = self.verify
        if width <= points[0][0]:
            return points[0][1]
        for (w0, ms0), (w1, ms1) in zip(points, points[1:]):
            if width <= w1:
                return ms0 + (width - w0) * (ms1 - ms0) / (w1 - w0)
        return points[-1][1]

    def step(self, width: int) -> float:
        return (self.draft if width > 1 else 0.0) + self.verify_ms(width) + self.accept

    def drafted_step(self, width: int) -> float:
        """A step that drafted whatever width it then verifies (its width was chosen from the draft)."""
        return self.draft + self.verify_ms(width) + self.accept


def parse_verify(values: list[str]) -> tuple[tuple[int, float], ...]:
    """``["1:126.9", "16:265.9"]`` -> ((1, 126.9), (16, 265.9))."""
    points = []
    for value in values:
        width, sep, ms = value.partition(":")
        if not sep or not width.isdigit() or int(width) < 1:
            raise SystemExit(f"--verify-ms: {value!r}; expected WIDTH:MILLISECONDS, e.g. 16:265.9")
        points.append((int(width), float(ms)))
    return tuple(sorted(points))


def tokens(accepted: int, width: int) -> int:
    """Tokens a step commits when it verifies ``width`` positions of a block whose target accepted
    ``accepted`` drafts: the accepted prefix, truncated, plus the bonus token."""
    return 1 + min(accepted, width - 1)


def expected_tokens(confidences: list[float], width: int) -> float:
    """Expected tokens of a ``width`` verify if draft ``i`` is right with probability
    ``confidences[i]`` given the drafts before it are."""
    total, all_right = 1.0, 1.0
    for p in confidences[: width - 1]:
        all_right *= p
        total += all_right
    return total


def confident_width(confidences: list[float], costs: StepCosts, widths=WIDTHS) -> int:
    """The width with the most expected tokens per millisecond (drafting paid whatever is chosen:
    the confidences come from the draft)."""
    return max(widths, key=lambda w: expected_tokens(confidences, w) / costs.drafted_step(w))


def replay(steps: list[dict], costs: StepCosts, widths=WIDTHS) -> list[dict]:
    """Speedup over plain decoding (tokens per ms / plain tokens per ms) of each width policy."""
    rows = []

    def row(policy: str, chosen: list[int], step_ms=costs.step) -> None:
        committed = sum(tokens(s["accepted"], w) for s, w in zip(steps, chosen))
        ms = sum(step_ms(w) for w in chosen)
        rows.append(
            {
                "policy": policy,
                "tokens_per_step": round(committed / len(steps), 3),
                "ms_per_step": round(ms / len(steps), 1),
                "speedup": round(committed / ms * costs.plain, 3),
            }
        )

    for width in widths:
        row(f"fixed width {width}", [width] * len(steps))
    chosen = [confident_width(s["confidences"], costs, widths) for s in steps]
    row("per-step width from the drafter's confidence", chosen, costs.drafted_step)
    row("oracle width (knows the accepted count)", [min(s["accepted"] + 1, max(widths)) for s in steps])
    return rows


def calibration(steps: list[dict], bins: int = 10) -> list[dict]:
    """How often the first draft is accepted, by the drafter's confidence in it."""
    table = [[0, 0] for _ in range(bins)]
    for s in steps:
        cell = table[min(bins - 1, int(s["confidences"][0] * bins))]
        cell[0] += 1
        cell[1] += s["accepted"] >= 1
    return [
        {"confidence": f"{b / bins:.1f}-{(b + 1) / bins:.1f}", "steps": n, "accepted": round(a / n, 2)}
        for b, (n, a) in enumerate(table)
        if n
    ]


def record_steps(
    target_path: str, drafter_path: str, prompts: list[list[int]], max_new_tokens: int
) -> list[dict]:
    """Per decode step of the reference (one request at a time): the drafter's confidences and the
    number of drafts the target accepted out of the whole block."""
    import torch
    from tqdm import tqdm
    from transformers import AutoModelForCausalLM

    import sglang_dflash.reference as reference
    from sglang_dflash import SamplingParams, load_drafter

    target = AutoModelForCausalLM.from_pretrained(target_path, dtype=torch.float32).eval()
    drafter = load_drafter(drafter_path).float().eval()
    eos = target.generation_config.eos_token_id
    stops = tuple(eos) if isinstance(eos, list) else (eos,)
    sampling = SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens, stop_token_ids=stops)
    seen: list[dict] = []
    draft_tokens, accept = reference.draft_tokens, reference.accept

    def record_draft(logits, *args, **kwargs):
        confidences = torch.softmax(logits.float(), -1).amax(-1)[0]
        seen.append({"confidences": [round(p, 4) for p in confidences.tolist()]})
        return draft_tokens(logits, *args, **kwargs)

    def record_accept(*args, **kwargs):
        num_correct, emitted = accept(*args, **kwargs)
        seen[-1]["accepted"] = int(num_correct[0])
        return num_correct, emitted

    reference.draft_tokens, reference.accept = record_draft, record_accept
    try:
        with torch.no_grad():
            for prompt in tqdm(prompts, desc="reference decode"):
                reference.spec_generate(target, drafter, [prompt], sampling)
    finally:
        reference.draft_tokens, reference.accept = draft_tokens, accept
    return seen


def markdown(rows: list[dict], calib: list[dict], costs: StepCosts) -> str:
    lines = [
        f"Cost model (ms): {dataclasses.asdict(costs)}",
        "",
        "| policy | tokens / step | ms / step | speedup vs plain |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {r['policy']} | {r['tokens_per_step']} | {r['ms_per_step']} | {r['speedup']} |" for r in rows
    ]
    lines += ["", "| drafter confidence in draft 1 | steps | accepted |", "|---|---|---|"]
    lines += [f"| {c['confidence']} | {c['steps']} | {c['accepted']} |" for c in calib]
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sglang_dflash.bench.report import save_figure

    fixed = [r for r in rows if r["policy"].startswith("fixed")]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(
        [int(r["policy"].split()[-1]) for r in fixed],
        [r["speedup"] for r in fixed],
        "o-",
        label="fixed width",
    )
    for r, style in zip(rows[len(fixed) :], ("--", ":")):
        ax.axhline(r["speedup"], linestyle=style, color="gray", label=r["policy"])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("verify width")
    ax.set_ylabel("speedup vs plain decoding")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", help="the target's directory (not needed with --steps-from)")
    parser.add_argument("--drafter", help="the drafter's directory (not needed with --steps-from)")
    parser.add_argument(
        "--datasets", nargs="+", default=["../shared/data/humaneval.jsonl", "../shared/data/gsm8k.jsonl"]
    )
    parser.add_argument("--offset", type=int, default=120, help="skip this many prompts of each set")
    parser.add_argument("--num-prompts", type=int, default=12, help="prompts per set")
    parser.add_argument("--max-new-tokens", type=int, default=96)
    # Defaults: SmolLM2-135M-Instruct on this 2-core CPU, one request, one core, shipped drafter with
    # its hot vocabulary (2026-11-26, bench/README.md "How far a verify width can take this drafter").
    parser.add_argument("--plain-ms", type=float, default=159.8)
    parser.add_argument("--draft-ms", type=float, default=34.0)
    parser.add_argument(
        "--verify-ms", nargs="+", default=["1:133.1", "3:231.5", "16:290.1"], help="WIDTH:MS measured points"
    )
    parser.add_argument("--accept-ms", type=float, default=33.5)
    parser.add_argument(
        "--steps-from", help="a results.json of this script: replay its steps, decode nothing"
    )
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    costs = StepCosts(args.plain_ms, args.draft_ms, parse_verify(args.verify_ms), args.accept_ms)
    if not args.steps_from and not (args.target and args.drafter):
        parser.error("--target and --drafter are needed to record steps (or give --steps-from)")
    if args.steps_from:
        with open(args.steps_from) as f:
            steps = json.load(f)["steps"]
    else:
        from transformers import AutoTokenizer

        from sglang_dflash.bench.datasets import load_dataset

        tokenizer = AutoTokenizer.from_pretrained(args.target)
        prompts = [
            list(p.input_ids)
            for path in args.datasets
            for p in load_dataset(path, tokenizer, args.offset + args.num_prompts)[args.offset :]
        ]
        steps = record_steps(args.target, args.drafter, prompts, args.max_new_tokens)
    rows, calib = replay(steps, costs), calibration(steps)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"args": vars(args), "costs": dataclasses.asdict(costs), "rows": rows,
                   "calibration": calib, "steps": steps}, f)  # fmt: skip
    table = markdown(rows, calib, costs)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(table)
    plot(rows, os.path.join(args.out, "results.png"))
    print(table)


if __name__ == "__main__":
    main()
