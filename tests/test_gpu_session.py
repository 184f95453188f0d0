"""bench/gpu_session.sh, the GPU session's stages, checked on CPU: every benchmark it would run parses
and validates as a ``sglang-dflash bench`` command (run as ``python3 -m sglang_dflash.cli``), and the
stages cover what issue 12 asks for (trained drafter at concurrency 1-64 in all four modes, a random
drafter, a temperature-0.7 row).

A GPU call costs device time that a typo would waste; here a typo costs a CI run.
"""

import os
import shlex
import subprocess

from sglang_dflash.bench.harness import prompts_per_level
from sglang_dflash.cli import main as cli_main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.path.join(ROOT, "..", "shared", "data")
SCRIPT = os.path.join(ROOT, "bench", "gpu_session.sh")


def dry_run(stage: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", SCRIPT, stage],
        env={**os.environ, "DRY_RUN": "1", "DATA": SHARED_DATA, "OUT": "/gpu-out", **env},
        capture_output=True,
        text=True,
        timeout=30,
    )


def bench_configs(stage: str, monkeypatch, **env: str) -> list:
    """The BenchConfig of every ``python3 -m sglang_dflash.cli bench`` line the stage prints, as the
    CLI builds it."""
    from sglang_dflash.bench import harness

    proc = dry_run(stage, **env)
    assert proc.returncode == 0, proc.stderr
    configs = []
    monkeypatch.setattr(harness, "run", lambda cfg: (configs.append(cfg), ({}, []))[1])
    for line in proc.stdout.splitlines():
        words = shlex.split(line)
        if words[:4] == ["python3", "-m", "sglang_dflash.cli", "bench"]:
            assert cli_main(words[3:]) == 0, line
    return configs


def test_the_bench_stage_runs_all_six_modes_on_both_sets_up_to_concurrency_64(monkeypatch):
    (cfg,) = bench_configs("bench", monkeypatch)
    assert cfg.modes == ["baseline", "dflash", "dflash-tree", "dflash-nosplitkv", "dflash-builtin", "ngram"]
    assert cfg.drafter == "drafters/smollm2-135m-instruct" and os.path.exists(
        os.path.join(ROOT, cfg.drafter, "model.safetensors")
    )
    assert cfg.concurrency == [1, 4, 16, 64] and cfg.max_new_tokens == 256 and cfg.temperature == 0
    assert [os.path.basename(d) for d in cfg.datasets] == ["humaneval.jsonl", "gsm8k.jsonl"]
    assert cfg.out == "/gpu-out/main" and cfg.rescore
    # every level gets at least one full round of prompts per set, concurrency 1 several
    assert [prompts_per_level(cfg, c) // c for c in cfg.concurrency][0] >= 4
    assert all(prompts_per_level(cfg, c) >= c for c in cfg.concurrency)


def test_the_overhead_stage_measures_a_random_drafter_and_a_sampled_row(monkeypatch):
    random_drafter, sampled = bench_configs("overhead", monkeypatch)
    assert random_drafter.drafter == "random" and 1 in random_drafter.concurrency
    assert random_drafter.modes == ["baseline", "dflash", "dflash-builtin"]
    assert sampled.temperature == 0.7 and sampled.drafter == "drafters/smollm2-135m-instruct"
    assert {random_drafter.out, sampled.out} == {"/gpu-out/random-drafter", "/gpu-out/temperature-0.7"}


def test_the_short_stages_fit_a_15_minute_budget_with_the_goals_measurements(monkeypatch):
    """Two calls after the kit's installs (the 2026-11-26 H100 session: 491 s for three modes; the
    2026-12-04 H200 session: 521 s for four, the last part's install included): trained drafter in four
    modes at 1, 16 and 64 (ours verifying its 16-node tree where the split-KV comparison was), re-scored;
    then the random drafter."""
    (main,) = bench_configs("short", monkeypatch)
    assert main.modes == ["baseline", "dflash", "dflash-tree", "dflash-builtin"] and main.rescore
    assert (main.concurrency, main.rounds, main.timeout_s) == ([1, 16, 64], 4, 200)
    assert all(prompts_per_level(main, c) >= c for c in main.concurrency)
    (random_drafter,) = bench_configs("short-random", monkeypatch)
    assert random_drafter.drafter == "random" and random_drafter.timeout_s == 200
    assert random_drafter.modes == ["baseline", "dflash", "dflash-nosplitkv"]
    assert random_drafter.concurrency == [1] and not random_drafter.rescore
    short = dry_run("short").stdout
    assert "pytest -m gpu tests/gpu/test_gpu_block_attention.py" in short
    assert short.index("test_gpu_block_attention") < short.index("sglang_dflash.cli bench")
    (narrow,) = bench_configs("short", monkeypatch, CONCURRENCY="1")
    assert narrow.concurrency == [1]


def test_the_train_stage_trains_warm_on_every_token_store_in_the_shipped_order_and_brings_the_weights_back(
    monkeypatch,
):
    """Issue 26 on the GPU: the CPU runs' data, hold-out and objective, warm from the shipped drafter,
    on the GPU for a schedule sized to TRAIN_MINUTES; what comes back fits the device tool's limits."""
    import json

    from sglang_dflash.train import trainer

    proc = dry_run("train", TRAIN_MINUTES="5")
    assert proc.returncode == 0, proc.stderr
    train_line, mkdir_line, copy_line = proc.stdout.splitlines()
    configs = []
    monkeypatch.setattr(trainer, "train", lambda cfg: (configs.append(cfg), {"final": None})[1])
    assert cli_main(shlex.split(train_line)[3:]) == 0
    assert " <filename>" not in train_line  # printed as a shell needs it: pasted, it runs the same
    (cfg,) = configs
    drafter = os.path.join("drafters", "smollm2-135m-instruct")
    with open(os.path.join(ROOT, drafter, "train_summary.json"), encoding="utf-8") as f:
        shipped = json.load(f)["config"]
    stores = sorted(
        os.path.join(drafter, "token-data", name)
        for name in os.listdir(os.path.join(ROOT, drafter, "token-data"))
        if name != "default"
    )

    # Stores match the shipped run's by folder name, as sglang-dflash store-order matches them: a
    # run started from another directory records the same stores under other paths.
    def names(paths: list[str]) -> list[str]:
        return [os.path.basename(os.path.normpath(path)) for path in paths]

    assert names([cfg.features]) == names([shipped["features"]]) and cfg.features_from_tokens
    assert cfg.features == os.path.join(drafter, "token-data", "default")
    assert names(cfg.extra_features[: len(shipped["extra_features"])]) == names(shipped["extra_features"])
    assert sorted(cfg.extra_features) == stores
    assert (cfg.num_chunks, cfg.heldout, cfg.heldout_among) == (30, 32, shipped["heldout_among"])
    assert (cfg.gamma, cfg.block_size, cfg.num_draft_layers) == (3, 16, 2) and cfg.sample_positions
    assert cfg.target_layer_ids == [1, 9, 17, 26] and cfg.mask_token_id == 6
    assert cfg.init_drafter == drafter and cfg.device == "cuda" and cfg.precision == "bf16"
    assert (cfg.schedule_minutes, cfg.max_minutes, cfg.batch_size, cfg.lr) == (5, 6, 32, 6e-5)
    assert not cfg.output.startswith("/gpu-out")  # checkpoints stay on the host
    assert shlex.split(mkdir_line) == ["mkdir", "-p", "/gpu-out/train"]
    copied = shlex.split(copy_line)
    assert copied[-1] == "/gpu-out/train/" and all(p.startswith(cfg.output + "/") for p in copied[1:-1])
    # with the stage's log, at most 8 files come back, each under 16 MiB (shards of max_shard_mb)
    assert len(copied[1:-1]) + 1 + 1 <= 8 and cfg.max_shard_mb * 2**20 < 16 * 2**20


def test_knobs_reach_the_commands(monkeypatch):
    (cfg,) = bench_configs("bench", monkeypatch, CONCURRENCY="1,8", NUM_PROMPTS="16", ROUNDS="2")
    assert (cfg.concurrency, cfg.num_prompts, cfg.rounds, cfg.attention_backend) == ([1, 8], 16, 2, "triton")
    (fa3,) = bench_configs("short", monkeypatch, ATTENTION_BACKEND="fa3")
    assert fa3.attention_backend == "fa3"


def test_the_accept_stage_runs_the_gpu_tests_and_a_bad_stage_is_refused():
    accept = dry_run("accept")
    assert accept.returncode == 0
    assert shlex.split(accept.stdout)[:6] == ["python3", "-m", "pytest", "-m", "gpu", "tests/gpu"]
    split = dry_run("accept", PYTEST_ARGS="-k lossless")
    assert shlex.split(split.stdout)[-2:] == ["-k", "lossless"]
    bad = dry_run("benchmark")
    assert bad.returncode == 2
    assert (
        "stage is 'benchmark'; expected one of accept, bench, overhead, short, short-random, train"
        in bad.stderr
    )
