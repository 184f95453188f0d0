#!/usr/bin/env bash
# One stage of the GPU acceptance + benchmark session (issue 12), run on the GPU host by the device
# tool, one stage per call, after the kit's parts are installed (docs/gpu-runbook.md):
#
#   bash bench/gpu_session.sh accept      # pytest -m gpu tests/gpu: lossless, meta_info, aborts, built-in loads our files
#   bash bench/gpu_session.sh bench       # trained drafter: baseline, ours (and without split-KV), built-in, NGRAM at c = 1-64
#   bash bench/gpu_session.sh overhead    # random drafter (tau ~1), c = 1 and 16; then the temperature-0.7 rows
#   bash bench/gpu_session.sh short       # a 15-minute device budget: trained drafter (baseline, ours, ours
#                                         # without split-KV attention, built-in at c = 1, 16, 64, re-scored)
#   bash bench/gpu_session.sh short-random  # then: random drafter at c = 1 (baseline, ours, ours without split-KV)
#
# Every stage installs this checkout into the kit's site (offline, seconds), writes what it measured
# under $OUT (at most 8 files, two folders deep: the device tool's limits) and prints a short table
# last. Knobs (environment): NUM_PROMPTS, ROUNDS, CONCURRENCY, MAX_NEW_TOKENS, MODE_TIMEOUT_S, ATTENTION_BACKEND,
# DATA (the prompt sets' folder, default .gpu-data), MODEL (default the kit's SmolLM2), PYTEST_ARGS
# (accept: e.g. '-k "not deterministic"' to split the GPU tests over two calls).
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
CONCURRENCY="${CONCURRENCY:-1,4,16,64}"
# One mode must not eat the whole 10-minute call; the report keeps the modes that finished.
MODE_TIMEOUT_S="${MODE_TIMEOUT_S:-240}"

run() {
  if [ "${DRY_RUN:-0}" = 1 ]; then
    printf '%s\n' "$*"
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
    bench main --drafter "$DRAFTER" --modes baseline,dflash,dflash-nosplitkv,dflash-builtin,ngram \
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
    # The split-KV kernel alone first (seconds): bf16 and CUDA-graph replay against its definition.
    run python3 -m pytest -m gpu tests/gpu/test_gpu_block_attention.py -q -p no:cacheprovider \
      --junitxml "$OUT/block-attention.xml" || rc=$?
    bench main --drafter "$DRAFTER" --modes baseline,dflash,dflash-nosplitkv,dflash-builtin \
      --concurrency "$CONCURRENCY" --num-prompts "$NUM_PROMPTS" --rounds "$ROUNDS" || rc=$?
    ;;
  short-random)
    # The random drafter (tau 1: the per-step overhead) at concurrency 1, the call after `short`.
    prepare
    bench random-drafter --drafter random --modes baseline,dflash,dflash-nosplitkv \
      --concurrency 1 --num-prompts 8 --rounds 4 --no-rescore || rc=$?
    ;;
  *)
    echo "gpu_session.sh: stage is '$stage'; expected one of accept, bench, overhead, short, short-random" >&2
    exit 2
    ;;
esac
table
exit "$rc"
