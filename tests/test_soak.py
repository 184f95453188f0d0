"""Our DFLASH server under load, bad requests and the metrics users read, on this CPU.

One plain server first (the greedy references), then ONE DFLASH server shared by every test here
(an idle SGLang scheduler still spins a core), SmolLM2-135M-Instruct in float32 with the shipped
drafter or a random one, the shipped hot draft vocabulary (``--speculative-token-map``),
``--enable-metrics`` and the scheduler's strict idle memory check on:

- **soak**: ``SOAK_REQUESTS`` (32 in CI, four of them leaving mid-stream; ``bench/soak.py`` runs
  300) mixed requests from 16 concurrent clients through ``/v1/completions`` (greedy / temperature /
  top-p / top-k, stop strings, ``max_tokens`` 1..16 in CI (``SGLANG_DFLASH_SOAK_REQUESTS`` /
  ``_MAX_TOKENS`` change both; the script's default is 1..96), streamed and not, 10% of clients
  leaving mid-stream, prompts sharing a long prefix): no server error, every request that was not
  left finishes with ``stop`` or ``length``, greedy text equals the plain server's, the KV slots in
  use when idle return to their start value (the draft KV pool shares the target's slot indices),
  and the server still answers;
- **bad requests**: each per-request row of docs/reliability.md's "Bad input" table answers HTTP 400
  naming the field (or, where plain decoding serves the request, serves it as plain decoding does)
  while a greedy request runs beside them and still ends exactly as the plain server's;
- **metrics**: ``meta_info`` acceptance fields and the accepted-drafts histogram, the decode log
  line's ``accept len``, and the Prometheus speculative counters move when requests run.
"""

from __future__ import annotations

import json
import os
import threading
import time

import pytest
import requests
from cpu_server import HOT_VOCABULARY, CpuServer, data_file, smollm2_drafter

from sglang_dflash.bench.soak import format_table, make_plan, reference_outputs, scrape_metrics, soak

pytest.importorskip("sglang", reason="needs the sglang extra installed")

pytestmark = pytest.mark.slow

SOAK_REQUESTS = int(os.environ.get("SGLANG_DFLASH_SOAK_REQUESTS", "32"))
MAX_TOKENS = int(os.environ.get("SGLANG_DFLASH_SOAK_MAX_TOKENS", "16"))
CONCURRENCY = 16
SERVER_ARGS = (
    "--max-total-tokens",
    "12288",
    "--random-seed",
    "0",
    "--log-level",
    "info",
    "--decode-log-interval",
    "8",
)
CONTEXT_OVERFLOW = 9000  # tokens: beyond SmolLM2's 8192-token context
SUMMARY: dict[str, dict] = {}


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def smollm2() -> str:
    from sglang_dflash.smollm2 import ensure_smollm2

    return ensure_smollm2()


@pytest.fixture(scope="module")
def drafter(smollm2, tmp_path_factory) -> tuple[str, str]:
    return smollm2_drafter(smollm2, str(tmp_path_factory.mktemp("soak-drafter")))


@pytest.fixture(scope="module")
def prompts(smollm2) -> list[list[int]]:
    """Chat-templated prompts: the first 4 HumanEval and 4 GSM8K questions of ../shared/data."""
    from transformers import AutoTokenizer

    from sglang_dflash.bench.datasets import load_dataset

    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    return [
        list(p.input_ids)
        for name in ("humaneval.jsonl", "gsm8k.jsonl")
        for p in load_dataset(data_file(name), tokenizer, 4)
    ]


@pytest.fixture(scope="module")
def plan(prompts):
    return make_plan(prompts, SOAK_REQUESTS, MAX_TOKENS, seed=0)


def start(smollm2: str, tmp_path_factory, name: str, *args: str) -> CpuServer:
    log = str(tmp_path_factory.mktemp(name) / "server.log")
    return CpuServer(smollm2, [*SERVER_ARGS, *args], log_path=log)


def beside_request(prompts: list[list[int]]) -> dict:
    """The greedy request that runs beside the bad ones."""
    return {"input_ids": prompts[3], "sampling_params": {"temperature": 0, "max_new_tokens": 24}}


@pytest.fixture(scope="module")
def reference(smollm2, prompts, plan, tmp_path_factory) -> dict:
    """Plain-decoding outputs: the soak's greedy requests and the per-request rows (server stopped after)."""
    server = start(smollm2, tmp_path_factory, "soak-plain")
    try:
        first = server.generate(prompts[2], {"temperature": 0, "max_new_tokens": 1})["output_ids"][0]
        return {
            "soak": reference_outputs(server.base, plan, CONCURRENCY),
            "beside": server.generate(**beside_request(prompts))["output_ids"],
            "first token": first,
            "stop on first": server.generate(
                prompts[2], {"temperature": 0, "max_new_tokens": 8, "stop_token_ids": [first]}
            ),
            "max_new_tokens 0": server.generate(prompts[2], {"temperature": 0, "max_new_tokens": 0}),
        }
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def server(smollm2, drafter, reference, tmp_path_factory):
    """The one DFLASH server of this module (started after the plain one has stopped)."""
    dflash = start(
        smollm2,
        tmp_path_factory,
        "soak-dflash",
        "--enable-metrics",
        "--speculative-algorithm",
        "DFLASH",
        "--speculative-draft-model-path",
        drafter[0],
        *HOT_VOCABULARY,
    )
    yield dflash
    dflash.shutdown()


@pytest.fixture(scope="module", autouse=True)
def _print_summary(drafter):
    yield
    if SUMMARY:
        print(
            f"\nSoak: our DFLASH on the real SGLang scheduler, CPU, float32 ({drafter[1]} drafter), "
            f"{CONCURRENCY} clients"
        )
        print(format_table(SUMMARY))


# ----------------------------------------------------------------------------- soak
def test_soak_serves_every_request_exactly_and_leaks_nothing(server, plan, reference):
    row, found = soak(server, plan, CONCURRENCY, reference["soak"])
    SUMMARY[f"DFLASH, {len(plan)} requests"] = row
    assert found == [], "\n".join(found[:20])
    assert row["errors"] == 0 and row["leaks"] == 0
    assert row["aborts"] >= 1, "some clients must have left mid-stream"
    assert "memory leak" not in server.log_tail(10_000_000)


# ----------------------------------------------------------------------------- bad requests
def native(sampling_params: dict | None = None, **fields) -> tuple[str, dict]:
    params = {"max_new_tokens": 4, **(sampling_params or {})}
    return "/generate", {"input_ids": [1, 2, 3, 4], "sampling_params": params, **fields}


def openai(**fields) -> tuple[str, dict]:
    return "/v1/completions", {"model": "default", "prompt": "def add(a, b):", "max_tokens": 4, **fields}


# name -> (endpoint, body, the text the HTTP 400 message must contain)
REFUSED = {
    "temperature negative": (*native({"temperature": -1.0}), "temperature"),
    "temperature NaN": (*native({"temperature": float("nan")}), "temperature"),
    "top_p 0": (*native({"top_p": 0.0}), "top_p"),
    "top_p above 1": (*native({"top_p": 1.5}), "top_p"),
    "top_k 0": (*native({"top_k": 0}), "top_k"),
    "OpenAI temperature negative": (*openai(temperature=-0.5), "temperature"),
    "OpenAI top_p above 1": (*openai(top_p=2.0), "top_p"),
    "logit_bias outside the vocab": (*native({"logit_bias": {"99999999": 1.0}}), "logit_bias"),
    "empty input_ids": ("/generate", {**native()[1], "input_ids": []}, "input_ids"),
    "prompt longer than the context": (
        "/generate",
        {**native()[1], "input_ids": [1] * CONTEXT_OVERFLOW},
        "context length",
    ),
}


def post_raw(server: CpuServer, endpoint: str, body: dict) -> requests.Response:
    """POST ``body`` as JSON, NaN spelled as JavaScript does (what a careless client sends)."""
    return requests.post(
        server.base + endpoint,
        data=json.dumps(body, allow_nan=True),
        timeout=300,
        headers={"Content-Type": "application/json"},
    )


@pytest.fixture(scope="module")
def bad_replies(server, prompts) -> dict:
    """Every refused row, sent while a greedy request runs beside them: {"rows": {row: (status, text)},
    "beside": that request's reply}."""
    beside: dict = {}
    thread = threading.Thread(target=lambda: beside.update(server.generate(**beside_request(prompts))))
    thread.start()
    time.sleep(1)
    replies = {}
    for name, (endpoint, body, _) in REFUSED.items():
        reply = post_raw(server, endpoint, body)
        replies[name] = (reply.status_code, reply.text)
    thread.join(timeout=600)
    return {"rows": replies, "beside": beside}


@pytest.mark.parametrize("row", list(REFUSED))
def test_a_bad_request_is_refused_with_400_naming_the_field(bad_replies, row):
    status, text = bad_replies["rows"][row]
    assert status == 400, (row, status, text[:500])
    assert REFUSED[row][2] in text, (row, text[:500])


def test_bad_requests_leave_the_request_beside_them_exact(bad_replies, reference, server):
    assert bad_replies["beside"].get("output_ids") == reference["beside"]
    assert server.alive(), server.log_tail()


def test_max_new_tokens_0_is_served_as_plain_decoding_serves_it(server, prompts, reference):
    got = server.generate(prompts[2], {"temperature": 0, "max_new_tokens": 0})
    expected = reference["max_new_tokens 0"]
    assert got["output_ids"] == expected["output_ids"]
    assert got["meta_info"]["finish_reason"] == expected["meta_info"]["finish_reason"]


def test_a_stop_token_as_the_first_token_ends_the_request_as_plain_decoding_does(server, prompts, reference):
    got = server.generate(
        prompts[2], {"temperature": 0, "max_new_tokens": 8, "stop_token_ids": [reference["first token"]]}
    )
    expected = reference["stop on first"]
    assert expected["meta_info"]["finish_reason"]["type"] == "stop"
    assert got["output_ids"] == expected["output_ids"]
    assert got["meta_info"]["finish_reason"] == expected["meta_info"]["finish_reason"]


def test_n_above_1_returns_n_completions_equal_for_greedy(server, reference, prompts):
    body = {"model": "default", "prompt": prompts[3], "max_tokens": 16, "temperature": 0, "n": 2}
    reply = requests.post(server.base + "/v1/completions", json=body, timeout=600)
    assert reply.status_code == 200, reply.text[:500]
    choices = reply.json()["choices"]
    assert len(choices) == 2
    assert choices[0]["text"] == choices[1]["text"]


def test_an_empty_text_prompt_is_refused_with_400(server):
    body = {"text": "", "sampling_params": {"max_new_tokens": 4}}
    reply = requests.post(server.base + "/generate", json=body, timeout=300)
    assert reply.status_code == 400 and "empty" in reply.text, reply.text[:500]
    assert server.alive(), server.log_tail()


# ----------------------------------------------------------------------------- metrics
@pytest.fixture(scope="module")
def metered(server, prompts) -> dict:
    """Prometheus counters before and after three greedy requests, and their replies."""
    before = scrape_metrics(server.base)
    replies = [server.generate(p, {"temperature": 0, "max_new_tokens": 24}) for p in prompts[5:8]]
    time.sleep(2)
    return {"before": before, "after": scrape_metrics(server.base), "replies": replies}


def test_meta_info_reports_verify_steps_acceptance_and_a_histogram(metered):
    for reply in metered["replies"]:
        meta = reply["meta_info"]
        assert meta["spec_verify_ct"] >= 1
        assert meta["spec_accept_length"] == pytest.approx(meta["completion_tokens"] / meta["spec_verify_ct"])
        histogram = meta["spec_accept_histogram"]  # steps that accepted 0, 1, 2, ... drafts
        assert sum(histogram) == meta["spec_verify_ct"]
        committed = sum((drafts + 1) * steps for drafts, steps in enumerate(histogram))
        assert committed >= meta["completion_tokens"] - 1  # the first token comes from prefill


def test_prometheus_speculative_counters_move_when_requests_run(metered):
    before, after = metered["before"], metered["after"]
    verify_steps = sum(r["meta_info"]["spec_verify_ct"] for r in metered["replies"])
    moved = after["sglang:spec_verify_calls_total"] - before.get("sglang:spec_verify_calls_total", 0)
    assert moved == verify_steps
    assert after["sglang:generation_tokens_total"] > before.get("sglang:generation_tokens_total", 0)
    assert after.get("sglang:spec_accept_length", 0) >= 1


def test_the_decode_log_line_reports_accept_length(server, metered):
    lines = [line for line in server.log_tail(10_000_000).splitlines() if "Decode batch" in line]
    assert any("accept len:" in line for line in lines), lines[-3:]


def test_the_server_stops_cleanly(server):
    """Last in this module: it stops the server the tests above shared."""
    started = time.time()
    server.shutdown(timeout_s=60)
    assert time.time() - started < 60, "the server did not stop on SIGTERM"
    assert "memory leak" not in server.log_tail(10_000_000)
