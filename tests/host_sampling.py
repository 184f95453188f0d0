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


class _OneRequestBatch:
    """The parts of a ScheduleBatch that SGLang's penalizers read (weak-referenced: keep it alive)."""

    def __init__(self, params, eos_token_id: int):
        from types import SimpleNamespace

        sampling_params = SimpleNamespace(
            frequency_penalty=params.frequency_penalty,
            presence_penalty=params.presence_penalty,
            repetition_penalty=params.repetition_penalty,
            min_new_tokens=params.min_new_tokens,
            stop_token_ids=set(params.stop_token_ids),
        )
        tokenizer = SimpleNamespace(additional_stop_token_ids=None, eos_token_id=eos_token_id)
        self.reqs = [SimpleNamespace(sampling_params=sampling_params, tokenizer=tokenizer)]
        self.device = "cpu"


@torch.inference_mode()
def host_penalized_logits(target, prompt: list[int], output: list[int], params, eos_token_id: int):
    """The target's next-token logits [V] after ``prompt + output``, penalised by SGLang's own
    penalizers fed ``output`` (additive then scaling, as its overlap scheduler applies them)."""
    logits = target(torch.tensor([prompt + output])).logits[0, -1].float()
    return host_penalized(logits, output, params, eos_token_id)


def host_penalized(logits: torch.Tensor, output: list[int], params, eos_token_id: int) -> torch.Tensor:
    """``logits`` [V] after ``output``, penalised in place by SGLang's own penalizers fed ``output``."""
    from sglang.srt.sampling import penaltylib
    from sglang.srt.sampling.penaltylib.repetition_penalty import apply_scaling_penalties

    batch = _OneRequestBatch(params, eos_token_id)
    orchestrator = penaltylib.BatchedPenalizerOrchestrator(
        vocab_size=logits.shape[-1],
        batch=batch,
        penalizers={
            penaltylib.BatchedFrequencyPenalizer,
            penaltylib.BatchedMinNewTokensPenalizer,
            penaltylib.BatchedPresencePenalizer,
            penaltylib.BatchedRepetitionPenalizer,
        },
    )
    for token in output:
        orchestrator.cumulate_output_tokens(torch.tensor([token]))
    logits = logits[None]
    additive = torch.zeros_like(logits)
    orchestrator.accumulate_additive_penalties(additive)
    logits.add_(additive)
    scaling = orchestrator.accumulate_scaling_penalties()
    if scaling is not None:
        apply_scaling_penalties(logits, scaling)
    return logits[0]


@torch.inference_mode()
def host_penalized_greedy(target, prompt: list[int], params, eos_token_id: int) -> list[int]:
    """Plain greedy decoding, one token per target pass (its KV cache kept, as a server keeps it),
    penalised by SGLang's own penalizers."""
    output: list[int] = []
    step = target(torch.tensor([prompt]), use_cache=True)
    while len(output) < params.max_new_tokens:
        logits = host_penalized(step.logits[0, -1].float(), output, params, eos_token_id)
        token = int(logits.argmax())
        output.append(token)
        if token in params.stop_token_ids:
            break
        step = target(torch.tensor([[token]]), past_key_values=step.past_key_values, use_cache=True)
    return output
