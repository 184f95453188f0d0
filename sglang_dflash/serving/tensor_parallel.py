"""The drafter inside the target's tensor-parallel group (``--tp-size`` N).

The drafter is sharded like the target's own layers (Megatron style), not replicated: the draft KV
pool SGLang allocates per rank holds ``max(1, num_key_value_heads // N)`` heads, exactly what a
sharded layer writes, so the pool, the context injection and the attention backends need nothing of
their own; and a replicated 1-8 layer drafter of an 8B+ target would cost every rank the whole
drafter's weights and FLOPs for no saved communication (the block forward is one all-reduce per
attention and MLP either way, as in the target).

- attention: rank r holds query heads ``[r * Hq/N, (r+1) * Hq/N)`` and the matching K/V heads (K/V
  heads are replicated when N > Hkv, as SGLang's ``QKVParallelLinear`` does), so the context K/V a
  rank injects are its own heads; ``o_proj`` holds the matching input columns and its partial sums
  are all-reduced;
- MLP: gate/up rows and down columns ``[r * I/N, (r+1) * I/N)``, all-reduced after ``down_proj``;
- ``fc``, the norms and the context feature are replicated (the captured target hidden states are
  the replicated residual stream on every rank);
- embeddings and logits go through the target's vocabulary-parallel shards: a masked local lookup
  plus all-reduce, and the local logits all-gathered (the host's own padded shard order).

Every rank computes the same block, but the ranks' collectives need not round identically on every
backend, so the drafts and the acceptance decision are taken from rank 0 (:func:`agree`): one
decision, the same everywhere, even if a rank's drafter diverged.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F

from ..config import DFlashConfig, config_error
from ..kernels.small_batch_linear import linear


@dataclasses.dataclass(frozen=True)
class TPShard:
    """This process's place in the tensor-parallel group: ``rank`` of ``size``."""

    rank: int = 0
    size: int = 1

    @classmethod
    def current(cls) -> TPShard:
        """The host's TP group when SGLang built one, else a single rank (tests, the reference)."""
        try:
            from sglang.srt.distributed.parallel_state import (
                get_tensor_model_parallel_rank,
                get_tensor_model_parallel_world_size,
                model_parallel_is_initialized,
            )
        except ImportError:  # the reference drafter runs without SGLang
            return cls()
        if not model_parallel_is_initialized():
            return cls()
        return cls(get_tensor_model_parallel_rank(), get_tensor_model_parallel_world_size())

    def split(self, total: int) -> tuple[int, int]:
        """(start, count) of this rank's equal share of ``total`` (checked divisible at startup)."""
        count = total // self.size
        return self.rank * count, count

    def kv_heads(self, total: int) -> tuple[int, int]:
        """(first, count) of this rank's K/V heads; with more ranks than heads each rank keeps one,
        ``size // total`` ranks sharing it (SGLang's ``QKVParallelLinear`` replication)."""
        if total >= self.size:
            return self.split(total)
        return self.rank * total // self.size, 1


def check_tensor_parallel(config: DFlashConfig, tp_size: int) -> None:
    """Refuse a ``--tp-size`` the drafter's heads or MLP cannot be split into (named, at startup)."""
    heads, kv_heads, inter = config.num_attention_heads, config.num_key_value_heads, config.intermediate_size
    shares = [
        ("num_attention_heads", heads, heads % tp_size == 0),
        ("num_key_value_heads", kv_heads, kv_heads % tp_size == 0 or tp_size % kv_heads == 0),
        ("intermediate_size", inter, inter % tp_size == 0),
    ]
    for field, value, ok in shares:
        if not ok:
            raise config_error(
                f"drafter {field}",
                value,
                f"a multiple of --tp-size={tp_size} (the drafter is sharded with the target's TP group)",
            )


def all_reduce(x: torch.Tensor, shard: TPShard) -> torch.Tensor:
    """Sum a row-parallel layer's partial outputs over the TP group (no-op on one rank)."""
    if shard.size == 1:
        return x
    from sglang.srt.distributed import tensor_model_parallel_all_reduce

    return tensor_model_parallel_all_reduce(x)


def vocab_embedding(input_ids: torch.Tensor, weight: torch.Tensor, shard: TPShard) -> torch.Tensor:
    """Embeddings from this rank's contiguous vocabulary shard ``weight`` [V/N, H], summed over ranks."""
    if shard.size == 1:
        return F.embedding(input_ids, weight)
    per_rank = weight.shape[0]
    local = input_ids - shard.rank * per_rank
    owned = (local >= 0) & (local < per_rank)
    out = F.embedding(local.clamp(0, per_rank - 1), weight) * owned[:, None].to(weight.dtype)
    return all_reduce(out, shard)


def vocab_logits(hidden: torch.Tensor, head: torch.Tensor, shard: TPShard) -> torch.Tensor:
    """[N, V_padded] logits: this rank's shard of the lm_head, all-gathered in shard order."""
    logits = linear(hidden, head)
    if shard.size == 1:
        return logits
    from sglang.srt.distributed import tensor_model_parallel_all_gather

    return tensor_model_parallel_all_gather(logits.contiguous(), dim=-1)


def agree(*tensors: torch.Tensor, shard: TPShard) -> tuple[torch.Tensor, ...]:
    """Rank 0's values of ``tensors`` on every rank (in place; no-op on one rank)."""
    if shard.size == 1:
        return tensors
    from sglang.srt.distributed import get_tp_group

    group = get_tp_group()
    out = []
    for tensor in tensors:
        tensor = tensor.contiguous()
        group.broadcast(tensor, src=0)
        out.append(tensor)
    return tuple(out)


class RowParallelLinear(torch.nn.Module):
    """``y = sum over ranks of x_r @ W_r.T, + bias``: this rank's input columns of a linear layer
    whose input is split over the TP group; the bias is added once, after the all-reduce."""

    def __init__(self, in_features: int, out_features: int, bias: bool, shard: TPShard) -> None:
        super().__init__()
        self.shard = shard
        self.weight = torch.nn.Parameter(torch.zeros(out_features, in_features))
        self.bias = torch.nn.Parameter(torch.zeros(out_features)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = all_reduce(linear(x, self.weight), self.shard)
        return out if self.bias is None else out + self.bias


def agree_int(value: int, shard: TPShard, device: torch.device) -> int:
    """Rank 0's ``value`` on every rank (a per-rank choice such as a timed verify width)."""
    if shard.size == 1:
        return value
    (tensor,) = agree(torch.tensor([value], dtype=torch.int64, device=device), shard=shard)
    return int(tensor.item())
