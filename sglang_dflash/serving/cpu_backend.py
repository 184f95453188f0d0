"""DFLASH on SGLang's CPU device (``--device cpu``, ``torch_native`` attention).

SGLang 0.5.16 serves plain decoding on CPU, but four things stand between it and our DFLASH
worker there; this module fills them, and :mod:`.plugin` installs them as hooks:

- **Server arguments**: the host's DFLASH handler refuses every device but CUDA.  For a CPU
  server :func:`configure_cpu_server_args` applies the same DFLASH settings the host applies
  on CUDA (one step, top-k 1, default running-request cap, no mixed chunks) and pins both
  the target's and the drafter's attention to ``torch_native``, the backend this module extends.
- **Block attention**: ``torch_native`` has no TARGET_VERIFY path.  :func:`block_attention`
  runs one block of ``block_size`` queries per request over [cached prefix ; block]: causal
  inside the block for the target's layers, bidirectional for the drafter's ``ENCODER_ONLY``
  layers, sliding windows honoured for causal layers.
- **Grammar masks**: SGLang's xgrammar grammars mask logits on CUDA-like devices only and raise
  on CPU tensors; :func:`sglang_dflash.grammar.apply_bitmask_on_cpu` (xgrammar's own CPU kernel)
  masks them, so JSON-schema, regex and EBNF requests run on a CPU server (plain and DFLASH).
- **Streams**: the overlap scheduler calls ``Tensor.record_stream`` on the relayed draft
  state; on a CPU tensor that raises, while stream lifetimes mean nothing there.
  :func:`allow_record_stream_on_cpu` makes it a no-op for CPU tensors only.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from ..config import config_error

if TYPE_CHECKING:
    from sglang.srt.layers.radix_attention import RadixAttention
    from sglang.srt.model_executor.forward_batch_info import ForwardBatch
    from sglang.srt.server_args import ServerArgs

logger = logging.getLogger(__name__)

CPU_ATTENTION_BACKEND = "torch_native"
# SGLang's own choice on CPU when no backend is given; it has no block-verify path, so DFLASH
# replaces it (with a log line) rather than refusing a flag the user never typed.
HOST_CPU_DEFAULT_BACKEND = "intel_amx"
DEFAULT_MAX_RUNNING_REQUESTS = 48  # the host's DFLASH default


def is_cpu_device(server_args: ServerArgs) -> bool:
    return str(getattr(server_args, "device", "") or "").startswith("cpu")


# ----------------------------------------------------------------------------- server arguments
def configure_cpu_server_args(server_args: ServerArgs) -> None:
    """DFLASH settings for a CPU server; raises for what the CPU path does not support."""
    if getattr(server_args, "enable_dp_attention", False):
        raise config_error("--enable-dp-attention", True, "off for DFLASH on CPU")
    if server_args.pp_size != 1:
        raise config_error("--pp-size", server_args.pp_size, "1 for DFLASH")
    for flag, attr in (
        ("--attention-backend", "attention_backend"),
        ("--speculative-draft-attention-backend", "speculative_draft_attention_backend"),
    ):
        value = getattr(server_args, attr, None)
        if value == HOST_CPU_DEFAULT_BACKEND:
            logger.warning(
                "DFLASH on CPU: %s %s has no block-verify path; using %s", flag, value, CPU_ATTENTION_BACKEND
            )
        elif value not in (None, CPU_ATTENTION_BACKEND):
            raise config_error(
                flag, value, f"{CPU_ATTENTION_BACKEND!r} (or unset) for DFLASH on --device cpu"
            )
        setattr(server_args, attr, CPU_ATTENTION_BACKEND)
    server_args.speculative_num_steps = 1
    server_args.speculative_eagle_topk = 1
    if server_args.max_running_requests is None:
        server_args.max_running_requests = DEFAULT_MAX_RUNNING_REQUESTS
    server_args.enable_mixed_chunk = False


# ----------------------------------------------------------------------------- block attention
def block_attention_mask(
    prefix_len: int, block_size: int, causal: bool, sliding_window: int | None, device: torch.device
) -> torch.Tensor | None:
    """Which keys [0, prefix_len + block_size) each block query (at prefix_len + i) may read; None = all."""
    if not causal:
        return None
    if block_size == 1 and (sliding_window is None or sliding_window < 0 or sliding_window >= prefix_len):
        return None  # one query at the end sees every key: no mask keeps SDPA on its fused kernel
    query_pos = torch.arange(prefix_len, prefix_len + block_size, device=device)[:, None]
    key_pos = torch.arange(prefix_len + block_size, device=device)[None, :]
    allowed = key_pos <= query_pos
    if sliding_window is not None and sliding_window > -1:
        allowed &= key_pos >= query_pos - sliding_window
    return allowed


def block_attention(
    q: torch.Tensor,
    layer: RadixAttention,
    key_buffer: torch.Tensor,
    value_buffer: torch.Tensor,
    req_to_token: torch.Tensor,
    req_pool_indices: torch.Tensor,
    prefix_lens: torch.Tensor,
    block_size: int,
) -> torch.Tensor:
    """SDPA of ``block_size`` queries per request over [prefix ; block] read from the KV pool.

    q [bs * block_size, heads * D]; the block's own K/V must already be in the pool at
    ``req_to_token[r, prefix_len : prefix_len + block_size]``.  Returns [bs * block_size, heads * Dv].
    """
    from sglang.srt.layers.radix_attention import AttentionType

    heads, dim, v_dim = layer.tp_q_head_num, layer.qk_head_dim, layer.v_head_dim
    queries = q.view(-1, block_size, heads, dim)
    out = q.new_empty(queries.shape[0], block_size, heads, v_dim)
    causal = layer.attn_type != AttentionType.ENCODER_ONLY and not layer.is_cross_attention
    window = getattr(layer, "sliding_window_size", None)
    for row, (pool_row, prefix_len) in enumerate(zip(req_pool_indices.tolist(), prefix_lens.tolist())):
        slots = req_to_token[pool_row, : prefix_len + block_size]
        keys = key_buffer[slots].transpose(0, 1).to(q.dtype)
        values = value_buffer[slots].transpose(0, 1).to(q.dtype)
        mask = block_attention_mask(prefix_len, block_size, causal, window, q.device)
        # 4-D inputs: PyTorch's fused CPU attention kernel takes them; the 3-D path is 3-7x slower.
        attended = F.scaled_dot_product_attention(
            queries[row].transpose(0, 1)[None],
            keys[None],
            values[None],
            attn_mask=mask,
            scale=layer.scaling,
            enable_gqa=heads != layer.tp_k_head_num,
        )
        out[row] = attended[0].transpose(0, 1)
    return out.reshape(-1, heads * v_dim)


def is_block_forward(forward_batch: ForwardBatch) -> bool:
    """A TARGET_VERIFY-shaped forward over one DFLASH block per request (drafter or target)."""
    from .spec_inputs import DFlashBlockInput

    return forward_batch.forward_mode.is_target_verify() and isinstance(
        forward_batch.spec_info, DFlashBlockInput
    )


def torch_native_forward_extend(original, self, q, k, v, layer, forward_batch, save_kv_cache=True, **kwargs):
    """AROUND hook on ``TorchNativeAttnBackend.forward_extend``: DFLASH blocks use :func:`block_attention`."""
    if not is_block_forward(forward_batch):
        return original(self, q, k, v, layer, forward_batch, save_kv_cache=save_kv_cache, **kwargs)
    from sglang.srt.mem_cache.memory_pool import KVWriteLoc

    if save_kv_cache and k is not None and v is not None:
        self.token_to_kv_pool.set_kv_buffer(
            layer, KVWriteLoc(forward_batch.out_cache_loc, self.swa_out_cache_loc), k, v
        )
    return block_attention(
        q,
        layer,
        self.token_to_kv_pool.get_key_buffer(layer.layer_id),
        self.token_to_kv_pool.get_value_buffer(layer.layer_id),
        self.req_to_token_pool.req_to_token,
        forward_batch.req_pool_indices,
        forward_batch.seq_lens,
        forward_batch.spec_info.draft_token_num,
    )


# ----------------------------------------------------------------------------- streams
_ORIGINAL_RECORD_STREAM = torch.Tensor.record_stream


def _record_stream(tensor: torch.Tensor, stream) -> None:
    if tensor.device.type == "cpu":
        return  # CPU work is synchronous: there is no stream lifetime to extend
    _ORIGINAL_RECORD_STREAM(tensor, stream)


def allow_record_stream_on_cpu() -> None:
    """Make ``Tensor.record_stream`` a no-op on CPU tensors (GPU tensors keep the real call)."""
    if torch.Tensor.record_stream is not _record_stream:
        torch.Tensor.record_stream = _record_stream
        logger.info("sglang-dflash: Tensor.record_stream is a no-op for CPU tensors in this process")
