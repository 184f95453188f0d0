"""The staged greedy verify (:mod:`sglang_dflash.serving.staged_verify`): scoring the blocks' later
columns only for the requests that accepted every draft of the first ones commits what one pass
over the whole block commits.  A tiny causal target stands in for the SGLang verify pass; the
engine end to end runs it in tests/serving/test_dflash_overlap.py."""

import json
from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("sglang.srt.layers.radix_attention", reason="needs the sglang extra installed")

from sglang_dflash import speculative as spec
from sglang_dflash.adaptive import AdaptiveConfig, VerifyWidthPolicy
from sglang_dflash.serving import worker
from sglang_dflash.serving.outputs import ColumnArgmax
from sglang_dflash.serving.staged_verify import (
    SECOND_PASS_ENV,
    STAGED_VERIFY_ENV,
    SecondPassGate,
    VerifyPass,
    first_pass_columns,
    second_pass_policy,
    staged_verify,
    stages_verify,
)
from sglang_dflash.serving.worker import WallClockProfiler, can_split_batch, request_subset
from sglang_dflash.speculative import greedy_accept, greedy_accept_by_columns
from sglang_dflash.testing import make_tiny_target

WIDTH = 16
PREFIXES = [[5], [3, 4, 5], [9, 8, 7, 6], [2, 2], [11, 12, 13], [7]]


class TinyVerifier:
    """A causal target scoring block columns from scratch over prefix + block (what the KV cache
    gives the SGLang pass), counting the passes and the lm_head rows they cost."""

    def __init__(self) -> None:
        self.model = make_tiny_target("llama", seed=1)
        self.passes: list[tuple[list[int], int, int]] = []
        self.logit_rows = 0

    @torch.no_grad()
    def states(self, ids: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """(final hidden [n, H], aux features [n, 2H]: two inner layers) of every position."""
        out = self.model.model(torch.tensor([ids]), output_hidden_states=True)
        aux = torch.cat([out.hidden_states[1][0], out.hidden_states[2][0]], dim=-1)
        return out.last_hidden_state[0], aux

    @torch.no_grad()
    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        self.logit_rows += hidden.shape[0]
        return self.model.lm_head(hidden).float()

    def greedy(self, ids: list[int], n: int) -> list[int]:
        out = []
        for _ in range(n):
            out.append(int(self.logits(self.states(ids + out)[0][-1:]).argmax()))
        return out

    def run_pass(self, tokens: torch.Tensor, requests: torch.Tensor, start: int, stop: int) -> VerifyPass:
        self.passes.append((requests.tolist(), start, stop))
        finals, auxes = [], []
        for r in requests.tolist():
            final, aux = self.states(PREFIXES[r] + tokens[r, :stop].tolist())
            finals.append(final[len(PREFIXES[r]) + start :])
            auxes.append(aux[len(PREFIXES[r]) + start :])
        return VerifyPass(torch.cat(finals), torch.cat(auxes), self.logits)


def blocks_accepting(verifier: TinyVerifier, matched: list[int]) -> torch.Tensor:
    """[bonus token, drafts] per request whose first ``matched[r]`` drafts are the target's greedy
    tokens and whose next draft (if any) is not."""
    rows = []
    for prefix, n in zip(PREFIXES, matched):
        greedy = verifier.greedy(prefix, WIDTH + 1)  # bonus token, then the target's continuation
        wrong = [(t + 1) % verifier.model.config.vocab_size for t in greedy]
        rows.append(greedy[: n + 1] + wrong[n + 1 : WIDTH])
    return torch.tensor(rows)


@pytest.mark.parametrize("cheap_rows", [1, 4])
def test_a_staged_verify_commits_what_one_pass_commits_and_scores_later_columns_only_for_accepting_requests(
    cheap_rows,
):
    verifier = TinyVerifier()
    matched = [0, 2, 3, 4, 6, 15]  # drafts accepted per request; first pass: columns 0-3
    tokens = blocks_accepting(verifier, matched)
    everyone = torch.arange(len(PREFIXES))
    whole = verifier.run_pass(tokens, everyone, 0, WIDTH)
    expected_accepted, expected_emitted = greedy_accept(
        tokens[:, 1:], verifier.logits(whole.final).view(len(PREFIXES), WIDTH, -1)
    )
    assert expected_accepted.tolist() == matched
    verifier.passes, verifier.logit_rows = [], 0

    staged = staged_verify(tokens, 4, lambda *a: verifier.run_pass(tokens, *a), cheap_rows)
    accepted, emitted = greedy_accept_by_columns(tokens[:, 1:], staged.argmax, cheap_rows)

    # Only the requests whose drafts 1-4 all matched (4, 6 and 15 accepted) reach columns 4-15.
    assert verifier.passes == [(everyone.tolist(), 0, 4), ([3, 4, 5], 4, WIDTH)]
    assert staged.second_pass_requests == 3
    assert accepted.tolist() == matched
    for r, n in enumerate(matched):
        assert emitted[r, : n + 1].tolist() == expected_emitted[r, : n + 1].tolist()
        committed = slice(r * WIDTH, r * WIDTH + n + 1)  # the rows the step injects
        assert torch.allclose(staged.aux[committed], whole.aux[committed], atol=1e-5)
    # Each lm_head row ran once (the step's acceptance found the first pass's rows computed), and
    # never for the columns past the first pass of a request that stopped there.
    assert verifier.logit_rows == staged.argmax.rows_computed
    assert staged.argmax.rows_computed <= len(PREFIXES) * 4 + 3 * (WIDTH - 4)


def test_no_second_pass_when_every_request_stops_in_the_first_columns():
    verifier = TinyVerifier()
    tokens = blocks_accepting(verifier, [0, 1, 3, 2, 0, 3])
    staged = staged_verify(tokens, 4, lambda *a: verifier.run_pass(tokens, *a))
    accepted, _ = greedy_accept_by_columns(tokens[:, 1:], staged.argmax)
    assert accepted.tolist() == [0, 1, 3, 2, 0, 3]
    assert staged.second_pass_requests == 0 and len(verifier.passes) == 1
    assert staged.aux.shape == (len(PREFIXES) * WIDTH, 2 * verifier.model.config.hidden_size)


@pytest.mark.parametrize("first", [0, WIDTH, WIDTH + 1])
def test_a_first_pass_outside_the_block_is_refused(first):
    with pytest.raises(ValueError, match=f"first pass takes 1 to {WIDTH - 1} columns, got {first}"):
        staged_verify(torch.zeros(2, WIDTH, dtype=torch.long), first, lambda *a: None)


def test_column_argmax_computes_each_row_once_and_answers_settled_rows_without_the_lm_head():
    hidden, head = torch.randn(3 * 4, 5), torch.randn(7, 5)
    computed = []

    def logits(rows):
        computed.append(rows.shape[0])
        return rows @ head.T

    argmax = ColumnArgmax(hidden, 4, logits)
    expected = (hidden @ head.T).argmax(-1).view(3, 4)
    assert torch.equal(argmax(torch.tensor([0, 2]), 0, 2), expected[[0, 2], :2])
    assert torch.equal(argmax(torch.tensor([2]), 1, 4), expected[2:, 1:4])  # column 1 already known
    assert computed == [4, 2] and argmax.rows_computed == 6
    argmax.settle(torch.tensor([1]), 2, 4)
    assert argmax(torch.tensor([1]), 2, 4).tolist() == [[0, 0]] and computed == [4, 2]


def test_the_first_pass_width_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(STAGED_VERIFY_ENV, raising=False)
    assert first_pass_columns() == 4
    monkeypatch.setenv(STAGED_VERIFY_ENV, "0")
    assert first_pass_columns() == 0
    monkeypatch.setenv(STAGED_VERIFY_ENV, "four")
    with pytest.raises(ValueError, match="SGLANG_DFLASH_STAGED_VERIFY is 'four'; expected a whole number"):
        first_pass_columns()


def test_only_steps_wider_than_the_first_pass_stage():
    assert stages_verify(4, 16) and stages_verify(4, 8)
    assert not stages_verify(0, 16)  # switched off
    assert not stages_verify(4, 4) and not stages_verify(4, 1)  # an adaptive width within the first pass


def test_request_subset_cuts_and_advances_the_chosen_requests_and_leaves_the_batch_alone():
    batch = SimpleNamespace(
        reqs=["a", "b", "c"],
        req_pool_indices=torch.tensor([7, 8, 9]),
        req_pool_indices_cpu=None,
        seq_lens=torch.tensor([10, 20, 30]),
        seq_lens_cpu=torch.tensor([10, 20, 30]),
        seq_lens_sum=60,
        orig_seq_lens=torch.tensor([10, 20, 30], dtype=torch.int32),
        multimodal_inputs=[None, None, None],
        mamba_track_indices=None,
        encoder_lens=None,
        top_logprobs_nums=None,
        token_ids_logprobs=None,
    )
    assert can_split_batch(batch)
    sub = request_subset(batch, torch.tensor([0, 2]), 4)
    assert sub.reqs == ["a", "c"] and sub.req_pool_indices.tolist() == [7, 9]
    assert sub.seq_lens.tolist() == [14, 34] and sub.seq_lens_cpu.tolist() == [14, 34]
    assert sub.seq_lens_sum == 48 and sub.orig_seq_lens.tolist() == [14, 34]
    assert sub.multimodal_inputs == [None, None]
    assert batch.seq_lens.tolist() == [10, 20, 30] and batch.reqs == ["a", "b", "c"]
    assert not can_split_batch(SimpleNamespace(**{**vars(batch), "top_logprobs_nums": [0, 0, 0]}))
    assert not can_split_batch(
        SimpleNamespace(**{**vars(batch), "multimodal_inputs": [None, {"x": 1}, None]})
    )


def test_the_cpu_profile_writes_running_counts(tmp_path):
    path = tmp_path / "profile.json"
    profiler = WallClockProfiler(str(path))
    for second in (2, 0):
        profiler.begin_step()
        profiler.count("staged_steps", 1)
        profiler.count("second_pass_requests", second)
        profiler.end_step(16)
    assert json.loads(path.read_text())["counts"] == {"staged_steps": 2, "second_pass_requests": 2}


def test_a_gate_that_refuses_the_second_pass_commits_the_first_columns_the_target_verified():
    """Cut after the first pass, an onward request commits its first 3 drafts and the target's
    token after them (the 4th draft, as the bonus token): what a verify of 4 columns commits."""
    verifier = TinyVerifier()
    matched = [0, 2, 3, 4, 6, 15]
    tokens = blocks_accepting(verifier, matched)
    narrow_accepted, narrow_emitted = greedy_accept(
        tokens[:, 1:4], verifier.logits(verifier.run_pass(tokens, torch.arange(6), 0, 4).final).view(6, 4, -1)
    )
    verifier.passes, verifier.logit_rows = [], 0

    staged = staged_verify(tokens, 4, lambda *a: verifier.run_pass(tokens, *a), gate=SecondPassGate("never"))
    accepted, emitted = greedy_accept_by_columns(tokens[:, 1:], staged.argmax)
    accepted = torch.minimum(accepted, staged.argmax.verified - 1)  # what decode_step commits

    assert verifier.passes == [(list(range(6)), 0, 4)]
    assert staged.second_pass_requests == 0 and staged.cut_requests == 3
    assert staged.onward.tolist() == [3, 4, 5]
    assert staged.argmax.verified.tolist() == [WIDTH, WIDTH, WIDTH, 4, 4, 4]
    assert accepted.tolist() == narrow_accepted.tolist() == [0, 2, 3, 3, 3, 3]
    for r, n in enumerate(accepted.tolist()):
        assert emitted[r, : n + 1].tolist() == narrow_emitted[r, : n + 1].tolist()
    assert staged.argmax.rows_computed <= len(PREFIXES) * 4  # no lm_head row past the first pass


class StepClock:
    """A clock that moves ``ticks`` seconds at each read (so each timed pass lasts one tick)."""

    def __init__(self, *ticks: float) -> None:
        self.now, self.ticks = 0.0, list(ticks)

    def __call__(self) -> float:
        self.now += self.ticks.pop(0) if self.ticks else 0.0
        return self.now


def test_staged_verify_times_both_passes_for_the_gate():
    verifier = TinyVerifier()
    tokens = blocks_accepting(verifier, [0, 2, 3, 4, 6, 15])
    gate = SecondPassGate()
    clock = StepClock(0.0, 0.2, 0.0, 0.05)  # first pass 200 ms, second 50 ms
    staged_verify(tokens, 4, lambda *a: verifier.run_pass(tokens, *a), gate=gate, clock=clock)
    assert (gate.first_rows.value, gate.first_ms.value) == (6 * 4, pytest.approx(200.0))
    assert (gate.second_rows.value, gate.second_ms.value) == (3 * 12, pytest.approx(50.0))


def test_the_gate_runs_the_second_pass_when_its_tokens_per_ms_beat_the_steps_rate():
    gate = SecondPassGate(trust_after=1, explore_every=100)
    assert gate.pays(1, 12)  # nothing measured yet: it runs, and is measured
    gate.observe_pass(False, 64, 200.0)
    gate.observe_pass(True, 24, 80.0)  # the line: 3 ms a row, 8 ms at no rows
    assert gate.predicted_ms(12) == pytest.approx(44.0) and gate.predicted_ms(48) == pytest.approx(152.0)
    gate.observe_step(tokens=40, ms=400.0)  # 0.1 token per ms
    assert gate.pays(1, 12)  # nothing measured the tokens a second pass adds yet
    gate.observe_gain(requests=2, columns=12, added_tokens=5)  # 2.5 tokens per onward request
    assert not gate.pays(1, 12)  # 2.5 tokens in 44 ms: below 0.1 per ms
    assert not gate.pays(4, 12)  # 10 tokens in 152 ms (48 rows)
    assert gate.pays(1, 4)  # a second pass of 4 columns (an adaptive width of 8): not measured yet
    gate.observe_step(tokens=4, ms=200.0)  # the rate falls toward 0.02 per ms: 0.1 + 0.1 * (0.02 - 0.1)
    assert gate.rate.value == pytest.approx(0.092)
    gate.observe_gain(requests=1, columns=12, added_tokens=30)  # 2.5 + 0.1 * (30 - 2.5) = 5.25
    assert gate.pays(1, 12)  # 5.25 tokens in 44 ms: 0.119 per ms
    assert SecondPassGate("always").pays(1, 12) and not SecondPassGate("never").pays(16, 12)


def test_the_gate_trusts_a_few_second_passes_and_explores_after_a_run_of_cuts():
    gate = SecondPassGate(trust_after=3, explore_every=4)
    gate.observe_pass(False, 64, 200.0)
    gate.observe_pass(True, 12, 60.0)
    gate.observe_step(tokens=32, ms=250.0)  # 0.128 token per ms: one request's pass needs 7.7
    answers = []
    for _ in range(3):  # an unlucky start: each onward request added 1 token
        answers.append(gate.pays(1, 12))
        gate.observe_gain(requests=1, columns=12, added_tokens=1)
    answers += [gate.pays(1, 12) for _ in range(8)]
    assert answers == [True] * 3 + [False, False, False, True] * 2  # every 4th a second pass anyway


def test_a_second_pass_no_dearer_per_row_than_the_first_is_predicted_at_its_own_time():
    gate = SecondPassGate()
    gate.observe_pass(False, 4, 60.0)  # one request: the first pass took longer than the second
    gate.observe_pass(True, 12, 50.0)
    assert gate.predicted_ms(24) == pytest.approx(50.0)  # a negative slope is no slope


def test_the_second_pass_policy_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(SECOND_PASS_ENV, raising=False)
    assert second_pass_policy() == "auto"
    monkeypatch.setenv(SECOND_PASS_ENV, "Never")
    assert second_pass_policy() == "never"
    monkeypatch.setenv(SECOND_PASS_ENV, "sometimes")
    with pytest.raises(ValueError, match="SGLANG_DFLASH_SECOND_PASS is 'sometimes'; expected one of auto"):
        second_pass_policy()
    with pytest.raises(ValueError, match="policy is 'sometimes'"):
        SecondPassGate("sometimes")


def test_a_decode_step_commits_no_more_than_a_cut_request_verified():
    """decode_step reads a deferred verify's ``verified``: request 0, cut after 4 columns, commits
    its first 3 drafts and the bonus token, though every one of its 7 drafts is the target's."""
    head = torch.full((12, 1), -1.0)
    head[5] = 1.0
    argmax = ColumnArgmax(torch.ones(2 * 8, 1), 8, lambda rows: rows @ head.T)
    argmax.cut(torch.tensor([0]), 4)
    injected = []
    step = _greedy_step(
        lambda tokens, positions, slots: (argmax, torch.zeros(2 * 8, 1)),
        inject=lambda hidden, positions, slots: injected.append(slots.tolist()),
    )
    assert step.num_correct_drafts.tolist() == [3, 7] and step.accept_lens.tolist() == [4, 8]
    assert step.bonus_tokens.tolist() == [5, 5]
    assert injected == [[0, 1, 2, 3, *range(8, 16)]]  # request 0's scored columns only


def test_the_worker_learns_what_second_passes_added_and_tells_the_policy_what_cuts_judged():
    verifier = TinyVerifier()
    tokens = blocks_accepting(verifier, [0, 2, 3, 4, 6, 15])
    ran = staged_verify(tokens, 4, lambda *a: verifier.run_pass(tokens, *a))
    gate = SecondPassGate()
    worker.learn_second_pass(gate, ran, torch.tensor([1, 3, 4, 5, 7, 16]), 4)
    assert gate.gains[12].value == pytest.approx((1 + 3 + 12) / 3)  # past the 4 tokens a cut commits
    assert worker.judged_acceptance(torch.tensor([0, 2, 3, 4, 6, 15]), ran, 4) == ([0, 2, 3, 4, 6, 15], None)

    cut = staged_verify(tokens, 4, lambda *a: verifier.run_pass(tokens, *a), gate=SecondPassGate("never"))
    accepted, judged = worker.judged_acceptance(torch.tensor([0, 2, 3, 3, 3, 3]), cut, 4)
    assert accepted == [0, 2, 3, 4, 4, 4] and judged == [15, 15, 15, 4, 4, 4]
    policy = VerifyWidthPolicy(AdaptiveConfig().for_block_size(WIDTH))
    policy.record_acceptance(WIDTH, accepted, judged)
    # Draft 5 of the cut requests was never judged: neither reached nor rejected.
    assert policy.reached[:6] == [6, 5, 5, 4, 0, 0] and policy.passed[:5] == [5, 5, 4, 3, 0]


def test_later_drafts_are_drafted_only_for_the_requests_that_reach_the_second_pass():
    """With ``fill_drafts``, the columns after the first pass's drafts start as LATER_DRAFT and
    only the onward requests' are drafted, before their second pass: the same commits."""
    verifier = TinyVerifier()
    matched = [0, 2, 3, 4, 6, 15]
    full = blocks_accepting(verifier, matched)
    tokens = full.clone()
    tokens[:, 5:] = worker.LATER_DRAFT  # columns 1-4 drafted with the block, the rest left
    filled = []

    def fill_drafts(requests):
        filled.append(requests.tolist())
        tokens[requests, 5:] = full[requests, 5:]

    staged = staged_verify(tokens, 4, lambda *a: verifier.run_pass(tokens, *a), fill_drafts=fill_drafts)
    accepted, _ = greedy_accept_by_columns(tokens[:, 1:], staged.argmax)
    assert filled == [[3, 4, 5]] and accepted.tolist() == matched
    assert (tokens[:3, 5:] == worker.LATER_DRAFT).all()  # never drafted: their verify ended earlier


def _greedy_step(verify, drafted_columns: int = 7, inject=lambda hidden, positions, slots: None):
    """A decode step of 2 requests (block 8) whose drafter returns its first ``drafted_columns``
    draft columns (7: all of them), each favouring token 5."""
    bs, width, vocab = 2, 8, 12
    draft_logits = torch.full((bs * drafted_columns, vocab), -1.0)
    draft_logits[:, 5] = 1.0
    return worker.decode_step(
        worker.StepInputs(
            bonus_tokens=torch.tensor([1, 2]),
            seq_lens=torch.tensor([3, 5]),
            out_cache_loc=torch.arange(bs * width),
            block_size=width,
            mask_token_id=0,
            sampling=spec.BatchSampling.from_params([spec.SamplingParams()] * bs),
        ),
        draft=lambda block, positions: draft_logits,
        verify=verify,
        inject=inject,
    )


def test_a_decode_step_accepts_the_drafts_its_verify_filled_in():
    """The verify gets LATER_DRAFT past column 4 and drafts request 1's later columns (token 5,
    the target's choice everywhere); request 0's stay unfilled and its verify is cut at 4."""
    head = torch.full((12, 1), -1.0)
    head[5] = 1.0
    seen = []

    def verify(tokens, positions, slots):
        seen.append(tokens.clone())
        tokens[1, 5:] = 5
        argmax = ColumnArgmax(torch.ones(2 * 8, 1), 8, lambda rows: rows @ head.T)
        argmax.cut(torch.tensor([0]), 4)
        return argmax, torch.zeros(2 * 8, 1)

    step = _greedy_step(verify, drafted_columns=4)
    assert seen[0][:, 1:5].tolist() == [[5] * 4] * 2 and (seen[0][:, 5:] == worker.LATER_DRAFT).all()
    assert step.num_correct_drafts.tolist() == [3, 7] and step.accept_lens.tolist() == [4, 8]


def test_drafts_left_to_a_verify_without_deferred_logits_are_refused():
    with pytest.raises(ValueError, match="drafts left to the verify need a staged verify's deferred logits"):
        _greedy_step(
            lambda tokens, positions, slots: (torch.zeros(2 * 8, 12), torch.zeros(2 * 8, 1)),
            drafted_columns=4,
        )
