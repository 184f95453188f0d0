"""bench/feature_pass.py: its drift measure, its report, and its refusals (the timing itself runs on
the real target: bench/README.md, "The trainer's feature pass in bf16")."""

import os
import sys

import pytest
import torch
from bench_scripts import load_bench_script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def feature_pass():
    return load_bench_script("feature_pass")


def test_drift_is_relative_to_the_mean_magnitude_and_to_each_large_element(feature_pass):
    exact = [torch.tensor([[1.0, -1.0, 100.0]]), torch.tensor([[1.0, 1.0, 1.0]])]
    fast = [torch.tensor([[1.0, -1.0, 110.0]]), torch.tensor([[1.0, 1.5, 1.0]])]
    drift = feature_pass.feature_drift(exact, fast)
    # mean |diff| = 10.5 / 6 over mean |exact| = 105 / 6; the largest relative: 0.5 of the floor 17.5
    # (the mean magnitude) against 10 of 100.
    assert drift["mean"] == pytest.approx(10.5 / 105)
    assert drift["max_relative"] == pytest.approx(0.1)
    assert feature_pass.feature_drift(exact, exact) == {"mean": 0.0, "max_relative": 0.0}


def test_the_report_has_a_row_per_round_and_the_median_ratio(feature_pass, tmp_path):
    rows = [{"round": 1, "fp32_s": 0.6, "bf16_s": 0.4}, {"round": 2, "bf16_s": 0.3, "fp32_s": 0.6}]
    meta = {"records": 2, "tokens": 300, "max_seq_len": 512, "stores": ["default"], "threads": 2}
    feature_pass.write_report(str(tmp_path), rows, {"mean": 0.01, "max_relative": 0.3}, meta)
    table = (tmp_path / "results.md").read_text()
    assert "| 1 | 0.600 | 0.400 | 1.50x |" in table and "| 2 | 0.600 | 0.300 | 2.00x |" in table, table
    assert "| median | 0.600 | 0.350 | **1.71x** |" in table and "2 thread(s)" in table


@pytest.mark.parametrize(
    "argv", [["--records", "0"], ["--rounds", "0"], ["--threads", "0"], ["--max-seq-len", "0"]]
)
def test_bad_arguments_are_refused_naming_them(feature_pass, tmp_path, monkeypatch, argv):
    monkeypatch.setattr(sys, "argv", ["feature_pass.py", *argv, "--out", str(tmp_path)])
    with pytest.raises(SystemExit, match=argv[0]):
        feature_pass.main()
