"""Constants, server starters and checks shared by the end-to-end modules (fixtures: conftest.py)."""

from __future__ import annotations

import threading
import time

from cpu_server import CpuServer

from sglang_dflash.bench.engine_run import read_profile
from sglang_dflash.serving.tree_verify import prompt_lookup_setting, with_lookup_branch
from sglang_dflash.tree import load_tree

NUM_PROMPTS_PER_SET, MAX_NEW_TOKENS = 4, 48  # three 16-token blocks and more per request
CHUNK = 48  # below every chat prompt's length: prefill always runs in several chunks
GREEDY = {"temperature": 0, "max_new_tokens": MAX_NEW_TOKENS}
MAX_NEW_TOKENS_INSIDE_A_BLOCK = (1, 2, 7, 17, 33)
# One request at a time is the slowest case on CPU (a few tokens per step for minutes): two prompts of
# each set (HumanEval 0-1, GSM8K 4-5) cover it; every prompt runs at the higher concurrency.
ONE_AT_A_TIME_PROMPTS = (0, 1, 4, 5)
SUMMARY: dict[str, dict] = {}


def served_tree_widths(path: str, block_size: int = 16) -> set[int]:
    """The verify widths a server may give the tree file at ``path``: its nodes and a lookup branch
    of any length up to the one the environment asks for (``SGLANG_DFLASH_PROMPT_LOOKUP``, as the
    test's servers inherit it; a step's rows budget cuts it)."""
    tree = load_tree(path)
    full = with_lookup_branch(tree, prompt_lookup_setting(), block_size)
    return set(range(tree.num_nodes, full.num_nodes + 1))


def start_server(
    smollm2: str, tmp_path_factory, name: str, *args: str, env: dict[str, str] | None = None
) -> CpuServer:
    log = str(tmp_path_factory.mktemp(name) / "server.log")
    flags = ["--random-seed", "0", *args]
    return CpuServer(smollm2, flags, log_path=log, env=env)


def dflash_server(
    smollm2: str,
    drafter: tuple[str, str],
    tmp_path_factory,
    name: str,
    *args: str,
    env: dict[str, str] | None = None,
    overlap: bool = False,
) -> CpuServer:
    """A DFLASH server; ``overlap`` keeps SGLang's overlap scheduler (the GPU default), which our
    CPU handling turns off unless ``SGLANG_DFLASH_CPU_OVERLAP=1``."""
    if overlap:
        env = {**(env or {}), "SGLANG_DFLASH_CPU_OVERLAP": "1"}
    return start_server(
        smollm2,
        tmp_path_factory,
        name,
        "--speculative-algorithm",
        "DFLASH",
        "--speculative-draft-model-path",
        drafter[0],
        *args,
        env=env,
    )


def profile_counts(server: CpuServer, *names: str) -> dict[str, int]:
    """The running counts of the server's CPU step profile (``SGLANG_DFLASH_PROFILE``, kept as
    ``server.profile``): e.g. the steps that staged their verify and the requests their second
    passes scored or the second-pass gate cut."""
    counts = (read_profile(server.profile) or {}).get("counts", {})
    return {name: counts.get(name, 0) for name in names}


def profile_width_steps(server: CpuServer, widths: set[int]) -> int:
    """The steps of the verify ``widths`` so far in the server's CPU step profile (a tree step's
    width is its tree's nodes)."""
    profile = (read_profile(server.profile) or {}).get("widths", {})
    return sum(profile.get(str(width), {}).get("steps", 0) for width in widths)


def radix_prompts(prompts: list[list[int]]) -> list[list[int]]:
    """Two prompts sharing a long prefix (the second one hits the radix cache the first one filled)."""
    prefix = prompts[0] + prompts[1]
    return [prefix + prompts[2][-8:], prefix + prompts[3][-8:]]


def stop_word(tokenizer, output_ids: list[int]) -> str:
    """The longest word of the middle of a plain output: a stop string that ends generation there."""
    return max(tokenizer.decode(output_ids[20:40]).split(), key=len)


def mean_tau(results: list[dict]) -> float:
    tokens = sum(r["meta_info"]["completion_tokens"] for r in results)
    steps = sum(r["meta_info"].get("spec_verify_ct") or 0 for r in results)
    return round(tokens / steps, 3) if steps else float("nan")


def check_greedy_equals_plain(
    name: str, server: CpuServer, prompts, reference, concurrency: int, drafter
) -> None:
    """Greedy DFLASH output == plain output for every prompt (at concurrency 1: those of
    ``ONE_AT_A_TIME_PROMPTS``); the row goes into the summary table."""
    assert len(prompts) >= 8 and all(len(p) > CHUNK for p in prompts)
    chosen = ONE_AT_A_TIME_PROMPTS if concurrency == 1 else range(len(prompts))
    expected = [reference["greedy"][i] for i in chosen]
    results = server.generate_many([prompts[i] for i in chosen], GREEDY, concurrency=concurrency)
    exact = sum(r["output_ids"] == ref for r, ref in zip(results, expected))
    SUMMARY[f"{name} c={concurrency}"] = {
        "drafter": drafter[1],
        "prompts": len(results),
        "tokens": sum(len(r["output_ids"]) for r in results),
        "exact": f"{exact}/{len(results)}",
        "tau": mean_tau(results),
    }
    assert all(r["meta_info"]["spec_verify_ct"] >= 1 for r in results)
    assert [r["output_ids"] for r in results] == expected


def check_max_new_tokens_inside_a_block(server: CpuServer, prompts, reference) -> None:
    params = [{"temperature": 0, "max_new_tokens": n} for n in MAX_NEW_TOKENS_INSIDE_A_BLOCK]
    got = server.generate_many([prompts[4]] * len(params), params, concurrency=len(params))
    for n, result, expected in zip(MAX_NEW_TOKENS_INSIDE_A_BLOCK, got, reference["max_new_tokens"]):
        assert result["output_ids"] == expected["output_ids"]
        assert len(result["output_ids"]) == n
        assert result["meta_info"]["finish_reason"] == expected["meta_info"]["finish_reason"]


def check_a_late_request_at_a_full_batch_starts_at_once(server: CpuServer, prompts, slots: int) -> None:
    """With ``slots - 1`` requests running on a server of ``--max-running-requests slots``, one more
    request gets its first token before any of them finishes.  SGLang holds a DFLASH server's new
    prefills until min(4, max(2, (slots + 5) // 6)) slots are free; ours turns that off, so a request
    arriving at a nearly full batch does not wait a whole generation."""
    import requests

    long = {"temperature": 0, "max_new_tokens": 96, "ignore_eos": True}
    finished: list[float] = []

    def run(prompt: list[int]) -> None:
        body = {"input_ids": prompt, "sampling_params": long}
        requests.post(server.base + "/generate", json=body, timeout=900)
        finished.append(time.perf_counter())

    earlier = [threading.Thread(target=run, args=(prompts[i % len(prompts)],)) for i in range(slots - 1)]
    for thread in earlier:
        thread.start()
    deadline = time.time() + 300
    while server.load()["num_running_reqs"] < slots - 1:
        assert time.time() < deadline and not finished, f"never {slots - 1} running: {server.load()}"
        time.sleep(0.2)
    late = {"input_ids": prompts[-1], "sampling_params": {"temperature": 0, "max_new_tokens": 4}}
    next(iter(server.stream_lines(late, timeout_s=900)))  # its first token (then it disconnects)
    first_token = time.perf_counter()
    for thread in earlier:
        thread.join(timeout=900)
    assert len(finished) == slots - 1
    assert first_token < min(finished), (
        f"the late request's first token came {first_token - min(finished):.1f} s after the first "
        "earlier request finished; expected before (it waited for free slots)"
    )


def check_sampled_and_greedy_share_a_batch(server: CpuServer, prompts, reference) -> None:
    """Two greedy and two sampled requests at once: every one finishes, the greedy ones as plain
    decoding does (two prompts of each set: a sampled row makes the whole batch take the
    full-logits path, slow on CPU)."""
    chosen = range(2, 6)
    sampled = {"temperature": 0.8, "top_p": 0.9, "max_new_tokens": 48}
    params = [GREEDY if i % 2 == 0 else sampled for i in chosen]
    results = server.generate_many([prompts[i] for i in chosen], params, concurrency=len(params))
    for i, result in zip(chosen, results):
        assert result["meta_info"]["finish_reason"]["type"] in ("length", "stop") and result["output_ids"]
        if i % 2 == 0:
            assert result["output_ids"] == reference["greedy"][i]


def check_aborts_leave_the_kv_pools_balanced(server: CpuServer, prompts) -> None:
    """Client disconnects and ``/abort_request`` mid-generation; then the idle server holds the KV
    slots it held before, its strict leak check stayed silent, and it still answers."""
    import requests

    before = server.used_tokens_when_idle()
    long = {"temperature": 0, "max_new_tokens": 400, "ignore_eos": True}

    def disconnect_after(prompt: list[int], chunks: int) -> None:
        for n, _ in enumerate(server.stream_lines({"input_ids": prompt, "sampling_params": long})):
            if n + 1 >= chunks:
                return  # leaving the stream closes the connection: the server aborts the request

    clients = [threading.Thread(target=disconnect_after, args=(p, 2 + i)) for i, p in enumerate(prompts[:4])]
    rid = "abort-by-id"
    by_id = threading.Thread(
        target=lambda: requests.post(
            server.base + "/generate",
            timeout=600,
            json={"input_ids": prompts[5], "sampling_params": long, "rid": rid},
        )
    )
    for thread in [*clients, by_id]:
        thread.start()
    time.sleep(5)
    assert requests.post(server.base + "/abort_request", json={"rid": rid}, timeout=30).status_code == 200
    for thread in [*clients, by_id]:
        thread.join(timeout=600)
    assert server.used_tokens_when_idle() == before
    time.sleep(2)  # the strict idle memory check runs now; a leak stops the server
    assert server.alive(), server.log_tail()
    assert "memory leak" not in server.log_tail(1_000_000)
    assert len(server.generate(prompts[6], {"temperature": 0, "max_new_tokens": 8})["output_ids"]) == 8


def check_shutdown_is_clean(server: CpuServer) -> None:
    # Greedy, past <|im_end|>: exactly 4 tokens whatever the prompt continues with (a sampled
    # request could stop early and fail this check by chance).
    still_serving = {"max_new_tokens": 4, "temperature": 0.0, "ignore_eos": True}
    assert len(server.generate(text="Hi", sampling_params=still_serving)["output_ids"]) == 4
    started = time.time()
    server.shutdown(timeout_s=60)
    assert time.time() - started < 60, "the server did not stop on SIGTERM"
    log = server.log_tail(1_000_000)
    assert "Traceback" not in log, log[-3000:]
