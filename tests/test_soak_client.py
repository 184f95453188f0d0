"""The soak's plan, client and checks (``sglang_dflash.bench.soak``) without SGLang: a stand-in
OpenAI completions server on 127.0.0.1 answers plain and streamed requests."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from sglang_dflash.bench.soak import (
    SoakRequest,
    SoakResult,
    make_plan,
    parse_metrics,
    problems,
    run_clients,
    send,
    tau_between,
)

PROMPTS = [[1, 2, 3], [4, 5, 6, 7], [8, 9], [10, 11, 12], [13, 14, 15, 16, 17]]
CHUNKS = 6


class StandIn(BaseHTTPRequestHandler):
    """``/v1/completions``: text "a b c ..." of ``max_tokens`` words, streamed one word per chunk."""

    disconnects: ClassVar[list[int]] = []

    def log_message(self, *args) -> None:
        pass

    def answer(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        words = [chr(ord("a") + i % 26) + " " for i in range(body["max_tokens"])]
        self.send_response(200)
        if not body.get("stream"):
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(
                json.dumps(
                    {
                        "choices": [{"text": "".join(words), "finish_reason": "length"}],
                        "usage": {"completion_tokens": len(words)},
                    }
                ).encode()
            )
            return
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        try:
            for i, word in enumerate(words):
                last = i == len(words) - 1
                chunk = {"choices": [{"text": word, "finish_reason": "length" if last else None}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                time.sleep(0.05)
            usage = {"choices": [], "usage": {"completion_tokens": len(words)}}
            self.wfile.write(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())
        except (BrokenPipeError, ConnectionResetError):
            StandIn.disconnects.append(body["max_tokens"])

    do_POST = answer  # the http.server API's name for it


@pytest.fixture(scope="module")
def base():
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


# ----------------------------------------------------------------------------- the plan
def test_the_plan_mixes_what_the_soak_promises():
    plan = make_plan(PROMPTS, 400, max_tokens=96, seed=0)
    kinds = {(r.params.get("temperature"), "top_p" in r.params, "top_k" in r.params) for r in plan}
    assert kinds == {(0, False, False), (0.7, False, False), (0.7, True, False), (0.7, False, True)}
    assert {r.params["max_tokens"] for r in plan} >= {1, 96}
    assert all(1 <= r.params["max_tokens"] <= 96 for r in plan)
    leaving = [r for r in plan if r.disconnect_after is not None]
    assert 0.05 < len(leaving) / len(plan) < 0.15
    assert all(r.stream and r.params["max_tokens"] >= 32 for r in leaving)
    assert 0.3 < sum(r.stream for r in plan) / len(plan) < 0.7
    assert sum("stop" in r.params for r in plan) > 50
    prefix = tuple(PROMPTS[0] + PROMPTS[1])
    assert 40 < sum(r.prompt_ids[: len(prefix)] == prefix for r in plan) < 140


def test_the_plan_is_reproducible_from_its_seed():
    assert make_plan(PROMPTS, 50, seed=3) == make_plan(PROMPTS, 50, seed=3)
    assert make_plan(PROMPTS, 50, seed=3) != make_plan(PROMPTS, 50, seed=4)


# ----------------------------------------------------------------------------- the client
def test_plain_and_streamed_requests_collect_text_reason_and_tokens(base):
    for stream in (False, True):
        result = send(base, SoakRequest(0, (1, 2), {"temperature": 0, "max_tokens": 3}, stream))
        assert (result.status, result.error, result.aborted) == (200, None, False)
        assert (result.text, result.finish_reason, result.completion_tokens) == ("a b c ", "length", 3)


def test_a_disconnecting_client_leaves_after_its_chunks_and_the_server_sees_it(base):
    StandIn.disconnects.clear()
    leaving = SoakRequest(0, (1, 2), {"temperature": 0.7, "max_tokens": 40}, True, disconnect_after=2)
    result = send(base, leaving)
    assert result.aborted and result.error is None
    assert result.text == "a b " and result.finish_reason is None
    deadline = time.time() + 10
    while not StandIn.disconnects and time.time() < deadline:
        time.sleep(0.1)
    assert StandIn.disconnects == [40]


def test_clients_return_results_in_plan_order(base):
    plan = [SoakRequest(i, (1,), {"temperature": 0, "max_tokens": 1 + i % 5}, i % 2 == 0) for i in range(12)]
    results, wall_s = run_clients(base, plan, concurrency=4, progress=False)
    assert [r.index for r in results] == list(range(12)) and wall_s > 0
    assert [r.completion_tokens for r in results] == [1 + i % 5 for i in range(12)]


def test_a_server_that_does_not_answer_is_recorded_as_an_error():
    result = send(
        "http://127.0.0.1:9", SoakRequest(0, (1,), {"temperature": 0, "max_tokens": 1}, False), timeout_s=5
    )
    assert result.error is not None and result.status == 0


# ----------------------------------------------------------------------------- checks and metrics
def test_problems_name_errors_unfinished_requests_and_greedy_mismatches():
    plan = [
        SoakRequest(i, (1,), {"temperature": 0 if i < 2 else 0.7, "max_tokens": 4}, False) for i in range(5)
    ]
    results = [
        SoakResult(0, 200, "same", "length"),
        SoakResult(1, 200, "other", "stop"),
        SoakResult(2, 500, error="boom"),
        SoakResult(3, 200, "x", None),
        SoakResult(4, 200, "", None, aborted=True),
    ]
    found = problems(plan, results, reference={0: "same", 1: "plain"})
    assert len(found) == 3
    assert "request 1" in found[0] and "expected the plain server's 'plain'" in found[0]
    assert found[1].startswith("request 2: HTTP 500: boom")
    assert "request 3: finish_reason is None" in found[2]


def test_prometheus_text_is_summed_over_labels_and_tau_is_tokens_per_verify_step():
    text = """# HELP sglang:spec_verify_calls_total x
sglang:spec_verify_calls_total{model_name="m",engine_type="a"} 10.0
sglang:spec_verify_calls_total{model_name="m",engine_type="b"} 5.0
sglang:generation_tokens_total{model_name="m"} 40.0
"""
    after = parse_metrics(text)
    assert after == {"sglang:spec_verify_calls_total": 15.0, "sglang:generation_tokens_total": 40.0}
    before = {"sglang:spec_verify_calls_total": 5.0, "sglang:generation_tokens_total": 10.0}
    assert tau_between(before, after) == 3.0
    assert tau_between(after, after) is None
