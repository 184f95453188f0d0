"""Grammar-constrained DFlash steps (JSON schema, regex, EBNF, structural tags), host-agnostic.

A DFlash block is the one-branch case of SGLang's tree walk (``spec_utils.traverse_tree``): block
position ``j`` must be masked with the grammar state reached after the bonus token (already
accepted by the grammar when the last step's result was processed) and the drafts ``1 .. j``.
:class:`BlockGrammar` walks that chain once per step on the host: advance the request's matcher
through the drafts while the grammar allows them, fill one bitmask row per position, roll back.
Masking the target's logits row by row makes the target reject the first draft the grammar
forbids and choose its own token from the allowed ones, so greedy output is the target's own
constrained greedy output and sampled output keeps the constrained target's distribution.  The
committed tokens advance the grammar exactly once, in the host's result processing.

With ``mask_drafts`` (the worker's default) the drafter's choices are constrained too: position
``j``'s draft is chosen from the drafter's logits under row ``j - 1``'s mask, so every draft is one
the grammar allows and the verify masks are the rows filled while drafting (no second walk).
Drafts become sequential on the host (one device read per position); measured on JSON-schema
prompts it raises tau (1.05 -> 1.30 with the first CPU drafter, docs/benchmarks.md).

Grammar objects are SGLang's (``BaseGrammarObject``: ``accept_token``, ``rollback``,
``is_terminated``, ``allocate_vocab_mask``, ``fill_vocab_mask``, ``apply_vocab_mask``); this
module imports nothing from SGLang, so the CPU tests drive it with plain xgrammar matchers too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch

from . import speculative as spec


class Grammar(Protocol):
    """What a block walk needs of one request's grammar (SGLang's ``BaseGrammarObject``)."""

    def accept_token(self, token: int) -> None: ...

    def rollback(self, k: int) -> None: ...

    def is_terminated(self) -> bool: ...

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device) -> torch.Tensor: ...

    def fill_vocab_mask(self, vocab_mask: torch.Tensor, idx: int) -> None: ...

    def apply_vocab_mask(self, logits: torch.Tensor, vocab_mask: torch.Tensor) -> None: ...


def apply_bitmask_on_cpu(logits: torch.Tensor, bitmask: torch.Tensor) -> None:
    """xgrammar's packed token bitmask applied to CPU logits in place (forbidden tokens -> -inf)."""
    import xgrammar

    xgrammar.apply_token_bitmask_inplace(logits, bitmask.to(torch.int32))


def apply_bitmask(grammar: Grammar, logits: torch.Tensor, bitmask: torch.Tensor) -> None:
    """Set the logits of forbidden tokens to -inf in place: logits [rows, V], bitmask [rows, words].

    On CPU this is xgrammar's own kernel (SGLang's grammar objects only mask CUDA-like tensors);
    elsewhere the grammar's backend applies its mask as SGLang's sampler does.
    """
    if logits.device.type == "cpu":
        apply_bitmask_on_cpu(logits, bitmask)
    else:
        grammar.apply_vocab_mask(logits=logits, vocab_mask=bitmask.to(logits.device, non_blocking=True))


def token_allowed(bitmask_row: torch.Tensor, token: int, vocab_size: int) -> bool:
    """Whether a packed bitmask row (32 tokens per int32 word) allows ``token``."""
    if not 0 <= token < vocab_size:
        return False
    return bool((int(bitmask_row[token // 32]) >> (token % 32)) & 1)


def allows_no_token(bitmask_rows: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """[rows] bool: packed bitmask rows [rows, words] that allow no token below ``vocab_size``."""
    full_words, rest = divmod(vocab_size, 32)
    allowed = (bitmask_rows[:, :full_words] != 0).any(-1)
    if rest:
        allowed |= (bitmask_rows[:, full_words] & ((1 << rest) - 1)) != 0
    return ~allowed


def open_dead_ends_(bitmask: torch.Tensor, rows: Sequence[int], vocab_size: int) -> list[int]:
    """Rows among ``rows`` of ``bitmask`` that allow no token, reopened in place (all allowed).

    A grammar state that allows nothing (a matcher that allowed a token it cannot continue from)
    would turn a whole row of logits into -inf and its distribution into NaN, which ``sampling``
    cannot draw from. Reopened, the drafter drafts freely there and the target chooses its own
    token; the host's result processing then refuses that token and aborts the one request
    (``FINISH_ABORT``), as it does for any token its grammar does not accept.
    """
    if not rows:
        return []
    index = torch.tensor(list(rows), dtype=torch.long)
    dead = index[allows_no_token(bitmask[index], vocab_size)]
    bitmask[dead] = -1
    return dead.tolist()


class BlockGrammar:
    """The grammars of one step's batch rows (None = unconstrained) and the block's bitmask.

    Rows of the bitmask are ``r * width + j``: request ``r``, block position ``j``.  Rows of
    unconstrained requests, and positions past a rejected draft or a terminated grammar, stay
    all-allowed (nothing after them is committed by the grammar's request).
    """

    def __init__(self, grammars: Sequence[Grammar | None], vocab_size: int, mask_drafts: bool = True):
        self.grammars = list(grammars)
        self.first = next((g for g in self.grammars if g is not None), None)
        if self.first is None:
            raise ValueError("BlockGrammar: grammars is all None; expected at least one request's grammar")
        self.vocab_size = vocab_size
        self.mask_drafts = mask_drafts
        self.bitmask: torch.Tensor | None = None  # filled by draft() when mask_drafts

    @staticmethod
    def of_batch(
        grammars: Sequence[Grammar | None] | None, vocab_size: int, mask_drafts: bool = True
    ) -> BlockGrammar | None:
        """The step's grammar walk, or None when no live request of the batch has a grammar."""
        if not grammars or all(g is None for g in grammars):
            return None
        return BlockGrammar(grammars, vocab_size, mask_drafts)

    def _allocate(self, width: int) -> torch.Tensor:
        return self.first.allocate_vocab_mask(
            vocab_size=self.vocab_size, batch_size=len(self.grammars) * width, device="cpu"
        )

    def _live(self, grammar: Grammar | None) -> bool:
        return grammar is not None and not grammar.is_terminated()

    # ------------------------------------------------------------------ verify masks from given drafts
    def walk(self, block_tokens: torch.Tensor) -> torch.Tensor:
        """Bitmask rows for ``block_tokens`` [bs, width] = [bonus token, drafts] (host tensor).

        For each request: fill row 0 from the current state, then accept drafts while the previous
        row allows them, filling one row each, and roll the matcher back to where it was.
        """
        bs, width = block_tokens.shape
        bitmask = self._allocate(width)
        tokens = block_tokens.tolist()
        for r, grammar in enumerate(self.grammars):
            if not self._live(grammar):
                continue
            accepted = 0
            for j in range(width):
                row = r * width + j
                if j > 0:
                    if not token_allowed(bitmask[row - 1], tokens[r][j], self.vocab_size):
                        break
                    grammar.accept_token(tokens[r][j])
                    accepted += 1
                    if grammar.is_terminated():
                        break
                grammar.fill_vocab_mask(bitmask, row)
                if open_dead_ends_(bitmask, [row], self.vocab_size):
                    break
            if accepted:
                grammar.rollback(accepted)
        return bitmask

    # ------------------------------------------------------------------ constrained drafting
    def draft(
        self,
        draft_logits: torch.Tensor,
        sampling: spec.BatchSampling,
        generator: torch.Generator | spec.SeededDraws | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Drafts [bs, n] chosen position by position under the grammar (n = width - 1).

        Returns what :func:`speculative.draft_tokens` returns (drafts, draft distributions of the
        masked logits or None); keeps the block's bitmask [bs * (n + 1), words] for :meth:`mask_target`.
        """
        bs, n, _ = draft_logits.shape
        width = n + 1
        bitmask = self._allocate(width)
        live = [self._live(g) for g in self.grammars]
        accepted = [0] * bs
        drafts, probs = [], []
        for j in range(width):
            for r, grammar in enumerate(self.grammars):
                if live[r]:
                    grammar.fill_vocab_mask(bitmask, r * width + j)
            live_rows = [r * width + j for r in range(bs) if live[r]]
            for row in open_dead_ends_(bitmask, live_rows, self.vocab_size):
                live[row // width] = False  # the chain stops: its draft here is not the grammar's
            if j == n:
                break
            logits = draft_logits[:, j].clone()
            rows = torch.arange(bs) * width + j
            apply_bitmask(self.first, logits, bitmask[rows])
            chosen, chosen_probs = spec.draft_tokens(logits[:, None], sampling, spec.shifted(generator, j))
            drafts.append(chosen[:, 0])
            probs.append(chosen_probs)
            for r, token in enumerate(chosen[:, 0].tolist()):
                if live[r]:
                    self.grammars[r].accept_token(token)
                    accepted[r] += 1
                    live[r] = not self.grammars[r].is_terminated()
        for r, grammar in enumerate(self.grammars):
            if accepted[r]:
                grammar.rollback(accepted[r])
        self.bitmask = bitmask
        draft_probs = None if probs[0] is None else torch.cat(probs, dim=1)
        return torch.stack(drafts, dim=1), draft_probs

    # ------------------------------------------------------------------ the target's logits
    def mask_target(self, block_tokens: torch.Tensor, target_logits: torch.Tensor) -> None:
        """Mask target_logits [bs, width, V] in place for block_tokens [bs, width] (any device).

        Uses the bitmask :meth:`draft` filled when the drafts were constrained; otherwise walks
        the drafts (one device read of the block).
        """
        bs, width, vocab = target_logits.shape
        bitmask = self.bitmask
        if bitmask is None or bitmask.shape[0] != bs * width:
            bitmask = self.walk(block_tokens.cpu())
        apply_bitmask(self.first, target_logits.view(bs * width, vocab), bitmask)
