"""Our DFLASH speculative worker for SGLang's spec-v2 scheduler (overlap scheduling on or off).

Per decode step, for a batch of ``bs`` requests and block size ``B``::

    slots    = req_to_token[r, seq_len : seq_len + B]           (reserved by DFlashDraftInput)
    block    = [bonus, MASK x (B-1)]  at positions seq_len .. seq_len+B-1
    drafts   = draft model (TARGET_VERIFY-shaped, bidirectional)  -> B-1 draft tokens / request
    verify   = target (TARGET_VERIFY, causal, FULL aux hidden capture) over [bonus, drafts]
    accept   = greedy prefix / lossless speculative sampling     (sglang_dflash.speculative)
    publish  = on_publish(seq_len + accept_len)                   (the next step may schedule)
    inject   = target hidden of the B verify rows -> draft K/V at the block's slots

Rows past a request's accepted prefix sit beyond its new ``seq_len``: the next block writes its
own K/V over them before anything reads them, so no per-row gather is needed.  Prefill runs the
target with FULL capture and injects every extended token; the drafter does not run.

The acceptance math is :mod:`sglang_dflash.speculative`, the same functions the CPU reference
uses, so the worker is checked against the reference rather than re-derived.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import os
from typing import Callable, Optional

import torch

from sglang.srt.managers.tp_worker import TpModelWorker
from sglang.srt.managers.utils import GenerationBatchResult
from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode, ForwardBatch, ForwardMode
from sglang.srt.speculative.base_spec_worker import BaseSpecWorker

from .. import speculative as spec
from ..config import DFlashConfig
from .inject import ContextInjector
from .spec_inputs import DFlashBlockInput, DFlashDraftInput

logger = logging.getLogger(__name__)


def batch_sampling(sampling_info, bs: int) -> spec.BatchSampling:
    """SGLang's per-request sampling tensors in our conventions (greedy = temperature 0)."""
    top_k = sampling_info.top_ks.to(torch.long)
    temperature = sampling_info.temperatures.view(-1).to(torch.float32)
    return spec.BatchSampling(
        temperature=torch.where(top_k <= 1, torch.zeros_like(temperature), temperature),
        top_p=sampling_info.top_ps.to(torch.float32),
        top_k=top_k,
        min_p=sampling_info.min_ps.to(torch.float32),
        stop_token_ids=torch.full((bs, 1), -1, dtype=torch.long, device=top_k.device),
    )


def apply_logit_bias(logits: torch.Tensor, sampling_info, block_size: int) -> None:
    """Per-request ``logit_bias`` on every block position, as the target's own sampler adds it.

    Penalties and ``min_new_tokens`` depend on the tokens generated so far; requests using them are
    refused (``validation.unsupported_request_option``), so the host's penalizers never run here.
    """
    if sampling_info.logit_bias is not None:
        logits.add_(torch.repeat_interleave(sampling_info.logit_bias, block_size, dim=0))


def draft_server_args(server_args, context_length: int, dtype: torch.dtype):
    """The draft worker's own copy of the target's ServerArgs (the target's stay untouched).

    It gets the target's context length and the target's resolved dtype: SGLang resolves a drafter
    with ``--dtype auto`` from the drafter's config.json alone (float32 or none -> float16), and the
    drafter must run in the target's dtype, since it reads the target's hidden states and embeddings.
    """
    draft_args = copy.deepcopy(server_args)
    draft_args.override("sglang_dflash.draft_worker", context_length=context_length,
                        dtype=str(dtype).removeprefix("torch."))
    return draft_args


def check_draft_dtype(target_dtype: torch.dtype, draft_dtype: torch.dtype) -> None:
    """The drafter's runtime dtype must be the target's (fused projections mix both)."""
    if draft_dtype != target_dtype:
        raise RuntimeError(f"sglang-dflash: the drafter's dtype is {draft_dtype}; "
                           f"expected the target's {target_dtype}")


def choose_drafts(draft_logits: torch.Tensor, sampling: spec.BatchSampling, all_greedy: bool, filters: bool):
    """Draft tokens [bs, B-1] and, for sampled rows, their draft distributions (None when all greedy)."""
    if all_greedy:
        return draft_logits.argmax(-1), None
    probs = spec.sampling_probs(draft_logits, sampling, apply_filters=filters)
    sampled = spec.sample_from(probs)
    return torch.where(sampling.greedy[:, None], draft_logits.argmax(-1), sampled), probs


def accept_block(drafts, draft_probs, target_logits, sampling: spec.BatchSampling, all_greedy: bool, filters: bool):
    """(accepted drafts [bs], emitted [bs, B]): greedy rows by argmax, sampled rows losslessly."""
    greedy_len, greedy_emitted = spec.greedy_accept(drafts, target_logits)
    if all_greedy:
        return greedy_len, greedy_emitted
    target_probs = spec.sampling_probs(target_logits, sampling, apply_filters=filters)
    spec_len, spec_emitted = spec.speculative_sampling_accept(drafts, draft_probs, target_probs)
    greedy = sampling.greedy
    return torch.where(greedy, greedy_len, spec_len), torch.where(greedy[:, None], greedy_emitted, spec_emitted)


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
        raise RuntimeError(f"sglang-dflash: the target {archs[0]}'s captured hidden states (layers "
                           f"{list(dflash.target_layer_ids)}) are {got}; expected [{num_tokens}, {width}]: "
                           "the target model did not capture them for DFLASH")


@dataclasses.dataclass
class StepInputs:
    """What one decode step needs, per request: the pending bonus token, the committed length
    (KV exists for positions < seq_len) and the block's KV slots [bs * B]."""

    bonus_tokens: torch.Tensor
    seq_lens: torch.Tensor
    out_cache_loc: torch.Tensor
    block_size: int
    mask_token_id: int
    sampling: spec.BatchSampling
    all_greedy: bool
    filters: bool


@dataclasses.dataclass
class StepResult:
    accept_len: torch.Tensor  # accepted drafts [bs]
    emitted: torch.Tensor  # [bs, B]: the first accept_len + 1 entries are committed
    bonus: torch.Tensor  # [bs]: the next step's block token
    accept_lens: torch.Tensor  # int32 [bs], accepted drafts + bonus (SGLang's convention)
    new_seq_lens: torch.Tensor


def decode_step(
    inputs: StepInputs,
    draft: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    verify: Callable[[torch.Tensor, torch.Tensor], tuple],
    inject: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], None],
    publish: Optional[Callable[[torch.Tensor], None]] = None,
    profiler: Optional["StepProfiler"] = None,
) -> StepResult:
    """One DFlash step, independent of how the passes run (SGLang runners on GPU, plain PyTorch in tests).

    ``draft(block, positions)`` -> logits [bs * B, V] of every block position;
    ``verify(block, positions)`` -> (target logits [bs * B, V], captured target hidden [bs * B, K*H]);
    ``inject(hidden, positions, slots)`` writes the context K/V of those rows into the draft pool.
    """
    b, bs = inputs.block_size, inputs.seq_lens.shape[0]
    marks = [profiler.mark()] if profiler else None
    positions = (inputs.seq_lens[:, None] + torch.arange(b, device=inputs.seq_lens.device)[None, :]).reshape(-1)

    # 1. Draft: [bonus, MASK x (B-1)] in one bidirectional pass over [context ; block].
    block = spec.build_block(inputs.bonus_tokens.to(torch.long), b, inputs.mask_token_id)
    draft_logits = draft(block, positions).view(bs, b, -1)[:, 1:]
    drafts, draft_probs = choose_drafts(draft_logits, inputs.sampling, inputs.all_greedy, inputs.filters)
    if marks:
        marks.append(profiler.mark())

    # 2. Verify: the target scores [bonus, drafts] in one causal pass and captures context features.
    target_logits, hidden = verify(torch.cat([block[:, :1], drafts], dim=1), positions)
    if marks:
        marks.append(profiler.mark())

    # 3. Accept: the longest matching prefix + bonus (greedy rows) or speculative sampling.
    accept_len, emitted = accept_block(drafts, draft_probs, target_logits.view(bs, b, -1), inputs.sampling,
                                       inputs.all_greedy, inputs.filters)
    accept_lens = (accept_len + 1).to(torch.int32)
    new_seq_lens = inputs.seq_lens + accept_lens
    if publish is not None:
        publish(new_seq_lens)

    # 4. Inject all B rows: rows past a request's accepted prefix lie beyond its new seq_len and
    #    the next block writes its own K/V over them before anything reads them.
    inject(hidden, positions, inputs.out_cache_loc)
    if marks:
        marks.append(profiler.mark())
        profiler.add(marks)
    return StepResult(accept_len, emitted, emitted.gather(1, accept_len[:, None])[:, 0], accept_lens, new_seq_lens)


PROFILE_ENV = "SGLANG_DFLASH_PROFILE"


class StepProfiler:
    """CUDA-event timing of the draft, verify and accept+inject phases of every decode step.

    Enabled by ``SGLANG_DFLASH_PROFILE=path``; events are read once complete (no synchronisation
    in the step) and the running means are rewritten to ``path`` as JSON every 32 steps.
    """

    PHASES = ("draft_ms", "verify_ms", "accept_inject_ms")

    def __init__(self, path: str) -> None:
        self.path, self.pending, self.steps = path, [], 0
        self.totals = dict.fromkeys(self.PHASES, 0.0)

    @staticmethod
    def mark() -> torch.cuda.Event:
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def add(self, events: list) -> None:
        self.pending.append(events)
        while self.pending and self.pending[0][-1].query():
            marks = self.pending.pop(0)
            for name, start, end in zip(self.PHASES, marks, marks[1:]):
                self.totals[name] += start.elapsed_time(end)
            self.steps += 1
            if self.steps % 32 == 0:
                self.write()

    def write(self) -> None:
        stats = {name: total / max(1, self.steps) for name, total in self.totals.items()}
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump({**stats, "steps": self.steps}, f)


class DFlashWorker(BaseSpecWorker):
    """Drop-in for SGLang's DFLASH worker: same constructor, same scheduler contract."""

    def __init__(self, server_args, gpu_id: int, ps, nccl_port: int, target_worker: TpModelWorker) -> None:
        self.server_args = server_args
        self._target_worker = target_worker
        self.device = target_worker.model_runner.device
        self.block_size = int(server_args.speculative_num_draft_tokens)
        # Block size and tensor-parallel size were validated at ServerArgs time (validation.check_server_args).
        self.dflash = DFlashConfig.from_pretrained(server_args.speculative_draft_model_path)
        self.speculative_num_steps = 1
        self.speculative_num_draft_tokens = self.block_size
        target_config = target_worker.model_runner.model_config
        context_len = target_config.context_len
        draft_args = draft_server_args(server_args, context_len, target_config.dtype)
        self._draft_worker = TpModelWorker(server_args=draft_args, gpu_id=gpu_id,
                                           ps=dataclasses.replace(ps, pp_rank=0), nccl_port=nccl_port,
                                           is_draft_worker=True)
        self.draft_runner = self._draft_worker.model_runner
        check_draft_dtype(target_config.dtype, self.draft_runner.model_config.dtype)
        self._draft_worker.draft_runner = self.draft_runner  # the host reads worker.draft_worker.draft_runner
        self._draft_worker.draft_runners = [self.draft_runner]  # BaseSpecWorker weight updates iterate these
        self.draft_model = self.draft_runner.model
        embed, head = target_worker.model_runner.model.get_embed_and_head()
        self.draft_model.set_embed_and_head(embed, head)
        self.draft_model.prepare_rope(context_len + 2 * self.block_size + 8)
        self.mask_token_id = self.dflash.mask_token_id
        self.injector: Optional[ContextInjector] = None
        profile = os.environ.get(PROFILE_ENV)
        self.profiler = StepProfiler(profile) if profile and torch.cuda.is_available() else None
        logger.info("sglang-dflash worker ready: block_size=%d, draft layers=%d, target layers %s",
                    self.block_size, self.dflash.num_hidden_layers, list(self.dflash.target_layer_ids))

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

    def alloc_memory_pool(self, memory_pool_config=None, req_to_token_pool=None, token_to_kv_pool_allocator=None):
        super().alloc_memory_pool(memory_pool_config=memory_pool_config, req_to_token_pool=req_to_token_pool,
                                  token_to_kv_pool_allocator=token_to_kv_pool_allocator)
        self.injector = ContextInjector(self.draft_model, self.draft_runner.token_to_kv_pool)

    def update_weights_from_disk(self, recv_req):
        result = super().update_weights_from_disk(recv_req)
        if self.injector is not None:
            self.injector.refresh()
        return result

    # ------------------------------------------------------------------ the step
    def forward_batch_generation(self, batch, on_publish=None) -> GenerationBatchResult:
        if batch.forward_mode.is_extend() or batch.is_extend_in_batch:
            return self._prefill(batch, on_publish)
        return self._decode(batch, on_publish)

    def _prefill(self, batch, on_publish) -> GenerationBatchResult:
        result = self.target_worker.forward_batch_generation(batch, capture_hidden_mode=CaptureHiddenMode.FULL)
        result.new_seq_lens = batch.seq_lens
        if on_publish is not None:
            on_publish(result.new_seq_lens)
        hidden = result.logits_output.hidden_states
        if batch.extend_lens:
            check_captured_hidden(hidden, self.target_worker.model_runner.model_config, self.dflash,
                                  sum(batch.extend_lens))
            positions = torch.cat([torch.arange(p, p + n) for p, n in zip(batch.prefix_lens, batch.extend_lens)])
            self.injector(hidden, positions.to(self.device, non_blocking=True), batch.out_cache_loc)
        result.logits_output.hidden_states = None  # aux features are not the model's hidden states
        result.next_draft_input = DFlashDraftInput(result.next_token_ids, self.block_size)
        return result

    def _block_forward_batch(self, batch, runner, block: torch.Tensor, positions: torch.Tensor,
                             out_cache_loc: torch.Tensor, capture: CaptureHiddenMode) -> ForwardBatch:
        """A TARGET_VERIFY-shaped forward over one block per request (batch fields are restored by the host)."""
        batch.forward_mode = ForwardMode.TARGET_VERIFY
        batch.input_ids = block.reshape(-1)
        batch.out_cache_loc = out_cache_loc
        batch.spec_info = DFlashBlockInput(batch.input_ids, positions, self.block_size, capture)
        return ForwardBatch.init_new(batch, runner, capture_hidden_mode=capture, return_hidden_states_before_norm=False)

    def _decode(self, batch, on_publish) -> GenerationBatchResult:
        from sglang.kernels.ops.speculative.cache_locs import assign_extend_cache_locs_func

        b, bs = self.block_size, batch.batch_size()
        sampling_info = batch.sampling_info
        seq_lens = batch.seq_lens
        out_cache_loc = assign_extend_cache_locs_func(
            req_pool_indices=batch.req_pool_indices, req_to_token=self.req_to_token_pool.req_to_token,
            start_offset=seq_lens, end_offset=seq_lens + b, batch_size=bs, draft_token_num=b, device=self.device)
        kept = {}  # forward batches and the verify output, for the result and the keep-alive list

        def draft(block: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
            kept["draft_fb"] = self._block_forward_batch(batch, self.draft_runner, block, positions, out_cache_loc,
                                                         CaptureHiddenMode.NULL)
            return self.draft_runner.forward(kept["draft_fb"]).logits_output.next_token_logits

        def verify(block: torch.Tensor, positions: torch.Tensor):
            kept["verify_fb"] = self._block_forward_batch(batch, self.target_worker.model_runner, block, positions,
                                                          out_cache_loc, CaptureHiddenMode.FULL)
            kept["verify"] = self.target_worker.forward_batch_generation(batch=None, forward_batch=kept["verify_fb"],
                                                                         is_verify=True)
            logits_output = kept["verify"].logits_output
            apply_logit_bias(logits_output.next_token_logits, sampling_info, b)
            hidden, logits_output.hidden_states = logits_output.hidden_states, None  # aux features stay internal
            return logits_output.next_token_logits, hidden

        step = decode_step(
            StepInputs(bonus_tokens=batch.spec_info.bonus_tokens, seq_lens=seq_lens, out_cache_loc=out_cache_loc,
                       block_size=b, mask_token_id=self.mask_token_id, sampling=batch_sampling(sampling_info, bs),
                       all_greedy=sampling_info.is_all_greedy,
                       filters=(sampling_info.need_top_k_sampling or sampling_info.need_top_p_sampling
                                or sampling_info.need_min_p_sampling)),
            draft=draft, verify=verify, inject=self.injector, publish=on_publish, profiler=self.profiler)
        return GenerationBatchResult(
            logits_output=kept["verify"].logits_output,
            next_token_ids=step.emitted.reshape(-1).to(torch.int32),
            accept_lens=step.accept_lens,
            speculative_num_draft_tokens=b,
            new_seq_lens=step.new_seq_lens,
            next_draft_input=DFlashDraftInput(step.bonus, b),
            can_run_cuda_graph=kept["verify"].can_run_cuda_graph,
            extra_keep_alive_refs=[kept["draft_fb"], kept["verify_fb"], out_cache_loc],
        )
