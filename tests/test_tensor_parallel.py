"""The drafter sharded over N tensor-parallel ranks computes the single-rank drafter's logits.

N ranks run as N threads of this process: each builds its own sharded drafter (its heads, K/V heads,
MLP rows and vocabulary shard), its own KV pool of ``num_key_value_heads / N`` heads, injects the
same context and drafts the same block; the host's all-reduce and all-gather are replaced by a
barrier that sums / concatenates the ranks' tensors, as gloo or NCCL would.  N = 4 with 2 K/V heads
exercises K/V-head replication.  The multi-process end-to-end test on the real scheduler is
tests/serving/test_dflash_tensor_parallel.py.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("sglang.srt.layers.radix_attention", reason="needs the sglang extra installed")

import sglang.srt.distributed as host_distributed  # noqa: E402
from sglang.srt.model_executor.forward_batch_info import ForwardMode  # noqa: E402
from sglang.srt.model_executor.forward_context import ForwardContext, forward_context  # noqa: E402
from sglang_fakes import POOL_SIZE, TorchBlockAttention, TorchPool  # noqa: E402

from sglang_dflash import save_drafter  # noqa: E402
from sglang_dflash.checkpoint import read_state_dict  # noqa: E402
from sglang_dflash.config import DFlashConfigError  # noqa: E402
from sglang_dflash.serving import tensor_parallel  # noqa: E402
from sglang_dflash.serving.inject import ContextInjector  # noqa: E402
from sglang_dflash.serving.model import DFlashDrafterForSGLang  # noqa: E402
from sglang_dflash.serving.tensor_parallel import TPShard, check_tensor_parallel  # noqa: E402
from sglang_dflash.testing import make_tiny_drafter, tiny_target_config  # noqa: E402

VOCAB, HIDDEN, BLOCK = 48, 32, 4
LENGTHS = [9, 5]


# ----------------------------------------------------------------------------- shard arithmetic
def test_each_rank_takes_an_equal_contiguous_share():
    assert [TPShard(r, 3).split(9) for r in range(3)] == [(0, 3), (3, 3), (6, 3)]


def test_more_ranks_than_kv_heads_replicate_each_head_over_neighbouring_ranks():
    assert [TPShard(r, 4).kv_heads(2) for r in range(4)] == [(0, 1), (0, 1), (1, 1), (1, 1)]
    assert [TPShard(r, 2).kv_heads(2) for r in range(2)] == [(0, 1), (1, 1)]


@pytest.mark.parametrize(
    "tp_size, field",
    [(3, "num_attention_heads is 4"), (8, "num_attention_heads is 4")],
)
def test_a_tp_size_the_heads_do_not_divide_into_is_refused_naming_the_field(tp_size, field):
    config = make_tiny_drafter(tiny_config(), num_layers=1, block_size=BLOCK).config
    with pytest.raises(
        DFlashConfigError, match=f"drafter {field}; expected a multiple of --tp-size={tp_size}"
    ):
        check_tensor_parallel(config, tp_size)


def test_a_tp_size_the_mlp_does_not_divide_into_is_refused():
    config = make_tiny_drafter(tiny_config(), num_layers=1, block_size=BLOCK).config
    with pytest.raises(DFlashConfigError, match="drafter intermediate_size is 66"):
        check_tensor_parallel(config.replace(intermediate_size=66), 4)
    check_tensor_parallel(config, 4)  # 4 heads, 2 K/V heads (replicated), intermediate 64


# ----------------------------------------------------------------------------- N ranks in threads
def tiny_config():
    return tiny_target_config(
        "qwen3", vocab_size=VOCAB, hidden_size=HIDDEN, num_attention_heads=4, num_key_value_heads=2
    )


class FakeGroup:
    """All-reduce (sum) and all-gather over the ranks' threads, in rank order."""

    def __init__(self, size: int) -> None:
        self.size, self.barrier, self.slots = size, threading.Barrier(size), [None] * size
        self.local = threading.local()

    def _exchange(self, x: torch.Tensor) -> list[torch.Tensor]:
        self.slots[self.local.shard.rank] = x
        self.barrier.wait()
        everyone = list(self.slots)
        self.barrier.wait()  # nobody overwrites a slot before all have read it
        return everyone

    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack(self._exchange(x)).sum(0)

    def all_gather(self, x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        return torch.cat(self._exchange(x), dim=dim)


class PerThreadBackend:
    """The forward context is process-global: route each rank's attention to its own pool."""

    def __init__(self) -> None:
        self.local = threading.local()

    def forward(self, *args, **kwargs):
        return self.local.backend.forward(*args, **kwargs)


@pytest.fixture(scope="module")
def drafter_files(tmp_path_factory):
    reference = make_tiny_drafter(
        tiny_config(), seed=5, num_layers=2, block_size=BLOCK, target_layer_ids=[1, 3, 4]
    )
    path = str(tmp_path_factory.mktemp("drafter"))
    save_drafter(reference, path)
    g = torch.Generator().manual_seed(0)
    embed, head = torch.randn(VOCAB, HIDDEN, generator=g), torch.randn(VOCAB, HIDDEN, generator=g) * 0.3
    k = reference.config.num_context_layers * HIDDEN
    feats = [torch.randn(n, k, generator=g) for n in LENGTHS]
    return path, embed, head, feats


def draft_block_logits(path, embed, head, feats, shard: TPShard, backend: PerThreadBackend) -> torch.Tensor:
    """One rank: build, load, inject two requests' contexts, draft one block each; [2, BLOCK, V]."""
    from transformers import AutoConfig

    model = DFlashDrafterForSGLang(AutoConfig.from_pretrained(path))
    model.load_weights(read_state_dict(path).items())
    per_rank = VOCAB // shard.size
    rows = slice(shard.rank * per_rank, (shard.rank + 1) * per_rank)
    model.set_embed_and_head(embed[rows], head[rows])  # the target's vocabulary shards
    cfg = model.dflash
    pool = TorchPool(cfg.num_hidden_layers, model.layers[0].num_kv_heads, cfg.head_dim)
    req_to_token = torch.zeros(3, 32, dtype=torch.long)
    perm = torch.randperm(POOL_SIZE - 1, generator=torch.Generator().manual_seed(1)) + 1
    req_to_token[1, :20], req_to_token[2, :20] = perm[:20], perm[20:40]
    injector = ContextInjector(model, pool, use_triton=False)
    for r, n in enumerate(LENGTHS, start=1):
        injector(feats[r - 1], torch.arange(n), req_to_token[r, :n])
    block = torch.full((2, BLOCK), cfg.mask_token_id)
    block[:, 0] = torch.tensor([5, 17])
    seq_lens = torch.tensor(LENGTHS)
    positions = seq_lens[:, None] + torch.arange(BLOCK)
    fb = SimpleNamespace(
        forward_mode=ForwardMode.TARGET_VERIFY,
        req_pool_indices=torch.tensor([1, 2]),
        seq_lens=seq_lens,
        out_cache_loc=torch.cat([req_to_token[r, n : n + BLOCK] for r, n in enumerate(LENGTHS, start=1)]),
        spec_info=SimpleNamespace(draft_token_num=BLOCK),
    )
    backend.local.backend = TorchBlockAttention(pool, req_to_token)
    with torch.no_grad():
        return model(block.reshape(-1), positions.reshape(-1), fb).next_token_logits.view(2, BLOCK, -1)


def run_ranks(size: int, drafter_files, monkeypatch) -> list[torch.Tensor]:
    group, backend = FakeGroup(size), PerThreadBackend()
    monkeypatch.setattr(TPShard, "current", classmethod(lambda cls: group.local.shard))
    monkeypatch.setattr(host_distributed, "tensor_model_parallel_all_reduce", group.all_reduce)
    monkeypatch.setattr(host_distributed, "tensor_model_parallel_all_gather", group.all_gather)
    results, errors = [None] * size, []

    def rank(r: int) -> None:
        group.local.shard = TPShard(r, size)
        try:
            results[r] = draft_block_logits(*drafter_files, TPShard(r, size), backend)
        except BaseException as error:  # surfaced below; a dead rank would hang the others
            errors.append(error)
            group.barrier.abort()

    with forward_context(ForwardContext(attn_backend=backend)):
        threads = [threading.Thread(target=rank, args=(r,)) for r in range(size)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    if errors:
        raise errors[0]
    return results


@pytest.mark.parametrize("size", [2, 4])
def test_sharded_drafter_logits_equal_the_single_rank_logits(size, drafter_files, monkeypatch):
    (single,) = run_ranks(1, drafter_files, monkeypatch)
    ranks = run_ranks(size, drafter_files, monkeypatch)
    for logits in ranks:
        assert logits.shape == single.shape
        assert torch.allclose(logits, single, atol=1e-5), (logits - single).abs().max()


def test_a_rank_with_the_wrong_heads_changes_the_logits(drafter_files, monkeypatch):
    """The check above can fail: rank 1 loading rank 0's rows gives other logits."""
    original = DFlashDrafterForSGLang.load_weights

    def wrong_rows(self, weights):
        for layer in self.layers:
            layer.first_head = layer.first_kv_head = layer.first_inter = 0
        original(self, weights)

    (single,) = run_ranks(1, drafter_files, monkeypatch)
    monkeypatch.setattr(DFlashDrafterForSGLang, "load_weights", wrong_rows)
    ranks = run_ranks(2, drafter_files, monkeypatch)
    assert not torch.allclose(ranks[0], single, atol=1e-3)


def test_agree_is_a_no_op_on_one_rank():
    drafts = torch.tensor([[3, 4]])
    assert tensor_parallel.agree(drafts, shard=TPShard())[0] is drafts
    assert tensor_parallel.agree_int(5, TPShard(), torch.device("cpu")) == 5
