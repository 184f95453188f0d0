"""Tiny random targets and drafters for tests, examples and CPU training runs.

Everything here is deterministic given a seed and small enough for a 2-core CPU. Targets are
ordinary Hugging Face ``LlamaForCausalLM`` / ``Qwen3ForCausalLM`` models; drafters are
:class:`~sglang_dflash.draft_model.DFlashDraftModel` in the published checkpoint format.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from torch import nn

from .checkpoint import save_drafter
from .config import draft_config_for_target
from .draft_model import DFlashDraftModel

FAMILIES = ("llama", "qwen3")


def tiny_target_config(family: str = "llama", **overrides: Any):
    """A small HF config of the given family (defaults: vocab 64, hidden 32, 6 layers)."""
    from transformers import LlamaConfig, Qwen3Config

    if family not in FAMILIES:
        raise ValueError(f"make_tiny_target: family is {family!r}; expected one of {FAMILIES}")
    fields: dict[str, Any] = dict(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=6,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=1024,
        initializer_range=0.1,
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=None,
    )
    fields.update(overrides)
    config = (LlamaConfig if family == "llama" else Qwen3Config)(**fields)
    config._attn_implementation = "sdpa"
    return config


def make_tiny_target(family: str = "llama", seed: int = 0, **overrides: Any) -> nn.Module:
    """A random float32 HF causal LM in eval mode."""
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(tiny_target_config(family, **overrides), dtype=torch.float32)
    return model.eval()


def save_random_qwen3_target(out_dir: str, tokenizer_dir: str) -> str:
    """Write a random bf16 Qwen3 target with SmolLM2's vocabulary (4 query heads, 2 K/V heads: a
    second architecture for the GPU tests, divisible for --tp-size 2) and ``tokenizer_dir``'s tokenizer."""
    from transformers import AutoTokenizer

    target = make_tiny_target(
        "qwen3",
        seed=0,
        vocab_size=49152,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=6,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        initializer_range=0.05,
        eos_token_id=2,
        bos_token_id=1,
        pad_token_id=2,
        tie_word_embeddings=False,
    )
    target.to(torch.bfloat16).save_pretrained(out_dir)
    AutoTokenizer.from_pretrained(tokenizer_dir).save_pretrained(out_dir)
    return out_dir


def with_zlab_attention(drafter: nn.Module, window: int) -> nn.Module:
    """``drafter`` with z-lab's published DFlash2 attention layout: every draft layer
    ``sliding_attention`` with ``window``, ``is_causal: false`` (the weights are unchanged)."""
    drafter.config = drafter.config.replace(
        layer_types=("sliding_attention",) * drafter.config.num_hidden_layers,
        sliding_window=window,
        is_causal=False,
    )
    return drafter


def init_drafter_weights(model: nn.Module, seed: int = 0, std: float = 0.1) -> nn.Module:
    """Normal(0, std) linear weights, unit norms: a random but well-conditioned drafter (DFlash or,
    before its convolutions are set near identity, DFlash2)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            elif name.endswith(".bias"):
                p.zero_()
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * std)
    return model


def make_tiny_drafter(
    target_config: Any, seed: int = 0, std: float = 0.1, block_size: int = 4, **config_kwargs: Any
) -> DFlashDraftModel:
    """A random drafter for ``target_config``.

    ``config_kwargs`` go to :func:`~sglang_dflash.config.draft_config_for_target`.
    """
    return init_drafter_weights(
        DFlashDraftModel(draft_config_for_target(target_config, block_size=block_size, **config_kwargs)),
        seed,
        std,
    ).eval()


def spare_special_token(tokenizer: Any) -> tuple[str, int]:
    """A special token that no chat turn uses, to stand in as a random drafter's mask token.

    ``<|MASK|>`` where the vocabulary has it; else the added special token with the highest id that
    is neither the bos, eos, pad nor unk token nor written in the chat template. A named token (not
    a bare id) lets SGLang's built-in DFLASH, which looks the mask token up by its string, load the
    same file.
    """
    vocab = tokenizer.get_vocab()
    if "<|MASK|>" in vocab:
        return "<|MASK|>", vocab["<|MASK|>"]
    reserved = {tokenizer.bos_token, tokenizer.eos_token, tokenizer.pad_token, tokenizer.unk_token}
    template = tokenizer.chat_template if isinstance(tokenizer.chat_template, str) else ""
    candidates = [
        (token_id, token.content)
        for token_id, token in tokenizer.added_tokens_decoder.items()
        if token.special and token.content not in reserved and token.content not in template
    ]
    if not candidates:
        raise ValueError(
            f"random drafter: the tokenizer's special tokens are {sorted(reserved - {None})}; expected a "
            "spare one (or <|MASK|>) to use as the mask token"
        )
    token_id, content = max(candidates)
    return content, token_id


def save_random_drafter(
    target_dir: str, out_dir: str, num_layers: int = 1, block_size: int = 16, seed: int = 0
) -> str:
    """Write a random bfloat16 drafter for the HF target in ``target_dir``; returns ``out_dir``.

    Its drafts are almost never accepted (tau about 1), so serving with it measures the per-step
    overhead of speculation (``sglang-dflash bench --drafter random``, the GPU acceptance tests).
    """
    from transformers import AutoConfig, AutoTokenizer

    mask_token, mask_token_id = spare_special_token(AutoTokenizer.from_pretrained(target_dir))
    drafter = make_tiny_drafter(
        AutoConfig.from_pretrained(target_dir),
        seed=seed,
        std=0.02,
        num_layers=num_layers,
        block_size=block_size,
        mask_token_id=mask_token_id,
    )
    drafter.config = drafter.config.replace(mask_token=mask_token)
    save_drafter(drafter, out_dir, dtype=torch.bfloat16)
    return out_dir


def save_tiny_pair(
    directory: str, family: str = "llama", seed: int = 0, **drafter_kwargs: Any
) -> tuple[str, str]:
    """Write a tiny target (HF format) and a matching drafter (DFlash format) under ``directory``."""
    target = make_tiny_target(family, seed)
    target_dir, drafter_dir = os.path.join(directory, "target"), os.path.join(directory, "drafter")
    target.save_pretrained(target_dir)
    save_drafter(make_tiny_drafter(target.config, seed=seed + 1, **drafter_kwargs), drafter_dir)
    return target_dir, drafter_dir


def self_distilled_corpus(
    target: nn.Module, num_prompts: int = 96, max_new_tokens: int = 48, seed: int = 0
) -> list[dict]:
    """Training records: ``target``'s own greedy continuations of random token prompts (3-11 tokens)."""
    from .train.data import generate_responses_hf

    vocab = target.config.get_text_config().vocab_size
    g = torch.Generator().manual_seed(seed)
    prompts = [
        torch.randint(1, vocab - 1, (int(torch.randint(3, 12, (1,), generator=g)),), generator=g).tolist()
        for _ in range(num_prompts)
    ]
    return list(
        generate_responses_hf(
            target, prompts, max_new_tokens=max_new_tokens, eos_token_id=None, batch_size=32
        )
    )


def tiny_train_config(data: str, output: str, **overrides: Any):
    """A :class:`~sglang_dflash.train.trainer.TrainConfig` for a 2-layer, block-4 drafter (seconds)."""
    from .train.trainer import TrainConfig

    fields: dict[str, Any] = dict(
        target="",
        data=data,
        output=str(output),
        num_draft_layers=2,
        block_size=4,
        steps=400,
        batch_size=8,
        num_anchors=16,
        lr=3e-3,
        warmup_steps=20,
        log_every=10,
        save_every=100,
        precision="fp32",  # the same numbers on every CI machine, with native bf16 or without
    )
    fields.update(overrides)
    return TrainConfig(**fields)


def arrange_oracle(
    target: nn.Module, drafter: DFlashDraftModel, token_id: int, strength: float, dim: int = 0
) -> None:
    """Rewire a random target and drafter so the drafter predicts what the target mostly says.

    Hidden dimension ``dim`` becomes a constant "highway": every token embeds to the same large
    value there and no layer writes to it.  The target's lm_head reads that dimension only for
    ``token_id``, scaled by ``strength`` through its final norm, so a larger ``strength`` makes the
    target say ``token_id`` more often (always, for a large enough value), while its other logits
    stay random and context dependent.  The drafter's final norm reads the highway alone, so it
    always drafts ``token_id``: acceptance is high, and ragged where the target disagrees.
    """
    if target.config.tie_word_embeddings:
        raise ValueError("arrange_oracle needs a target with untied embeddings (tie_word_embeddings=False)")
    with torch.no_grad():
        embed = target.get_input_embeddings().weight
        embed[:, dim] = 3.0 * embed.std()
        for layers in (target.model.layers, drafter.layers):
            for layer in layers:
                layer.self_attn.o_proj.weight[dim] = 0
                layer.mlp.down_proj.weight[dim] = 0
                if layer.self_attn.o_proj.bias is not None:
                    layer.self_attn.o_proj.bias[dim] = 0
        head = target.get_output_embeddings().weight
        head[:, dim] = 0
        head[token_id, dim] = 1.0
        target.model.norm.weight[dim] = strength
        drafter.norm.weight.zero_()
        drafter.norm.weight[dim] = 1.0
