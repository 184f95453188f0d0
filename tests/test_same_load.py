"""bench/same_load.py: the modes it accepts and the report it writes (its servers run in bench sessions)."""

import json
import os
import re

import pytest
from bench_scripts import load_bench_script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def same_load():
    return load_bench_script("same_load")


def test_a_fixed_width_mode_is_the_adaptive_policy_with_that_width_set(same_load):
    flags = same_load.mode_flags("w4+8", "drafter", "map.pt")
    config = json.loads(flags[flags.index("--speculative-adaptive-config") + 1])
    assert config == {"widths": [4, 8], "explore_every": 1_000_000}
    assert flags[flags.index("--speculative-token-map") + 1] == "map.pt"
    assert same_load.mode_flags("plain", "drafter", None) == []
    assert "--speculative-adaptive" not in same_load.mode_flags("dflash", "drafter", None)


def test_an_adaptive_width_set_mode_keeps_the_default_exploration(same_load):
    flags = same_load.mode_flags("adaptive:1+2+4", "drafter", None)
    assert json.loads(flags[flags.index("--speculative-adaptive-config") + 1]) == {"widths": [1, 2, 4]}


def test_an_adaptive_settings_mode_passes_its_settings_as_json(same_load):
    flags = same_load.mode_flags("adaptive@confirm_promising=false@time_window=9", "drafter", None)
    config = json.loads(flags[flags.index("--speculative-adaptive-config") + 1])
    assert config == {"confirm_promising": False, "time_window": 9}


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("adaptive@confirm_promising", "has the setting 'confirm_promising'; expected <key>=<json value>"),
        ("adaptive@time_window=nine", "has the setting 'time_window=nine'; expected <key>=<json value>"),
        ("adaptive@window=9", "keys ['window'] are unknown"),
        ("adaptive@time_window=0", "time_window is 0; expected an integer >= 1"),
    ],
)
def test_a_bad_adaptive_setting_is_refused_naming_it(same_load, mode, message):
    with pytest.raises(SystemExit, match=re.escape(f"--modes: '{mode}'")) as e:
        same_load.mode_flags(mode, "drafter", None)
    assert message in str(e.value)


@pytest.mark.parametrize("mode", ["w", "w0", "wide", "eagle", "adaptive:", "adaptive:0+2", "adaptive:x"])
def test_an_unknown_mode_is_refused_naming_it(same_load, mode):
    with pytest.raises(SystemExit, match=re.escape(f"--modes: '{mode}' is unknown")):
        same_load.mode_flags(mode, "drafter", None)


def test_the_report_gives_each_modes_median_ratio_to_plain(same_load, tmp_path):
    rows = [{"mode": "plain", "round": r, "tok_s": 7.0, "tau": 1.0, "vs_plain": 1.0} for r in range(3)] + [
        {"mode": "w4", "round": r, "tok_s": 7.0 * x, "tau": 1.6, "vs_plain": x}
        for r, x in enumerate((0.9, 1.2, 1.1))
    ]
    same_load.write_report(str(tmp_path), rows)
    table = (tmp_path / "results.md").read_text()
    assert (
        "| w4 | 6.30, 8.40, 7.70 | 0.90, 1.20, 1.10 | 1.10 | 1.60, 1.60, 1.60 | 1.78, 1.33, 1.45 | -, -, - "
        "| -, -, - |" in table
    ), table


def test_the_one_pass_mode_is_the_whole_block_with_staging_switched_off(same_load, tmp_path):
    for mode in ("dflash-one-pass", "dflash-second-pass-always"):
        assert same_load.mode_flags(mode, "drafter", None) == same_load.mode_flags("dflash", "drafter", None)
    assert same_load.WHOLE_BLOCK_MODES["dflash-one-pass"] == {"SGLANG_DFLASH_STAGED_VERIFY": "0"}
    assert same_load.WHOLE_BLOCK_MODES["dflash-second-pass-always"] == {"SGLANG_DFLASH_SECOND_PASS": "always"}
    assert same_load.WHOLE_BLOCK_MODES["dflash"] == {}
    before = {"steps": 4, "counts": {"staged_steps": 1, "second_pass_requests": 2}}
    after = {"steps": 10, "counts": {"staged_steps": 5, "second_pass_requests": 3}}
    assert same_load.staged_steps(before, after) == "4/6 second 1 cut 0"
    assert same_load.staged_steps(None, None) == ""


def test_the_adaptive_chain_mode_is_the_adaptive_policy_without_the_wide_batch_tree(same_load):
    assert same_load.mode_flags("adaptive-chain", "drafter", None) == same_load.mode_flags(
        "adaptive", "drafter", None
    )
    assert "--speculative-adaptive" in same_load.mode_flags("adaptive-chain", "drafter", None)
    assert same_load.ADAPTIVE_MODES["adaptive-chain"] == {"SGLANG_DFLASH_WIDE_BATCH_TREE": "off"}
    assert same_load.ADAPTIVE_MODES["adaptive"] == {}


@pytest.mark.parametrize(
    "mode, base, lookup",
    [
        ("dflash-no-lookup", "dflash", "0"),
        ("dflash-lookup4", "dflash", "4"),
        ("adaptive-no-lookup", "adaptive", "0"),
    ],
)
def test_the_lookup_modes_are_their_base_mode_with_another_branch(same_load, mode, base, lookup):
    assert same_load.mode_flags(mode, "drafter", None) == same_load.mode_flags(base, "drafter", None)
    modes = same_load.WHOLE_BLOCK_MODES | same_load.ADAPTIVE_MODES
    assert modes[mode] == {"SGLANG_DFLASH_PROMPT_LOOKUP": lookup} and modes[base] == {}


def test_the_fixed_lookup_mode_verifies_the_branch_at_every_step(same_load):
    assert same_load.mode_flags("dflash-lookup-fixed", "drafter", None) == same_load.mode_flags(
        "dflash", "drafter", None
    )
    assert same_load.WHOLE_BLOCK_MODES["dflash-lookup-fixed"] == {"SGLANG_DFLASH_LOOKUP_BY_PROPOSAL": "0"}


def test_servers_keep_the_memory_they_touched_unless_told_otherwise(same_load):
    tuned = same_load.server_env("dflash-lookup-fixed", "0-1", "p.json", "tuned")
    assert tuned["MALLOC_MMAP_THRESHOLD_"] == str(32 << 20) and tuned["SGLANG_DFLASH_PROFILE"] == "p.json"
    assert tuned["SGLANG_DFLASH_LOOKUP_BY_PROPOSAL"] == "0" and tuned["SGLANG_CPU_OMP_THREADS_BIND"] == "0-1"
    plain = same_load.server_env("plain", "0", None, "default")
    assert plain == {"SGLANG_CPU_OMP_THREADS_BIND": "0"}


def test_the_dtype_flag_comes_after_the_cpu_servers_float32(same_load):
    flags = same_load.server_flags("adaptive", "bfloat16", "drafter", None)
    assert flags[flags.index("--dtype") + 1] == "bfloat16"
    assert flags.index("--dtype") < flags.index("--speculative-algorithm")


def test_differing_greedy_output_fails_a_float32_run_and_is_recorded_in_bf16(same_load):
    rows = [
        {"mode": "plain", "round": 0, "same_as_plain": True},
        {"mode": "dflash", "round": 1, "same_as_plain": False},
    ]
    with pytest.raises(SystemExit, match=re.escape("in ['dflash round 1']")):
        same_load.check_greedy_output(rows, "float32")
    same_load.check_greedy_output(rows, "bfloat16")
    same_load.check_greedy_output(rows[:1], "float32")
