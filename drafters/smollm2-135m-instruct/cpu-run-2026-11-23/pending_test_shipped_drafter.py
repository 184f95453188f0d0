"""The committed SmolLM2-135M-Instruct drafter: it loads against the real target, keeps greedy output
exactly the target's own, and is accepted far more often than a random drafter would be."""

import json
import os

import pytest
import torch

from sglang_dflash import SamplingParams, load_drafter, spec_generate
from sglang_dflash.smollm2 import IM_END_ID, ensure_smollm2

DRAFTER = os.path.join(os.path.dirname(__file__), "..", "drafters", "smollm2-135m-instruct")
# Not from the evaluation sets: a code task and a word problem in the style the drafter was trained on.
CHATS = [
    "Write a Python function that returns the largest of three numbers.",
    "Mia has 12 apples and buys 7 more, then gives 5 away. How many apples does she have?",
    "Write a Python function that counts the vowels in a string.",
]
NEW_TOKENS = 48


@pytest.fixture(scope="module")
def smollm2():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = ensure_smollm2()
    return AutoModelForCausalLM.from_pretrained(
        path, dtype=torch.float32
    ).eval(), AutoTokenizer.from_pretrained(path)


def test_shipped_files_are_small_and_carry_their_dtype():
    weights = [f for f in os.listdir(DRAFTER) if f.endswith(".safetensors")]
    assert weights, f"{DRAFTER} holds no safetensors"
    assert sum(os.path.getsize(os.path.join(DRAFTER, f)) for f in weights) <= 24 * 2**20
    with open(os.path.join(DRAFTER, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    assert config["torch_dtype"] == "bfloat16"


@pytest.mark.slow
def test_shipped_drafter_is_lossless_and_accepted(smollm2):
    target, tokenizer = smollm2
    drafter = load_drafter(DRAFTER, target_config=target.config)
    prompts = [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": c}], add_generation_prompt=True, tokenize=True
        )
        for c in CHATS
    ]
    prompts = [list(p["input_ids"] if hasattr(p, "keys") else p) for p in prompts]
    params = SamplingParams(max_new_tokens=NEW_TOKENS, stop_token_ids=(IM_END_ID,))
    result = spec_generate(target, drafter, prompts, params)
    for prompt, tokens in zip(prompts, result.token_ids):
        plain = target.generate(
            torch.tensor([prompt]),
            attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            max_new_tokens=NEW_TOKENS,
            do_sample=False,
            eos_token_id=IM_END_ID,
            pad_token_id=IM_END_ID,
        )
        assert tokens == plain[0, len(prompt) :].tolist()
    # A random drafter commits ~1 token per verify step; a trained one must do clearly better.
    assert result.mean_tau > 1.5, result.mean_tau
