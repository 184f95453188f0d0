"""What a DFLASH step hands back to SGLang for a request beyond its tokens: logprobs and hidden states.

- **Logprobs** (``return_logprob``, ``top_logprobs_num``, ``token_ids_logprob``):
  :func:`committed_logprobs` fills the verify pass's ``LogitsProcessorOutput`` with the host's own
  ``compute_spec_v2_logprobs`` (EAGLE v2 uses it), for every block position; the host reads the
  first ``accept_lens`` of each request.  Row ``j`` of a request's verified logits is the target's
  distribution for its committed token ``j`` (an accepted draft or the target's own token), after
  ``logit_bias`` and the grammar mask, tempered as plain decoding tempers it: so each committed
  token gets exactly the logprob plain decoding reports for it.  Prefill (input logprobs and the
  first token's) is the host's plain prefill.
- **Hidden states** (``return_hidden_states``, server flag ``--enable-return-hidden-states``):
  under DFLASH the target's logits processor stores the captured context layers in its
  ``hidden_states`` output (they feed the drafter), so :class:`FinalHiddenStates` takes the
  target's final hidden states where the model hands them to its logits processor.  A CUDA graph
  replay runs no Python hooks, so a pass that collects them runs eagerly.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import torch


def committed_logprobs(batch, logits_output, emitted: torch.Tensor) -> None:
    """Logprobs of every block position's token of ``emitted`` [bs, width] into ``logits_output``.

    ``logits_output.next_token_logits`` [bs * width, V] must already carry ``logit_bias`` and the
    grammar mask (the worker applies both in place before accepting).
    """
    from sglang.srt.layers.logprob_processor import compute_spec_v2_logprobs

    bs, width = emitted.shape
    every_position = torch.arange(bs * width, device=emitted.device).view(bs, width)
    compute_spec_v2_logprobs(batch, logits_output, emitted.reshape(-1), every_position, width - 1)


class CollectedHidden:
    """The hidden states one forward handed to the target's logits processor (or nothing, if off)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.value: torch.Tensor | None = None

    def hook(self, module, args, kwargs) -> None:
        """Forward pre-hook: ``logits_processor(input_ids, hidden_states, lm_head, batch, aux)``."""
        self.value = kwargs["hidden_states"] if "hidden_states" in kwargs else args[1]

    def get(self) -> torch.Tensor | None:
        """The final hidden states [num_tokens, H] when collecting, else None."""
        if self.enabled and self.value is None:
            raise RuntimeError(
                "sglang-dflash: the target's final hidden states are None; expected the tensor its "
                "logits processor received (return_hidden_states)"
            )
        return self.value


class FinalHiddenStates:
    """Collects the target's final hidden states of a forward for requests that asked for them."""

    GRAPH_RUNNERS = ("decode_cuda_graph_runner", "prefill_cuda_graph_runner")

    def __init__(self, model_runner) -> None:
        self.runner = model_runner

    @contextlib.contextmanager
    def collect(self, enabled: bool) -> Iterator[CollectedHidden]:
        """Within the block, the target's forward hands its final hidden states to the result.

        Off (``enabled=False``) it changes nothing; on, the forward runs eagerly (no graph replay)
        with a pre-hook on the target's logits processor.
        """
        collected = CollectedHidden(enabled)
        if not enabled:
            yield collected
            return
        handle = self.runner.model.logits_processor.register_forward_pre_hook(
            collected.hook, with_kwargs=True
        )
        graphs = {name: getattr(self.runner, name, None) for name in self.GRAPH_RUNNERS}
        for name, runner in graphs.items():
            if runner is not None:
                setattr(self.runner, name, None)
        try:
            yield collected
        finally:
            handle.remove()
            for name, runner in graphs.items():
                if runner is not None:
                    setattr(self.runner, name, runner)


class DeferredLogits:
    """The target's verify logits, computed only for the rows greedy acceptance asks for.

    During one verify forward (:meth:`capture`) the target's logits processor keeps its final
    hidden states instead of running the lm_head over every block position; :meth:`column_argmax`
    then runs the host's own lm_head path (its scale, softcap and float32 logits) over the block
    columns acceptance asks for, for the requests still accepting.  With tau ~1.5 a CPU step
    computes a few logits rows per request instead of the block width.
    """

    def __init__(self, logits_processor) -> None:
        self._processor = logits_processor
        self._get_logits = logits_processor._get_logits  # the host's bound method
        self._kept: tuple | None = None

    @contextlib.contextmanager
    def capture(self) -> Iterator[DeferredLogits]:
        """Within the block, the target's logits processor returns empty logits [N, 0] and keeps
        what it would have computed them from."""

        def keep(hidden_states, lm_head, logits_metadata, *args, **kwargs):
            self._kept = (hidden_states, lm_head, logits_metadata)
            return hidden_states.new_empty((hidden_states.shape[0], 0), dtype=torch.float32)

        self._kept = None
        self._processor._get_logits = keep
        try:
            yield self
        finally:
            del self._processor._get_logits  # the class's method again

    def kept(self) -> tuple[torch.Tensor, Callable[[torch.Tensor], torch.Tensor]]:
        """(final hidden states [N, H], ``logits(rows)`` -> float32 logits the host's way) of the
        last captured verify."""
        if self._kept is None:
            raise RuntimeError("DeferredLogits needs a verify forward run under capture()")
        hidden, lm_head, metadata = self._kept
        return hidden, lambda rows: self._get_logits(rows, lm_head, metadata)

    def column_argmax(self, width: int) -> ColumnArgmax:
        """``argmax(requests, start, stop)``: the target's argmax [len(requests), stop - start] after
        block positions ``start .. stop - 1`` for ``requests`` (batch rows) of the last captured
        verify of ``width`` positions per request."""
        hidden, logits = self.kept()
        return ColumnArgmax(hidden, width, logits)


class ColumnArgmax:
    """The target's argmax after chosen block positions of a verify, each row's lm_head run once.

    ``hidden`` [bs * width, H]: row ``r * width + c`` is block column ``c`` of request ``r``;
    ``logits(rows)`` -> float32 logits [n, V] of those hidden rows.  Calling it with
    ``(requests, start, stop)`` returns the argmax [len(requests), stop - start] of those columns,
    computing only the rows no earlier call computed (a staged verify asks its first columns twice).
    Rows :meth:`settle` d answer 0 without an lm_head: rows past a request's first rejected draft,
    which no committed token reads.  ``verified`` [bs] holds the block columns each request's verify
    scored (the width, or fewer after :meth:`cut`): acceptance commits at most that many tokens.
    """

    def __init__(self, hidden: torch.Tensor, width: int, logits: Callable[[torch.Tensor], torch.Tensor]):
        self.hidden, self.width, self.logits = hidden, width, logits
        self.tokens = torch.zeros(hidden.shape[0], dtype=torch.long, device=hidden.device)
        self.known = torch.zeros(hidden.shape[0], dtype=torch.bool, device=hidden.device)
        self.rows_computed = 0  # lm_head rows run so far
        self.verified = torch.full((hidden.shape[0] // width,), width, dtype=torch.long, device=hidden.device)

    def rows(self, requests: torch.Tensor, start: int, stop: int) -> torch.Tensor:
        """Hidden rows of block columns ``start .. stop - 1`` of ``requests``, request-major."""
        columns = torch.arange(start, stop, device=requests.device)
        return (requests[:, None] * self.width + columns).reshape(-1)

    def settle(self, requests: torch.Tensor, start: int, stop: int) -> None:
        """Columns ``start .. stop - 1`` of ``requests`` answer 0 from now on (never computed)."""
        self.known[self.rows(requests, start, stop)] = True

    def cut(self, requests: torch.Tensor, columns: int) -> None:
        """The verify of ``requests`` stops after block column ``columns - 1``: later columns were
        never scored, so they answer 0 and those requests commit at most ``columns`` tokens."""
        self.settle(requests, columns, self.width)
        self.verified[requests] = columns

    def __call__(self, requests: torch.Tensor, start: int, stop: int) -> torch.Tensor:
        rows = self.rows(requests, start, stop)
        missing = rows[~self.known[rows]]
        if missing.numel():
            self.tokens[missing] = self.logits(self.hidden[missing]).argmax(-1)
            self.known[missing] = True
            self.rows_computed += missing.numel()
        return self.tokens[rows].view(len(requests), stop - start)
