#!/bin/bash
# A/B of the hot-vocabulary draft logits: old = a git worktree of 17bd5e1 at /tmp/wt-old (git worktree add /tmp/wt-old 17bd5e1), new = this checkout; interleaved.
export PATH=$HOME/.cache/sglang-dflash/venv/bin:$PATH
cd "$(dirname "$0")/../../.."  # the checkout
export SGLANG_DFLASH_SGL_KERNEL_STANDIN=1
O=${1:-bench/results/2026-11-29-cpu-hot-vocabulary-logits}
common=(--device cpu --model $HOME/.cache/sglang-dflash/models/smollm2-135m-instruct
  --drafter drafters/smollm2-135m-instruct --token-map drafters/smollm2-135m-instruct/token-map-8192.pt
  --datasets ../shared/data/gsm8k.jsonl --modes dflash --num-prompts 16 --rounds 2 --concurrency 1,16 --max-new-tokens 48)
for dtype in float32 bfloat16; do
  for round in 1 2; do
    for version in old new; do
      pp=tests/cpu_host; [[ $version == old ]] && pp=/tmp/wt-old:tests/cpu_host
      date; PYTHONPATH=$pp timeout 600 sglang-dflash bench "${common[@]}" --dtype $dtype --out $O/$dtype-$version-$round > $O/$dtype-$version-$round.log 2>&1; echo "$dtype $version $round EXIT $?"
    done
  done
done
date
