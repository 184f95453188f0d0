"""Pure functions of one speculative step, shared by the reference and the SGLang worker.

Shapes: ``B`` rows, block size ``S`` (the last accepted token + ``S-1`` drafts), vocab ``V``.

- :func:`build_block` / :func:`block_positions`: the block the drafter denoises.
- :func:`sampling_probs`: temperature / top-k / top-p / min-p filtered distribution per row
  (greedy rows become one-hot argmax), one float32 ``[B, S, V]`` buffer plus a bounded sort chunk;
  :func:`sampling_peak_bytes` states the sampled path's peak memory.
- :func:`greedy_accept`: longest prefix of drafts equal to the target's argmax, plus bonus.
- :func:`speculative_sampling_accept`: accept draft ``d`` with probability min(1, p(d)/q(d));
  at the first rejection sample from the residual norm(max(p - q, 0)); if all are accepted sample
  the bonus from p.  This keeps the output distribution exactly the target's.
- :func:`truncate_at_stop`: how many emitted tokens survive max-new-tokens and stop tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch


@dataclass(frozen=True)
class SamplingParams:
    """Per-request sampling settings (SGLang conventions: top_k <= 0 or -1 means off)."""

    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = -1
    min_p: float = 0.0
    max_new_tokens: int = 128
    stop_token_ids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not self.temperature >= 0:
            raise ValueError(f"temperature={self.temperature!r} is invalid; expected a number >= 0")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p={self.top_p!r} is invalid; expected a number in (0, 1]")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int):
            raise ValueError(f"top_k={self.top_k!r} is invalid; expected an integer (<= 0 disables it)")
        if not 0 <= self.min_p < 1:
            raise ValueError(f"min_p={self.min_p!r} is invalid; expected a number in [0, 1)")
        if isinstance(self.max_new_tokens, bool) or not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens={self.max_new_tokens!r} is invalid; expected an integer >= 1")
        object.__setattr__(self, "stop_token_ids", tuple(int(t) for t in self.stop_token_ids))

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@dataclass(frozen=True)
class BatchSampling:
    """Per-row sampling tensors for a batch of :class:`SamplingParams`."""

    temperature: torch.Tensor  # [B] float32, 0 = greedy
    top_p: torch.Tensor  # [B] float32
    top_k: torch.Tensor  # [B] int64, <= 0 = off
    min_p: torch.Tensor  # [B] float32
    stop_token_ids: torch.Tensor  # [B, max_stops] int64, -1 padded

    @classmethod
    def from_params(cls, params: Sequence[SamplingParams], device: torch.device | str = "cpu") -> "BatchSampling":
        width = max([len(p.stop_token_ids) for p in params] + [1])
        stops = torch.full((len(params), width), -1, dtype=torch.long)
        for row, p in enumerate(params):
            stops[row, : len(p.stop_token_ids)] = torch.tensor(p.stop_token_ids, dtype=torch.long)
        return cls(
            temperature=torch.tensor([p.temperature for p in params], dtype=torch.float32, device=device),
            top_p=torch.tensor([p.top_p for p in params], dtype=torch.float32, device=device),
            top_k=torch.tensor([p.top_k for p in params], dtype=torch.long, device=device),
            min_p=torch.tensor([p.min_p for p in params], dtype=torch.float32, device=device),
            stop_token_ids=stops.to(device),
        )

    @property
    def greedy(self) -> torch.Tensor:
        return self.temperature <= 0

    def select(self, rows: torch.Tensor) -> "BatchSampling":
        return BatchSampling(*(t[rows] for t in (self.temperature, self.top_p, self.top_k, self.min_p, self.stop_token_ids)))


# ---------------------------------------------------------------------------- the block
def build_block(last_tokens: torch.Tensor, block_size: int, mask_token_id: int) -> torch.Tensor:
    """[B] last accepted tokens -> [B, S] block ``[last, MASK, ..., MASK]``."""
    block = torch.full((last_tokens.shape[0], block_size), mask_token_id, dtype=torch.long, device=last_tokens.device)
    block[:, 0] = last_tokens
    return block


def block_positions(seq_lens: torch.Tensor, block_size: int) -> torch.Tensor:
    """Absolute positions of the block: the last accepted token sits at ``seq_len`` (0-based)."""
    return seq_lens[:, None] + torch.arange(block_size, device=seq_lens.device)[None, :]


# ---------------------------------------------------------------------------- distributions
# The filtered path sorts the vocabulary; it does so a chunk of rows at a time, so its working
# memory (sorted values, int64 order, cumulative mass, masks: under FILTER_BYTES_PER_ELEMENT bytes
# per vocab entry) stays near FILTER_CHUNK_BYTES whatever the batch.
FILTER_CHUNK_BYTES = 256 * 2**20
FILTER_BYTES_PER_ELEMENT = 32


def filter_chunk_rows(vocab: int) -> int:
    """How many rows of ``vocab`` entries one filter chunk sorts at a time."""
    return max(1, FILTER_CHUNK_BYTES // (FILTER_BYTES_PER_ELEMENT * vocab))


def sampling_peak_bytes(bs: int, block_size: int, vocab: int) -> int:
    """Upper bound on the bytes the sampled draft + accept path of one step allocates.

    With ``S = block_size`` and ``V = vocab``: the draft distributions ``[bs, S-1, V]`` and the
    target distributions ``[bs, S, V]`` in float32 (``4 * bs * (2S - 1) * V``), one filter chunk
    (``FILTER_BYTES_PER_ELEMENT * min(bs * S, filter_chunk_rows(V)) * V``), a few ``[bs, V]`` rows
    at the stop index (``32 * bs * V``) and ``[bs, S]`` bookkeeping (``64 * bs * S``).  No dense
    one-hot, no full-size int64 tensor, no second full-size float copy.  At bs 48, S 16, V 152k:
    about 1.2 GB (the dense version peaked above 4 GB).
    """
    chunk = FILTER_BYTES_PER_ELEMENT * min(bs * block_size, filter_chunk_rows(vocab)) * vocab
    return 4 * bs * (2 * block_size - 1) * vocab + chunk + 32 * bs * vocab + 64 * bs * block_size


def _softmax_(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension, in place (no second full-size buffer)."""
    x.sub_(x.amax(-1, keepdim=True)).exp_()
    return x.div_(x.sum(-1, keepdim=True))


def _filter_rows_(probs: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor, min_p: torch.Tensor) -> None:
    """Top-k, then top-p (on the top-k renormalised mass) and min-p, in place on probs [n, V].

    Rows are renormalised afterwards.
    """
    v = probs.shape[-1]
    sorted_probs, order = probs.sort(dim=-1, descending=True)  # [n, V] float32, [n, V] int64
    k = torch.where(top_k > 0, top_k.clamp(max=v), torch.full_like(top_k, v))
    sorted_probs.masked_fill_(torch.arange(v, device=probs.device)[None, :] >= k[:, None], 0)
    mass = sorted_probs.sum(-1, keepdim=True)
    # top-p: keep the smallest prefix whose mass reaches top_p (always the first token).
    before = sorted_probs.cumsum(-1).sub_(sorted_probs)
    drop = before >= top_p[:, None] * mass
    del before
    drop |= sorted_probs < min_p[:, None] * sorted_probs[:, :1]
    sorted_probs.masked_fill_(drop, 0)
    del drop
    probs.zero_().scatter_(-1, order, sorted_probs)
    probs.div_(probs.sum(-1, keepdim=True))


def sampling_probs(logits: torch.Tensor, sampling: BatchSampling, apply_filters: bool = True) -> torch.Tensor:
    """Filtered sampling distribution [B, S, V] (float32) for logits [B, S, V].

    Order as in SGLang: temperature, then top-k, top-p and min-p on the tempered softmax.
    Greedy rows get a one-hot argmax, which makes greedy a special case of the same math.
    ``apply_filters=False`` skips the (sorting) filters when no row uses them.  The result is the
    only full-size allocation; filters sort :func:`filter_chunk_rows` rows at a time.
    """
    b, s, v = logits.shape
    greedy = sampling.greedy
    temperature = torch.where(greedy, torch.ones_like(sampling.temperature), sampling.temperature)
    probs = logits.to(torch.float32, copy=True).div_(temperature[:, None, None])
    _softmax_(probs)
    if apply_filters:
        flat = probs.view(b * s, v)
        per_row = [t.repeat_interleave(s) for t in (sampling.top_k, sampling.top_p, sampling.min_p)]
        step = filter_chunk_rows(v)
        for start in range(0, b * s, step):
            _filter_rows_(flat[start:start + step], *(t[start:start + step] for t in per_row))
    # Greedy rows: one-hot at the argmax, written in place.
    top = logits.argmax(-1, keepdim=True)  # [B, S, 1]
    is_greedy = greedy[:, None, None]
    probs.masked_fill_(is_greedy, 0)
    ones = torch.ones_like(top, dtype=probs.dtype)
    probs.scatter_(-1, top, torch.where(is_greedy, ones, probs.gather(-1, top)))
    return probs


def sample_from(probs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """One token per distribution: probs [..., V] -> [...]."""
    flat = probs.reshape(-1, probs.shape[-1])
    return torch.multinomial(flat, 1, generator=generator).view(probs.shape[:-1])


def residual_distribution(target_probs: torch.Tensor, draft_probs: torch.Tensor) -> torch.Tensor:
    """norm(max(p - q, 0)); falls back to p where p == q (the residual is then never reached)."""
    residual = (target_probs - draft_probs).clamp_min(0)
    total = residual.sum(-1, keepdim=True)
    return torch.where(total > 0, residual / total.clamp_min(torch.finfo(residual.dtype).tiny), target_probs)


# ---------------------------------------------------------------------------- acceptance
def greedy_accept(draft_tokens: torch.Tensor, target_logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy verification.

    draft_tokens [B, S-1] (block positions 1..S-1), target_logits [B, S, V] (the target's
    prediction after each block position).  Returns ``accept_len`` [B] (drafts accepted) and
    ``emitted`` [B, S]: the first ``accept_len + 1`` entries are the committed tokens
    (accepted drafts, then the target's own bonus token).
    """
    target_tokens = target_logits.argmax(-1)
    matches = (draft_tokens == target_tokens[:, :-1]).to(torch.long)
    accept_len = matches.cumprod(dim=1).sum(dim=1)
    return accept_len, target_tokens


def speculative_sampling_accept(
    draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor,
    target_probs: torch.Tensor,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Lossless speculative sampling for a block.

    draft_tokens [B, S-1] sampled from draft_probs [B, S-1, V]; target_probs [B, S, V].
    Returns ``accept_len`` [B] and ``emitted`` [B, S] as in :func:`greedy_accept`.
    """
    b, n = draft_tokens.shape
    p = target_probs[:, :n].gather(-1, draft_tokens[..., None])[..., 0]
    q = draft_probs.gather(-1, draft_tokens[..., None])[..., 0]
    u = torch.rand(b, n, device=draft_tokens.device, generator=generator)
    accepted = (u * q < p).to(torch.long)
    accept_len = accepted.cumprod(dim=1).sum(dim=1)
    rows = torch.arange(b, device=draft_tokens.device)
    # At the stop index: residual after a rejection, the plain target distribution after a full
    # accept (q = 0 there).  Only these [B, V] rows are copied.
    q_stop = draft_probs[rows, accept_len.clamp(max=n - 1)] * (accept_len < n)[:, None].to(draft_probs.dtype)
    final = residual_distribution(target_probs[rows, accept_len], q_stop)
    bonus = sample_from(final, generator)
    emitted = torch.cat([draft_tokens, draft_tokens[:, :1]], dim=1).clone()
    emitted[rows, accept_len] = bonus
    return accept_len, emitted


def truncate_at_stop(
    emitted: torch.Tensor,
    num_committed: torch.Tensor,
    remaining: torch.Tensor,
    stop_token_ids: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """How many of the ``num_committed`` emitted tokens [B, S] are kept, and whether a stop token ended the row.

    ``remaining`` [B] is the max-new-tokens budget left; ``stop_token_ids`` [B, K] is -1 padded.
    """
    s = emitted.shape[1]
    count = torch.minimum(num_committed, remaining)
    in_range = torch.arange(s, device=emitted.device)[None, :] < count[:, None]
    is_stop = (emitted[:, :, None] == stop_token_ids[:, None, :]).any(-1) & in_range
    hit = is_stop.any(dim=1)
    first_stop = torch.where(is_stop, torch.arange(s, device=emitted.device)[None, :], s).min(dim=1).values
    return torch.where(hit, first_stop + 1, count), hit
