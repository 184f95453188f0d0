"""Logprobs, grammar-constrained decoding and hidden states with our DFLASH, through the real SGLang
scheduler on CPU (overlap scheduler on), against plain decoding on the same server flags.

One plain server answers every request of this module first and stops; then one DFLASH server, with
the shipped hot draft vocabulary, answers the same requests (shared setup: conftest.py).  Greedy
requests must return the same tokens, the same logprobs (float tolerance), the same top-k token sets
and the same hidden states as plain decoding; constrained outputs must parse / match and equal plain
constrained output.
"""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from cpu_server import HOT_VOCABULARY
from serving_checks import dflash_server, start_server

pytestmark = pytest.mark.slow

FLAGS = ("--enable-return-hidden-states",)
LOGPROB_ATOL = 1e-3  # float32 on CPU: batch composition changes the last bits (seen: 3e-5)
HIDDEN_ATOL = 1e-3
TOP_K = 5
PERSON_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "city": {"type": "string"}},
    "required": ["name", "age", "city"],
}
FRUIT_REGEX = r"[A-Z][a-z]+(,[A-Z][a-z]+){2}\."  # SmolLM2's tokens with a leading space: see docs/serving.md
YES_NO_EBNF = 'root ::= ("yes" | "no") "," [0-9] [0-9]?'
GREEDY_LOGPROBS = 4  # prompts with logprobs
PENALISED_PROMPT = 7
PENALTIES = {
    "penalties frequency presence": {"frequency_penalty": 0.6, "presence_penalty": 0.3},
    "penalties repetition min_new_tokens": {"repetition_penalty": 1.3, "min_new_tokens": 24},
}


def chat(tokenizer, question: str) -> list[int]:
    ids = tokenizer.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True)
    return list(ids if isinstance(ids, list) else ids["input_ids"])


def requests_of_this_module(prompts, tokenizer) -> dict[str, tuple[list[int], dict, dict]]:
    """name -> (input_ids, sampling_params, extra request fields), sent to both servers."""
    greedy = {"temperature": 0, "max_new_tokens": 40}
    logprobs = {"return_logprob": True, "top_logprobs_num": TOP_K, "token_ids_logprob": [13, 28, 198]}
    person = "Describe a made-up person (name, age, city) as a JSON object."
    chosen: dict[str, tuple[list[int], dict, dict]] = {}
    for i in range(GREEDY_LOGPROBS):
        fields = {**logprobs, "logprob_start_len": len(prompts[i]) - 6}  # and the last 6 prompt tokens
        chosen[f"logprobs {i}"] = (prompts[i], greedy, fields)
    chosen["hidden states"] = (prompts[4], {**greedy, "max_new_tokens": 24}, {"return_hidden_states": True})
    for i, question in enumerate([person, "Invent a person who lives in Paris. Answer in JSON."]):
        chosen[f"json {i}"] = (
            chat(tokenizer, question),
            {**greedy, "max_new_tokens": 64, "json_schema": json.dumps(PERSON_SCHEMA)},
            {},
        )
    chosen["json with logprobs"] = (
        chat(tokenizer, person),
        {**greedy, "max_new_tokens": 64, "json_schema": json.dumps(PERSON_SCHEMA)},
        logprobs,
    )
    chosen["regex"] = (chat(tokenizer, "Name three fruits."), {**greedy, "regex": FRUIT_REGEX}, {})
    chosen["ebnf"] = (
        chat(tokenizer, "Is 7 a prime? How many primes are below 20?"),
        {**greedy, "ebnf": YES_NO_EBNF},
        {},
    )
    chosen["plain beside"] = (prompts[5], greedy, {})
    for name, penalties in PENALTIES.items():
        chosen[name] = (prompts[PENALISED_PROMPT], {**greedy, "max_new_tokens": 32, **penalties}, {})
    return chosen


def request_group(fields: dict) -> int:
    """Which concurrent group a request goes in (see :func:`ask_all`)."""
    return 0 if fields.get("return_logprob") else 2 if fields.get("return_hidden_states") else 1


def ask_all(server, chosen) -> dict[str, dict]:
    """Every request of the module, in concurrent groups: the logprob requests (grammar rows among
    them), the grammar and plain rows, then the hidden-state request alone.  SGLang 0.5.16's own
    prefill result processing, plain decoding too, fails on a batch mixing ``token_ids_logprob``
    rows with others, and slices a batch's prompt hidden states by prompt length whatever was
    extended: those requests are kept apart (docs/serving.md, "SGLang 0.5.16 behaviours")."""
    results: dict[str, dict] = {}
    for group_id in range(3):
        group = {k: v for k, v in chosen.items() if request_group(v[2]) == group_id}
        with ThreadPoolExecutor(max_workers=len(group)) as pool:
            futures = {
                name: pool.submit(server.generate, ids, params, **fields)
                for name, (ids, params, fields) in group.items()
            }
            results.update({name: future.result() for name, future in futures.items()})
    return results


def openai_replies(server) -> dict:
    """An OpenAI chat completion with logprobs and a JSON-schema response format, and a text
    completion with logprobs."""
    import openai

    client = openai.OpenAI(base_url=server.base + "/v1", api_key="none")
    completion = client.completions.create(
        model="default", prompt="def fibonacci(n):", max_tokens=32, temperature=0, logprobs=3
    )
    chat = client.chat.completions.create(
        model="default",
        messages=[{"role": "user", "content": "Describe a made-up person (name, age, city) as JSON."}],
        max_tokens=64,
        temperature=0,
        logprobs=True,
        top_logprobs=3,
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON_SCHEMA}},
    )
    return {"chat": chat.model_dump(), "completion": completion.model_dump()}


def sampled_with_logprobs(server, prompts) -> list[tuple[list[int], dict]]:
    """Sampled requests (temperature 1) with logprobs, and the same tokens teacher-forced through the
    server's plain prefill, whose input logprobs are the target's own (untempered = tempered at 1)."""
    results = []
    for prompt in prompts[6:8]:
        sampled = server.generate(prompt, {"temperature": 1.0, "max_new_tokens": 24}, return_logprob=True)
        forced = server.generate(
            prompt + sampled["output_ids"],
            {"temperature": 0, "max_new_tokens": 1},
            return_logprob=True,
            logprob_start_len=len(prompt) - 1,
        )
        results.append((sampled, forced))
    return results


@pytest.fixture(scope="module")
def plain(smollm2, prompts, tokenizer, tmp_path_factory) -> dict:
    server = start_server(smollm2, tmp_path_factory, "plain-options", *FLAGS)
    try:
        return {
            "native": ask_all(server, requests_of_this_module(prompts, tokenizer)),
            "openai": openai_replies(server),
        }
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def dflash(smollm2, drafter, prompts, tokenizer, plain, tmp_path_factory) -> dict:
    # With the hot draft vocabulary: grammar-masked drafting passes ask for the whole vocabulary.
    server = dflash_server(
        smollm2, drafter, tmp_path_factory, "dflash-options", *FLAGS, *HOT_VOCABULARY, overlap=True
    )
    try:
        return {
            "native": ask_all(server, requests_of_this_module(prompts, tokenizer)),
            "openai": openai_replies(server),
            "sampled": sampled_with_logprobs(server, prompts),
            "log": server.log_tail(1_000_000),
        }
    finally:
        server.shutdown()


def values(entries) -> list[float]:
    return [entry[0] for entry in entries]


def token_ids(entries) -> list[int]:
    return [entry[1] for entry in entries]


def assert_close(got: list[float], expected: list[float], atol: float) -> None:
    assert len(got) == len(expected)
    worst = max((abs(a - b) for a, b in zip(got, expected) if a is not None), default=0.0)
    assert worst <= atol, worst


@pytest.mark.parametrize("name", [f"logprobs {i}" for i in range(GREEDY_LOGPROBS)] + ["json with logprobs"])
def test_greedy_logprobs_equal_plain_decoding(plain, dflash, name):
    got, expected = dflash["native"][name], plain["native"][name]
    assert got["output_ids"] == expected["output_ids"]
    meta, ref = got["meta_info"], expected["meta_info"]
    assert token_ids(meta["output_token_logprobs"]) == got["output_ids"]
    assert_close(values(meta["output_token_logprobs"]), values(ref["output_token_logprobs"]), LOGPROB_ATOL)
    assert token_ids(meta["input_token_logprobs"]) == token_ids(ref["input_token_logprobs"])
    assert_close(values(meta["input_token_logprobs"]), values(ref["input_token_logprobs"]), LOGPROB_ATOL)
    for position, (top, ref_top) in enumerate(zip(meta["output_top_logprobs"], ref["output_top_logprobs"])):
        assert len(top) == TOP_K
        assert set(token_ids(top)) == set(token_ids(ref_top)), position
        assert_close(values(top), values(ref_top), LOGPROB_ATOL)
    for ids, ref_ids in zip(meta["output_token_ids_logprobs"], ref["output_token_ids_logprobs"]):
        assert token_ids(ids) == token_ids(ref_ids) == [13, 28, 198]
        assert_close(values(ids), values(ref_ids), LOGPROB_ATOL)


def test_sampled_tokens_get_the_targets_logprobs(dflash):
    for sampled, forced in dflash["sampled"]:
        reported = sampled["meta_info"]["output_token_logprobs"]
        teacher_forced = forced["meta_info"]["input_token_logprobs"][1:]  # the prompt's last token first
        assert token_ids(reported) == sampled["output_ids"] == token_ids(teacher_forced)
        assert_close(values(reported), values(teacher_forced), LOGPROB_ATOL)


@pytest.mark.parametrize("name", ["json 0", "json 1", "json with logprobs"])
def test_json_schema_output_parses_and_equals_plain_constrained_decoding(plain, dflash, name):
    got, expected = dflash["native"][name], plain["native"][name]
    assert got["output_ids"] == expected["output_ids"]
    person = json.loads(got["text"])
    assert set(PERSON_SCHEMA["required"]) <= set(person) and isinstance(person["age"], int)
    assert got["meta_info"]["finish_reason"]["type"] == "stop"


@pytest.mark.parametrize("name, pattern", [("regex", FRUIT_REGEX), ("ebnf", r"(yes|no),[0-9][0-9]?")])
def test_regex_and_ebnf_outputs_match_and_equal_plain_constrained_decoding(plain, dflash, name, pattern):
    got, expected = dflash["native"][name], plain["native"][name]
    assert got["output_ids"] == expected["output_ids"]
    assert re.fullmatch(pattern, got["text"]), got["text"]


def test_hidden_states_equal_plain_decoding(plain, dflash):
    import numpy as np

    got, expected = dflash["native"]["hidden states"], plain["native"]["hidden states"]
    assert got["output_ids"] == expected["output_ids"]
    rows, ref_rows = got["meta_info"]["hidden_states"], expected["meta_info"]["hidden_states"]
    assert len(rows) == len(ref_rows) == len(got["output_ids"])
    # The prompt's rows (those prefilled: a radix-cache hit on the chat template's system prompt
    # is not recomputed, plain decoding alike), then one row per decoded token.
    assert np.asarray(rows[0]).shape == np.asarray(ref_rows[0]).shape and len(rows[0]) > 1
    for row, ref_row in zip(rows, ref_rows):
        assert np.allclose(np.asarray(row, dtype=float), np.asarray(ref_row, dtype=float), atol=HIDDEN_ATOL)


def test_a_plain_request_beside_them_is_unchanged(plain, dflash):
    assert dflash["native"]["plain beside"]["output_ids"] == plain["native"]["plain beside"]["output_ids"]
    assert "Traceback" not in dflash["log"] and "accept_token failed" not in dflash["log"]


def test_openai_chat_with_logprobs_and_response_format(plain, dflash):
    got, expected = dflash["openai"]["chat"]["choices"][0], plain["openai"]["chat"]["choices"][0]
    assert got["message"]["content"] == expected["message"]["content"]
    json.loads(got["message"]["content"])
    tokens, ref_tokens = got["logprobs"]["content"], expected["logprobs"]["content"]
    assert [t["token"] for t in tokens] == [t["token"] for t in ref_tokens]
    assert_close([t["logprob"] for t in tokens], [t["logprob"] for t in ref_tokens], LOGPROB_ATOL)
    for top, ref_top in zip(tokens, ref_tokens):
        assert {t["token"] for t in top["top_logprobs"]} == {t["token"] for t in ref_top["top_logprobs"]}


def test_openai_completion_logprobs_equal_plain_decoding(plain, dflash):
    got = dflash["openai"]["completion"]["choices"][0]
    expected = plain["openai"]["completion"]["choices"][0]
    assert got["text"] == expected["text"]
    assert got["logprobs"]["tokens"] == expected["logprobs"]["tokens"]
    assert_close(got["logprobs"]["token_logprobs"], expected["logprobs"]["token_logprobs"], LOGPROB_ATOL)
    for top, ref_top in zip(got["logprobs"]["top_logprobs"], expected["logprobs"]["top_logprobs"]):
        assert set(top) == set(ref_top)


@pytest.mark.parametrize("name", sorted(PENALTIES))
def test_penalised_greedy_output_equals_plain_decoding_with_the_hosts_penalizers(
    dflash, prompts, smollm2_float32, name
):
    """Batched with the grammar and plain rows: each block position counts the tokens before it.
    The oracle is SGLang's own penalizers over transformers' SmolLM2, one token per pass (the plain
    server's overlap scheduler counts each token one step late, docs/serving.md)."""
    from host_sampling import host_penalized_greedy

    from sglang_dflash import SamplingParams

    model, tokenizer = smollm2_float32
    eos = tokenizer.eos_token_id
    params = SamplingParams(max_new_tokens=32, stop_token_ids=(eos,), **PENALTIES[name])
    expected = host_penalized_greedy(model, prompts[PENALISED_PROMPT], params, eos_token_id=eos)
    assert dflash["native"][name]["output_ids"] == expected
