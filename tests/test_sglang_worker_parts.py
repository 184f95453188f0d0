"""The CPU-testable parts of our SGLang worker: sampling conversion, acceptance, KV reservation,
batch filtering/merging, request validation.  (A full step needs SGLang's GPU kernels: see the
GPU tests.)"""

from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("sglang.srt.speculative.spec_info", reason="needs the sglang extra installed")

from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode  # noqa: E402
from sglang.srt.speculative.spec_info import SpecInputType  # noqa: E402

from sglang_dflash import speculative as spec  # noqa: E402
from sglang_dflash.sglang import spec_inputs  # noqa: E402
from sglang_dflash.sglang.spec_inputs import DFlashBlockInput, DFlashDraftInput  # noqa: E402
from sglang_dflash.sglang.validation import unsupported_request_option  # noqa: E402
from sglang_dflash.sglang.worker import accept_block, batch_sampling, choose_drafts  # noqa: E402

TOP_K_ALL = 1 << 30


def sampling_info(temps, top_ks, top_ps=None, min_ps=None):
    n = len(temps)
    return SimpleNamespace(
        temperatures=torch.tensor(temps, dtype=torch.float32)[:, None],
        top_ks=torch.tensor(top_ks, dtype=torch.int32),
        top_ps=torch.tensor(top_ps or [1.0] * n),
        min_ps=torch.tensor(min_ps or [0.0] * n),
    )


def test_sglang_greedy_convention_maps_to_temperature_zero():
    converted = batch_sampling(sampling_info([1.0, 0.7, 1.3], [1, TOP_K_ALL, 5]), 3)
    assert converted.greedy.tolist() == [True, False, False]
    assert converted.temperature.tolist()[1:] == pytest.approx([0.7, 1.3])
    assert converted.top_k.tolist() == [1, TOP_K_ALL, 5]


def test_mixed_batch_acceptance_matches_the_reference_functions():
    g = torch.Generator().manual_seed(0)
    target_logits = torch.randn(3, 4, 12, generator=g) * 3
    draft_logits = target_logits[:, :3] + torch.randn(3, 3, 12, generator=g)
    sampling = batch_sampling(sampling_info([1.0, 1.0, 0.8], [1, TOP_K_ALL, TOP_K_ALL]), 3)
    torch.manual_seed(1)
    drafts, draft_probs = choose_drafts(draft_logits, sampling, all_greedy=False, filters=False)
    assert drafts[0].tolist() == draft_logits[0].argmax(-1).tolist()  # the greedy row drafts argmax
    torch.manual_seed(2)
    accepted, emitted = accept_block(drafts, draft_probs, target_logits, sampling, all_greedy=False, filters=False)
    greedy_len, greedy_emitted = spec.greedy_accept(drafts, target_logits)
    assert accepted[0] == greedy_len[0] and torch.equal(emitted[0], greedy_emitted[0])
    torch.manual_seed(2)
    s_len, s_emitted = spec.speculative_sampling_accept(drafts, draft_probs, spec.sampling_probs(target_logits, sampling))
    assert torch.equal(accepted[1:], s_len[1:]) and torch.equal(emitted[1:], s_emitted[1:])


def test_all_greedy_fast_path_is_the_greedy_rule():
    g = torch.Generator().manual_seed(3)
    target_logits = torch.randn(2, 5, 9, generator=g)
    sampling = batch_sampling(sampling_info([1.0, 1.0], [1, 1]), 2)
    drafts, probs = choose_drafts(target_logits[:, :4], sampling, all_greedy=True, filters=False)
    assert probs is None
    accepted, emitted = accept_block(drafts, probs, target_logits, sampling, all_greedy=True, filters=False)
    assert accepted.tolist() == [4, 4]  # drafts equal to the target's argmax are all accepted
    assert emitted.tolist() == target_logits.argmax(-1).tolist()


def fake_batch(reqs, page_size=1, row_width=64):
    return SimpleNamespace(
        reqs=reqs, maybe_evict_swa=lambda: None,
        sampling_info=SimpleNamespace(penalizer_orchestrator=SimpleNamespace(is_required=False)),
        token_to_kv_pool_allocator=SimpleNamespace(page_size=page_size),
        req_to_token_pool=SimpleNamespace(req_to_token=torch.zeros(4, row_width, dtype=torch.int32)),
        req_pool_indices=torch.arange(len(reqs)), tree_cache=None, device="cpu",
    )


def req(committed, allocated):
    return SimpleNamespace(kv_committed_len=committed, kv=SimpleNamespace(kv_allocated_len=allocated), decode_batch_idx=0)


@pytest.mark.parametrize("page_size", [1, 4])
def test_decode_reservation_keeps_two_blocks_beyond_the_committed_length(monkeypatch, page_size):
    calls = {}
    monkeypatch.setattr("sglang.srt.mem_cache.allocation.alloc_for_spec_decode", lambda *a, **kw: calls.update(kw))
    monkeypatch.setattr("sglang.srt.mem_cache.allocation_sizing.get_alloc_reserve_per_decode", lambda: 2 * 16)
    reqs = [req(10, 10), req(30, 70), req(50, 50)]
    DFlashDraftInput(torch.zeros(3, dtype=torch.long), 16).prepare_for_decode(fake_batch(reqs, page_size, row_width=72))
    rounded = lambda n: (n + page_size - 1) // page_size * page_size  # noqa: E731
    # 10+32 rounded; already enough for the second; the third is clamped to the req_to_token row.
    assert calls["nxt_kv_lens_cpu"].tolist() == [rounded(42), 70, 72]
    assert calls["cur_kv_lens_cpu"].tolist() == [10, 70, 50]
    assert calls["num_needed_tokens"] == rounded(42) - 10 + 22
    assert [r.decode_batch_idx for r in reqs] == [1, 1, 1]


def test_filter_and_merge_without_and_with_overlap_relay():
    a = DFlashDraftInput(torch.tensor([5, 6, 7]), 4)
    a.filter_batch(torch.tensor([0, 2]))
    assert a.bonus_tokens.tolist() == [5, 7]
    a.merge_batch(DFlashDraftInput(torch.tensor([9]), 4))
    assert a.bonus_tokens.tolist() == [5, 7, 9]
    relayed = DFlashDraftInput(torch.tensor([1, 2, 3]), 4)
    relayed.future_indices = torch.tensor([11, 12, 13])
    relayed.filter_batch(torch.tensor([2]))
    assert relayed.future_indices.tolist() == [13] and relayed.bonus_tokens.tolist() == [1, 2, 3]
    other = DFlashDraftInput(torch.tensor([4]), 4)
    other.future_indices = torch.tensor([20])
    relayed.merge_batch(other)
    assert relayed.future_indices.tolist() == [13, 20]
    assert relayed.is_draft_input() and relayed.topk_p is None and relayed.hidden_states is None


def test_block_input_is_a_mask_free_verify_input():
    block = DFlashBlockInput(torch.zeros(8, dtype=torch.long), torch.arange(8), 4, CaptureHiddenMode.FULL)
    assert block.spec_input_type == SpecInputType.DFLASH_VERIFY and block.is_verify_input()
    assert block.custom_mask is None and block.draft_token_num == 4 and block.num_tokens_per_req == 4


def test_unsupported_request_options_get_clear_messages():
    plain = SimpleNamespace(return_logprob=False, return_hidden_states=False,
                            sampling_params=SimpleNamespace(json_schema=None, regex=None, ebnf=None, structural_tag=None))
    assert unsupported_request_option(plain, True) is None
    assert "return_logprob" in unsupported_request_option(SimpleNamespace(**{**vars(plain), "return_logprob": True}), True)
    grammar = SimpleNamespace(**{**vars(plain), "sampling_params": SimpleNamespace(json_schema="{}")})
    assert "grammar" in unsupported_request_option(grammar, False)
    assert "return_hidden_states" in unsupported_request_option(SimpleNamespace(**{**vars(plain), "return_hidden_states": True}), False)


def test_module_keeps_competitor_code_out():
    """Our worker modules never import SGLang's built-in DFLASH implementation."""
    import inspect

    import sglang_dflash.sglang.inject as inject
    import sglang_dflash.sglang.model as model
    import sglang_dflash.sglang.plugin as plugin
    import sglang_dflash.sglang.worker as worker

    for module in (inject, model, plugin, worker, spec_inputs):
        source = inspect.getsource(module)
        assert "speculative.dflash" not in source and "models.dflash" not in source, module.__name__
