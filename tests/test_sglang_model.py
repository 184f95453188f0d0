"""Our SGLang drafter and context injection, run on CPU against the reference drafter.

SGLang's attention backends need a GPU, so a small PyTorch backend stands in for the triton one
with the same TARGET_VERIFY contract: the block's K/V are saved at ``out_cache_loc``, then every
block query attends to the request's prefix slots ``req_to_token[r, :seq_len]`` plus the block,
bidirectionally for ENCODER_ONLY layers.
"""

from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("sglang.srt.layers.radix_attention", reason="needs the sglang extra installed")

from sglang.srt.model_executor.forward_batch_info import ForwardMode
from sglang.srt.model_executor.forward_context import ForwardContext, forward_context
from sglang_fakes import POOL_SIZE, TorchBlockAttention, TorchPool

from sglang_dflash import save_drafter
from sglang_dflash.checkpoint import read_state_dict
from sglang_dflash.serving.inject import ContextInjector
from sglang_dflash.serving.model import DFlashDrafterForSGLang as SGLangDrafter
from sglang_dflash.testing import make_tiny_drafter, tiny_target_config

# Draft-layer attention kinds (config.json fields): the published default, and sliding windows small
# enough to hide part of the test's contexts (9 and 5 tokens), causal (a sliding layer's default)
# and bidirectional (``is_causal: false``, z-lab's DFlash2 layout).
LAYER_KINDS = {
    "full": {},
    "sliding causal": {"layer_types": ["sliding_attention", "full_attention"], "sliding_window": 4},
    "sliding bidirectional": {
        "layer_types": ["sliding_attention", "sliding_attention"],
        "sliding_window": 3,
        "is_causal": False,
    },
}


def load_pair(tmp_path_factory, **config_fields):
    """A random reference drafter and our SGLang drafter loaded from the same file, plus the
    shared embedding and head."""
    from transformers import AutoConfig

    target_cfg = tiny_target_config(
        "qwen3", vocab_size=48, hidden_size=32, num_attention_heads=4, num_key_value_heads=2
    )
    reference = make_tiny_drafter(
        target_cfg, seed=5, num_layers=2, block_size=4, target_layer_ids=[1, 3, 4], **config_fields
    )
    path = str(tmp_path_factory.mktemp("drafter"))
    save_drafter(reference, path)
    model = SGLangDrafter(AutoConfig.from_pretrained(path))
    model.load_weights(read_state_dict(path).items())
    model.eval()
    g = torch.Generator().manual_seed(0)
    embed, head = torch.randn(48, 32, generator=g), torch.randn(48, 32, generator=g) * 0.3
    model.set_embed_and_head(embed, head)
    return reference, model, embed, head


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    return load_pair(tmp_path_factory)


@pytest.fixture(scope="module", params=list(LAYER_KINDS))
def any_pair(request, tmp_path_factory):
    return load_pair(tmp_path_factory, **LAYER_KINDS[request.param])


def committed_context(reference, lengths, seed=1):
    """Random target features for two requests plus a shuffled slot table."""
    g = torch.Generator().manual_seed(seed)
    k = reference.config.num_context_layers * reference.config.hidden_size
    feats = [torch.randn(n, k, generator=g) for n in lengths]
    perm = torch.randperm(POOL_SIZE - 1, generator=g) + 1
    req_to_token = torch.zeros(3, 32, dtype=torch.long)
    req_to_token[1, :20], req_to_token[2, :20] = perm[:20], perm[20:40]
    return feats, req_to_token


@torch.no_grad()
def test_injected_context_kv_equals_the_reference_context_kv(pair):
    reference, model, _, _ = pair
    cfg = reference.config
    pool = TorchPool(cfg.num_hidden_layers, cfg.num_key_value_heads, cfg.head_dim)
    feats, req_to_token = committed_context(reference, [7])
    slots = req_to_token[1, :7]
    ContextInjector(model, pool, use_triton=False)(feats[0], torch.arange(7), slots)
    expected = reference.context_kv(reference.project_context(feats[0][None]), torch.arange(7)[None])
    for layer, (k, v) in enumerate(expected):
        assert torch.allclose(pool.k[layer][slots], k[0].transpose(0, 1), atol=1e-5)
        assert torch.allclose(pool.v[layer][slots], v[0].transpose(0, 1), atol=1e-5)


@pytest.mark.parametrize("use_triton", [False, True])
@torch.no_grad()
def test_block_logits_equal_the_reference(any_pair, use_triton):
    """Inject two requests' contexts, run one block each through our SGLang model: same logits,
    for full, sliding causal and sliding bidirectional draft layers (every block column, the drafts'
    columns only, and those over a hot vocabulary only; the later columns' final states)."""
    reference, model, embed, head = any_pair
    cfg = reference.config
    lengths = [9, 5]
    pool = TorchPool(cfg.num_hidden_layers, cfg.num_key_value_heads, cfg.head_dim)
    feats, req_to_token = committed_context(reference, lengths)
    injector = ContextInjector(model, pool, use_triton=use_triton)
    for r, n in enumerate(lengths, start=1):
        injector(feats[r - 1], torch.arange(n), req_to_token[r, :n])

    block_size = cfg.block_size
    bonus_tokens = torch.tensor([5, 17])
    block = torch.full((2, block_size), cfg.mask_token_id)
    block[:, 0] = bonus_tokens
    seq_lens = torch.tensor(lengths)
    positions = seq_lens[:, None] + torch.arange(block_size)
    out_cache_loc = torch.cat([req_to_token[r, n : n + block_size] for r, n in enumerate(lengths, start=1)])
    fb = SimpleNamespace(
        forward_mode=ForwardMode.TARGET_VERIFY,
        req_pool_indices=torch.tensor([1, 2]),
        seq_lens=seq_lens,
        out_cache_loc=out_cache_loc,
        spec_info=SimpleNamespace(draft_token_num=block_size),
    )
    with forward_context(ForwardContext(attn_backend=TorchBlockAttention(pool, req_to_token))):
        got = model(block.reshape(-1), positions.reshape(-1), fb).next_token_logits.view(2, block_size, -1)
        fb.spec_info.logit_columns = (1, 3)  # a width-3 step reads its two drafts' columns only
        drafts_only = model(block.reshape(-1), positions.reshape(-1), fb).next_token_logits
        fb.spec_info.later_columns = (3, block_size)  # a staged step drafts columns 3.. later
        later = model(block.reshape(-1), positions.reshape(-1), fb).hidden_states
        del fb.spec_info.later_columns
        hot = torch.tensor([2, 5, 17, 30])
        model.set_hot_vocab(hot)
        try:  # a greedy pass over a hot vocabulary asks for its logits alone
            fb.spec_info.hot_logits = True
            hot_only = model(block.reshape(-1), positions.reshape(-1), fb).next_token_logits
        finally:
            model.set_hot_vocab(None)
    assert drafts_only.shape == (2 * 2, got.shape[-1])
    assert torch.allclose(drafts_only.view(2, 2, -1), got[:, 1:3], atol=1e-5)
    assert later.shape == (2 * (block_size - 3), cfg.hidden_size)  # their final states, for the lm_head
    assert torch.allclose(model.logits(later).view(2, block_size - 3, -1), got[:, 3:], atol=1e-5)
    assert hot_only.shape == (2 * 2, 4)
    assert torch.allclose(hot_only.view(2, 2, -1), got[:, 1:3, hot], atol=1e-5)

    for r, n in enumerate(lengths):
        cache = reference.new_cache(1, "cpu", torch.float32)
        reference.extend_cache(
            cache, feats[r][None], torch.ones(1, n, dtype=torch.bool), torch.arange(n)[None]
        )
        hidden = reference.draft_block(embed[block[r : r + 1]], positions[r : r + 1], cache)
        assert torch.allclose(got[r], hidden[0] @ head.T, atol=1e-4), (
            (got[r] - hidden[0] @ head.T).abs().max()
        )


def test_load_weights_rejects_a_wrong_checkpoint(pair):
    reference, model, _, _ = pair
    state = {k: v for k, v in reference.state_dict().items() if k != "norm.weight"}
    with pytest.raises(ValueError, match="norm.weight"):
        model.load_weights(state.items())


def test_context_kv_weight_stacks_every_layers_k_and_v_rows(pair):
    reference, model, _, _ = pair
    w = model.context_kv_weight()
    kv = reference.config.num_key_value_heads * reference.config.head_dim
    assert w.shape == (2 * 2 * kv, reference.config.hidden_size)
    assert torch.equal(w[:kv], reference.layers[0].self_attn.k_proj.weight)
    assert torch.equal(w[3 * kv :], reference.layers[1].self_attn.v_proj.weight)


def test_drafter_weights_and_outputs_carry_no_autograd_state(pair):
    reference, model, _, _ = pair
    assert not any(p.requires_grad for p in model.parameters())
    k = reference.config.num_context_layers * reference.config.hidden_size
    assert not model.project_context(torch.randn(3, k)).requires_grad


def test_load_weights_skips_rope_buffers(pair):
    reference, model, _, _ = pair
    state = {**reference.state_dict(), "layers.0.self_attn.rotary_emb.inv_freq": torch.ones(4)}
    model.load_weights(state.items())
    assert torch.equal(model.fc.weight, reference.fc.weight)


def test_a_hot_vocabulary_computes_its_rows_only_and_leaves_every_other_token_undraftable(pair):
    """``--speculative-token-map``: the map's logits equal the full head's, every other one is -inf
    (no sampler or argmax drafts it), the map's own logits alone draft the same greedy tokens, a
    grammar-masked pass can still ask for the whole vocabulary, and dropping the map restores the
    full head."""
    _, model, _, head = pair
    hidden = torch.randn(5, head.shape[1], generator=torch.Generator().manual_seed(3))
    full = model.logits(hidden)
    hot = torch.tensor([3, 7, 20, 41])
    cold = torch.ones(full.shape[1], dtype=torch.bool)
    cold[hot] = False
    original = head.clone()
    model.set_hot_vocab(hot[[3, 0, 2, 1]])  # any order: kept increasing
    try:
        assert model.hot_token_ids.tolist() == hot.tolist()
        got = model.logits(hidden)
        assert torch.allclose(got[:, hot], full[:, hot], atol=1e-6)
        assert torch.isneginf(got[:, cold]).all()
        assert set(got.argmax(-1).tolist()) <= set(hot.tolist())
        # The hot logits alone (a greedy draft pass): the same values, the same argmax once mapped.
        assert torch.equal(model.hot_logits(hidden), got[:, hot])
        assert torch.equal(hot[model.hot_logits(hidden).argmax(-1)], got.argmax(-1))
        assert torch.equal(model.logits(hidden, full_vocab=True), full)
        head.add_(1.0)  # the target's weights change (update_weights_from_disk) ...
        stale = model.logits(hidden)[:, hot]
        rows_at = model._hot_head.data_ptr()
        model.set_hot_vocab(model.hot_token_ids)  # ... and the worker takes the rows again,
        assert model._hot_head.data_ptr() == rows_at  # in place (a captured CUDA graph reads them)
        assert torch.allclose(model.logits(hidden)[:, hot], hidden @ head[hot].T, atol=1e-5)
        assert not torch.allclose(stale, hidden @ head[hot].T, atol=1e-3)
    finally:
        head.copy_(original)
        model.set_hot_vocab(None)
    assert torch.equal(model.logits(hidden), full)
