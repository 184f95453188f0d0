"""Requests that run into the context limit (``--context-length 256``, no ``max_new_tokens``) with our
DFLASH under the overlap scheduler, against plain decoding on the same flags.

Under the overlap scheduler a request whose last step ended it still runs one more step, whose block
starts up to a whole block past its limit.  The host sizes each ``req_to_token`` row for the context
length plus one block (and 4), so that block must be kept inside its own row: past it lie the next
row's KV slots (another request's prefix), and on CPU the slot gather comes back short.

Reaching past the row takes a long accepted block in a request's last step, which the shipped SmolLM2
drafter (tau about 1.4) rarely gives.  So the target is a tiny random Llama with SmolLM2's tokenizer,
rewired with its drafter as an oracle (:func:`sglang_dflash.testing.arrange_oracle`): the drafter
always drafts one token, the target says it more and more often as it accumulates (ragged, context
dependent blocks, then whole ones).  The drafter's choice being known, each request's block starts
follow from the target's own greedy tokens: the test checks that one of them reaches past its row
while the other request still decodes, so the setting cannot silently stop testing the case.
"""

from __future__ import annotations

import pytest
import torch
from host_rows import host_row_width
from serving_checks import dflash_server, start_server

pytestmark = pytest.mark.slow

CONTEXT_LENGTH = 256
FLAGS = ("--context-length", str(CONTEXT_LENGTH))
# max_new_tokens None (no limit; /generate's default is 128): the host caps each request at the context
# length.  EOS is ignored so that both reach it.
TO_THE_LIMIT = {"temperature": 0, "max_new_tokens": None, "ignore_eos": True}
BLOCK_SIZE = 16
ORACLE_TOKEN = 1000  # an ordinary SmolLM2 token
ORACLE_STRENGTH = 5.5  # ragged blocks first, whole blocks near the limit (target seed 3)


@pytest.fixture(scope="module")
def oracle(smollm2, tmp_path_factory) -> tuple[str, str, torch.nn.Module]:
    """(target dir, drafter dir, target): a tiny float32 Llama with SmolLM2's tokenizer and a block-16
    drafter that always drafts ``ORACLE_TOKEN``."""
    from transformers import AutoTokenizer

    from sglang_dflash import save_drafter
    from sglang_dflash.testing import arrange_oracle, make_tiny_drafter, make_tiny_target, spare_special_token

    root = tmp_path_factory.mktemp("oracle")
    target_dir, drafter_dir = str(root / "target"), str(root / "drafter")
    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    mask_token, mask_token_id = spare_special_token(tokenizer)
    target = make_tiny_target("llama", seed=3, vocab_size=len(tokenizer))
    drafter = make_tiny_drafter(target.config, seed=4, block_size=BLOCK_SIZE, mask_token_id=mask_token_id)
    drafter.config = drafter.config.replace(mask_token=mask_token)
    arrange_oracle(target, drafter, token_id=ORACLE_TOKEN, strength=ORACLE_STRENGTH)
    target.save_pretrained(target_dir)
    tokenizer.save_pretrained(target_dir)
    save_drafter(drafter, drafter_dir)
    return target_dir, drafter_dir, target


@pytest.fixture(scope="module")
def oracle_prompts() -> list[list[int]]:
    """The oracle token repeated (its request soon decodes whole blocks), and random tokens (ragged
    blocks all the way: it still decodes when the first one ends)."""
    random_tokens = torch.randint(10, 49000, (22,), generator=torch.Generator().manual_seed(22))
    return [[ORACLE_TOKEN] * 21, random_tokens.tolist()]


@pytest.fixture(scope="module")
def plain(oracle, oracle_prompts, tmp_path_factory) -> list[dict]:
    server = start_server(oracle[0], tmp_path_factory, "plain-context-limit", *FLAGS)
    try:
        return server.generate_many(oracle_prompts, TO_THE_LIMIT, concurrency=len(oracle_prompts))
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def dflash(oracle, oracle_prompts, plain, tmp_path_factory) -> dict:
    """Started after the plain server has stopped (servers run one at a time)."""
    server = dflash_server(
        oracle[0], (oracle[1], "oracle"), tmp_path_factory, "dflash-context-limit", *FLAGS, overlap=True
    )
    try:
        results = server.generate_many(oracle_prompts, TO_THE_LIMIT, concurrency=len(oracle_prompts))
        return {"results": results, "alive": server.alive(), "log": server.log_tail(1_000_000)}
    finally:
        server.shutdown()


def block_starts(
    target: torch.nn.Module, prompt: list[int], max_new_tokens: int
) -> tuple[list[int], list[int]]:
    """(target's greedy tokens, seq_len at each DFLASH step) of a greedy request with the oracle
    drafter, up to the step the overlap scheduler runs after the one that ended the request.

    A step from ``seq_len`` (its bonus token is output token ``seq_len - len(prompt)``) accepts as many
    drafts as the target's next ``BLOCK_SIZE - 1`` tokens begin with ``ORACLE_TOKEN``, and commits
    one token more; the request ends once it has ``max_new_tokens`` tokens.
    """
    with torch.no_grad():
        ids = target.generate(
            torch.tensor([prompt]), max_new_tokens=max_new_tokens + 2 * BLOCK_SIZE, do_sample=False
        )
    tokens = ids[0, len(prompt) :].tolist()
    starts = [len(prompt)]
    while starts[-1] - len(prompt) + 1 < max_new_tokens:
        bonus_index = starts[-1] - len(prompt)
        accepted = 0
        while accepted < BLOCK_SIZE - 1 and tokens[bonus_index + 1 + accepted] == ORACLE_TOKEN:
            accepted += 1
        starts.append(starts[-1] + accepted + 1)
    return tokens, starts


def test_a_block_reaches_past_its_row_while_the_other_request_decodes(oracle, oracle_prompts, plain):
    """The setting under test, from the target's own greedy tokens (equal to the plain server's)."""
    steps = []
    for prompt, result in zip(oracle_prompts, plain):
        assert result["meta_info"]["finish_reason"]["type"] == "length"
        tokens, starts = block_starts(oracle[2], prompt, len(result["output_ids"]))
        assert tokens[: len(result["output_ids"])] == result["output_ids"]
        assert len(prompt) + len(result["output_ids"]) > CONTEXT_LENGTH - BLOCK_SIZE  # it ran to the limit
        steps.append(starts)
    first, other = steps
    assert first[-1] + BLOCK_SIZE > host_row_width(CONTEXT_LENGTH, BLOCK_SIZE)
    assert len(other) > len(first)


def test_greedy_output_to_the_context_limit_equals_plain_decoding(plain, dflash):
    got = dflash["results"]
    assert [r["output_ids"] for r in got] == [r["output_ids"] for r in plain]
    assert [r["meta_info"]["finish_reason"] for r in got] == [r["meta_info"]["finish_reason"] for r in plain]
    assert all(r["meta_info"]["spec_verify_ct"] >= 1 for r in got)
    assert dflash["alive"] and "Traceback" not in dflash["log"], dflash["log"][-3000:]
