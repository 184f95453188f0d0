"""Replayed tau of every kept snapshot of a training run on the first N prompts of one evaluation set.

    python snapshot_tau.py RUN_WORK_DIR humaneval 25 snapshot-tau-humaneval.json

RUN_WORK_DIR is the recipe's $WORK (its drafter/checkpoints/step-*.pt are the snapshots); the
responses come from the kept greedy-SET.jsonl.gz (copied: the kept file is never written).
"""

import glob
import json
import os
import shutil
import sys
import tempfile

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from sglang_dflash import SamplingParams, load_drafter
from sglang_dflash.smollm2 import IM_END_ID, ensure_smollm2
from sglang_dflash.train.acceptance import greedy_responses, measure_tau
from sglang_dflash.train.data import chat_prompt_ids, read_prompts
from sglang_dflash.train.trainer import export_snapshot

HERE = os.path.dirname(os.path.abspath(__file__))
DRAFTER = os.path.dirname(HERE)
DATA = os.path.join(DRAFTER, "..", "..", "..", "shared", "data")


def main(run: str, evaluation_set: str, num_prompts: int, out: str) -> None:
    torch.set_num_threads(1)
    path = ensure_smollm2()
    tokenizer = AutoTokenizer.from_pretrained(path)
    target = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    texts = read_prompts(os.path.join(DATA, f"{evaluation_set}.jsonl"))[:num_prompts]
    prompts = [chat_prompt_ids(tokenizer, t) for t in texts]
    params = SamplingParams(max_new_tokens=256, stop_token_ids=(IM_END_ID,))
    scratch = tempfile.mkdtemp()
    kept = shutil.copy(os.path.join(DRAFTER, f"greedy-{evaluation_set}.jsonl.gz"), scratch)
    responses = greedy_responses(target, prompts, params, kept)
    rows = []
    for snapshot in sorted(glob.glob(os.path.join(run, "drafter", "checkpoints", "step-*.pt"))):
        name = os.path.basename(snapshot)[: -len(".pt")]
        drafter_dir = export_snapshot(
            os.path.join(run, "drafter"), snapshot, os.path.join(scratch, name), target
        )
        drafter = load_drafter(drafter_dir, target_config=target.config)
        result = measure_tau(target, drafter, prompts, params, batch_size=5, responses=responses)
        rows.append(
            {
                "snapshot": name,
                "tau": result["mean_tau"],
                "teacher_forced_accept": result["teacher_forced_accept"],
            }
        )
        print(rows[-1], flush=True)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"set": evaluation_set, "prompts": num_prompts, "snapshots": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
