"""A real model on CPU: SmolLM2-135M-Instruct, greedy speculative output == plain greedy output."""

import pytest
import torch

from sglang_dflash import SamplingParams, spec_generate
from sglang_dflash.smollm2 import IM_END_ID
from sglang_dflash.testing import make_tiny_drafter

CHATS = [
    "What is the capital of France?",
    "Write a Python function that adds two numbers.",
    "Explain gravity in one sentence.",
]


@pytest.mark.slow
def test_smollm2_greedy_speculative_equals_plain_greedy(smollm2_float32):
    target, tokenizer = smollm2_float32
    assert tokenizer.eos_token_id == IM_END_ID and target.config.num_hidden_layers == 30
    prompts = [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": c}], add_generation_prompt=True, tokenize=True
        )
        for c in CHATS
    ]
    prompts = [p["input_ids"] if isinstance(p, dict) or hasattr(p, "keys") else p for p in prompts]
    # A random drafter (mask token 6 = "<filename>", a rarely used special token) exercises rejection.
    drafter = make_tiny_drafter(target.config, seed=0, num_layers=1, block_size=16, mask_token_id=6, std=0.02)
    params = SamplingParams(max_new_tokens=48, stop_token_ids=(IM_END_ID,))
    result = spec_generate(target, drafter, prompts, params)
    for prompt, tokens in zip(prompts, result.token_ids):
        plain = target.generate(
            torch.tensor([prompt]),
            attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            max_new_tokens=48,
            do_sample=False,
            eos_token_id=IM_END_ID,
            pad_token_id=IM_END_ID,
        )
        assert tokens == plain[0, len(prompt) :].tolist()
    assert "Paris" in tokenizer.decode(result.token_ids[0])
    assert result.finish_reasons[0] == "stop"
