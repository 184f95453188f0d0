"""Startup and per-request checks for our DFLASH worker: clear errors before anything is loaded.

Server start (``check_server_args``, at ``ServerArgs`` time, before any GPU memory): the drafter
path exists and holds a readable DFlash config and weights of the right shapes, the drafter fits
the target (hidden size, layer count, layer ids, vocab, mask token), the block size agrees with
``--speculative-num-draft-tokens``; target model runner start (``capture_layers``): the target
family can capture hidden states for DFLASH.  Each error names the value and what was expected.
"""

from __future__ import annotations

from typing import Optional

from ..checkpoint import check_shapes, read_shapes
from ..config import DFlashConfig, config_error


def load_target_config(server_args):
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(server_args.model_path, trust_remote_code=server_args.trust_remote_code)
    except Exception as e:
        raise config_error("--model-path", server_args.model_path, f"a model whose config.json can be read ({e})") from e


def check_server_args(server_args) -> DFlashConfig:
    """Validate the drafter against the target; pin ``speculative_num_draft_tokens`` to its block size."""
    path = server_args.speculative_draft_model_path
    if not path:
        raise config_error("--speculative-draft-model-path", path, "the directory of a DFlash drafter")
    config = DFlashConfig.from_pretrained(path)
    config.validate_against_target(load_target_config(server_args))
    check_shapes(config, read_shapes(path))
    sliding = [i for i in range(config.num_hidden_layers) if config.layer_is_sliding(i)]
    if sliding:
        raise config_error("layer_types", list(config.layer_types),
                           "full_attention layers only in the SGLang worker (sliding draft layers run in the reference)")
    if getattr(server_args, "tp_size", 1) != 1:
        raise config_error("--tp-size", server_args.tp_size, "1 (sglang-dflash serves tensor-parallel size 1 for now)")
    for flag, value in (("--speculative-dflash-block-size", server_args.speculative_dflash_block_size),
                        ("--speculative-num-draft-tokens", server_args.speculative_num_draft_tokens)):
        if value is not None and int(value) != config.block_size:
            raise config_error(flag, value, f"the drafter's block_size={config.block_size} (or leave it unset)")
    server_args.speculative_num_draft_tokens = config.block_size
    return config


def capture_layers(server_args, model_config) -> tuple[list[int], int]:
    """Target layers to capture and the draft layer count; the target family must support capture."""
    from sglang.srt.models.registry import ModelRegistry

    config = DFlashConfig.from_pretrained(server_args.speculative_draft_model_path)
    config.validate_against_target(model_config.hf_text_config)
    archs = list(getattr(model_config.hf_config, "architectures", None) or [])
    model_cls, arch = ModelRegistry.resolve_model_cls(archs)
    if not hasattr(model_cls, "set_dflash_layers_to_capture"):
        raise config_error("target architecture", arch,
                           "a family whose SGLang model can capture hidden states for DFLASH "
                           "(e.g. LlamaForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM)")
    return list(config.target_layer_ids), config.num_hidden_layers  # ascending: checked by the config


def unsupported_request_option(req, enable_overlap: bool) -> Optional[str]:
    """An abort message for request options our worker does not implement, else None."""
    if getattr(req, "return_logprob", False):
        return "sglang-dflash: return_logprob is not supported with DFLASH speculative decoding yet."
    params = getattr(req, "sampling_params", None)
    if params is not None and any(getattr(params, k, None) is not None for k in ("json_schema", "regex", "ebnf", "structural_tag")):
        return "sglang-dflash: grammar-constrained decoding is not supported with DFLASH speculative decoding yet."
    if getattr(req, "return_hidden_states", False):
        return "sglang-dflash: return_hidden_states is not supported with DFLASH speculative decoding yet."
    return None
