"""The distributions SGLang's plain samplers draw from, as oracles for our filters.

- :func:`pytorch_sampler_probs` runs the host's own ``top_k_top_p_min_p_sampling_from_probs_torch``
  (``--sampling-backend pytorch``, the CPU default) and reads the filtered distribution it hands to
  ``torch.multinomial``.
- :func:`flashinfer_sampler_probs` states flashinfer's semantics (its kernels need CUDA), written from
  flashinfer's documentation independently of ``speculative._filter_rows_``: without min-p SGLang calls
  ``top_k_top_p_sampling_from_probs(filter_apply_order="joint")`` (a token must pass top-k and top-p of
  the original distribution); with min-p in the batch it calls ``top_k_renorm_prob``,
  ``top_p_renorm_prob`` (top-p of the top-k-renormalised distribution), ``min_p_sampling_from_probs``.
  ``tests/gpu`` checks these statements against the real kernels.
"""

from __future__ import annotations

from unittest import mock

import torch


def pytorch_sampler_probs(
    probs: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor, min_p: torch.Tensor
) -> torch.Tensor:
    """[n, V] distribution SGLang's pytorch sampler samples from for probs [n, V] (renormalised)."""
    from sglang.srt.layers.sampler import top_k_top_p_min_p_sampling_from_probs_torch

    captured: list[torch.Tensor] = []
    multinomial = torch.multinomial

    def capture(weights: torch.Tensor, num_samples: int, *args, **kwargs) -> torch.Tensor:
        captured.append(weights.clone())
        return multinomial(weights, num_samples, *args, **kwargs)

    with mock.patch.object(torch, "multinomial", capture):
        top_k_top_p_min_p_sampling_from_probs_torch(
            probs.clone(),
            top_k.to(torch.int64),
            top_p,
            min_p,
            need_min_p_sampling=bool((min_p > 0).any()),
            sampling_seed=None,
            positions=None,
        )
    (sorted_weights,) = captured
    # The host sorted the same tensor the same way: its order puts the weights back by token.
    order = probs.sort(dim=-1, descending=True).indices
    weights = torch.zeros_like(probs).scatter_(-1, order, sorted_weights)
    return weights / weights.sum(-1, keepdim=True)


def flashinfer_sampler_probs(
    probs: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor, min_p: torch.Tensor
) -> torch.Tensor:
    """[n, V] distribution of SGLang's flashinfer sampler (one row at a time, by definition)."""
    batch_needs_min_p = bool((min_p > 0).any())
    rows = []
    for row, k, p, m in zip(probs.double(), top_k.tolist(), top_p.tolist(), min_p.tolist(), strict=True):
        ranked = sorted(range(row.numel()), key=lambda t: -row[t].item())
        in_top_k = set(ranked[: k if 0 < k < row.numel() else row.numel()])
        kept = torch.zeros_like(row)
        for t in in_top_k:
            kept[t] = row[t]
        basis = kept / kept.sum() if batch_needs_min_p else row  # renorm first, or the original (joint)
        mass_before, in_top_p = 0.0, set()
        for t in ranked:
            if mass_before >= p:
                break
            in_top_p.add(t)
            mass_before += basis[t].item()
        out = torch.zeros_like(row)
        for t in in_top_k & in_top_p:
            out[t] = row[t]
        if batch_needs_min_p:
            out[out < m * out.max()] = 0
        rows.append(out / out.sum())
    return torch.stack(rows).to(probs.dtype)
