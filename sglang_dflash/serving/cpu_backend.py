"""DFLASH on SGLang's CPU device (``--device cpu``, ``torch_native`` attention).

SGLang 0.5.16 serves plain decoding on CPU, but four things stand between it and our DFLASH
worker there; this module fills them, and :mod:`.plugin` installs them as hooks:

- **Server arguments**: the host's DFLASH handler refuses every device but CUDA.  For a CPU
  server :func:`configure_cpu_server_args` applies the same DFLASH settings the host applies
  on CUDA (one step, top-k 1, default running-request cap, no mixed chunks), turns the overlap
  scheduler off as the host does for its other speculative algorithms on CPU
  (:func:`cpu_overlap_setting`), and pins both the target's and the drafter's attention to
  ``torch_native``, the backend this module extends.
- **Block attention**: ``torch_native`` has no TARGET_VERIFY path.  :func:`block_attention`
  runs one block of ``block_size`` queries per request over [cached prefix ; block]: causal
  inside the block for the target's layers, bidirectional for the drafter's ``ENCODER_ONLY``
  layers, sliding windows honoured in both (behind the query; ahead of it too when bidirectional).
- **Grammar masks**: SGLang's xgrammar grammars mask logits on CUDA-like devices only and raise
  on CPU tensors; :func:`sglang_dflash.grammar.apply_bitmask_on_cpu` (xgrammar's own CPU kernel)
  masks them, so JSON-schema, regex and EBNF requests run on a CPU server (plain and DFLASH).
- **Streams**: the overlap scheduler calls ``Tensor.record_stream`` on the relayed draft
  state; on a CPU tensor that raises, while stream lifetimes mean nothing there.
  :func:`allow_record_stream_on_cpu` makes it a no-op for CPU tensors only.

And one for speed: inside a DFLASH decode step the target's linears and lm_head multiply their
weights by a few rows, where ``F.linear`` is 2-3x slower on CPU than the one-row product;
:func:`small_batch_linear_apply` and :func:`small_batch_lm_head` route them through
:mod:`..kernels.small_batch_linear`.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from ..config import config_error
from ..kernels import small_batch_linear

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
# "1" keeps SGLang's overlap scheduler for DFLASH on CPU (default "0": off, as the host turns it off
# for its other speculative algorithms there).
CPU_OVERLAP_ENV = "SGLANG_DFLASH_CPU_OVERLAP"


def is_cpu_device(server_args: ServerArgs) -> bool:
    return str(getattr(server_args, "device", "") or "").startswith("cpu")


def process_serves_on_cpu() -> bool:
    """Whether this process's published ServerArgs say ``--device cpu`` (True when none are
    published, outside a server, where the block attention in use is this module's)."""
    from sglang.srt.server_args import get_global_server_args

    try:
        return is_cpu_device(get_global_server_args())
    except ValueError:  # SGLang's "Global server args is not set yet!"
        return True


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
    if not cpu_overlap_setting() and not server_args.disable_overlap_schedule:
        server_args.disable_overlap_schedule = True
        logger.info("DFLASH on CPU: the overlap scheduler is off (%s=1 keeps it)", CPU_OVERLAP_ENV)


def cpu_overlap_setting() -> bool:
    """``SGLANG_DFLASH_CPU_OVERLAP``: off unless "1".

    On CPU a forward blocks the scheduler, so the overlap scheduler overlaps nothing: it only
    processes each step's result after the next step has run.  The first token then waits for a
    whole decode step after the prefill, and a request that has ended runs one step more, which a
    DFLASH step (a block verify) makes about twice a plain step's price.  Measured on SmolLM2 at
    concurrency 1 (HumanEval, 48 new tokens): a request 7% faster without it, its first token
    after 61 ms instead of 145 (bench/README.md).  The host turns it off on CPU for its own
    speculative algorithms (EAGLE, standalone, NGRAM) for the same reason; its DFLASH handler,
    which this module replaces on CPU, refuses CPU instead.  "1" keeps it (the tests run the
    worker's overlap path, the GPU default, on CPU with it).
    """
    from .worker import env_switch

    return env_switch(CPU_OVERLAP_ENV, default=False)


# ----------------------------------------------------------------------------- block attention
def effective_window(window: int | None, kv_len: int) -> int | None:
    """``window`` (SGLang's ``sliding_window_size``: keys up to that many positions away) or None
    when it hides nothing among ``kv_len`` keys."""
    if window is None or window < 0 or window >= kv_len - 1:
        return None
    return window


def allowed_keys(
    query_pos: torch.Tensor, key_pos: torch.Tensor, causal: bool, window: int | None
) -> torch.Tensor:
    """Which (query, key) position pairs attend (broadcast shapes); ``window`` already effective."""
    allowed = key_pos <= query_pos if causal else torch.ones_like(key_pos <= query_pos)
    if window is not None:
        allowed &= key_pos >= query_pos - window
        if not causal:  # a bidirectional window reaches as far ahead as behind
            allowed &= key_pos <= query_pos + window
    return allowed


def block_attention_mask(
    prefix_len: int, block_size: int, causal: bool, sliding_window: int | None, device: torch.device
) -> torch.Tensor | None:
    """Which keys [0, prefix_len + block_size) each block query (at prefix_len + i) may read; None = all."""
    kv_len = prefix_len + block_size
    window = effective_window(sliding_window, kv_len)
    if window is None and (not causal or block_size == 1):
        return None  # every query reads every key: no mask keeps SDPA on its fused kernel
    query_pos = torch.arange(prefix_len, kv_len, device=device)[:, None]
    key_pos = torch.arange(kv_len, device=device)[None, :]
    return allowed_keys(query_pos, key_pos, causal, window)


@dataclasses.dataclass
class BlockLayout:
    """Where one block forward's keys come from, shared by all its layers (built once per forward).

    Every request's keys [prefix ; block] are laid out from key 0 and padded to the longest,
    ``kv_len = max(prefix_lens) + block_size``, so that one SDPA call covers the whole batch; a
    padded key points at its request's own first slot (a finite value) and every mask hides it.
    """

    slots: torch.Tensor  # [bs * kv_len] pool slots, row-major by request
    kv_len: int
    block_size: int
    prefix_lens: torch.Tensor  # [bs]
    ragged: bool  # some request has fewer than kv_len keys
    masks: dict[tuple[bool, int | None], torch.Tensor | None] = dataclasses.field(default_factory=dict)
    # [block_size, offset + block_size] bool: a verify tree's ancestor mask (sglang_dflash.tree), the
    # rows of this pass's nodes, which replaces causality inside the block for causal layers; None: a chain.
    tree_mask: torch.Tensor | None = None

    @classmethod
    def build(
        cls,
        req_to_token: torch.Tensor,
        req_pool_indices: torch.Tensor,
        prefix_lens: torch.Tensor,
        block_size: int,
        tree_mask: torch.Tensor | None = None,
    ) -> BlockLayout:
        prefix_lens = prefix_lens.to(device=req_to_token.device, dtype=torch.long)
        min_prefix, max_prefix = (int(x) for x in torch.aminmax(prefix_lens))
        kv_len = max_prefix + block_size
        slots = req_to_token[req_pool_indices.to(req_to_token.device, torch.long), :kv_len].to(torch.long)
        ragged = min_prefix != max_prefix
        if ragged:
            valid = torch.arange(kv_len, device=slots.device)[None, :] < (prefix_lens + block_size)[:, None]
            slots = torch.where(valid, slots, slots[:, :1])
        return cls(slots.reshape(-1), kv_len, block_size, prefix_lens, ragged, tree_mask=tree_mask)

    def mask(self, causal: bool, window: int | None) -> torch.Tensor | None:
        """[bs, 1, block_size, kv_len] keys each query may read (None = all; cached per kind)."""
        window = window if window is not None and window > -1 else None
        key = (causal, window)
        if key not in self.masks:
            self.masks[key] = self._build_mask(causal, window)
        return self.masks[key]

    def _build_mask(self, causal: bool, window: int | None) -> torch.Tensor | None:
        bs, block, device = self.prefix_lens.shape[0], self.block_size, self.slots.device
        window = effective_window(window, self.kv_len)
        if causal and self.tree_mask is not None:
            return self._tree_mask(window)
        if window is None and not self.ragged and (not causal or block == 1):
            return None  # every query reads every key of its row: no mask keeps SDPA on its fused kernel
        if bs == 1:  # the single-request layout is the one block_attention_mask has always built
            one = block_attention_mask(int(self.prefix_lens[0]), block, causal, window, device)
            return None if one is None else one[None, None]
        key_pos = torch.arange(self.kv_len, device=device)[None, None, :]  # [1, 1, kv_len]
        query_pos = self.prefix_lens[:, None, None] + torch.arange(block, device=device)[None, :, None]
        allowed = allowed_keys(query_pos, key_pos, causal, window)  # [bs, block, kv_len]
        if not causal:  # a causal query never reaches its row's padding; a bidirectional one would
            allowed = allowed & (key_pos < (self.prefix_lens + block)[:, None, None])
        return allowed.expand(bs, block, self.kv_len)[:, None]

    def _tree_mask(self, window: int | None) -> torch.Tensor:
        """[bs, 1, block, kv_len]: a node reads its request's prefix and its ancestors in the tree.

        ``tree_mask`` [block, offset + block] holds the rows of this pass's nodes over every tree
        column up to its last: a later pass of a staged tree verify (``offset`` > 0) starts past the
        tree's first ``offset`` nodes, which its prefix lengths count but only their descendants read.
        """
        if window is not None:
            raise NotImplementedError("a verify tree over sliding-window target layers is not built")
        block, device = self.block_size, self.slots.device
        tree_mask = self.tree_mask.to(device)
        offset = tree_mask.shape[1] - block
        key_pos = torch.arange(self.kv_len, device=device)[None, None, :]
        column = key_pos - self.prefix_lens[:, None, None] + offset  # the key's tree column
        in_tree = (column >= 0) & (column < offset + block)
        node = torch.arange(block, device=device)[None, :, None]
        ancestor = tree_mask[node, column.clamp(0, offset + block - 1)]  # [bs, block, kv_len]
        return ((column < 0) | (in_tree & ancestor))[:, None]


def block_attention(
    q: torch.Tensor,
    layer: RadixAttention,
    key_buffer: torch.Tensor,
    value_buffer: torch.Tensor,
    req_to_token: torch.Tensor,
    req_pool_indices: torch.Tensor,
    prefix_lens: torch.Tensor,
    block_size: int,
    layout: BlockLayout | None = None,
) -> torch.Tensor:
    """SDPA of ``block_size`` queries per request over [prefix ; block] read from the KV pool.

    q [bs * block_size, heads * D]; the block's own K/V must already be in the pool at
    ``req_to_token[r, prefix_len : prefix_len + block_size]``.  Returns [bs * block_size, heads * Dv].
    One SDPA call for the whole batch over the padded ``layout`` (built here when not given; a
    forward passes the same one to each of its layers).
    """
    from sglang.srt.layers.radix_attention import AttentionType

    if layout is None:
        layout = BlockLayout.build(req_to_token, req_pool_indices, prefix_lens, block_size)
    heads, kv_heads = layer.tp_q_head_num, layer.tp_k_head_num
    dim, v_dim, bs = layer.qk_head_dim, layer.v_head_dim, q.shape[0] // block_size
    causal = layer.attn_type != AttentionType.ENCODER_ONLY and not layer.is_cross_attention
    mask = layout.mask(causal, getattr(layer, "sliding_window_size", None))
    # [bs, kv_len, Hkv, D] gathered once, viewed as [bs, Hkv, kv_len, D]: 4-D inputs take PyTorch's
    # fused CPU attention kernel (the 3-D path is 3-7x slower).
    keys = key_buffer.index_select(0, layout.slots).view(bs, layout.kv_len, kv_heads, dim)
    values = value_buffer.index_select(0, layout.slots).view(bs, layout.kv_len, kv_heads, v_dim)
    attended = F.scaled_dot_product_attention(
        q.view(bs, block_size, heads, dim).transpose(1, 2),
        keys.transpose(1, 2).to(q.dtype),
        values.transpose(1, 2).to(q.dtype),
        attn_mask=mask,
        scale=layer.scaling,
        enable_gqa=heads != kv_heads,
    )  # [bs, heads, block_size, Dv]
    return attended.transpose(1, 2).reshape(-1, heads * v_dim)


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
        layout=forward_layout(self, forward_batch),
    )


_LAYOUT_ATTR = "_sglang_dflash_block_layout"


def forward_layout(backend, forward_batch: ForwardBatch) -> BlockLayout:
    """The block layout of ``forward_batch``, built by its first layer and reused by the others.

    Kept on the backend with the forward batch it belongs to (compared by identity), so a new
    forward, the drafter's or the target's, always builds its own.
    """
    cached = getattr(backend, _LAYOUT_ATTR, None)
    if cached is not None and cached[0] is forward_batch:
        return cached[1]
    layout = BlockLayout.build(
        backend.req_to_token_pool.req_to_token,
        forward_batch.req_pool_indices,
        forward_batch.seq_lens,
        forward_batch.spec_info.draft_token_num,
        tree_mask=getattr(forward_batch.spec_info, "tree_mask", None),
    )
    setattr(backend, _LAYOUT_ATTR, (forward_batch, layout))
    return layout


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


# ----------------------------------------------------------------------------- few-row linears
def small_batch_linear_apply(original, self, layer, x: torch.Tensor, bias: torch.Tensor | None = None):
    """AROUND hook on ``UnquantizedLinearMethod.apply``: the target's linears inside a DFLASH
    decode step take :mod:`..kernels.small_batch_linear`'s product (AMX-packed weights keep the
    host's kernel)."""
    if small_batch_linear.applies(x, layer.weight) and not getattr(layer, "use_intel_amx_backend", False):
        return small_batch_linear.few_row_product(x, layer.weight, bias)
    return original(self, layer, x, bias)


def forget_packed_after(original, self, *args, **kwargs):
    """AROUND hook on the scheduler's ``update_weights_from_*``: the update, then no packed weight
    copy of the old weights is used again (:func:`..kernels.small_batch_linear.forget_packed`)."""
    try:
        return original(self, *args, **kwargs)
    finally:
        small_batch_linear.forget_packed()


def small_batch_lm_head(original, self, hidden_states: torch.Tensor, lm_head, embedding_bias=None):
    """AROUND hook on ``LogitsProcessor._compute_lm_head``: the host's plain lm_head branch
    (``hidden @ weight.T``) inside a DFLASH decode step takes the few-row product; LoRA, quantized,
    AMX-packed heads, an embedding bias and the RL on-policy head keep the host's path."""
    from sglang.srt.layers.logits_processor import should_apply_lm_head_quant_method

    weight = getattr(lm_head, "weight", None)
    plain_head = (
        embedding_bias is None
        and weight is not None
        and not hasattr(lm_head, "set_lora")
        and not getattr(lm_head, "use_intel_amx_backend", False)
        and getattr(self, "rl_on_policy_target", None) is None
    )
    if (
        plain_head
        and small_batch_linear.applies(hidden_states, weight)
        and not should_apply_lm_head_quant_method(lm_head, getattr(lm_head, "quant_method", None))
    ):
        return small_batch_linear.few_row_product(hidden_states, weight)
    return original(self, hidden_states, lm_head, embedding_bias)
