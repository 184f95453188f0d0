"""Our DFLASH verifying a token tree (``SGLANG_DFLASH_VERIFY_TREE``: the shipped drafter's 16-node
tree, verify-trees/tree-15.json, at every batch size) through the real SGLang server on CPU
(default flags: no overlap scheduler), against plain decoding (shared setup: conftest.py).  Greedy
steps verify the tree (nodes to depth 2 for every request, the deeper ones for the requests whose
walk reaches them; one pass in the last test); steps with sampled rows too, in one pass.  The
shipped default (the drafter folder's 8-node verify-tree.json, for one request at a time) is served
by the overlap and sync-chunked modules."""

from __future__ import annotations

import os

import pytest
from cpu_server import SHIPPED_SMOLLM2_DRAFTER
from serving_checks import (
    GREEDY,
    check_aborts_leave_the_kv_pools_balanced,
    check_greedy_equals_plain,
    check_max_new_tokens_inside_a_block,
    check_sampled_and_greedy_share_a_batch,
    check_shutdown_is_clean,
    dflash_server,
    profile_counts,
    radix_prompts,
)

from sglang_dflash.tree import TREE_FILE, load_tree

pytestmark = pytest.mark.slow
NAME = "tree"
TREE = os.path.join(SHIPPED_SMOLLM2_DRAFTER, "verify-trees", "tree-15.json")
# Staged, and at every batch size (the defaults: one pass, at most 8 rows).
TREE_ENV = {
    "SGLANG_DFLASH_VERIFY_TREE": TREE,
    "SGLANG_DFLASH_TREE_FIRST_DEPTH": "2",
    "SGLANG_DFLASH_TREE_MAX_ROWS": "256",
}


@pytest.fixture(scope="module")
def server(smollm2, drafter, reference, tmp_path_factory):
    """Started after the plain reference server has stopped; the last test stops it.  Its CPU step
    profile counts the requests whose walk reached the tree's second pass."""
    profile = tmp_path_factory.mktemp("dflash-tree-profile") / "profile.json"
    started = dflash_server(
        smollm2,
        drafter,
        tmp_path_factory,
        "dflash-tree",
        "--log-level",
        "info",
        env={**TREE_ENV, "SGLANG_DFLASH_PROFILE": str(profile)},
    )
    started.profile = profile
    yield started
    started.shutdown()


def test_default_flags_run_without_the_overlap_scheduler(server):
    """On CPU our handling turns SGLang's overlap scheduler off (cpu_backend.cpu_overlap_setting)."""
    info = server.server_info()
    assert info["disable_overlap_schedule"] is True and info["device"] == "cpu"
    assert "the overlap scheduler is off" in server.log_tail(1_000_000)


def test_the_shipped_trees_branch():
    """The served default (8 nodes: one request's verify costs about the chain's 4 columns) and the
    16-node tree that fills the block."""
    default, full = load_tree(os.path.join(SHIPPED_SMOLLM2_DRAFTER, TREE_FILE)), load_tree(TREE)
    assert default.num_nodes == 8 and full.num_nodes == 16
    assert all(len(set(t.parents)) < len(t.parents) for t in (default, full))


@pytest.mark.parametrize("concurrency", [1, 8])
def test_greedy_output_equals_plain_decoding(server, prompts, reference, drafter, concurrency):
    before = profile_counts(server, "tree_steps", "second_pass_requests")
    check_greedy_equals_plain(NAME, server, prompts, reference, concurrency, drafter)
    after = profile_counts(server, "tree_steps", "second_pass_requests")
    assert "verify tree" in server.log_tail(1_000_000)
    assert after["tree_steps"] > before["tree_steps"]
    if drafter[1] == "shipped":  # some walks pass depth 2: the deeper nodes ran for them
        assert after["second_pass_requests"] > before["second_pass_requests"]


def test_a_request_continuing_a_cached_output_continues_it_exactly(server, prompts):
    """The tree step moves each accepted node's KV slot to its committed position; a second request
    whose prompt is the first's prompt and output prefix reads those slots from the radix cache."""
    first = server.generate(prompts[2], GREEDY)
    head = first["output_ids"][:24]
    second = server.generate(prompts[2] + head, {**GREEDY, "max_new_tokens": 24})
    assert second["meta_info"]["cached_tokens"] >= len(prompts[2]) + 16
    assert second["output_ids"] == first["output_ids"][24:48]


def test_radix_cache_hit_keeps_greedy_output_exact(server, prompts, reference):
    first, second = radix_prompts(prompts)
    got = [server.generate(first, GREEDY), server.generate(second, GREEDY)]
    assert [g["output_ids"] for g in got] == reference["radix"]


def test_max_new_tokens_ending_inside_a_block(server, prompts, reference):
    check_max_new_tokens_inside_a_block(server, prompts, reference)


def test_sampled_and_greedy_requests_share_a_batch(server, prompts, reference):
    check_sampled_and_greedy_share_a_batch(server, prompts, reference)


def test_a_sampled_request_verifies_the_tree(server, prompts, drafter):
    """Unseeded sampled rows verify the tree too (each committed token the target's draw after its
    node: tree.DraftTree.target_tokens), in one pass; the output is a sample, so only its steps and
    its ending are checked here (the distribution: test_tree.py)."""
    before = profile_counts(server, "tree_steps")
    out = server.generate(prompts[4], {"temperature": 0.8, "top_p": 0.9, "max_new_tokens": 32})
    after = profile_counts(server, "tree_steps")
    assert out["meta_info"]["finish_reason"]["type"] in ("length", "stop") and out["output_ids"]
    assert after["tree_steps"] - before["tree_steps"] >= 4
    if drafter[1] == "shipped":  # its drafts are the target's draws often enough
        assert out["meta_info"]["spec_accept_length"] > 1.0


def test_aborts_leave_the_kv_pools_balanced(server, prompts):
    check_aborts_leave_the_kv_pools_balanced(server, prompts)


def test_shutdown_is_clean(server):
    check_shutdown_is_clean(server)


def test_greedy_output_equals_plain_decoding_with_the_tree_in_one_pass(
    smollm2, drafter, reference, prompts, tmp_path_factory
):
    one_pass = dflash_server(
        smollm2,
        drafter,
        tmp_path_factory,
        "dflash-tree-one-pass",
        env={**TREE_ENV, "SGLANG_DFLASH_TREE_FIRST_DEPTH": "0"},
    )
    try:
        check_greedy_equals_plain(NAME + " one pass", one_pass, prompts, reference, 8, drafter)
    finally:
        one_pass.shutdown()
