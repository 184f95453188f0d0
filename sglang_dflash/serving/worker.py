"""Our DFLASH speculative worker for SGLang's spec-v2 scheduler (overlap scheduling on or off).

Per decode step, for a batch of ``bs`` requests and block size ``block_size`` (glossary and shape
legend: :mod:`sglang_dflash.speculative`)::

    slots    = req_to_token[r, seq_len : seq_len + block_size]      (reserved by DFlashDraftInput)
    block    = [bonus token, MASK x (block_size - 1)]  at positions seq_len .. seq_len + block_size - 1
    draft    = draft model (TARGET_VERIFY-shaped, bidirectional) -> block_size - 1 drafts / request
               (a staged step: drafts 1-4 now, the later ones only for requests reaching them)
    verify   = target (TARGET_VERIFY, causal, FULL aux hidden capture) over [bonus token, drafts]
               (an all-greedy CPU step: in two passes, the later columns only for requests still
               accepting, and only when that pays, .staged_verify)
    accept   = greedy prefix / lossless speculative sampling -> num_correct_drafts, emitted
    publish  = on_publish(seq_len + accept_lens)                   (the next step may schedule)
    inject   = target hidden of the verified rows -> draft K/V at their slots

Constrained requests (JSON schema, regex, EBNF) mask every verified position with the grammar
state after the drafts before it (:class:`sglang_dflash.grammar.BlockGrammar`, optionally the drafts
too); logprobs and final hidden states are filled for the host by :mod:`.outputs`.

Rows past a request's accepted prefix sit beyond its new ``seq_len``: the next block writes its
own K/V over them before anything reads them, so no per-row gather is needed.  Prefill runs the
target with FULL capture and injects every extended token; the drafter does not run.

Draft choice and acceptance are :func:`sglang_dflash.speculative.draft_tokens` and
:func:`~sglang_dflash.speculative.accept`, the same functions the CPU reference calls, so the
worker is checked against the reference rather than re-derived.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from typing import Protocol

import torch
from sglang.srt.managers.tp_worker import TpModelWorker
from sglang.srt.managers.utils import GenerationBatchResult
from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode, ForwardBatch, ForwardMode
from sglang.srt.speculative.base_spec_worker import BaseSpecWorker

from .. import speculative as spec
from ..adaptive import ADAPTIVE_ATTR, AdaptiveConfig, TreeStep, VerifyWidthPolicy
from ..bench.report import PHASE_NAMES
from ..config import DFlashConfig
from ..grammar import BlockGrammar
from ..kernels import small_batch_linear
from ..kernels.block_attention import BlockMasks
from ..kernels.small_batch_linear import small_batch_linears
from ..lookup import Proposals, RequestLookups
from ..token_map import read_token_map
from .inject import ContextInjector
from .outputs import DeferredLogits, FinalHiddenStates, committed_logprobs
from .spec_inputs import DFlashBlockInput, DFlashDraftInput, row_capacity
from .staged_verify import (
    SecondPassGate,
    StagedVerify,
    VerifyPass,
    first_pass_columns,
    judged_acceptance,
    learn_second_pass,
    second_pass_policy,
    staged_verify,
    stages_verify,
)
from .tensor_parallel import TPShard, agree, agree_int
from .tree_verify import (
    NodeArgmax,
    ServedTree,
    TreeWalk,
    VerifyTrees,
    check_gpu_tree_target,
    commit_path_slots,
    logits_left_alone,
    lookup_by_proposal_setting,
    lookup_max_rows_setting,
    path_order,
    plan_tree_walk,
    prompt_lookup_setting,
    request_contexts,
    tree_step_applies,
    verify_tree_setting,
    wide_batch_tree_setting,
)

logger = logging.getLogger(__name__)


# Constrained requests choose their drafts under the grammar too ("1", default) or freely ("0").
MASK_DRAFTS_ENV = "SGLANG_DFLASH_MASK_DRAFTS"
# On CPU, greedy batches compute the verify's logits only for the rows acceptance reads ("1",
# default) or for every block position ("0": the host's own path, for comparisons).
DEFER_VERIFY_LOGITS_ENV = "SGLANG_DFLASH_DEFER_VERIFY_LOGITS"


def env_switch(name: str, default: bool = True) -> bool:
    """An on/off environment setting: "1" or "0" (unset: ``default``); any other value is refused."""
    value = os.environ.get(name, "1" if default else "0").strip()
    if value not in ("0", "1"):
        expected = "'1' (default) or '0'" if default else "'0' (default) or '1'"
        raise ValueError(f"sglang-dflash: {name} is {value!r}; expected {expected}")
    return value == "1"


def mask_drafts_setting() -> bool:
    """``SGLANG_DFLASH_MASK_DRAFTS``: on unless "0" (masked drafts raise tau on JSON-schema
    prompts, see docs/benchmarks.md)."""
    return env_switch(MASK_DRAFTS_ENV)


def batch_sampling(sampling_info, bs: int, sampling_backend: str | None = "pytorch") -> spec.BatchSampling:
    """SGLang's per-request sampling tensors in our conventions (greedy = temperature 0).

    The fast-path bools come from the host's own host-side flags, so choosing a path never syncs.
    Per-request ``sampling_seed`` s (deterministic inference) make sampled rows reproducible.
    ``sampling_backend`` (``--sampling-backend``) decides how top-p follows top-k, as the host's
    plain sampler of the same batch would: flashinfer renormalises after top-k when the batch
    needs min-p, every other case measures top-p on the original distribution.
    """
    top_k = sampling_info.top_ks.to(torch.long)
    temperature = sampling_info.temperatures.view(-1).to(torch.float32)
    return spec.BatchSampling(
        temperature=torch.where(top_k <= 1, torch.zeros_like(temperature), temperature),
        top_p=sampling_info.top_ps.to(torch.float32),
        top_k=top_k,
        min_p=sampling_info.min_ps.to(torch.float32),
        stop_token_ids=torch.full((bs, 1), -1, dtype=torch.long, device=top_k.device),
        all_greedy=bool(sampling_info.is_all_greedy),
        needs_filters=bool(
            sampling_info.need_top_k_sampling
            or sampling_info.need_top_p_sampling
            or sampling_info.need_min_p_sampling
        ),
        # Set by the host under --enable-deterministic-inference (42 for requests without a seed).
        seeds=sampling_info.sampling_seed,
        top_p_after_top_k=sampling_backend == "flashinfer" and bool(sampling_info.need_min_p_sampling),
    )


def uses_penalties(sampling_params) -> bool:
    """Whether a request's SGLang sampling params penalise the tokens generated so far."""
    return bool(
        sampling_params.frequency_penalty
        or sampling_params.presence_penalty
        or sampling_params.repetition_penalty != 1
        or sampling_params.min_new_tokens
    )


def min_new_tokens_stops(req) -> tuple[int, ...]:
    """The tokens ``min_new_tokens`` holds back, as the host's penalizer lists them: the request's
    stop token ids, the tokenizer's additional stop ids and its eos token."""
    stops = set(req.sampling_params.stop_token_ids or ())
    tokenizer = getattr(req, "tokenizer", None)
    if tokenizer is not None:
        stops |= set(getattr(tokenizer, "additional_stop_token_ids", None) or ())
        if getattr(tokenizer, "eos_token_id", None) is not None:
            stops.add(tokenizer.eos_token_id)
    return tuple(sorted(stops))


def step_penalties(reqs, vocab_size: int, device) -> spec.Penalties | None:
    """The penalties of the batch's requests from their committed output, or None if none has any.

    ``req.output_ids`` is complete here: the scheduler processes the previous step's result before
    running a batch with penalties (``plugin``: overlap is disabled for such a batch, as the host
    does for grammars), so every block position counts exactly the tokens plain decoding counts.
    """
    if not any(uses_penalties(req.sampling_params) for req in reqs):
        return None
    params = [
        spec.SamplingParams(
            frequency_penalty=req.sampling_params.frequency_penalty,
            presence_penalty=req.sampling_params.presence_penalty,
            repetition_penalty=req.sampling_params.repetition_penalty,
            min_new_tokens=req.sampling_params.min_new_tokens,
            stop_token_ids=min_new_tokens_stops(req) if req.sampling_params.min_new_tokens else (),
        )
        for req in reqs
    ]
    return spec.Penalties.of_rows([req.output_ids for req in reqs], params, vocab_size, device)


def draft_server_args(server_args, context_length: int, dtype: torch.dtype):
    """The draft worker's own copy of the target's ServerArgs (the target's stay untouched).

    It gets the target's context length and the target's resolved dtype: SGLang resolves a drafter
    with ``--dtype auto`` from the drafter's config.json alone (float32 or none -> float16), and the
    drafter must run in the target's dtype, since it reads the target's hidden states and embeddings.
    """
    draft_args = copy.deepcopy(server_args)
    draft_args.override(
        "sglang_dflash.draft_worker", context_length=context_length, dtype=str(dtype).removeprefix("torch.")
    )
    return draft_args


def adaptive_policy(server_args, block_size: int) -> VerifyWidthPolicy | None:
    """The verify-width policy when ``--speculative-adaptive`` was given, else None (fixed block)."""
    settings = getattr(server_args, ADAPTIVE_ATTR, None)
    if settings is None:
        return None
    config = AdaptiveConfig.from_dict(settings).for_block_size(block_size)
    logger.info("sglang-dflash adaptive verify width: widths %s", list(config.widths))
    return VerifyWidthPolicy(config)


def deferred_verify_logits(model_runner, shard: TPShard) -> DeferredLogits | None:
    """Deferred verify logits where they pay and are safe: on CPU (no CUDA graph replays the
    forward; on GPUs a 16-row lm_head is cheap), one rank (no gather to keep in step), a target
    with SGLang's logits processor, and unless ``SGLANG_DFLASH_DEFER_VERIFY_LOGITS=0``."""
    processor = getattr(model_runner.model, "logits_processor", None)
    if torch.device(model_runner.device).type != "cpu":
        return None
    if processor is None or shard.size > 1 or not env_switch(DEFER_VERIFY_LOGITS_ENV):
        return None
    return DeferredLogits(processor)


# The startup timing reads its weights a dozen times; past this many bytes (SmolLM2's 120 linears
# are 0.4 GiB) it takes the first layers' only, which stream from memory as the step's do.
TIMED_LINEAR_BYTES = 512 * 2**20


def target_linear_weights(
    model: torch.nn.Module, budget_bytes: int = TIMED_LINEAR_BYTES
) -> list[torch.Tensor]:
    """The float32 weights of ``model``'s linear layers (2-D ``*.weight`` parameters, embeddings
    left out) in model order, up to ``budget_bytes`` of them: what a decode step multiplies, for
    timing the few-row products on."""
    weights, total = [], 0
    for name, param in model.named_parameters():
        if (
            not name.endswith(".weight")
            or "embed" in name
            or param.dim() != 2
            or param.dtype != torch.float32
        ):
            continue
        total += param.numel() * param.element_size()
        if weights and total > budget_bytes:
            break
        weights.append(param)
    return weights


def small_batch_linears_setting(
    device, lm_head: torch.Tensor | None = None, model: torch.nn.Module | None = None
) -> str | None:
    """The few-row product (:mod:`..kernels.small_batch_linear`) of the decode step on a CPU
    device, or None for ``F.linear``: ``SGLANG_DFLASH_CPU_SMALL_BATCH_LINEAR`` ``1`` (``mm(W,
    x.T)``), ``packed`` (MKL's GEMM over once-packed weights), ``onednn`` (oneDNN's, the same way)
    or ``0``, or ``auto`` (default): the fastest of them where it beats ``F.linear`` on the target
    ``model``'s float32 linears (:func:`target_linear_weights`) and ``lm_head`` together, timed
    here.  (The lm_head alone is a poor judge: one weight read from memory costs about the same by
    any product, and the choice flipped between startups.)"""
    value = os.environ.get(small_batch_linear.ENV, "auto").strip()
    if value not in small_batch_linear.SETTINGS:
        raise ValueError(
            f"sglang-dflash: {small_batch_linear.ENV} is {value!r}; expected 'auto' (default: the "
            "fastest product, timed at startup), '1', 'packed', 'onednn' or '0'"
        )
    if torch.device(device).type != "cpu" or value == "0":
        return None
    if value == "1":
        return small_batch_linear.MM
    if value in small_batch_linear.PACKED_PRODUCTS:
        if not small_batch_linear.packed_product_is_exact(product=value):
            library = "oneDNN" if value == small_batch_linear.ONEDNN else "MKL"
            raise ValueError(
                f"sglang-dflash: {small_batch_linear.ENV} is {value!r}, but this torch has no {library} "
                "packed GEMM whose product equals F.linear's; expected 'auto', '1' or '0' here"
            )
        return value
    if lm_head is None or lm_head.dtype != torch.float32 or lm_head.dim() != 2:
        return None  # the few-row products apply to float32 only
    linears = [] if model is None else target_linear_weights(model)
    linears = [weight for weight in linears if weight is not lm_head]  # an untied lm_head is one
    product, times = small_batch_linear.fastest_product([*linears, lm_head])
    logger.info(
        "sglang-dflash few-row linears: %s (%d linears and the lm_head over %d rows: %s)",
        product or "off, F.linear",
        len(linears),
        small_batch_linear.CHEAP_ROWS,
        ", ".join(f"{name} {ms:.1f} ms" for name, ms in times.items()),
    )
    return product


def step_uses_few_row_linears(product: str | None, verify_width: int) -> str | None:
    """The few-row product a decode step runs its linears through (``product``, or None).

    A width-1 step is plain decoding's shape (one row per request): with ``mm(W, x.T)`` it keeps
    plain decoding's ``F.linear``, since at 6-12 rows, a batch of that many requests, ``mm`` is
    slower than ``F.linear`` on small weights.  The packed products tie or beat ``F.linear`` from
    2 rows (SmolLM2's 30 layers at 16 rows: MKL's 36 ms against 46 on a Xeon, oneDNN's 27 against
    55 on an EPYC), so a width-1 step of the adaptive policy takes them too (one request is one
    row: ``F.linear`` either way).
    """
    return product if verify_width > 1 or product in small_batch_linear.PACKED_PRODUCTS else None


def check_draft_dtype(target_dtype: torch.dtype, draft_dtype: torch.dtype) -> None:
    """The drafter's runtime dtype must be the target's (fused projections mix both)."""
    if draft_dtype != target_dtype:
        raise RuntimeError(
            f"sglang-dflash: the drafter's dtype is {draft_dtype}; expected the target's {target_dtype}"
        )


def check_captured_hidden(
    hidden: torch.Tensor | None, target_config, dflash: DFlashConfig, num_tokens: int
) -> None:
    """The target must hand back the captured layers of every extended token: [num_tokens, K*H].

    Without them the drafter would draft from stale or empty context K/V and acceptance would
    collapse without any error.
    """
    archs = list(getattr(target_config.hf_config, "architectures", None) or ["?"])
    width = dflash.num_context_layers * dflash.hidden_size
    got = None if hidden is None else list(hidden.shape)
    if got != [num_tokens, width]:
        raise RuntimeError(
            f"sglang-dflash: the target {archs[0]}'s captured hidden states (layers "
            f"{list(dflash.target_layer_ids)}) are {got}; expected [{num_tokens}, {width}]: "
            "the target model did not capture them for DFLASH"
        )


@dataclasses.dataclass
class StepInputs:
    """What one decode step needs, per request: the bonus token, the committed length (KV exists
    for positions < seq_len), the block's KV slots [bs * block_size] and the sampling settings."""

    bonus_tokens: torch.Tensor  # [bs]
    seq_lens: torch.Tensor  # [bs]
    out_cache_loc: torch.Tensor  # [bs * block_size]
    block_size: int
    mask_token_id: int
    sampling: spec.BatchSampling
    # Block positions the target verifies (the bonus token + verify_width - 1 drafts); the drafter
    # drafts the whole block whenever verify_width > 1 and does not run at 1 (plain decoding).
    verify_width: int | None = None
    # The grammars of constrained requests (JSON schema, regex, EBNF, structural tag), or None.
    grammar: BlockGrammar | None = None
    # Penalties on the tokens generated so far (frequency, presence, repetition, min_new_tokens).
    penalties: spec.Penalties | None = None
    logit_bias: torch.Tensor | None = None  # [bs, V] per-request logit_bias, or None
    # DFlash2: (draft logits [bs, n, V], bonus tokens [bs], sampling, draws) -> (drafts, proposals),
    # the candidate-lattice walk of the drafter's last pass (sglang_dflash.dflash2); None for DFlash.
    selector: Callable | None = None
    # Tensor parallelism: (*tensors) -> rank 0's values on every rank, applied to the drafts and to
    # the acceptance decision (.tensor_parallel.agree); None on one rank.
    agree: Callable[..., tuple[torch.Tensor, ...]] | None = None
    # Deferred verify logits: rows an lm_head pass reads for about one row's cost (the few-row
    # product on CPU), so greedy acceptance asks that many block columns in one pass.
    cheap_rows: int = 1


@dataclasses.dataclass(frozen=True)
class HotVocabLogits:
    """A drafter's logits over its hot vocabulary only (``--speculative-token-map``): ``logits``
    [N, K], column j scoring token ``token_ids[j]`` (increasing ids, so the first of equal logits is
    the token the whole vocabulary's argmax picks).  Greedy drafting takes the argmax here and maps
    it back, without the [N, V] tensor of -inf that the whole vocabulary's logits would be."""

    logits: torch.Tensor  # [N, K]
    token_ids: torch.Tensor  # [K] int64, increasing


@dataclasses.dataclass
class StepResult:
    """What one decode step produced (words as in :mod:`sglang_dflash.speculative`)."""

    num_correct_drafts: torch.Tensor  # [bs] accepted drafts
    emitted: torch.Tensor  # [bs, verify_width]: the first accept_lens entries are committed
    bonus_tokens: torch.Tensor  # [bs]: the next step's first block token
    accept_lens: torch.Tensor  # int32 [bs]: num_correct_drafts + 1, what SGLang's scheduler reads
    new_seq_lens: torch.Tensor  # [bs]: seq_lens + accept_lens


# ---------------------------------------------------------------------------- profiling
PROFILE_ENV = "SGLANG_DFLASH_PROFILE"


class PhaseProfiler(Protocol):
    """What :func:`decode_step` and the worker need of a profiler: one context manager per timed
    phase, one per finer detail inside a phase, and marks around each step (host time between them)."""

    def phase(self, name: str) -> contextlib.AbstractContextManager[None]: ...

    def detail(self, name: str) -> contextlib.AbstractContextManager[None]: ...

    def begin_step(self) -> None: ...

    def end_step(self, width: int = 0, graphs: tuple[bool, bool] = (False, False)) -> None: ...

    def forward_done(self) -> None: ...

    def count(self, name: str, value: int) -> None: ...

    def note(self, name: str, value: str) -> None: ...


class _NoProfiler:
    """Profiling off: every phase is a no-op, so the step body has no profiling branches."""

    def phase(self, name: str) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def detail(self, name: str) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def begin_step(self) -> None:
        return None

    def end_step(self, width: int = 0, graphs: tuple[bool, bool] = (False, False)) -> None:
        return None

    def forward_done(self) -> None:
        return None

    def count(self, name: str, value: int) -> None:
        """Add ``value`` to the running count ``name`` (e.g. requests a staged second pass scored)."""
        return None

    def note(self, name: str, value: str) -> None:
        """Record a fact of the server's setup for the profile (e.g. the product its linears take)."""
        return None


NO_PROFILER: PhaseProfiler = _NoProfiler()


def count_width(width_steps: dict[int, list[float]], width: int, step_ms: float) -> None:
    """One more step of verify width ``width`` that took ``step_ms``, in ``width -> [steps, ms]``."""
    tally = width_steps.setdefault(width, [0, 0.0])
    tally[0] += 1
    tally[1] += step_ms


def write_step_profile(
    path: str, totals: dict[str, float], steps: int, width_steps: dict[int, list[float]], **extra
) -> None:
    """The profile file the bench reads: means and totals per phase, steps, per-width tallies
    (``{"<width>": {"steps": n, "step_ms": mean}}``) and any ``extra`` entries."""
    stats = {name: total / max(1, steps) for name, total in totals.items()}
    widths = {
        str(width): {"steps": count, "step_ms": total / count}
        for width, (count, total) in sorted(width_steps.items())
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump({**stats, "steps": steps, "totals_ms": totals, "widths": widths, **extra}, f)


class WallClockProfiler(_NoProfiler):
    """``time.perf_counter`` timing of every phase of a decode step, where there is no CUDA.

    On CPU the step runs synchronously, so wall time is the phases' cost.  Phases: ``draft_ms``,
    ``verify_ms``, ``accept_inject_ms`` (as :class:`StepProfiler`), within the last one
    ``accept_ms``, ``publish_ms`` and ``inject_ms``; ``step_ms`` (the worker's whole decode call),
    ``prepare_ms`` (its part outside the three phases: block slots, sampling tensors, the result)
    and ``host_ms`` (the scheduler's time from the end of the previous forward, decode or prefill,
    to the start of this step).  Totals and means are rewritten to ``path`` after every step (a
    small JSON file; the bench reads it after each group): ``{"draft_ms": mean, ..., "steps": n,
    "totals_ms": {...}, "widths": {"<verify width>": {"steps": n, "step_ms": mean}}}``: the widths
    tell what an adaptive policy chose and what each choice cost; ``"counts"`` holds running counts
    (``staged_steps``, ``second_pass_requests``: steps that staged their verify, and the requests
    their second passes scored, :mod:`.staged_verify`).
    """

    # The columns the bench report reads back, less the device gap between steps (GPU only).
    PHASES = tuple(name for name in PHASE_NAMES if name != "gpu_gap_ms")

    def __init__(self, path: str, clock: Callable[[], float] = time.perf_counter) -> None:
        self.path, self.clock, self.steps = path, clock, 0
        self.totals = dict.fromkeys(self.PHASES, 0.0)
        self.current = dict.fromkeys(self.PHASES, 0.0)
        self.step_start: float | None = None
        self.last_forward_end: float | None = None
        self.width_steps: dict[int, list[float]] = {}  # verify width -> [steps, total step ms]
        self.counts: dict[str, int] = {}  # running counts (count()), written as "counts"
        self.notes: dict[str, str] = {}  # the server's setup (note()), written as "notes"

    @contextlib.contextmanager
    def _timed(self, name: str) -> Iterator[None]:
        start = self.clock()
        yield
        self.current[name] += (self.clock() - start) * 1e3

    def phase(self, name: str) -> contextlib.AbstractContextManager[None]:
        return self._timed(name)

    def detail(self, name: str) -> contextlib.AbstractContextManager[None]:
        return self._timed(name)

    def begin_step(self) -> None:
        self.step_start = self.clock()
        self.current = dict.fromkeys(self.PHASES, 0.0)
        if self.last_forward_end is not None:
            self.current["host_ms"] = (self.step_start - self.last_forward_end) * 1e3

    def end_step(self, width: int = 0, graphs: tuple[bool, bool] = (False, False)) -> None:
        """Fold the step (that verified ``width`` positions) in and rewrite the file (a step without
        :meth:`begin_step` is not timed; ``graphs``, whether its passes replayed CUDA graphs, is not
        recorded where there are none)."""
        if self.step_start is None:
            return
        end = self.clock()
        cur = self.current
        cur["step_ms"] = (end - self.step_start) * 1e3
        cur["prepare_ms"] = cur["step_ms"] - cur["draft_ms"] - cur["verify_ms"] - cur["accept_inject_ms"]
        for name, value in cur.items():
            self.totals[name] += value
        self.steps += 1
        count_width(self.width_steps, width, cur["step_ms"])
        self.step_start, self.last_forward_end = None, end
        write_step_profile(
            self.path, self.totals, self.steps, self.width_steps, counts=self.counts, notes=self.notes
        )

    def forward_done(self) -> None:
        """A prefill ended: the next step's host time starts here."""
        self.last_forward_end = self.clock()

    def count(self, name: str, value: int) -> None:
        self.counts[name] = self.counts.get(name, 0) + value

    def note(self, name: str, value: str) -> None:
        self.notes[name] = value


def make_profiler(path: str | None, device: torch.device) -> PhaseProfiler:
    """``SGLANG_DFLASH_PROFILE=path``: CUDA events on a CUDA device, wall clock elsewhere; off when unset."""
    if not path:
        return NO_PROFILER
    return StepProfiler(path) if torch.device(device).type == "cuda" else WallClockProfiler(path)


class StepProfiler(_NoProfiler):
    """CUDA-event timing of the draft, verify and accept+inject phases of every decode step, next
    to the host's wall clock around it.

    Enabled by ``SGLANG_DFLASH_PROFILE=path``.  Phases run back to back, so one phase's end event
    is the next one's start (four events per step).  ``gpu_gap_ms`` is the device time from the
    previous decode step's last event to this step's first (the scheduler's work between steps,
    or the device idling while the host prepares this one; a step right after a prefill counts
    none).  ``graph_steps`` counts the steps whose draft and whose verify pass replayed a CUDA
    graph (an eager pass costs a launch per kernel: the first suspect of a slow step).
    ``step_ms`` (the worker's decode call) and ``host_ms`` (the scheduler's time from the end of
    the previous forward to this step) are host wall clock, as :class:`WallClockProfiler`'s: where
    ``step_ms`` nears the phases' sum, the host, not the device, sets the pace.  Events are read
    once complete (no synchronisation in the step) and the totals, means and per-width tallies are
    rewritten to ``path`` every :attr:`WRITE_EVERY` completed steps, in the CPU profile's format
    (the bench takes per-group means from the totals).
    """

    PHASES = ("draft_ms", "verify_ms", "accept_inject_ms")
    WRITE_EVERY = 8  # a group's means lag its end by fewer steps than this (plus those in flight)

    def __init__(self, path: str, clock: Callable[[], float] = time.perf_counter) -> None:
        self.path, self.clock, self.steps = path, clock, 0
        self.totals = dict.fromkeys((*self.PHASES, "gpu_gap_ms", "step_ms", "host_ms"), 0.0)
        self.graph_steps = {"draft": 0, "verify": 0}
        self.marks: list[torch.cuda.Event] = []  # the current step's events so far
        self.host_start: float | None = None
        self.host_ms = 0.0
        self.last_forward_end: float | None = None
        self.last_event: torch.cuda.Event | None = None  # the previous decode step's last event
        # Steps whose events may not be done: (previous step's last event, marks, host ms, width, graphs).
        self.in_flight: list[tuple] = []
        self.width_steps: dict[int, list[float]] = {}  # verify width -> [steps, total device ms]

    @staticmethod
    def mark() -> torch.cuda.Event:
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the enclosed work as phase ``name``; phases must come in :attr:`PHASES` order."""
        expected = self.PHASES[max(0, len(self.marks) - 1)] if len(self.marks) <= len(self.PHASES) else None
        if name != expected:
            raise ValueError(f"StepProfiler: phase is {name!r}; expected {expected!r}")
        if not self.marks:
            self.marks.append(self.mark())
        try:
            yield
        except BaseException:
            self.marks = []  # a failed step is not timed
            raise
        self.marks.append(self.mark())

    def begin_step(self) -> None:
        self.host_start, self.marks = self.clock(), []
        since = self.last_forward_end
        self.host_ms = 0.0 if since is None else (self.host_start - since) * 1e3

    def end_step(self, width: int = 0, graphs: tuple[bool, bool] = (False, False)) -> None:
        """Queue the step (that verified ``width`` positions; ``graphs``: whether its draft and
        verify passes replayed CUDA graphs), then fold in every queued step whose events have
        completed (a step without :meth:`begin_step` or all its phases is not timed)."""
        end = self.clock()
        if self.host_start is not None and len(self.marks) == len(self.PHASES) + 1:
            host = {"step_ms": (end - self.host_start) * 1e3, "host_ms": self.host_ms}
            self.in_flight.append((self.last_event, self.marks, host, width, graphs))
            self.last_event = self.marks[-1]
        self.host_start, self.marks, self.last_forward_end = None, [], end
        self._fold_completed()

    def forward_done(self) -> None:
        """A prefill ended: the next step's host time starts here, and its device gap is not timed."""
        self.last_forward_end, self.last_event = self.clock(), None

    def _fold_completed(self) -> None:
        while self.in_flight and self.in_flight[0][1][-1].query():
            previous, marks, host, width, (draft_graph, verify_graph) = self.in_flight.pop(0)
            device_ms = 0.0
            for name, start, end in zip(self.PHASES, marks, marks[1:]):
                elapsed = start.elapsed_time(end)
                self.totals[name] += elapsed
                device_ms += elapsed
            if previous is not None:
                self.totals["gpu_gap_ms"] += previous.elapsed_time(marks[0])
            self.graph_steps["draft"] += draft_graph
            self.graph_steps["verify"] += verify_graph
            for name, value in host.items():
                self.totals[name] += value
            count_width(self.width_steps, width, device_ms)
            self.steps += 1
            if self.steps % self.WRITE_EVERY == 0:
                write_step_profile(
                    self.path, self.totals, self.steps, self.width_steps, graph_steps=self.graph_steps
                )


# ---------------------------------------------------------------------------- the step
def keep_blocks_in_rows(batch, last_start: int) -> None:
    """Start no block past ``last_start`` (in place on the batch's seq_lens, which the host restores
    after the forward), so that every block and the prefix it attends to stay in its request's row.

    Only a request that has already ended moves.  Under the overlap scheduler its end is seen after
    the next step was launched, so it runs one step more, from up to a whole block past its last
    start.  A running request starts at most at context length - 4 (the host caps prompt + output
    at context length - 2 tokens), and a row holds context length + 4 + block_size positions (more
    with pages > 1), so only such an extra step can reach past the row: unmoved, its block would
    gather, write and attend over the next row's slots, another request's KV.  Moved, it writes its
    own reserved slots past anything the request returns or caches; its tokens are discarded.
    """
    batch.seq_lens = torch.clamp(batch.seq_lens, max=last_start)
    if batch.seq_lens_cpu is not None:
        batch.seq_lens_cpu = torch.clamp(batch.seq_lens_cpu, max=last_start)
        batch.seq_lens_sum = int(batch.seq_lens_cpu.sum())


def block_slots(batch, req_to_token: torch.Tensor, block_size: int) -> torch.Tensor:
    """The KV slots of every request's block, ``req_to_token[r, seq_len : seq_len + block_size]``
    ([bs * block_size]), once every block is inside its row and its reservation
    (:func:`keep_blocks_in_rows`: the batch's seq_lens change for an ended request)."""
    from sglang.kernels.ops.speculative.cache_locs import assign_extend_cache_locs_func

    page_size = batch.token_to_kv_pool_allocator.page_size
    keep_blocks_in_rows(batch, row_capacity(req_to_token, page_size) - block_size)
    return assign_extend_cache_locs_func(
        req_pool_indices=batch.req_pool_indices,
        req_to_token=req_to_token,
        start_offset=batch.seq_lens,
        end_offset=batch.seq_lens + block_size,
        batch_size=batch.batch_size(),
        draft_token_num=block_size,
        device=req_to_token.device,
    )


# Per-request fields of a ScheduleBatch that request_subset does not cut: a batch with any of them
# set (hybrid, encoder-decoder or logprob requests) verifies in one pass.
_UNCUT_FIELDS = ("mamba_track_indices", "encoder_lens", "top_logprobs_nums", "token_ids_logprobs")


def can_split_batch(batch) -> bool:
    """Whether :func:`request_subset` can cut ``batch`` (nothing per request beyond what it cuts)."""
    if any(getattr(batch, name, None) is not None for name in _UNCUT_FIELDS):
        return False
    mm_inputs = getattr(batch, "multimodal_inputs", None)
    return mm_inputs is None or all(m is None for m in mm_inputs)


def request_subset(batch, requests: torch.Tensor, advance: int):
    """A shallow copy of ``batch`` holding only ``requests`` (batch rows), each ``advance`` tokens
    further along: a verify pass over block columns ``advance ..`` of those requests attends to
    their prefix and to the columns an earlier pass wrote.  ``batch`` itself is not changed."""
    chosen = requests.tolist()
    sub = copy.copy(batch)
    sub.reqs = [batch.reqs[i] for i in chosen]
    sub.req_pool_indices = batch.req_pool_indices[requests.to(batch.req_pool_indices.device)]
    sub.seq_lens = batch.seq_lens[requests.to(batch.seq_lens.device)] + advance
    if getattr(batch, "orig_seq_lens", None) is not None:
        sub.orig_seq_lens = batch.orig_seq_lens[requests.to(batch.orig_seq_lens.device)] + advance
    if getattr(batch, "req_pool_indices_cpu", None) is not None:
        sub.req_pool_indices_cpu = batch.req_pool_indices_cpu[requests.cpu()]
    sub.seq_lens_cpu, sub.seq_lens_sum = None, None
    if batch.seq_lens_cpu is not None:
        sub.seq_lens_cpu = batch.seq_lens_cpu[requests.cpu()] + advance
        sub.seq_lens_sum = int(sub.seq_lens_cpu.sum())
    if getattr(batch, "multimodal_inputs", None) is not None:
        sub.multimodal_inputs = [batch.multimodal_inputs[i] for i in chosen]
    return sub


def verify_slots(out_cache_loc: torch.Tensor, bs: int, width: int) -> torch.Tensor:
    """The KV slots of the first ``width`` positions of each block ([bs * block_size] -> [bs * width])."""
    return out_cache_loc.view(bs, -1)[:, :width].reshape(-1)


# A draft column the step leaves to the verify (never a token id, so never accepted).
LATER_DRAFT = -1


def decode_step(
    inputs: StepInputs,
    draft: Callable[[torch.Tensor, torch.Tensor], torch.Tensor | HotVocabLogits],
    verify: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]],
    inject: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], None],
    publish: Callable[[torch.Tensor], None] | None = None,
    profiler: PhaseProfiler = NO_PROFILER,
) -> StepResult:
    """One DFlash step, independent of how the passes run (SGLang runners on GPU, plain PyTorch in tests).

    ``draft(block, positions)`` -> logits [bs * block_size, V] of every block position, or
    [bs * (width - 1), V] of the draft positions 1 .. width - 1 only, or of positions 1 .. k < width - 1
    only when the verify (a staged one) drafts the rest itself for the requests that reach them,
    writing them into the ``tokens`` it was given; for an all-greedy batch without
    penalties, grammar or selector, they may come as :class:`HotVocabLogits` (the same rows over a
    hot vocabulary);
    ``verify(tokens, positions, slots)`` -> (target logits [bs * width, V], captured target hidden
    [bs * width, K*H]) for the first ``width = verify_width`` block positions, at those KV slots;
    for an all-greedy batch without penalties, grammar or ``logit_bias``, the logits may come as
    ``column_argmax(requests, start, stop)`` instead (:class:`~.outputs.DeferredLogits`: acceptance
    asks for a few block columns at a time, :func:`~sglang_dflash.speculative.greedy_accept_by_columns`),
    whose ``verified`` [bs], if it has one, caps each request's committed tokens (a staged verify
    that scored only a request's first columns: :class:`~.outputs.ColumnArgmax`);
    ``inject(hidden, positions, slots)`` writes the context K/V of those rows into the draft pool;
    ``publish(new_seq_lens)`` lets the host schedule the next step.  The target's logits are
    changed in place before acceptance as plain decoding's sampler changes them, in its order:
    penalties (each block position counting the drafts before it), the grammar mask (with
    ``inputs.grammar``; the drafts are chosen under it too when it masks drafts), ``logit_bias``.
    """
    bs, block_size, sampling = inputs.seq_lens.shape[0], inputs.block_size, inputs.sampling
    width, grammar = inputs.verify_width or block_size, inputs.grammar
    positions = spec.block_positions(inputs.seq_lens, block_size)  # [bs, block_size]
    block = spec.build_block(inputs.bonus_tokens.to(torch.long), block_size, inputs.mask_token_id)
    draws = sampling.draws(inputs.seq_lens + 1)  # seeded rows: the drafts decide seq_len + 1 ...

    with profiler.phase("draft_ms"):
        # [bonus token, MASK x (block_size - 1)] in one bidirectional pass over [context ; block].
        drafts, draft_probs = block[:, 1:1], None  # width 1: no drafts, plain decoding
        left_to_verify = 0
        if width > 1:
            logits, hot_ids = draft(block, positions.reshape(-1)), None
            if isinstance(logits, HotVocabLogits):
                changed = inputs.penalties is not None or grammar is not None or inputs.selector is not None
                if changed or not sampling.all_greedy:
                    raise ValueError(
                        "hot-vocabulary draft logits are for all-greedy batches without penalties, "
                        "grammar or selector"
                    )
                logits, hot_ids = logits.logits, logits.token_ids
            draft_logits = logits.view(bs, -1, logits.shape[-1])
            if draft_logits.shape[1] == block_size:  # every column came back: keep the drafts'
                draft_logits = draft_logits[:, 1:width]
            if inputs.penalties is not None:
                spec.apply_penalties_(draft_logits, inputs.penalties)
            if inputs.selector is not None:
                # Drafts outside a grammar are still verified under it: lossless, only less accepted.
                drafts, draft_probs = inputs.selector(draft_logits, block[:, 0], sampling, draws)
            elif grammar is not None and grammar.mask_drafts:
                drafts, draft_probs = grammar.draft(draft_logits, sampling, draws)
            else:
                drafts, draft_probs = spec.draft_tokens(draft_logits, sampling, draws)
            if hot_ids is not None:
                drafts = hot_ids[drafts]  # columns of the hot vocabulary -> token ids
            left_to_verify = width - 1 - drafts.shape[1]  # later columns the verify drafts
            if left_to_verify:
                drafts = torch.nn.functional.pad(drafts, (0, left_to_verify), value=LATER_DRAFT)
            if inputs.agree is not None:
                (drafts,) = inputs.agree(drafts)  # every rank verifies the same block

    with profiler.phase("verify_ms"):
        # The target scores [bonus token, drafts] in one causal pass and captures context features.
        verify_positions = positions[:, :width].reshape(-1)
        slots = verify_slots(inputs.out_cache_loc, bs, width)
        tokens = torch.cat([block[:, :1], drafts], dim=1)
        target_logits, hidden = verify(tokens, verify_positions, slots)
        deferred = not isinstance(target_logits, torch.Tensor)
        changed = inputs.penalties is not None or grammar is not None or inputs.logit_bias is not None
        if deferred and (changed or not sampling.all_greedy):
            raise ValueError("deferred verify logits are for all-greedy batches with unchanged logits")
        if left_to_verify:
            if not deferred:
                raise ValueError("drafts left to the verify need a staged verify's deferred logits")
            drafts = tokens[:, 1:]  # with the later drafts of the requests that reached them
        if not deferred:
            # In place: the host's logprobs read these logits, as plain decoding's read its sampler's.
            target_logits = target_logits.view(bs, width, -1)
            if inputs.penalties is not None:
                spec.apply_penalties_(target_logits, inputs.penalties, chain=drafts)
            if grammar is not None:
                grammar.mask_target(tokens, target_logits)
            if inputs.logit_bias is not None:
                target_logits.add_(inputs.logit_bias[:, None, :])

    with profiler.phase("accept_inject_ms"):
        with profiler.detail("accept_ms"):
            if deferred:
                num_correct_drafts, emitted = spec.greedy_accept_by_columns(
                    drafts, target_logits, inputs.cheap_rows
                )
                verified = getattr(target_logits, "verified", None)
                if verified is not None:  # a staged verify stopped early for some requests (cut)
                    num_correct_drafts = torch.minimum(num_correct_drafts, verified - 1)
            else:
                num_correct_drafts, emitted = spec.accept(drafts, draft_probs, target_logits, sampling, draws)
            if inputs.agree is not None:
                num_correct_drafts, emitted = inputs.agree(num_correct_drafts, emitted)
            accept_lens = (num_correct_drafts + 1).to(torch.int32)
            new_seq_lens = inputs.seq_lens + accept_lens
        if publish is not None:
            with profiler.detail("publish_ms"):
                publish(new_seq_lens)
        # Inject all verified rows: rows past a request's accepted prefix lie beyond its new
        # seq_len, and the next block writes its own K/V over them before anything reads them.
        with profiler.detail("inject_ms"):
            if hidden.device.type == "cpu":
                # A CPU step is synchronous, so choosing rows costs no device sync: inject only the
                # committed ones (about tau of the width per request; the others would be overwritten).
                committed = (torch.arange(width) < accept_lens[:, None]).view(-1)
                inject(hidden[committed], verify_positions[committed], slots[committed])
            else:
                inject(hidden, verify_positions, slots)

    bonus_tokens = emitted.gather(1, num_correct_drafts[:, None])[:, 0]
    return StepResult(num_correct_drafts, emitted, bonus_tokens, accept_lens, new_seq_lens)


@dataclasses.dataclass
class BlockPasses:
    """The two forward passes of one decode step, kept for the host: it reads the verify result,
    and under overlap scheduling the forward batches must outlive the step (keep-alive refs)."""

    draft_batch: ForwardBatch | None = None
    verify_batch: ForwardBatch | None = None
    verify_result: GenerationBatchResult | None = None
    draft_graph: bool = False  # whether the draft pass replayed a CUDA graph


class DFlashWorker(BaseSpecWorker):
    """Drop-in for SGLang's DFLASH worker: same constructor, same scheduler contract."""

    def __init__(self, server_args, gpu_id: int, ps, nccl_port: int, target_worker: TpModelWorker) -> None:
        self.server_args = server_args
        self._target_worker = target_worker
        self.device = target_worker.model_runner.device
        self.block_size = int(server_args.speculative_num_draft_tokens)
        # Block size and tensor-parallel size were validated at ServerArgs time
        # (validation.check_server_args).
        self.dflash = DFlashConfig.from_pretrained(server_args.speculative_draft_model_path)
        self.speculative_num_steps = 1
        self.speculative_num_draft_tokens = self.block_size
        target_config = target_worker.model_runner.model_config
        context_len = target_config.context_len
        draft_args = draft_server_args(server_args, context_len, target_config.dtype)
        self._draft_worker = TpModelWorker(
            server_args=draft_args,
            gpu_id=gpu_id,
            ps=dataclasses.replace(ps, pp_rank=0),
            nccl_port=nccl_port,
            is_draft_worker=True,
        )
        self.draft_runner = self._draft_worker.model_runner
        check_draft_dtype(target_config.dtype, self.draft_runner.model_config.dtype)
        self._draft_worker.draft_runner = self.draft_runner  # the host reads worker.draft_worker.draft_runner
        self._draft_worker.draft_runners = [self.draft_runner]  # BaseSpecWorker weight updates iterate these
        self.draft_model = self.draft_runner.model
        self.tp_shard = TPShard.current()  # the target's TP group, which the drafter is sharded over
        embed, head = target_worker.model_runner.model.get_embed_and_head()
        self.draft_model.set_embed_and_head(embed, head)
        token_map = getattr(server_args, "speculative_token_map", None)
        if token_map is not None:  # checked at ServerArgs time (validation.check_token_map)
            self.draft_model.set_hot_vocab(read_token_map(token_map, self.dflash.vocab_size))
        self.draft_model.prepare_rope(context_len + 2 * self.block_size + 8)
        self.mask_token_id = self.dflash.mask_token_id
        self.injector: ContextInjector | None = None
        self.width_policy = adaptive_policy(server_args, self.block_size)
        selector = getattr(self.draft_model, "select_drafts", None) is not None
        verify_tree = verify_tree_setting(server_args, self.block_size, self.device, selector)
        if verify_tree is not None and torch.device(self.device).type != "cpu":
            check_gpu_tree_target(target_worker.model_runner, self.device, self.block_size)
        wide_tree = wide_batch_tree_setting(server_args, self.block_size, self.device, verify_tree)
        self.verify_trees = VerifyTrees(
            verify_tree,
            wide_tree,
            self.device,
            prompt_lookup_setting(),
            self.block_size,
            lookup_max_rows_setting(),
        )
        self.lookups = RequestLookups()  # the trees' lookup branches: each request's n-gram index
        self.lookup_by_proposal = lookup_by_proposal_setting()
        self.tree_gate = SecondPassGate(second_pass_policy())  # the tree's own: other passes, gains
        self.final_hidden = FinalHiddenStates(target_worker.model_runner)
        self.mask_drafts = mask_drafts_setting()
        self.deferred_logits = deferred_verify_logits(target_worker.model_runner, self.tp_shard)
        self.small_batch_linears = small_batch_linears_setting(
            self.device, head, target_worker.model_runner.model
        )
        self.first_pass_columns = first_pass_columns()
        self.second_pass = SecondPassGate(second_pass_policy())
        # The drafter's lm_head over the drafts' columns only (and, drafting greedily from a hot
        # vocabulary, over its rows only: HotVocabLogits); a CUDA graph replays every column.
        self.draft_columns_only = torch.device(self.device).type == "cpu"
        profile = os.environ.get(PROFILE_ENV)
        self.profiler = make_profiler(profile, self.device)
        if torch.device(self.device).type == "cpu":  # the startup timing's choice, for the bench
            self.profiler.note("linears", self.small_batch_linears or "F.linear")
        hot = getattr(self.draft_model, "hot_token_ids", None)
        logger.info(
            "sglang-dflash worker ready: block_size=%d, draft layers=%d, target layers %s, "
            "draft vocabulary %d",
            self.block_size,
            self.dflash.num_hidden_layers,
            list(self.dflash.target_layer_ids),
            self.dflash.vocab_size if hot is None else hot.numel(),
        )

    # ------------------------------------------------------------------ host-facing attributes
    @property
    def draft_model_runner(self):
        return self.draft_runner

    @property
    def model_runner(self):
        return self.target_worker.model_runner

    @property
    def spec_v2_attn_backends(self):
        return (self.target_worker.model_runner.attn_backend, self.draft_runner.attn_backend)

    def alloc_memory_pool(
        self, memory_pool_config=None, req_to_token_pool=None, token_to_kv_pool_allocator=None
    ):
        super().alloc_memory_pool(
            memory_pool_config=memory_pool_config,
            req_to_token_pool=req_to_token_pool,
            token_to_kv_pool_allocator=token_to_kv_pool_allocator,
        )
        self.injector = ContextInjector(self.draft_model, self.draft_runner.token_to_kv_pool)

    def update_weights_from_disk(self, recv_req):
        result = super().update_weights_from_disk(recv_req)
        if self.injector is not None:
            self.injector.refresh()
        hot = getattr(self.draft_model, "hot_token_ids", None)
        if hot is not None:  # the hot vocabulary's lm_head rows are a copy: take them again
            self.draft_model.set_hot_vocab(hot)
        return result

    # ------------------------------------------------------------------ the step
    def forward_batch_generation(self, batch, on_publish=None) -> GenerationBatchResult:
        if batch.forward_mode.is_extend() or batch.is_extend_in_batch:
            return self._prefill(batch, on_publish)
        return self._decode(batch, on_publish)

    def _prefill(self, batch, on_publish) -> GenerationBatchResult:
        if self.width_policy is not None:
            self.width_policy.cycle_interrupted()
        with self.final_hidden.collect(batch.return_hidden_states) as final_hidden:
            result = self.target_worker.forward_batch_generation(
                batch, capture_hidden_mode=CaptureHiddenMode.FULL
            )
        result.new_seq_lens = batch.seq_lens
        if on_publish is not None:
            on_publish(result.new_seq_lens)
        hidden = result.logits_output.hidden_states
        if batch.extend_lens:
            check_captured_hidden(
                hidden, self.target_worker.model_runner.model_config, self.dflash, sum(batch.extend_lens)
            )
            positions = torch.cat(
                [torch.arange(p, p + n) for p, n in zip(batch.prefix_lens, batch.extend_lens)]
            )
            self.injector(hidden, positions.to(self.device, non_blocking=True), batch.out_cache_loc)
        # The aux features are not the model's hidden states: the host gets the final ones, if asked.
        result.logits_output.hidden_states = final_hidden.get()
        result.next_draft_input = DFlashDraftInput(result.next_token_ids, self.block_size)
        self.profiler.forward_done()
        return result

    def _block_forward_batch(
        self,
        batch,
        runner,
        block: torch.Tensor,
        positions: torch.Tensor,
        out_cache_loc: torch.Tensor,
        capture: CaptureHiddenMode,
        width: int,
        full_vocab: bool = False,
        logit_columns: tuple[int, int] | None = None,
        hot_logits: bool = False,
        later_columns: tuple[int, int] | None = None,
        tree_mask: torch.Tensor | None = None,
    ) -> ForwardBatch:
        """A TARGET_VERIFY forward over ``width`` tokens per request (the host restores batch fields)."""
        batch.forward_mode = ForwardMode.TARGET_VERIFY
        batch.input_ids = block.reshape(-1)
        batch.out_cache_loc = out_cache_loc
        batch.spec_info = DFlashBlockInput(
            batch.input_ids,
            positions,
            width,
            capture,
            full_vocab,
            logit_columns,
            hot_logits,
            later_columns,
            tree_mask,
        )
        return ForwardBatch.init_new(
            batch, runner, capture_hidden_mode=capture, return_hidden_states_before_norm=False
        )

    def _draft_pass(
        self,
        passes: BlockPasses,
        batch,
        block: torch.Tensor,
        positions: torch.Tensor,
        out_cache_loc: torch.Tensor,
        **options,
    ):
        """The drafter's non-causal pass over every request's block (``options``: the block
        input's, e.g. ``logit_columns``); kept in ``passes``.  Returns its logits output."""
        passes.draft_batch = self._block_forward_batch(
            batch,
            self.draft_runner,
            block,
            positions,
            out_cache_loc,
            CaptureHiddenMode.NULL,
            self.block_size,
            **options,
        )
        drafted = self.draft_runner.forward(passes.draft_batch)
        passes.draft_graph = bool(drafted.can_run_graph)
        return drafted.logits_output

    def _decode_tree(
        self,
        batch,
        on_publish,
        out_cache_loc: torch.Tensor,
        sampling: spec.BatchSampling,
        served: ServedTree,
        started: float,
        proposals: Proposals | None,
    ) -> GenerationBatchResult:
        """One step that verifies ``served``, a tree (:mod:`.tree_verify`), instead of the chain.

        Greedy on CPU, the walk asks for the target's argmax a few nodes at a time
        (:class:`NodeArgmax`), and nodes past ``SGLANG_DFLASH_TREE_FIRST_DEPTH`` may take a second
        pass.  With sampled rows on CPU, the tree is scored in one pass and the walk draws the
        target's token only after the nodes it reaches (:meth:`DraftTree.sampled_walk`).  On a GPU
        the tree is scored in one pass and walked in tensor ops over the target's token after every
        node (:meth:`DraftTree.target_tokens`: a sampled row's draw), nothing read back to the
        host; a GPU's tree mask is the split-KV kernel's armed block mask.  ``started``: when the
        step began (what the tree's second-pass gate and the width policy time it from);
        ``proposals``: the batch's lookup proposals where the tree has a lookup branch."""
        tree, block_size, bs = served.tree, self.block_size, batch.batch_size()
        width, seq_lens, passes = tree.num_nodes, batch.seq_lens, BlockPasses()
        on_gpu = seq_lens.device.type != "cpu"
        # Sampled rows draw from every node's whole distribution: no deferred logits.
        deferred = self.deferred_logits if sampling.all_greedy else None
        few_rows = step_uses_few_row_linears(self.small_batch_linears, width)
        # Drafts from a hot vocabulary need only its logits (their ranks, mapped back).
        hot_ids = getattr(self.draft_model, "hot_token_ids", None)
        hot_ids = hot_ids if self.draft_columns_only else None
        with small_batch_linears(few_rows):
            with self.profiler.phase("draft_ms"):
                block = spec.build_block(
                    batch.spec_info.bonus_tokens.to(torch.long), block_size, self.mask_token_id
                )
                positions = spec.block_positions(seq_lens, block_size).reshape(-1)
                draft_logits = self._draft_pass(
                    passes,
                    batch,
                    block,
                    positions,
                    out_cache_loc,
                    logit_columns=(1, tree.max_depth + 1) if self.draft_columns_only else None,
                    hot_logits=hot_ids is not None,
                ).next_token_logits
                draft_logits = draft_logits.view(bs, -1, draft_logits.shape[-1])
                if draft_logits.shape[1] == block_size:  # every column came back
                    draft_logits = draft_logits[:, 1:]
                drafts = tree.draft_tokens(draft_logits)
                if hot_ids is not None:
                    drafts = hot_ids[drafts]  # columns of the hot vocabulary -> token ids
                if proposals is not None:
                    drafts = tree.place_lookup(drafts, proposals.tokens)
                nodes = torch.cat([block[:, :1], drafts.to(block.dtype)], dim=1)
            slots = verify_slots(out_cache_loc, bs, width).view(bs, width)
            node_positions = tree.node_positions(seq_lens)
            plan = plan_tree_walk(
                served,
                bs,
                on_gpu=on_gpu,
                sampled=not sampling.all_greedy,
                deferred=deferred is not None,
                can_split=can_split_batch(batch),
                few_rows=few_rows is not None,
            )
            split = plan.split
            # A GPU draws the target's token at every node (a CPU step: where its walk goes).
            rows_targets = None
            if not sampling.all_greedy and on_gpu:
                draws = sampling.draws(seq_lens + 1)  # node depth d decides position seq_len + 1 + d
                rows_targets = functools.partial(tree.target_tokens, sampling=sampling, generator=draws)

            def tree_pass(requests: torch.Tensor, start: int, stop: int):
                """The target over nodes ``start .. stop - 1`` of ``requests``: (captured aux hidden
                [n * (stop - start), K*H], ``argmax(rows)`` after those rows, all rows for None)."""
                forward_batch = self._block_forward_batch(
                    batch if start == 0 else request_subset(batch, requests, start),
                    self.target_worker.model_runner,
                    nodes[requests, start:stop],
                    node_positions[requests, start:stop].reshape(-1),
                    slots[requests, start:stop].reshape(-1),
                    CaptureHiddenMode.FULL,
                    stop - start,
                    tree_mask=None if on_gpu else served.mask[start:stop, :stop],
                )
                with (
                    deferred.capture() if deferred is not None else contextlib.nullcontext(),
                    BlockMasks.holding(served.mask) if on_gpu else contextlib.nullcontext(),
                ):
                    result = self.target_worker.forward_batch_generation(
                        batch=None, forward_batch=forward_batch, is_verify=True
                    )
                if start == 0:
                    passes.verify_batch, passes.verify_result = forward_batch, result
                aux, result.logits_output.hidden_states = result.logits_output.hidden_states, None
                if deferred is not None:  # the lm_head only after the nodes the walk reaches
                    final, logits = deferred.kept()
                    return aux, lambda rows=None: logits(final if rows is None else final[rows]).argmax(-1)
                full = result.logits_output.next_token_logits
                if rows_targets is not None:  # every node's target token, drawn once
                    return aux, lambda rows=None: rows_targets(full.view(bs, width, -1))
                return aux, lambda rows=None: (full if rows is None else full[rows]).argmax(-1)

            with self.profiler.phase("verify_ms"):
                self.profiler.count("tree_steps", 1)
                if self.verify_trees.is_wide(served):
                    self.profiler.count("wide_tree_steps", 1)
                everyone = torch.arange(bs, device=nodes.device)
                began = time.perf_counter()
                first_aux, first_argmax = tree_pass(everyone, 0, split)
                if split < width:  # the gate decides second passes: a one-pass tree has none
                    self.tree_gate.observe_pass(False, bs * split, (time.perf_counter() - began) * 1e3)
                    node_hidden = first_aux.new_zeros(bs, width, first_aux.shape[-1])
                    node_hidden[:, :split] = first_aux.view(bs, split, -1)
                else:
                    node_hidden = first_aux.view(bs, width, -1)
                logits_output = passes.verify_result.logits_output

            def second_pass(reach: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
                """The nodes past the first pass, for the requests whose walk reaches them (timed
                within accept_inject_ms, where the walk asks for them)."""
                began = time.perf_counter()
                aux, argmax = tree_pass(reach, split, width)
                later = width - split
                self.tree_gate.observe_pass(True, len(reach) * later, (time.perf_counter() - began) * 1e3)
                node_hidden[reach, split:] = aux.view(len(reach), later, -1)
                self.profiler.count("second_pass_requests", len(reach))
                return argmax

            onward: dict[str, torch.Tensor | bool] = {}

            def may_enter(requests: torch.Tensor, children: torch.Tensor) -> torch.Tensor:
                """Every request walks into its first-pass nodes; into later ones only if the second
                pass pays for the requests going on (decided once, when the walk first reaches them)."""
                late = children >= split
                if late.any() and not onward:
                    reach = requests[late]
                    onward.update(run=self.tree_gate.pays(len(reach), width - split), reach=reach)
                    if onward["run"]:
                        argmax_at.run_second_pass(reach)
                    else:
                        self.profiler.count("cut_requests", len(reach))
                return ~late | bool(onward.get("run", True))

            with self.profiler.phase("accept_inject_ms"):
                with self.profiler.detail("accept_ms"):
                    if plan.walk is TreeWalk.DRAWS_WHEN_WALKED:
                        node_logits = logits_output.next_token_logits.view(bs, width, -1)
                        walked = tree.sampled_walk(nodes, node_logits, sampling)
                    elif plan.walk is TreeWalk.AT_ONCE:
                        walked = tree.greedy_accept_argmax(nodes, first_argmax().view(bs, width))
                    else:
                        argmax_at = NodeArgmax(
                            tree, bs, split, first_argmax, second_pass, plan.cheap_rows, nodes.device
                        )
                        walked = tree.greedy_walk(nodes, argmax_at, may_enter)
                    on_path, num_correct_drafts, emitted = walked
                    accept_lens = (num_correct_drafts + 1).to(torch.int32)
                    if onward.get("run"):  # what the second pass added past the first pass's deepest nodes
                        first_pass_tokens = tree.depths[split - 1] + 1  # nodes are ordered by depth
                        added = int((accept_lens[onward["reach"]] - first_pass_tokens).sum())
                        self.tree_gate.observe_gain(len(onward["reach"]), width - split, added)
                    new_seq_lens = seq_lens + accept_lens
                with self.profiler.detail("inject_ms"):
                    order = path_order(on_path)
                    placed = commit_path_slots(
                        self.req_to_token_pool.req_to_token,
                        batch.req_pool_indices,
                        seq_lens,
                        slots,
                        order,
                    )
                    if on_publish is not None:
                        on_publish(new_seq_lens)
                    path_rows = torch.arange(bs, device=order.device)[:, None] * width + order
                    path_positions = seq_lens[:, None] + torch.arange(width, device=order.device)
                    if on_gpu:
                        # Every node in path order, as the chain injects every row (no device sync): the
                        # rows past a request's path lie beyond its new seq_len, and its next block
                        # writes its own K/V over them before anything reads them.
                        committed = slice(None)
                    else:  # a synchronous CPU step injects the committed rows only
                        committed = torch.arange(width)[None, :] < accept_lens[:, None]
                    self.injector(
                        node_hidden.view(bs * width, -1)[path_rows[committed].reshape(-1)],
                        path_positions[committed].reshape(-1),
                        placed[committed].reshape(-1),
                    )
        # The host slices each request's tokens by the verify width: the bonus token repeats.
        emitted = torch.cat([emitted, emitted[:, -1:].expand(-1, width - emitted.shape[1])], dim=1)
        bonus_tokens = emitted.gather(1, num_correct_drafts[:, None].to(torch.long))[:, 0]
        result = GenerationBatchResult(
            logits_output=logits_output,
            next_token_ids=emitted.reshape(-1).to(torch.int32),
            accept_lens=accept_lens,
            speculative_num_draft_tokens=width,
            cap_lens=None if width == block_size else torch.full_like(accept_lens, width),
            new_seq_lens=new_seq_lens,
            next_draft_input=DFlashDraftInput(bonus_tokens, block_size),
            can_run_cuda_graph=passes.verify_result.can_run_cuda_graph,
            extra_keep_alive_refs=[passes.draft_batch, passes.verify_batch, out_cache_loc],
        )
        if split < width:
            self.tree_gate.observe_step(int(accept_lens.sum()), (time.perf_counter() - started) * 1e3)
        if self.width_policy is not None:  # a CPU step: its acceptance is already known
            self.width_policy.step_finished(bs, TreeStep(width), started, num_correct_drafts.tolist())
        self.profiler.end_step(width, (passes.draft_graph, bool(passes.verify_result.can_run_cuda_graph)))
        return result

    def _decode(self, batch, on_publish) -> GenerationBatchResult:
        self.profiler.begin_step()
        block_size, bs = self.block_size, batch.batch_size()
        sampling_info = batch.sampling_info
        out_cache_loc = block_slots(batch, self.req_to_token_pool.req_to_token, block_size)
        seq_lens = batch.seq_lens
        passes = BlockPasses()
        width = block_size
        started = time.perf_counter()
        if self.width_policy is not None:
            self.width_policy.step_started(started)
        # ForwardBatch.init_new refreshes sampling_info.grammars only later, in the passes.
        grammar = BlockGrammar.of_batch(
            [req.grammar for req in batch.reqs] if batch.has_grammar else None,
            sampling_info.vocab_size,
            mask_drafts=self.mask_drafts,
        )
        sampling = batch_sampling(sampling_info, bs, self.server_args.sampling_backend)
        penalties = step_penalties(batch.reqs, sampling_info.vocab_size, self.device)
        served = self.verify_trees.for_step(bs, sampled=not sampling.all_greedy)
        if served is not None and not tree_step_applies(
            batch, sampling, penalties is not None, grammar is not None
        ):
            served = None
        proposals = None
        if served is not None and served.tree.lookup:
            # The branch where some request has a proposal, the tree alone where none has.
            with self.profiler.phase("draft_ms"):
                proposals = self.lookups.proposals(request_contexts(batch), served.tree.lookup)
            if self.lookup_by_proposal:
                served = self.verify_trees.for_step(bs, not sampling.all_greedy, proposals.step_nodes())
        if self.width_policy is not None:
            # The policy chooses between plain decoding and the tree where a tree may run.
            choice = self.width_policy.choose(bs, None if served is None else TreeStep(served.tree.num_nodes))
            if isinstance(choice, TreeStep):  # trees run at TP 1 only: no ranks to agree with
                return self._decode_tree(
                    batch, on_publish, out_cache_loc, sampling, served, started, proposals
                )
            # Timed per rank, so the ranks' choices can differ: rank 0's is everyone's.
            width = agree_int(choice, self.tp_shard, self.device)
        elif served is not None:
            return self._decode_tree(batch, on_publish, out_cache_loc, sampling, served, started, proposals)
        # Greedy acceptance reads one logits row per committed token; sampling, or anything that
        # changes or reports the logits, needs them all.
        left_alone = logits_left_alone(batch, penalties is not None, grammar is not None)
        deferred = self.deferred_logits if sampling.all_greedy and left_alone else None
        # A greedy step's verify scores the blocks' later columns only for the requests that
        # accepted every draft of the first ones (staged_verify).
        staged = deferred is not None and not batch.return_hidden_states and can_split_batch(batch)
        staged = staged and stages_verify(self.first_pass_columns, width)
        # Verify, draft and inject multiply weights by a few rows: the faster product on CPU.
        few_rows = step_uses_few_row_linears(self.small_batch_linears, width)
        cheap_rows = small_batch_linear.CHEAP_ROWS if few_rows else 1
        # Greedy drafts from a hot vocabulary need only its logits (their argmax, mapped back).
        hot_ids = getattr(self.draft_model, "hot_token_ids", None)
        hot_drafts = self.draft_columns_only and hot_ids is not None and sampling.all_greedy
        hot_drafts = hot_drafts and penalties is None and grammar is None
        # A staged step drafts the columns after its first pass's last draft only for the requests
        # that reach its second pass (a DFlash2 selector chooses every draft at once).
        selector = getattr(self.draft_model, "select_drafts", None)
        later_from = self.first_pass_columns + 1
        draft_later = staged and selector is None and self.draft_columns_only and later_from < width
        later_hidden: torch.Tensor | None = None

        def draft(block: torch.Tensor, positions: torch.Tensor) -> torch.Tensor | HotVocabLogits:
            nonlocal later_hidden
            logit_columns = (1, later_from if draft_later else width) if self.draft_columns_only else None
            output = self._draft_pass(
                passes,
                batch,
                block,
                positions,
                out_cache_loc,
                # Drafts chosen under a grammar may need tokens outside a hot vocabulary.
                full_vocab=grammar is not None and grammar.mask_drafts,
                logit_columns=logit_columns,
                hot_logits=hot_drafts,
                later_columns=(later_from, width) if draft_later else None,
            )
            if draft_later:
                later_hidden, output.hidden_states = output.hidden_states, None
            return (
                HotVocabLogits(output.next_token_logits, hot_ids) if hot_drafts else output.next_token_logits
            )

        def fill_drafts(tokens: torch.Tensor, requests: torch.Tensor) -> None:
            """Greedy drafts of block columns ``later_from ..`` of ``requests``, into ``tokens``."""
            rows = later_hidden.view(bs, width - later_from, -1)[requests].reshape(-1, later_hidden.shape[-1])
            if hot_drafts:
                drafts = hot_ids[self.draft_model.hot_logits(rows).argmax(-1)]
            else:
                drafts = self.draft_model.logits(rows).argmax(-1)
            tokens[requests, later_from:] = drafts.view(len(requests), -1).to(tokens.dtype)

        def target_pass(
            block: torch.Tensor, positions: torch.Tensor, slots: torch.Tensor, requests, start: int, stop: int
        ) -> VerifyPass:
            """One deferred-logits target pass over block columns ``start .. stop - 1`` of ``requests``."""
            pass_batch = batch if start == 0 else request_subset(batch, requests, start)
            forward_batch = self._block_forward_batch(
                pass_batch,
                self.target_worker.model_runner,
                block[requests, start:stop],
                positions.view(bs, -1)[requests, start:stop].reshape(-1),
                slots.view(bs, -1)[requests, start:stop].reshape(-1),
                CaptureHiddenMode.FULL,
                stop - start,
            )
            with deferred.capture():
                result = self.target_worker.forward_batch_generation(
                    batch=None, forward_batch=forward_batch, is_verify=True
                )
            if start == 0:
                passes.verify_batch, passes.verify_result = forward_batch, result
            aux, result.logits_output.hidden_states = result.logits_output.hidden_states, None
            final, logits = deferred.kept()
            return VerifyPass(final, aux, logits)

        staged_result: StagedVerify | None = None

        def verify(
            block: torch.Tensor, positions: torch.Tensor, slots: torch.Tensor
        ) -> tuple[torch.Tensor | Callable[[torch.Tensor, int, int], torch.Tensor], torch.Tensor]:
            nonlocal staged_result
            if staged:
                run_pass = functools.partial(target_pass, block, positions, slots)
                staged_result = staged_verify(
                    block,
                    self.first_pass_columns,
                    run_pass,
                    cheap_rows,
                    self.second_pass,
                    fill_drafts=functools.partial(fill_drafts, block) if draft_later else None,
                )
                self.profiler.count("staged_steps", 1)
                self.profiler.count("second_pass_requests", staged_result.second_pass_requests)
                self.profiler.count("cut_requests", staged_result.cut_requests)
                return staged_result.argmax, staged_result.aux
            passes.verify_batch = self._block_forward_batch(
                batch,
                self.target_worker.model_runner,
                block,
                positions,
                slots,
                CaptureHiddenMode.FULL,
                width,
            )
            with (
                self.final_hidden.collect(batch.return_hidden_states) as final_hidden,
                deferred.capture() if deferred is not None else contextlib.nullcontext(),
            ):
                passes.verify_result = self.target_worker.forward_batch_generation(
                    batch=None, forward_batch=passes.verify_batch, is_verify=True
                )
            logits_output = passes.verify_result.logits_output
            # The captured aux features feed the drafter only; the host sees the final hidden
            # states of the verified rows when a request asked for them (``stride = width``).
            hidden, logits_output.hidden_states = logits_output.hidden_states, final_hidden.get()
            if deferred is not None:
                return deferred.column_argmax(width), hidden
            return logits_output.next_token_logits, hidden

        with small_batch_linears(few_rows):
            step = decode_step(
                StepInputs(
                    bonus_tokens=batch.spec_info.bonus_tokens,
                    seq_lens=seq_lens,
                    out_cache_loc=out_cache_loc,
                    block_size=block_size,
                    mask_token_id=self.mask_token_id,
                    sampling=sampling,
                    verify_width=width,
                    grammar=grammar,
                    penalties=penalties,
                    logit_bias=sampling_info.logit_bias,
                    selector=selector,
                    agree=functools.partial(agree, shard=self.tp_shard) if self.tp_shard.size > 1 else None,
                    cheap_rows=cheap_rows,
                ),
                draft=draft,
                verify=verify,
                inject=self.injector,
                publish=on_publish,
                profiler=self.profiler,
            )
        if self.deferred_logits is not None:
            # Only where a verify can stage (CPU, one rank): reading accept_lens would sync a GPU.
            if staged_result is not None:
                learn_second_pass(self.second_pass, staged_result, step.accept_lens, self.first_pass_columns)
            self.second_pass.observe_step(int(step.accept_lens.sum()), (time.perf_counter() - started) * 1e3)
        if self.width_policy is not None:
            # On CPU the step ran synchronously: its acceptance is already known.
            accepted, judged = judged_acceptance(
                step.num_correct_drafts, staged_result, self.first_pass_columns
            )
            self.width_policy.step_finished(bs, width, started, accepted, judged)
        logits_output = passes.verify_result.logits_output
        if batch.return_logprob:
            committed_logprobs(batch, logits_output, step.emitted)
        result = GenerationBatchResult(
            logits_output=logits_output,
            next_token_ids=step.emitted.reshape(-1).to(torch.int32),
            accept_lens=step.accept_lens,
            # The host slices each request's tokens by this stride; with the policy it is the width.
            speculative_num_draft_tokens=width,
            cap_lens=None if self.width_policy is None else torch.full_like(step.accept_lens, width),
            new_seq_lens=step.new_seq_lens,
            next_draft_input=DFlashDraftInput(step.bonus_tokens, block_size),
            can_run_cuda_graph=passes.verify_result.can_run_cuda_graph,
            extra_keep_alive_refs=[
                r for r in (passes.draft_batch, passes.verify_batch, out_cache_loc) if r is not None
            ],
        )
        self.profiler.end_step(width, (passes.draft_graph, bool(passes.verify_result.can_run_cuda_graph)))
        return result
