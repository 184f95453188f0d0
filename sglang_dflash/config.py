"""DFlash drafter configuration: read the published config.json, validate it, write it back.

The published format (z-lab ``*-DFlash*`` checkpoints) is a Qwen3-style config with
``architectures: ["DFlashDraftModel"]``, ``block_size`` and ``num_target_layers`` at the top level
(older files keep them inside ``dflash_config``), and ``dflash_config: {target_layer_ids,
mask_token_id[, mask_token]}``.  Every violation raises :class:`DFlashConfigError` naming the
field, the value and what was expected, before any weights are touched.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

DRAFT_ARCHITECTURE = "DFlashDraftModel"
CONFIG_FILE = "config.json"
SUPPORTED_ROPE_TYPES = ("default", "linear", "llama3")
SUPPORTED_LAYER_TYPES = ("full_attention", "sliding_attention")
# Weight dtypes a drafter may be saved in (config.json ``torch_dtype`` / ``dtype``).
SUPPORTED_DTYPES = ("float32", "float16", "bfloat16")

# Keys this module owns; anything else in config.json is carried through ``extra`` untouched.
_KNOWN_KEYS = {
    "architectures", "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "num_key_value_heads", "head_dim", "intermediate_size", "vocab_size", "rms_norm_eps",
    "rope_theta", "rope_scaling", "rope_parameters", "max_position_embeddings", "attention_bias",
    "hidden_act", "layer_types", "sliding_window", "use_sliding_window", "block_size",
    "num_target_layers", "dflash_config", "is_causal", "torch_dtype", "dtype", "tie_word_embeddings",
}


class DFlashConfigError(ValueError):
    """A drafter config (or its weights) does not fit the DFlash format or the target."""


def config_error(field_name: str, value: Any, expected: str) -> DFlashConfigError:
    """One clear error: which field, which value, what was expected."""
    return DFlashConfigError(f"DFlash drafter: {field_name}={value!r} is invalid; expected {expected}")


def default_target_layer_ids(num_target_layers: int, num_draft_layers: int) -> list[int]:
    """Target layers whose hidden states feed the drafter, spread uniformly over 1..L-3.

    Matches the paper's code: one context layer per draft layer, from shallow (layer 1) to deep
    (layer L-3); a single-layer drafter reads the middle layer.
    """
    if num_target_layers < 4:
        raise config_error("num_target_layers", num_target_layers,
                           "at least 4 to derive default target_layer_ids; set dflash_config.target_layer_ids")
    if num_draft_layers == 1:
        return [num_target_layers // 2]
    start, end = 1, num_target_layers - 3
    return [int(round(start + i * (end - start) / (num_draft_layers - 1))) for i in range(num_draft_layers)]


def _require_int(d: Mapping[str, Any], key: str, minimum: int, label: str | None = None) -> int:
    label = label or key
    if key not in d:
        raise config_error(label, None, f"an integer >= {minimum} (the field is missing)")
    value = d[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise config_error(label, value, f"an integer >= {minimum}")
    return value


def _parse_dtype(d: Mapping[str, Any]) -> str | None:
    """The weights' dtype from ``dtype`` (transformers 5) or ``torch_dtype``; None when neither is set."""
    key = "dtype" if d.get("dtype") is not None else "torch_dtype"
    value = d.get(key)
    if value is None:
        return None
    name = str(value).removeprefix("torch.")
    if name not in SUPPORTED_DTYPES:
        raise config_error(key, value, f"one of {SUPPORTED_DTYPES}")
    return name


def _parse_rope(d: Mapping[str, Any]) -> dict[str, Any]:
    """Normalise legacy (rope_theta + rope_scaling) and transformers-5 (rope_parameters) forms."""
    params = d.get("rope_parameters")
    if params is None:
        params = dict(d.get("rope_scaling") or {})
        params.setdefault("rope_theta", d.get("rope_theta", 10000.0))
    params = dict(params)
    rope_type = params.pop("rope_type", params.pop("type", "default"))
    if rope_type not in SUPPORTED_ROPE_TYPES:
        raise config_error("rope_parameters.rope_type", rope_type, f"one of {SUPPORTED_ROPE_TYPES}")
    theta = params.get("rope_theta", d.get("rope_theta", 10000.0))
    if not isinstance(theta, (int, float)) or theta <= 0:
        raise config_error("rope_theta", theta, "a positive number")
    params["rope_theta"] = float(theta)
    if rope_type != "default" and "factor" not in params:
        raise config_error(f"rope_parameters.factor ({rope_type} RoPE)", None, "a scaling factor")
    return {"rope_type": rope_type, **params}


@dataclass(frozen=True)
class DFlashConfig:
    """Everything the drafter needs, parsed and self-consistent."""

    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    block_size: int
    num_target_layers: int
    target_layer_ids: tuple[int, ...]
    mask_token_id: int
    rms_norm_eps: float = 1e-6
    rope_parameters: dict[str, Any] = field(default_factory=lambda: {"rope_type": "default", "rope_theta": 1e6})
    max_position_embeddings: int = 40960
    attention_bias: bool = False
    hidden_act: str = "silu"
    layer_types: tuple[str, ...] = ()
    sliding_window: int | None = None
    is_causal: bool | None = None
    mask_token: str | None = None
    dtype: str | None = None  # the dtype the weights are saved in ("bfloat16", ...); None if unknown
    extra: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------------ derived
    @property
    def num_context_layers(self) -> int:
        """How many target layers are concatenated into one context feature (K)."""
        return len(self.target_layer_ids)

    def layer_is_sliding(self, layer_idx: int) -> bool:
        return self.layer_types[layer_idx] == "sliding_attention"

    def layer_is_causal(self, layer_idx: int) -> bool:
        """Block attention is bidirectional, except in sliding layers (as the published code does)."""
        if self.is_causal is not None:
            return self.is_causal
        return self.layer_is_sliding(layer_idx)

    # ------------------------------------------------------------------ reading
    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "DFlashConfig":
        """Parse a config.json dictionary; raise :class:`DFlashConfigError` on the first bad field."""
        if not isinstance(d, Mapping):
            raise config_error(CONFIG_FILE, type(d).__name__, "a JSON object")
        archs = d.get("architectures")
        if not isinstance(archs, list) or DRAFT_ARCHITECTURE not in archs:
            raise config_error("architectures", archs, f'a list containing "{DRAFT_ARCHITECTURE}"')
        dflash = d.get("dflash_config") or {}
        if not isinstance(dflash, Mapping):
            raise config_error("dflash_config", dflash, "a JSON object")
        merged = {**dflash, **{k: v for k, v in d.items() if k != "dflash_config"}}

        hidden_size = _require_int(d, "hidden_size", 1)
        num_layers = _require_int(d, "num_hidden_layers", 1)
        num_heads = _require_int(d, "num_attention_heads", 1)
        num_kv_heads = _require_int({"num_key_value_heads": num_heads, **d}, "num_key_value_heads", 1)
        if num_heads % num_kv_heads:
            raise config_error("num_key_value_heads", num_kv_heads, f"a divisor of num_attention_heads={num_heads}")
        head_dim = d.get("head_dim") or hidden_size // num_heads
        _require_int({"head_dim": head_dim}, "head_dim", 2)
        if head_dim % 2:
            raise config_error("head_dim", head_dim, "an even number (RoPE rotates pairs)")
        intermediate = _require_int(d, "intermediate_size", 1)
        vocab_size = _require_int(d, "vocab_size", 1)
        block_size = _require_int(merged, "block_size", 2)
        num_target_layers = _require_int(merged, "num_target_layers", 1)

        ids = merged.get("target_layer_ids")
        if ids is None:
            ids = default_target_layer_ids(num_target_layers, num_layers)
        if (not isinstance(ids, (list, tuple)) or not ids
                or any(isinstance(i, bool) or not isinstance(i, int) for i in ids)):
            raise config_error("dflash_config.target_layer_ids", ids, "a non-empty list of integers")
        if list(ids) != sorted(set(ids)):
            # SGLang captures target layers in ascending order: fc's input columns follow that order.
            raise config_error("dflash_config.target_layer_ids", list(ids), "distinct layer ids in ascending order")
        # HF hidden_states[id+1] is the output of layer `id`; the last layer's output is only seen
        # after the final norm, and SGLang captures the input of layer id+1, so id <= L-2.
        bad = [i for i in ids if not 0 <= i <= num_target_layers - 2]
        if bad:
            raise config_error("dflash_config.target_layer_ids", list(ids),
                               f"layer ids in [0, {num_target_layers - 2}] (num_target_layers={num_target_layers})")

        mask_token_id = merged.get("mask_token_id")
        if isinstance(mask_token_id, bool) or not isinstance(mask_token_id, int) or not 0 <= mask_token_id < vocab_size:
            raise config_error("dflash_config.mask_token_id", mask_token_id, f"an integer in [0, {vocab_size})")

        hidden_act = d.get("hidden_act", "silu")
        if hidden_act != "silu":
            raise config_error("hidden_act", hidden_act, '"silu" (gated SiLU MLP)')
        layer_types = tuple(d.get("layer_types") or ["full_attention"] * num_layers)
        if len(layer_types) != num_layers or any(t not in SUPPORTED_LAYER_TYPES for t in layer_types):
            raise config_error("layer_types", list(layer_types),
                               f"{num_layers} entries from {SUPPORTED_LAYER_TYPES}")
        sliding_window = d.get("sliding_window")
        if "sliding_attention" in layer_types:
            _require_int(d, "sliding_window", 1)
        eps = d.get("rms_norm_eps", 1e-6)
        if not isinstance(eps, (int, float)) or not (0 < eps < 1) or math.isnan(eps):
            raise config_error("rms_norm_eps", eps, "a small positive number")

        return cls(
            hidden_size=hidden_size,
            num_hidden_layers=num_layers,
            num_attention_heads=num_heads,
            num_key_value_heads=num_kv_heads,
            head_dim=int(head_dim),
            intermediate_size=intermediate,
            vocab_size=vocab_size,
            block_size=block_size,
            num_target_layers=num_target_layers,
            target_layer_ids=tuple(ids),
            mask_token_id=mask_token_id,
            rms_norm_eps=float(eps),
            rope_parameters=_parse_rope(d),
            max_position_embeddings=int(d.get("max_position_embeddings", 40960)),
            attention_bias=bool(d.get("attention_bias", False)),
            hidden_act=hidden_act,
            layer_types=layer_types,
            sliding_window=sliding_window,
            is_causal=d.get("is_causal"),
            mask_token=dflash.get("mask_token"),
            dtype=_parse_dtype(d),
            extra={k: v for k, v in d.items() if k not in _KNOWN_KEYS},
        )

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike) -> "DFlashConfig":
        """Read ``config.json`` from a drafter directory (or the file itself)."""
        path = os.fspath(path)
        file = os.path.join(path, CONFIG_FILE) if os.path.isdir(path) else path
        if not os.path.exists(file):
            raise config_error("draft model path", path, f"a directory containing {CONFIG_FILE}")
        try:
            with open(file, encoding="utf-8") as f:
                raw = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise config_error(CONFIG_FILE, file, f"a readable JSON file ({e})") from e
        return cls.from_dict(raw)

    # ------------------------------------------------------------------ writing
    def to_dict(self) -> dict[str, Any]:
        """The published layout: Qwen3 fields, top-level block_size/num_target_layers, dflash_config."""
        rope = dict(self.rope_parameters)
        legacy_scaling = None if rope["rope_type"] == "default" else {k: v for k, v in rope.items() if k != "rope_theta"}
        dflash_config: dict[str, Any] = {
            "target_layer_ids": list(self.target_layer_ids),
            "mask_token_id": self.mask_token_id,
        }
        if self.mask_token is not None:
            dflash_config["mask_token"] = self.mask_token
        out: dict[str, Any] = {
            "architectures": [DRAFT_ARCHITECTURE],
            "model_type": "qwen3",
            "hidden_size": self.hidden_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "intermediate_size": self.intermediate_size,
            "vocab_size": self.vocab_size,
            "rms_norm_eps": self.rms_norm_eps,
            "rope_theta": rope["rope_theta"],
            "rope_scaling": legacy_scaling,
            "max_position_embeddings": self.max_position_embeddings,
            "attention_bias": self.attention_bias,
            "hidden_act": self.hidden_act,
            "layer_types": list(self.layer_types),
            "sliding_window": self.sliding_window,
            "use_sliding_window": "sliding_attention" in self.layer_types,
            "block_size": self.block_size,
            "num_target_layers": self.num_target_layers,
            "dflash_config": dflash_config,
            "tie_word_embeddings": False,
        }
        if self.is_causal is not None:
            out["is_causal"] = self.is_causal
        if self.dtype is not None:
            # Both spellings: transformers 5 reads ``dtype``, older readers ``torch_dtype``.  Without
            # them SGLang resolves the drafter as float32 -> "auto" -> float16.
            out["torch_dtype"] = out["dtype"] = self.dtype
        out.update(self.extra)
        return out

    def save(self, directory: str | os.PathLike) -> str:
        os.makedirs(directory, exist_ok=True)
        file = os.path.join(directory, CONFIG_FILE)
        with open(file, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=2)
            f.write("\n")
        return file

    def replace(self, **changes: Any) -> "DFlashConfig":
        """A copy with some fields changed, re-validated through the same parser."""
        current = self.to_dict()
        flat = _flatten_changes(changes)
        if "dflash_config" in flat:
            flat["dflash_config"] = {**current["dflash_config"], **flat["dflash_config"]}
        return DFlashConfig.from_dict({**current, **flat})

    # ------------------------------------------------------------------ target fit
    def validate_against_target(self, target_config: Any) -> None:
        """Check that this drafter can run on ``target_config`` (an HF config or a dict)."""
        target = _text_config(target_config)
        t_hidden = _target_field(target, "hidden_size")
        t_layers = _target_field(target, "num_hidden_layers")
        t_vocab = _target_field(target, "vocab_size")
        if self.hidden_size != t_hidden:
            raise config_error("hidden_size", self.hidden_size, f"the target's hidden_size={t_hidden}")
        if self.num_target_layers != t_layers:
            raise config_error("num_target_layers", self.num_target_layers,
                               f"the target's num_hidden_layers={t_layers}")
        bad = [i for i in self.target_layer_ids if not 0 <= i <= t_layers - 2]
        if bad:
            raise config_error("dflash_config.target_layer_ids", list(self.target_layer_ids),
                               f"layer ids in [0, {t_layers - 2}] for a target with {t_layers} layers")
        if self.vocab_size != t_vocab:
            raise config_error("vocab_size", self.vocab_size, f"the target's vocab_size={t_vocab}")
        if not 0 <= self.mask_token_id < t_vocab:
            raise config_error("dflash_config.mask_token_id", self.mask_token_id,
                               f"a token id inside the target vocab [0, {t_vocab})")


def _flatten_changes(changes: Mapping[str, Any]) -> dict[str, Any]:
    """Map dataclass field names onto config.json keys for :meth:`DFlashConfig.replace`."""
    out: dict[str, Any] = {}
    dflash: dict[str, Any] = {}
    for key, value in changes.items():
        if key in ("target_layer_ids", "mask_token_id", "mask_token"):
            dflash[key] = list(value) if key == "target_layer_ids" else value
        elif key == "rope_parameters":
            out["rope_theta"] = value["rope_theta"]
            out["rope_scaling"] = None if value["rope_type"] == "default" else dict(value)
        elif key in {f.name for f in dataclasses.fields(DFlashConfig)}:
            out[key] = list(value) if isinstance(value, tuple) else value
        else:
            raise TypeError(f"DFlashConfig has no field {key!r}")
    if dflash:
        out["dflash_config"] = dflash
    return out


def _text_config(target_config: Any) -> Any:
    if hasattr(target_config, "get_text_config"):
        return target_config.get_text_config()
    if isinstance(target_config, Mapping) and "text_config" in target_config:
        return target_config["text_config"]
    return target_config


def _target_field(target: Any, name: str) -> int:
    value = target.get(name) if isinstance(target, Mapping) else getattr(target, name, None)
    if not isinstance(value, int):
        raise config_error(f"target {name}", value, "an integer in the target model's config")
    return value


def draft_config_for_target(
    target_config: Any,
    num_layers: int = 1,
    block_size: int = 16,
    target_layer_ids: list[int] | None = None,
    mask_token_id: int | None = None,
    **overrides: Any,
) -> DFlashConfig:
    """A drafter config that fits ``target_config``: same hidden size, heads, vocab and RoPE.

    ``overrides`` replace config.json fields (e.g. ``intermediate_size``, ``layer_types``).
    """
    t = _text_config(target_config)
    head_dim = getattr(t, "head_dim", None) or t.hidden_size // t.num_attention_heads
    rope = getattr(t, "rope_parameters", None) or {"rope_type": "default", "rope_theta": getattr(t, "rope_theta", 10000.0)}
    raw: dict[str, Any] = {
        "architectures": [DRAFT_ARCHITECTURE],
        "hidden_size": t.hidden_size,
        "num_hidden_layers": num_layers,
        "num_attention_heads": t.num_attention_heads,
        "num_key_value_heads": t.num_key_value_heads,
        "head_dim": head_dim,
        "intermediate_size": t.intermediate_size,
        "vocab_size": t.vocab_size,
        "rms_norm_eps": t.rms_norm_eps,
        "rope_parameters": dict(rope),
        "max_position_embeddings": t.max_position_embeddings,
        "block_size": block_size,
        "num_target_layers": t.num_hidden_layers,
        "dflash_config": {"mask_token_id": t.vocab_size - 1 if mask_token_id is None else mask_token_id},
    }
    if target_layer_ids is not None:
        raw["dflash_config"]["target_layer_ids"] = list(target_layer_ids)
    raw.update(overrides)
    return DFlashConfig.from_dict(raw)
