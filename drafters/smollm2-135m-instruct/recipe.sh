#!/usr/bin/env bash
# Train the DFlash drafter for SmolLM2-135M-Instruct on a GPU host (see README.md next to this file).
#
#   bash drafters/smollm2-135m-instruct/recipe.sh [TARGET_DIR] [EVAL_DATA_DIR]
#
# TARGET_DIR defaults to /tmp/models/smollm2-135m-instruct (made by the GPU kit), EVAL_DATA_DIR to
# ../shared/data (humaneval.jsonl and gsm8k.jsonl: excluded from the training prompts, then used to
# measure acceptance). Writes the drafter into this directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# python3 -m, not the console script: a GPU host's bin folder need not be on PATH.
sglang-dflash() { python3 -m sglang_dflash.cli "$@"; }
target=${1:-/tmp/models/smollm2-135m-instruct}
evaldata=${2:-$here/../../../shared/data}
work=${WORK:-/tmp/dflash-smollm2}
mkdir -p "$work"

# 1. Self-distillation: the built-in prompt mix (disjoint from the evaluation sets), answered by the
#    target greedily and twice more with sampling for variety.
for pass in "0 0.0" "1 0.8" "2 0.8"; do
  set -- $pass
  sglang-dflash gen-data --target "$target" --backend sglang --seed "$1" --temperature "$2" \
    --max-new-tokens 384 --exclude "$evaldata/humaneval.jsonl" "$evaldata/gsm8k.jsonl" \
    --out "$work/records-$1.jsonl"
done
cat "$work"/records-*.jsonl > "$work/records.jsonl"

# 2. Train: 2 draft layers, block 16, 4 target layers as context, mask token "<filename>" (id 6: the
#    vocab has no spare slot for a new <|MASK|> token).
sglang-dflash train --target "$target" --data "$work/records.jsonl" --out "$work/drafter" \
  --num-draft-layers 2 --block-size 16 --target-layer-ids 1 9 17 26 --mask-token-id 6 --mask-token "<filename>" \
  --steps 3000 --batch-size 16 --num-anchors 48 --max-seq-len 768 --lr 6e-4 --warmup-steps 100 --gamma 7

# 3. Acceptance with the reference implementation (greedy, block 16, 256 new tokens).
for set in humaneval gsm8k; do
  sglang-dflash eval-tau --target "$target" --drafter "$work/drafter" --prompts "$evaldata/$set.jsonl" \
    --num-prompts 100 --max-new-tokens 256 --batch-size 32 --device cuda --json-out "$work/tau-$set.json"
done

# 4. Ship it only if it is accepted more often than the shipped drafter on both sets (same prompts).
if python3 - "$work" "$here" <<'PY'
import json, sys
new, old = sys.argv[1], sys.argv[2]
tau = lambda d, s: json.load(open(f"{d}/tau-{s}.json"))["mean_tau"]
better = all(tau(new, s) > tau(old, s) for s in ("humaneval", "gsm8k"))
print({s: (round(tau(old, s), 3), round(tau(new, s), 3)) for s in ("humaneval", "gsm8k")}, "better:", better)
sys.exit(0 if better else 1)
PY
then
  cp "$work"/drafter/{config.json,*.safetensors,train_log.jsonl,train_summary.json} "$here"/
  cp "$work"/tau-*.json "$here"/
else
  echo "not shipped: the new drafter stays in $work/drafter"
fi
