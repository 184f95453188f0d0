"""Our DFLASH without the overlap scheduler, with chunked prefill forced (``--chunked-prefill-size``
below every prompt's length), the shipped hot draft vocabulary (``--speculative-token-map``), 8
running-request slots and no staged verify's second pass (``SGLANG_DFLASH_SECOND_PASS=never``: a
request whose drafts 1-4 all match commits 4 tokens), on CPU, against plain decoding (shared setup:
conftest.py).  The shipped drafter's trees verify greedy steps, the defaults: its 8-node
``verify-tree.json`` one request at a time, its 5-node ``wide-batch-tree.json`` more, each with an
lookup branch of up to 8 nodes (``SGLANG_DFLASH_PROMPT_LOOKUP``)."""

from __future__ import annotations

import pytest
from cpu_server import HOT_VOCABULARY
from serving_checks import (
    CHUNK,
    SUMMARY,
    check_a_late_request_at_a_full_batch_starts_at_once,
    check_aborts_leave_the_kv_pools_balanced,
    check_greedy_equals_plain,
    check_max_new_tokens_inside_a_block,
    check_shutdown_is_clean,
    dflash_server,
    profile_counts,
    profile_width_steps,
)

pytestmark = pytest.mark.slow
NAME = "sync+chunked"
SLOTS = 8  # --max-running-requests: the greedy checks' highest concurrency fills it


@pytest.fixture(scope="module")
def server(smollm2, drafter, reference, tmp_path_factory):
    """Started after the plain reference server has stopped; the last test stops it.  Its CPU step
    profile counts the onward requests whose second pass was cut."""
    profile = tmp_path_factory.mktemp("dflash-sync-profile") / "profile.json"
    started = dflash_server(
        smollm2,
        drafter,
        tmp_path_factory,
        "dflash-sync",
        "--disable-overlap-schedule",
        "--chunked-prefill-size",
        str(CHUNK),
        "--max-running-requests",
        str(SLOTS),
        *HOT_VOCABULARY,
        env={"SGLANG_DFLASH_PROFILE": str(profile), "SGLANG_DFLASH_SECOND_PASS": "never"},
    )
    started.profile = profile
    yield started
    started.shutdown()


@pytest.mark.parametrize("concurrency", [1, 8])
def test_greedy_output_equals_plain_decoding(server, prompts, reference, drafter, concurrency):
    shipped = drafter[1] == "shipped"
    counted = ("tree_steps", "wide_tree_steps", "second_pass_requests")
    before = profile_counts(server, *counted)
    # One request: the 8-node tree alone where the context proposes nothing, with its whole branch
    # where a proposal matched 2-3 tokens (never cut by the rows budget at one request).
    alone_before, whole_before = (profile_width_steps(server, {width}) for width in (8, 16))
    check_greedy_equals_plain(NAME, server, prompts, reference, concurrency, drafter)
    after = profile_counts(server, *counted)
    if shipped and concurrency == 1:
        assert profile_width_steps(server, {8}) > alone_before
        assert profile_width_steps(server, {16}) > whole_before
    assert after["second_pass_requests"] == 0
    if shipped:
        # One request verifies the 8-node tree, more the 5-node wide-batch tree: every step a tree step.
        assert after["tree_steps"] > before["tree_steps"]
    if shipped and concurrency > 1:
        assert after["wide_tree_steps"] > before["wide_tree_steps"]
        # Greedy drafts come from the hot vocabulary's logits alone, mapped back to token ids: a
        # wrong id would stay lossless but be rejected (a random drafter's tau is about 1.0).
        assert SUMMARY[f"{NAME} c={concurrency}"]["tau"] > 1.4


def test_max_new_tokens_ending_inside_a_block(server, prompts, reference):
    check_max_new_tokens_inside_a_block(server, prompts, reference)


def test_a_late_request_at_a_full_batch_starts_at_once(server, prompts):
    check_a_late_request_at_a_full_batch_starts_at_once(server, prompts, SLOTS)


def test_aborts_leave_the_kv_pools_balanced(server, prompts):
    check_aborts_leave_the_kv_pools_balanced(server, prompts)


def test_server_shuts_down_cleanly(server):
    """Last in this module: it stops the server the tests above shared."""
    check_shutdown_is_clean(server)
