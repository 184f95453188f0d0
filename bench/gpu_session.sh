#!/usr/bin/env bash
# One stage of the GPU acceptance + benchmark session (issue 12), run on the GPU host by the device
# tool, one stage per call, after the kit's parts are installed (docs/gpu-runbook.md):
#
#   bash bench/gpu_session.sh accept      # pytest -m gpu tests/gpu: lossless, meta_info, aborts, built-in loads our files
#   bash bench/gpu_session.sh bench       # trained drafter: baseline, ours (and without split-KV, and verifying
#                                         # its 16-node tree), built-in, NGRAM at c = 1-64
#   bash bench/gpu_session.sh overhead    # random drafter (tau ~1), c = 1 and 16; then the temperature-0.7 rows
#   bash bench/gpu_session.sh short       # a 15-minute device budget: trained drafter (baseline, ours, ours
#                                         # verifying its 16-node tree, built-in at c = 1, 16, 64, re-scored)
#   bash bench/gpu_session.sh short-random  # then: random drafter at c = 1 (baseline, ours, ours without split-KV)
#   bash bench/gpu_session.sh train       # issue 26: train the drafter warm from the shipped one for TRAIN_MINUTES
#                                         # on every committed token store; weights under $OUT/train
#
# Every stage installs this checkout into the kit's site (offline, seconds), writes what it measured
# under $OUT (at most 8 files, two folders deep: the device tool's limits) and prints a short table
# last. Knobs (environment): NUM_PROMPTS, ROUNDS, CONCURRENCY, MAX_NEW_TOKENS, MODE_TIMEOUT_S, ATTENTION_BACKEND,
# DATA (the prompt sets' folder, default .gpu-data), MODEL (default the kit's SmolLM2), PYTEST_ARGS
# (accept: e.g. '-k "not deterministic"' to split the GPU tests over two calls), and for train
# TRAIN_MINUTES (whole minutes, default 6), TRAIN_BATCH (32), TRAIN_LR (6e-5), TRAIN_WARMUP (100).
# DRY_RUN=1 prints the commands instead of running them (tests/test_gpu_session.py checks them on CPU).
set -euo pipefail
cd "$(dirname "$0")/.."

stage="${1:-}"
OUT="${OUT:-/tmp/gpu-session-out}"
DATA="${DATA:-.gpu-data}"
MODEL="${MODEL:-/tmp/models/smollm2-135m-instruct}"
DRAFTER="drafters/smollm2-135m-instruct"
NUM_PROMPTS="${NUM_PROMPTS:-64}"
MAX_NEW_TOKENS="${MAX_NEW_TOKENS:-256}"
# The target's attention backend: triton by default; fa3 is what SGLang picks on an H100 unasked.
ATTENTION_BACKEND="${ATTENTION_BACKEND:-triton}"
if [ "$stage" = short ] || [ "$stage" = short-random ]; then  # each fits one call of about 7 minutes
  ROUNDS="${ROUNDS:-4}"
  CONCURRENCY="${CONCURRENCY:-1,16,64}"
  MODE_TIMEOUT_S="${MODE_TIMEOUT_S:-200}"
fi
ROUNDS="${ROUNDS:-8}"
TRAIN_MINUTES="${TRAIN_MINUTES:-6}"
TRAIN_BATCH="${TRAIN_BATCH:-32}"
TRAIN_LR="${TRAIN_LR:-6e-5}"
TRAIN_WARMUP="${TRAIN_WARMUP:-100}"
CONCURRENCY="${CONCURRENCY:-1,4,16,64}"
# One mode must not eat the whole 10-minute call; the report keeps the modes that finished.
MODE_TIMEOUT_S="${MODE_TIMEOUT_S:-240}"

run() {
  if [ "${DRY_RUN:-0}" = 1 ]; then
    # Quoted as the shell would need it (a bare <filename> would be a redirection when pasted).
    printf '%q ' "$@"
    echo
  else
    "$@"
  fi
}

prepare() {
  if [ "${DRY_RUN:-0}" = 1 ]; then
    return
  fi
  # shellcheck disable=SC1091
  source /tmp/site/env.sh
  mkdir -p "$OUT"
  exec > >(tee -a "$OUT/$stage.log") 2>&1  # the whole log comes back, not only the reply's tail
  python3 -m pip install -q --no-deps --no-build-isolation --no-index -e .
  export PYTHONUNBUFFERED=1
}

bench() {  # bench OUT_SUBDIR [bench flags...]
  local sub="$1"
  shift
  # python3 -m, not the console script: the host's bin folder need not be on PATH.
  run python3 -m sglang_dflash.cli bench --model "$MODEL" --datasets "$DATA/humaneval.jsonl" "$DATA/gsm8k.jsonl" \
    --max-new-tokens "$MAX_NEW_TOKENS" --timeout-s "$MODE_TIMEOUT_S" --attention-backend "$ATTENTION_BACKEND" \
    --out "$OUT/$sub" "$@"
}

train_drafter() {  # the drafter's training on the GPU (stage train)
  local tokens="$DRAFTER/token-data" work=/tmp/gpu-train extra
  # Every committed token store but default: the shipped run's in its order first (the hold-out is
  # drawn among the first records: the CPU runs' 32 records), then the newer ones.
  mapfile -t extra < <(python3 -m sglang_dflash.cli store-order "$tokens" --summary "$DRAFTER/train_summary.json" \
    --exclude "$tokens/default")
  # The CPU runs' data, hold-out and objective (recipe-cpu.sh, RUNS.md "Sixtieth run"): 30 chunks of
  # the default store, the same 32 held-out records among the first 1696, gamma 3, sampled positions;
  # four times their batch, bf16, and a schedule sized to end TRAIN_MINUTES after the start.
  run python3 -m sglang_dflash.cli train --target "$MODEL" --features "$tokens/default" \
    --extra-features "${extra[@]}" --features-from-tokens --num-chunks 30 --heldout 32 --heldout-among 1696 \
    --eval-every 50 --init-drafter "$DRAFTER" --out "$work" --num-draft-layers 2 --block-size 16 \
    --target-layer-ids 1 9 17 26 --mask-token-id 6 --mask-token "<filename>" --steps 100000 \
    --batch-size "$TRAIN_BATCH" --num-anchors 32 --max-seq-len 512 --lr "$TRAIN_LR" --warmup-steps "$TRAIN_WARMUP" \
    --gamma 3 --sample-positions --log-every 10 --save-every 200 --device cuda --precision bf16 \
    --feature-precision bf16 --schedule-minutes "$TRAIN_MINUTES" --max-minutes "$((TRAIN_MINUTES + 1))" || return
  # Back to this machine: config, the weights in 15 MB shards (a file comes back if under 16 MiB), logs.
  run mkdir -p "$OUT/train"
  run cp "$work/config.json" "$work/model.safetensors.index.json" "$work/train_log.jsonl" \
    "$work/train_summary.json" "$work"/model-*.safetensors "$OUT/train/"
}

table() {  # the markdown tables written so far, last in the output
  if [ "${DRY_RUN:-0}" != 1 ]; then
    for md in "$OUT"/*/results.md; do
      [ -f "$md" ] && { echo "== $md"; cat "$md"; }
    done
  fi
}

# A failed step still lets the later ones run and the tables print; the stage's exit code is the
# first failure's.
rc=0
case "$stage" in
  accept)
    prepare
    # shellcheck disable=SC2086  # PYTEST_ARGS is split on purpose (e.g. -k "lossless or builtin")
    run python3 -m pytest -m gpu tests/gpu -s -q -p no:cacheprovider --junitxml "$OUT/gpu-tests.xml" \
      ${PYTEST_ARGS:-} || rc=$?
    ;;
  bench)
    prepare
    bench main --drafter "$DRAFTER" --modes baseline,dflash,dflash-tree,dflash-nosplitkv,dflash-builtin,ngram \
      --concurrency "$CONCURRENCY" --num-prompts "$NUM_PROMPTS" --rounds "$ROUNDS" || rc=$?
    ;;
  overhead)
    prepare
    bench random-drafter --drafter random --modes baseline,dflash,dflash-builtin \
      --concurrency 1,16 --num-prompts 32 --rounds "$ROUNDS" || rc=$?
    bench temperature-0.7 --drafter "$DRAFTER" --modes baseline,dflash,dflash-builtin \
      --concurrency 1,16 --num-prompts 32 --rounds "$ROUNDS" --temperature 0.7 || { [ "$rc" != 0 ] || rc=$?; }
    ;;
  short)
    # The goals' trained-drafter measurements, in the one call a 15-minute budget leaves after the
    # kit's installs; each mode is cut at MODE_TIMEOUT_S and the report keeps what finished.
    prepare
    # The split-KV kernel alone first (seconds): bf16, CUDA-graph replay and a verify tree's mask
    # against its definition.
    run python3 -m pytest -m gpu tests/gpu/test_gpu_block_attention.py -q -p no:cacheprovider \
      --junitxml "$OUT/block-attention.xml" || rc=$?
    bench main --drafter "$DRAFTER" --modes baseline,dflash,dflash-tree,dflash-builtin \
      --concurrency "$CONCURRENCY" --num-prompts "$NUM_PROMPTS" --rounds "$ROUNDS" || rc=$?
    ;;
  short-random)
    # The random drafter (tau 1: the per-step overhead) at concurrency 1, the call after `short`.
    prepare
    bench random-drafter --drafter random --modes baseline,dflash,dflash-nosplitkv \
      --concurrency 1 --num-prompts 8 --rounds 4 --no-rescore || rc=$?
    ;;
  train)
    # Issue 26 on the GPU: the drafter warm from the shipped one on every committed token store (the
    # target computes each drawn sequence's features), its schedule sized to TRAIN_MINUTES. Tau is
    # replayed on a CPU afterwards (docs/gpu-runbook.md "Training the drafter on the GPU").
    prepare
    train_drafter || rc=$?
    ;;
  *)
    echo "gpu_session.sh: stage is '$stage'; expected one of accept, bench, overhead, short, short-random, train" >&2
    exit 2
    ;;
esac
table
exit "$rc"
