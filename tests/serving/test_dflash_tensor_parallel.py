"""Our DFLASH inside a tensor-parallel target: ``--tp-size 3`` on CPU, three real ranks over gloo.

SmolLM2-135M has 9 query heads and 3 K/V heads (not divisible by 2), so the CPU test runs TP=3: the
target's layers and our drafter (shipped drafter, same head layout) are both sharded three ways.
On a CUDA build of torch, SGLang's pynccl wrapper finds libnccl and refuses a CPU device; pointing
``SGLANG_NCCL_SO_PATH`` at nothing disables it, as on a CPU build, and the host falls back to
``torch.distributed`` (gloo) collectives.

Lossless under TP means DFLASH at ``--tp-size 3`` equals plain decoding at ``--tp-size 3`` (the
target's sharded sums round as they do without speculation); plain TP=3 is also checked against
the session's TP=1 reference.  The DFLASH server runs with rank 1's draft logits deliberately
wrong (``SGLANG_DFLASH_TEST_DIVERGE_RANK``, a test-only hook of tests/cpu_host/sitecustomize.py):
the worker takes drafts and acceptance from rank 0, so output stays exact; without that agreement
(checked) rank 1 commits other tokens, the ranks' schedulers fall out of step and the server dies
in a collective.  The whole module is ``heavy`` (``-m heavy``): three ranks on two cores make each
TP server cost minutes.
"""

from __future__ import annotations

import json

import pytest
from serving_checks import (
    GREEDY,
    SUMMARY,
    check_aborts_leave_the_kv_pools_balanced,
    dflash_server,
    mean_tau,
    start_server,
)

# Heavy (-m heavy): three ranks on two cores make each TP server cost minutes (about 6 for the
# module on the 2-core CI machine); CI keeps the in-process sharding test (tests/test_tensor_parallel.py).
pytestmark = [pytest.mark.slow, pytest.mark.heavy]

TP = 3
TP_FLAGS = ("--tp-size", str(TP))
# Ranks 0 and 2 share core 0 and rank 1 takes core 1 (the host binds each rank's OpenMP threads).
TP_ENV = {"SGLANG_NCCL_SO_PATH": "/nonexistent/libnccl.so.2", "SGLANG_CPU_OMP_THREADS_BIND": "0|1|0"}
DIVERGE_ENV = {**TP_ENV, "SGLANG_DFLASH_TEST_DIVERGE_RANK": "1"}
SEEDED = {"temperature": 0.8, "top_p": 0.95, "max_new_tokens": 32, "sampling_seed": 7}
SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
LOGPROBS = {"return_logprob": True, "top_logprobs_num": 3}
LOGPROB_ATOL = 1e-3
BATCH = 4  # concurrent greedy prompts (of the session's 8), kept small: three ranks share two cores


def extra_requests(server, prompts) -> dict:
    """One constrained, one logprob and one seeded sampled request: each must match across servers."""
    constrained = server.generate(
        prompts[1], {"temperature": 0, "max_new_tokens": 24, "json_schema": json.dumps(SCHEMA)}
    )
    with_logprobs = server.generate(prompts[2], {"temperature": 0, "max_new_tokens": 16}, **LOGPROBS)
    return {
        "constrained": constrained,
        "logprobs": with_logprobs,
        "seeded": server.generate(prompts[3], SEEDED),
    }


@pytest.fixture(scope="module")
def plain_tp(smollm2, prompts, reference, tmp_path_factory) -> dict:
    """Plain decoding at --tp-size 3: the greedy outputs and the extra requests' answers."""
    server = start_server(smollm2, tmp_path_factory, "plain-tp", *TP_FLAGS, env=TP_ENV)
    try:
        greedy = [r["output_ids"] for r in server.generate_many(prompts[:BATCH], GREEDY, concurrency=BATCH)]
        return {"greedy": greedy, **extra_requests(server, prompts)}
    finally:
        server.shutdown()


def check_dflash_tp_server(name: str, server, prompts, plain_tp: dict, drafter) -> list[int]:
    """Greedy at c=1 and c=BATCH equal to plain TP decoding, the extra requests answered alike;
    returns the seeded sampled output."""
    single = server.generate(prompts[0], GREEDY)
    batched = server.generate_many(prompts[:BATCH], GREEDY, concurrency=BATCH)
    exact = sum(r["output_ids"] == ref for r, ref in zip(batched, plain_tp["greedy"]))
    SUMMARY[f"{name} c={BATCH}"] = {
        "drafter": drafter[1],
        "prompts": len(batched),
        "tokens": sum(len(r["output_ids"]) for r in batched),
        "exact": f"{exact}/{len(batched)}",
        "tau": mean_tau(batched),
    }
    assert single["output_ids"] == plain_tp["greedy"][0]
    assert [r["output_ids"] for r in batched] == plain_tp["greedy"]
    assert all(r["meta_info"]["spec_verify_ct"] >= 1 for r in batched)
    got = extra_requests(server, prompts)
    assert got["constrained"]["output_ids"] == plain_tp["constrained"]["output_ids"]
    assert isinstance(json.loads(got["constrained"]["text"])["answer"], int)
    assert got["logprobs"]["output_ids"] == plain_tp["logprobs"]["output_ids"]
    ours = [entry[0] for entry in got["logprobs"]["meta_info"]["output_token_logprobs"]]
    theirs = [entry[0] for entry in plain_tp["logprobs"]["meta_info"]["output_token_logprobs"]]
    assert ours == pytest.approx(theirs, abs=LOGPROB_ATOL)
    assert got["seeded"]["meta_info"]["finish_reason"]["type"] in ("length", "stop")
    return got["seeded"]["output_ids"]


def test_plain_tp_equals_plain_tp1(plain_tp, reference):
    """The host's own TP on CPU: sharded greedy decoding gives the single-rank tokens."""
    assert plain_tp["greedy"] == reference["greedy"][:BATCH]


@pytest.fixture(scope="module")
def seeded_outputs() -> list:
    """The seeded sampled output of each DFLASH TP server of the module (they must agree)."""
    return []


def test_dflash_tp_with_a_diverging_rank_equals_plain_tp(
    smollm2, drafter, prompts, plain_tp, seeded_outputs, tmp_path_factory
):
    """Overlap scheduler on, rank 1's drafter deliberately off: exact, and aborts leave every
    rank's KV pool balanced (a rank's strict idle check would stop the server)."""
    server = dflash_server(
        smollm2, drafter, tmp_path_factory, "dflash-tp", *TP_FLAGS, env=DIVERGE_ENV, overlap=True
    )
    try:
        name = "tp=3 overlap, rank 1 diverging"
        seeded_outputs.append(check_dflash_tp_server(name, server, prompts, plain_tp, drafter))
        assert "sglang-dflash test: rank 1 drafts diverge" in server.log_tail(1_000_000)
        check_aborts_leave_the_kv_pools_balanced(server, prompts)
    finally:
        server.shutdown()


def test_dflash_tp_without_overlap_equals_plain_tp(
    smollm2, drafter, prompts, plain_tp, seeded_outputs, tmp_path_factory
):
    """The same without the overlap scheduler and without the diverging rank; a seeded sampled
    request gives the same tokens as on the first server (batch- and rank-independent)."""
    server = dflash_server(
        smollm2,
        drafter,
        tmp_path_factory,
        "dflash-tp-sync",
        *TP_FLAGS,
        "--disable-overlap-schedule",
        env=TP_ENV,
    )
    try:
        seeded = check_dflash_tp_server("tp=3 no overlap", server, prompts, plain_tp, drafter)
    finally:
        server.shutdown()
    if seeded_outputs:
        assert seeded == seeded_outputs[0]


def test_dflash_with_two_data_parallel_schedulers_equals_plain(
    smollm2, drafter, prompts, reference, tmp_path_factory
):
    """``--dp-size 2`` (no DP attention): two independent schedulers, each with its own worker."""
    server = dflash_server(smollm2, drafter, tmp_path_factory, "dflash-dp", "--dp-size", "2")
    try:
        results = server.generate_many(prompts[:BATCH], GREEDY, concurrency=BATCH)
    finally:
        server.shutdown()
    assert [r["output_ids"] for r in results] == reference["greedy"][:BATCH]
    assert all(r["meta_info"]["spec_verify_ct"] >= 1 for r in results)
