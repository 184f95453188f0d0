"""The objects our worker hands to SGLang between and during steps.

- :class:`DFlashDraftInput` rides on ``batch.spec_info`` between decode steps.  It carries the
  bonus token of every request (the last committed token, whose KV is not written yet) and
  owns the decode KV reservation (``prepare_for_decode``): under the DFLASH name the host calls
  it instead of allocating itself.
- :class:`DFlashBlockInput` is the ``spec_info`` of a TARGET_VERIFY-shaped forward over one
  block per request: the drafter's non-causal pass (its layers are ENCODER_ONLY) and the
  target's causal verify pass.  No custom mask: causality comes from the layers.
"""

from __future__ import annotations

import torch
from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode
from sglang.srt.speculative.spec_info import SpecInput, SpecInputType


class DFlashBlockInput(SpecInput):
    """One block of ``draft_token_num`` (= block_size) tokens per request, at positions
    seq_len .. seq_len + block_size - 1."""

    def __init__(
        self,
        draft_token: torch.Tensor | None,
        positions: torch.Tensor | None,
        draft_token_num: int,
        capture_hidden_mode: CaptureHiddenMode,
        full_vocab: bool = False,
        logit_columns: tuple[int, int] | None = None,
        hot_logits: bool = False,
        later_columns: tuple[int, int] | None = None,
        tree_mask: torch.Tensor | None = None,
    ) -> None:
        super().__init__(SpecInputType.DFLASH_VERIFY)
        self.draft_token = draft_token
        self.positions = positions
        self.draft_token_num = draft_token_num
        self.capture_hidden_mode = capture_hidden_mode
        # A drafter with a hot vocabulary (--speculative-token-map) drafts the whole one this pass.
        self.full_vocab = full_vocab
        # Block columns [start, stop) whose logits the drafter returns (None: every column).  A step
        # reads the drafts' columns only, 1 .. width - 1; CUDA graphs keep every column.
        self.logit_columns = logit_columns
        # A drafter with a hot vocabulary returns its logits over that vocabulary only, [N, K] (the
        # worker drafts greedily and maps the argmax back), not scattered into [N, V] of -inf.
        self.hot_logits = hot_logits
        # Block columns [start, stop) drafted later, by a staged verify for the requests that reach
        # them: the drafter hands back their final states (``hidden_states``) instead of logits.
        self.later_columns = later_columns
        # A verify tree's ancestor mask [n, n] (sglang_dflash.tree): the target's causal layers read
        # a node's ancestors in the block instead of the columns before it (CPU block attention).
        self.tree_mask = tree_mask
        self.custom_mask = None  # causal (target) or bidirectional (ENCODER_ONLY drafter) by layer
        self.num_tokens_per_req = draft_token_num
        self.num_tokens_for_logprob_per_req = draft_token_num
        self.seq_lens_sum = None
        self.seq_lens_cpu = None

    def generate_attn_arg_prefill(
        self,
        req_pool_indices: torch.Tensor,
        paged_kernel_lens: torch.Tensor,
        paged_kernel_lens_sum: int,
        req_to_token: torch.Tensor,
        kv_start_idx: torch.Tensor | None = None,
    ):
        """FlashInfer paged-prefill arguments: every request reads its prefix and its own block."""
        from sglang.kernels.ops.kvcache.kv_indices import create_flashinfer_kv_indices_triton

        n = self.draft_token_num
        bs = len(req_pool_indices)
        device = req_pool_indices.device
        qo_indptr = torch.arange(0, (bs + 1) * n, step=n, dtype=torch.int32, device=device)
        kv_lens = paged_kernel_lens + n
        kv_indptr = torch.zeros(bs + 1, dtype=torch.int32, device=device)
        kv_indptr[1:] = torch.cumsum(kv_lens, dim=0)
        kv_indices = torch.empty(paged_kernel_lens_sum + n * bs, dtype=torch.int32, device=device)
        create_flashinfer_kv_indices_triton[(bs,)](
            req_to_token, req_pool_indices, kv_lens, kv_indptr, kv_start_idx, kv_indices, req_to_token.size(1)
        )
        return kv_indices, kv_indptr, qo_indptr, None


def row_capacity(req_to_token: torch.Tensor, page_size: int) -> int:
    """The KV positions one request can hold: its ``req_to_token`` row, in whole pages."""
    return req_to_token.shape[1] // page_size * page_size


class DFlashDraftInput(SpecInput):
    """Per-request state between decode steps: the bonus token, and the KV reservation policy."""

    # Attributes the FutureMap relay reads on every draft input; DFLASH relays bonus tokens only.
    topk_p = None
    topk_index = None
    hidden_states = None
    draft_probs = None
    positions = None
    capture_hidden_mode = CaptureHiddenMode.NULL

    def __init__(self, bonus_tokens: torch.Tensor, block_size: int) -> None:
        super().__init__(SpecInputType.DFLASH_DRAFT)
        self.bonus_tokens = bonus_tokens
        self.block_size = block_size
        self.future_indices: torch.Tensor | None = None

    # ------------------------------------------------------------------ KV reservation
    def prepare_for_decode(self, batch) -> None:
        """Reserve KV for the next step on the schedule stream, from CPU request state only.

        Same policy as the host's EAGLE path and its memory check (``check_decode_mem``): keep
        ``kv_committed_len + 2 * block_size`` slots allocated (page-rounded).  One block is the
        verify window [seq_len, seq_len + block_size); the second absorbs the one-step lag of
        ``kv_committed_len`` under overlap scheduling.  Rejected slots are reused next step and
        released with the request.
        """
        from sglang.srt.mem_cache.allocation import alloc_for_spec_decode
        from sglang.srt.mem_cache.allocation_sizing import get_alloc_reserve_per_decode

        batch.maybe_evict_swa()
        page = batch.token_to_kv_pool_allocator.page_size
        reserve = get_alloc_reserve_per_decode()
        capacity = row_capacity(batch.req_to_token_pool.req_to_token, page)
        cur_lens, nxt_lens, needed = [], [], 0
        for req in batch.reqs:
            cur = req.kv.kv_allocated_len
            wanted = (req.kv_committed_len + reserve + page - 1) // page * page
            nxt = max(cur, min(wanted, capacity))  # never past the req_to_token row
            cur_lens.append(cur)
            nxt_lens.append(nxt)
            needed += nxt - cur
            req.decode_batch_idx += 1
        cur_cpu = torch.tensor(cur_lens, dtype=torch.int32)
        nxt_cpu = torch.tensor(nxt_lens, dtype=torch.int32)
        alloc_for_spec_decode(
            batch.tree_cache,
            batch.req_to_token_pool,
            reqs=batch.reqs,
            req_pool_indices=batch.req_pool_indices,
            cur_kv_lens=cur_cpu.to(batch.device, non_blocking=True),
            cur_kv_lens_cpu=cur_cpu,
            nxt_kv_lens=nxt_cpu.to(batch.device, non_blocking=True),
            nxt_kv_lens_cpu=nxt_cpu,
            num_needed_tokens=needed,
            batch=batch,
        )

    # ------------------------------------------------------------------ batch surgery
    def filter_batch(
        self,
        new_indices: torch.Tensor,
        has_been_filtered: bool = False,
        new_indices_cpu: list[int] | None = None,
    ) -> None:
        """Keep rows ``new_indices`` of the batch.  Under overlap only ``future_indices`` is safe to
        touch here (the previous forward may still be writing the bonus tokens); the FutureMap
        re-gathers the bonus tokens by those indices on the forward stream.

        ``has_been_filtered`` is the EAGLE convention for state its verify step already compacted
        to the kept rows.  Our worker never compacts ahead, so the rows are always ``new_indices``,
        unless the state already has exactly one row per kept request.
        """
        if self.future_indices is not None:
            self.future_indices = self.future_indices[new_indices]
            return
        if has_been_filtered and len(self.bonus_tokens) == len(new_indices):
            return
        self.bonus_tokens = self.bonus_tokens[new_indices]

    def merge_batch(self, other: DFlashDraftInput) -> None:
        if self.future_indices is not None:
            if other.future_indices is None:
                raise RuntimeError("merging a DFLASH batch with relayed state into one without")
            self.future_indices = torch.cat([self.future_indices, other.future_indices])
            self.future_dsa_topk_indices_available = False
            return
        self.bonus_tokens = torch.cat([self.bonus_tokens, other.bonus_tokens])
