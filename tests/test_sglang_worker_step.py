"""The worker's decode step end to end on CPU, checked token for token against the reference.

A miniature host stands in for SGLang: a shuffled ``req_to_token`` slot table, a draft KV pool
(:class:`TorchPool`) read by our SGLang drafter through a PyTorch TARGET_VERIFY attention, and the
Hugging Face target scoring each block in float32.  The step itself is the worker's own
:func:`decode_step` with :class:`ContextInjector`, so the slot math, the block positions, the
"inject every row" shortcut and the acceptance are the ones that run on the GPU.
"""

import functools
import json
from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("sglang.srt.layers.radix_attention", reason="needs the sglang extra installed")

from sglang.srt.model_executor.forward_batch_info import ForwardMode
from sglang.srt.model_executor.forward_context import ForwardContext, forward_context
from sglang_fakes import TorchBlockAttention, TorchPool
from tiny_grammars import allowed_tokens, constrained_greedy, grammar_argmax, tiny_grammar_factory

from sglang_dflash import SamplingParams, save_drafter, spec_generate
from sglang_dflash.checkpoint import read_state_dict
from sglang_dflash.draft_model import DFlashDraftModel as ReferenceDrafter
from sglang_dflash.grammar import BlockGrammar
from sglang_dflash.serving.inject import ContextInjector
from sglang_dflash.serving.model import DFlashDrafterForSGLang as SGLangDrafter
from sglang_dflash.serving.worker import StepInputs, StepProfiler, decode_step
from sglang_dflash.speculative import TARGET_DRAW, BatchSampling, Penalties, sample_from, sampling_probs
from sglang_dflash.testing import arrange_oracle, make_tiny_drafter, make_tiny_target

PROMPTS = [[5], [3, 4, 5, 6, 7], [9, 8, 7, 6, 5, 4, 3, 2, 1]]
SLOTS_PER_REQUEST = 96


class MiniHost:
    """Per-request committed tokens and slots, the draft pool, and the two passes of a step."""

    def __init__(self, target, reference, prompts, tmp_path, use_triton):
        from transformers import AutoConfig

        save_drafter(reference, str(tmp_path))
        self.target, self.reference, self.layer_ids = target, reference, reference.config.target_layer_ids
        self.checked_drafts = 0
        self.drafter = SGLangDrafter(AutoConfig.from_pretrained(str(tmp_path))).eval()
        self.drafter.load_weights(read_state_dict(str(tmp_path)).items())
        self.drafter.set_embed_and_head(
            target.get_input_embeddings().weight, target.get_output_embeddings().weight
        )
        cfg = reference.config
        self.prompts = prompts
        pool_size = 1 + SLOTS_PER_REQUEST * len(prompts)
        self.pool = TorchPool(cfg.num_hidden_layers, cfg.num_key_value_heads, cfg.head_dim, size=pool_size)
        perm = torch.randperm(pool_size - 1, generator=torch.Generator().manual_seed(0)) + 1
        self.req_to_token = torch.zeros(len(prompts) + 1, SLOTS_PER_REQUEST, dtype=torch.long)
        for r in range(len(prompts)):
            self.req_to_token[r + 1] = perm[r * SLOTS_PER_REQUEST : (r + 1) * SLOTS_PER_REQUEST]
        self.req_pool_indices = torch.arange(1, len(prompts) + 1)
        self.inject = ContextInjector(self.drafter, self.pool, use_triton=use_triton)
        self.committed = [list(p) for p in prompts]  # tokens whose target KV "exists"

    def features(self, ids):
        out = self.target(torch.tensor([ids]), output_hidden_states=True)
        return out.logits[0], ReferenceDrafter.select_target_features(out.hidden_states, self.layer_ids)[0]

    def prefill(self, grammars=None, sampling=None):
        """Prefill every prompt; the first token is the target's greedy one, under its grammar if any,
        or for seeded sampled rows the one the reference samples (the host's sampler in SGLang)."""
        bonus_tokens = []
        for r, prompt in enumerate(self.prompts):
            logits, feats = self.features(prompt)
            self.inject(feats, torch.arange(len(prompt)), self.req_to_token[r + 1, : len(prompt)])
            grammar = grammars[r] if grammars is not None else None
            if sampling is not None and not sampling.all_greedy:
                row = sampling.select(torch.tensor([r]))
                draws = row.draws(torch.tensor([len(prompt)]))
                probs = sampling_probs(logits[-1][None, None], row)
                bonus_tokens.append(int(sample_from(probs, draws, TARGET_DRAW)[0, 0]))
            elif grammar is None:
                bonus_tokens.append(int(logits[-1].argmax()))
            else:
                bonus_tokens.append(grammar_argmax(grammar, logits[-1]))
                grammar.accept_token(bonus_tokens[-1])
        return torch.tensor(bonus_tokens)

    def draft(self, block, positions, seq_lens, out_cache_loc):
        fb = SimpleNamespace(
            forward_mode=ForwardMode.TARGET_VERIFY,
            req_pool_indices=self.req_pool_indices,
            seq_lens=seq_lens,
            out_cache_loc=out_cache_loc,
            spec_info=SimpleNamespace(draft_token_num=block.shape[1]),
        )
        with forward_context(ForwardContext(attn_backend=TorchBlockAttention(self.pool, self.req_to_token))):
            logits = self.drafter(block.reshape(-1), positions, fb).next_token_logits
        self.check_against_fresh_context(block, positions.view(block.shape), logits.view(*block.shape, -1))
        return logits

    def check_against_fresh_context(self, block, positions, logits):
        """The pool, after every earlier step's writes, must equal a context built from scratch."""
        embed, head = self.target.get_input_embeddings(), self.target.get_output_embeddings()
        for r in range(block.shape[0]):
            feats = self.features(self.committed[r])[1]
            n = feats.shape[0]
            cache = self.reference.new_cache(1, "cpu", torch.float32)
            visible = torch.ones(1, n, dtype=torch.bool)
            self.reference.extend_cache(cache, feats[None], visible, torch.arange(n)[None])
            expected = head(self.reference.draft_block(embed(block[r : r + 1]), positions[r : r + 1], cache))[
                0
            ]
            assert torch.allclose(logits[r], expected, atol=1e-4), (r, (logits[r] - expected).abs().max())
        self.checked_drafts += 1

    def verify(self, block):
        logits, feats = [], []
        for r in range(block.shape[0]):
            row_logits, row_feats = self.features(self.committed[r] + block[r].tolist())
            logits.append(row_logits[-block.shape[1] :])
            feats.append(row_feats[-block.shape[1] :])
        return torch.cat(logits), torch.cat(feats)


def make_case(kind, tiny_corpus, tiny_trained):
    """(target, reference drafter, prompts): acceptance near 1, constant-token oracle, or trained."""
    if kind == "trained":
        from sglang_dflash import load_drafter

        target, _, records = tiny_corpus
        prompts = [r["input_ids"][: r["loss_start"]] for r in records[:4]]
        return target, load_drafter(str(tiny_trained[0])), prompts
    target = make_tiny_target("qwen3", seed=3)
    reference = make_tiny_drafter(target.config, seed=4, num_layers=2, block_size=4)
    if kind == "partial-oracle":
        arrange_oracle(target, reference, token_id=7, strength=4.0)
    return target, reference, PROMPTS


def penalties_of(tokens, params, vocab_size) -> Penalties | None:
    """The step's penalties from the committed tokens, as the worker builds them from ``output_ids``."""
    if params is None or not any(p.penalized for p in params):
        return None
    return Penalties.of_rows(tokens, params, vocab_size)


def decode_with_the_worker_step(
    host, prompts, reference, max_new, widths=None, grammars=None, mask_drafts=False, params=None
):
    """Drive :func:`decode_step` until every request has ``max_new`` tokens.

    ``widths`` (a cycle of verify widths, one per step) exercises the adaptive truncation; None
    verifies whole blocks.  ``grammars`` (one per request) constrain decoding; like SGLang's result
    processing, the test advances each grammar by the committed tokens after every step.  ``params``
    (one per request, default greedy) may sample with per-request seeds.  Returns
    the tokens and the per-step accept_lens of every request.
    """
    block_size = reference.block_size
    vocab_size = host.target.config.get_text_config().vocab_size
    sampling = BatchSampling.from_params(params or [SamplingParams()] * len(prompts))
    bonus_tokens = host.prefill(grammars, sampling)
    tokens = [[int(t)] for t in bonus_tokens]
    accept_lens = [[] for _ in prompts]
    seq_lens = torch.tensor([len(p) for p in prompts])
    published = []
    step_count = 0
    finished = [False] * len(prompts)  # a grammar that terminated ends its request, as in SGLang
    while any(len(t) < max_new and not done for t, done in zip(tokens, finished)):
        width = widths[step_count % len(widths)] if widths else None
        step_count += 1
        out_cache_loc = torch.cat(
            [host.req_to_token[r + 1, n : n + block_size] for r, n in enumerate(seq_lens.tolist())]
        )
        step = decode_step(
            StepInputs(
                bonus_tokens=bonus_tokens,
                seq_lens=seq_lens,
                out_cache_loc=out_cache_loc,
                block_size=block_size,
                mask_token_id=reference.mask_token_id,
                sampling=sampling,
                verify_width=width,
                grammar=BlockGrammar.of_batch(grammars, vocab_size, mask_drafts),
                penalties=penalties_of(tokens, params, vocab_size),
            ),
            draft=functools.partial(host.draft, seq_lens=seq_lens, out_cache_loc=out_cache_loc),
            verify=lambda block, positions, slots: host.verify(block),
            inject=host.inject,
            publish=published.append,
        )
        assert step.emitted.shape == (len(prompts), width or block_size)
        for r in range(len(prompts)):
            committed = step.emitted[r, : int(step.accept_lens[r])].tolist()
            # The bonus token and the accepted drafts now have KV; the last committed token not yet.
            host.committed[r] += [int(bonus_tokens[r])] + committed[:-1]
            if finished[r]:
                continue
            if grammars is not None and grammars[r] is not None:
                for n, token in enumerate(committed):  # SGLang's _accept_grammar_tokens
                    grammars[r].accept_token(token)
                    if grammars[r].is_terminated():
                        committed, finished[r] = committed[: n + 1], True
                        break
            if len(tokens[r]) < max_new:
                take = committed[: max_new - len(tokens[r])]
                tokens[r] += take
                accept_lens[r].append(len(take))
        assert torch.equal(published[-1], step.new_seq_lens)
        seq_lens, bonus_tokens = step.new_seq_lens, step.bonus_tokens
        assert seq_lens.tolist() == [len(c) for c in host.committed]
    return tokens, accept_lens


@pytest.mark.parametrize("kind", ["random", "partial-oracle", "trained"])
@pytest.mark.parametrize("use_triton", [False, True])
@torch.no_grad()
def test_decode_steps_reproduce_the_reference(tmp_path, kind, use_triton, tiny_corpus, tiny_trained):
    max_new = 24
    target, reference, prompts = make_case(kind, tiny_corpus, tiny_trained)
    block_size = reference.block_size
    expected = spec_generate(target, reference, prompts, SamplingParams(max_new_tokens=max_new))

    host = MiniHost(target, reference, prompts, tmp_path, use_triton)
    tokens, accept_lens = decode_with_the_worker_step(host, prompts, reference, max_new)

    assert tokens == expected.token_ids
    assert accept_lens == expected.accept_lens
    assert host.checked_drafts == max(map(len, accept_lens))  # every step's draft was checked
    if kind != "random":
        assert max(a for row in accept_lens for a in row) == block_size  # full blocks were accepted
    if kind == "trained":
        assert len({a for row in accept_lens for a in row}) >= 3  # context-dependent, ragged acceptance


@pytest.mark.parametrize("kind", ["partial-oracle", "trained"])
@torch.no_grad()
def test_seeded_sampled_steps_reproduce_the_seeded_reference(tmp_path, kind, tiny_corpus, tiny_trained):
    """With per-request seeds (SGLang's sampling_seed) sampling is reproducible, so the worker's
    sampled steps must commit the reference's tokens exactly (without seeds only distributions match)."""
    max_new = 24
    target, reference, prompts = make_case(kind, tiny_corpus, tiny_trained)
    params = [
        SamplingParams(temperature=0.9, top_k=0 if r % 2 else 40, max_new_tokens=max_new, seed=17 + r)
        for r in range(len(prompts))
    ]
    expected = spec_generate(target, reference, prompts, params)

    host = MiniHost(target, reference, prompts, tmp_path, use_triton=False)
    tokens, accept_lens = decode_with_the_worker_step(host, prompts, reference, max_new, params=params)
    assert tokens == expected.token_ids
    assert accept_lens == expected.accept_lens
    assert any(a > 1 for row in accept_lens for a in row)  # sampled drafts were accepted


@pytest.mark.parametrize("kind", ["partial-oracle", "trained"])
@torch.no_grad()
def test_penalised_steps_reproduce_the_penalised_reference(tmp_path, kind, tiny_corpus, tiny_trained):
    """Frequency, presence and repetition penalties, greedy and seeded-sampled rows: the worker's
    step counts the drafts before each block position exactly as the reference does.  (16 new tokens:
    the harness decodes every row until the slowest has them, within its rows of slots.)"""
    max_new = 16
    target, reference, prompts = make_case(kind, tiny_corpus, tiny_trained)
    penalties = [
        dict(frequency_penalty=1.2),
        dict(presence_penalty=0.7, repetition_penalty=1.4),
        dict(repetition_penalty=0.8, frequency_penalty=-0.5),
        dict(),
    ]
    params = [
        SamplingParams(max_new_tokens=max_new, temperature=0.8 * (r % 2), seed=5 + r, **penalties[r % 4])
        for r in range(len(prompts))
    ]
    expected = spec_generate(target, reference, prompts, params)
    unpenalised = spec_generate(target, reference, prompts, SamplingParams(max_new_tokens=max_new))
    assert expected.token_ids[0] != unpenalised.token_ids[0]  # the penalties change the output

    host = MiniHost(target, reference, prompts, tmp_path, use_triton=False)
    tokens, accept_lens = decode_with_the_worker_step(host, prompts, reference, max_new, params=params)
    assert tokens == expected.token_ids
    assert accept_lens == expected.accept_lens
    assert any(a > 1 for row in accept_lens for a in row)


@pytest.mark.parametrize("kind", ["partial-oracle", "trained"])
@torch.no_grad()
def test_truncated_verify_widths_keep_greedy_output_and_the_draft_context_exact(
    tmp_path, kind, tiny_corpus, tiny_trained
):
    """Steps that verify 1 (plain decoding), 2 or 3 of the 4 block positions, mixed with whole
    blocks, commit the target's greedy tokens, and the draft pool stays a fresh context's."""
    max_new = 24
    target, reference, prompts = make_case(kind, tiny_corpus, tiny_trained)
    assert reference.block_size == 4
    plain = spec_generate(target, reference, prompts, SamplingParams(max_new_tokens=max_new))

    host = MiniHost(target, reference, prompts, tmp_path, use_triton=False)
    widths = [1, 3, 4, 2]
    tokens, accept_lens = decode_with_the_worker_step(host, prompts, reference, max_new, widths)

    assert tokens == plain.token_ids
    steps = max(map(len, accept_lens))
    assert host.checked_drafts == steps - sum(1 for i in range(steps) if widths[i % 4] == 1)
    for row in accept_lens:
        for i, n in enumerate(row[:-1]):  # the last step may be cut by max_new
            assert 1 <= n <= widths[i % 4]
    # Truncated steps still accept drafts (the truncation is of the block, not of the drafting).
    assert any(n > 1 for row in accept_lens for i, n in enumerate(row) if widths[i % 4] in (2, 3))


@pytest.mark.parametrize("mask_drafts", [False, True])
@pytest.mark.parametrize("kind", ["partial-oracle", "trained"])
@torch.no_grad()
def test_grammar_constrained_steps_equal_constrained_greedy_decoding(
    tmp_path, kind, mask_drafts, tiny_corpus, tiny_trained
):
    """Every block position is masked with the grammar state after the drafts before it: the output
    is the target's own constrained greedy output, also where the grammar forbids the drafter's
    favourite token ("6", token 7, in the oracle case) and for a request without a grammar."""
    max_new = 20
    target, reference, prompts = make_case(kind, tiny_corpus, tiny_trained)
    regexes = ["[0-5a-f]+(,[0-9]+)*", None, "(yes|no|ok)(,[a-z0-57-9]+)+", "[a-z]+(,[0-9]+)*"][: len(prompts)]
    make = tiny_grammar_factory(target.config.get_text_config().vocab_size)
    unconstrained = spec_generate(target, reference, prompts, SamplingParams(max_new_tokens=max_new))
    expected = [
        constrained_greedy(target, list(p), make(rx), max_new) if rx else unconstrained.token_ids[r]
        for r, (p, rx) in enumerate(zip(prompts, regexes))
    ]

    host = MiniHost(target, reference, prompts, tmp_path, use_triton=False)
    grammars = [make(rx) if rx else None for rx in regexes]
    tokens, accept_lens = decode_with_the_worker_step(
        host, prompts, reference, max_new, grammars=grammars, mask_drafts=mask_drafts
    )

    assert tokens == expected
    for r, rx in enumerate(regexes):
        if rx is not None:
            check = make(rx)
            for token in tokens[r]:  # every committed token is one the grammar allowed
                assert token in allowed_tokens(check, 64)
                check.accept_token(token)
    if kind == "partial-oracle":
        assert all(7 not in tokens[r] for r, rx in enumerate(regexes) if rx)
        assert unconstrained.token_ids[0].count(7) > 0  # unconstrained, the target does say "6"
    if mask_drafts:
        assert max(a for row in accept_lens for a in row) > 1  # allowed drafts get accepted


class FakeEvent:
    """A completed CUDA event recorded at a fixed time (ms)."""

    def __init__(self, at: float) -> None:
        self.at = at

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: "FakeEvent") -> float:
        return end.at - self.at


def test_profiler_times_the_three_phases_the_gap_and_the_host_of_every_step(tmp_path, monkeypatch):
    events = iter(range(1000))
    monkeypatch.setattr(StepProfiler, "mark", staticmethod(lambda: FakeEvent(next(events) * 2.0)))
    host = iter(range(1000))
    profiler = StepProfiler(str(tmp_path / "profile.json"), clock=lambda: next(host) * 0.001)
    bs, block_size, vocab = 2, 4, 9
    inputs = StepInputs(
        bonus_tokens=torch.tensor([1, 2]),
        seq_lens=torch.tensor([3, 5]),
        out_cache_loc=torch.arange(bs * block_size),
        block_size=block_size,
        mask_token_id=0,
        sampling=BatchSampling.from_params([SamplingParams()] * bs),
    )
    logits = torch.randn(bs * block_size, vocab, generator=torch.Generator().manual_seed(0))
    for step in range(StepProfiler.WRITE_EVERY * 2):
        if step == StepProfiler.WRITE_EVERY:
            profiler.forward_done()  # a prefill: the next step's device gap is not timed
        profiler.begin_step()
        decode_step(
            inputs,
            draft=lambda block, positions: logits,
            verify=lambda block, positions, slots: (logits, torch.zeros(bs * block_size, 1)),
            inject=lambda hidden, positions, slots: None,
            profiler=profiler,
        )
        profiler.end_step(block_size, (True, step % 2 == 0))
    written = json.loads((tmp_path / "profile.json").read_text())
    steps = StepProfiler.WRITE_EVERY * 2
    # Every event 2 ms after the one before; the host clock reads 1 ms later at every call.
    assert written["steps"] == steps
    device_phases = ("draft_ms", "verify_ms", "accept_inject_ms")
    assert {k: written[k] for k in device_phases} == dict.fromkeys(device_phases, 2.0)
    # 2 ms between steps, except before the first step and the first after the prefill
    assert written["gpu_gap_ms"] == pytest.approx(2.0 * (steps - 2) / steps)
    assert written["graph_steps"] == {"draft": steps, "verify": steps // 2}
    assert written["step_ms"] == 1.0  # begin_step and end_step read the clock one after the other
    assert written["widths"] == {str(block_size): {"steps": steps, "step_ms": 6.0}}
    # host_ms: from the previous end_step (or prefill) to begin_step, one clock read apart
    assert written["totals_ms"]["host_ms"] == pytest.approx(1.0 * (steps - 1))
