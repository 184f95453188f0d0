"""bench/width_ceiling.py: the cost model and the replay of recorded decode steps."""

from __future__ import annotations

import pytest
from bench_scripts import load_bench_script

wc = load_bench_script("width_ceiling")

COSTS = wc.StepCosts(plain=100.0, draft=20.0, verify=((1, 100.0), (3, 160.0), (16, 200.0)), accept=10.0)


def test_verify_cost_is_interpolated_between_measured_widths_and_flat_past_them():
    assert COSTS.verify_ms(1) == 100.0
    assert COSTS.verify_ms(2) == pytest.approx(130.0)
    assert COSTS.verify_ms(9) == pytest.approx(160.0 + 6 * 40.0 / 13)
    assert COSTS.verify_ms(32) == 200.0
    assert COSTS.step(1) == 110.0  # no draft at width 1
    assert COSTS.step(3) == 190.0


def test_a_truncated_block_commits_its_accepted_prefix_plus_the_bonus_token():
    assert [wc.tokens(5, w) for w in (1, 2, 6, 16)] == [1, 2, 6, 6]
    assert wc.expected_tokens([0.5, 0.5, 1.0], 4) == pytest.approx(1 + 0.5 + 0.25 + 0.25)


def test_the_replay_ranks_policies_by_tokens_per_millisecond():
    steps = [{"confidences": [0.9] * 15, "accepted": 15}, {"confidences": [0.05] * 15, "accepted": 0}]
    rows = {r["policy"].split(" (")[0]: r for r in wc.replay(steps, COSTS, widths=(1, 16))}
    assert rows["fixed width 1"]["speedup"] == pytest.approx(100.0 / 110.0, abs=1e-3)
    # 17 tokens in 230 + 230 ms: each step pays the whole block.
    assert rows["fixed width 16"]["speedup"] == pytest.approx(17 / 460 * 100, abs=1e-3)
    # The oracle verifies 16 where all are accepted and 1 where none is: 17 tokens in 230 + 110 ms.
    assert rows["oracle width"]["speedup"] == pytest.approx(17 / 340 * 100, abs=1e-3)
    # Confident step -> 16; unconfident step -> 1 but it still paid for its draft (110 + 20 ms).
    assert rows["per-step width from the drafter's confidence"]["speedup"] == pytest.approx(
        17 / 360 * 100, abs=1e-3
    )


def test_a_bad_verify_point_is_refused_naming_it():
    assert wc.parse_verify(["16:2.5", "1:1"]) == ((1, 1.0), (16, 2.5))
    with pytest.raises(SystemExit, match="'16=2.5'.*WIDTH:MILLISECONDS"):
        wc.parse_verify(["16=2.5"])
