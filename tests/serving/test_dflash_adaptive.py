"""Our DFLASH with ``--speculative-adaptive`` (verify widths chosen per step) and the shipped hot
draft vocabulary (``--speculative-token-map``, the CPU speed configuration) through the real SGLang
server on CPU, overlap scheduler on, against plain decoding (shared setup: conftest.py).

The policy is configured to re-measure often (``explore_every`` 4, widths 1/2/4/16), so every
width, plain decoding (width 1) included, runs within a few steps of every batch-size bucket.
Greedy steps of one request verify the drafter folder's 8-node tree (the default) at its width.
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
)

from sglang_dflash.tree import TREE_FILE, load_tree

pytestmark = pytest.mark.slow
NAME = "adaptive"
WIDTHS = [1, 2, 4, 16]


def tree_widths(drafter: tuple[str, str]) -> set[int]:
    """The verify width of the drafter folder's tree, which steps of one request verify."""
    path = os.path.join(drafter[0], TREE_FILE)
    return {load_tree(path).num_nodes} if os.path.exists(path) else set()


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
    results = server.generate_many(prompts[:4], GREEDY, concurrency=4)
    widths_seen = set()
    for result in results:
        meta = result["meta_info"]
        assert 1 <= meta["spec_cap_length"] <= max(WIDTHS + list(tree_widths(drafter))), meta
        histogram = meta["spec_cap_lens_histogram"]
        widths_seen |= {k for k, count in enumerate(histogram) if count}
        # Every committed token came from a step whose width bounds it.
        assert meta["completion_tokens"] <= 1 + sum(k * c for k, c in enumerate(histogram)), meta
    assert widths_seen <= set(WIDTHS) | tree_widths(drafter), widths_seen
    # The policy re-measures: more than one of its widths ran.
    assert len(widths_seen & set(WIDTHS)) >= 2, widths_seen
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
