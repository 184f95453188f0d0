"""Per-head RMSNorm + RoPE, optionally scattered into KV-cache slots: one Triton kernel, one PyTorch twin.

Used twice by the SGLang drafter:

- context injection: every draft layer's K of a committed token is ``rope(k_norm(k_proj(c)))``
  written at the token's KV slot, and V is ``v_proj(c)`` written next to it (``values`` given);
- the block's q and k inside the draft forward (no slots: written in place).

``cos_sin`` is SGLang's cache layout: [max_position, D] with cos in the first D/2 columns and sin
in the last D/2 (rotate-half / NeoX convention).  The PyTorch twin defines the semantics; the
kernel is checked against it (on CPU through ``TRITON_INTERPRET=1``).
"""

from __future__ import annotations

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - triton ships with torch on Linux
    triton = None


def norm_rope_torch(
    x: torch.Tensor,
    norm_weight: torch.Tensor,
    positions: torch.Tensor,
    cos_sin: torch.Tensor,
    eps: float,
) -> torch.Tensor:
    """x [N, heads, D] -> rope(rmsnorm(x) * w) in x's dtype (computed in float32, rounded once)."""
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * norm_weight.float()
    half = x.shape[-1] // 2
    cs = cos_sin.index_select(0, positions.long()).float()
    cos, sin = cs[:, None, :half], cs[:, None, half:]
    x1, x2 = xf[..., :half], xf[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)


def write_kv_torch(
    keys: torch.Tensor,
    values: torch.Tensor,
    norm_weight: torch.Tensor,
    positions: torch.Tensor,
    slots: torch.Tensor,
    cos_sin: torch.Tensor,
    k_buffer: torch.Tensor,
    v_buffer: torch.Tensor,
    eps: float,
) -> None:
    """k_buffer[slots] = norm_rope(keys); v_buffer[slots] = values (keys/values [N, heads, D])."""
    k_buffer[slots.long()] = norm_rope_torch(keys, norm_weight, positions, cos_sin, eps).to(k_buffer.dtype)
    v_buffer[slots.long()] = values.to(v_buffer.dtype)


if triton is not None:

    @triton.jit
    def _norm_rope_kernel(
        x_ptr,
        x_stride_tok,
        x_stride_head,
        v_ptr,
        v_stride_tok,
        v_stride_head,
        w_ptr,
        pos_ptr,
        cos_sin_ptr,
        cos_sin_stride,
        slot_ptr,
        out_ptr,
        out_stride_tok,
        out_stride_head,
        vout_ptr,
        vout_stride_tok,
        vout_stride_head,
        eps,
        HALF: tl.constexpr,
        HAS_SLOTS: tl.constexpr,
        HAS_VALUES: tl.constexpr,
    ):
        tok = tl.program_id(0)
        head = tl.program_id(1)
        offs = tl.arange(0, HALF)
        x_row = x_ptr + tok * x_stride_tok + head * x_stride_head
        x1 = tl.load(x_row + offs).to(tl.float32)
        x2 = tl.load(x_row + HALF + offs).to(tl.float32)
        inv_rms = tl.rsqrt((tl.sum(x1 * x1, 0) + tl.sum(x2 * x2, 0)) / (2 * HALF) + eps)
        w1 = tl.load(w_ptr + offs).to(tl.float32)
        w2 = tl.load(w_ptr + HALF + offs).to(tl.float32)
        n1 = x1 * inv_rms * w1
        n2 = x2 * inv_rms * w2
        pos = tl.load(pos_ptr + tok).to(tl.int64)
        cos = tl.load(cos_sin_ptr + pos * cos_sin_stride + offs).to(tl.float32)
        sin = tl.load(cos_sin_ptr + pos * cos_sin_stride + HALF + offs).to(tl.float32)
        o1 = n1 * cos - n2 * sin
        o2 = n2 * cos + n1 * sin
        if HAS_SLOTS:
            row = tl.load(slot_ptr + tok).to(tl.int64)
        else:
            row = tok
        out_row = out_ptr + row * out_stride_tok + head * out_stride_head
        tl.store(out_row + offs, o1.to(out_ptr.dtype.element_ty))
        tl.store(out_row + HALF + offs, o2.to(out_ptr.dtype.element_ty))
        if HAS_VALUES:
            v_row = v_ptr + tok * v_stride_tok + head * v_stride_head
            vout_row = vout_ptr + row * vout_stride_tok + head * vout_stride_head
            tl.store(vout_row + offs, tl.load(v_row + offs).to(vout_ptr.dtype.element_ty))
            tl.store(vout_row + HALF + offs, tl.load(v_row + HALF + offs).to(vout_ptr.dtype.element_ty))


def _check(x: torch.Tensor, norm_weight: torch.Tensor, cos_sin: torch.Tensor) -> int:
    d = x.shape[-1]
    if d % 2 or (d // 2) & (d // 2 - 1):
        raise ValueError(
            f"head_dim={d} is unsupported by the Triton norm+rope kernel; expected 2 * a power of two"
        )
    if x.stride(-1) != 1 or norm_weight.shape != (d,) or cos_sin.shape[1] != d:
        raise ValueError(
            f"norm_rope: bad layouts x{tuple(x.shape)} stride {x.stride()}, "
            f"weight {tuple(norm_weight.shape)}, "
            f"cos_sin {tuple(cos_sin.shape)}"
        )
    return d // 2


def norm_rope_triton(
    x: torch.Tensor,
    norm_weight: torch.Tensor,
    positions: torch.Tensor,
    cos_sin: torch.Tensor,
    eps: float,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Triton twin of :func:`norm_rope_torch` (``out`` may alias ``x`` for an in-place update)."""
    half = _check(x, norm_weight, cos_sin)
    out = torch.empty_like(x) if out is None else out
    n, heads = x.shape[0], x.shape[1]
    if n:
        _norm_rope_kernel[(n, heads)](
            x,
            x.stride(0),
            x.stride(1),
            x,
            0,
            0,
            norm_weight,
            positions,
            cos_sin,
            cos_sin.stride(0),
            positions,
            out,
            out.stride(0),
            out.stride(1),
            out,
            0,
            0,
            eps,
            HALF=half,
            HAS_SLOTS=False,
            HAS_VALUES=False,
        )
    return out


def write_kv_triton(
    keys: torch.Tensor,
    values: torch.Tensor,
    norm_weight: torch.Tensor,
    positions: torch.Tensor,
    slots: torch.Tensor,
    cos_sin: torch.Tensor,
    k_buffer: torch.Tensor,
    v_buffer: torch.Tensor,
    eps: float,
) -> None:
    """Triton twin of :func:`write_kv_torch`: one launch writes K and V of every (token, head)."""
    half = _check(keys, norm_weight, cos_sin)
    n, heads = keys.shape[0], keys.shape[1]
    if n:
        _norm_rope_kernel[(n, heads)](
            keys,
            keys.stride(0),
            keys.stride(1),
            values,
            values.stride(0),
            values.stride(1),
            norm_weight,
            positions,
            cos_sin,
            cos_sin.stride(0),
            slots,
            k_buffer,
            k_buffer.stride(0),
            k_buffer.stride(1),
            v_buffer,
            v_buffer.stride(0),
            v_buffer.stride(1),
            eps,
            HALF=half,
            HAS_SLOTS=True,
            HAS_VALUES=True,
        )
