#!/usr/bin/env bash
# Issue 26 item 2 (2026-11-25): drafter start and size at equal steps on the same data.  Run as
#   bash run.sh layers2-target "--num-draft-layers 2" layers2-random "--num-draft-layers 2 --no-init-from-target" \
#     layers1-target "--num-draft-layers 1" layers4-target-i768 "--num-draft-layers 4 --intermediate-size 768"
# (F: the evaluation-shaped feature store rebuilt by recipe-cpu.sh's features stage).
set -euo pipefail
source ~/.cache/sglang-dflash/venv/bin/activate
cd /work/main
T=$HOME/.cache/sglang-dflash/models/smollm2-135m-instruct
F=$HOME/.cache/sglang-dflash/recipe-cpu/features/code-completions+word-problems
OUT=$HOME/.cache/sglang-dflash/init-compare
mkdir -p $OUT
while [[ $# -gt 0 ]]; do
  name=$1; IFS=' ' read -r -a flags <<< "$2"; shift 2
  [[ -f $OUT/$name/train_summary.json ]] && continue
  start=$(date +%s)
  sglang-dflash train --target "$T" --features "$F" --out "$OUT/$name" --block-size 16 --target-layer-ids 1 9 17 26 \
    --mask-token-id 6 --mask-token "<filename>" --steps 60 --batch-size 8 --num-anchors 32 --max-seq-len 512 \
    --lr 8e-4 --warmup-steps 10 --gamma 7 --sample-positions --heldout 32 --eval-every 30 --log-every 10 \
    --snapshot-every 1000 --save-every 1000 --threads 1 --seed 0 --no-resume "${flags[@]}" > "$OUT/$name.log" 2>&1
  echo "{\"run\": \"$name\", \"seconds\": $(( $(date +%s) - start ))}" >> $OUT/times.jsonl
done
echo done
