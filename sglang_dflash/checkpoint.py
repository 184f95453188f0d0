"""Load and save DFlash drafters in the published safetensors layout.

Weights: ``layers.N.self_attn.{q,k,v,o}_proj.weight``, ``layers.N.self_attn.{q,k}_norm.weight``,
``layers.N.mlp.{gate,up,down}_proj.weight``, ``layers.N.{input,post_attention}_layernorm.weight``,
``norm.weight``, ``hidden_norm.weight`` and ``fc.weight`` of shape [H, K*H].  No embeddings or
lm_head: the target's are shared.  Large drafters are sharded with an HF-style index file.

A DFlash2 drafter adds ``layers.N.{attention,mlp}_conv.base_kernel`` [2, taps, H] and
``layers.N.{attention,mlp}_conv.kernel_projection.weight`` [2*taps*H/conv_group_size, H] per layer,
``candidate_selector.hidden_projection.weight`` [rank, H] and
``candidate_selector.{predecessor,successor}_codebook`` [vocab, rank] (no ``.weight`` suffix).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from .config import DRAFT2_ARCHITECTURE, DRAFTER, DFlashConfig, config_error
from .dflash2 import DFlash2DraftModel
from .draft_model import DFlashDraftModel

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
# Some exporters wrap the drafter in a module called ``model``.
_STRIPPED_PREFIXES = ("model.",)
# Non-parameter buffers some exporters save (RoPE tables, recomputed from the config); SGLang's own
# model loaders skip them too.  Anything else unexpected is still refused.
IGNORED_SUFFIXES = ("rotary_emb.inv_freq", "rotary_emb.cos_cached", "rotary_emb.sin_cached")
# The ``<where>`` of a tensor error.
WEIGHTS = f"{DRAFTER} weights"

logger = logging.getLogger(__name__)


def weight_files(directory: str) -> list[str]:
    """The safetensors files of a drafter directory, in index order when an index exists."""
    index = os.path.join(directory, INDEX_FILE)
    if os.path.exists(index):
        with open(index, encoding="utf-8") as f:
            names = sorted(set(json.load(f)["weight_map"].values()))
        return [os.path.join(directory, n) for n in names]
    files = sorted(n for n in os.listdir(directory) if n.endswith(".safetensors"))
    if not files:
        raise config_error(
            "draft model path", directory, "a directory with *.safetensors weights", where=DRAFTER
        )
    return [os.path.join(directory, n) for n in files]


def published_name(key: str) -> str:
    """A tensor's name in the published layout (some exporters wrap the drafter in ``model.``)."""
    for prefix in _STRIPPED_PREFIXES:
        if key.startswith(prefix):
            return key[len(prefix) :]
    return key


def _read_files(directory: str, read) -> dict[str, Any]:
    """``{published name: read(safe_open handle, key)}`` over all weight files.

    A file safetensors cannot read raises one clear error naming it.
    """
    out: dict[str, Any] = {}
    for file in weight_files(directory):
        try:
            with safe_open(file, framework="pt") as f:
                for key in f.keys():
                    out[published_name(key)] = read(f, key)
        except Exception as e:  # safetensors raises its own error types
            raise config_error(
                "weights file", file, f"a readable safetensors file ({e})", where=DRAFTER
            ) from e
    return out


def read_state_dict(directory: str) -> dict[str, torch.Tensor]:
    """All drafter tensors, with wrapper prefixes removed."""
    return _read_files(directory, lambda f, key: f.get_tensor(key))


def read_shapes(directory: str) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape from the safetensors headers (no tensor data is read)."""
    return _read_files(directory, lambda f, key: tuple(f.get_slice(key).get_shape()))


def expected_shapes(config: DFlashConfig) -> dict[str, tuple[int, ...]]:
    """Name -> shape of every tensor a checkpoint for ``config`` must hold."""
    h, d, i = config.hidden_size, config.head_dim, config.intermediate_size
    q, kv = config.num_attention_heads * d, config.num_key_value_heads * d
    shapes: dict[str, tuple[int, ...]] = {
        "fc.weight": (h, config.num_context_layers * h),
        "hidden_norm.weight": (h,),
        "norm.weight": (h,),
    }
    for n in range(config.num_hidden_layers):
        p = f"layers.{n}."
        shapes.update(
            {
                p + "input_layernorm.weight": (h,),
                p + "post_attention_layernorm.weight": (h,),
                p + "self_attn.q_proj.weight": (q, h),
                p + "self_attn.k_proj.weight": (kv, h),
                p + "self_attn.v_proj.weight": (kv, h),
                p + "self_attn.o_proj.weight": (h, q),
                p + "self_attn.q_norm.weight": (d,),
                p + "self_attn.k_norm.weight": (d,),
                p + "mlp.gate_proj.weight": (i, h),
                p + "mlp.up_proj.weight": (i, h),
                p + "mlp.down_proj.weight": (h, i),
            }
        )
        if config.attention_bias:
            shapes.update(
                {
                    p + "self_attn.q_proj.bias": (q,),
                    p + "self_attn.k_proj.bias": (kv,),
                    p + "self_attn.v_proj.bias": (kv,),
                    p + "self_attn.o_proj.bias": (h,),
                }
            )
        if config.is_dflash2:
            taps, groups = config.conv_kernel_size, config.conv_num_groups
            for conv in ("attention_conv", "mlp_conv"):
                shapes[f"{p}{conv}.base_kernel"] = (2, taps, h)
                shapes[f"{p}{conv}.kernel_projection.weight"] = (2 * taps * groups, h)
    if config.is_dflash2:
        rank = config.selector_rank
        shapes.update(
            {
                "candidate_selector.hidden_projection.weight": (rank, h),
                "candidate_selector.predecessor_codebook": (config.vocab_size, rank),
                "candidate_selector.successor_codebook": (config.vocab_size, rank),
            }
        )
    return shapes


def _shape_source(name: str) -> str:
    """Where a tensor's expected shape comes from, for the error that finds it mis-shaped."""
    if name == "fc.weight":
        return "[hidden_size, K*hidden_size] with K=len(target_layer_ids)"
    if name.endswith("conv.base_kernel"):
        return "[2, dflash_config.conv_kernel_size, hidden_size]"
    if name.endswith("conv.kernel_projection.weight"):
        return "[2*conv_kernel_size*hidden_size/conv_group_size, hidden_size] from dflash_config"
    if name.endswith("_codebook"):
        return "[vocab_size, dflash_config.selector_rank]"
    if name.endswith("hidden_projection.weight"):
        return "[dflash_config.selector_rank, hidden_size]"
    return "config.json"


def drafter_class(config: DFlashConfig) -> type[DFlashDraftModel]:
    """The model class of ``config``'s generation: DFlash or DFlash2."""
    return DFlash2DraftModel if config.is_dflash2 else DFlashDraftModel


def ignored_tensors(names: Iterable[str]) -> list[str]:
    """The names among ``names`` that are known-harmless buffers (:data:`IGNORED_SUFFIXES`), sorted."""
    return sorted(n for n in names if n.endswith(IGNORED_SUFFIXES))


def check_shapes(config: DFlashConfig, shapes: dict[str, tuple[int, ...]]) -> None:
    """Raise one clear error for the first missing, unexpected or mis-shaped tensor (name -> shape).

    Known-harmless buffers (:func:`ignored_tensors`) are skipped, and named in one log line.
    """
    expected = expected_shapes(config)
    ignored = ignored_tensors(shapes)
    if ignored:
        logger.info("DFlash drafter: ignoring non-parameter tensors %s", ignored)
        shapes = {k: v for k, v in shapes.items() if k not in ignored}
    missing = [k for k in expected if k not in shapes]
    if missing:
        raise config_error(
            "missing tensors",
            missing[:4],
            f"none ({len(missing)} of the {len(expected)} "
            "drafter tensors of the published layout are missing)",
            where=WEIGHTS,
        )
    unexpected = sorted(k for k in shapes if k not in expected)
    if unexpected:
        dflash2_weights = any(k.startswith("candidate_selector.") or "_conv." in k for k in unexpected)
        hint = (
            f'; these are DFlash2 tensors: config.json must say architectures ["{DRAFT2_ARCHITECTURE}"] '
            "with the dflash_config selector and convolution fields"
            if dflash2_weights and not config.is_dflash2
            else ""
        )
        raise config_error(
            "unexpected tensors",
            unexpected[:4],
            f"only drafter tensors (no embed_tokens/lm_head: the target's are shared){hint}",
            where=WEIGHTS,
        )
    for name, shape in expected.items():
        got = tuple(shapes[name])
        if got != shape:
            raise config_error(
                f"{name} shape", list(got), f"{list(shape)} from {_shape_source(name)}", where=WEIGHTS
            )


def check_state_dict(config: DFlashConfig, state: dict[str, Any]) -> None:
    """:func:`check_shapes` for loaded tensors."""
    check_shapes(config, {name: tuple(tensor.shape) for name, tensor in state.items()})


def load_drafter(
    directory: str,
    target_config: Any | None = None,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str = "cpu",
) -> DFlashDraftModel:
    """Read, validate (against ``target_config`` when given) and build a drafter."""
    config = DFlashConfig.from_pretrained(directory)
    if target_config is not None:
        config.validate_against_target(target_config)
    state = read_state_dict(directory)
    check_state_dict(config, state)
    for name in ignored_tensors(state):
        del state[name]
    model = drafter_class(config)(config)
    model.load_state_dict(state, strict=True)
    return model.to(device=device, dtype=dtype).eval()


def _shards(state: dict[str, torch.Tensor], max_shard_bytes: int) -> list[dict[str, torch.Tensor]]:
    shards: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for name, tensor in state.items():
        nbytes = tensor.numel() * tensor.element_size()
        if shards[-1] and size + nbytes > max_shard_bytes:
            shards.append({})
            size = 0
        shards[-1][name] = tensor
        size += nbytes
    return shards


def save_drafter(
    model: DFlashDraftModel,
    directory: str,
    dtype: torch.dtype | None = None,
    max_shard_bytes: int = 2**31,
    extra_files: Iterable[tuple[str, str]] = (),
) -> list[str]:
    """Write config.json and safetensors (sharded past ``max_shard_bytes``); returns written files."""
    os.makedirs(directory, exist_ok=True)
    state = {k: v.detach().to(dtype or v.dtype).contiguous().cpu() for k, v in model.state_dict().items()}
    check_state_dict(model.config, state)
    # config.json carries the dtype the weights are saved in (hosts resolve "auto" from it).
    saved_dtype = str(state["fc.weight"].dtype).removeprefix("torch.")
    written = [model.config.replace(dtype=saved_dtype).save(directory)]
    for stale in os.listdir(directory):
        if stale.endswith(".safetensors") or stale == INDEX_FILE:
            os.remove(os.path.join(directory, stale))
    shards = _shards(state, max_shard_bytes)
    metadata = {"format": "pt"}
    if len(shards) == 1:
        path = os.path.join(directory, SINGLE_FILE)
        save_file(shards[0], path, metadata=metadata)
        written.append(path)
    else:
        weight_map = {}
        for n, shard in enumerate(shards, start=1):
            name = f"model-{n:05d}-of-{len(shards):05d}.safetensors"
            save_file(shard, os.path.join(directory, name), metadata=metadata)
            weight_map.update({k: name for k in shard})
            written.append(os.path.join(directory, name))
        total = sum(t.numel() * t.element_size() for t in state.values())
        index = os.path.join(directory, INDEX_FILE)
        with open(index, "w", encoding="utf-8") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
        written.append(index)
    for name, text in extra_files:
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        written.append(path)
    return written


def average_drafters(directories: Sequence[str], out: str, max_shard_bytes: int = 2**31) -> list[str]:
    """Write the element-wise mean of drafters of one config to ``out`` (a "model soup").

    Runs warm-started from one drafter on the same data with different rates or lengths end in
    one basin; their mean can accept more than any of them (drafters/smollm2-135m-instruct/RUNS.md,
    "Seventy-first run").  The mean is taken in float32 and saved in the first drafter's dtype;
    configs must agree in everything but the saved dtype.  Returns the files written, as
    :func:`save_drafter` does.
    """
    if len(directories) < 2:
        raise config_error("drafters", list(directories), "at least two drafter directories to average")
    config = DFlashConfig.from_pretrained(directories[0])
    for directory in directories[1:]:
        other = DFlashConfig.from_pretrained(directory)
        if other.replace(dtype=config.dtype) != config:
            raise config_error(
                "config.json",
                os.path.join(directory, "config.json"),
                f"the same drafter config as {os.path.join(directories[0], 'config.json')} (only the "
                "saved dtype may differ)",
                where=DRAFTER,
            )
    saved_dtype = read_state_dict(directories[0])["fc.weight"].dtype
    models = [load_drafter(directory) for directory in directories]  # validated, float32
    states = [model.state_dict() for model in models]  # views of the parameters
    mean = models[0]
    with torch.no_grad():
        for name, tensor in states[0].items():
            if tensor.is_floating_point():  # integer buffers, if any, are the config's and equal
                tensor.copy_(torch.stack([state[name] for state in states]).mean(0))
    return save_drafter(mean, out, dtype=saved_dtype, max_shard_bytes=max_shard_bytes)
