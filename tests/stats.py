"""Goodness-of-fit helper for the sampling tests."""

import torch


def chi_square_pvalue(counts: torch.Tensor, probs: torch.Tensor, min_expected: float = 5.0) -> float:
    """Pearson chi-square p-value of observed ``counts`` against exact ``probs`` (same shape, flattened).

    Cells whose expected count is below ``min_expected`` are pooled into one cell, the usual
    condition for the chi-square approximation to hold.
    """
    counts, probs = counts.flatten().double(), probs.flatten().double()
    expected = probs / probs.sum() * counts.sum()
    small = expected < min_expected
    obs = torch.cat([counts[~small], counts[small].sum()[None]])
    exp = torch.cat([expected[~small], expected[small].sum()[None]])
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    stat = ((obs - exp) ** 2 / exp.clamp_min(1e-300)).sum()
    dof = obs.numel() - 1
    return float(torch.special.gammaincc(torch.tensor(dof / 2, dtype=torch.float64), stat / 2))
