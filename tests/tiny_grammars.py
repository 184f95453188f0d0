"""SGLang's own xgrammar grammar objects over the tiny models' 64-token vocabulary (for CPU tests).

Token ``i`` spells ``TINY_VOCAB[i]``: 0 is the stop token, 1..10 the digits, 11..36 the letters,
then JSON punctuation and a few multi-character tokens.  Token 7 spells "6", the token
``testing.arrange_oracle`` makes drafters favour in the tests.
"""

from __future__ import annotations

import torch

STOP = "<stop>"
TINY_VOCAB = [STOP, *"0123456789", *"abcdefghijklmnopqrstuvwxyz", *'{}[]":,. -_']
TINY_VOCAB += [
    "ab",
    "cd",
    "12",
    "true",
    "false",
    "null",
    "name",
    "age",
    "ok",
    "no",
    "yes",
    "42",
    "ba",
    "dc",
    "07",
]
TINY_VOCAB += [f"<unused{i}>" for i in range(64 - len(TINY_VOCAB))]
assert len(TINY_VOCAB) == 64


def tiny_grammar_factory(vocab_size: int = 64):
    """A function regex -> a fresh SGLang ``XGrammarGrammar`` (its own matcher) over TINY_VOCAB."""
    import xgrammar
    from sglang.srt.constrained.xgrammar_backend import XGrammarGrammar

    info = xgrammar.TokenizerInfo(TINY_VOCAB[:vocab_size], stop_token_ids=[0])
    compiler = xgrammar.GrammarCompiler(info)

    def make(regex: str) -> XGrammarGrammar:
        compiled = compiler.compile_regex(regex)
        matcher = xgrammar.GrammarMatcher(compiled)
        return XGrammarGrammar(matcher, vocab_size, compiled, None, key_string=regex)

    return make


def allowed_tokens(grammar, vocab_size: int) -> set[int]:
    """The tokens a grammar allows next."""
    mask = grammar.allocate_vocab_mask(vocab_size=vocab_size, batch_size=1, device="cpu")
    grammar.fill_vocab_mask(mask, 0)
    return {t for t in range(vocab_size) if (int(mask[0, t // 32]) >> (t % 32)) & 1}


def grammar_argmax(grammar, logits: torch.Tensor) -> int:
    """The most likely token of ``logits`` [V] that the grammar allows next (the grammar is not advanced)."""
    from sglang_dflash.grammar import apply_bitmask

    masked = logits[None].clone()
    mask = grammar.allocate_vocab_mask(vocab_size=masked.shape[-1], batch_size=1, device="cpu")
    grammar.fill_vocab_mask(mask, 0)
    apply_bitmask(grammar, masked, mask)
    return int(masked.argmax())


def constrained_greedy(target, prompt: list[int], grammar, max_new: int) -> list[int]:
    """Plain greedy decoding of a Hugging Face target under a grammar (the grammar is advanced)."""
    tokens: list[int] = []
    for _ in range(max_new):
        token = grammar_argmax(grammar, target(torch.tensor([prompt + tokens])).logits[0, -1])
        grammar.accept_token(token)
        tokens.append(token)
        if grammar.is_terminated():
            break
    return tokens
