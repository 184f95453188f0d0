"""The batched CPU block attention (one SDPA call over a padded layout) against one SDPA call per
request, the way ``block_attention`` ran before: ragged prefixes, verify widths 16, 8, 4 and 1,
causal (target) and bidirectional (drafter) layers, each with and without a sliding window, and pages
of one token."""

import pytest
import torch
import torch.nn.functional as F
from sglang_fakes import radix_layer

from sglang_dflash.serving.cpu_backend import BlockLayout, block_attention, block_attention_mask

radix_attention = pytest.importorskip(
    "sglang.srt.layers.radix_attention", reason="needs the sglang extra installed"
)
AttentionType = radix_attention.AttentionType

HEADS, KV_HEADS, DIM = 6, 2, 8


def layer(attn_type=AttentionType.DECODER, window=-1):
    return radix_layer(HEADS, KV_HEADS, DIM, attn_type, window)


def per_request_attention(q, lay, key_buffer, value_buffer, req_to_token, pool_rows, prefix_lens, block):
    """One SDPA call per request over its own [prefix ; block] keys (no padding anywhere)."""
    causal = lay.attn_type != AttentionType.ENCODER_ONLY
    queries = q.view(-1, block, HEADS, DIM)
    rows = []
    for row, (pool_row, prefix) in enumerate(zip(pool_rows.tolist(), prefix_lens.tolist())):
        slots = req_to_token[pool_row, : prefix + block]
        mask = block_attention_mask(prefix, block, causal, lay.sliding_window_size, q.device)
        out = F.scaled_dot_product_attention(
            queries[row].transpose(0, 1)[None],
            key_buffer[slots].transpose(0, 1)[None],
            value_buffer[slots].transpose(0, 1)[None],
            attn_mask=mask,
            scale=lay.scaling,
            enable_gqa=True,
        )
        rows.append(out[0].transpose(0, 1))
    return torch.stack(rows).reshape(-1, HEADS * DIM)


def pool_of(num_rows: int, row_len: int, seed: int):
    """A shuffled pool (pages of one token): no request's slots are contiguous or in order."""
    gen = torch.Generator().manual_seed(seed)
    size = num_rows * row_len + 7
    keys = torch.randn(size, KV_HEADS, DIM, generator=gen)
    values = torch.randn(size, KV_HEADS, DIM, generator=gen)
    req_to_token = torch.randperm(size, generator=gen)[: num_rows * row_len].view(num_rows, row_len)
    return keys, values, req_to_token, gen


@pytest.mark.parametrize("block", [16, 8, 4, 1])
@pytest.mark.parametrize(
    "attn_type,window",
    [
        (AttentionType.DECODER, -1),
        (AttentionType.ENCODER_ONLY, -1),
        (AttentionType.DECODER, 6),
        (AttentionType.ENCODER_ONLY, 6),
    ],
)
def test_one_padded_call_equals_one_call_per_request(block, attn_type, window):
    prefix_lens = torch.tensor([3, 29, 0, 17, 29])  # ragged, with an empty prefix and a tie for longest
    pool_rows = torch.tensor([4, 0, 2, 5, 1])
    keys, values, req_to_token, gen = pool_of(6, 48, seed=block)
    q = torch.randn(len(prefix_lens) * block, HEADS * DIM, generator=gen)
    lay = layer(attn_type, window)
    expected = per_request_attention(q, lay, keys, values, req_to_token, pool_rows, prefix_lens, block)
    got = block_attention(q, lay, keys, values, req_to_token, pool_rows, prefix_lens, block)
    torch.testing.assert_close(got, expected)


def test_a_layout_serves_every_layer_of_a_forward_and_caches_its_masks():
    """Built once per forward: the target's causal layers and a window reuse one slot gather and one
    mask each; the same layout gives what a fresh one gives."""
    prefix_lens, pool_rows, block = torch.tensor([5, 12]), torch.tensor([1, 0]), 4
    keys, values, req_to_token, gen = pool_of(2, 24, seed=0)
    layout = BlockLayout.build(req_to_token, pool_rows, prefix_lens, block)
    assert layout.kv_len == 12 + block and layout.ragged
    causal = layout.mask(True, -1)
    assert layout.mask(True, None) is causal  # "no window" is one kind, however the layer spells it
    assert layout.mask(True, 3) is not causal
    assert causal.shape == (2, 1, block, layout.kv_len)
    # Request 0 (prefix 5): query 0 reads keys 0..5, the padding (keys 9..15) never.
    assert causal[0, 0, 0].nonzero().flatten().tolist() == list(range(6))
    assert causal[0, 0, 3].nonzero().flatten().tolist() == list(range(9))
    q = torch.randn(2 * block, HEADS * DIM, generator=gen)
    for lay in (layer(), layer(window=3), layer(AttentionType.ENCODER_ONLY)):
        torch.testing.assert_close(
            block_attention(q, lay, keys, values, req_to_token, pool_rows, prefix_lens, block, layout=layout),
            block_attention(q, lay, keys, values, req_to_token, pool_rows, prefix_lens, block),
        )


def test_padded_keys_read_the_request_s_own_slots_only():
    """A padded key points at its own request's first slot: it never reads another request's (or an
    unallocated) slot, whose value may be anything, NaN included."""
    prefix_lens, pool_rows, block = torch.tensor([2, 9]), torch.tensor([0, 1]), 4
    keys, values, req_to_token, gen = pool_of(2, 16, seed=1)
    req_to_token[0, 2 + block :] = keys.shape[0] - 1  # the short row's unused tail: a poisoned slot
    keys[-1], values[-1] = float("nan"), float("nan")
    layout = BlockLayout.build(req_to_token, pool_rows, prefix_lens, block)
    assert (keys.shape[0] - 1) not in layout.slots.tolist()
    q = torch.randn(2 * block, HEADS * DIM, generator=gen)
    out = block_attention(q, layer(), keys, values, req_to_token, pool_rows, prefix_lens, block, layout)
    assert torch.isfinite(out).all()


def test_equal_prefixes_of_a_bidirectional_layer_need_no_mask():
    """Nothing to hide: no mask keeps SDPA on its fused kernel (as a single request always had)."""
    layout = BlockLayout.build(torch.arange(64).view(2, 32), torch.tensor([0, 1]), torch.tensor([7, 7]), 8)
    assert not layout.ragged and layout.mask(False, None) is None
    assert layout.mask(True, None) is not None
    single = BlockLayout.build(torch.arange(64).view(2, 32), torch.tensor([1]), torch.tensor([7]), 1)
    assert single.mask(True, None) is None
