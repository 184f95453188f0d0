"""The DFlash2 drafter's parts against plain per-position / sequential loops written from the math."""

import pytest
import torch

from sglang_dflash.dflash2 import (
    DFlash2DecoderLayer,
    GroupedBlockConv,
    dense_proposal,
    dflash2_config_for_target,
    grouped_block_conv,
    make_tiny_dflash2_drafter,
    top_candidates,
    walk_lattice,
)
from sglang_dflash.draft_model import DFlashDecoderLayer, rope_inv_freq
from sglang_dflash.testing import tiny_target_config


def loop_conv(x, coefficients, base, block_size):
    """conv_t[c] = sum_{j <= min(T-1, t)} (base[j, c] + coefficients_t[j, c // g]) * x_{t-j}[c], per row."""
    n, h = x.shape
    taps, groups = coefficients.shape[1:]
    g = h // groups
    out = torch.zeros_like(x)
    for row in range(n):
        t = row % block_size
        for j in range(min(taps, t + 1)):
            for c in range(h):
                out[row, c] += (base[j, c] + coefficients[row, j, c // g]) * x[row - j, c]
    return out


@pytest.mark.parametrize("block_size", [5, 8, 16])
@pytest.mark.parametrize("taps", [1, 2, 3])
def test_grouped_conv_matches_the_per_position_loop(block_size, taps):
    gen = torch.Generator().manual_seed(block_size * 10 + taps)
    blocks, groups, g = 3, 3, 4
    x = torch.randn(blocks * block_size, groups * g, generator=gen, dtype=torch.float64)
    coefficients = torch.randn(blocks * block_size, taps, groups, generator=gen, dtype=torch.float64)
    base = torch.randn(taps, groups * g, generator=gen, dtype=torch.float64)
    actual = grouped_block_conv(x, coefficients, base, block_size)
    torch.testing.assert_close(actual, loop_conv(x, coefficients, base, block_size))


@pytest.mark.parametrize("block_size", [5, 8, 16])
def test_no_value_crosses_a_block(block_size):
    """A NaN in one row reaches only the rows after it inside its own block, never the next block."""
    gen = torch.Generator().manual_seed(0)
    taps, blocks, h = 3, 3, 8
    coefficients = torch.randn(blocks * block_size, taps, 2, generator=gen)
    base = torch.randn(taps, h, generator=gen)
    for row in range(blocks * block_size):
        x = torch.randn(blocks * block_size, h, generator=gen)
        x[row, 1] = float("nan")
        bad = (~torch.isfinite(grouped_block_conv(x, coefficients, base, block_size))).any(-1)
        block_end = (row // block_size + 1) * block_size
        expected = torch.zeros_like(bad)
        expected[row : min(row + taps, block_end)] = True
        assert torch.equal(bad, expected), row


def test_rows_must_be_whole_blocks():
    with pytest.raises(ValueError, match="rows is 7; expected a multiple of block_size=4"):
        grouped_block_conv(torch.zeros(7, 4), torch.zeros(7, 2, 1), torch.zeros(2, 4), 4)


def test_identity_convolutions_make_the_layer_a_dflash_layer():
    """Base kernel 1 at tap 0 and no dynamic part: the DFlash2 layer computes exactly the DFlash layer."""
    config = dflash2_config_for_target(tiny_target_config("qwen3"), block_size=4)
    torch.manual_seed(0)
    layer = DFlash2DecoderLayer(config).double()
    with torch.no_grad():
        for conv in (layer.attention_conv, layer.mlp_conv):
            conv.base_kernel.zero_()
            conv.base_kernel[:, 0] = 1.0
            conv.kernel_projection.weight.zero_()
    plain = DFlashDecoderLayer(config.replace(architecture="DFlashDraftModel", **NO_DFLASH2)).double()
    plain.load_state_dict({k: v for k, v in layer.state_dict().items() if "_conv." not in k})
    bs, ctx, block = 2, 5, 4
    x = torch.randn(bs, block, config.hidden_size, dtype=torch.float64)
    positions = torch.arange(ctx, ctx + block)[None].expand(bs, -1)
    kv_shape = (bs, config.num_key_value_heads, ctx, config.head_dim)
    context_kv = (torch.randn(kv_shape, dtype=torch.float64), torch.randn(kv_shape, dtype=torch.float64))
    mask = torch.ones(bs, 1, block, ctx + block, dtype=torch.bool)
    inv_freq = rope_inv_freq(config.head_dim, config.rope_parameters)
    args = (x, positions, context_kv, mask, inv_freq)
    torch.testing.assert_close(layer(*args), plain(*args))
    # And a real convolution changes it (the wiring is live).
    with torch.no_grad():
        layer.mlp_conv.base_kernel[0, 1] = 0.5
    assert not torch.allclose(layer(*args), plain(*args))


NO_DFLASH2 = dict(conv_kernel_size=None, conv_group_size=None, selector_rank=None, selector_top_k=None)


def test_conv_module_sides_use_the_sublayer_input_coefficients():
    config = dflash2_config_for_target(tiny_target_config("qwen3"), conv_kernel_size=3, block_size=4)
    torch.manual_seed(1)
    conv = GroupedBlockConv(config).double()
    with torch.no_grad():
        conv.base_kernel.normal_()
    u, y = (
        torch.randn(8, config.hidden_size, dtype=torch.float64),
        torch.randn(8, config.hidden_size).double(),
    )
    first, after = conv.prepare(u, 4)
    d = conv.kernel_projection(u).view(8, 2, 3, config.conv_num_groups)
    torch.testing.assert_close(first, loop_conv(u, d[:, 0], conv.base_kernel[0], 4))
    torch.testing.assert_close(conv.finish(y, after, 4), loop_conv(y, d[:, 1], conv.base_kernel[1], 4))


def sequential_scores(selector, hidden, candidate_ids, unary, anchor_ids):
    """S_i[j, k] one entry at a time from the codebooks (module docstring of sglang_dflash.dflash2)."""
    bs, n, top_k = candidate_ids.shape
    with torch.no_grad():
        z = hidden.double() @ selector.hidden_projection.weight.double().T
        pred, succ = selector.predecessor_codebook.double(), selector.successor_codebook.double()
    out = torch.zeros(bs, n, top_k, top_k, dtype=torch.float64)
    for b in range(bs):
        for i in range(n):
            for j in range(top_k):
                previous = int(anchor_ids[b]) if i == 0 else int(candidate_ids[b, i - 1, j])
                for k in range(top_k):
                    edge = (pred[previous] * z[b, i] * succ[int(candidate_ids[b, i, k])]).sum()
                    out[b, i, j, k] = unary[b, i, k] + edge
    return out


def sequential_walk(scores, candidate_ids, temperature, uniforms):
    """One row and one position at a time: argmax, or the first slot whose cumulative q exceeds u."""
    bs, n, top_k, _ = scores.shape
    tokens = torch.zeros(bs, n, dtype=torch.long)
    proposals = torch.zeros(bs, n, top_k, dtype=torch.float64)
    for b in range(bs):
        previous = 0
        for i in range(n):
            row = scores[b, i, previous].double()
            if temperature[b] == 0:
                choice = max(range(top_k), key=lambda k: (row[k], -k))
                q = torch.zeros(top_k, dtype=torch.float64)
                q[choice] = 1
            else:
                q = torch.softmax(row / float(temperature[b]), -1)
                cumulative, choice = 0.0, top_k - 1
                for k in range(top_k):
                    cumulative += float(q[k])
                    if cumulative > float(uniforms[b, i]) * float(q.sum()):
                        choice = k
                        break
            tokens[b, i] = candidate_ids[b, i, choice]
            proposals[b, i] = q
            previous = choice
    return tokens, proposals


@pytest.mark.parametrize("family", ["llama", "qwen3"])
def test_lattice_and_walk_match_the_sequential_reference(family):
    target_config = tiny_target_config(family)
    drafter = make_tiny_dflash2_drafter(target_config, seed=3, std=0.5, block_size=6, selector_top_k=5)
    bs, n, h = 4, 5, target_config.hidden_size
    gen = torch.Generator().manual_seed(4)
    hidden = torch.randn(bs, n, h, generator=gen)
    logits = torch.randn(bs, n, target_config.vocab_size, generator=gen) * 3
    anchors = torch.randint(0, target_config.vocab_size, (bs,), generator=gen)
    candidate_ids, unary = top_candidates(logits, drafter.config)
    with torch.no_grad():
        scores = drafter.candidate_selector.lattice(hidden, candidate_ids, unary, anchors)
    expected = sequential_scores(drafter.candidate_selector, hidden, candidate_ids, unary, anchors)
    torch.testing.assert_close(scores.double(), expected, rtol=1e-5, atol=1e-5)
    # Greedy, sampled at two temperatures, and greedy again, in one batch.
    temperature = torch.tensor([0.0, 1.0, 0.6, 0.0])
    uniforms = torch.rand(bs, n, generator=gen, dtype=torch.float64)
    slots, q = walk_lattice(scores, temperature, uniforms)
    tokens = candidate_ids.gather(-1, slots[..., None])[..., 0]
    want_tokens, want_q = sequential_walk(scores, candidate_ids, temperature, uniforms)
    assert torch.equal(tokens, want_tokens)
    torch.testing.assert_close(q, want_q.float())
    # A path that depends on its predecessors: some sampled row leaves slot 0 (the unary argmax).
    assert (slots[1:3] != 0).any()


def test_greedy_walk_follows_the_edges_not_only_the_unary_scores():
    """A strong edge term overrides the unary order: the walk is not top-1 of every position."""
    scores = torch.zeros(1, 2, 2, 2)
    scores[0, 0, 0] = torch.tensor([1.0, 0.0])  # position 1: slot 0 (unary winner)
    scores[0, 1, 0] = torch.tensor([0.0, 5.0])  # after slot 0, position 2 prefers slot 1
    scores[0, 1, 1] = torch.tensor([5.0, 0.0])
    slots, q = walk_lattice(scores, torch.zeros(1), None)
    assert slots.tolist() == [[0, 1]]
    assert q.tolist() == [[[1.0, 0.0], [0.0, 1.0]]]


def test_unary_scores_apply_multiplier_then_softcap():
    config = dflash2_config_for_target(tiny_target_config("qwen3"), selector_top_k=3).replace(
        output_multiplier=0.5, final_logit_softcapping=2.0
    )
    logits = torch.tensor([[-100.0, 0.0, 1.0, 100.0, 3.0] + [-1e4] * 59])
    ids, unary = top_candidates(logits, config)
    assert ids.tolist() == [[3, 4, 2]]
    torch.testing.assert_close(unary, torch.tanh(torch.tensor([[50.0, 1.5, 0.5]]) / 2) * 2)
    uncapped = top_candidates(logits, config.replace(final_logit_softcapping=None))[1]
    torch.testing.assert_close(uncapped, torch.tensor([[50.0, 1.5, 0.5]]))


def test_dense_proposal_is_zero_off_the_candidates():
    q = torch.tensor([[[0.25, 0.75]]])
    dense = dense_proposal(q, torch.tensor([[[5, 2]]]), 8)
    assert dense[0, 0].tolist() == [0, 0, 0.75, 0, 0, 0.25, 0, 0]


def test_block_rows_do_not_depend_on_other_rows_of_the_batch():
    """Each row is its own block: its drafter output is the same alone or batched with others."""
    target_config = tiny_target_config("qwen3")
    drafter = make_tiny_dflash2_drafter(target_config, seed=5, std=0.3, block_size=4, conv_kernel_size=3)
    gen = torch.Generator().manual_seed(6)
    bs, ctx, h = 3, 6, target_config.hidden_size
    cache = drafter.new_cache(bs, "cpu", torch.float32)
    positions = torch.arange(ctx)[None].expand(bs, -1)
    features = torch.randn(bs, ctx, h * drafter.config.num_context_layers, generator=gen)
    drafter.extend_cache(cache, features, torch.ones(bs, ctx, dtype=torch.bool), positions)
    embeds = torch.randn(bs, 4, h, generator=gen)
    block_positions = torch.arange(ctx, ctx + 4)[None].expand(bs, -1)
    with torch.no_grad():
        batched = drafter.draft_block(embeds, block_positions, cache)
        for row in range(bs):
            cache_row = drafter.new_cache(1, "cpu", torch.float32)
            drafter.extend_cache(
                cache_row, features[row : row + 1], torch.ones(1, ctx, dtype=torch.bool), positions[:1]
            )
            alone = drafter.draft_block(embeds[row : row + 1], block_positions[:1], cache_row)
            torch.testing.assert_close(batched[row], alone[0])
