"""The CPU-testable parts of our SGLang worker: sampling conversion, acceptance, KV reservation,
batch filtering/merging, request validation.  (A full step needs SGLang's GPU kernels: see the
GPU tests.)"""

import dataclasses
import re
from types import SimpleNamespace

import pytest
import torch
from host_rows import host_row_width

from sglang_dflash.config import draft_config_for_target
from sglang_dflash.testing import tiny_target_config

pytest.importorskip("sglang.srt.speculative.spec_info", reason="needs the sglang extra installed")

from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode
from sglang.srt.speculative.spec_info import SpecInputType

from sglang_dflash import speculative as spec
from sglang_dflash.serving import spec_inputs, worker
from sglang_dflash.serving.outputs import FinalHiddenStates, committed_logprobs
from sglang_dflash.serving.spec_inputs import DFlashBlockInput, DFlashDraftInput
from sglang_dflash.serving.validation import unsupported_request_option
from sglang_dflash.serving.worker import DFlashWorker, batch_sampling

TOP_K_ALL = 1 << 30


def sampling_info(temps, top_ks, top_ps=None, min_ps=None, seeds=None):
    """SGLang's SamplingBatchInfo fields, the host-side flags computed as the host computes them
    (``sampling_seed`` is set under --enable-deterministic-inference only)."""
    n = len(temps)
    top_ps, min_ps = top_ps or [1.0] * n, min_ps or [0.0] * n
    return SimpleNamespace(
        temperatures=torch.tensor(temps, dtype=torch.float32)[:, None],
        top_ks=torch.tensor(top_ks, dtype=torch.int32),
        top_ps=torch.tensor(top_ps),
        min_ps=torch.tensor(min_ps),
        is_all_greedy=all(k <= 1 for k in top_ks),
        need_top_k_sampling=any(k != TOP_K_ALL for k in top_ks),
        need_top_p_sampling=any(p != 1.0 for p in top_ps),
        need_min_p_sampling=any(p > 0 for p in min_ps),
        sampling_seed=None if seeds is None else torch.tensor(seeds, dtype=torch.int64),
    )


def test_sglang_greedy_convention_maps_to_temperature_zero():
    converted = batch_sampling(sampling_info([1.0, 0.7, 1.3], [1, TOP_K_ALL, 5]), 3)
    assert converted.greedy.tolist() == [True, False, False]
    assert converted.temperature.tolist()[1:] == pytest.approx([0.7, 1.3])
    assert converted.top_k.tolist() == [1, TOP_K_ALL, 5]


def test_deterministic_inference_seeds_reach_the_step():
    assert batch_sampling(sampling_info([1.0], [TOP_K_ALL]), 1).draws(torch.tensor([3])) is None
    seeded = batch_sampling(sampling_info([1.0, 0.7], [1, TOP_K_ALL], seeds=[42, 7]), 2)
    draws = seeded.draws(torch.tensor([3, 9], dtype=torch.int32))
    assert isinstance(draws, spec.SeededDraws)
    assert draws.seeds.tolist() == [42, 7] and draws.first_positions.tolist() == [3, 9]


def test_mixed_batch_acceptance_matches_the_reference_functions():
    g = torch.Generator().manual_seed(0)
    target_logits = torch.randn(3, 4, 12, generator=g) * 3
    draft_logits = target_logits[:, :3] + torch.randn(3, 3, 12, generator=g)
    sampling = batch_sampling(sampling_info([1.0, 1.0, 0.8], [1, TOP_K_ALL, TOP_K_ALL]), 3)
    torch.manual_seed(1)
    drafts, draft_probs = spec.draft_tokens(draft_logits, sampling)
    assert drafts[0].tolist() == draft_logits[0].argmax(-1).tolist()  # the greedy row drafts argmax
    torch.manual_seed(2)
    accepted, emitted = spec.accept(drafts, draft_probs, target_logits, sampling)
    greedy_len, greedy_emitted = spec.greedy_accept(drafts, target_logits)
    assert accepted[0] == greedy_len[0] and torch.equal(emitted[0], greedy_emitted[0])
    torch.manual_seed(2)
    s_len, s_emitted = spec.speculative_sampling_accept(
        drafts, draft_probs, spec.sampling_probs(target_logits, sampling)
    )
    assert torch.equal(accepted[1:], s_len[1:]) and torch.equal(emitted[1:], s_emitted[1:])


def test_all_greedy_fast_path_is_the_greedy_rule():
    g = torch.Generator().manual_seed(3)
    target_logits = torch.randn(2, 5, 9, generator=g)
    sampling = batch_sampling(sampling_info([1.0, 1.0], [1, 1]), 2)
    drafts, probs = spec.draft_tokens(target_logits[:, :4], sampling)
    assert probs is None
    accepted, emitted = spec.accept(drafts, probs, target_logits, sampling)
    assert accepted.tolist() == [4, 4]  # drafts equal to the target's argmax are all accepted
    assert emitted.tolist() == target_logits.argmax(-1).tolist()


def fake_batch(reqs, page_size=1, row_width=64):
    return SimpleNamespace(
        reqs=reqs,
        maybe_evict_swa=lambda: None,
        sampling_info=SimpleNamespace(penalizer_orchestrator=SimpleNamespace(is_required=False)),
        token_to_kv_pool_allocator=SimpleNamespace(page_size=page_size),
        req_to_token_pool=SimpleNamespace(req_to_token=torch.zeros(4, row_width, dtype=torch.int32)),
        req_pool_indices=torch.arange(len(reqs)),
        tree_cache=None,
        device="cpu",
    )


def req(committed, allocated):
    return SimpleNamespace(
        kv_committed_len=committed, kv=SimpleNamespace(kv_allocated_len=allocated), decode_batch_idx=0
    )


@pytest.mark.parametrize("page_size", [1, 4])
def test_decode_reservation_keeps_two_blocks_beyond_the_committed_length(monkeypatch, page_size):
    calls = {}
    monkeypatch.setattr(
        "sglang.srt.mem_cache.allocation.alloc_for_spec_decode", lambda *a, **kw: calls.update(kw)
    )
    monkeypatch.setattr("sglang.srt.mem_cache.allocation_sizing.get_alloc_reserve_per_decode", lambda: 2 * 16)
    reqs = [req(10, 10), req(30, 70), req(50, 50)]
    DFlashDraftInput(torch.zeros(3, dtype=torch.long), 16).prepare_for_decode(
        fake_batch(reqs, page_size, row_width=72)
    )

    def rounded(n: int) -> int:
        return (n + page_size - 1) // page_size * page_size

    # 10+32 rounded; already enough for the second; the third is clamped to the req_to_token row.
    assert calls["nxt_kv_lens_cpu"].tolist() == [rounded(42), 70, 72]
    assert calls["cur_kv_lens_cpu"].tolist() == [10, 70, 50]
    assert calls["num_needed_tokens"] == rounded(42) - 10 + 22
    assert [r.decode_batch_idx for r in reqs] == [1, 1, 1]


def gather_as_the_gpu_kernel(req_pool_indices, req_to_token, start_offset, end_offset, **_) -> torch.Tensor:
    """SGLang's Triton ``assign_extend_cache_locs``: request i's slots are read from the flat table at
    ``req_pool_indices[i] * row_width + [start, end)``, with no bound at the end of the row."""
    flat, width = req_to_token.reshape(-1), req_to_token.shape[1]
    rows = zip(req_pool_indices.tolist(), start_offset.tolist(), end_offset.tolist())
    return torch.cat([flat[row * width + start : row * width + end] for row, start, end in rows]).long()


@pytest.mark.parametrize("page_size", [1, 4])
def test_a_block_started_past_the_context_limit_stays_in_its_request_row(monkeypatch, page_size):
    """A miniature host with a small context length and two rows.  Under the overlap scheduler a
    request whose last step accepted a whole block from the furthest start of a running request
    (context length - 4) runs one more step from there; its block must read and write its own row's
    slots only (the next row holds another request's KV), within what its reservation covers, and a
    running request's block must not move."""
    context_length, block_size = 32, 16
    width = host_row_width(context_length, block_size, page_size)
    monkeypatch.setattr(
        "sglang.kernels.ops.speculative.cache_locs.assign_extend_cache_locs_func", gather_as_the_gpu_kernel
    )
    reserved = {}
    monkeypatch.setattr(
        "sglang.srt.mem_cache.allocation.alloc_for_spec_decode", lambda *a, **kw: reserved.update(kw)
    )
    monkeypatch.setattr(
        "sglang.srt.mem_cache.allocation_sizing.get_alloc_reserve_per_decode", lambda *_: 2 * block_size
    )
    req_to_token = 1 + torch.arange(2 * width, dtype=torch.int32).view(2, width)  # slot 0: the padding slot
    furthest_running_start = context_length - 4
    seq_lens = torch.tensor([furthest_running_start + block_size, furthest_running_start])
    batch = SimpleNamespace(
        **vars(
            fake_batch([req(furthest_running_start, furthest_running_start) for _ in range(2)], page_size)
        ),
        seq_lens=seq_lens,
        seq_lens_cpu=seq_lens.clone(),
        seq_lens_sum=int(seq_lens.sum()),
        batch_size=lambda: 2,
    )
    batch.req_to_token_pool.req_to_token = req_to_token
    DFlashDraftInput(torch.zeros(2, dtype=torch.long), block_size).prepare_for_decode(batch)

    slots = worker.block_slots(batch, req_to_token, block_size).view(2, block_size)

    foreign = sorted(set(slots[0].tolist()) - set(req_to_token[0].tolist()))
    assert foreign == [], f"the ended request's block reads slots {foreign} of the next row"
    assert torch.equal(slots[0], req_to_token[0, batch.seq_lens[0] : batch.seq_lens[0] + block_size].long())
    assert int(batch.seq_lens[0]) + block_size <= reserved["nxt_kv_lens_cpu"][0]  # reserved slots only
    assert torch.equal(
        slots[1], req_to_token[1, furthest_running_start : furthest_running_start + block_size].long()
    )
    # What the attention backends read (prefix and block, req_to_token[r, : seq_len + block_size])
    # stays in the row, and the running request keeps its own start.
    assert batch.seq_lens.tolist() == batch.seq_lens_cpu.tolist()
    assert batch.seq_lens_sum == int(batch.seq_lens_cpu.sum())
    assert int(batch.seq_lens.max()) + block_size <= width
    assert int(batch.seq_lens[1]) == furthest_running_start


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


def test_logprobs_grammars_and_hidden_states_pass_the_request_check():
    plain = SimpleNamespace(
        return_logprob=False,
        return_hidden_states=False,
        custom_logit_processor=None,
        sampling_params=SimpleNamespace(json_schema=None, regex=None, ebnf=None, structural_tag=None),
    )
    assert unsupported_request_option(plain, True) is None
    for fields in (
        {"return_logprob": True},
        {"return_hidden_states": True},
        {"sampling_params": SimpleNamespace(json_schema="{}", regex="[a-z]+", ebnf='root ::= "a"')},
    ):
        for overlap in (True, False):
            assert unsupported_request_option(SimpleNamespace(**{**vars(plain), **fields}), overlap) is None


def test_module_keeps_competitor_code_out():
    """Our worker modules never import SGLang's built-in DFLASH implementation."""
    import inspect

    import sglang_dflash.serving.inject as inject
    import sglang_dflash.serving.model as model
    import sglang_dflash.serving.plugin as plugin
    import sglang_dflash.serving.worker as worker

    for module in (inject, model, plugin, worker, spec_inputs):
        source = inspect.getsource(module)
        assert "speculative.dflash" not in source and "models.dflash" not in source, module.__name__


def test_filter_told_already_filtered_still_keeps_the_requested_rows():
    """The host's EAGLE convention: the state may already be compacted; ours never is ahead of the batch."""
    draft_input = DFlashDraftInput(torch.tensor([5, 6, 7]), 4)
    draft_input.filter_batch(torch.tensor([0, 2]), has_been_filtered=True)
    assert draft_input.bonus_tokens.tolist() == [5, 7]
    compacted = DFlashDraftInput(torch.tensor([5, 7]), 4)
    compacted.filter_batch(torch.tensor([0, 2]), has_been_filtered=True)
    assert compacted.bonus_tokens.tolist() == [5, 7]


def sglang_request(**params):
    from sglang.srt.sampling.sampling_params import SamplingParams as HostSamplingParams

    return SimpleNamespace(
        return_logprob=False,
        return_hidden_states=False,
        custom_logit_processor=None,
        sampling_params=HostSamplingParams(**params),
    )


@pytest.mark.parametrize(
    "field, value",
    [
        ("frequency_penalty", 0.5),
        ("presence_penalty", -0.3),
        ("repetition_penalty", 1.2),
        ("min_new_tokens", 4),
    ],
)
def test_penalties_and_min_new_tokens_are_served(field, value):
    assert unsupported_request_option(sglang_request(**{field: value}), True) is None


def test_custom_logit_processors_are_refused_per_request():
    req = sglang_request()
    req.custom_logit_processor = '{"callable": "..."}'
    message = unsupported_request_option(req, False)
    assert message is not None and "custom_logit_processor is" in message and "expected None" in message


@pytest.mark.parametrize(
    "layer_types, refused",
    [
        (["full_attention", "mamba"], True),
        (["linear_attention", "full_attention"], True),
        (["sliding_attention", "full_attention"], False),
    ],
)
def test_targets_are_refused_by_recurrent_layer_types_only(layer_types, refused):
    from transformers import PretrainedConfig

    from sglang_dflash.config import DFlashConfigError
    from sglang_dflash.serving.validation import check_attention_only_target

    config = PretrainedConfig(architectures=["SomeHybridForCausalLM"], layer_types=layer_types)
    if not refused:
        check_attention_only_target(config)
        return
    with pytest.raises(
        DFlashConfigError, match=r"SomeHybrid\w+ with layer_types.*expected an attention-only"
    ):
        check_attention_only_target(config)


def target_model_config(dtype=torch.float32):
    hf_config = SimpleNamespace(architectures=["Qwen3ForCausalLM"])
    return SimpleNamespace(context_len=512, dtype=dtype, hf_config=hf_config)


def drafter_config():
    target = tiny_target_config("qwen3")
    return draft_config_for_target(target, num_layers=2, block_size=4, target_layer_ids=[1, 3])


@pytest.mark.parametrize("hidden", [None, torch.zeros(3, 32)], ids=["missing", "one layer only"])
def test_prefill_without_the_captured_layers_raises_naming_target_and_layers(hidden):
    worker = object.__new__(DFlashWorker)
    result = SimpleNamespace(
        logits_output=SimpleNamespace(hidden_states=hidden), next_token_ids=torch.tensor([9])
    )
    worker._target_worker = SimpleNamespace(
        forward_batch_generation=lambda batch, capture_hidden_mode: result,
        model_runner=SimpleNamespace(model_config=target_model_config()),
    )
    worker.dflash, worker.block_size, worker.device = drafter_config(), 4, "cpu"
    worker.width_policy = None
    worker.injector = lambda *args: None
    worker.final_hidden = FinalHiddenStates(worker._target_worker.model_runner)
    batch = SimpleNamespace(
        seq_lens=torch.tensor([3]),
        extend_lens=[3],
        prefix_lens=[0],
        out_cache_loc=torch.arange(3),
        return_hidden_states=False,
    )
    with pytest.raises(RuntimeError, match=r"Qwen3ForCausalLM.*\[1, 3\].*expected \[3, 64\]"):
        worker._prefill(batch, None)


class FakeLogitsProcessor(torch.nn.Module):
    def forward(self, input_ids, hidden_states, lm_head, batch, aux_hidden_states=None):
        return torch.cat(aux_hidden_states, dim=-1)  # what the host stores under DFLASH capture


def test_final_hidden_states_are_the_logits_processors_input_and_the_pass_runs_eagerly():
    graphs = object()
    runner = SimpleNamespace(
        model=SimpleNamespace(logits_processor=FakeLogitsProcessor()),
        decode_cuda_graph_runner=graphs,
        prefill_cuda_graph_runner=None,
    )
    final = torch.randn(5, 8)
    collector = FinalHiddenStates(runner)

    with collector.collect(True) as collected:
        assert runner.decode_cuda_graph_runner is None  # hooks do not run in a graph replay
        stored = runner.model.logits_processor(None, final, None, None, [torch.ones(5, 2)])
    assert collected.get() is final and stored.shape == (5, 2)
    assert runner.decode_cuda_graph_runner is graphs and runner.prefill_cuda_graph_runner is None
    assert not runner.model.logits_processor._forward_pre_hooks

    with collector.collect(False) as collected:
        assert runner.decode_cuda_graph_runner is graphs
        runner.model.logits_processor(None, final, None, None, [torch.ones(5, 2)])
    assert collected.get() is None
    with pytest.raises(RuntimeError, match="final hidden states are None"):
        with collector.collect(True) as collected:
            pass  # no forward ran
        collected.get()


@pytest.mark.parametrize("all_greedy", [True, False])
def test_committed_logprobs_are_the_targets_at_every_block_position(all_greedy):
    from sglang.srt.layers.logits_processor import LogitsProcessorOutput

    bs, width, vocab = 2, 3, 11
    logits = torch.randn(bs * width, vocab, generator=torch.Generator().manual_seed(0))
    emitted = torch.tensor([[1, 4, 7], [10, 0, 3]])
    temperatures = torch.tensor([[1.0], [0.5]]) if not all_greedy else torch.ones(bs, 1)
    batch = SimpleNamespace(
        seq_lens=torch.tensor([5, 9]),
        sampling_info=SimpleNamespace(is_all_greedy=all_greedy, temperatures=temperatures),
        top_logprobs_nums=[2, 0],
        token_ids_logprobs=[None, [3, 5]],
    )
    output = LogitsProcessorOutput(next_token_logits=logits.clone())

    committed_logprobs(batch, output, emitted)

    tempered = logits / temperatures.repeat_interleave(width, dim=0)
    expected = torch.log_softmax(tempered, dim=-1).view(bs, width, vocab)
    got = output.next_token_logprobs
    assert torch.allclose(got, expected.gather(-1, emitted[..., None])[..., 0], atol=1e-6)
    top = output.next_token_top_logprobs_idx  # one entry per (request, position)
    assert [list(t) for t in top[:width]] == expected[0].topk(2).indices.tolist()
    ids = output.next_token_token_ids_logprobs_val[width:]
    assert torch.allclose(torch.stack([torch.as_tensor(v) for v in ids]), expected[1][:, [3, 5]], atol=1e-6)


class HostArgs(SimpleNamespace):
    """ServerArgs' audited mutation point, as the worker uses it."""

    def override(self, source, **fields):
        for name, value in fields.items():
            setattr(self, name, value)


@dataclasses.dataclass
class ParallelState:
    pp_rank: int = 0


def build_worker(monkeypatch, tmp_path, draft_dtype=None):
    """A DFlashWorker over stand-in target and draft workers; the draft resolves ``--dtype auto`` to float16
    (what SGLang does for a config.json without a dtype) unless ``draft_dtype`` forces one."""
    from sglang_dflash.serving import worker as worker_module

    drafter_config().save(tmp_path)
    built = {}

    class DraftWorker:
        def __init__(self, server_args, gpu_id, ps, nccl_port, is_draft_worker):
            built["args"] = server_args
            auto = torch.float16 if server_args.dtype == "auto" else getattr(torch, server_args.dtype)
            dtype = draft_dtype or auto
            model = SimpleNamespace(set_embed_and_head=lambda embed, head: None, prepare_rope=lambda n: None)
            self.model_runner = SimpleNamespace(model=model, model_config=SimpleNamespace(dtype=dtype))

    monkeypatch.setattr(worker_module, "TpModelWorker", DraftWorker)
    args = HostArgs(
        speculative_num_draft_tokens=4,
        speculative_draft_model_path=str(tmp_path),
        dtype="auto",
        context_length=None,
    )
    embed = torch.zeros(64, 32, dtype=torch.bfloat16)
    target = SimpleNamespace(
        model_runner=SimpleNamespace(
            device="cpu",
            model_config=target_model_config(torch.bfloat16),
            model=SimpleNamespace(get_embed_and_head=lambda: (embed, embed)),
        )
    )
    return DFlashWorker(args, 0, ParallelState(pp_rank=1), 0, target), args, built


def test_draft_worker_gets_its_own_server_args_with_the_target_context_and_dtype(monkeypatch, tmp_path):
    worker, args, built = build_worker(monkeypatch, tmp_path)
    assert (args.context_length, args.dtype) == (None, "auto")  # the target's ServerArgs are untouched
    assert built["args"] is not args
    assert (built["args"].context_length, built["args"].dtype) == (512, "bfloat16")
    assert worker.draft_runner.model_config.dtype == torch.bfloat16


def test_a_drafter_running_in_another_dtype_than_the_target_is_refused(monkeypatch, tmp_path):
    with pytest.raises(RuntimeError, match=r"dtype is torch.float16; expected the target's torch.bfloat16"):
        build_worker(monkeypatch, tmp_path, draft_dtype=torch.float16)


def peak_allocated_bytes(fn) -> int:
    """Peak of the CPU allocator's live bytes while ``fn`` runs (profiler memory events, in time order)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, acc_events=True) as prof:
        fn()
    events = sorted(
        (e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"
    )
    live = peak = 0
    for _, nbytes in events:
        live += nbytes
        peak = max(peak, live)
    return peak


def test_sampled_acceptance_stays_within_its_stated_peak_memory(monkeypatch):
    bs, block_size, vocab = 4, 8, 8192
    # Four rows per filter chunk, so the bound is dominated by the two distributions, as at bs 48.
    monkeypatch.setattr(spec, "FILTER_CHUNK_BYTES", 4 * spec.FILTER_BYTES_PER_ELEMENT * vocab)
    g = torch.Generator().manual_seed(0)
    target_logits = torch.randn(bs, block_size, vocab, generator=g)
    draft_logits = torch.randn(bs, block_size - 1, vocab, generator=g)
    sampling = batch_sampling(
        sampling_info(
            [0.8, 1.0, 1.0, 0.5],
            [50, 1, TOP_K_ALL, TOP_K_ALL],
            top_ps=[0.9, 1.0, 0.95, 1.0],
            min_ps=[0.01, 0.0, 0.0, 0.0],
        ),
        bs,
    )

    def sampled_step():
        drafts, draft_probs = spec.draft_tokens(draft_logits, sampling)
        spec.accept(drafts, draft_probs, target_logits, sampling)

    assert peak_allocated_bytes(sampled_step) <= spec.sampling_peak_bytes(bs, block_size, vocab)


@pytest.mark.parametrize("value, expected", [(None, True), ("1", True), ("0", False), ("yes", None)])
def test_masked_drafts_are_the_default_and_a_bad_switch_value_is_refused(monkeypatch, value, expected):
    from sglang_dflash.serving.worker import MASK_DRAFTS_ENV, mask_drafts_setting

    if value is None:
        monkeypatch.delenv(MASK_DRAFTS_ENV, raising=False)
    else:
        monkeypatch.setenv(MASK_DRAFTS_ENV, value)
    if expected is None:
        with pytest.raises(
            ValueError, match=r"SGLANG_DFLASH_MASK_DRAFTS is 'yes'; expected '1' \(default\) or '0'"
        ):
            mask_drafts_setting()
    else:
        assert mask_drafts_setting() is expected


SLIDING = {"layer_types": ["sliding_attention", "full_attention"], "sliding_window": 64, "is_causal": False}


@pytest.mark.parametrize(
    "device, context_length, fields, refused",
    [
        (
            "cpu",
            None,
            {**SLIDING, "is_causal": None},
            None,
        ),  # causal and windowed: our CPU attention masks both
        ("cpu", 4096, SLIDING, None),
        ("cuda", 64, SLIDING, None),  # the window covers the whole context: exact without one
        ("cuda", 65, SLIDING, "--context-length is 65; expected at most the drafter's sliding_window=64"),
        ("cuda", None, SLIDING, "--context-length is 128; expected at most"),  # the target's own length
        ("cuda", 64, {**SLIDING, "is_causal": None}, "draft layers [0] is 'causal'; expected bidirectional"),
        ("cuda", None, {"is_causal": True}, "draft layers [0] is 'causal'"),
        ("cuda", None, {}, None),
    ],
)
def test_gpu_servers_refuse_draft_attention_their_backends_cannot_mask(
    device, context_length, fields, refused
):
    from sglang_dflash.config import DFlashConfigError
    from sglang_dflash.serving.validation import check_draft_attention

    target = tiny_target_config("llama", max_position_embeddings=128)
    config = draft_config_for_target(target, num_layers=2 if "layer_types" in fields else 1, **fields)
    server_args = SimpleNamespace(device=device, context_length=context_length)
    if refused is None:
        check_draft_attention(config, server_args, target)
    else:
        with pytest.raises(DFlashConfigError, match=re.escape(refused)):
            check_draft_attention(config, server_args, target)


def test_deferred_verify_logits_keep_the_states_and_compute_only_the_asked_rows_the_hosts_way():
    """During the verify forward the logits processor returns no logits and keeps its inputs; the
    rows acceptance asks for then go through the host's own ``_get_logits`` (here: scale 2), and
    the processor is the host's again afterwards."""
    from sglang.srt.layers.logits_processor import LogitsProcessor

    from sglang_dflash.serving.outputs import DeferredLogits

    class Processor(LogitsProcessor):  # the host's class; its lm_head path replaced by a visible one
        def __init__(self) -> None:
            torch.nn.Module.__init__(self)
            self.rows_computed = 0

        def _get_logits(self, hidden_states, lm_head, logits_metadata, *args, **kwargs):
            self.rows_computed += hidden_states.shape[0]
            return 2.0 * hidden_states @ lm_head.T

    processor, lm_head = Processor(), torch.randn(7, 3)
    hidden = torch.randn(2 * 4, 3)  # two requests, width 4
    deferred = DeferredLogits(processor)
    with deferred.capture():
        assert processor._get_logits(hidden, lm_head, "metadata").shape == (8, 0)
    assert "_get_logits" not in vars(processor) and processor.rows_computed == 0
    argmax = deferred.column_argmax(4)
    expected = (2.0 * hidden @ lm_head.T).view(2, 4, 7).argmax(-1)
    assert torch.equal(argmax(torch.tensor([1]), 2, 4), expected[1:, 2:4])
    assert torch.equal(argmax(torch.tensor([0, 1]), 0, 1), expected[:, 0:1])
    assert processor.rows_computed == 4
    assert processor._get_logits(hidden, lm_head, None).shape == (8, 7)  # not captured any more


def test_deferred_verify_logits_are_cpu_only_one_rank_and_can_be_switched_off(monkeypatch):
    from sglang_dflash.serving.tensor_parallel import TPShard

    runner = SimpleNamespace(
        device="cpu", model=SimpleNamespace(logits_processor=SimpleNamespace(_get_logits=None))
    )
    one, two = TPShard(0, 1), TPShard(0, 2)
    assert worker.deferred_verify_logits(runner, one) is not None
    assert worker.deferred_verify_logits(SimpleNamespace(**{**vars(runner), "device": "cuda"}), one) is None
    assert worker.deferred_verify_logits(runner, two) is None
    monkeypatch.setenv(worker.DEFER_VERIFY_LOGITS_ENV, "0")
    assert worker.deferred_verify_logits(runner, one) is None
    monkeypatch.setenv(worker.DEFER_VERIFY_LOGITS_ENV, "yes")
    with pytest.raises(ValueError, match="SGLANG_DFLASH_DEFER_VERIFY_LOGITS is 'yes'; expected '1'"):
        worker.deferred_verify_logits(runner, one)


def _step_with_draft_logits(draft_output, sampling, penalties=None):
    """One decode step of 2 requests (block 4) whose drafter returns ``draft_output``; the target's
    logits favour token 5 at every position, so the drafts decide how many are accepted."""
    bs, block_size, vocab = 2, 4, 12
    target = torch.full((bs * block_size, vocab), -1.0)
    target[:, 5] = 1.0
    inputs = worker.StepInputs(
        bonus_tokens=torch.tensor([1, 2]),
        seq_lens=torch.tensor([3, 5]),
        out_cache_loc=torch.arange(bs * block_size),
        block_size=block_size,
        mask_token_id=0,
        sampling=sampling,
        penalties=penalties,
    )
    return worker.decode_step(
        inputs,
        draft=lambda block, positions: draft_output,
        verify=lambda block, positions, slots: (target.clone(), torch.zeros(bs * block_size, 1)),
        inject=lambda hidden, positions, slots: None,
    )


def test_greedy_drafts_from_hot_vocabulary_logits_are_the_whole_vocabularys_argmax():
    """``HotVocabLogits``: the drafts are the hot argmax mapped back to token ids, equal to the
    argmax over the whole vocabulary (-inf outside the hot ids), ties included; sampled or
    penalised batches, which need the whole vocabulary's distribution, are refused."""
    hot_ids = torch.tensor([2, 5, 7, 11])  # increasing, as set_hot_vocab keeps them
    hot = torch.randn(8, 4, generator=torch.Generator().manual_seed(1))
    hot[[1, 2, 5], 1] = 9.0  # token 5 drafted at request 0's positions 1-2 and request 1's position 1,
    hot[5, 3] = 9.0  # there tied with token 11: the lower id wins in both layouts
    hot[[3, 6], 0] = 9.0  # token 2 drafted after them: rejected
    whole = torch.full((8, 12), float("-inf"))
    whole[:, hot_ids] = hot
    greedy = spec.BatchSampling.from_params([spec.SamplingParams()] * 2)

    compact = _step_with_draft_logits(worker.HotVocabLogits(hot, hot_ids), greedy)
    reference = _step_with_draft_logits(whole, greedy)
    assert torch.equal(compact.emitted, reference.emitted)
    assert torch.equal(compact.num_correct_drafts, reference.num_correct_drafts)
    assert compact.num_correct_drafts.tolist() == [2, 1]

    sampled = spec.BatchSampling.from_params([spec.SamplingParams(temperature=0.7)] * 2)
    with pytest.raises(ValueError, match="all-greedy batches without penalties, grammar or selector"):
        _step_with_draft_logits(worker.HotVocabLogits(hot, hot_ids), sampled)
