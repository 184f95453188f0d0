"""Our DFLASH with SGLang's overlap scheduler (the GPU default; on CPU kept by
``SGLANG_DFLASH_CPU_OVERLAP=1``), against plain decoding (shared setup: conftest.py)."""

from __future__ import annotations

import pytest
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

pytestmark = pytest.mark.slow
NAME = "overlap"


@pytest.fixture(scope="module")
def server(smollm2, drafter, reference, tmp_path_factory):
    """Started after the plain reference server has stopped; the last test stops it.  It writes the
    CPU step profile, whose counts tell which steps staged their verify, and runs every second pass
    a request reaches (the sync server's runs none: test_dflash_sync_chunked.py)."""
    profile = tmp_path_factory.mktemp("dflash-overlap-profile") / "profile.json"
    started = dflash_server(
        smollm2,
        drafter,
        tmp_path_factory,
        "dflash-overlap",
        "--enable-metrics",
        env={
            "SGLANG_DFLASH_PROFILE": str(profile),
            "SGLANG_DFLASH_SECOND_PASS": "always",
            # Steps of several requests verify the chain here (the sync server verifies the
            # drafter's wide-batch tree: test_dflash_sync_chunked.py).
            "SGLANG_DFLASH_WIDE_BATCH_TREE": "off",
        },
        overlap=True,
    )
    started.profile = profile
    yield started
    started.shutdown()


@pytest.mark.parametrize("concurrency", [1, 8])
def test_greedy_output_equals_plain_decoding(server, prompts, reference, drafter, concurrency):
    """Equal token for token.  One request at a time verifies the shipped drafter's 8-node tree
    and its 8-node lookup branch (the defaults, SGLANG_DFLASH_VERIFY_TREE=auto and
    SGLANG_DFLASH_PROMPT_LOOKUP=8; under the overlap scheduler its proposals come from the context a
    step late); eight verify the chain (the wide-batch tree is
    off here) with every step staged
    (staged_verify: block columns 0-3 of every request, then 4-15 of those whose drafts 1-4 all
    matched)."""
    names = ("staged_steps", "second_pass_requests", "tree_steps")
    before = profile_counts(server, *names)
    check_greedy_equals_plain(NAME, server, prompts, reference, concurrency, drafter)
    after = profile_counts(server, *names)
    if drafter[1] == "shipped" and concurrency == 1:
        assert after["tree_steps"] > before["tree_steps"]
        return
    assert after["staged_steps"] > before["staged_steps"]
    if drafter[1] == "shipped":  # some requests accept four drafts: their later columns ran
        assert after["second_pass_requests"] > before["second_pass_requests"]


def test_radix_cache_hit_keeps_greedy_output_exact(server, prompts, reference):
    """A long shared prefix sent twice: the second request reuses cached target and draft K/V."""
    first, second = radix_prompts(prompts)
    got = [server.generate(first, GREEDY), server.generate(second, GREEDY)]
    assert got[1]["meta_info"]["cached_tokens"] >= len(prompts[0]) + len(prompts[1])
    assert [g["output_ids"] for g in got] == reference["radix"]


def test_max_new_tokens_ending_inside_a_block(server, prompts, reference):
    check_max_new_tokens_inside_a_block(server, prompts, reference)


def test_stop_strings_end_output_where_plain_decoding_does(server, prompts, reference):
    stop, expected = reference["stop"]
    got = server.generate(prompts[5], {**GREEDY, "stop": [stop]})
    assert expected["meta_info"]["finish_reason"]["type"] == "stop"
    assert got["text"] == expected["text"]
    assert got["meta_info"]["finish_reason"] == expected["meta_info"]["finish_reason"]


def test_sampled_and_greedy_requests_share_a_batch(server, prompts, reference):
    check_sampled_and_greedy_share_a_batch(server, prompts, reference)


def test_aborts_leave_the_kv_pools_balanced(server, prompts):
    check_aborts_leave_the_kv_pools_balanced(server, prompts)


def test_openai_chat_completions_and_acceptance_in_meta_info(server):
    import openai

    client = openai.OpenAI(base_url=server.base + "/v1", api_key="none")
    messages = [{"role": "user", "content": "Write a Python function that reverses a string."}]
    full = client.chat.completions.create(model="default", messages=messages, max_tokens=48, temperature=0)
    streamed = "".join(
        chunk.choices[0].delta.content or ""
        for chunk in client.chat.completions.create(
            model="default", messages=messages, max_tokens=48, temperature=0, stream=True
        )
        if chunk.choices
    )
    assert full.choices[0].message.content and streamed == full.choices[0].message.content
    assert full.usage.completion_tokens > 0
    meta = server.generate(text="def add(a, b):", sampling_params={"temperature": 0, "max_new_tokens": 24})[
        "meta_info"
    ]
    assert meta["spec_verify_ct"] >= 1
    assert meta["spec_accept_length"] == pytest.approx(meta["completion_tokens"] / meta["spec_verify_ct"])


def test_the_server_kept_the_overlap_scheduler(server):
    """SGLANG_DFLASH_CPU_OVERLAP=1 (``overlap=True``) keeps what our CPU handling turns off."""
    assert server.server_info()["disable_overlap_schedule"] is False


def test_server_shuts_down_cleanly(server):
    """Last in this module: it stops the server the tests above shared."""
    check_shutdown_is_clean(server)
