"""The staged greedy verify (:mod:`sglang_dflash.serving.staged_verify`): scoring the blocks' later
columns only for the requests that accepted every draft of the first ones commits what one pass
over the whole block commits.  A tiny causal target stands in for the SGLang verify pass; the
engine end to end runs it in tests/serving/test_dflash_overlap.py."""

import json
from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("sglang.srt.layers.radix_attention", reason="needs the sglang extra installed")

from sglang_dflash.serving.outputs import ColumnArgmax
from sglang_dflash.serving.staged_verify import (
    STAGED_VERIFY_ENV,
    VerifyPass,
    first_pass_columns,
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
