"""``sglang-dflash doctor``: versions, plugin registration, the active implementation, the device,
and every startup check's verdict for a target/drafter pair, with a non-zero exit on any failure.

Each scenario is one ``sglang-dflash doctor --json`` process (the plugin check loads SGLang's
plugins, which patch SGLang process-wide).
"""

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file, save_file

from sglang_dflash.doctor import format_report
from sglang_dflash.testing import save_tiny_pair

pytest.importorskip("sglang", reason="needs the sglang extra installed")

PAIR_CHECKS = [
    "drafter path",
    "drafter config.json",
    "target config.json",
    "drafter fits target",
    "attention-only target",
    "target captures hidden states",
    "drafter weights",
    "draft layers",
    "block size",
    "dtype",
]


def doctor(*args: str, env_extra: dict | None = None) -> tuple[int, dict]:
    """(exit status, JSON report) of one ``doctor --json`` run."""
    command = [sys.executable, "-m", "sglang_dflash.cli", "doctor", "--json", *args]
    proc = subprocess.run(
        command,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env_extra or {})},
    )
    start = proc.stdout.find("{")
    assert start >= 0, f"no report (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc.returncode, json.loads(proc.stdout[start:])


def verdicts(report: dict) -> dict[str, dict]:
    return {c["name"]: c for c in report["checks"]}


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[str, str, str]:
    """(target, drafter, a drafter with a wrong vocab size and a misshaped fc) for a tiny Qwen3 target."""
    root = str(tmp_path_factory.mktemp("doctor"))
    target, drafter = save_tiny_pair(root, "qwen3", block_size=4, num_layers=2)
    bad = shutil.copytree(drafter, os.path.join(root, "bad-drafter"))
    with open(os.path.join(bad, "config.json")) as f:
        config = json.load(f)
    config["vocab_size"] = 96
    with open(os.path.join(bad, "config.json"), "w") as f:
        json.dump(config, f)
    state = load_file(os.path.join(bad, "model.safetensors"))
    state["fc.weight"] = torch.zeros(32, 96)
    save_file(state, os.path.join(bad, "model.safetensors"))
    return target, drafter, bad


@pytest.fixture(scope="module")
def good(pair) -> tuple[int, dict]:
    return doctor("--target", pair[0], "--drafter", pair[1])


def test_a_good_pair_passes_every_check_and_exits_zero(good):
    status, report = good
    assert status == 0 and report["ok"], report
    assert list(verdicts(report)) == ["plugin registered", "DFLASH implementation", *PAIR_CHECKS]
    assert all(c["ok"] for c in report["checks"]), report["checks"]


def test_a_modelscope_id_is_found_in_the_modelscope_cache_when_sglang_uses_modelscope(pair, tmp_path):
    target, drafter, _ = pair
    shutil.copytree(drafter, tmp_path / "models" / "tiny-org" / "tiny-dflash-ms")
    env = {"SGLANG_USE_MODELSCOPE": "1", "MODELSCOPE_CACHE": str(tmp_path)}
    status, report = doctor("--target", target, "--drafter", "tiny-org/tiny-dflash-ms", env_extra=env)
    assert status == 0 and report["ok"], report["checks"]
    assert (
        str(tmp_path / "models" / "tiny-org" / "tiny-dflash-ms") in verdicts(report)["drafter path"]["detail"]
    )


def test_versions_plugin_implementation_and_device_are_reported(good):
    _, report = good
    from importlib.metadata import version

    assert report["versions"]["sglang"] == version("sglang")
    assert report["versions"]["torch"] == version("torch")
    assert set(report["versions"]) == {"sglang", "torch", "triton", "flashinfer", "sgl-kernel"}
    checks = verdicts(report)
    assert "hooks installed" in checks["plugin registered"]["detail"]
    assert checks["DFLASH implementation"]["detail"].startswith("sglang-dflash ")
    assert report["device"].startswith("CUDA" if torch.cuda.is_available() else "CPU")


def test_each_failing_startup_check_is_named_and_the_exit_is_non_zero(pair):
    target, _, bad = pair
    status, report = doctor("--target", target, "--drafter", bad, "--speculative-num-draft-tokens", "8")
    checks = verdicts(report)
    assert status == 1 and not report["ok"]
    assert "vocab_size is 96" in checks["drafter fits target"]["detail"]
    assert "fc.weight shape is [32, 96]" in checks["drafter weights"]["detail"]
    block_size = checks["block size"]["detail"]
    assert block_size.startswith("sglang-dflash: --speculative-num-draft-tokens is 8; expected")
    failed = {name for name, c in checks.items() if not c["ok"]}
    assert failed == {
        "drafter fits target",
        "drafter weights",
        "block size",
        "target captures hidden states",
    }, checks
    assert checks["target captures hidden states"]["detail"].startswith("skipped: needs a drafter that fits")
    assert all("expected" in checks[name]["detail"] for name in failed - {"target captures hidden states"})


def test_a_missing_drafter_and_a_bad_switch_fail_and_later_checks_are_skipped(pair, tmp_path):
    target = pair[0]
    status, report = doctor(
        "--target",
        target,
        "--drafter",
        str(tmp_path / "nope"),
        env_extra={"SGLANG_DFLASH_IMPL": "ours-please"},
    )
    checks = verdicts(report)
    assert status == 1
    assert "SGLANG_DFLASH_IMPL is 'ours-please'" in checks["DFLASH implementation"]["detail"]
    assert checks["drafter path"]["detail"].startswith("sglang-dflash: --speculative-draft-model-path is ")
    assert checks["target config.json"]["ok"], "checks that do not need the drafter still run"
    assert checks["drafter weights"]["detail"].startswith("skipped: needs a drafter directory")


def test_the_text_report_marks_each_check_and_counts_failures():
    report = {
        "versions": {"sglang": "0.5.16", "torch": None},
        "device": "CPU (2 cores)",
        "ok": False,
        "checks": [
            {"name": "plugin registered", "ok": True, "detail": "hooks installed"},
            {"name": "block size", "ok": False, "detail": "--speculative-num-draft-tokens=8 ..."},
        ],
    }
    text = format_report(report)
    assert "[ok] plugin registered: hooks installed" in text
    assert "[FAIL] block size: --speculative-num-draft-tokens=8 ..." in text
    assert "torch       not installed" in text
    assert text.endswith("1 check(s) failed")


def test_draft_layers_are_described_with_their_types_window_and_block_attention():
    from sglang_dflash.config import draft_config_for_target
    from sglang_dflash.doctor import describe_draft_layers
    from sglang_dflash.testing import tiny_target_config

    target = tiny_target_config("llama")
    assert describe_draft_layers(draft_config_for_target(target, num_layers=2)) == (
        "2 layers: full_attention x2, bidirectional"
    )
    zlab = draft_config_for_target(
        target, num_layers=2, layer_types=["sliding_attention"] * 2, sliding_window=2048, is_causal=False
    )
    assert describe_draft_layers(zlab) == "2 layers: sliding_attention x2 (window 2048), bidirectional"
    mixed = draft_config_for_target(
        target, num_layers=2, layer_types=["sliding_attention", "full_attention"], sliding_window=8
    )
    assert describe_draft_layers(mixed) == (
        "2 layers: sliding_attention x1, full_attention x1 (window 8), causal in layers [0]"
    )
