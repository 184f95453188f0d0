"""Pure functions of one speculative step, shared by the reference and the SGLang worker.

Glossary (the host's, SGLang's, words; used the same way in every module):

- **block**: ``[bonus token, MASK x (block_size - 1)]`` at positions ``seq_len .. seq_len + block_size - 1``;
  the drafter denoises it in one pass, the target verifies ``[bonus token, drafts]`` in one pass.
- **drafts**: the ``block_size - 1`` draft tokens at block positions ``1 .. block_size - 1``.
- ``num_correct_drafts``: drafts accepted by one verify step (``0 .. block_size - 1``).
- ``accept_lens``: tokens committed by one verify step, the accepted drafts + 1 token chosen by the
  target (``num_correct_drafts + 1``; SGLang's ``accept_lens``).
- ``emitted`` ``[bs, block_size]``: per row, its first ``accept_lens`` entries are the committed tokens.
- ``bonus_tokens``: the token the next block starts with: the last committed token, chosen by the
  target, whose KV is not written yet.
- ``tau`` (acceptance length): mean ``accept_lens`` over verify steps.

Shape legend: ``bs`` batch rows, ``block_size`` tokens per block, ``V`` vocabulary, ``H`` hidden
size; shapes are written ``[bs, block_size, V]``.

- :func:`build_block` / :func:`block_positions`: the block the drafter denoises.
- :func:`sampling_probs`: temperature / top-k / top-p / min-p filtered distribution per row
  (greedy rows become one-hot argmax), one float32 ``[bs, block_size, V]`` buffer plus a bounded
  sort chunk; :func:`sampling_peak_bytes` states the sampled path's peak memory.
- :func:`draft_tokens` / :func:`accept`: a batch's draft choice and verification, greedy and
  sampled rows mixed; the reference and the worker both call these two.
- :func:`greedy_accept`: longest prefix of drafts equal to the target's argmax, plus the target's
  bonus token.
- :func:`speculative_sampling_accept`: accept draft ``d`` with probability min(1, p(d)/q(d));
  at the first rejection sample from the residual norm(max(p - q, 0)); if all are accepted sample
  the bonus token from p.  This keeps the output distribution exactly the target's.
- :func:`truncate_at_stop`: how many emitted tokens survive max-new-tokens and stop tokens.
- :class:`SeededDraws`: per-request reproducible randomness (a request's seed and the absolute
  position of the token being decided), passed where a ``torch.Generator`` would be.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

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
    seed: int | None = None  # SGLang's sampling_seed: same seed, same output (see SeededDraws)
    # Penalties on the tokens generated so far (SGLang's penalizers; see Penalties).
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    repetition_penalty: float = 1.0
    min_new_tokens: int = 0

    def __post_init__(self) -> None:
        if not self.temperature >= 0:
            raise ValueError(f"SamplingParams: temperature is {self.temperature!r}; expected a number >= 0")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"SamplingParams: top_p is {self.top_p!r}; expected a number in (0, 1]")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int):
            raise ValueError(
                f"SamplingParams: top_k is {self.top_k!r}; expected an integer (<= 0 disables it)"
            )
        if not 0 <= self.min_p < 1:
            raise ValueError(f"SamplingParams: min_p is {self.min_p!r}; expected a number in [0, 1)")
        max_new = self.max_new_tokens
        if isinstance(max_new, bool) or not isinstance(max_new, int) or max_new < 1:
            raise ValueError(
                f"SamplingParams: max_new_tokens is {self.max_new_tokens!r}; expected an integer >= 1"
            )
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            raise ValueError(f"SamplingParams: seed is {self.seed!r}; expected an integer or None")
        for name in ("frequency_penalty", "presence_penalty"):
            if not -2 <= getattr(self, name) <= 2:
                raise ValueError(
                    f"SamplingParams: {name} is {getattr(self, name)!r}; expected a number in [-2, 2]"
                )
        if not 0 < self.repetition_penalty <= 2:
            raise ValueError(
                f"SamplingParams: repetition_penalty is {self.repetition_penalty!r}; "
                "expected a number in (0, 2] (1 disables it)"
            )
        min_new = self.min_new_tokens
        if isinstance(min_new, bool) or not isinstance(min_new, int) or min_new < 0:
            raise ValueError(f"SamplingParams: min_new_tokens is {min_new!r}; expected an integer >= 0")
        object.__setattr__(self, "stop_token_ids", tuple(int(t) for t in self.stop_token_ids))

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    @property
    def penalized(self) -> bool:
        """Whether any penalty depends on the tokens generated so far."""
        return (
            self.frequency_penalty != 0
            or self.presence_penalty != 0
            or self.repetition_penalty != 1
            or self.min_new_tokens > 0
        )


@dataclass(frozen=True)
class BatchSampling:
    """Per-row sampling tensors for a batch of :class:`SamplingParams`.

    ``all_greedy`` and ``needs_filters`` are host-side bools, so that choosing the fast paths never
    reads a device tensor (no synchronisation in the step).  Both may be conservative (``False`` /
    ``True``) without changing results: they only skip work that would not change them.
    """

    temperature: torch.Tensor  # [bs] float32, 0 = greedy
    top_p: torch.Tensor  # [bs] float32
    top_k: torch.Tensor  # [bs] int64, <= 0 = off
    min_p: torch.Tensor  # [bs] float32
    stop_token_ids: torch.Tensor  # [bs, max_stops] int64, -1 padded
    all_greedy: bool  # every row is greedy: drafts and acceptance by argmax only
    needs_filters: bool  # some sampled row uses top-k, top-p or min-p
    seeds: torch.Tensor | None = None  # [bs] int64 per-request seeds, or None: the generator's draws
    # How the host's plain sampler orders top-k and top-p for this batch (see :func:`_filter_rows_`):
    # False = top-p on the original distribution (SGLang's pytorch sampler, flashinfer's "joint"
    # order), True = top-p on the top-k-renormalised mass (flashinfer when the batch uses min-p).
    top_p_after_top_k: bool = False

    @classmethod
    def from_params(
        cls, params: Sequence[SamplingParams], device: torch.device | str = "cpu"
    ) -> BatchSampling:
        width = max([len(p.stop_token_ids) for p in params] + [1])
        # As SGLang under --enable-deterministic-inference: once a row has a seed, rows without one use 42.
        seeded = any(p.seed is not None for p in params)
        seeds = [DEFAULT_SEED if p.seed is None else p.seed for p in params]
        stops = torch.full((len(params), width), -1, dtype=torch.long)
        for row, p in enumerate(params):
            stops[row, : len(p.stop_token_ids)] = torch.tensor(p.stop_token_ids, dtype=torch.long)
        return cls(
            temperature=torch.tensor([p.temperature for p in params], dtype=torch.float32, device=device),
            top_p=torch.tensor([p.top_p for p in params], dtype=torch.float32, device=device),
            top_k=torch.tensor([p.top_k for p in params], dtype=torch.long, device=device),
            min_p=torch.tensor([p.min_p for p in params], dtype=torch.float32, device=device),
            stop_token_ids=stops.to(device),
            all_greedy=all(p.greedy for p in params),
            # Greedy rows become one-hot whatever their filters, so only sampled rows count.
            needs_filters=any(p.top_k > 0 or p.top_p < 1 or p.min_p > 0 for p in params if not p.greedy),
            seeds=torch.tensor(seeds, dtype=torch.long, device=device) if seeded else None,
        )

    @property
    def greedy(self) -> torch.Tensor:
        """[bs] bool: rows decoded by argmax."""
        return self.temperature <= 0

    def select(self, rows: torch.Tensor) -> BatchSampling:
        """The batch restricted to ``rows``; a subset of an all-greedy batch is all greedy, and
        ``needs_filters`` stays as it was (conservative: re-deriving it would read the tensors)."""
        return BatchSampling(
            temperature=self.temperature[rows],
            top_p=self.top_p[rows],
            top_k=self.top_k[rows],
            min_p=self.min_p[rows],
            stop_token_ids=self.stop_token_ids[rows],
            all_greedy=self.all_greedy,
            needs_filters=self.needs_filters,
            seeds=None if self.seeds is None else self.seeds[rows],
            top_p_after_top_k=self.top_p_after_top_k,
        )

    def draws(
        self, first_positions: torch.Tensor, generator: torch.Generator | None = None
    ) -> torch.Generator | SeededDraws | None:
        """The randomness of one step: :class:`SeededDraws` for seeded rows, else ``generator``.

        ``first_positions`` [bs] is the absolute position of the first token the step decides.
        """
        if self.seeds is None or self.all_greedy:
            return generator
        return SeededDraws(self.seeds, first_positions.to(torch.long))


# ---------------------------------------------------------------------------- seeded randomness
DEFAULT_SEED = 42  # SGLang's sampling_seed for a request without one
# Which decision a uniform draw belongs to: the same position's draws for different uses are independent.
DRAFT_DRAW, ACCEPT_DRAW, TARGET_DRAW = 1, 2, 3


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


_SPLITMIX = tuple(_signed64(c) for c in (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB))


def _shift_right(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Logical right shift of int64 (torch's ``>>`` is arithmetic on signed integers)."""
    return (x >> bits) & ((1 << (64 - bits)) - 1)


def _splitmix64(x: torch.Tensor) -> torch.Tensor:
    """SplitMix64's mixing function on int64 tensors (wrapping arithmetic, the same on CPU and CUDA)."""
    x = x + _SPLITMIX[0]
    x = (x ^ _shift_right(x, 30)) * _SPLITMIX[1]
    x = (x ^ _shift_right(x, 27)) * _SPLITMIX[2]
    return x ^ _shift_right(x, 31)


def seeded_uniforms(seeds: torch.Tensor, positions: torch.Tensor, draw: int) -> torch.Tensor:
    """Uniforms in [0, 1) (float64) of the shape of ``positions``, one per (seed, position, draw).

    ``seeds`` [bs] broadcast over ``positions`` [bs, ...]. A value depends on nothing else: not on the
    batch, the step or the block size, which is what makes a seeded request reproducible.
    """
    seeds = seeds.view(-1, *([1] * (positions.dim() - 1)))
    x = _splitmix64(_splitmix64(_splitmix64(seeds) + positions) + draw)
    return _shift_right(x, 11).to(torch.float64) * 2.0**-53


@dataclass(frozen=True)
class SeededDraws:
    """Per-request randomness of one step: the draw for the token at absolute position ``P`` of a
    request is ``seeded_uniforms(seed, P, kind)``, whichever batch or step decides it.

    Lossless still: each position's draws decide that position once (a draft sampled earlier at a
    position that no verify reached influenced nothing committed), and the kinds are independent.
    """

    seeds: torch.Tensor  # [bs] int64
    first_positions: torch.Tensor  # [bs] int64: the absolute position of the step's first decision

    def uniforms(
        self, n: int, draw: int, offsets: torch.Tensor | None = None, columns: torch.Tensor | None = None
    ) -> torch.Tensor:
        """[bs, n] uniforms for positions ``first + offset + j`` (j < n), or ``first + offset +
        columns[j]`` given ``columns`` [n] (a verify tree's nodes decide the positions of their depths)."""
        first = self.first_positions if offsets is None else self.first_positions + offsets
        steps = torch.arange(n, device=first.device) if columns is None else columns.to(first.device)
        return seeded_uniforms(self.seeds, first[:, None] + steps[None, :], draw)

    def shifted(self, offset: int) -> SeededDraws:
        """The draws of positions ``offset`` further on (drafts chosen one position at a time)."""
        return SeededDraws(self.seeds, self.first_positions + offset)


def shifted(
    generator: torch.Generator | SeededDraws | None, offset: int
) -> torch.Generator | SeededDraws | None:
    """``generator`` for the decision ``offset`` positions after its first (unchanged if not seeded)."""
    return generator.shifted(offset) if isinstance(generator, SeededDraws) else generator


def _inverse_cdf(probs: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """Tokens [n] for probs [n, V] and uniforms [n]: the first token whose cumulative mass exceeds u.

    A token of probability 0 is never chosen. Float64 cumulative mass, a chunk of rows at a time.
    """
    tokens = torch.empty(probs.shape[0], dtype=torch.long, device=probs.device)
    step = filter_chunk_rows(probs.shape[-1])
    for start in range(0, probs.shape[0], step):
        cdf = probs[start : start + step].to(torch.float64).cumsum_(-1)
        target = (uniforms[start : start + step] * cdf[:, -1])[:, None]
        tokens[start : start + step] = torch.searchsorted(cdf, target, right=True)[:, 0]
    return tokens.clamp_(max=probs.shape[-1] - 1)


# ---------------------------------------------------------------------------- penalties
@dataclass(frozen=True)
class Penalties:
    """SGLang's penalizers for one step, as plain decoding applies them to each token's logits.

    For the token at output index ``m`` (0-based) of a row, with ``c[t]`` the number of times token
    ``t`` was generated before it: ``logit[t] -= frequency * c[t] + presence * (c[t] > 0)``; the
    stop tokens are -inf while ``m < min_new_tokens``; then where ``c[t] > 0`` a positive logit is
    divided by ``repetition`` and a negative one multiplied by it (additive penalties first, then
    scaling, as the host's overlap path orders them). Only generated tokens count, not the prompt.
    A block position ``i`` sees the committed tokens plus the block's tokens ``1 .. i``: exactly
    what plain decoding would have seen there (see :func:`apply_penalties_`).
    """

    counts: torch.Tensor  # [bs, V] float32: occurrences of each token among the committed output
    num_generated: torch.Tensor  # [bs] int64: committed output tokens
    frequency: torch.Tensor  # [bs] float32, 0 = off
    presence: torch.Tensor  # [bs] float32, 0 = off
    repetition: torch.Tensor  # [bs] float32, 1 = off
    min_new_tokens: torch.Tensor  # [bs] int64, 0 = off
    stop_token_ids: torch.Tensor  # [bs, max_stops] int64, -1 padded: blocked before min_new_tokens

    @classmethod
    def of_rows(
        cls,
        generated: Sequence[Sequence[int]],
        params: Sequence[SamplingParams],
        vocab_size: int,
        device: torch.device | str = "cpu",
    ) -> Penalties:
        """The penalties of rows that have generated ``generated`` so far under ``params``."""
        bs = len(generated)
        counts = torch.zeros(bs, vocab_size, dtype=torch.float32)
        for row, tokens in enumerate(generated):
            if tokens:
                ids = torch.tensor(list(tokens), dtype=torch.long)
                counts[row].index_add_(0, ids, torch.ones(len(ids)))
        width = max([len(p.stop_token_ids) for p in params] + [1])
        stops = torch.full((bs, width), -1, dtype=torch.long)
        for row, p in enumerate(params):
            stops[row, : len(p.stop_token_ids)] = torch.tensor(p.stop_token_ids, dtype=torch.long)

        def column(name: str, dtype: torch.dtype) -> torch.Tensor:
            return torch.tensor([getattr(p, name) for p in params], dtype=dtype, device=device)

        return cls(
            counts=counts.to(device),
            num_generated=torch.tensor([len(t) for t in generated], dtype=torch.long, device=device),
            frequency=column("frequency_penalty", torch.float32),
            presence=column("presence_penalty", torch.float32),
            repetition=column("repetition_penalty", torch.float32),
            min_new_tokens=column("min_new_tokens", torch.long),
            stop_token_ids=stops.to(device),
        )


def apply_penalties_(logits: torch.Tensor, penalties: Penalties, chain: torch.Tensor | None = None) -> None:
    """Penalise logits [bs, n, V] in place; position ``i`` predicts output index ``num_generated + i``.

    ``chain`` [bs, >= n - 1]: the tokens at block positions ``1 .. n - 1`` (the drafts), which
    position ``i`` counts as generated when ``i`` exceeds their index (the target's verify, exact).
    Without it every position sees the committed tokens only (the drafter's logits: any draft
    distribution keeps acceptance lossless, this one is just close to the target's).
    """
    bs, n, v = logits.shape
    counts = penalties.counts[:, None, :].expand(bs, n, v)
    if chain is not None and n > 1:
        steps = torch.zeros(bs, n, v, dtype=counts.dtype, device=logits.device)
        steps[:, 1:].scatter_add_(-1, chain[:, : n - 1, None], torch.ones(bs, n - 1, 1, device=logits.device))
        counts = counts + steps.cumsum_(1)
    seen = counts > 0
    additive = counts * -penalties.frequency[:, None, None]
    additive.sub_(seen * penalties.presence[:, None, None])
    output_index = penalties.num_generated[:, None] + torch.arange(n, device=logits.device)[None, :]
    too_early = output_index < penalties.min_new_tokens[:, None]  # [bs, n]
    stops = penalties.stop_token_ids
    is_stop = torch.zeros(bs, v + 1, dtype=torch.bool, device=logits.device)
    # Padding, and stop ids past the vocabulary (a client's choice; never generated), land in column V.
    is_stop.scatter_(1, torch.where((stops < 0) | (stops >= v), v, stops), True)
    additive.masked_fill_(too_early[:, :, None] & is_stop[:, None, :v], float("-inf"))
    logits.add_(additive)
    scale = penalties.repetition[:, None, None]
    scaled = torch.where(logits < 0, logits * scale, logits / scale)
    logits.copy_(torch.where(seen, scaled, logits))


# ---------------------------------------------------------------------------- the block
def build_block(bonus_tokens: torch.Tensor, block_size: int, mask_token_id: int) -> torch.Tensor:
    """[bs] bonus tokens -> [bs, block_size] block ``[bonus token, MASK, ..., MASK]``."""
    block = torch.full(
        (bonus_tokens.shape[0], block_size), mask_token_id, dtype=torch.long, device=bonus_tokens.device
    )
    block[:, 0] = bonus_tokens
    return block


def block_positions(seq_lens: torch.Tensor, block_size: int) -> torch.Tensor:
    """Absolute positions [bs, block_size] of the block: the bonus token sits at ``seq_len`` (0-based)."""
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

    With ``V = vocab``: the draft distributions ``[bs, block_size - 1, V]`` and the target
    distributions ``[bs, block_size, V]`` in float32 (``4 * bs * (2 * block_size - 1) * V``), one
    filter chunk (``FILTER_BYTES_PER_ELEMENT * min(bs * block_size, filter_chunk_rows(V)) * V``), a
    few ``[bs, V]`` rows at the stop index (``32 * bs * V``) and ``[bs, block_size]`` bookkeeping
    (``64 * bs * block_size``).  No dense one-hot, no full-size int64 tensor, no second full-size
    float copy.  At bs 48, block_size 16, V 152k: about 1.2 GB (the dense version peaked above 4 GB).
    """
    chunk = FILTER_BYTES_PER_ELEMENT * min(bs * block_size, filter_chunk_rows(vocab)) * vocab
    return 4 * bs * (2 * block_size - 1) * vocab + chunk + 32 * bs * vocab + 64 * bs * block_size


def _softmax_(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension, in place (no second full-size buffer)."""
    x.sub_(x.amax(-1, keepdim=True)).exp_()
    return x.div_(x.sum(-1, keepdim=True))


def _filter_rows_(
    probs: torch.Tensor,
    top_k: torch.Tensor,
    top_p: torch.Tensor,
    min_p: torch.Tensor,
    top_p_after_top_k: bool = False,
) -> None:
    """Top-k, top-p and min-p in place on probs [n, V], as SGLang's plain samplers apply them.

    A token is kept when it is among the ``top_k`` most likely, when the probability mass of the
    tokens ranked before it is within ``top_p``, and when its probability is at least ``min_p`` times
    the most likely token's; kept rows are renormalised.  The mass ``top_p`` is measured on:

    - the **original** distribution (``top_p_after_top_k=False``): SGLang's pytorch sampler
      (``top_k_top_p_min_p_sampling_from_probs_torch``: the cumulative mass is taken before the top-k
      mask; a token whose preceding mass equals ``top_p`` exactly is kept) and flashinfer's
      ``filter_apply_order="joint"``; e.g. probs [0.5, 0.3, 0.2], top_k 2, top_p 0.6 keeps
      [0.625, 0.375];
    - the **top-k renormalised** distribution (``True``): flashinfer when the batch needs min-p
      (``top_k_renorm_prob`` then ``top_p_renorm_prob``: the smallest prefix that reaches ``top_p``);
      the same example keeps [1.0].
    """
    v = probs.shape[-1]
    sorted_probs, order = probs.sort(dim=-1, descending=True)  # [n, V] float32, [n, V] int64
    # Mass ranked before each token: of the original distribution unless top-p follows top-k.
    before = sorted_probs.cumsum(-1).sub_(sorted_probs) if not top_p_after_top_k else None
    k = torch.where(top_k > 0, top_k.clamp(max=v), torch.full_like(top_k, v))
    sorted_probs.masked_fill_(torch.arange(v, device=probs.device)[None, :] >= k[:, None], 0)
    if top_p_after_top_k:
        mass = sorted_probs.sum(-1, keepdim=True)
        before = sorted_probs.cumsum(-1).sub_(sorted_probs)
        drop = before >= top_p[:, None] * mass  # keep the smallest prefix reaching top_p
    else:
        drop = before > top_p[:, None]
    del before
    drop |= sorted_probs < min_p[:, None] * sorted_probs[:, :1]
    sorted_probs.masked_fill_(drop, 0)
    del drop
    probs.zero_().scatter_(-1, order, sorted_probs)
    probs.div_(probs.sum(-1, keepdim=True))


def sampling_probs(logits: torch.Tensor, sampling: BatchSampling, apply_filters: bool = True) -> torch.Tensor:
    """Filtered sampling distribution [bs, n, V] (float32) for logits [bs, n, V] (n block positions).

    Order as in SGLang: temperature, then top-k, top-p and min-p on the tempered softmax (top-p's
    mass measured as the host's sampler for this batch measures it: :func:`_filter_rows_`).
    Greedy rows get a one-hot argmax, which makes greedy a special case of the same math.
    ``apply_filters=False`` skips the (sorting) filters when no row uses them.  The result is the
    only full-size allocation; filters sort :func:`filter_chunk_rows` rows at a time.
    """
    bs, n, v = logits.shape
    greedy = sampling.greedy
    temperature = torch.where(greedy, torch.ones_like(sampling.temperature), sampling.temperature)
    probs = logits.to(torch.float32, copy=True).div_(temperature[:, None, None])
    _softmax_(probs)
    if apply_filters:
        flat = probs.view(bs * n, v)
        per_row = [t.repeat_interleave(n) for t in (sampling.top_k, sampling.top_p, sampling.min_p)]
        step = filter_chunk_rows(v)
        for start in range(0, bs * n, step):
            _filter_rows_(
                flat[start : start + step],
                *(t[start : start + step] for t in per_row),
                top_p_after_top_k=sampling.top_p_after_top_k,
            )
    # Greedy rows: one-hot at the argmax, written in place.
    top = logits.argmax(-1, keepdim=True)  # [bs, n, 1]
    is_greedy = greedy[:, None, None]
    probs.masked_fill_(is_greedy, 0)
    ones = torch.ones_like(top, dtype=probs.dtype)
    probs.scatter_(-1, top, torch.where(is_greedy, ones, probs.gather(-1, top)))
    return probs


def sample_from(
    probs: torch.Tensor,
    generator: torch.Generator | SeededDraws | None = None,
    draw: int = DRAFT_DRAW,
    offsets: torch.Tensor | None = None,
    columns: torch.Tensor | None = None,
) -> torch.Tensor:
    """One token per distribution: probs [..., V] -> [...].

    With :class:`SeededDraws`, probs is [bs, n, V] for positions ``first + offsets + j`` (``+
    columns[j]`` given ``columns``) and each token comes from that position's ``draw`` uniform
    (inverse CDF); otherwise from a uniform of ``generator`` by inverse CDF on CPU, where
    ``torch.multinomial`` takes 7x as long over SmolLM2's vocabulary (128 rows: 123 ms against
    17), and by ``torch.multinomial`` on GPUs (unmeasured there).
    """
    flat = probs.reshape(-1, probs.shape[-1])
    if isinstance(generator, SeededDraws):
        bs, n = probs.shape[0], probs.shape[1]
        uniforms = generator.uniforms(n, draw, offsets, columns)
        return _inverse_cdf(flat, uniforms.reshape(-1)).view(bs, n)
    if flat.device.type != "cpu":
        return torch.multinomial(flat, 1, generator=generator).view(probs.shape[:-1])
    uniforms = torch.rand(flat.shape[0], dtype=torch.float64, generator=generator)
    return _inverse_cdf(flat, uniforms).view(probs.shape[:-1])


def residual_distribution(target_probs: torch.Tensor, draft_probs: torch.Tensor) -> torch.Tensor:
    """norm(max(p - q, 0)); falls back to p where p == q (the residual is then never reached)."""
    residual = (target_probs - draft_probs).clamp_min(0)
    total = residual.sum(-1, keepdim=True)
    return torch.where(total > 0, residual / total.clamp_min(torch.finfo(residual.dtype).tiny), target_probs)


# ---------------------------------------------------------------------------- draft choice and acceptance
def draft_tokens(
    draft_logits: torch.Tensor,
    sampling: BatchSampling,
    generator: torch.Generator | SeededDraws | None = None,
    draw: int = DRAFT_DRAW,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Draft tokens [bs, block_size - 1] from the drafter's logits [bs, block_size - 1, V].

    Greedy rows draft the argmax, sampled rows sample from their filtered distribution.  Returns the
    draft distributions [bs, block_size - 1, V] (one-hot for greedy rows) that lossless acceptance
    needs, or None when every row is greedy (the argmax rule needs none).
    """
    argmax_drafts = draft_logits.argmax(-1)
    if sampling.all_greedy:
        return argmax_drafts, None
    draft_probs = sampling_probs(draft_logits, sampling, apply_filters=sampling.needs_filters)
    sampled = sample_from(draft_probs, generator, draw)
    return torch.where(sampling.greedy[:, None], argmax_drafts, sampled), draft_probs


def accept(
    drafts: torch.Tensor,
    draft_probs: torch.Tensor | None,
    target_logits: torch.Tensor,
    sampling: BatchSampling,
    generator: torch.Generator | SeededDraws | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Verify drafts [bs, block_size - 1] against target_logits [bs, block_size, V].

    Greedy rows by :func:`greedy_accept`, sampled rows by :func:`speculative_sampling_accept`
    (``draft_probs`` from :func:`draft_tokens`; None only when all rows are greedy).  Returns
    ``num_correct_drafts`` [bs] and ``emitted`` [bs, block_size].

    With no drafts (a width-1 verify, see :mod:`sglang_dflash.adaptive`) this is plain decoding:
    the target's own token, chosen as :func:`draft_tokens` chooses (argmax or a filtered sample).
    """
    if drafts.shape[1] == 0:
        emitted, _ = draft_tokens(target_logits, sampling, generator, TARGET_DRAW)
        return torch.zeros_like(emitted[:, 0]), emitted
    greedy_correct, greedy_emitted = greedy_accept(drafts, target_logits)
    if sampling.all_greedy:
        return greedy_correct, greedy_emitted
    target_probs = sampling_probs(target_logits, sampling, apply_filters=sampling.needs_filters)
    sampled_correct, sampled_emitted = speculative_sampling_accept(
        drafts, draft_probs, target_probs, generator
    )
    greedy = sampling.greedy
    num_correct_drafts = torch.where(greedy, greedy_correct, sampled_correct)
    return num_correct_drafts, torch.where(greedy[:, None], greedy_emitted, sampled_emitted)


def greedy_accept(drafts: torch.Tensor, target_logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy verification.

    drafts [bs, block_size - 1] (block positions 1 .. block_size - 1), target_logits
    [bs, block_size, V] (the target's prediction after each block position).  Returns
    ``num_correct_drafts`` [bs] and ``emitted`` [bs, block_size]: the first
    ``num_correct_drafts + 1`` entries are the committed tokens (accepted drafts, then the target's
    own bonus token).
    """
    target_tokens = target_logits.argmax(-1)
    return accepted_prefix_lengths(drafts, target_tokens), target_tokens


def accepted_prefix_lengths(drafts: torch.Tensor, target_tokens: torch.Tensor) -> torch.Tensor:
    """[bs] length of the longest prefix of drafts [bs, n] equal to target_tokens[:, :n]."""
    matches = (drafts == target_tokens[:, : drafts.shape[1]]).to(torch.long)
    return matches.cumprod(dim=1).sum(dim=1)


# Block columns greedy_accept_by_columns asks for in small passes before asking for all the rest.
SMALL_PASS_COLUMNS = 2


def greedy_accept_by_columns(
    drafts: torch.Tensor,
    column_argmax: Callable[[torch.Tensor, int, int], torch.Tensor],
    cheap_rows: int = 1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`greedy_accept` asking for the target's argmax a few block columns at a time.

    ``column_argmax(requests, start, stop)`` -> the target's argmax [len(requests), stop - start]
    after block positions ``start .. stop - 1`` for those requests.  The first ``SMALL_PASS_COLUMNS``
    columns are asked in small passes, then every remaining column at once, each time only for the
    requests still accepting: a step computes about one logits row per committed token instead of
    the block width per request, in at most three lm_head passes (each pass reads the whole
    lm_head, which a CPU step cannot afford once per column).  A small pass asks one column, or
    as many as fit in ``cheap_rows`` rows over the requests still accepting, where an lm_head pass
    over that many rows costs about one row's (the few-row product on CPU).  Same
    ``num_correct_drafts`` and committed tokens as :func:`greedy_accept`; ``emitted`` entries past
    a request's committed ones are 0.
    """
    bs, num_drafts = drafts.shape
    width = num_drafts + 1
    emitted = torch.zeros((bs, width), dtype=torch.long, device=drafts.device)
    live = torch.arange(bs, device=drafts.device)
    start = 0
    while start < width and live.numel():
        small_pass = max(1, cheap_rows // live.numel())
        stop = min(width, start + small_pass) if start < SMALL_PASS_COLUMNS else width
        tokens = column_argmax(live, start, stop)
        emitted[live, start:stop] = tokens
        if stop == width:
            break
        live = live[(tokens == drafts[live, start:stop]).all(-1)]
        start = stop
    # Columns never asked hold 0, but they lie past each request's first rejection.
    return accepted_prefix_lengths(drafts, emitted), emitted


def speculative_sampling_accept(
    drafts: torch.Tensor,
    draft_probs: torch.Tensor,
    target_probs: torch.Tensor,
    generator: torch.Generator | SeededDraws | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Lossless speculative sampling for a block.

    drafts [bs, block_size - 1] sampled from draft_probs [bs, block_size - 1, V]; target_probs
    [bs, block_size, V].  Returns ``num_correct_drafts`` [bs] and ``emitted`` [bs, block_size] as in
    :func:`greedy_accept`.
    """
    bs, n = drafts.shape
    p = target_probs[:, :n].gather(-1, drafts[..., None])[..., 0]
    q = draft_probs.gather(-1, drafts[..., None])[..., 0]
    if isinstance(generator, SeededDraws):
        u = generator.uniforms(n, ACCEPT_DRAW).to(p.dtype)
    else:
        u = torch.rand(bs, n, device=drafts.device, generator=generator)
    accepted = (u * q < p).to(torch.long)
    num_correct_drafts = accepted.cumprod(dim=1).sum(dim=1)
    rows = torch.arange(bs, device=drafts.device)
    # At the stop index: residual after a rejection, the plain target distribution after a full
    # accept (q = 0 there).  Only these [bs, V] rows are copied.
    stop = num_correct_drafts
    q_stop = draft_probs[rows, stop.clamp(max=n - 1)] * (stop < n)[:, None].to(draft_probs.dtype)
    residual = residual_distribution(target_probs[rows, stop], q_stop)[:, None]
    bonus_tokens = sample_from(residual, generator, TARGET_DRAW, offsets=stop)[:, 0]
    emitted = torch.cat([drafts, drafts[:, :1]], dim=1).clone()
    emitted[rows, stop] = bonus_tokens
    return num_correct_drafts, emitted


def truncate_at_stop(
    emitted: torch.Tensor,
    accept_lens: torch.Tensor,
    remaining: torch.Tensor,
    stop_token_ids: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """How many of the ``accept_lens`` committed tokens of ``emitted`` [bs, block_size] are kept,
    and whether a stop token ended the row.

    ``remaining`` [bs] is the max-new-tokens budget left; ``stop_token_ids`` [bs, max_stops] is -1 padded.
    """
    width = emitted.shape[1]
    columns = torch.arange(width, device=emitted.device)[None, :]
    count = torch.minimum(accept_lens, remaining)
    is_stop = (emitted[:, :, None] == stop_token_ids[:, None, :]).any(-1) & (columns < count[:, None])
    hit = is_stop.any(dim=1)
    first_stop = torch.where(is_stop, columns, width).min(dim=1).values
    return torch.where(hit, first_stop + 1, count), hit
