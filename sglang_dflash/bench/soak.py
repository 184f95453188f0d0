"""Soak: many concurrent clients against an OpenAI-compatible SGLang server, then a health check.

A plan (:func:`make_plan`) mixes greedy, temperature 0.7, top-p and top-k requests, stop strings,
``max_tokens`` from 1 to a maximum, streamed and not, clients that disconnect mid-stream and
prompts sharing a long prefix (radix-cache hits).  :func:`soak` sends it through
``/v1/completions`` (prompts as token ids) with a fixed number of clients and reports one row:
requests, server errors, client aborts, completion tokens, tau (from the Prometheus counters),
tokens per second, KV slots leaked once idle, and greedy outputs equal to a reference served
without speculation.  :func:`problems` lists everything that must not happen.

Used by ``tests/test_soak.py`` (reduced) and ``bench/soak.py`` (full size).
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Protocol

import requests

VALID_FINISH_REASONS = ("stop", "length")
STOP_STRINGS = (["\n\n"], [". "], ["```"], [":"])
SAMPLING_KINDS = ("greedy", "temperature", "top_p", "top_k")


class SoakServer(Protocol):
    """What the soak needs from a running server (``tests/cpu_server.CpuServer`` has it)."""

    base: str

    def used_tokens_when_idle(self, timeout_s: float = 120) -> int: ...

    def alive(self) -> bool: ...


@dataclasses.dataclass(frozen=True)
class SoakRequest:
    """One planned request: prompt token ids, OpenAI completion fields, and how the client behaves."""

    index: int
    prompt_ids: tuple[int, ...]
    params: dict
    stream: bool
    disconnect_after: int | None = None  # the client leaves after this many streamed chunks

    @property
    def greedy(self) -> bool:
        return self.params.get("temperature") == 0

    def body(self) -> dict:
        body = {"model": "default", "prompt": list(self.prompt_ids), **self.params, "stream": self.stream}
        if self.stream:
            body["stream_options"] = {"include_usage": True}
        return body


@dataclasses.dataclass
class SoakResult:
    """What the client saw: HTTP status (0: no answer), text, finish reason, tokens, abort, error."""

    index: int
    status: int = 0
    text: str = ""
    finish_reason: str | None = None
    completion_tokens: int = 0
    aborted: bool = False
    error: str | None = None


def sampling_params(kind: str) -> dict:
    """OpenAI completion fields of one sampling kind."""
    return {
        "greedy": {"temperature": 0},
        "temperature": {"temperature": 0.7},
        "top_p": {"temperature": 0.7, "top_p": 0.9},
        "top_k": {"temperature": 0.7, "top_k": 20},
    }[kind]


def make_plan(
    prompts: Sequence[Sequence[int]],
    num_requests: int,
    max_tokens: int = 96,
    seed: int = 0,
    disconnect_fraction: float = 0.1,
    shared_prefix_fraction: float = 0.2,
    stop_fraction: float = 0.25,
) -> list[SoakRequest]:
    """A reproducible mix of ``num_requests`` requests over ``prompts`` (token ids, at least 4).

    Shared-prefix prompts are ``prompts[0] + prompts[1]`` plus the last 8 tokens of another prompt.
    Disconnecting clients stream at least 32 tokens and leave after 1 to 3 chunks.
    """
    if len(prompts) < 4:
        raise ValueError(f"soak: {len(prompts)} prompts given; expected at least 4")
    rng = random.Random(seed)
    prefix = tuple(prompts[0]) + tuple(prompts[1])
    plan = []
    for index in range(num_requests):
        prompt = tuple(rng.choice(prompts))
        if rng.random() < shared_prefix_fraction:
            prompt = prefix + tuple(rng.choice(prompts[2:]))[-8:]
        params = {
            **sampling_params(SAMPLING_KINDS[index % len(SAMPLING_KINDS)]),
            "max_tokens": rng.randint(1, max_tokens),
        }
        if rng.random() < stop_fraction:
            params["stop"] = rng.choice(STOP_STRINGS)
        disconnect = rng.random() < disconnect_fraction
        if disconnect:
            params["max_tokens"] = max(params["max_tokens"], min(32, max_tokens))
        plan.append(
            SoakRequest(
                index,
                prompt,
                params,
                stream=disconnect or rng.random() < 0.5,
                disconnect_after=rng.randint(1, 3) if disconnect else None,
            )
        )
    return plan


# ----------------------------------------------------------------------------- one client
def _send_plain(base: str, request: SoakRequest, result: SoakResult, timeout_s: float) -> None:
    reply = requests.post(base + "/v1/completions", json=request.body(), timeout=timeout_s)
    result.status = reply.status_code
    if reply.status_code != 200:
        result.error = reply.text[:300]
        return
    answer = reply.json()
    choice = answer["choices"][0]
    result.text, result.finish_reason = choice["text"], choice.get("finish_reason")
    result.completion_tokens = int((answer.get("usage") or {}).get("completion_tokens") or 0)


def _send_streamed(base: str, request: SoakRequest, result: SoakResult, timeout_s: float) -> None:
    body = request.body()
    with requests.post(base + "/v1/completions", json=body, stream=True, timeout=timeout_s) as reply:
        result.status = reply.status_code
        if reply.status_code != 200:
            result.error = reply.text[:300]
            return
        chunks = 0
        for line in reply.iter_lines():
            if not line.startswith(b"data:") or line[5:].strip() == b"[DONE]":
                continue
            chunk = json.loads(line[5:])
            if "error" in chunk:
                result.error = json.dumps(chunk["error"])[:300]
                return
            for choice in chunk.get("choices") or []:
                result.text += choice.get("text") or ""
                result.finish_reason = choice.get("finish_reason") or result.finish_reason
            if chunk.get("usage"):
                result.completion_tokens = int(chunk["usage"].get("completion_tokens") or 0)
            chunks += 1
            if (
                request.disconnect_after is not None
                and chunks >= request.disconnect_after
                and result.finish_reason is None
            ):
                result.aborted = True
                return  # leaving the context closes the connection: the server aborts the request


def send(base: str, request: SoakRequest, timeout_s: float = 900) -> SoakResult:
    """One request through ``/v1/completions``; never raises (a failure is recorded as an error)."""
    result = SoakResult(request.index)
    try:
        (_send_streamed if request.stream else _send_plain)(base, request, result, timeout_s)
    except (requests.RequestException, ValueError, KeyError, IndexError) as e:
        result.error = f"{type(e).__name__}: {e}"[:300]
    return result


def run_clients(
    base: str, plan: Sequence[SoakRequest], concurrency: int, progress: bool = True, desc: str = "soak"
) -> tuple[list[SoakResult], float]:
    """Every planned request, ``concurrency`` clients at a time: (results in plan order, wall seconds)."""
    from tqdm import tqdm

    started = time.perf_counter()
    results: list[SoakResult | None] = [None] * len(plan)
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = {pool.submit(send, base, request): i for i, request in enumerate(plan)}
        for future in tqdm(as_completed(futures), total=len(plan), desc=desc, disable=not progress):
            results[futures[future]] = future.result()
    return [r for r in results if r is not None], time.perf_counter() - started


# ----------------------------------------------------------------------------- metrics and checks
def scrape_metrics(base: str) -> dict[str, float]:
    """Prometheus ``/metrics`` of a server started with ``--enable-metrics`` ({} without it)."""
    reply = requests.get(base + "/metrics", timeout=30)
    return parse_metrics(reply.text) if reply.status_code == 200 else {}


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text format: each sample name summed over its labels."""
    totals: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_labels, _, value = line.rpartition(" ")
        name = name_labels.split("{", 1)[0]
        try:
            totals[name] = totals.get(name, 0.0) + float(value)
        except ValueError:
            continue
    return totals


def tau_between(before: dict[str, float], after: dict[str, float]) -> float | None:
    """Completion tokens per verify step between two scrapes (None without speculative counters)."""

    def moved(name: str) -> float:
        return after.get(name, 0.0) - before.get(name, 0.0)

    steps, tokens = moved("sglang:spec_verify_calls_total"), moved("sglang:generation_tokens_total")
    return round(tokens / steps, 3) if steps > 0 else None


def reference_outputs(
    base: str, plan: Sequence[SoakRequest], concurrency: int, progress: bool = True
) -> dict[int, str]:
    """Greedy, non-disconnecting requests of ``plan`` served non-streamed by ``base`` (no speculation)."""
    greedy = [dataclasses.replace(r, stream=False) for r in plan if r.greedy and r.disconnect_after is None]
    results, _ = run_clients(base, greedy, concurrency, progress, desc="reference")
    bad = [r for r in results if r.error]
    if bad:
        raise RuntimeError(f"soak: the reference server failed {len(bad)} requests, e.g. {bad[0].error}")
    return {r.index: r.text for r in results}


def problems(
    plan: Sequence[SoakRequest], results: Sequence[SoakResult], reference: dict[int, str] | None = None
) -> list[str]:
    """Everything that must not happen: errors, unfinished requests, greedy text unlike the reference."""
    found = []
    for request, result in zip(plan, results):
        if result.error is not None:
            found.append(f"request {request.index}: HTTP {result.status}: {result.error}")
        elif not result.aborted and result.finish_reason not in VALID_FINISH_REASONS:
            found.append(
                f"request {request.index}: finish_reason is {result.finish_reason!r}; "
                f"expected one of {VALID_FINISH_REASONS}"
            )
        elif (
            reference is not None
            and request.index in reference
            and not result.aborted
            and result.text != reference[request.index]
        ):
            found.append(
                f"request {request.index} (greedy, {request.params}): text is {result.text[:80]!r}; "
                f"expected the plain server's {reference[request.index][:80]!r}"
            )
    return found


def soak(
    server: SoakServer,
    plan: Sequence[SoakRequest],
    concurrency: int,
    reference: dict[int, str] | None = None,
    progress: bool = True,
) -> tuple[dict, list[str]]:
    """Run ``plan`` against ``server``, then check it idles with its start KV usage and still answers.

    Returns (the table row, problems).
    """
    used_before = server.used_tokens_when_idle()
    metrics_before = scrape_metrics(server.base)
    results, wall_s = run_clients(server.base, plan, concurrency, progress)
    metrics_after = scrape_metrics(server.base)
    leaked = server.used_tokens_when_idle() - used_before
    found = problems(plan, results, reference)
    if leaked:
        found.append(
            f"KV slots in use when idle: {used_before + leaked}; expected the start value {used_before}"
        )
    probe = send(server.base, SoakRequest(-1, plan[0].prompt_ids, {"temperature": 0, "max_tokens": 4}, False))
    if probe.error or not server.alive():
        found.append(f"the server no longer answers after the soak: {probe.error}")
    tokens = sum(r.completion_tokens for r in results)
    compared = [r for p, r in zip(plan, results) if reference and p.index in reference and not r.aborted]
    exact = sum(r.text == reference[r.index] for r in compared) if reference else 0
    row = {
        "requests": len(plan),
        "errors": sum(r.error is not None for r in results),
        "aborts": sum(r.aborted for r in results),
        "tokens": tokens,
        "tau": tau_between(metrics_before, metrics_after),
        "tok/s": round(tokens / wall_s, 1),
        "leaks": leaked,
        "greedy exact": f"{exact}/{len(compared)}" if reference else "-",
    }
    return row, found


def format_table(rows: dict[str, dict]) -> str:
    """A markdown table, one row per configuration name."""
    keys = list(next(iter(rows.values())))
    lines = ["| configuration | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
    lines += [f"| {name} | " + " | ".join(str(row[k]) for k in keys) + " |" for name, row in rows.items()]
    return "\n".join(lines)
