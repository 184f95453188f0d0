"""Shared setup of the end-to-end tests through the real SGLang server on this CPU (SmolLM2-135M-Instruct,
float32): the drafter, the prompts, plain-decoding reference outputs and one DFLASH server per module.

Servers run one at a time (an idle SGLang scheduler still spins a core): the plain server answers
every reference request the tests need once per session and stops; each test module then starts
its own DFLASH server (a module-scoped fixture) and stops it at the end.  The drafter is the
shipped SmolLM2 drafter when ``drafters/smollm2-135m-instruct`` holds one, else a random drafter.
A summary table (prompts, tokens, exact matches, tau per configuration) is printed at the end.
"""

from __future__ import annotations

import pytest
from cpu_server import data_file, smollm2_drafter
from serving_checks import (
    GREEDY,
    MAX_NEW_TOKENS_INSIDE_A_BLOCK,
    NUM_PROMPTS_PER_SET,
    SUMMARY,
    radix_prompts,
    start_server,
    stop_word,
)

pytest.importorskip("sglang", reason="needs the sglang extra installed")


@pytest.fixture(scope="session")
def smollm2() -> str:
    from sglang_dflash.smollm2 import ensure_smollm2

    return ensure_smollm2()


@pytest.fixture(scope="session")
def drafter(smollm2, tmp_path_factory) -> tuple[str, str]:
    """(path, kind): the shipped drafter, or a random one with the same mask token."""
    return smollm2_drafter(smollm2, str(tmp_path_factory.mktemp("smollm2-random-drafter")))


@pytest.fixture(scope="session")
def tokenizer(smollm2):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(smollm2)


@pytest.fixture(scope="session")
def prompts(tokenizer) -> list[list[int]]:
    """Chat-templated prompts: the first HumanEval and GSM8K questions of ../shared/data."""
    from sglang_dflash.bench.datasets import load_dataset

    chosen = [
        p
        for name in ("humaneval.jsonl", "gsm8k.jsonl")
        for p in load_dataset(data_file(name), tokenizer, NUM_PROMPTS_PER_SET)
    ]
    return [list(p.input_ids) for p in chosen]


@pytest.fixture(scope="session")
def reference(smollm2, prompts, tokenizer, tmp_path_factory) -> dict:
    """Every plain-decoding output the tests compare with, from one plain server (stopped afterwards)."""
    server = start_server(smollm2, tmp_path_factory, "plain")
    try:
        greedy = server.generate_many(prompts, GREEDY, concurrency=8)
        stop = stop_word(tokenizer, greedy[5]["output_ids"])
        return {
            "greedy": [r["output_ids"] for r in greedy],
            "radix": [server.generate(p, GREEDY)["output_ids"] for p in radix_prompts(prompts)],
            "max_new_tokens": [
                server.generate(prompts[4], {"temperature": 0, "max_new_tokens": n})
                for n in MAX_NEW_TOKENS_INSIDE_A_BLOCK
            ],
            "stop": (stop, server.generate(prompts[5], {**GREEDY, "stop": [stop]})),
        }
    finally:
        server.shutdown()


@pytest.fixture(scope="session", autouse=True)
def _print_summary():
    yield
    if SUMMARY:
        keys = ["drafter", "prompts", "tokens", "exact", "tau"]
        print("\nDFLASH on the real SGLang scheduler, CPU, float32, greedy vs plain decoding")
        print("| configuration | " + " | ".join(keys) + " |\n|---|" + "---|" * len(keys))
        for name, row in SUMMARY.items():
            print(f"| {name} | " + " | ".join(str(row.get(k, "")) for k in keys) + " |")
