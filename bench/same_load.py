"""Same-load A/B on a CPU server: modes interleaved round by round, so each comparison is minutes apart.

``sglang-dflash bench`` runs all of one mode before the next, and this machine's speed drifts by
10-40% within an hour (the other core's jobs, memory bandwidth), so its ratios at one request swing
between runs.  Here every round starts one server per mode, one after another, and decodes the same
prompts (``--concurrency`` at a time, 1 by default); a mode is compared with the plain decoding of
its own round.

Modes: ``plain``; ``dflash`` (the whole block); ``dflash-one-pass`` (the whole block, verified in
one pass: ``SGLANG_DFLASH_STAGED_VERIFY=0``); ``dflash-second-pass-always`` (the whole block,
staged, its second pass run whenever a request goes on: ``SGLANG_DFLASH_SECOND_PASS=always``);
``adaptive`` (``--speculative-adaptive``, default config); ``adaptive-chain`` (the same without the
wide-batch tree, ``SGLANG_DFLASH_WIDE_BATCH_TREE=off``: steps of more than one request at the
policy's chain widths, as ``--speculative-adaptive`` served them before 2026-12-07);
``dflash-no-lookup``, ``adaptive-no-lookup`` (the trees without their lookup branch,
``SGLANG_DFLASH_PROMPT_LOOKUP=0``, as served before 2026-12-07's lookup branch) and
``dflash-lookup4`` (a branch of 4 nodes instead of the default 8) and ``dflash-lookup-fixed`` (the
branch at its whole length every step within the rows budget, as first served on 2026-12-07:
``SGLANG_DFLASH_LOOKUP_BY_PROPOSAL=0``); ``dflash-mm`` and ``adaptive-mm`` (the few-row linears
by ``mm(W, x.T)``, ``SGLANG_DFLASH_CPU_SMALL_BATCH_LINEAR=1``, whatever the startup timing would
choose: on the EPYC of 2026-12-07 what it chose before the oneDNN product); ``w<k>`` or
``w<k>+<k>...`` (DFLASH verifying only those widths: the adaptive policy with that width set, no exploration);
``adaptive:<k>+<k>...`` (the default policy, exploration included, choosing among those widths);
``adaptive@<key>=<json>[@<key>=<json>...]`` (the default policy with those
``--speculative-adaptive-config`` settings, e.g. ``adaptive@confirm_promising=false``). Every
DFLASH mode uses the drafter's hot vocabulary when ``--token-map`` is given and writes its
``SGLANG_DFLASH_PROFILE`` phases next to the results (a row keeps the steps each verify width
ran). ``--cores`` are the server's OpenMP cores (``SGLANG_CPU_OMP_THREADS_BIND``; run the script
under ``taskset`` with the same cores). Greedy output of every mode is compared with plain
decoding's and must equal it in float32; with
``--dtype bfloat16`` (every server in bf16) it is recorded only.

    SGLANG_DFLASH_SGL_KERNEL_STANDIN=1 PYTHONPATH=tests/cpu_host taskset -c 0 \\
      python bench/same_load.py --modes plain,adaptive,w4 --rounds 3 --out bench/results/<run>/same-load

Writes ``rows.json`` (one row per mode and round), ``results.md`` (the table, with each mode's
median ratio to plain) and ``results.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

from cpu_server import CpuServer  # noqa: E402  (the tests' CPU server launcher)

from sglang_dflash.adaptive import AdaptiveConfig  # noqa: E402
from sglang_dflash.bench.engine_run import format_staged_steps, format_width_steps, read_profile  # noqa: E402
from sglang_dflash.bench.harness import CPU_MALLOCS, with_cpu_malloc  # noqa: E402
from sglang_dflash.bench.report import agg_pyplot, save_figure, write_markdown  # noqa: E402
from sglang_dflash.kernels import small_batch_linear  # noqa: E402
from sglang_dflash.serving.staged_verify import SECOND_PASS_ENV, STAGED_VERIFY_ENV  # noqa: E402
from sglang_dflash.serving.tree_verify import (  # noqa: E402
    LOOKUP_BY_PROPOSAL_ENV,
    PROMPT_LOOKUP_ENV,
    WIDE_TREE_ENV,
)

DEFAULT_MODEL = os.path.expanduser("~/.cache/sglang-dflash/models/smollm2-135m-instruct")
DEFAULT_DRAFTER = os.path.join(HERE, "..", "drafters", "smollm2-135m-instruct")


# The whole-block modes and the environment each runs its server with.
WHOLE_BLOCK_MODES = {
    "dflash": {},
    "dflash-one-pass": {STAGED_VERIFY_ENV: "0"},
    "dflash-second-pass-always": {SECOND_PASS_ENV: "always"},
    "dflash-no-lookup": {PROMPT_LOOKUP_ENV: "0"},
    "dflash-lookup4": {PROMPT_LOOKUP_ENV: "4"},
    "dflash-lookup-fixed": {LOOKUP_BY_PROPOSAL_ENV: "0"},
    "dflash-mm": {small_batch_linear.ENV: "1"},
}
# The modes of the default adaptive policy and the environment each runs its server with.
ADAPTIVE_MODES = {
    "adaptive": {},
    "adaptive-chain": {WIDE_TREE_ENV: "off"},
    "adaptive-no-lookup": {PROMPT_LOOKUP_ENV: "0"},
    "adaptive-mm": {small_batch_linear.ENV: "1"},
}


def mode_flags(mode: str, drafter: str, token_map: str | None) -> list[str]:
    """The server flags of one mode (an unknown mode is refused naming it)."""
    if mode == "plain":
        return []
    flags = ["--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", drafter]
    if token_map:
        flags += ["--speculative-token-map", token_map]
    if mode in WHOLE_BLOCK_MODES:
        return flags
    if mode in ADAPTIVE_MODES:
        return flags + ["--speculative-adaptive"]
    config = adaptive_settings(mode) if mode.startswith("adaptive@") else width_settings(mode)
    return flags + ["--speculative-adaptive", "--speculative-adaptive-config", json.dumps(config)]


def width_settings(mode: str) -> dict:
    """The settings of a ``w<k>+<k>...`` mode (only those widths, no exploration) or an
    ``adaptive:<k>+<k>...`` mode (the default policy, those widths); any other mode is refused."""
    explore = mode.startswith("adaptive:")
    widths = mode.split(":", 1)[1] if explore else mode[1:] if mode.startswith("w") else ""
    widths = widths.split("+") if widths else []
    if not widths or not all(w.isdigit() and int(w) >= 1 for w in widths):
        raise SystemExit(
            f"--modes: {mode!r} is unknown; expected plain, {', '.join(WHOLE_BLOCK_MODES)}, "
            f"{', '.join(ADAPTIVE_MODES)}, w<k>[+<k>...], adaptive:<k>[+<k>...] or "
            "adaptive@<key>=<json>[@...]"
        )
    config: dict = {"widths": [int(w) for w in widths]}
    if not explore:
        config["explore_every"] = 1_000_000
    return config


def adaptive_settings(mode: str) -> dict:
    """The settings of an ``adaptive@<key>=<json>[@...]`` mode, checked as the server would check them."""
    config = {}
    for setting in mode.split("@")[1:]:
        key, sep, value = setting.partition("=")
        try:
            if not sep:
                raise ValueError("no '='")
            config[key] = json.loads(value)
        except ValueError as e:
            raise SystemExit(
                f"--modes: {mode!r} has the setting {setting!r}; expected <key>=<json value>, "
                f"e.g. adaptive@confirm_promising=false ({e})"
            ) from e
    try:
        AdaptiveConfig.from_dict(config)
    except (TypeError, ValueError) as e:
        raise SystemExit(f"--modes: {mode!r}: {e}") from e
    return config


def server_flags(mode: str, dtype: str, drafter: str, token_map: str | None) -> list[str]:
    """Every flag a mode's server gets on top of ``CpuServer``'s CPU flags."""
    return [
        "--max-total-tokens",
        "4096",
        "--random-seed",
        "0",
        "--dtype",  # the later flag wins over CpuServer's float32
        dtype,
        *mode_flags(mode, drafter, token_map),
    ]


def check_greedy_output(rows: list[dict], dtype: str) -> None:
    """In float32 every mode's greedy output must be plain decoding's; in bf16 it is only recorded
    (a verify over several positions and a decode step round differently there)."""
    differing = sorted({f"{r['mode']} round {r['round']}" for r in rows if not r["same_as_plain"]})
    if dtype == "float32" and differing:
        raise SystemExit(
            f"greedy output differs from plain decoding in {differing}: see rows.json (same_as_plain)"
        )


def chat_prompts(model: str, path: str, offset: int, count: int) -> list[list[int]]:
    """Token ids of ``count`` prompts of a JSONL prompt set from ``offset`` on, as the bench reads them
    (chat template applied)."""
    from transformers import AutoTokenizer

    from sglang_dflash.bench.datasets import load_dataset

    prompts = load_dataset(path, AutoTokenizer.from_pretrained(model), limit=offset + count)[offset:]
    if len(prompts) < count:
        raise SystemExit(
            f"--prompts: {path} has {offset + len(prompts)} prompts; expected >= {offset + count}"
        )
    return [list(prompt.input_ids) for prompt in prompts]


def staged_steps(before: dict | None, after: dict | None) -> str:
    """The steps between two profile reads that staged their verify, "n/N second m cut k" ("" if
    none)."""
    if not after:
        return ""
    return format_staged_steps(before, after, after["steps"] - (before or {}).get("steps", 0))


def server_env(mode: str, cores: str, profile: str | None, cpu_malloc: str) -> dict[str, str]:
    """The environment a mode's server runs with: its cores, its step profile's path (DFLASH modes),
    the mode's own settings and the glibc malloc settings of ``cpu_malloc``."""
    env = {"SGLANG_CPU_OMP_THREADS_BIND": cores}
    if profile is not None:
        env["SGLANG_DFLASH_PROFILE"] = profile
    env.update(WHOLE_BLOCK_MODES.get(mode, {}) | ADAPTIVE_MODES.get(mode, {}))
    return with_cpu_malloc(env, cpu_malloc)


def run_mode(args, mode: str, round_: int, prompts: list[list[int]]) -> tuple[dict, list]:
    """Start the mode's server, decode every prompt (``--concurrency`` in flight), stop it: one row and
    the outputs."""
    tag = f"{mode.replace(':', '-')}-{round_}"  # no ':' in file names (other systems refuse it)
    profile = None if mode == "plain" else os.path.join(args.out, f"{tag}.profile.json")
    env = server_env(mode, args.cores, profile, args.cpu_malloc)
    server = CpuServer(
        args.model,
        server_flags(mode, args.dtype, args.drafter, args.token_map),
        log_path=os.path.join(args.out, f"{tag}.log"),
        env=env,
    )
    try:
        server.generate(prompts[0], {"temperature": 0, "max_new_tokens": 8})  # warm-up
        warm_profile = read_profile(profile)
        params = {"temperature": 0, "max_new_tokens": args.max_new_tokens}
        started, tokens, steps, outputs = time.time(), 0, 0, []
        for reply in server.generate_many(prompts, params, concurrency=args.concurrency):
            meta = reply["meta_info"]
            tokens += meta["completion_tokens"]
            steps += meta.get("spec_verify_ct") or meta["completion_tokens"]
            outputs.append(reply["output_ids"])
        wall = time.time() - started
        # The worker rewrites its profile before a step's tokens reach us.
        profiled = read_profile(profile)
    finally:
        server.shutdown()
    row = {
        "mode": mode,
        "round": round_,
        "concurrency": args.concurrency,
        "tokens": tokens,
        "tok_s": round(tokens / wall, 3),
        "tau": round(tokens / steps, 3),
        "widths": format_width_steps(warm_profile, profiled) if profiled else "",
        "staged": staged_steps(warm_profile, profiled),
    }
    return row, outputs


def write_report(out: str, rows: list[dict]) -> None:
    """The markdown table and the plot: each mode's ratio to its round's plain decoding."""
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    lines = [
        "| mode | tok/s per round | vs plain per round | median vs plain | tau | step cost per round "
        "| steps per width | staged verify |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for mode in modes:
        mine = [r for r in rows if r["mode"] == mode]
        ratios = [r["vs_plain"] for r in mine if r["vs_plain"] is not None]
        median = f"{statistics.median(ratios):.2f}" if ratios else "-"
        rates = ", ".join(f"{r['tok_s']:.2f}" for r in mine)
        vs_plain = ", ".join(f"{ratio:.2f}" for ratio in ratios)
        taus = ", ".join(f"{r['tau']:.2f}" for r in mine)
        widths = ", ".join(r.get("widths") or "-" for r in mine)
        # A step's cost in plain steps: tau tokens a step, at vs_plain of plain decoding's rate.
        costs = ", ".join(f"{r['tau'] / r['vs_plain']:.2f}" if r["vs_plain"] else "-" for r in mine)
        staged = ", ".join(r.get("staged") or "-" for r in mine)
        lines.append(f"| {mode} | {rates} | {vs_plain} | {median} | {taus} | {costs} | {widths} | {staged} |")
    write_markdown(os.path.join(out, "results.md"), lines)
    plt = agg_pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for mode in modes:
        mine = [r for r in rows if r["mode"] == mode and r["vs_plain"] is not None]
        ax.plot([r["round"] for r in mine], [r["vs_plain"] for r in mine], marker="o", label=mode)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xlabel("round")
    ax.set_ylabel("tokens/s vs plain (same round)")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, os.path.join(out, "results.png"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--modes",
        required=True,
        help="comma-separated: plain, dflash, adaptive, w<k>[+<k>...], adaptive:<k>[+<k>...], "
        "adaptive@<key>=<json>[@...]",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--drafter", default=DEFAULT_DRAFTER)
    parser.add_argument("--token-map", default=os.path.join(DEFAULT_DRAFTER, "token-map-8192.pt"))
    parser.add_argument("--prompts", default=os.path.join(HERE, "..", "..", "shared", "data", "gsm8k.jsonl"))
    parser.add_argument("--offset", type=int, default=120, help="skip the prompts the tau protocol measures")
    parser.add_argument("--num-prompts", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--concurrency", type=int, default=1, help="requests in flight")
    parser.add_argument(
        "--cores", default="0", help="the servers' cores (SGLANG_CPU_OMP_THREADS_BIND), e.g. 0-1"
    )
    parser.add_argument(
        "--dtype",
        choices=("float32", "bfloat16"),
        default="float32",
        help="the servers' dtype; bfloat16 rounds a verify and a decode step differently, so its "
        "greedy output is recorded against plain decoding's but not required to match",
    )
    parser.add_argument(
        "--cpu-malloc",
        choices=CPU_MALLOCS,
        default="tuned",
        help="the servers' glibc malloc settings, as sglang-dflash bench --cpu-malloc (tuned: keep the "
        "memory touched, so steps of changing shapes do not page-fault their buffers in again)",
    )
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    modes = args.modes.split(",")
    for mode in modes:
        mode_flags(mode, args.drafter, args.token_map)  # refuse a bad mode before any server starts
    if "plain" not in modes:
        raise SystemExit(
            f"--modes is {args.modes!r}; expected plain among them (the reference of each round)"
        )
    if args.concurrency < 1 or args.num_prompts < args.concurrency:
        raise SystemExit(
            f"--concurrency is {args.concurrency}; expected 1 .. --num-prompts ({args.num_prompts})"
        )
    os.makedirs(args.out, exist_ok=True)
    prompts = chat_prompts(args.model, args.prompts, args.offset, args.num_prompts)
    from tqdm import tqdm

    rows, reference = [], None
    with tqdm(total=args.rounds * len(modes), desc="same-load", unit="server") as bar:
        for round_ in range(args.rounds):
            plain_rate = None
            for mode in ["plain"] + [m for m in modes if m != "plain"]:
                row, outputs = run_mode(args, mode, round_, prompts)
                if mode == "plain":
                    plain_rate, reference = row["tok_s"], reference or outputs
                row["vs_plain"] = round(row["tok_s"] / plain_rate, 3)
                row["same_as_plain"] = outputs == reference
                rows.append(row)
                bar.write(json.dumps(row))
                bar.update()
    with open(os.path.join(args.out, "rows.json"), "w", encoding="utf-8") as f:
        json.dump({"args": vars(args), "rows": rows}, f, indent=1)
    write_report(args.out, rows)
    check_greedy_output(rows, args.dtype)


if __name__ == "__main__":
    main()
