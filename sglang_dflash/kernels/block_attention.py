"""Split-KV attention of a block of queries per request over [cached prefix ; block]: the verify
(causal in the block) and the drafter's pass (bidirectional in the block) on GPUs.

SGLang's Triton backend runs both with its prefill kernel, one program per (request, head) that
walks the whole cached prefix: with a 16-token block and a short batch most of a GPU idles while a
few programs loop over hundreds of cached tokens.  Here the prefix is split across programs
(flash-decode style) and the block's own keys are attended in a second, small launch that merges
everything by log-sum-exp:

1. :func:`_prefix_partials`: program (request, head, split) attends the block's queries over one
   slice of the request's cached prefix (every prefix key is visible to every block query) and
   writes a normalised partial output and its log-sum-exp (``-inf`` for an empty slice);
2. :func:`_block_and_merge`: program (request, head) merges the slices, attends the queries over
   the block's own keys (causal or not) and merges the two.

:func:`block_attention_splitkv` has the argument list of SGLang's ``extend_attention_fwd`` (the
backend calls it in that kernel's place, see ``serving.plugin``) and returns False, doing nothing,
for what it does not serve (a custom mask, sinks, windows, soft caps, scaled K/V, ragged blocks):
the backend then runs its prefill kernel.  :func:`block_attention_torch` defines the semantics.
Where a server verifies a token tree, causal calls read the block's visibility from an armed mask
(:class:`BlockMasks`) that a tree step fills with the tree's ancestor mask.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - triton ships with torch on Linux
    triton = None

BLOCK_N = 32  # prefix keys per inner iteration
MIN_SPLITS, MAX_SPLITS = 4, 16
KEYS_PER_SPLIT = 256  # the average prefix length each split aims at


def block_attention_torch(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    k_buffer: torch.Tensor,
    v_buffer: torch.Tensor,
    kv_indices: torch.Tensor,
    prefix_lens: list[int],
    causal: bool,
    scale: float,
    block_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """The reference: q [bs * W, Hq, D], the block's k/v [bs * W, Hkv, D], request r's cached keys
    at ``kv_indices`` (consecutive runs of ``prefix_lens``) -> [bs * W, Hq, Dv] in q's dtype.
    ``block_mask`` [W, W] (a causal call only): which block keys each block query sees in place of
    the causal ones (a verify tree's ancestor mask)."""
    width = q.shape[0] // len(prefix_lens)
    group = q.shape[1] // k.shape[1]
    out, start = torch.empty(q.shape[0], q.shape[1], v.shape[2], dtype=q.dtype, device=q.device), 0
    for r, n in enumerate(prefix_lens):
        rows = slice(r * width, (r + 1) * width)
        cached = kv_indices[start : start + n]
        start += n
        keys = torch.cat([k_buffer[cached], k[rows]]).repeat_interleave(group, dim=1).float()
        values = torch.cat([v_buffer[cached], v[rows]]).repeat_interleave(group, dim=1).float()
        scores = torch.einsum("qhd,khd->hqk", q[rows].float(), keys) * scale
        if causal and block_mask is not None:
            hidden = torch.cat([torch.zeros(width, n, dtype=torch.bool), ~block_mask.cpu().bool()], dim=1)
            scores = scores.masked_fill(hidden.to(q.device), float("-inf"))
        elif causal:
            key_pos, query_pos = torch.arange(n + width), n + torch.arange(width)
            scores = scores.masked_fill((key_pos[None, :] > query_pos[:, None]).to(q.device), float("-inf"))
        out[rows] = torch.einsum("hqk,khd->qhd", scores.softmax(-1), values).to(q.dtype)
    return out


def num_splits(prefix_keys: int, bs: int) -> int:
    """Prefix slices per request, from static shapes only (a CUDA graph may be capturing): a power
    of two in [MIN_SPLITS, MAX_SPLITS] near the average prefix over ``KEYS_PER_SPLIT``."""
    average = prefix_keys / max(1, bs)
    splits = MIN_SPLITS
    while splits < MAX_SPLITS and splits * KEYS_PER_SPLIT < average:
        splits *= 2
    return splits


if triton is not None:

    @triton.jit
    def _prefix_partials(
        Q,
        K_Buffer,
        V_Buffer,
        sm_scale,
        qo_indptr,
        kv_indptr,
        kv_indices,
        Part_Out,  # [bs, Hq, splits, BLOCK_Q, BLOCK_DV] float32
        Part_Lse,  # [bs, Hq, splits, BLOCK_Q] float32
        stride_qt,
        stride_qh,
        stride_kt,
        stride_kh,
        stride_vt,
        stride_vh,
        stride_ob,
        stride_oh,
        stride_os,
        stride_ol,
        stride_lb,
        stride_lh,
        stride_ls,
        GROUP: tl.constexpr,
        SPLITS: tl.constexpr,
        BLOCK_Q: tl.constexpr,
        BLOCK_D: tl.constexpr,
        BLOCK_DV: tl.constexpr,
        D: tl.constexpr,
        DV: tl.constexpr,
        BLOCK_N: tl.constexpr,
    ):
        request, head, split = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        kv_head = head // GROUP
        offs_q, offs_d, offs_dv = tl.arange(0, BLOCK_Q), tl.arange(0, BLOCK_D), tl.arange(0, BLOCK_DV)
        q_start = tl.load(qo_indptr + request)
        q_rows = offs_q < tl.load(qo_indptr + request + 1) - q_start
        d_valid, dv_valid = offs_d < D, offs_dv < DV
        kv_start = tl.load(kv_indptr + request)
        prefix_len = tl.load(kv_indptr + request + 1) - kv_start
        per_split = tl.cdiv(tl.cdiv(prefix_len, SPLITS), BLOCK_N) * BLOCK_N
        lo = split * per_split
        hi = tl.minimum(lo + per_split, prefix_len)

        q = tl.load(
            Q + (q_start + offs_q)[:, None] * stride_qt + head * stride_qh + offs_d[None, :],
            mask=q_rows[:, None] & d_valid[None, :],
            other=0.0,
        )
        running_max = tl.zeros([BLOCK_Q], dtype=tl.float32) - float("inf")
        running_sum = tl.zeros([BLOCK_Q], dtype=tl.float32)
        acc = tl.zeros([BLOCK_Q, BLOCK_DV], dtype=tl.float32)
        for start in range(lo, hi, BLOCK_N):
            offs_n = start + tl.arange(0, BLOCK_N)
            keys_valid = offs_n < hi
            slots = tl.load(kv_indices + kv_start + offs_n, mask=keys_valid, other=0)
            k = tl.load(
                K_Buffer + slots[None, :] * stride_kt + kv_head * stride_kh + offs_d[:, None],
                mask=keys_valid[None, :] & d_valid[:, None],
                other=0.0,
            )
            scores = tl.dot(q, k.to(q.dtype)).to(tl.float32) * sm_scale
            scores = tl.where(keys_valid[None, :], scores, float("-inf"))
            v = tl.load(
                V_Buffer + slots[:, None] * stride_vt + kv_head * stride_vh + offs_dv[None, :],
                mask=keys_valid[:, None] & dv_valid[None, :],
                other=0.0,
            )
            new_max = tl.maximum(running_max, tl.max(scores, 1))
            rescale = tl.exp(running_max - new_max)
            p = tl.exp(scores - new_max[:, None])
            acc = acc * rescale[:, None] + tl.dot(p.to(v.dtype), v).to(tl.float32)
            running_sum = running_sum * rescale + tl.sum(p, 1)
            running_max = new_max

        lse_at = Part_Lse + request * stride_lb + head * stride_lh + split * stride_ls + offs_q
        if hi > lo:
            out_at = (
                Part_Out
                + request * stride_ob
                + head * stride_oh
                + split * stride_os
                + offs_q[:, None] * stride_ol
                + offs_dv[None, :]
            )
            tl.store(out_at, acc / running_sum[:, None], mask=q_rows[:, None] & dv_valid[None, :])
            tl.store(lse_at, running_max + tl.log(running_sum), mask=q_rows)
        else:  # an empty slice: its weight in the merge is exp(-inf) = 0
            tl.store(lse_at, tl.zeros([BLOCK_Q], dtype=tl.float32) - float("inf"), mask=q_rows)

    @triton.jit
    def _block_and_merge(
        Part_Out,
        Part_Lse,
        Q,
        K,
        V,
        Out,
        sm_scale,
        qo_indptr,
        stride_ob,
        stride_oh,
        stride_os,
        stride_ol,
        stride_lb,
        stride_lh,
        stride_ls,
        stride_qt,
        stride_qh,
        stride_kt,
        stride_kh,
        stride_vt,
        stride_vh,
        stride_out_t,
        stride_out_h,
        Block_Mask,  # int8 [W, W]: block query i sees block key j where nonzero (HAS_MASK only)
        stride_mask,
        GROUP: tl.constexpr,
        SPLITS: tl.constexpr,
        BLOCK_Q: tl.constexpr,
        BLOCK_D: tl.constexpr,
        BLOCK_DV: tl.constexpr,
        D: tl.constexpr,
        DV: tl.constexpr,
        CAUSAL: tl.constexpr,
        HAS_MASK: tl.constexpr,
    ):
        request, head = tl.program_id(0), tl.program_id(1)
        kv_head = head // GROUP
        offs_q, offs_d, offs_dv = tl.arange(0, BLOCK_Q), tl.arange(0, BLOCK_D), tl.arange(0, BLOCK_DV)
        offs_s = tl.arange(0, SPLITS)
        q_start = tl.load(qo_indptr + request)
        q_rows = offs_q < tl.load(qo_indptr + request + 1) - q_start
        d_valid, dv_valid = offs_d < D, offs_dv < DV

        # (a) the prefix slices, merged by log-sum-exp one at a time (few registers); no prefix at
        # all weighs nothing
        lse_at = Part_Lse + request * stride_lb + head * stride_lh + offs_q
        lse = tl.load(
            lse_at[None, :] + offs_s[:, None] * stride_ls, mask=q_rows[None, :], other=float("-inf")
        )
        prefix_max = tl.max(lse, 0)
        safe_max = tl.where(prefix_max == float("-inf"), 0.0, prefix_max)
        prefix_sum = tl.zeros([BLOCK_Q], dtype=tl.float32)
        prefix_acc = tl.zeros([BLOCK_Q, BLOCK_DV], dtype=tl.float32)
        out_at = (
            Part_Out + request * stride_ob + head * stride_oh + offs_q[:, None] * stride_ol + offs_dv[None, :]
        )
        for split in range(SPLITS):
            weight = tl.exp(tl.load(lse_at + split * stride_ls, mask=q_rows, other=float("-inf")) - safe_max)
            part = tl.load(
                out_at + split * stride_os, mask=(weight > 0)[:, None] & dv_valid[None, :], other=0.0
            )
            prefix_acc += part * weight[:, None]
            prefix_sum += weight
        prefix_out = prefix_acc / tl.maximum(prefix_sum, 1e-30)[:, None]
        prefix_lse = safe_max + tl.log(prefix_sum)  # -inf without a prefix

        # (b) the block's own keys
        rows = q_start + offs_q
        q = tl.load(
            Q + rows[:, None] * stride_qt + head * stride_qh + offs_d[None, :],
            mask=q_rows[:, None] & d_valid[None, :],
            other=0.0,
        )
        k = tl.load(
            K + rows[None, :] * stride_kt + kv_head * stride_kh + offs_d[:, None],
            mask=q_rows[None, :] & d_valid[:, None],
            other=0.0,
        )
        v = tl.load(
            V + rows[:, None] * stride_vt + kv_head * stride_vh + offs_dv[None, :],
            mask=q_rows[:, None] & dv_valid[None, :],
            other=0.0,
        )
        scores = tl.dot(q, k.to(q.dtype)).to(tl.float32) * sm_scale  # [BLOCK_Q queries, BLOCK_Q keys]
        visible = q_rows[None, :] & q_rows[:, None]
        if CAUSAL and HAS_MASK:
            seen = tl.load(
                Block_Mask + offs_q[:, None] * stride_mask + offs_q[None, :], mask=visible, other=0
            )
            visible = visible & (seen != 0)
        elif CAUSAL:
            visible = visible & (offs_q[None, :] <= offs_q[:, None])
        scores = tl.where(visible, scores, float("-inf"))
        block_max = tl.max(scores, 1)
        block_max = tl.where(block_max == float("-inf"), 0.0, block_max)  # padded query rows
        p = tl.exp(scores - block_max[:, None])
        block_sum = tl.sum(p, 1)
        block_out = tl.dot(p.to(v.dtype), v).to(tl.float32) / tl.maximum(block_sum, 1e-30)[:, None]
        block_lse = block_max + tl.log(block_sum)

        # (c) prefix and block, by log-sum-exp
        top = tl.maximum(prefix_lse, block_lse)
        w_prefix, w_block = tl.exp(prefix_lse - top), tl.exp(block_lse - top)
        out = (prefix_out * w_prefix[:, None] + block_out * w_block[:, None]) / (w_prefix + w_block)[:, None]
        tl.store(
            Out + rows[:, None] * stride_out_t + head * stride_out_h + offs_dv[None, :],
            out.to(Out.dtype.element_ty),
            mask=q_rows[:, None] & dv_valid[None, :],
        )


class _Scratch:
    """The partial outputs, one buffer per shape and device, reused at every call so that their
    addresses stay fixed: a captured CUDA graph replays with the pointers it captured.  SGLang
    captures the largest batch first; a buffer outgrown later (an eager batch past the captured
    sizes) is kept alive, since a graph may still write into it."""

    buffers: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}
    outgrown: list[tuple[torch.Tensor, torch.Tensor]] = []

    @classmethod
    def get(cls, bs: int, heads: int, splits: int, block_q: int, block_dv: int, device) -> tuple:
        key = (heads, splits, block_q, block_dv, str(device))
        held = cls.buffers.get(key)
        if held is None or held[0].shape[0] < bs:
            if held is not None:
                cls.outgrown.append(held)
            held = (
                torch.empty(bs, heads, splits, block_q, block_dv, dtype=torch.float32, device=device),
                torch.empty(bs, heads, splits, block_q, dtype=torch.float32, device=device),
            )
            cls.buffers[key] = held
        return held


def _device_key(device: torch.device | str) -> str:
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return str(device)


class BlockMasks:
    """The block visibility of causal calls (the target's verify), where a verify tree is served.

    One int8 [W, W] tensor per device and block width, armed before the target's CUDA graphs are
    captured (``serving.plugin`` arms it when a server names a verify tree), so that every causal
    call reads its block keys' visibility from that tensor at a fixed address, in a graph replay
    too.  It holds the causal mask; a tree step writes the tree's ancestor mask in for its target
    pass and the causal mask back after it (:meth:`holding`)."""

    held: dict[tuple[str, int], tuple[torch.Tensor, torch.Tensor]] = {}  # (armed, its causal value)
    trees_in_place: set[str] = set()

    @classmethod
    def arm(cls, device: torch.device | str, width: int) -> torch.Tensor:
        key = (_device_key(device), width)
        if key not in cls.held:
            causal = torch.ones(width, width, dtype=torch.int8, device=device).tril()
            cls.held[key] = (causal.clone(), causal)
        return cls.held[key][0]

    @classmethod
    def armed(cls, device: torch.device | str, width: int) -> torch.Tensor | None:
        held = cls.held.get((_device_key(device), width))
        return None if held is None else held[0]

    @classmethod
    @contextlib.contextmanager
    def holding(cls, mask: torch.Tensor) -> Iterator[None]:
        """Causal calls of ``mask``'s width on its device see ``mask`` [W, W] (bool) within the block."""
        width, key = mask.shape[0], _device_key(mask.device)
        armed, causal = cls.held.get((key, width), (None, None))
        if armed is None:
            raise RuntimeError(
                f"block attention: no block mask armed for width {width} on {key}; expected one armed "
                "before the target's CUDA graphs were captured (serving.plugin arms it for a verify tree)"
            )
        armed.copy_(mask)
        cls.trees_in_place.add(key)
        try:
            yield
        finally:
            cls.trees_in_place.discard(key)
            armed.copy_(causal)


def _unscaled(scale) -> bool:
    """K/V stored unscaled: a descale of 1 (a float or a one-element tensor on the host)."""
    if scale is None:
        return True
    if isinstance(scale, torch.Tensor):
        return scale.numel() == 1 and scale.device.type == "cpu" and float(scale) == 1.0
    return float(scale) == 1.0


def _serves(
    q_extend, k_extend, v_extend, k_buffer, v_buffer, qo_indptr, custom_mask, sinks, max_len_extend,
    k_scale, v_scale, logit_cap, sliding_window_size, xai_temperature_len,
) -> bool:  # fmt: skip
    """Whether :func:`block_attention_splitkv` serves a call (shapes and flags only)."""
    if triton is None or custom_mask is not None or sinks is not None:
        return False
    if (sliding_window_size or -1) > 0 or (logit_cap or 0) > 0 or (xai_temperature_len or -1) > 0:
        return False
    if not (_unscaled(k_scale) and _unscaled(v_scale)) or q_extend.dim() != 3:
        return False
    bs, width = qo_indptr.shape[0] - 1, int(max_len_extend)
    heads, kv_heads = q_extend.shape[1], k_extend.shape[1]
    if bs < 1 or width < 1 or q_extend.shape[0] != bs * width or heads % kv_heads:
        return False
    return k_buffer.shape[1:] == k_extend.shape[1:] and v_buffer.shape[1:] == v_extend.shape[1:]


def block_attention_splitkv(
    q_extend,
    k_extend,
    v_extend,
    o_extend,
    k_buffer,
    v_buffer,
    qo_indptr,
    kv_indptr,
    kv_indices,
    custom_mask,
    is_causal,
    mask_indptr,
    max_len_extend,
    k_scale=1.0,
    v_scale=1.0,
    sm_scale=None,
    logit_cap=0.0,
    sliding_window_size=-1,
    sinks=None,
    xai_temperature_len=-1,
    **_unused,  # the rest of the host's call (window offsets, max_bs, page size): nothing to serve
) -> bool:
    """In place of SGLang's ``extend_attention_fwd`` (same arguments): the block attention into
    ``o_extend``, True; or False, untouched, for a case it does not serve.

    Served: blocks of one width ``max_len_extend`` per request (``q_extend`` holds ``bs * width``
    rows), causal or bidirectional within the block, no custom mask, sinks, window, soft cap or K/V
    scale; a causal call reads its block's visibility from :class:`BlockMasks` where one is armed
    for its width.  Only shapes are read (no device value), so a CUDA graph can capture it.  A
    causal call it cannot serve while a verify tree's mask is in place raises: the host's kernel
    would attend causally, not by the tree.
    """
    if not _serves(
        q_extend, k_extend, v_extend, k_buffer, v_buffer, qo_indptr, custom_mask, sinks, max_len_extend,
        k_scale, v_scale, logit_cap, sliding_window_size, xai_temperature_len,
    ):  # fmt: skip
        if is_causal and _device_key(q_extend.device) in BlockMasks.trees_in_place:
            raise RuntimeError(
                "block attention: a verify tree's target pass met an attention layer the split-KV "
                "kernel does not serve (a custom mask, sinks, a window, a soft cap, scaled K/V or a "
                "ragged block); expected every layer served: verify the chain "
                "(SGLANG_DFLASH_VERIFY_TREE=off) with this target"
            )
        return False
    bs, width = qo_indptr.shape[0] - 1, int(max_len_extend)
    heads, kv_heads, d = q_extend.shape[1], k_extend.shape[1], q_extend.shape[2]
    dv = v_extend.shape[2]
    block_mask = BlockMasks.armed(q_extend.device, width) if is_causal else None
    splits = num_splits(kv_indices.shape[0], bs)
    block_q = max(16, triton.next_power_of_2(width))  # tl.dot needs 16 rows at least
    block_dv = max(16, triton.next_power_of_2(dv))
    # Sized by this call's batch, not the host's max_bs (its request pool: gigabytes at 16 splits).
    part_out, part_lse = _Scratch.get(bs, heads, splits, block_q, block_dv, q_extend.device)
    scale = d**-0.5 if sm_scale is None else sm_scale
    shapes = dict(
        GROUP=heads // kv_heads,
        SPLITS=splits,
        BLOCK_Q=block_q,
        BLOCK_D=max(16, triton.next_power_of_2(d)),
        BLOCK_DV=block_dv,
        D=d,
        DV=dv,
    )
    k_extend, v_extend = k_extend.contiguous(), v_extend.contiguous()
    part_strides = (*part_out.stride()[:4], *part_lse.stride()[:3])
    _prefix_partials[(bs, heads, splits)](
        q_extend,
        k_buffer,
        v_buffer,
        scale,
        qo_indptr,
        kv_indptr,
        kv_indices,
        part_out,
        part_lse,
        *q_extend.stride()[:2],
        *k_buffer.stride()[:2],
        *v_buffer.stride()[:2],
        *part_strides,
        BLOCK_N=BLOCK_N,
        **shapes,
    )
    _block_and_merge[(bs, heads)](
        part_out,
        part_lse,
        q_extend,
        k_extend,
        v_extend,
        o_extend,
        scale,
        qo_indptr,
        *part_strides,
        *q_extend.stride()[:2],
        *k_extend.stride()[:2],
        *v_extend.stride()[:2],
        *o_extend.stride()[:2],
        q_extend if block_mask is None else block_mask,  # not read without a mask
        width if block_mask is None else block_mask.stride(0),
        CAUSAL=bool(is_causal),
        HAS_MASK=block_mask is not None,
        **shapes,
    )
    return True
