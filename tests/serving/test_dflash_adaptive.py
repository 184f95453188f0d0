"""Our DFLASH with ``--speculative-adaptive`` (verify widths chosen per step) and the shipped hot
draft vocabulary (``--speculative-token-map``, the CPU speed configuration) through the real SGLang
server on CPU, overlap scheduler on, against plain decoding (shared setup: conftest.py).

The policy is configured to re-measure often (``explore_every`` 4, widths 1/2/4/16), so every
width, plain decoding (width 1) included, runs within a few steps of every batch-size bucket.
Where a step may verify a tree (greedy or unseeded sampled rows with nothing that changes their
logits), the policy chooses between plain decoding and the drafter folder's tree for that batch
size (the 8-node tree at one request, the 5-node wide-batch tree beyond, each with its 8-node
lookup branch: the defaults); requests
with penalties verify the chain, at the policy's widths.
"""

from __future__ import annotations

import json
import os

import pytest
from cpu_server import HOT_VOCABULARY
from serving_checks import (
    GREEDY,
    check_aborts_leave_the_kv_pools_balanced,
    check_greedy_equals_plain,
    check_max_new_tokens_inside_a_block,
    check_shutdown_is_clean,
    dflash_server,
    served_tree_widths,
)

from sglang_dflash.tree import TREE_FILE, WIDE_TREE_FILE

pytestmark = pytest.mark.slow
NAME = "adaptive"
WIDTHS = [1, 2, 4, 16]


def tree_widths(drafter: tuple[str, str]) -> set[int]:
    """The verify widths of the drafter folder's trees (the verify tree and the wide-batch tree, each
    with its lookup branch, cut to the step's rows budget)."""
    paths = [os.path.join(drafter[0], name) for name in (TREE_FILE, WIDE_TREE_FILE)]
    return set().union(*(served_tree_widths(path) for path in paths if os.path.exists(path)))


def widths_seen(results: list[dict]) -> set[int]:
    """The widths of the steps that made these results (the host's per-request histograms), each
    request's output bounded by its steps' widths."""
    seen = set()
    for result in results:
        meta = result["meta_info"]
        histogram = meta["spec_cap_lens_histogram"]
        seen |= {k for k, count in enumerate(histogram) if count}
        # Every committed token came from a step whose width bounds it.
        assert meta["completion_tokens"] <= 1 + sum(k * c for k, c in enumerate(histogram)), meta
    return seen


@pytest.fixture(scope="module")
def server(smollm2, drafter, reference, tmp_path_factory):
    """Started after the plain reference server has stopped; the last test stops it."""
    config = tmp_path_factory.mktemp("adaptive") / "adaptive.json"
    config.write_text(json.dumps({"widths": WIDTHS, "explore_every": 4}))
    started = dflash_server(
        smollm2,
        drafter,
        tmp_path_factory,
        "dflash-adaptive",
        "--speculative-adaptive",
        "--speculative-adaptive-config",
        str(config),
        *HOT_VOCABULARY,
        # The decode log line (with the host's "cap len") and our startup line are info-level.
        "--log-level",
        "info",
        "--decode-log-interval",
        "10",
        overlap=True,
    )
    yield started
    started.shutdown()


@pytest.mark.parametrize("concurrency", [1, 8])
def test_greedy_output_equals_plain_decoding(server, prompts, reference, drafter, concurrency):
    check_greedy_equals_plain(NAME, server, prompts, reference, concurrency, drafter)


def test_the_chosen_widths_are_reported_per_request_and_in_the_decode_log(server, prompts, drafter):
    greedy = widths_seen(server.generate_many(prompts[:4], GREEDY, concurrency=4))
    # Steps that may verify a tree choose between plain decoding and the tree, re-measuring both.
    assert greedy <= {1} | tree_widths(drafter), greedy
    assert 1 in greedy and greedy & tree_widths(drafter), greedy
    penalized = dict(GREEDY, frequency_penalty=0.5)  # penalties need the chain
    chain = widths_seen(server.generate_many(prompts[:4], penalized, concurrency=4))
    assert chain <= set(WIDTHS), chain
    # The policy re-measures: more than one of its widths ran.
    assert len(chain) >= 2, chain
    assert "cap len" in server.log_tail(1_000_000)
    assert "adaptive verify width: widths [1, 2, 4, 16]" in server.log_tail(1_000_000)
    assert "draft vocabulary 8192" in server.log_tail(1_000_000)  # the token map is in use


def test_max_new_tokens_ending_inside_a_block(server, prompts, reference):
    check_max_new_tokens_inside_a_block(server, prompts, reference)


def test_sampled_and_greedy_requests_share_batches(server, prompts, reference):
    sampled = {"temperature": 0.8, "top_p": 0.9, "max_new_tokens": 32}
    params = [GREEDY, sampled] * 3
    results = server.generate_many(prompts[:6], params, concurrency=6)
    for i in range(0, 6, 2):
        assert results[i]["output_ids"] == reference["greedy"][i]
    for result in results[1::2]:
        assert 1 <= len(result["output_ids"]) <= 32


def test_aborts_leave_the_kv_pools_balanced(server, prompts):
    check_aborts_leave_the_kv_pools_balanced(server, prompts)


def test_server_shuts_down_cleanly(server):
    """Last in this module: it stops the server the tests above shared."""
    check_shutdown_is_clean(server)
