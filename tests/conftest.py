"""Shared test setup: one CPU thread (two stall on the CI machines), GPU tests skipped without CUDA."""

import os

import pytest
import torch

torch.set_num_threads(1)
if not torch.cuda.is_available():
    # Triton kernels run through Triton's interpreter on CPU; it must be chosen before triton is imported.
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(
        reason="needs a CUDA GPU and the SGLang stack; run on the GPU host (see docs/gpu-runbook.md)"
    )
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def smollm2_float32():
    """SmolLM2-135M-Instruct in float32 (transformers) and its tokenizer, converted once per machine."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from sglang_dflash.smollm2 import ensure_smollm2

    path = ensure_smollm2()
    return AutoModelForCausalLM.from_pretrained(
        path, dtype=torch.float32
    ).eval(), AutoTokenizer.from_pretrained(path)


@pytest.fixture(scope="session")
def qwen3_pair(tmp_path_factory) -> tuple[str, str]:
    """A tiny Qwen3 target and a drafter for it (block size 4, two layers), saved: (target, drafter)."""
    from sglang_dflash.testing import save_tiny_pair

    return save_tiny_pair(str(tmp_path_factory.mktemp("qwen3-pair")), "qwen3", block_size=4, num_layers=2)


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory):
    """A tiny Llama target, 96 of its own greedy continuations, the first 64 written as training data."""
    from sglang_dflash.testing import make_tiny_target, self_distilled_corpus
    from sglang_dflash.train.data import write_records

    target = make_tiny_target("llama", seed=0)
    records = self_distilled_corpus(target)
    path = str(tmp_path_factory.mktemp("corpus") / "train.jsonl")
    assert write_records(records[:64], path) == 64
    return target, path, records


@pytest.fixture(scope="session")
def tiny_trained(tiny_corpus, tmp_path_factory):
    """A drafter trained on ``tiny_corpus`` (400 steps, block 4): (output directory, training summary)."""
    from sglang_dflash.testing import tiny_train_config
    from sglang_dflash.train.trainer import train

    target, path, _ = tiny_corpus
    out = tmp_path_factory.mktemp("trained")
    return out, train(tiny_train_config(path, out), target=target)
