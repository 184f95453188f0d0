"""Self-distillation in float32 against bf16, one chunk of prompts, one thread (docs/training.md,
"Token stores"): the response tokens a second of each, and how far the bf16 responses stay the
float32 target's (identical responses, the shared prefix, the share of bf16 response tokens that are
the float32 target's teacher-forced argmax: the labels a drafter would learn).

    python bench/gen_dtype.py --source sport-problems --prompts 32 --mode weights  # bf16 weights
    python bench/gen_dtype.py --source sport-problems --prompts 32 --mode autocast # bf16 autocast

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from sglang_dflash.evaluation import ConsistencyReport, first_divergence, teacher_forced_gaps
from sglang_dflash.smollm2 import ensure_smollm2
from sglang_dflash.train.data import builtin_prompts, chat_prompt_ids, generate_batch


def _shared_prefix_share(reference: list[int], other: list[int]) -> float:
    """The share of ``reference``'s tokens before the two first differ."""
    divergence = first_divergence(reference, other)
    return 1.0 if divergence is None else divergence / max(1, len(reference))


def _argmax_share(target: torch.nn.Module, prompts: list[list[int]], responses: list[list[int]]) -> float:
    """The share of response tokens that are ``target``'s greedy choice given everything before them
    (the bench's teacher-forced re-score, its argmax rate)."""
    return ConsistencyReport.from_gaps(teacher_forced_gaps(target, prompts, responses)).argmax_rate


def _timed(target: torch.nn.Module, prompts: list[list[int]], eos: int) -> tuple[list[list[int]], float]:
    start = time.perf_counter()
    with torch.inference_mode():
        responses = generate_batch(target, prompts, 256, eos)
    return responses, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", default="sport-problems")
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--mode", choices=("weights", "autocast"), default="weights")
    args = parser.parse_args()
    torch.set_num_threads(1)
    path = ensure_smollm2()
    tokenizer = AutoTokenizer.from_pretrained(path)
    target = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    prompts = sorted(
        (chat_prompt_ids(tokenizer, p) for p in builtin_prompts(sources=(args.source,))[: args.prompts]),
        key=len,
    )
    fp32, fp32_s = _timed(target, prompts, tokenizer.eos_token_id)
    if args.mode == "weights":
        bf16_target = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16).eval()
        bf16, bf16_s = _timed(bf16_target, prompts, tokenizer.eos_token_id)
    else:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            bf16, bf16_s = _timed(target, prompts, tokenizer.eos_token_id)
    result = {
        "source": args.source,
        "prompts": len(prompts),
        "mode": args.mode,
        "float32_tokens_per_s": sum(map(len, fp32)) / fp32_s,
        "bf16_tokens_per_s": sum(map(len, bf16)) / bf16_s,
        "identical_responses": sum(a == b for a, b in zip(fp32, bf16)),
        "mean_shared_prefix_share": sum(map(_shared_prefix_share, fp32, bf16)) / len(prompts),
        "bf16_tokens_float32_argmax_share": _argmax_share(target, prompts, bf16),
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
