"""Acceptance (tau) of our DFLASH on JSON-schema prompts: without the grammar, with it, and with the
drafts masked by it too, side by side on CPU servers (SmolLM2-135M-Instruct, float32, greedy).

    python bench/grammar_tau.py --drafter drafters/smollm2-135m-instruct --out bench/results/<run>

Every configuration answers the same prompts at the same concurrency; constrained outputs are
compared token for token with plain constrained decoding (and must parse as JSON), tau is completion
tokens per verify step.  Writes ``results.json``, ``results.md`` and ``results.png`` to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests")
MASK_DRAFTS_ENV = "SGLANG_DFLASH_MASK_DRAFTS"
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "city": {"type": "string"},
        "hobbies": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    },
    "required": ["name", "age", "city", "hobbies"],
}
# Made-up requests (not from any evaluation set): each asks for one person as JSON.
SUBJECTS = [
    "a retired sailor",
    "a young chess player",
    "a baker from Lyon",
    "a software engineer",
    "a painter who loves the sea",
    "a marathon runner",
    "a school teacher",
    "a jazz musician",
    "a farmer in Kenya",
    "a student of astronomy",
    "a nurse working nights",
    "a librarian",
    "a mountain guide",
    "a chef who cooks ramen",
    "a photographer",
    "a beekeeper",
]
CONFIGURATIONS = (
    # name, DFLASH?, grammar?, masked drafts?
    ("plain, grammar", False, True, False),
    ("DFLASH, no grammar", True, False, False),
    ("DFLASH, grammar", True, True, False),
    ("DFLASH, grammar, masked drafts", True, True, True),
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--drafter", required=True)
    p.add_argument("--out", required=True, help="directory for results.{json,md,png}")
    p.add_argument("--model", default=None, help="default: SmolLM2-135M-Instruct")
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--concurrency", type=int, default=4)
    return p.parse_args(argv)


def run_configuration(server, prompts: list[list[int]], params: dict, concurrency: int) -> dict:
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        replies = list(pool.map(lambda ids: server.generate(ids, params), prompts))
    wall = time.perf_counter() - started
    tokens = sum(r["meta_info"]["completion_tokens"] for r in replies)
    steps = sum(r["meta_info"].get("spec_verify_ct") or 0 for r in replies)
    return {
        "outputs": [r["output_ids"] for r in replies],
        "texts": [r["text"] for r in replies],
        "tokens": tokens,
        "verify_steps": steps,
        "tau": round(tokens / steps, 3) if steps else None,
        "tok_per_s": round(tokens / wall, 2),
    }


def parses(text: str) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and set(SCHEMA["required"]) <= set(value)


def write_report(rows: dict[str, dict], out: str, meta: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sglang_dflash.bench.report import save_figure

    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=2)
    keys = ["tau", "tokens", "verify_steps", "tok_per_s", "valid_json", "exact_vs_plain_grammar"]
    lines = ["| configuration | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
    lines += [
        f"| {name} | " + " | ".join(str(row.get(k, "")) for k in keys) + " |" for name, row in rows.items()
    ]
    table = "\n".join(lines)
    with open(os.path.join(out, "results.md"), "w", encoding="utf-8") as f:
        f.write(f"{meta['title']}\n\n{table}\n")
    named = [(name, row["tau"]) for name, row in rows.items() if row.get("tau")]
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.barh([n for n, _ in named], [t for _, t in named])
    ax.set_xlabel("tau (tokens per verify step)")
    ax.set_title("DFLASH on JSON-schema prompts (CPU, greedy)")
    fig.tight_layout()
    save_figure(fig, os.path.join(out, "results.png"))
    print(table)


def main(argv: list[str] | None = None) -> int:
    from transformers import AutoTokenizer

    sys.path.insert(0, TESTS)  # the CPU test servers live with the tests
    from cpu_server import CpuServer

    from sglang_dflash.smollm2 import ensure_smollm2

    args = parse_args(argv)
    model = args.model or ensure_smollm2()
    tokenizer = AutoTokenizer.from_pretrained(model)
    prompts = []
    for subject in SUBJECTS:
        message = [
            {"role": "user", "content": f"Describe {subject} as a JSON object: name, age, city, hobbies."}
        ]
        ids = tokenizer.apply_chat_template(message, add_generation_prompt=True)
        prompts.append(list(ids if isinstance(ids, list) else ids["input_ids"]))
    workdir = tempfile.mkdtemp(prefix="dflash-grammar-tau-")
    rows: dict[str, dict] = {}
    for name, speculative, grammar, masked in CONFIGURATIONS:
        flags = ["--max-total-tokens", "6144", "--random-seed", "0"]
        if speculative:
            flags += ["--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", args.drafter]
        params = {"temperature": 0, "max_new_tokens": args.max_new_tokens}
        if grammar:
            params["json_schema"] = json.dumps(SCHEMA)
        os.environ[MASK_DRAFTS_ENV] = "1" if masked else "0"
        log = os.path.join(workdir, name.replace(", ", "-").replace(" ", "_") + ".log")
        server = CpuServer(model, flags, log_path=log)
        try:
            rows[name] = run_configuration(server, prompts, params, args.concurrency)
        finally:
            server.shutdown()
        print(name, {k: v for k, v in rows[name].items() if k not in ("outputs", "texts")}, flush=True)
    reference = rows["plain, grammar"]["outputs"]
    for name, row in rows.items():
        row["valid_json"] = f"{sum(parses(t) for t in row['texts'])}/{len(row['texts'])}"
        if name != "DFLASH, no grammar":
            row["exact_vs_plain_grammar"] = (
                f"{sum(a == b for a, b in zip(row['outputs'], reference))}/{len(reference)}"
            )
    meta = {
        "title": (
            f"DFLASH tau on {len(prompts)} JSON-schema prompts, SmolLM2-135M-Instruct float32, CPU, greedy, "
            f"{args.max_new_tokens} new tokens, concurrency {args.concurrency}, drafter {args.drafter}"
        ),
        "schema": SCHEMA,
        "logs": workdir,
    }
    write_report(rows, args.out, meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
