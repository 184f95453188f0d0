"""Our top-k / top-p / min-p filter keeps exactly the tokens SGLang's plain sampler keeps.

The oracles (``tests/host_sampling.py``) are the host's own pytorch sampler function and flashinfer's
documented semantics; the grid covers every combination of the three filters, and the worker's
``batch_sampling`` picks the order the host's sampler of the same batch would use.
"""

import dataclasses
import itertools

import pytest
import torch
from host_sampling import flashinfer_sampler_probs, pytorch_sampler_probs

from sglang_dflash.speculative import BatchSampling, SamplingParams, sampling_probs

pytest.importorskip("sglang", reason="the oracle is the host's own sampler function")

TOP_K_ALL = 1 << 30  # SGLang's top_k for "off"
VOCAB, ROWS = 40, 6
TOP_KS = [-1, 1, 2, 5, 17]
TOP_PS = [0.3, 0.6, 0.9, 1.0]
MIN_PS = [0.0, 0.05, 0.3]


def random_probs(seed: int) -> torch.Tensor:
    """ROWS peaked and flat distributions over VOCAB tokens (no two equal: ties cannot decide)."""
    g = torch.Generator().manual_seed(seed)
    scale = torch.linspace(0.5, 4.0, ROWS)[:, None]
    return torch.softmax(torch.randn(ROWS, VOCAB, generator=g, dtype=torch.float64) * scale, -1).float()


def our_filter(
    probs: torch.Tensor, top_k: int, top_p: float, min_p: float, top_p_after_top_k: bool
) -> torch.Tensor:
    """``sampling_probs`` at temperature 1 on log-probs: exactly the filter applied to ``probs``."""
    params = [SamplingParams(temperature=1.0, top_k=top_k, top_p=top_p, min_p=min_p)] * probs.shape[0]
    sampling = dataclasses.replace(BatchSampling.from_params(params), top_p_after_top_k=top_p_after_top_k)
    return sampling_probs(probs.log()[:, None, :], sampling)[:, 0]


def host_args(n: int, top_k: int, top_p: float, min_p: float) -> tuple[torch.Tensor, ...]:
    k = TOP_K_ALL if top_k <= 0 else top_k
    return torch.full((n,), k), torch.full((n,), top_p), torch.full((n,), min_p)


def test_top_p_is_measured_on_the_original_distribution_as_the_pytorch_sampler_does():
    probs = torch.tensor([[0.5, 0.3, 0.2]])
    host = pytorch_sampler_probs(probs, *host_args(1, 2, 0.6, 0.0))
    ours = our_filter(probs, top_k=2, top_p=0.6, min_p=0.0, top_p_after_top_k=False)
    assert host.tolist()[0] == pytest.approx([0.625, 0.375, 0.0])
    assert ours.tolist()[0] == pytest.approx([0.625, 0.375, 0.0])


def test_flashinfer_with_min_p_measures_top_p_after_the_top_k_renormalisation():
    probs = torch.tensor([[0.5, 0.3, 0.2]])
    ours = our_filter(probs, top_k=2, top_p=0.6, min_p=0.01, top_p_after_top_k=True)
    assert ours.tolist()[0] == pytest.approx([1.0, 0.0, 0.0])
    assert flashinfer_sampler_probs(probs, *host_args(1, 2, 0.6, 0.01)).tolist()[0] == pytest.approx(
        [1.0, 0.0, 0.0]
    )


@pytest.mark.parametrize("min_p", MIN_PS)
def test_filter_grid_equals_the_hosts_pytorch_sampler(min_p):
    probs = random_probs(seed=int(min_p * 100))
    for top_k, top_p in itertools.product(TOP_KS, TOP_PS):
        host = pytorch_sampler_probs(probs, *host_args(ROWS, top_k, top_p, min_p))
        ours = our_filter(probs, top_k, top_p, min_p, top_p_after_top_k=False)
        assert torch.equal(ours > 0, host > 0), (top_k, top_p, min_p)
        torch.testing.assert_close(ours, host, msg=f"top_k={top_k} top_p={top_p} min_p={min_p}")


@pytest.mark.parametrize("min_p", MIN_PS)
def test_filter_grid_equals_flashinfer_semantics(min_p):
    """flashinfer: joint order without min-p in the batch, top-k renormalised first with it."""
    probs = random_probs(seed=7 + int(min_p * 100))
    for top_k, top_p in itertools.product(TOP_KS, TOP_PS):
        expected = flashinfer_sampler_probs(probs, *host_args(ROWS, top_k, top_p, min_p))
        ours = our_filter(probs, top_k, top_p, min_p, top_p_after_top_k=min_p > 0)
        assert torch.equal(ours > 0, expected > 0), (top_k, top_p, min_p)
        torch.testing.assert_close(ours, expected, msg=f"top_k={top_k} top_p={top_p} min_p={min_p}")


def test_the_two_orders_differ_where_top_k_cuts_mass_top_p_would_keep():
    """The grid can tell the orders apart: somewhere they keep different tokens."""
    probs = random_probs(seed=3)
    differs = [
        (k, p)
        for k, p in itertools.product(TOP_KS, TOP_PS)
        if not torch.equal(
            our_filter(probs, k, p, 0.0, top_p_after_top_k=False) > 0,
            our_filter(probs, k, p, 0.0, top_p_after_top_k=True) > 0,
        )
    ]
    assert differs


@pytest.mark.parametrize(
    ("backend", "min_ps", "after"),
    [
        ("pytorch", [0.0, 0.0], False),
        ("pytorch", [0.1, 0.0], False),
        ("flashinfer", [0.0, 0.0], False),
        ("flashinfer", [0.1, 0.0], True),  # batch-wide, as the host's need_min_p_sampling
    ],
)
def test_worker_picks_the_order_of_the_hosts_sampler_for_the_batch(backend, min_ps, after):
    from test_sglang_worker_parts import TOP_K_ALL as HOST_TOP_K_ALL
    from test_sglang_worker_parts import sampling_info

    from sglang_dflash.serving.worker import batch_sampling

    info = sampling_info([0.8, 0.8], [5, HOST_TOP_K_ALL], top_ps=[0.9, 0.9], min_ps=min_ps)
    assert batch_sampling(info, 2, backend).top_p_after_top_k is after


@pytest.mark.gpu
def test_flashinfer_semantics_match_the_real_kernels():
    """The flashinfer oracle above against flashinfer itself (CUDA only): the renorm kernels exactly,
    the joint sampler's support by sampling."""
    from flashinfer.sampling import top_k_renorm_probs, top_k_top_p_sampling_from_probs, top_p_renorm_probs

    probs = random_probs(seed=5).cuda()
    for top_k, top_p in itertools.product([2, 5, 17], [0.3, 0.6, 0.9]):
        k, p, m = (t.cuda() for t in host_args(ROWS, top_k, top_p, 0.01))
        renormed = top_p_renorm_probs(top_k_renorm_probs(probs, k.int()), p)
        expected = flashinfer_sampler_probs(probs.cpu(), *host_args(ROWS, top_k, top_p, 0.0))
        expected_renormed = flashinfer_sampler_probs(probs.cpu(), k.cpu(), p.cpu(), torch.zeros(ROWS) + 1e-9)
        torch.testing.assert_close(renormed.cpu(), expected_renormed, atol=1e-5, rtol=1e-4)
        draws = torch.stack(
            [
                top_k_top_p_sampling_from_probs(probs, k.int(), p, filter_apply_order="joint")
                for _ in range(2000)
            ]
        ).cpu()  # [2000, ROWS]
        for row in range(ROWS):
            seen = torch.zeros(VOCAB, dtype=torch.bool)
            seen[draws[:, row]] = True
            assert not (seen & (expected[row] == 0)).any(), (top_k, top_p, row)
