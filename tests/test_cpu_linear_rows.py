"""bench/cpu_linear_rows.py: its products agree with F.linear, its report, and its refusals."""

import os
import sys

import pytest
import torch
from bench_scripts import load_bench_script

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def linear_rows():
    return load_bench_script("cpu_linear_rows")


def test_every_timed_product_computes_the_linear(linear_rows):
    x, w = torch.randn(5, 12), torch.randn(7, 12)
    for name, product in linear_rows.PRODUCTS.items():
        out = product(x, w)
        out = out.t() if out.shape == (7, 5) else out  # mm(W, x.T) is the transposed result
        torch.testing.assert_close(out, x @ w.t(), msg=name)


def test_the_report_has_a_row_per_row_count_with_each_product(linear_rows, tmp_path):
    rows = [
        {
            "rows": r,
            "step_ms": {n: 10.0 * r for n in linear_rows.PRODUCTS},
            "in_cache_gflops": dict.fromkeys(linear_rows.PRODUCTS, 2.5),
        }
        for r in (1, 16)
    ]
    linear_rows.write_report(str(tmp_path), rows, threads=2)
    table = (tmp_path / "results.md").read_text()
    products = len(linear_rows.PRODUCTS)
    assert "| 16 | " + "160.0 | " * products + "2.5 | " * (products - 1) + "2.5 |" in table, table
    assert "2 thread(s)" in table


@pytest.mark.parametrize("argv", [["--rows", "1,x"], ["--rows", "0,4"], ["--threads", "0"]])
def test_bad_arguments_are_refused_naming_them(linear_rows, tmp_path, monkeypatch, argv):
    monkeypatch.setattr(sys, "argv", ["cpu_linear_rows.py", *argv, "--out", str(tmp_path)])
    with pytest.raises(SystemExit, match=argv[0]):
        linear_rows.main()
