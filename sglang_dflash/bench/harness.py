"""Benchmark orchestration: every mode in its own process, same target, drafter, prompts and sampling.

    sglang-dflash bench --model T --drafter D --datasets humaneval.jsonl gsm8k.jsonl \\
        --num-prompts 64 --max-new-tokens 256 --concurrency 1,4,16 --out bench/results/run

Modes: ``baseline`` (no speculation), ``dflash`` (ours as it ships: on GPUs with our split-KV
block attention; on CPU steps of one request verify the drafter folder's token tree, wider steps
its wide-batch tree),
``dflash-adaptive`` (ours with ``--speculative-adaptive``: per-step verify width, CPU only for
now), ``dflash-chain`` (ours verifying the chain at every step, ``SGLANG_DFLASH_VERIFY_TREE=off``),
``dflash-tree`` (ours verifying the drafter folder's token tree at every batch size:
``verify-tree.json`` on CPU, the block-wide ``verify-trees/tree-15.json`` on GPUs),
``dflash-nosplitkv`` (ours with ``SGLANG_DFLASH_SPLITKV=0``: SGLang's prefill kernel for the block
passes, GPU only), ``dflash-builtin`` (SGLang's built-in DFLASH, selected through
``SGLANG_DFLASH_IMPL=builtin``), ``ngram`` (SGLang's NGRAM, no drafter).
At temperature 0 every output is also re-scored teacher-forced by the float32 target
(:mod:`sglang_dflash.evaluation`), for every mode, baseline included.

``--drafter random`` serves a random drafter of the target's shape (tau about 1): the per-step
overhead of speculation. The report is rewritten after every mode, so a run stopped midway keeps
what it measured, and a mode that fails is recorded in the report while the others still run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field

from tqdm import tqdm

from ..serving.tree_verify import TREE_MAX_ROWS_ENV, VERIFY_TREE_ENV, WIDE_TREE_ENV, block_width_tree_file
from .datasets import dataset_name, load_dataset, read_jsonl_prompts
from .engine_run import FIRST_WAVES
from .report import write_report

MODES = (
    "baseline",
    "dflash",
    "dflash-adaptive",
    "dflash-chain",
    "dflash-tree",
    "dflash-nosplitkv",
    "dflash-builtin",
    "ngram",
)
OUR_MODES = ("dflash", "dflash-adaptive", "dflash-chain", "dflash-tree", "dflash-nosplitkv")  # profiled
DRAFTER_MODES = (*OUR_MODES, "dflash-builtin")
DEVICES = ("cuda", "cpu")
# On SGLang's CPU backend only plain decoding and our DFLASH run: the built-in DFLASH refuses a
# non-CUDA device and NGRAM needs CUDA kernels.
CPU_MODES = ("baseline", "dflash", "dflash-adaptive", "dflash-chain", "dflash-tree")
CPU_DEFAULT_MODES = ("baseline", "dflash", "dflash-adaptive")
TREE_EVERY_BATCH_ROWS = 1 << 16  # dflash-tree's SGLANG_DFLASH_TREE_MAX_ROWS: no batch verifies the chain
# dflash-adaptive runs on CPU only for now (per-width CUDA graphs are not built yet).
GPU_MODES = ("baseline", "dflash", "dflash-builtin", "ngram")
# SGLang's CPU flags: float32 (no fast bf16 matmuls on most CPUs), torch_native attention,
# the PyTorch sampler, no CUDA graphs.
CPU_ENGINE_ARGS = {
    "device": "cpu",
    "dtype": "float32",
    "attention_backend": "torch_native",
    "sampling_backend": "pytorch",
    "disable_cuda_graph": True,
}
# --dtype's choices (SGLang's names); None: float32 on CPU, the checkpoint's (SGLang's auto) on a GPU.
DTYPES = ("auto", "float32", "bfloat16", "float16")
# On CPU SGLang sizes the KV pool from host memory; a fixed pool keeps the benchmark's footprint small.
CPU_DEFAULT_MAX_TOTAL_TOKENS = 8192
# glibc malloc settings for every mode's engine on CPU (``--cpu-malloc tuned``, the default): freed
# blocks up to 32 MiB stay in the heap and the heap is not trimmed, so a step's activations reuse
# pages already touched instead of mapping and page-faulting fresh ones.  With glibc's defaults a
# 2048-token prefill took 4.1 s on first use and 3.3 s after, and the shapes that change from step
# to step under DFLASH (verify widths, drafter blocks) kept paying it: float32 c=16 width-1 steps
# 160-170 ms, with these 130-155 (bench/README.md, "glibc's allocator on CPU").  Values already in the
# environment win.
CPU_MALLOC_ENV = {
    "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(1 << 30),
    "MALLOC_TOP_PAD_": str(256 << 20),
}
CPU_MALLOCS = ("tuned", "default")


def parse_concurrency(text: str) -> list[int]:
    """``--concurrency 1,4,16`` as ``[1, 4, 16]``.

    argparse prefixes the error with ``argument --concurrency:``, the ``<where>`` of the message.
    """
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(
            f"value is {text!r}; expected comma-separated integers >= 1, e.g. 1,4,16"
        )
    return values


@dataclass
class BenchConfig:
    """One benchmark run (the ``bench`` command's flags); checked when constructed."""

    model: str
    datasets: list[str]
    out: str
    drafter: str | None = None
    modes: list[str] = field(default_factory=lambda: list(GPU_MODES))
    num_prompts: int = 64
    max_new_tokens: int = 256
    temperature: float = 0.0
    concurrency: list[int] = field(default_factory=lambda: [1, 4, 16])
    block_size: int | None = None
    attention_backend: str = "triton"
    mem_fraction_static: float = 0.6
    disable_radix_cache: bool = True
    timeout_s: int = 3600
    rescore: bool = True
    warmup: int = 4
    device: str = "cuda"
    max_total_tokens: int | None = None
    rounds: int | None = None
    token_map: str | None = None  # --speculative-token-map for our modes (not the built-in's)
    dtype: str | None = None  # SGLang's --dtype for every mode (DTYPES; None: see DTYPES)
    first_wave: str = "batch"  # how a level's first `concurrency` requests arrive (engine_run.FIRST_WAVES)
    cpu_malloc: str = "tuned"  # CPU engines' glibc malloc settings (CPU_MALLOCS; tuned: CPU_MALLOC_ENV)

    def __post_init__(self) -> None:
        """Raise ValueError (FileNotFoundError for a missing dataset) naming the first bad flag."""
        unknown = [m for m in self.modes if m not in MODES]
        if unknown or not self.modes:
            raise ValueError(
                f"bench: --modes is {self.modes}; expected some of {list(MODES)} (unknown: {unknown})"
            )
        if self.device not in DEVICES:
            raise ValueError(f"bench: --device is {self.device!r}; expected one of {list(DEVICES)}")
        if self.device == "cpu" and any(m not in CPU_MODES for m in self.modes):
            raise ValueError(
                f"bench: --modes is {self.modes} with --device cpu; expected some of "
                f"{list(CPU_MODES)} (SGLang's built-in DFLASH, NGRAM and the split-KV switch need CUDA)"
            )
        drafter_modes = [m for m in self.modes if m in DRAFTER_MODES]
        if drafter_modes and not self.drafter:
            raise ValueError(
                f"bench: --drafter is {self.drafter!r}; expected a drafter path for --modes "
                f"{','.join(drafter_modes)}"
            )
        if self.device == "cuda" and "dflash-tree" in self.modes and self.drafter:
            tree = None if self.drafter == RANDOM_DRAFTER else gpu_tree_file(self)
            if tree is None or not os.path.isfile(tree):
                raise ValueError(
                    f"bench: --modes dflash-tree on cuda with --drafter {self.drafter}; expected a drafter "
                    f"folder with the block-wide tree {tree or 'verify-trees/tree-<block - 1>.json'} "
                    "(sglang-dflash fit-tree --num-drafts <block - 1> makes one)"
                )
        for flag, value in (("--num-prompts", self.num_prompts), ("--max-new-tokens", self.max_new_tokens)):
            if value < 1:
                raise ValueError(f"bench: {flag} is {value}; expected an integer >= 1")
        if self.rounds is not None and self.rounds < 1:
            raise ValueError(f"bench: --rounds is {self.rounds}; expected an integer >= 1")
        if self.temperature < 0:
            raise ValueError(f"bench: --temperature is {self.temperature}; expected >= 0")
        if self.dtype is not None and self.dtype not in DTYPES:
            raise ValueError(f"bench: --dtype is {self.dtype!r}; expected one of {list(DTYPES)}")
        if self.first_wave not in FIRST_WAVES:
            raise ValueError(
                f"bench: --first-wave is {self.first_wave!r}; expected one of {list(FIRST_WAVES)}"
            )
        if self.cpu_malloc not in CPU_MALLOCS:
            raise ValueError(
                f"bench: --cpu-malloc is {self.cpu_malloc!r}; expected one of {list(CPU_MALLOCS)}"
            )
        if not self.concurrency or any(c < 1 for c in self.concurrency):
            raise ValueError(f"bench: --concurrency is {self.concurrency}; expected integers >= 1")
        for path in self.datasets:
            read_jsonl_prompts(path, limit=1)  # exists and parses
        if self.token_map is not None and not os.path.isfile(self.token_map):
            raise FileNotFoundError(f"bench: --token-map is {self.token_map!r}; expected a token-map file")


RANDOM_DRAFTER = "random"


def prompts_per_level(cfg: BenchConfig, concurrency: int) -> int:
    """How many prompts of each dataset a concurrency level runs.

    ``--rounds R`` gives each level R x concurrency prompts, at most ``--num-prompts``, so
    concurrency 1 stays short while 64 still fills its slots; without it every level runs
    ``--num-prompts``.
    """
    if cfg.rounds is None:
        return cfg.num_prompts
    return min(cfg.num_prompts, cfg.rounds * concurrency)


def resolve_drafter(cfg: BenchConfig, workdir: str) -> BenchConfig:
    """``cfg`` with ``--drafter random`` replaced by a random drafter written under ``workdir``."""
    if cfg.drafter != RANDOM_DRAFTER:
        return cfg
    from ..testing import save_random_drafter

    path = save_random_drafter(
        cfg.model, os.path.join(workdir, "random-drafter"), block_size=cfg.block_size or 16
    )
    return dataclasses.replace(cfg, drafter=path)


def engine_args(cfg: BenchConfig, mode: str) -> dict:
    args = {
        "model_path": cfg.model,
        "attention_backend": cfg.attention_backend,
        "mem_fraction_static": cfg.mem_fraction_static,
        "max_running_requests": max(cfg.concurrency),
        "disable_radix_cache": cfg.disable_radix_cache,
        "log_level": "warning",
    }
    if cfg.device == "cpu":
        args.update(CPU_ENGINE_ARGS, max_total_tokens=CPU_DEFAULT_MAX_TOTAL_TOKENS)
        args.pop("mem_fraction_static")
    if cfg.max_total_tokens:
        args["max_total_tokens"] = cfg.max_total_tokens
    if cfg.dtype:
        args["dtype"] = cfg.dtype
    if mode in DRAFTER_MODES:
        args.update(speculative_algorithm="DFLASH", speculative_draft_model_path=cfg.drafter)
        if cfg.block_size:
            args["speculative_num_draft_tokens"] = cfg.block_size
        if mode == "dflash-adaptive":
            args["speculative_adaptive"] = True  # our per-step verify width (sglang_dflash.adaptive)
        if cfg.token_map and mode != "dflash-builtin":
            args["speculative_token_map"] = cfg.token_map  # our hot draft vocabulary
    elif mode == "ngram":
        args.update(speculative_algorithm="NGRAM")
    return args


def with_cpu_malloc(env: Mapping[str, str], cpu_malloc: str = "tuned") -> dict[str, str]:
    """A CPU engine's environment: ``env`` with the glibc malloc variables of ``cpu_malloc``.
    ``tuned`` adds those of :data:`CPU_MALLOC_ENV` it does not already set (the caller's own values
    win), ``default`` drops them all (glibc's defaults)."""
    env = dict(env)
    for name, value in CPU_MALLOC_ENV.items():
        if cpu_malloc == "tuned":
            env.setdefault(name, value)
        else:
            env.pop(name, None)
    return env


def mode_env(
    mode: str,
    profile_path: str,
    device: str = "cuda",
    cpu_malloc: str = "tuned",
    tree_file: str | None = None,
) -> dict:
    """The environment of ``mode``'s engine process; ``tree_file``: the tree ``dflash-tree`` names
    (on GPUs, where ``auto`` verifies the chain: :func:`gpu_tree_file`)."""
    env = dict(os.environ)
    env["SGLANG_DFLASH_IMPL"] = "builtin" if mode == "dflash-builtin" else "sglang-dflash"
    if device == "cpu":
        env["SGLANG_USE_CPU_ENGINE"] = "1"  # SGLang's own switch for its CPU engine
        env = with_cpu_malloc(env, cpu_malloc)
    if mode in OUR_MODES:
        env["SGLANG_DFLASH_PROFILE"] = profile_path
    # Set for every mode, so that a caller's setting does not leak in (the switch acts on GPUs only).
    env["SGLANG_DFLASH_SPLITKV"] = "0" if mode == "dflash-nosplitkv" else "1"
    # Every mode but these two verifies as the worker ships.
    env.pop(VERIFY_TREE_ENV, None)
    env.pop(TREE_MAX_ROWS_ENV, None)
    env.pop(WIDE_TREE_ENV, None)
    if mode == "dflash-chain":
        env[VERIFY_TREE_ENV] = "off"
    if mode == "dflash-tree":  # the drafter folder's tree (CPU: verify-tree.json) at every batch size
        env[TREE_MAX_ROWS_ENV] = str(TREE_EVERY_BATCH_ROWS)
        if tree_file is not None:
            env[VERIFY_TREE_ENV] = tree_file
    return env


def gpu_tree_file(cfg: BenchConfig) -> str | None:
    """``dflash-tree``'s tree on a GPU: the drafter folder's tree of the block's width."""
    if cfg.device == "cpu" or "dflash-tree" not in cfg.modes or not cfg.drafter:
        return None
    from ..config import DFlashConfig

    block_size = cfg.block_size or DFlashConfig.from_pretrained(cfg.drafter).block_size
    return block_width_tree_file(cfg.drafter, block_size)


def environment(cfg: BenchConfig) -> dict:
    import importlib.metadata as md

    served = engine_args(cfg, "baseline")  # what every mode's engine is given
    info = {
        "model": cfg.model,
        "drafter": cfg.drafter,
        "device": cfg.device,
        "attention_backend": served["attention_backend"],
        "dtype": served.get("dtype", "auto"),  # SGLang's default where none is given
    }
    for pkg in ("sglang", "torch", "transformers", "sglang-dflash", "sglang-kernel"):
        try:
            info[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            info[pkg] = None
    try:
        import torch

        on_gpu = cfg.device == "cuda" and torch.cuda.is_available()
        info["gpu"] = torch.cuda.get_device_name(0) if on_gpu else "cpu"
        info["cpu_threads"] = torch.get_num_threads()
    except Exception:  # pragma: no cover
        info["gpu"] = "unknown"
    if cfg.device == "cpu":  # what the engines' allocator ran with: set here or inherited
        applied = with_cpu_malloc(os.environ, cfg.cpu_malloc)
        info["cpu_malloc"] = {name: applied.get(name) for name in CPU_MALLOC_ENV}
    return info


def engine_command(config_path: str, result_path: str) -> list[str]:
    """The process that serves one mode (:mod:`sglang_dflash.bench.engine_run`)."""
    return [sys.executable, "-m", "sglang_dflash.bench.engine_run", config_path, result_path]


def _stop_group(proc: subprocess.Popen) -> None:
    """Kill a mode's process and every process it started (SGLang's scheduler, detokenizer)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def run_mode(cfg: BenchConfig, mode: str, groups: list[dict], workdir: str) -> dict:
    config_path = os.path.join(workdir, f"{mode}.config.json")
    result_path = os.path.join(workdir, f"{mode}.result.json")
    sampling = {"max_new_tokens": cfg.max_new_tokens, "temperature": cfg.temperature}
    with open(config_path, "w", encoding="utf-8") as f:
        json.dump(
            {
                "mode": mode,
                "engine_args": engine_args(cfg, mode),
                "sampling_params": sampling,
                "groups": groups,
                "warmup": cfg.warmup,
                "warm_every_level": cfg.device == "cuda",
                "first_wave": cfg.first_wave,
            },
            f,
        )
    # Its own process group: on a timeout SGLang's scheduler and detokenizer processes go too, so the
    # next mode does not start beside an engine that still holds the GPU's memory.
    proc = subprocess.Popen(
        engine_command(config_path, result_path),
        env=mode_env(
            mode,
            os.path.join(workdir, f"{mode}.profile.json"),
            cfg.device,
            cfg.cpu_malloc,
            gpu_tree_file(cfg),
        ),
        start_new_session=True,
    )
    try:
        proc.wait(timeout=cfg.timeout_s)
    except subprocess.TimeoutExpired:
        _stop_group(proc)
        raise RuntimeError(
            f"bench: mode {mode} ran past --timeout-s {cfg.timeout_s}; expected it to finish within it"
        ) from None
    except BaseException:  # Ctrl-C: the engine, in its own session, would not get the signal
        _stop_group(proc)
        raise
    if proc.returncode != 0 or not os.path.exists(result_path):
        raise RuntimeError(
            f"bench: mode {mode}'s exit code is {proc.returncode}; expected 0 (see its output above)"
        )
    with open(result_path, encoding="utf-8") as f:
        result = json.load(f)
    for group in result["groups"]:
        # The group's own phase means where the worker's profile has totals (CPU), else the run's.
        group["step_profile"] = group.pop("group_step_profile", None) or result.get("step_profile")
    return result


def rescore(cfg: BenchConfig, raw: dict, prompts: dict[str, list]) -> None:
    """Teacher-forced greedy consistency of every group (float32 target)."""
    import torch
    from transformers import AutoModelForCausalLM

    from ..evaluation import ConsistencyReport, teacher_forced_gaps

    device = "cuda" if torch.cuda.is_available() else "cpu"
    target = AutoModelForCausalLM.from_pretrained(cfg.model, dtype=torch.float32).to(device).eval()
    for mode_result in tqdm(raw["modes"], desc="re-scoring", unit="mode"):
        for group in mode_result["groups"]:
            by_id = {p.id: p.input_ids for p in prompts[group["dataset"]]}
            samples = group["samples"]
            gaps = teacher_forced_gaps(
                target, [by_id[s["id"]] for s in samples], [s["output_ids"] for s in samples]
            )
            group["greedy_consistency"] = ConsistencyReport.from_gaps(gaps).as_dict()


def run(cfg: BenchConfig) -> tuple[dict[str, str], list[dict]]:
    """Run every mode of ``cfg`` (checked when it was built) and write the report.

    The report is rewritten after each mode; a mode that fails (exit code, timeout) is listed under
    ``failed_modes`` and the remaining modes still run. Returns the report's paths and those failures.
    """
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(cfg.model)
    prompts = {dataset_name(p): load_dataset(p, tokenizer, cfg.num_prompts) for p in cfg.datasets}
    groups = [
        {
            "dataset": name,
            "concurrency": c,
            "prompts": [
                {"id": p.id, "input_ids": list(p.input_ids)} for p in ps[: prompts_per_level(cfg, c)]
            ],
        }
        for c in cfg.concurrency
        for name, ps in prompts.items()
    ]
    raw = {
        "temperature": cfg.temperature,
        "max_new_tokens": cfg.max_new_tokens,
        "num_prompts": cfg.num_prompts,
        "config": dataclasses.asdict(cfg),
        "environment": environment(cfg),
        "modes": [],
        "failed_modes": [],
    }
    paths: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as workdir:
        served = resolve_drafter(cfg, workdir)
        for mode in tqdm(cfg.modes, desc="modes", unit="mode"):
            try:
                raw["modes"].append(run_mode(served, mode, groups, workdir))
            except RuntimeError as e:
                print(f"bench: mode {mode} failed ({e}); the other modes still run", file=sys.stderr)
                raw["failed_modes"].append({"mode": mode, "error": str(e)})
            paths = write_report(raw, cfg.out)
    if cfg.temperature == 0 and cfg.rescore and raw["modes"]:
        rescore(cfg, raw, prompts)
        paths = write_report(raw, cfg.out)
    return paths, raw["failed_modes"]


def add_parser(sub) -> None:
    p = sub.add_parser("bench", help="benchmark our DFLASH against the built-in, NGRAM and no speculation")
    p.add_argument("--model", required=True)
    p.add_argument(
        "--drafter",
        default=None,
        help=f"a drafter directory, or {RANDOM_DRAFTER!r}: a random one of the target's shape (tau about 1)",
    )
    p.add_argument("--datasets", nargs="+", required=True, help="JSONL files of {id, prompt}")
    p.add_argument("--out", required=True, help="output directory for results.{json,md,png}")
    p.add_argument(
        "--modes",
        default=None,
        type=lambda s: [m.strip() for m in s.split(",") if m.strip()],
        help=f"comma-separated, default {','.join(GPU_MODES)} (--device cpu: {','.join(CPU_DEFAULT_MODES)}; "
        f"also {','.join(m for m in CPU_MODES if m not in CPU_DEFAULT_MODES)})",
    )
    p.add_argument("--num-prompts", type=int, default=64, help="prompts per dataset (the most a level runs)")
    p.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="each concurrency level c runs rounds x c prompts per dataset (capped at --num-prompts)",
    )
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--concurrency", type=parse_concurrency, default=[1, 4, 16])
    p.add_argument("--block-size", type=int, default=None)
    p.add_argument("--attention-backend", default="triton", help="GPU attention backend (CPU: torch_native)")
    p.add_argument(
        "--device",
        choices=DEVICES,
        default="cuda",
        help="cpu: SGLang's CPU backend (float32 unless --dtype, torch_native); "
        "modes baseline, dflash, dflash-adaptive, dflash-chain, dflash-tree",
    )
    p.add_argument(
        "--max-total-tokens",
        type=int,
        default=None,
        help=f"KV pool size in tokens (default: the host's; {CPU_DEFAULT_MAX_TOTAL_TOKENS} on CPU)",
    )
    p.add_argument(
        "--dtype",
        choices=DTYPES,
        default=None,
        help="SGLang's --dtype for every mode (default: float32 on CPU, the checkpoint's on a GPU; "
        "bfloat16 on a CPU with native bf16 dot products runs the matmuls 2-3x faster)",
    )
    p.add_argument("--mem-fraction-static", type=float, default=0.6)
    p.add_argument("--keep-radix-cache", dest="disable_radix_cache", action="store_false")
    p.add_argument("--no-rescore", dest="rescore", action="store_false")
    p.add_argument("--timeout-s", type=int, default=3600)
    p.add_argument(
        "--token-map",
        default=None,
        help="--speculative-token-map for our DFLASH modes: draft among these token ids only",
    )
    p.add_argument(
        "--first-wave",
        choices=FIRST_WAVES,
        default="batch",
        help="a level's first c requests: one batched request, prefilled together as an offline batch "
        "job's are (batch), or one by one, racing to an idle scheduler (separate; tables before 2026-11-28)",
    )
    p.add_argument(
        "--cpu-malloc",
        choices=CPU_MALLOCS,
        default="tuned",
        help="glibc malloc of every mode's CPU engine: freed blocks up to 32 MiB kept in an untrimmed "
        "heap (tuned: MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_ unless already set) "
        "or glibc's defaults (default: those variables dropped; tables before 2026-11-28)",
    )
    p.set_defaults(func=main)


def main(args) -> int:
    fields = {f.name for f in dataclasses.fields(BenchConfig)}
    if args.modes is None:
        args.modes = list(CPU_DEFAULT_MODES if args.device == "cpu" else GPU_MODES)
    try:
        cfg = BenchConfig(**{k: v for k, v in vars(args).items() if k in fields})
    except (ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    paths, failed = run(cfg)
    print(json.dumps(paths))
    return 1 if failed else 0
