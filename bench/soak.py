"""Soak our DFLASH on this CPU at full size: a plain server for the greedy references, then a DFLASH
server, each started and stopped here (one at a time), and the soak table printed at the end.

    python bench/soak.py                                   # 300 requests, 16 clients, max_tokens 1..96
    python bench/soak.py --requests 1000 --json-out soak.json

Uses the CPU test servers of ``tests/cpu_server.py`` (SGLang's CPU flags, the test-only sgl-kernel
stand-in where sgl-kernel's CPU build is missing, the strict idle memory check on).  Exit status 1
when anything the soak checks went wrong (errors, unfinished requests, greedy text unlike plain
decoding, leaked KV slots, a server that stops answering).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from sglang_dflash.bench.soak import format_table, make_plan, reference_outputs, soak

TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=None, help="target (default: SmolLM2-135M-Instruct, converted once)")
    p.add_argument(
        "--drafter", default=None, help="drafter (default: the shipped SmolLM2 drafter, else a random one)"
    )
    p.add_argument("--requests", type=int, default=300)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--max-tokens", type=int, default=96)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--datasets",
        nargs="+",
        default=["humaneval.jsonl", "gsm8k.jsonl"],
        help="JSONL prompt sets (names are looked up in ../shared/data)",
    )
    p.add_argument("--prompts-per-set", type=int, default=8)
    p.add_argument("--max-total-tokens", type=int, default=16384)
    p.add_argument("--json-out", default=None, help="write the row and the problems found here")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    from transformers import AutoTokenizer

    sys.path.insert(0, TESTS)  # the CPU test servers live with the tests
    from cpu_server import CpuServer, data_file, smollm2_drafter

    from sglang_dflash.bench.datasets import load_dataset
    from sglang_dflash.smollm2 import ensure_smollm2

    args = parse_args(argv)
    model = args.model or ensure_smollm2()
    workdir = tempfile.mkdtemp(prefix="dflash-soak-")
    drafter, kind = (
        (args.drafter, "given") if args.drafter else smollm2_drafter(model, os.path.join(workdir, "drafter"))
    )
    tokenizer = AutoTokenizer.from_pretrained(model)
    files = [name if os.path.exists(name) else data_file(name) for name in args.datasets]
    prompts = [
        list(p.input_ids) for path in files for p in load_dataset(path, tokenizer, args.prompts_per_set)
    ]
    plan = make_plan(prompts, args.requests, args.max_tokens, args.seed)
    flags = ["--max-total-tokens", str(args.max_total_tokens), "--random-seed", str(args.seed)]

    plain = CpuServer(model, flags, log_path=os.path.join(workdir, "plain.log"))
    try:
        reference = reference_outputs(plain.base, plan, args.concurrency)
    finally:
        plain.shutdown()
    dflash_flags = [
        *flags,
        "--enable-metrics",
        "--speculative-algorithm",
        "DFLASH",
        "--speculative-draft-model-path",
        drafter,
    ]
    server = CpuServer(model, dflash_flags, log_path=os.path.join(workdir, "dflash.log"))
    try:
        row, found = soak(server, plan, args.concurrency, reference)
    finally:
        server.shutdown()

    print(
        f"\nSoak: DFLASH ({kind} drafter {drafter}) on CPU, {args.concurrency} clients, "
        f"max_tokens 1..{args.max_tokens}"
    )
    print(format_table({f"DFLASH, {len(plan)} requests": row}))
    for problem in found[:50]:
        print("problem:", problem)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump({"row": row, "problems": found, "logs": workdir}, f, indent=2)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
