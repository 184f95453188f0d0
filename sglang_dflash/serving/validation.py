"""Startup and per-request checks for our DFLASH worker: clear errors before anything is loaded.

Server start (``check_server_args``, at ``ServerArgs`` time, before any GPU memory): the drafter
path (a local directory, or a Hugging Face repo id resolved as SGLang resolves model ids) holds a
readable DFlash config and weights of the right shapes, the drafter fits the target (hidden size,
layer count, layer ids, vocab, mask token), the target keeps no recurrent (mamba / linear-attention)
state, the block size agrees with ``--speculative-num-draft-tokens``, and no flag the worker cannot
honour is set (``check_flags``: two-batch overlap, a grammar backend other than xgrammar, a draft
window, prefill/decode disaggregation, deterministic inference with the adaptive verify width);
target model runner start (``capture_layers``): the target family can capture hidden states for
DFLASH and keeps no recurrent state.  Per request (``unsupported_request_option``): options the
worker does not implement exactly are refused.  Each error reads ``<where>: <what> is <value>;
expected <expectation>`` and names the flag the user typed, the file or the request field.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from ..checkpoint import check_shapes, read_shapes
from ..config import CONFIG_FILE, SERVER, DFlashConfig, config_error
from ..token_map import TOKEN_MAP_FLAG, read_token_map
from .tensor_parallel import check_tensor_parallel

if TYPE_CHECKING:
    from sglang.srt.configs.model_config import ModelConfig
    from sglang.srt.managers.schedule_batch import Req
    from sglang.srt.server_args import ServerArgs

logger = logging.getLogger(__name__)

DRAFT_PATH_FLAG = "--speculative-draft-model-path"
# The ``<where>`` of an error about the target's config.json rather than a flag's value.
MODEL_PATH_CONFIG = f"--model-path {CONFIG_FILE}"
# What a drafter repository needs locally: config.json (and an index) plus the safetensors weights.
DRAFTER_FILE_PATTERNS = ["*.json", "*.safetensors"]
_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
# ``--grammar-backend`` values the worker serves: unset (SGLang resolves it to xgrammar), xgrammar,
# whose matchers fill packed token bitmasks and roll back, and none (SGLang refuses grammar requests).
GRAMMAR_BACKENDS = (None, "xgrammar", "none")
# ``--disaggregation-mode`` of a server that does both prefill and decode.
NO_DISAGGREGATION = "null"
# ``layer_types`` entries of layers that keep recurrent state rather than per-token KV.
RECURRENT_LAYER_MARKERS = ("linear", "mamba", "conv", "recurrent", "ssm", "delta", "rwkv", "lightning")


def resolve_drafter_path(path: str | None, revision: str | None = None) -> str:
    """A local directory for ``--speculative-draft-model-path``.

    An existing path is returned as is; otherwise a Hugging Face repo id (``org/name``) is resolved
    the way SGLang resolves model ids: from the local HF cache, downloading when online
    (``huggingface_hub.snapshot_download``, which honours ``HF_HUB_OFFLINE`` and ``HF_HOME``); with
    ``SGLANG_USE_MODELSCOPE`` set, a ModelScope id, from ModelScope's cache or hub.
    """
    if not path:
        raise config_error(DRAFT_PATH_FLAG, path, "the directory or Hugging Face repo id of a DFlash drafter")
    if os.path.exists(path):
        return path
    if not _REPO_ID.fullmatch(path):
        raise config_error(
            DRAFT_PATH_FLAG, path, "an existing directory or a Hugging Face repo id (org/name)"
        )
    fetch, where = _hf_snapshot, "a Hugging Face repo id found in the HF cache"
    if _uses_modelscope():
        fetch = _modelscope_snapshot
        where = "a ModelScope model id (SGLANG_USE_MODELSCOPE is set) found in the ModelScope cache"
    try:
        local = fetch(path, revision)
    except Exception as e:  # the hubs raise many error types (offline, unknown repo, network)
        raise config_error(
            DRAFT_PATH_FLAG,
            path,
            f"an existing directory or {where} or downloadable ({type(e).__name__}: {e})",
        ) from e
    logger.info("DFlash drafter %s resolved to %s", path, local)
    return local


def _hf_snapshot(repo_id: str, revision: str | None) -> str:
    """The drafter files of a Hugging Face repo: the local HF cache, else a download."""
    from huggingface_hub import snapshot_download

    return snapshot_download(repo_id=repo_id, revision=revision, allow_patterns=DRAFTER_FILE_PATTERNS)


def _uses_modelscope() -> bool:
    """``SGLANG_USE_MODELSCOPE``, read as SGLang reads it: model ids are ModelScope ids."""
    from sglang.srt.environ import envs

    return bool(envs.SGLANG_USE_MODELSCOPE.get())


def _modelscope_snapshot(model_id: str, revision: str | None) -> str:
    """A ModelScope id as SGLang resolves it (``ServerArgs._handle_modelscope_paths``): the local
    ModelScope cache first, else a download. Serving never needs it (the host resolves the id before
    our checks run); ``sglang-dflash doctor`` does."""
    from modelscope.hub.snapshot_download import snapshot_download
    from modelscope.utils.file_utils import get_model_cache_root

    cached = os.path.join(get_model_cache_root(), model_id)
    return cached if os.path.exists(cached) else snapshot_download(model_id, revision=revision or "main")


def recurrent_state_kind(hf_config: Any, linear_attn_result: Any = None) -> str | None:
    """What recurrent state a target keeps (mamba, gated-delta-net, linear attention), or None.

    Uses SGLang's own hybrid-model predicate (``hybrid_arch.mambaish_config``) and, for configs it
    does not know, ``layer_types`` entries naming a recurrent layer (``linear_attention``, ``mamba``...).
    """
    from sglang.srt.configs.hybrid_arch import mambaish_config

    text = hf_config.get_text_config() if hasattr(hf_config, "get_text_config") else hf_config
    layer_types = getattr(text, "layer_types", None) or []
    kinds = sorted({t for t in layer_types if any(m in str(t).lower() for m in RECURRENT_LAYER_MARKERS)})
    if kinds:
        return f"layer_types {kinds}"
    view = SimpleNamespace(
        hf_config=hf_config, is_draft_model=False, linear_attn_registry_result=linear_attn_result
    )
    found = mambaish_config(view)
    return None if found is None else f"{type(found).__name__} (mamba / linear-attention state)"


def check_attention_only_target(hf_config: Any, linear_attn_result: Any = None) -> None:
    """Reject targets with recurrent state: the worker does not roll it back after a partial accept."""
    kind = recurrent_state_kind(hf_config, linear_attn_result)
    if kind is not None:
        archs = list(getattr(hf_config, "architectures", None) or [])
        arch = archs[0] if archs else type(hf_config).__name__
        raise config_error(
            "--model-path",
            f"{arch} with {kind}",
            "an attention-only target (hybrid mamba / linear-attention targets are not "
            "supported: their recurrent state is not committed after a partial acceptance)",
        )


def load_target_config(server_args: ServerArgs) -> Any:
    """The target's config as SGLang parses it (its own config classes for hybrid families)."""
    from sglang.srt.utils.hf_transformers_utils import get_config

    try:
        return get_config(
            server_args.model_path,
            trust_remote_code=server_args.trust_remote_code,
            revision=getattr(server_args, "revision", None),
        )
    except Exception as e:
        raise config_error(
            "--model-path", server_args.model_path, f"a model whose {CONFIG_FILE} can be read ({e})"
        ) from e


def check_server_args(server_args: ServerArgs) -> DFlashConfig:
    """Validate the drafter against the target; pin ``speculative_num_draft_tokens`` to its block size.

    A hub id in ``--speculative-draft-model-path`` is replaced by the local snapshot it resolves to,
    so the host loads exactly the files validated here.
    """
    check_flags(server_args)
    path = resolve_drafter_path(
        server_args.speculative_draft_model_path,
        getattr(server_args, "speculative_draft_model_revision", None),
    )
    server_args.speculative_draft_model_path = path
    config = DFlashConfig.from_pretrained(path)
    target = load_target_config(server_args)
    config.validate_against_target(target)
    from sglang.srt.configs.linear_attn_model_registry import get_linear_attn_config

    check_attention_only_target(target, get_linear_attn_config(target))
    check_shapes(config, read_shapes(path))
    check_draft_attention(config, server_args, target)
    check_tensor_parallel(config, getattr(server_args, "tp_size", 1))
    check_token_map(server_args, config)
    for flag, value in (
        ("--speculative-dflash-block-size", server_args.speculative_dflash_block_size),
        ("--speculative-num-draft-tokens", server_args.speculative_num_draft_tokens),
    ):
        check_block_size_flag(flag, value, config)
    server_args.speculative_num_draft_tokens = config.block_size
    take_adaptive_settings(server_args)
    return config


def check_flags(server_args: ServerArgs) -> None:
    """Refuse server flags our worker cannot honour (flags only: nothing is fetched or read yet).

    Runs before :func:`take_adaptive_settings`, which clears the host's ``speculative_adaptive``.
    """
    if getattr(server_args, "enable_dp_attention", False):
        raise config_error(
            "--enable-dp-attention",
            True,
            "False (sglang-dflash shards its drafter over the whole TP group; data-parallel attention "
            "splits that group's attention, which the drafter does not follow)",
        )
    if getattr(server_args, "enable_two_batch_overlap", False):
        raise config_error(
            "--enable-two-batch-overlap",
            True,
            "False (sglang-dflash does not split its verify blocks into two micro-batches)",
        )
    backend = getattr(server_args, "grammar_backend", None)
    if backend not in GRAMMAR_BACKENDS:
        raise config_error(
            "--grammar-backend",
            backend,
            "'xgrammar' (the default) or 'none' (sglang-dflash masks each verify block with xgrammar's "
            "token bitmasks and rolls the grammar back after the drafts)",
        )
    window = getattr(server_args, "speculative_draft_window_size", None)
    if window is not None:
        raise config_error(
            "--speculative-draft-window-size", window, "unset (DFLASH drafts attend over the whole context)"
        )
    mode = getattr(server_args, "disaggregation_mode", None) or NO_DISAGGREGATION
    if mode != NO_DISAGGREGATION:
        raise config_error(
            "--disaggregation-mode",
            mode,
            f"{NO_DISAGGREGATION!r} (the default; prefill/decode disaggregation does not hand "
            "sglang-dflash's decode side a first draft block)",
        )
    if getattr(server_args, "speculative_adaptive", False) and getattr(
        server_args, "enable_deterministic_inference", False
    ):
        raise config_error(
            "--speculative-adaptive",
            True,
            "off under --enable-deterministic-inference (the verify width follows the batch and the "
            "measured step times, so a seeded request's tokens would depend on them)",
        )


def check_token_map(server_args: ServerArgs, config: DFlashConfig) -> None:
    """``--speculative-token-map`` (a hot draft vocabulary): readable, in the target's vocabulary,
    and only where our drafter can use it (first generation, one tensor-parallel rank)."""
    path = getattr(server_args, "speculative_token_map", None)
    if path is None:
        return
    if config.is_dflash2:
        raise config_error(
            TOKEN_MAP_FLAG,
            path,
            "unset for a DFlash2 drafter (its candidate selector ranks drafts over the whole vocabulary)",
        )
    tp_size = getattr(server_args, "tp_size", 1)
    if tp_size > 1:
        raise config_error(
            TOKEN_MAP_FLAG,
            path,
            f"unset with --tp-size {tp_size} (the hot lm_head rows are taken from one rank's whole "
            "lm_head; tensor-parallel ranks hold a vocabulary shard each)",
        )
    read_token_map(path, config.vocab_size)


def take_adaptive_settings(server_args: ServerArgs) -> None:
    """``--speculative-adaptive`` for DFLASH: our verify-width policy, not the host's EAGLE one.

    The settings (defaults, or ``--speculative-adaptive-config``) are checked here and kept on the
    ServerArgs for the worker; the host's own flag is cleared, since the host would disable it for
    DFLASH with a warning and size nothing differently (every width fits the block's KV reserve).
    """
    if not getattr(server_args, "speculative_adaptive", False):
        return
    from ..adaptive import ADAPTIVE_ATTR, AdaptiveConfig

    config = AdaptiveConfig.from_flag(getattr(server_args, "speculative_adaptive_config", None))
    device = getattr(server_args, "device", None) or "cuda"
    if device != "cpu":
        raise config_error(
            "--speculative-adaptive",
            True,
            "--device cpu for now (on GPUs each verify width needs its own attention backend and "
            "CUDA graphs, not built yet); leave it off to verify whole blocks",
        )
    object.__setattr__(server_args, ADAPTIVE_ATTR, dataclasses.asdict(config))
    server_args.speculative_adaptive = False


def admit_prefills_undelayed(server_args: ServerArgs) -> None:
    """Turn the host's min-free-slots delay off for our DFLASH, unless ``--min-free-slots-delay`` is set.

    SGLang 0.5.16 holds new prefills of every DFLASH-family server until
    ``min(4, max(2, (max_running_requests + 5) // 6))`` running slots are free, because its built-in
    drafter pays a draft prefill per admission.  Ours injects a new request's context features inside
    the target's prefill, so an admission costs one prefill pass, and the delay only cost latency:
    with as many clients as ``--max-running-requests``, the one or two requests that arrived after
    the rest were held until three others had finished, waiting a whole generation for their first
    token (11 groups of 16 requests in our CPU benches, never in plain decoding).  A value <= 1 is the
    host's "off"; a user's own value stays.
    """
    if getattr(server_args, "min_free_slots_delay", None) is None:
        server_args.min_free_slots_delay = 1


def check_draft_attention(config: DFlashConfig, server_args: ServerArgs, target: Any) -> None:
    """Causal and sliding-window draft layers run on ``--device cpu`` (our block attention masks
    both); on GPUs the host's backends run the block bidirectionally with no window, so there a
    causal layer is refused, and a window only where it hides nothing: one at least the context
    length (every key of a request is then less than a window away)."""
    from .cpu_backend import is_cpu_device

    if is_cpu_device(server_args):
        return
    layers = range(config.num_hidden_layers)
    causal = [i for i in layers if config.layer_is_causal(i)]
    if causal:
        raise config_error(
            f"draft layers {causal}",
            "causal",
            "bidirectional block attention on GPUs (causal draft layers run with --device cpu)",
        )
    if any(config.layer_is_sliding(i) for i in layers):
        context_len = server_args.context_length or getattr(target, "max_position_embeddings", None)
        if context_len is None or context_len > config.sliding_window:
            raise config_error(
                "--context-length",
                context_len,
                f"at most the drafter's sliding_window={config.sliding_window} on GPUs, whose draft "
                "attention has no window (or serve with --device cpu)",
            )


def check_block_size_flag(flag: str, value: int | None, config: DFlashConfig) -> None:
    """A block-size flag the user set must equal the drafter's trained block size."""
    if value is not None and int(value) != config.block_size:
        raise config_error(flag, value, f"the drafter's block_size={config.block_size} (or leave it unset)")


def capture_layers(server_args: ServerArgs, model_config: ModelConfig) -> tuple[list[int], int]:
    """Target layers to capture and the draft layer count; the target family must support capture."""
    from sglang.srt.models.registry import ModelRegistry

    config = DFlashConfig.from_pretrained(server_args.speculative_draft_model_path)
    config.validate_against_target(model_config.hf_text_config)
    archs = list(getattr(model_config.hf_config, "architectures", None) or [])
    model_cls, arch = ModelRegistry.resolve_model_cls(archs)
    if not hasattr(model_cls, "set_dflash_layers_to_capture"):
        raise config_error(
            "architectures",
            arch,
            "a family whose SGLang model can capture hidden states for DFLASH "
            "(e.g. LlamaForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM)",
            where=MODEL_PATH_CONFIG,
        )
    linear_attn_result = getattr(model_config, "linear_attn_registry_result", None)
    check_attention_only_target(model_config.hf_config, linear_attn_result)
    return list(config.target_layer_ids), config.num_hidden_layers  # ascending: checked by the config


# How much of a long request value (a schema, a processor) an abort message quotes.
QUOTED_CHARS = 80


def _refusal(what: str, value: Any, expected: str) -> str:
    """An abort message for one request field: ``sglang-dflash: <what> is <value>; expected <expected>``."""
    return f"{SERVER}: {what} is {value}; expected {expected}"


def unsupported_request_option(req: Req, enable_overlap: bool) -> str | None:
    """An abort message for request options our worker does not implement exactly, else None."""
    prompt = getattr(req, "origin_input_ids", None)
    if prompt is not None and len(prompt) == 0:
        return _refusal(
            "the prompt (text / input_ids)",
            "empty (0 tokens)",
            "at least one token (a speculative step needs a last prompt token to draft from)",
        )
    processor = getattr(req, "custom_logit_processor", None)
    if processor is not None:
        return _refusal(
            "custom_logit_processor",
            repr(str(processor)[:QUOTED_CHARS]),
            "None (custom logit processors are not applied under DFLASH speculative decoding yet)",
        )
    return None
