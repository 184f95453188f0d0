"""Benchmark harness parts that need no GPU: datasets, metric math, report rendering, CLI errors."""

import dataclasses
import json
import math
import os

import pytest
from cpu_server import SHIPPED_SMOLLM2_DRAFTER

from sglang_dflash.bench.datasets import dataset_name, load_dataset, read_jsonl_prompts
from sglang_dflash.bench.harness import (
    BenchConfig,
    engine_args,
    environment,
    gpu_tree_file,
    mode_env,
    parse_concurrency,
)
from sglang_dflash.bench.metrics import (
    agreement_with_baseline,
    mean_tau,
    percentile,
    speedups,
    summarize_group,
)
from sglang_dflash.bench.report import markdown_table, summarize, write_report
from sglang_dflash.cli import main as cli_main
from sglang_dflash.tree import load_tree

SHARED_DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")


def test_reads_the_real_prompt_sets_with_limits():
    humaneval = read_jsonl_prompts(os.path.join(SHARED_DATA, "humaneval.jsonl"))
    assert len(humaneval) == 164 and humaneval[0][0] == "HumanEval/0"
    assert len(read_jsonl_prompts(os.path.join(SHARED_DATA, "gsm8k.jsonl"), limit=10)) == 10
    assert dataset_name("/x/gsm8k.jsonl") == "gsm8k"


def test_bad_dataset_files_fail_clearly(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_jsonl_prompts(str(tmp_path / "none.jsonl"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "prompt": "ok"}\n{"id": 2}\n')
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        read_jsonl_prompts(str(bad))


def test_chat_template_is_applied():
    from transformers import AutoTokenizer

    from sglang_dflash.smollm2 import ensure_smollm2

    tokenizer = AutoTokenizer.from_pretrained(ensure_smollm2())
    prompts = load_dataset(os.path.join(SHARED_DATA, "gsm8k.jsonl"), tokenizer, limit=2)
    text = tokenizer.decode(prompts[0].input_ids)
    assert text.startswith("<|im_start|>") and "Janet" in text and text.rstrip().endswith("assistant")


def sample(rid, tokens, latency, ttft, verify=None, ids=None):
    return {
        "id": rid,
        "output_ids": ids or list(range(tokens)),
        "latency": latency,
        "ttft": ttft,
        "completion_tokens": tokens,
        "spec_verify_ct": verify,
    }


def test_metric_math_on_recorded_samples():
    assert percentile([1, 2, 3, 4], 50) == 2.5 and percentile([5], 90) == 5 and math.isnan(percentile([], 50))
    spec = [sample("a", 100, 1.0, 0.1, verify=25), sample("b", 60, 2.0, 0.2, verify=40)]
    assert mean_tau(spec) == pytest.approx(160 / 65)
    assert mean_tau([sample("a", 10, 1.0, 0.1)]) is None
    s = summarize_group(spec, wall_seconds=4.0)
    assert s["output_tokens_per_s"] == 40.0 and s["latency_p50"] == 1.5 and s["requests"] == 2
    assert speedups({"baseline": {"output_tokens_per_s": 20.0}, "dflash": {"output_tokens_per_s": 50.0}}) == {
        "baseline": 1.0,
        "dflash": 2.5,
    }
    agree = agreement_with_baseline(
        [sample("a", 3, 1, 0, ids=[1, 2, 3]), sample("b", 2, 1, 0, ids=[4, 5])],
        [sample("b", 2, 1, 0, ids=[4, 6]), sample("a", 3, 1, 0, ids=[1, 2, 3])],
    )
    assert agree["exact_match_rate"] == 0.5 and agree["first_divergence"] == [None, 1]


def recorded_run():
    def group(dataset, c, wall, tokens, verify, ids_shift=0):
        samples = [
            sample(f"{dataset}-{i}", tokens, wall / 2, 0.05 * c, verify, ids=[i, i + ids_shift])
            for i in range(4)
        ]
        return {
            "dataset": dataset,
            "concurrency": c,
            "wall_seconds": wall,
            "samples": samples,
            "greedy_consistency": {"rate": 1.0 if ids_shift == 0 else 0.9},
        }

    modes = []
    for mode, factor, verify, shift in (
        ("baseline", 1.0, None, 0),
        ("dflash", 0.4, 20, 0),
        ("dflash-builtin", 0.6, 30, 1),
    ):
        modes.append(
            {
                "mode": mode,
                "groups": [
                    group(d, c, 10.0 * factor * (1 + c / 8), 100, verify, shift)
                    for d in ("humaneval", "gsm8k")
                    for c in (1, 4, 16)
                ],
            }
        )
    return {
        "temperature": 0.0,
        "max_new_tokens": 100,
        "environment": {"model": "tiny", "gpu": "recorded"},
        "modes": modes,
    }


def test_report_rows_table_and_plot_from_a_recorded_json(tmp_path):
    raw = recorded_run()
    rows = summarize(raw)
    assert len(rows) == 18
    row = next(r for r in rows if r["mode"] == "dflash" and r["dataset"] == "gsm8k" and r["concurrency"] == 4)
    assert row["speedup"] == pytest.approx(2.5) and row["tau"] == pytest.approx(5.0)
    assert row["exact_match_rate"] == 1.0
    builtin = next(r for r in rows if r["mode"] == "dflash-builtin" and r["concurrency"] == 1)
    assert builtin["exact_match_rate"] == 0.0 and builtin["greedy_consistency"] == 0.9
    table = markdown_table(rows)
    # ours over the built-in: its wall time is 0.6 / 0.4 of ours for the same tokens
    assert row["vs_builtin"] == pytest.approx(1.5)
    base = next(r for r in rows if r["mode"] == "baseline" and r["concurrency"] == 16)
    assert base["vs_builtin"] == pytest.approx(0.6)
    assert table.count("\n") == 20 and "| gsm8k | 4 | dflash | 66.7 | 2.50 | 1.50 | 5.00 |" in table

    recorded = tmp_path / "recorded.json"
    recorded.write_text(json.dumps(raw))
    assert cli_main(["bench-report", str(recorded), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "results.png").stat().st_size > 5_000  # drawn, not an empty canvas
    from PIL import Image

    with Image.open(tmp_path / "out" / "results.png") as plot:  # a palette PNG: a third of the bytes
        assert plot.mode == "P" and 8 <= len(plot.getcolors()) <= 64  # lines, labels, background
    md = (tmp_path / "out" / "results.md").read_text()
    assert "recorded" in md and "dflash-builtin" in md
    assert json.loads((tmp_path / "out" / "results.json").read_text())["summary"][0]["dataset"] == "gsm8k"


def test_a_run_without_a_baseline_reports_its_rows_and_draws_no_plot(tmp_path):
    """``--modes dflash`` alone (an A/B of two versions of one mode): no speedup to draw, so the
    report keeps the JSON and the table (throughput, tau, phases) and writes no PNG."""
    raw = recorded_run()
    raw["modes"] = [m for m in raw["modes"] if m["mode"] == "dflash"]
    paths = write_report(raw, str(tmp_path / "out"))
    assert sorted(paths) == ["json", "md"] and not (tmp_path / "out" / "results.png").exists()
    rows = json.loads((tmp_path / "out" / "results.json").read_text())["summary"]
    assert len(rows) == 6 and all(math.isnan(r["speedup"]) and r["tau"] == 5.0 for r in rows)
    assert "| gsm8k | 4 | dflash |" in (tmp_path / "out" / "results.md").read_text()


def test_engine_arguments_and_environment_per_mode():
    cfg = BenchConfig(model="m", drafter="d", datasets=[], out="o", concurrency=[1, 16], block_size=16)
    assert "speculative_algorithm" not in engine_args(cfg, "baseline")
    ours = engine_args(cfg, "dflash")
    assert ours["speculative_algorithm"] == "DFLASH" and ours["speculative_draft_model_path"] == "d"
    assert ours["max_running_requests"] == 16 and ours["speculative_num_draft_tokens"] == 16
    assert engine_args(cfg, "ngram")["speculative_algorithm"] == "NGRAM"
    assert mode_env("dflash-builtin", "p")["SGLANG_DFLASH_IMPL"] == "builtin"
    assert mode_env("dflash", "p")["SGLANG_DFLASH_PROFILE"] == "p"


def test_every_gpu_mode_but_nosplitkv_runs_the_split_kv_attention(monkeypatch):
    monkeypatch.setenv("SGLANG_DFLASH_SPLITKV", "0")  # a caller's setting does not leak in
    cfg = BenchConfig(model="m", drafter="d", datasets=[], out="o", modes=["dflash", "dflash-nosplitkv"])
    assert engine_args(cfg, "dflash-nosplitkv") == engine_args(cfg, "dflash")
    prefill_kernel = mode_env("dflash-nosplitkv", "p")
    assert prefill_kernel["SGLANG_DFLASH_SPLITKV"] == "0"
    assert prefill_kernel["SGLANG_DFLASH_IMPL"] == "sglang-dflash"
    assert prefill_kernel["SGLANG_DFLASH_PROFILE"] == "p"
    for mode in ("baseline", "dflash", "dflash-builtin"):  # what ships: the switch's default
        assert mode_env(mode, "p")["SGLANG_DFLASH_SPLITKV"] == "1"
    with pytest.raises(ValueError, match="split-KV switch need CUDA"):
        BenchConfig(model="m", drafter="d", datasets=[], out="o", device="cpu", modes=["dflash-nosplitkv"])


def test_the_chain_and_tree_modes_set_the_verify_tree_and_no_caller_setting_leaks_in(monkeypatch):
    monkeypatch.setenv("SGLANG_DFLASH_VERIFY_TREE", "/some/tree.json")
    monkeypatch.setenv("SGLANG_DFLASH_TREE_MAX_ROWS", "3")
    monkeypatch.setenv("SGLANG_DFLASH_WIDE_BATCH_TREE", "off")
    shipped = mode_env("dflash", "p", device="cpu")  # the worker's defaults: auto, 8 rows, auto
    assert "SGLANG_DFLASH_VERIFY_TREE" not in shipped and "SGLANG_DFLASH_TREE_MAX_ROWS" not in shipped
    assert "SGLANG_DFLASH_WIDE_BATCH_TREE" not in shipped
    assert mode_env("dflash-chain", "p", device="cpu")["SGLANG_DFLASH_VERIFY_TREE"] == "off"
    tree = mode_env("dflash-tree", "p", device="cpu")
    assert "SGLANG_DFLASH_VERIFY_TREE" not in tree and int(tree["SGLANG_DFLASH_TREE_MAX_ROWS"]) >= 16 * 256
    cfg = BenchConfig(model="m", drafter="d", datasets=[], out="o", device="cpu", modes=["dflash-chain"])
    assert engine_args(cfg, "dflash-chain")["speculative_algorithm"] == "DFLASH"


def test_the_tree_mode_on_a_gpu_names_the_drafters_block_wide_tree(tmp_path):
    """On GPUs ``auto`` verifies the chain, so dflash-tree names the tree of the block's width."""
    cfg = BenchConfig(model="m", drafter=SHIPPED_SMOLLM2_DRAFTER, datasets=[], out="o", modes=["dflash-tree"])
    tree_file = gpu_tree_file(cfg)
    assert tree_file == os.path.join(SHIPPED_SMOLLM2_DRAFTER, "verify-trees", "tree-15.json")
    assert load_tree(tree_file).num_nodes == 16
    env = mode_env("dflash-tree", "p", "cuda", tree_file=tree_file)
    assert env["SGLANG_DFLASH_VERIFY_TREE"] == tree_file
    assert "SGLANG_DFLASH_VERIFY_TREE" not in mode_env("dflash", "p", "cuda", tree_file=tree_file)
    assert gpu_tree_file(dataclasses.replace(cfg, device="cpu", modes=["dflash-tree"])) is None
    (tmp_path / "config.json").write_text(open(os.path.join(SHIPPED_SMOLLM2_DRAFTER, "config.json")).read())
    with pytest.raises(ValueError, match="expected a drafter folder with the block-wide tree .*tree-15.json"):
        BenchConfig(model="m", drafter=str(tmp_path), datasets=[], out="o", modes=["dflash-tree"])


def test_cpu_device_runs_sglangs_cpu_engine_in_float32_with_plain_and_our_modes():
    cfg = BenchConfig(
        model="m",
        drafter="d",
        datasets=[],
        out="o",
        device="cpu",
        modes=["baseline", "dflash"],
        max_total_tokens=8192,
    )
    args = engine_args(cfg, "dflash")
    cpu_keys = ("device", "dtype", "attention_backend", "sampling_backend", "disable_cuda_graph")
    assert {k: args[k] for k in cpu_keys} == {
        "device": "cpu",
        "dtype": "float32",
        "attention_backend": "torch_native",
        "sampling_backend": "pytorch",
        "disable_cuda_graph": True,
    }
    assert args["max_total_tokens"] == 8192 and "mem_fraction_static" not in args
    assert mode_env("dflash", "p", device="cpu")["SGLANG_USE_CPU_ENGINE"] == "1"


def test_dtype_overrides_the_cpu_float32_for_every_mode_and_is_checked():
    common = dict(model="m", drafter="d", datasets=[], out="o", modes=["baseline", "dflash"])
    cpu_bf16 = BenchConfig(device="cpu", dtype="bfloat16", **common)
    assert {engine_args(cpu_bf16, m)["dtype"] for m in ("baseline", "dflash")} == {"bfloat16"}
    assert environment(cpu_bf16)["dtype"] == "bfloat16"
    assert environment(BenchConfig(device="cpu", **common))["dtype"] == "float32"
    gpu = BenchConfig(**common)
    assert "dtype" not in engine_args(gpu, "dflash") and environment(gpu)["dtype"] == "auto"
    with pytest.raises(ValueError, match=r"bench: --dtype is 'bf16'; expected one of \['auto', 'float32', "):
        BenchConfig(device="cpu", dtype="bf16", **common)


def test_a_mode_that_needs_cuda_cannot_be_configured_on_cpu():
    with pytest.raises(ValueError, match=r"bench: --modes is \['dflash-builtin'\] with --device cpu; "):
        BenchConfig(model="m", drafter="d", datasets=[], out="o", device="cpu", modes=["dflash-builtin"])


def test_an_invalid_bench_config_raises_when_constructed():
    with pytest.raises(ValueError, match="bench: --num-prompts is 0; expected an integer >= 1"):
        BenchConfig(model="m", drafter="d", datasets=[], out="o", num_prompts=0)


def test_the_bench_command_checks_its_config_once(monkeypatch, tmp_path):
    from sglang_dflash.bench import harness

    reads = []
    monkeypatch.setattr(harness, "read_jsonl_prompts", lambda path, limit=None: reads.append(path))
    monkeypatch.setattr(harness, "run", lambda cfg: ({}, []))
    data = os.path.join(SHARED_DATA, "gsm8k.jsonl")
    args = ["bench", "--model", "m", "--drafter", "d", "--datasets", data, "--out", str(tmp_path)]
    assert cli_main(args) == 0
    assert reads == [data]


def test_cpu_bench_defaults_to_the_modes_that_run_on_cpu(monkeypatch, tmp_path):
    from sglang_dflash.bench import harness

    seen = {}
    monkeypatch.setattr(harness, "run", lambda cfg: (seen.setdefault("cfg", cfg), ({}, []))[1])
    data = os.path.join(SHARED_DATA, "gsm8k.jsonl")
    assert (
        cli_main(
            [
                "bench",
                "--model",
                "m",
                "--drafter",
                "d",
                "--datasets",
                data,
                "--out",
                str(tmp_path),
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    assert seen["cfg"].modes == ["baseline", "dflash", "dflash-adaptive"] and seen["cfg"].device == "cpu"


def test_cli_argument_errors(capsys, tmp_path):
    data = os.path.join(SHARED_DATA, "gsm8k.jsonl")
    with pytest.raises(SystemExit):
        cli_main(["bench", "--model", "m", "--datasets", data, "--out", "o", "--concurrency", "0,4"])
    assert "argument --concurrency: value is '0,4'; expected" in capsys.readouterr().err
    bench = ["bench", "--model", "m", "--out", "o"]
    assert cli_main([*bench, "--datasets", data, "--modes", "baseline,eagle"]) == 2
    assert "bench: --modes is ['baseline', 'eagle']; expected" in capsys.readouterr().err
    assert cli_main([*bench, "--datasets", data, "--modes", "dflash"]) == 2
    assert "bench: --drafter is None; expected" in capsys.readouterr().err
    missing = str(tmp_path / "x.jsonl")
    assert cli_main([*bench, "--datasets", missing, "--modes", "baseline"]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(argparse_error_type()):
        parse_concurrency("a,b")


def argparse_error_type():
    import argparse

    return argparse.ArgumentTypeError


def test_the_adaptive_mode_runs_our_dflash_with_the_adaptive_flag():
    from sglang_dflash.bench.harness import engine_args, mode_env

    cfg = BenchConfig(
        model="m",
        drafter="d",
        datasets=[os.path.join(SHARED_DATA, "gsm8k.jsonl")],
        out="o",
        device="cpu",
        modes=["dflash", "dflash-adaptive"],
    )
    args = engine_args(cfg, "dflash-adaptive")
    assert args["speculative_algorithm"] == "DFLASH" and args["speculative_adaptive"] is True
    assert "speculative_adaptive" not in engine_args(cfg, "dflash")
    assert mode_env("dflash-adaptive", "p.json", "cpu")["SGLANG_DFLASH_IMPL"] == "sglang-dflash"


def test_rounds_give_each_concurrency_level_its_own_prompt_count():
    from sglang_dflash.bench.harness import prompts_per_level

    cfg = BenchConfig(model="m", drafter="d", datasets=[], out="o", num_prompts=128, rounds=8)
    assert [prompts_per_level(cfg, c) for c in (1, 4, 16, 64)] == [8, 32, 128, 128]
    every = BenchConfig(model="m", drafter="d", datasets=[], out="o", num_prompts=20)
    assert [prompts_per_level(every, c) for c in (1, 64)] == [20, 20]
    with pytest.raises(ValueError, match="bench: --rounds is 0; expected an integer >= 1"):
        BenchConfig(model="m", drafter="d", datasets=[], out="o", rounds=0)


def fake_mode_result(mode, groups):
    return {
        "mode": mode,
        "groups": [
            {
                "dataset": g["dataset"],
                "concurrency": g["concurrency"],
                "wall_seconds": 2.0,
                "samples": [sample(p["id"], 8, 0.5, 0.1, ids=[1] * 8) for p in g["prompts"]],
            }
            for g in groups
        ],
    }


def test_a_failing_mode_is_reported_and_the_others_still_run(monkeypatch, tmp_path):
    """The report is on disk after every mode, so a run cut off midway keeps what it measured."""
    from sglang_dflash.bench import harness
    from sglang_dflash.smollm2 import ensure_smollm2

    out = tmp_path / "out"
    seen = []

    def run_mode(cfg, mode, groups, workdir):
        seen.append((mode, [len(g["prompts"]) for g in groups]))
        if mode == "dflash-builtin":
            written = json.loads((out / "results.json").read_text())
            assert [m["mode"] for m in written["modes"]] == ["baseline", "dflash"]
            raise RuntimeError("bench: mode dflash-builtin's exit code is 1; expected 0")
        return fake_mode_result(mode, groups)

    monkeypatch.setattr(harness, "run_mode", run_mode)
    data = os.path.join(SHARED_DATA, "gsm8k.jsonl")
    args = ["bench", "--model", ensure_smollm2(), "--drafter", "d", "--datasets", data, "--out", str(out)]
    args += ["--modes", "baseline,dflash,dflash-builtin,ngram", "--concurrency", "1,4", "--num-prompts", "6"]
    assert cli_main([*args, "--rounds", "2", "--no-rescore"]) == 1
    assert [m for m, _ in seen] == ["baseline", "dflash", "dflash-builtin", "ngram"]
    assert seen[0][1] == [2, 6]  # concurrency 1: 2 rounds of 1; concurrency 4: 8, capped at 6
    written = json.loads((out / "results.json").read_text())
    assert [m["mode"] for m in written["modes"]] == ["baseline", "dflash", "ngram"]
    assert written["failed_modes"] == [
        {"mode": "dflash-builtin", "error": "bench: mode dflash-builtin's exit code is 1; expected 0"}
    ]
    assert (
        "**mode dflash-builtin failed**: bench: mode dflash-builtin's exit code is 1"
        in (out / "results.md").read_text()
    )
    assert {r["mode"] for r in written["summary"]} == {"baseline", "dflash", "ngram"}


def test_a_random_drafter_is_written_for_the_target_with_a_named_mask_token(tmp_path):
    from transformers import AutoConfig

    from sglang_dflash import load_drafter
    from sglang_dflash.bench.harness import resolve_drafter
    from sglang_dflash.smollm2 import ensure_smollm2

    target = ensure_smollm2()
    data = os.path.join(SHARED_DATA, "gsm8k.jsonl")
    cfg = BenchConfig(model=target, drafter="random", datasets=[data], out="o", block_size=8)
    served = resolve_drafter(cfg, str(tmp_path))
    assert served.drafter == str(tmp_path / "random-drafter") and cfg.drafter == "random"
    drafter = load_drafter(served.drafter, target_config=AutoConfig.from_pretrained(target))
    # SmolLM2 has no <|MASK|>: its highest special token that no chat turn uses stands in.
    assert (drafter.config.mask_token, drafter.config.mask_token_id) == ("<empty_output>", 16)
    assert drafter.config.block_size == 8 and drafter.config.num_hidden_layers == 1
    named = BenchConfig(model=target, drafter="drafters/x", datasets=[data], out="o")
    assert resolve_drafter(named, str(tmp_path)) is named


def test_the_mask_token_of_a_random_drafter_prefers_mask_and_refuses_without_a_spare_one():
    from types import SimpleNamespace

    from sglang_dflash.testing import spare_special_token

    def tokenizer(vocab, added, template=""):
        return SimpleNamespace(
            get_vocab=lambda: vocab,
            bos_token="<s>",
            eos_token="</s>",
            pad_token=None,
            unk_token=None,
            chat_template=template,
            added_tokens_decoder={i: SimpleNamespace(content=c, special=True) for i, c in added.items()},
        )

    assert spare_special_token(tokenizer({"<|MASK|>": 7}, {0: "<s>", 9: "<x>"})) == ("<|MASK|>", 7)
    assert spare_special_token(tokenizer({}, {0: "<s>", 3: "<a>", 9: "<t>"}, template="<t>")) == ("<a>", 3)
    with pytest.raises(
        ValueError, match=r"random drafter: the tokenizer's special tokens are .*expected a spare"
    ):
        spare_special_token(tokenizer({}, {0: "<s>", 1: "</s>"}))


def test_a_mode_past_its_timeout_is_stopped_with_the_processes_it_started(monkeypatch, tmp_path):
    """SGLang's scheduler runs in child processes: a timed-out mode must not leave them holding memory."""
    import signal
    import sys
    import time

    from sglang_dflash.bench import harness

    pid_file = tmp_path / "grandchild.pid"
    hang = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(120)\n"
    )
    monkeypatch.setattr(harness, "engine_command", lambda config, result: [sys.executable, "-c", hang])
    cfg = BenchConfig(model="m", datasets=[], out=str(tmp_path), modes=["baseline"], timeout_s=3)
    with pytest.raises(RuntimeError, match="bench: mode baseline ran past --timeout-s 3; expected it"):
        harness.run_mode(cfg, "baseline", [], str(tmp_path))
    grandchild = int(pid_file.read_text())
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(grandchild, signal.SIGKILL)
        pytest.fail(f"the mode's child process {grandchild} outlived the timeout")


def _engine_env_of_run_mode(monkeypatch, tmp_path, cfg: BenchConfig, mode: str) -> dict:
    """The glibc malloc variables the process :func:`run_mode` starts for ``mode`` sees."""
    import sys

    from sglang_dflash.bench import harness

    report = (
        "import json, os, sys\n"
        "names = ('MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_', 'MALLOC_TOP_PAD_')\n"
        "env = {n: os.environ.get(n) for n in names}\n"
        "json.dump({'mode': 'x', 'groups': [], 'env': env}, open(sys.argv[1], 'w'))\n"
    )
    command = [sys.executable, "-c", report]
    monkeypatch.setattr(harness, "engine_command", lambda config, result: [*command, result])
    return harness.run_mode(cfg, mode, [], str(tmp_path))["env"]


def test_every_cpu_mode_runs_with_the_tuned_malloc_unless_told_or_set_otherwise(monkeypatch, tmp_path):
    """Same-run ratios need every mode's engine on the same allocator; the caller's values win."""
    from sglang_dflash.bench.harness import CPU_MALLOC_ENV, environment

    for name in CPU_MALLOC_ENV:
        monkeypatch.delenv(name, raising=False)
    common = dict(model="m", drafter="d", datasets=[], out=str(tmp_path))
    cpu = BenchConfig(**common, device="cpu", modes=["baseline", "dflash-adaptive"])
    for mode in cpu.modes:
        assert _engine_env_of_run_mode(monkeypatch, tmp_path, cpu, mode) == CPU_MALLOC_ENV
    assert int(CPU_MALLOC_ENV["MALLOC_MMAP_THRESHOLD_"]) == 32 << 20  # glibc's upper bound
    gpu = BenchConfig(**common, modes=["baseline"])
    assert set(_engine_env_of_run_mode(monkeypatch, tmp_path, gpu, "baseline").values()) == {None}
    monkeypatch.setenv("MALLOC_TOP_PAD_", "4096")
    mine = _engine_env_of_run_mode(monkeypatch, tmp_path, cpu, "dflash-adaptive")
    assert mine == {**CPU_MALLOC_ENV, "MALLOC_TOP_PAD_": "4096"}
    assert environment(cpu)["cpu_malloc"] == mine and "cpu_malloc" not in environment(gpu)
    # glibc's defaults: none of the variables, the caller's dropped too
    glibc = BenchConfig(**common, device="cpu", modes=["baseline"], cpu_malloc="default")
    assert set(_engine_env_of_run_mode(monkeypatch, tmp_path, glibc, "baseline").values()) == {None}
    assert set(environment(glibc)["cpu_malloc"].values()) == {None}
    expected = r"--cpu-malloc is 'jemalloc'; expected one of \['tuned', 'default'\]"
    with pytest.raises(ValueError, match=expected):
        BenchConfig(**common, device="cpu", modes=["baseline"], cpu_malloc="jemalloc")


def test_results_json_keeps_token_ids_on_one_line_and_reads_back_equal():
    from sglang_dflash.bench.report import readable_json

    raw = {
        "modes": [{"samples": [{"output_ids": [5, -1, 49151], "latency": 0.5, "empty": []}]}],
        "x": [1.5, 2],
    }
    text = readable_json(raw)
    assert json.loads(text) == raw
    assert '"output_ids": [5,-1,49151]' in text and '"empty": []' in text
    assert len(text) < len(json.dumps(raw, indent=1))


def test_gpu_runs_warm_every_concurrency_level_before_timing_it():
    """A new batch size's one-time costs (kernel compilation) fell into the first dataset timed at
    each level on the H100 (2026-11-26): GPU runs warm each level first, with short requests."""
    from sglang_dflash.bench.engine_run import WARM_LEVEL_TOKENS, warmup_runs

    def prompts(tag, n):
        return [{"id": f"{tag}{i}", "input_ids": [i]} for i in range(n)]

    groups = [
        {"dataset": "a", "concurrency": 1, "prompts": prompts("a", 8)},
        {"dataset": "b", "concurrency": 1, "prompts": prompts("b", 8)},
        {"dataset": "a", "concurrency": 16, "prompts": prompts("a", 32)},
        {"dataset": "b", "concurrency": 16, "prompts": prompts("b", 32)},
        {"dataset": "a", "concurrency": 64, "prompts": prompts("a", 40)},
    ]
    params = {"max_new_tokens": 256, "temperature": 0.0}
    cfg = {"groups": groups, "sampling_params": params, "warmup": 4}
    (only,) = warmup_runs(cfg)
    assert (len(only[0]), only[1], only[2]) == (4, 4, params)
    runs = warmup_runs({**cfg, "warm_every_level": True})
    assert [(len(p), level) for p, level, _ in runs] == [(4, 4), (16, 16), (40, 64)]
    assert [p["id"] for p in runs[1][0]] == [f"a{i}" for i in range(16)]
    assert all(r[2] == {**params, "max_new_tokens": WARM_LEVEL_TOKENS} for r in runs[1:])


def test_the_harness_asks_for_level_warmups_on_gpus_only(monkeypatch, tmp_path):
    from sglang_dflash.bench import harness

    written = {}

    class Done:
        returncode = 0

        def __init__(self, command, **kwargs):
            written.update(json.loads(open(command[-2], encoding="utf-8").read()))
            json.dump({"mode": "baseline", "groups": []}, open(command[-1], "w", encoding="utf-8"))

        def wait(self, timeout=None):
            return 0

    monkeypatch.setattr(harness.subprocess, "Popen", Done)
    for device, expected in (("cuda", True), ("cpu", False)):
        cfg = harness.BenchConfig(
            model="m",
            drafter=None,
            datasets=[os.path.join(SHARED_DATA, "gsm8k.jsonl")],
            out=str(tmp_path),
            device=device,
            modes=["baseline"],
        )
        harness.run_mode(cfg, "baseline", [], str(tmp_path))
        assert written["warm_every_level"] is expected


class _StreamingEngine:
    """``Engine.async_generate(stream=True)`` as SGLang streams it: a single request yields its own
    chunks; a batch yields every request's chunks interleaved, each tagged with its ``index``.
    Request k answers ``n`` tokens ``[k, k, ...]`` (k = its prompt's only token id), one per chunk."""

    def __init__(self, tokens: int = 3) -> None:
        self.tokens, self.calls, self.in_flight, self.most_in_flight = tokens, [], 0, 0

    def _started(self, n: int) -> None:
        self.in_flight += n
        self.most_in_flight = max(self.most_in_flight, self.in_flight)

    def _chunk(self, prompt_ids: list[int], step: int) -> dict:
        done = step == self.tokens - 1
        meta = {"completion_tokens": step + 1, "finish_reason": {"type": "length"} if done else None}
        return {"output_ids": [prompt_ids[0]], "meta_info": meta}

    async def async_generate(self, input_ids, sampling_params, stream):
        import asyncio

        assert stream
        batch = isinstance(input_ids[0], list)
        self.calls.append([ids[0] for ids in input_ids] if batch else input_ids[0])
        requests = input_ids if batch else [input_ids]
        self._started(len(requests))

        async def chunks():
            for step in range(self.tokens):
                for index, ids in enumerate(requests):
                    await asyncio.sleep(0)
                    chunk = self._chunk(ids, step)
                    if step == self.tokens - 1:
                        self.in_flight -= 1
                    yield {**chunk, "index": index} if batch else chunk

        return chunks()


def test_a_levels_first_wave_arrives_as_one_batch_and_the_rest_as_slots_free():
    """One by one, the first request of a wave reached an idle scheduler alone and was prefilled by
    itself while the others waited (2026-11-27: a c=16 level's time to first token moved by up to a
    second between runs); sent as one batch, the wave reaches the scheduler together."""
    import asyncio

    from sglang_dflash.bench.engine_run import run_group

    prompts = [{"id": f"p{k}", "input_ids": [k]} for k in range(6)]
    engine = _StreamingEngine()
    samples, _ = asyncio.run(run_group(engine, prompts, {}, 4, "test"))
    assert engine.calls == [[0, 1, 2, 3], 4, 5]  # the wave, then one request per freed slot
    assert engine.most_in_flight == 4
    assert sorted(s["id"] for s in samples) == [p["id"] for p in prompts]
    for s in samples:
        k = int(s["id"][1:])
        assert s["output_ids"] == [k] * 3 and s["completion_tokens"] == 3
        assert 0 <= s["ttft"] <= s["latency"]

    separate = _StreamingEngine()
    asyncio.run(run_group(separate, prompts, {}, 4, "test", first_wave="separate"))
    assert separate.calls == [0, 1, 2, 3, 4, 5] and separate.most_in_flight == 4
    one = _StreamingEngine()
    asyncio.run(run_group(one, prompts[:2], {}, 1, "test"))
    assert one.calls == [0, 1]  # a level of one request at a time has no wave to batch
    with pytest.raises(ValueError, match="first_wave is 'all'; expected one of"):
        asyncio.run(run_group(engine, prompts, {}, 4, "test", first_wave="all"))
    with pytest.raises(ValueError, match="--first-wave is 'all'"):
        BenchConfig(model="m", datasets=[], out="o", modes=["baseline"], first_wave="all")
