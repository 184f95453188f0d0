"""SGLang's own clients against our server on this CPU (SmolLM2-135M-Instruct, float32): the serving
benchmark ``python -m sglang.bench_serving --backend sglang`` and the few-shot GSM8K check
``python -m sglang.test.few_shot_gsm8k``, each run once against a plain server and once against
DFLASH with the shipped drafter, as subprocesses against the server's port; then the acceptance
length read from ``meta_info`` the way z-lab's ``dflash/benchmark.py`` reads it.

Nothing here downloads: bench_serving's ``sharegpt`` and ``random`` datasets read a ShareGPT-shaped
file written from ../shared/data; few_shot_gsm8k reads ../shared/data/gsm8k.jsonl's questions with
their reference answers (``data/gsm8k-test-answers.jsonl``: the first lines of openai/grade-school-math's
``test.jsonl``, MIT; the shared file holds the questions only). One server runs at a time (an idle
SGLang scheduler still spins a core): the module starts the plain server, runs every client, stops
it, then does the same with DFLASH; the tests compare the two runs. The figures are printed at the
end of the module.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest
import requests
from cpu_server import CpuServer, cpu_environment, data_file
from serving_checks import dflash_server, start_server

# Heavy (-m heavy): both servers and eight client runs cost about 6 minutes on the 2-core CI
# machine, which the CI time budget (45 minutes in all) cannot carry.
pytestmark = [pytest.mark.slow, pytest.mark.heavy]

ANSWERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "gsm8k-test-answers.jsonl")
CLIENT_TIMEOUT_S = 300

# Small sizes (CI time): each bench run sends BENCH_PROMPTS requests; every figure compared is
# compared between two runs of the same size, so fewer requests lose no check.
BENCH_PROMPTS, BENCH_OUTPUT_LEN, BENCH_INPUT_LEN = 6, 24, 64
BENCH_RUNS = {
    # name: (bench_serving's dataset flags, its traffic flags)
    "random": (
        ["--dataset-name", "random", "--random-input-len", str(BENCH_INPUT_LEN)]
        + ["--random-output-len", str(BENCH_OUTPUT_LEN), "--random-range-ratio", "0.5"],
        ["--request-rate", "4", "--max-concurrency", "4"],
    ),
    "sharegpt": (
        ["--dataset-name", "sharegpt", "--sharegpt-output-len", str(BENCH_OUTPUT_LEN)]
        + ["--apply-chat-template"],
        ["--request-rate", "inf", "--max-concurrency", "8"],
    ),
}
GSM8K_QUESTIONS, GSM8K_SHOTS, GSM8K_MAX_NEW_TOKENS, GSM8K_PARALLEL = 6, 3, 80, 6
# z-lab's server benchmark: num_prompts requests after `concurrency` warm-up ones, greedy.
PROBE_PROMPTS, PROBE_CONCURRENCY, PROBE_MAX_NEW_TOKENS = 6, 3, 48
ZLAB_GSM8K_SUFFIX = "\nPlease reason step by step, and put your final answer within \\boxed{}."


@dataclass
class ClientRun:
    """One client subprocess: its exit code, output, and the figures parsed from it."""

    command: list[str]
    returncode: int
    output: str
    seconds: float
    figures: dict = field(default_factory=dict)


@dataclass
class ServerRuns:
    """Every client's run against one server, and that server's log."""

    bench: dict[str, ClientRun]
    gsm8k: ClientRun
    gsm8k_answers: str
    probe: list[dict]
    probe_figures: dict
    log: str


# --------------------------------------------------------------------------- inputs
def write_sharegpt_file(path: str) -> str:
    """A ShareGPT-shaped JSON list (``conversations``: a human then a gpt turn) from the shared prompt
    sets: what bench_serving's ``sharegpt`` and ``random`` datasets read instead of downloading."""
    rows = []
    for name in ("humaneval.jsonl", "gsm8k.jsonl"):
        with open(data_file(name), encoding="utf-8") as f:
            prompts = [json.loads(line)["prompt"] for _, line in zip(range(BENCH_PROMPTS), f)]
        for prompt in prompts:
            # The gpt turn only sets an output length, which --sharegpt-output-len overrides.
            turns = [{"from": "human", "value": prompt}, {"from": "gpt", "value": "An answer follows."}]
            rows.append({"id": f"{name}-{len(rows)}", "conversations": turns})
    with open(path, "w", encoding="utf-8") as f:
        json.dump(rows, f)
    return path


def write_gsm8k_file(path: str) -> str:
    """../shared/data/gsm8k.jsonl shaped as few_shot_gsm8k reads it (``question`` and ``answer``, whose
    last number is the label); the answers come from ``data/gsm8k-test-answers.jsonl``."""
    with open(ANSWERS, encoding="utf-8") as f:
        answers = {row["question"]: row["answer"] for row in map(json.loads, f)}
    with open(data_file("gsm8k.jsonl"), encoding="utf-8") as f:
        questions = [json.loads(line)["prompt"] for _, line in zip(range(GSM8K_QUESTIONS), f)]
    missing = [q[:40] for q in questions if q not in answers]
    assert not missing, f"{ANSWERS}: no answer for the shared questions {missing}"
    with open(path, "w", encoding="utf-8") as f:
        for question in questions:
            f.write(json.dumps({"question": question, "answer": answers[question]}) + "\n")
    return path


# --------------------------------------------------------------------------- clients
def run_client(module: str, args: list[str], cwd: str) -> tuple[ClientRun, float]:
    """``python -m module args`` pinned like the tests (the environment of the servers); the run and
    its wall time."""
    command = [sys.executable, "-m", module, *args]
    started = time.time()
    done = subprocess.run(
        command,
        cwd=cwd,
        env=cpu_environment(),
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
    )
    seconds = time.time() - started
    return ClientRun(command, done.returncode, done.stdout + done.stderr, seconds), seconds


def run_bench_serving(server: CpuServer, name: str, sharegpt: str, out_dir: str) -> ClientRun:
    """One ``sglang.bench_serving`` run; ``figures`` is the result line of its ``--output-file``."""
    dataset_flags, traffic_flags = BENCH_RUNS[name]
    result_file = os.path.join(out_dir, f"bench-{name}.jsonl")
    args = [
        *("--backend", "sglang", "--host", "127.0.0.1", "--port", str(server.port)),
        *("--num-prompts", str(BENCH_PROMPTS), "--dataset-path", sharegpt, *dataset_flags),
        *traffic_flags,
        *("--seed", "0", "--output-file", result_file, "--output-details", "--disable-tqdm"),
    ]
    run, _ = run_client("sglang.bench_serving", args, out_dir)
    if os.path.exists(result_file):
        with open(result_file, encoding="utf-8") as f:
            run.figures = json.loads(f.readlines()[-1])
    return run


def run_few_shot_gsm8k(server: CpuServer, data_path: str, out_dir: str) -> tuple[ClientRun, str]:
    """One ``sglang.test.few_shot_gsm8k`` run: its printed figures, and the text of every question
    with the model's answer (the ``tmp_output_gsm8k.txt`` it writes into its working directory)."""
    args = [
        *("--data-path", data_path, "--num-questions", str(GSM8K_QUESTIONS)),
        *("--num-shots", str(GSM8K_SHOTS), "--max-new-tokens", str(GSM8K_MAX_NEW_TOKENS)),
        *("--parallel", str(GSM8K_PARALLEL), "--host", "127.0.0.1", "--port", str(server.port)),
    ]
    run, _ = run_client("sglang.test.few_shot_gsm8k", args, out_dir)
    patterns = {
        "accuracy": r"Accuracy: ([\d.]+)",
        "invalid": r"Invalid: ([\d.]+)",
        "latency_s": r"Latency: ([\d.]+) s",
        "output_throughput": r"Output throughput: ([\d.]+) token/s",
    }
    for key, pattern in patterns.items():
        found = re.search(pattern, run.output)
        if found:
            run.figures[key] = float(found.group(1))
    answers_file = os.path.join(out_dir, "tmp_output_gsm8k.txt")
    answers = open(answers_file, encoding="utf-8").read() if os.path.exists(answers_file) else ""
    return run, answers


def zlab_accept_length_probe(server: CpuServer, tokenizer) -> tuple[list[dict], dict]:
    """z-lab's server benchmark (``dflash/benchmark.py``, backend sglang), small: ``/flush_cache``,
    ``concurrency`` warm-up requests, then the prompts at that concurrency through ``/generate``
    (chat-templated text, greedy); each reply's ``meta_info``, and the summary it prints: mean
    ``spec_accept_length`` over the replies, and completion tokens over ``spec_verify_ct``."""
    with open(data_file("gsm8k.jsonl"), encoding="utf-8") as f:
        questions = [
            json.loads(line)["prompt"] for _, line in zip(range(PROBE_PROMPTS + PROBE_CONCURRENCY), f)
        ]
    prompts = [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": q + ZLAB_GSM8K_SUFFIX}], tokenize=False, add_generation_prompt=True
        )
        for q in questions
    ]
    params = {"temperature": 0.0, "top_p": 1.0, "top_k": 1, "max_new_tokens": PROBE_MAX_NEW_TOKENS}

    def send_one(text: str) -> dict:
        return server.generate(text=text, sampling_params=params)

    requests.get(server.base + "/flush_cache", timeout=60).raise_for_status()
    with ThreadPoolExecutor(max_workers=PROBE_CONCURRENCY) as pool:
        list(pool.map(send_one, prompts[:PROBE_CONCURRENCY]))
        started = time.perf_counter()
        metas = [r["meta_info"] for r in pool.map(send_one, prompts[PROBE_CONCURRENCY:])]
        latency = time.perf_counter() - started
    tokens = sum(int(m.get("completion_tokens", 0)) for m in metas)
    verify_ct = sum(int(m.get("spec_verify_ct", 0)) for m in metas)
    lengths = [float(m["spec_accept_length"]) for m in metas if "spec_accept_length" in m]
    figures = {
        "output_tokens": tokens,
        "throughput": tokens / latency,
        "spec_verify_ct": verify_ct,
        "accept_length": sum(lengths) / len(lengths) if lengths else None,
        "tokens_per_verify": tokens / verify_ct if verify_ct else None,
    }
    return metas, figures


def run_every_client(server: CpuServer, tokenizer, out_dir: str, sharegpt: str, gsm8k: str) -> ServerRuns:
    bench = {name: run_bench_serving(server, name, sharegpt, out_dir) for name in BENCH_RUNS}
    gsm8k_run, answers = run_few_shot_gsm8k(server, gsm8k, out_dir)
    probe, probe_figures = zlab_accept_length_probe(server, tokenizer)
    return ServerRuns(bench, gsm8k_run, answers, probe, probe_figures, server.log_tail(10_000_000))


@pytest.fixture(scope="module")
def client_runs(smollm2, drafter, tokenizer, tmp_path_factory, request) -> dict[str, ServerRuns]:
    """Every client against the plain server, then against DFLASH (one server at a time)."""
    inputs = tmp_path_factory.mktemp("host-client-inputs")
    sharegpt = write_sharegpt_file(str(inputs / "sharegpt.json"))
    gsm8k = write_gsm8k_file(str(inputs / "gsm8k.jsonl"))
    starters: dict[str, Callable[[], CpuServer]] = {
        "plain": lambda: start_server(smollm2, tmp_path_factory, "clients-plain"),
        "dflash": lambda: dflash_server(smollm2, drafter, tmp_path_factory, "clients-dflash"),
    }
    runs = {}
    for name, start in starters.items():
        server = start()
        try:
            out_dir = str(tmp_path_factory.mktemp(f"host-clients-{name}"))
            runs[name] = run_every_client(server, tokenizer, out_dir, sharegpt, gsm8k)
        finally:
            server.shutdown()
    yield runs
    if len(runs) == len(starters):
        show(request.config, figures_table(runs, drafter[1]))


def show(config: pytest.Config, lines: list[str]) -> None:
    """Lines on the terminal even while pytest captures output (``-q`` without ``-s``)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        return
    with capture.global_and_fixture_disabled():
        for line in lines:
            reporter.write_line(line)


def figures_table(runs: dict[str, ServerRuns], drafter_kind: str) -> list[str]:
    """The figures of both servers as a Markdown table (for README)."""
    rows = [
        ("bench_serving random: output tok/s", lambda r: r.bench["random"].figures.get("output_throughput")),
        (
            "bench_serving sharegpt: output tok/s",
            lambda r: r.bench["sharegpt"].figures.get("output_throughput"),
        ),
        (
            "bench_serving sharegpt: accept length (/server_info)",
            lambda r: r.bench["sharegpt"].figures.get("accept_length"),
        ),
        ("few_shot_gsm8k: accuracy", lambda r: r.gsm8k.figures.get("accuracy")),
        ("few_shot_gsm8k: output tok/s", lambda r: r.gsm8k.figures.get("output_throughput")),
        ("z-lab probe: output tok/s", lambda r: r.probe_figures["throughput"]),
        ("z-lab probe: mean spec_accept_length", lambda r: r.probe_figures["accept_length"]),
        ("z-lab probe: tokens / spec_verify_ct", lambda r: r.probe_figures["tokens_per_verify"]),
    ]

    def cell(value) -> str:
        return "-" if value is None else f"{value:.3g}" if isinstance(value, float) else str(value)

    lines = [
        f"\nSGLang's clients, CPU, float32, one core; DFLASH with the {drafter_kind} drafter",
        "| figure | plain | DFLASH |",
        "|---|---|---|",
    ]
    lines += [
        f"| {label} | {cell(get(runs['plain']))} | {cell(get(runs['dflash']))} |" for label, get in rows
    ]
    return lines


# --------------------------------------------------------------------------- checks
def assert_clean(run: ClientRun) -> None:
    assert run.returncode == 0, (
        f"{' '.join(run.command[2:4])} exited with {run.returncode}:\n{run.output[-3000:]}"
    )


@pytest.mark.parametrize("server", ["plain", "dflash"])
@pytest.mark.parametrize("dataset", list(BENCH_RUNS))
def test_bench_serving_completes_every_request(client_runs, server, dataset):
    run = client_runs[server].bench[dataset]
    assert_clean(run)
    assert run.figures, f"bench_serving wrote no result:\n{run.output[-3000:]}"
    assert run.figures["completed"] == BENCH_PROMPTS, run.output[-3000:]
    assert run.figures["errors"] == [""] * BENCH_PROMPTS
    assert run.figures["total_output_tokens"] > 0 and run.figures["output_throughput"] > 0


@pytest.mark.parametrize("dataset", list(BENCH_RUNS))
def test_bench_serving_greedy_texts_equal_plain(client_runs, dataset):
    plain, dflash = (client_runs[s].bench[dataset].figures for s in ("plain", "dflash"))
    assert plain["generated_texts"] and dflash["generated_texts"] == plain["generated_texts"]


def test_bench_serving_reports_the_servers_accept_length_only_for_dflash(client_runs):
    plain, dflash = (client_runs[s].bench["sharegpt"].figures for s in ("plain", "dflash"))
    assert plain["accept_length"] is None
    assert dflash["accept_length"] is not None and dflash["accept_length"] >= 1


@pytest.mark.parametrize("server", ["plain", "dflash"])
def test_few_shot_gsm8k_runs(client_runs, server):
    run = client_runs[server].gsm8k
    assert_clean(run)
    assert {"accuracy", "invalid", "output_throughput"} <= set(run.figures), run.output[-3000:]
    assert client_runs[server].gsm8k_answers.count("Question:") >= GSM8K_QUESTIONS


def test_few_shot_gsm8k_accuracy_and_answers_equal_plain(client_runs):
    plain, dflash = client_runs["plain"], client_runs["dflash"]
    assert dflash.gsm8k.figures["accuracy"] == plain.gsm8k.figures["accuracy"]
    assert dflash.gsm8k_answers == plain.gsm8k_answers


def test_meta_info_accept_length_matches_tokens_over_verify_steps(client_runs, drafter):
    metas = client_runs["dflash"].probe
    assert len(metas) == PROBE_PROMPTS
    for meta in metas:
        assert meta["spec_verify_ct"] >= 1
        assert meta["spec_accept_length"] == pytest.approx(meta["completion_tokens"] / meta["spec_verify_ct"])
        assert 1 <= meta["spec_accept_length"] <= drafter_block_size(drafter[0])
    figures = client_runs["dflash"].probe_figures
    assert figures["tokens_per_verify"] >= 1 and figures["accept_length"] >= 1


def test_plain_meta_info_has_no_accept_length(client_runs):
    assert all("spec_accept_length" not in m for m in client_runs["plain"].probe)


@pytest.mark.parametrize("server", ["plain", "dflash"])
def test_server_log_has_no_error(client_runs, server):
    log = client_runs[server].log
    assert "Traceback" not in log and "ERROR" not in log, log[-3000:]


def drafter_block_size(path: str) -> int:
    """The drafter's block size (its most tokens committed per verify step)."""
    with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    return int(config.get("block_size") or config["dflash_config"]["block_size"])
