"""The CPU step profile: wall-clock phases of every decode step (``WallClockProfiler``), the
bench's per-group means from the worker's running totals, and the report's step-cost table."""

import json

import pytest
import torch

pytest.importorskip("sglang.srt.layers.radix_attention", reason="needs the sglang extra installed")

from sglang_dflash.bench.engine_run import profile_delta
from sglang_dflash.bench.report import phase_table, step_cost, summarize
from sglang_dflash.serving.worker import (
    NO_PROFILER,
    StepInputs,
    StepProfiler,
    WallClockProfiler,
    decode_step,
    make_profiler,
)
from sglang_dflash.speculative import BatchSampling, SamplingParams


class FakeClock:
    """perf_counter stand-in: every read advances one second (so every phase lasts whole reads)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def run_steps(profiler, steps: int, published: list | None = None) -> None:
    bs, block_size, vocab = 2, 4, 9
    inputs = StepInputs(
        bonus_tokens=torch.tensor([1, 2]),
        seq_lens=torch.tensor([3, 5]),
        out_cache_loc=torch.arange(bs * block_size),
        block_size=block_size,
        mask_token_id=0,
        sampling=BatchSampling.from_params([SamplingParams()] * bs),
    )
    logits = torch.randn(bs * block_size, vocab, generator=torch.Generator().manual_seed(0))
    for _ in range(steps):
        profiler.begin_step()
        decode_step(
            inputs,
            draft=lambda block, positions: logits,
            verify=lambda block, positions, slots: (logits, torch.zeros(bs * block_size, 1)),
            inject=lambda hidden, positions, slots: None,
            publish=(published.append if published is not None else None),
            profiler=profiler,
        )
        profiler.end_step()


def test_wall_clock_profile_times_every_phase_and_the_host_between_steps(tmp_path):
    path = tmp_path / "profile.json"
    profiler = WallClockProfiler(str(path), clock=FakeClock())
    profiler.forward_done()  # a prefill ended: the first step's host time counts from here
    run_steps(profiler, 3, published=[])
    written = json.loads(path.read_text())
    assert written["steps"] == 3
    # Each timed block reads the clock twice (one second apart); the step's own marks add reads.
    for name in ("draft_ms", "verify_ms", "accept_ms", "publish_ms", "inject_ms"):
        assert written[name] == 1000.0, name
    # accept+inject spans its own 2 reads around the 3 inner blocks' 6: 8 reads, 7 s apart.
    assert written["accept_inject_ms"] == 7000.0
    assert written["host_ms"] == 1000.0  # the read at forward_done / end_step, then begin_step's
    assert (
        written["step_ms"]
        == written["draft_ms"] + written["verify_ms"] + written["accept_inject_ms"] + (written["prepare_ms"])
    )
    assert written["totals_ms"]["draft_ms"] == 3000.0


def test_wall_clock_profile_counts_and_times_the_steps_of_each_verify_width(tmp_path):
    path = tmp_path / "profile.json"
    clock = FakeClock()
    profiler = WallClockProfiler(str(path), clock=clock)
    for width, seconds in ((4, 3), (1, 1), (4, 5)):
        profiler.begin_step()
        clock.now += seconds - 1  # end_step's read adds the last second
        profiler.end_step(width)
    widths = json.loads(path.read_text())["widths"]
    assert widths == {"1": {"steps": 1, "step_ms": 1000.0}, "4": {"steps": 2, "step_ms": 4000.0}}


def test_a_step_after_idle_time_without_a_forward_mark_has_no_host_time(tmp_path):
    profiler = WallClockProfiler(str(tmp_path / "p.json"), clock=FakeClock())
    run_steps(profiler, 1)
    assert json.loads((tmp_path / "p.json").read_text())["host_ms"] == 0.0


def test_the_profiler_follows_the_device(tmp_path):
    assert make_profiler(None, torch.device("cpu")) is NO_PROFILER
    assert isinstance(make_profiler(str(tmp_path / "p.json"), torch.device("cpu")), WallClockProfiler)
    assert isinstance(make_profiler(str(tmp_path / "p.json"), torch.device("cuda", 0)), StepProfiler)


def test_group_profile_is_the_mean_over_the_group_s_own_steps():
    before = {"steps": 10, "totals_ms": {"draft_ms": 100.0, "verify_ms": 300.0}}
    after = {"steps": 14, "totals_ms": {"draft_ms": 140.0, "verify_ms": 500.0}}
    assert profile_delta(before, after) == {"draft_ms": 10.0, "verify_ms": 50.0, "steps": 4}
    assert profile_delta(None, after) == {"draft_ms": 10.0, "verify_ms": 500.0 / 14, "steps": 14}
    assert profile_delta(after, after) is None  # no step in the group
    assert profile_delta(None, {"draft_ms": 1.0, "steps": 32}) is None  # CUDA events: no totals


def test_group_profile_counts_the_steps_each_verify_width_ran_in_the_group():
    before = {"steps": 3, "totals_ms": {}, "widths": {"1": {"steps": 2}, "4": {"steps": 1}}}
    after = {"steps": 9, "totals_ms": {}, "widths": {"1": {"steps": 6}, "4": {"steps": 1}, "8": {"steps": 2}}}
    assert profile_delta(before, after)["widths"] == "1:4 8:2"
    assert "widths" not in profile_delta(None, {"steps": 2, "totals_ms": {}})  # an older profile


def test_group_profile_gives_each_verify_widths_mean_step_time_in_the_group():
    # Width 1: 2 steps of 40 ms before, 6 steps averaging 45 ms after: the group's 4 took 47.5 ms each.
    before = {
        "steps": 3,
        "totals_ms": {},
        "widths": {"1": {"steps": 2, "step_ms": 40.0}, "4": {"steps": 1, "step_ms": 60.0}},
    }
    after = {
        "steps": 9,
        "totals_ms": {},
        "widths": {
            "1": {"steps": 6, "step_ms": 45.0},
            "4": {"steps": 1, "step_ms": 60.0},
            "8": {"steps": 2, "step_ms": 70.0},
        },
    }
    assert profile_delta(before, after)["width_ms"] == "1:47.5 8:70.0"
    older = {"steps": 2, "totals_ms": {}, "widths": {"4": {"steps": 2}}}  # counts without times
    assert "width_ms" not in profile_delta(None, older)


def test_report_gives_step_cost_and_the_phase_table():
    def group(mode, tokens, steps, wall, profile=None):
        samples = [
            {"id": 0, "output_ids": [1] * tokens, "latency": wall, "ttft": 0.1, "completion_tokens": tokens}
        ]
        if steps:
            samples[0]["spec_verify_ct"] = steps
        return {
            "mode": mode,
            "groups": [
                {
                    "dataset": "d",
                    "concurrency": 1,
                    "wall_seconds": wall,
                    "samples": samples,
                    "step_profile": profile,
                }
            ],
        }

    raw = {
        "temperature": 0,
        "modes": [
            group("baseline", 48, 0, 4.0),
            group(
                "dflash",
                48,
                24,
                8.0,
                {
                    "step_ms": 300.0,
                    "draft_ms": 50.0,
                    "steps": 24,
                    "widths": "16:24",
                    "width_ms": "16:300.0",
                },
            ),
        ],
    }
    rows = {r["mode"]: r for r in summarize(raw)}
    assert rows["dflash"]["speedup"] == 0.5 and rows["dflash"]["tau"] == 2.0
    assert rows["dflash"]["step_cost"] == 4.0  # tau 2 at half the throughput: 4 plain steps
    assert rows["baseline"]["step_cost"] is None
    table = phase_table(list(rows.values()))
    assert (
        "| d | 1 | dflash | 2.00 | 0.50 | 4.00 | 24 | 16:24 | 16:300.0 | - | - | - | 300.0 |" in table
    )  # no graphs on CPU, no staged verify and no noted product in this profile
    assert "baseline" not in table
    assert step_cost(1.5, float("nan")) is None


def test_per_group_graph_replays_come_from_the_gpu_profiles_counts():
    before = {"steps": 10, "totals_ms": {"verify_ms": 20.0}, "graph_steps": {"draft": 10, "verify": 4}}
    after = {"steps": 30, "totals_ms": {"verify_ms": 60.0}, "graph_steps": {"draft": 30, "verify": 4}}
    delta = profile_delta(before, after)
    assert delta["graphs"] == "draft 20/20 verify 0/20" and delta["verify_ms"] == 2.0
    assert "graphs" not in profile_delta(None, {"steps": 3, "totals_ms": {"verify_ms": 3.0}})


def test_per_group_staged_verifies_come_from_the_cpu_profiles_counts():
    before = {
        "steps": 10,
        "totals_ms": {"verify_ms": 20.0},
        "counts": {"staged_steps": 6, "second_pass_requests": 5},
    }
    after = {
        "steps": 30,
        "totals_ms": {"verify_ms": 60.0},
        "counts": {"staged_steps": 22, "second_pass_requests": 12, "cut_requests": 3},
    }
    assert profile_delta(before, after)["staged"] == "16/20 second 7 cut 3"
    assert "staged" not in profile_delta(None, {"steps": 3, "totals_ms": {"verify_ms": 3.0}})


def test_each_group_shows_the_product_the_cpu_servers_linears_took(tmp_path):
    """The worker notes its startup timing's choice in the profile; the bench's row shows it (a
    server whose timing chose F.linear is a fifth slower here, and nothing else would show it)."""
    import json

    from sglang_dflash.bench.report import PHASE_COLUMNS, summarize
    from sglang_dflash.serving.worker import NO_PROFILER, WallClockProfiler

    path = tmp_path / "profile.json"
    profiler = WallClockProfiler(str(path))
    profiler.note("linears", "packed")
    profiler.begin_step()
    profiler.end_step(16)
    after = json.loads(path.read_text())
    assert after["notes"] == {"linears": "packed"}
    assert profile_delta(None, after)["linears"] == "packed"
    assert "linears" not in profile_delta(None, {"steps": 3, "totals_ms": {"verify_ms": 3.0}})
    assert NO_PROFILER.note("linears", "packed") is None
    assert ("linears", 0) in PHASE_COLUMNS
    sample = {
        "completion_tokens": 4,
        "latency": 1.0,
        "ttft": 0.1,
        "spec_verify_ct": 2,
        "spec_accept_length": 2.0,
    }
    group = {"dataset": "d", "concurrency": 1, "wall_seconds": 1.0, "samples": [sample]}
    rows = summarize(
        {"modes": [{"mode": "dflash", "groups": [{**group, "step_profile": {"linears": "mm"}}]}]}
    )
    assert rows[0]["linears"] == "mm"
