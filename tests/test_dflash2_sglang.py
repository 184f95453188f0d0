"""Our DFlash2 SGLang model on CPU against the reference DFlash2 drafter (as test_sglang_model.py does
for DFlash): same block logits, same drafts and proposals from the selector, the right class per file."""

from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("sglang.srt.layers.radix_attention", reason="needs the sglang extra installed")

from sglang.srt.model_executor.forward_batch_info import ForwardMode
from sglang.srt.model_executor.forward_context import ForwardContext, forward_context
from sglang_fakes import POOL_SIZE, TorchBlockAttention, TorchPool

from sglang_dflash import SamplingParams, save_drafter
from sglang_dflash.checkpoint import read_state_dict
from sglang_dflash.config import DFlashConfigError
from sglang_dflash.dflash2 import make_tiny_dflash2_drafter
from sglang_dflash.serving.dflash2_model import DFlash2DrafterForSGLang
from sglang_dflash.serving.inject import ContextInjector
from sglang_dflash.serving.model import DFlashDrafterForSGLang
from sglang_dflash.speculative import BatchSampling
from sglang_dflash.testing import make_tiny_drafter, tiny_target_config

BLOCK = 5


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    from transformers import AutoConfig

    target_cfg = tiny_target_config(
        "qwen3", vocab_size=48, hidden_size=32, num_attention_heads=4, num_key_value_heads=2
    )
    reference = make_tiny_dflash2_drafter(
        target_cfg, seed=5, std=0.3, num_layers=2, block_size=BLOCK, target_layer_ids=[1, 3, 4],
        conv_kernel_size=3, conv_group_size=8, selector_top_k=6, selector_rank=4,
    )  # fmt: skip
    reference.config = reference.config.replace(input_embedding_scale=1.5, final_logit_softcapping=5.0)
    path = str(tmp_path_factory.mktemp("dflash2-drafter"))
    save_drafter(reference, path)
    model = DFlash2DrafterForSGLang(AutoConfig.from_pretrained(path))
    model.load_weights(read_state_dict(path).items())
    model.eval()
    g = torch.Generator().manual_seed(0)
    embed, head = torch.randn(48, 32, generator=g), torch.randn(48, 32, generator=g) * 0.3
    model.set_embed_and_head(embed, head)
    return reference, model, embed, head


@torch.no_grad()
def run_blocks(reference, model, lengths, bonus):
    """Inject random contexts for len(lengths) requests and run one block each through the SGLang model."""
    cfg = reference.config
    g = torch.Generator().manual_seed(1)
    feats = [torch.randn(n, cfg.num_context_layers * cfg.hidden_size, generator=g) for n in lengths]
    perm = torch.randperm(POOL_SIZE - 1, generator=g) + 1
    req_to_token = torch.zeros(len(lengths) + 1, 32, dtype=torch.long)
    for r in range(len(lengths)):
        req_to_token[r + 1, :20] = perm[20 * r : 20 * (r + 1)]
    pool = TorchPool(cfg.num_hidden_layers, cfg.num_key_value_heads, cfg.head_dim)
    injector = ContextInjector(model, pool, use_triton=False)
    for r, n in enumerate(lengths, start=1):
        injector(feats[r - 1], torch.arange(n), req_to_token[r, :n])
    block = torch.full((len(lengths), BLOCK), cfg.mask_token_id)
    block[:, 0] = torch.tensor(bonus)
    seq_lens = torch.tensor(lengths)
    positions = seq_lens[:, None] + torch.arange(BLOCK)
    out_cache_loc = torch.cat([req_to_token[r, n : n + BLOCK] for r, n in enumerate(lengths, start=1)])
    fb = SimpleNamespace(
        forward_mode=ForwardMode.TARGET_VERIFY,
        batch_size=len(lengths),
        req_pool_indices=torch.arange(1, len(lengths) + 1),
        seq_lens=seq_lens,
        out_cache_loc=out_cache_loc,
        spec_info=SimpleNamespace(draft_token_num=BLOCK),
    )
    with forward_context(ForwardContext(attn_backend=TorchBlockAttention(pool, req_to_token))):
        logits = model(block.reshape(-1), positions.reshape(-1), fb).next_token_logits
    return feats, block, positions, logits.view(len(lengths), BLOCK, -1)


@torch.no_grad()
def reference_hidden(reference, feats, block, positions, embed):
    out = []
    for r, f in enumerate(feats):
        n = f.shape[0]
        cache = reference.new_cache(1, "cpu", torch.float32)
        reference.extend_cache(cache, f[None], torch.ones(1, n, dtype=torch.bool), torch.arange(n)[None])
        out.append(reference.draft_block(embed[block[r : r + 1]], positions[r : r + 1], cache)[0])
    return torch.stack(out)


def test_block_logits_equal_the_reference(pair):
    reference, model, embed, head = pair
    feats, block, positions, got = run_blocks(reference, model, [9, 5, 7], [5, 17, 30])
    hidden = reference_hidden(reference, feats, block, positions, embed)
    torch.testing.assert_close(got, hidden @ head.T, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("kind", ["greedy", "mixed"])
@torch.no_grad()
def test_selector_drafts_equal_the_reference_proposals(pair, kind):
    reference, model, embed, head = pair
    feats, block, positions, logits = run_blocks(reference, model, [9, 5, 7], [5, 17, 30])
    temps = [0.0, 0.0, 0.0] if kind == "greedy" else [0.0, 1.0, 0.7]
    params = [SamplingParams(temperature=t, seed=11 + i) for i, t in enumerate(temps)]
    sampling = BatchSampling.from_params(params)
    draws = sampling.draws(torch.tensor([10, 6, 8]))
    drafts, q = model.select_drafts(logits[:, 1:], block[:, 0], sampling, draws)
    hidden = reference_hidden(reference, feats, block, positions, embed)
    head_module = torch.nn.Linear(32, 48, bias=False)
    head_module.weight.copy_(head)
    want_drafts, want_q = reference.propose(hidden[:, 1:], block[:, 0], head_module, sampling, draws)
    assert torch.equal(drafts, want_drafts)
    if kind == "greedy":
        assert q is None and want_q is None
    else:
        torch.testing.assert_close(q, want_q, atol=1e-5, rtol=1e-4)
        assert ((q > 0).sum(-1) <= reference.config.selector_top_k).all()  # sparse: K candidates at most


def test_each_class_refuses_the_other_generation(pair, tmp_path):
    from transformers import AutoConfig

    reference, _, _, _ = pair
    save_drafter(reference, str(tmp_path / "d2"))
    with pytest.raises(DFlashConfigError, match=r"architectures is \['DFlash2DraftModel'\]"):
        DFlashDrafterForSGLang(AutoConfig.from_pretrained(str(tmp_path / "d2")))
    save_drafter(make_tiny_drafter(tiny_target_config("qwen3", vocab_size=48), seed=0), str(tmp_path / "d1"))
    with pytest.raises(DFlashConfigError, match=r"architectures is \['DFlashDraftModel'\]"):
        DFlash2DrafterForSGLang(AutoConfig.from_pretrained(str(tmp_path / "d1")))


def test_load_weights_names_a_missing_selector_tensor(pair):
    reference, model, _, _ = pair
    state = {k: v for k, v in reference.state_dict().items() if k != "candidate_selector.successor_codebook"}
    with pytest.raises(
        DFlashConfigError, match="missing tensors is \\['candidate_selector.successor_codebook'\\]"
    ):
        model.load_weights(state.items())


def test_selected_drafts_need_a_draft_pass_first():
    fresh = DFlash2DrafterForSGLang.__new__(DFlash2DrafterForSGLang)
    fresh.block_hidden = None
    with pytest.raises(RuntimeError, match="needs a draft pass first"):
        fresh.select_drafts(torch.zeros(1, 2, 48), torch.zeros(1, dtype=torch.long), None, None)


def test_decode_step_takes_its_drafts_from_the_selector():
    """With ``StepInputs.selector`` the drafts the target verifies are the walk's, not the argmax."""
    from sglang_dflash.serving.worker import StepInputs, decode_step

    bs, block_size, vocab = 2, 4, 9
    logits = torch.randn(bs * block_size, vocab, generator=torch.Generator().manual_seed(0))
    walked = torch.tensor([[3, 1, 4], [8, 0, 2]])
    calls, verified = [], []

    def selector(draft_logits, anchors, sampling, draws):
        calls.append((draft_logits.shape, anchors.tolist()))
        return walked, None

    def verify(tokens, positions, slots):
        verified.append(tokens.clone())
        return logits, torch.zeros(bs * block_size, 1)

    decode_step(
        StepInputs(
            bonus_tokens=torch.tensor([5, 6]),
            seq_lens=torch.tensor([3, 5]),
            out_cache_loc=torch.arange(bs * block_size),
            block_size=block_size,
            mask_token_id=0,
            sampling=BatchSampling.from_params([SamplingParams()] * bs),
            selector=selector,
        ),
        draft=lambda block, positions: logits,
        verify=verify,
        inject=lambda hidden, positions, slots: None,
    )
    assert calls == [((bs, block_size - 1, vocab), [5, 6])]
    assert torch.equal(verified[0], torch.tensor([[5, 3, 1, 4], [6, 8, 0, 2]]))
