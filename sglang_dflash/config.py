"""DFlash drafter configuration: read the published config.json, validate it, write it back.

The published format (z-lab ``*-DFlash*`` checkpoints) is a Qwen3-style config with
``architectures: ["DFlashDraftModel"]``, ``block_size`` and ``num_target_layers`` at the top level
(older files keep them inside ``dflash_config``), and ``dflash_config: {target_layer_ids,
mask_token_id[, mask_token]}``.  A :class:`DFlashConfig` is checked when constructed, whether read
from config.json, built directly or copied with :meth:`DFlashConfig.replace`: every violation raises
:class:`DFlashConfigError` as ``DFlash drafter config.json: <field> is <value>; expected <what>``,
before any weights are touched.  ``to_dict``/``from_dict`` round-trip, the weights' dtype included.

Second-generation drafters (``architectures: ["DFlash2DraftModel"]``) add to ``dflash_config``:
``conv_kernel_size`` and ``conv_group_size`` (the grouped in-block convolution of every layer),
``selector_rank`` and ``selector_top_k`` (the candidate selector), and optionally
``output_multiplier``, ``final_logit_softcapping`` and ``input_embedding_scale``; the math is in
:mod:`sglang_dflash.dflash2`.  A first-generation file with these fields is refused, and so is a
DFlash2 file without them: neither can run as the other.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DRAFT_ARCHITECTURE = "DFlashDraftModel"
DRAFT2_ARCHITECTURE = "DFlash2DraftModel"
DRAFT_ARCHITECTURES = (DRAFT_ARCHITECTURE, DRAFT2_ARCHITECTURE)
# dflash_config fields of a DFlash2 drafter: required ones, then optional ones with their defaults.
DFLASH2_REQUIRED = ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k")
DFLASH2_OPTIONAL = {"output_multiplier": 1.0, "final_logit_softcapping": None, "input_embedding_scale": 1.0}
CONFIG_FILE = "config.json"
SUPPORTED_ROPE_TYPES = ("default", "linear", "llama3")
SUPPORTED_LAYER_TYPES = ("full_attention", "sliding_attention")
# Weight dtypes a drafter may be saved in (config.json ``torch_dtype`` / ``dtype``).
SUPPORTED_DTYPES = ("float32", "float16", "bfloat16")
# The ``<where>`` of an error: what the user wrote or typed, so they know where to look.
DRAFTER = "DFlash drafter"
DRAFTER_CONFIG = f"{DRAFTER} {CONFIG_FILE}"
TARGET_CONFIG = f"target {CONFIG_FILE}"
SERVER = "sglang-dflash"

# Keys this module owns; anything else in config.json is carried through ``extra`` untouched.
_KNOWN_KEYS = {
    "architectures",
    "model_type",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "rms_norm_eps",
    "rope_theta",
    "rope_scaling",
    "rope_parameters",
    "max_position_embeddings",
    "attention_bias",
    "hidden_act",
    "layer_types",
    "sliding_window",
    "use_sliding_window",
    "block_size",
    "num_target_layers",
    "dflash_config",
    "is_causal",
    "torch_dtype",
    "dtype",
    "tie_word_embeddings",
    *DFLASH2_REQUIRED,
    *DFLASH2_OPTIONAL,
}


class DFlashConfigError(ValueError):
    """A drafter config (or its weights) does not fit the DFlash format or the target."""


def config_error(what: str, value: Any, expected: str, where: str | None = None) -> DFlashConfigError:
    """``<where>: <what> is <value>; expected <expected>``.

    ``where`` defaults to ``sglang-dflash`` for a server flag (``what`` starts with ``--``) and to
    the drafter's config.json otherwise, so the message names what the user typed or wrote.
    """
    if where is None:
        where = SERVER if what.startswith("--") else DRAFTER_CONFIG
    return DFlashConfigError(f"{where}: {what} is {value!r}; expected {expected}")


def default_target_layer_ids(num_target_layers: int, num_draft_layers: int) -> list[int]:
    """Target layers whose hidden states feed the drafter, spread uniformly over 1..L-3.

    Matches the paper's code: one context layer per draft layer, from shallow (layer 1) to deep
    (layer L-3); a single-layer drafter reads the middle layer.
    """
    if num_target_layers < 4:
        raise config_error(
            "num_target_layers",
            num_target_layers,
            "at least 4 to derive default target_layer_ids; set dflash_config.target_layer_ids",
        )
    if num_draft_layers == 1:
        return [num_target_layers // 2]
    start, end = 1, num_target_layers - 3
    return [int(round(start + i * (end - start) / (num_draft_layers - 1))) for i in range(num_draft_layers)]


def _is_int(value: Any) -> bool:
    """A JSON integer (``True`` is an int to Python, never to config.json)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _check_int(label: str, value: Any, minimum: int) -> None:
    """Raise unless ``value`` is an integer >= ``minimum``."""
    if not _is_int(value) or value < minimum:
        raise config_error(label, value, f"an integer >= {minimum}")


def _require_int(d: Mapping[str, Any], key: str, minimum: int) -> int:
    """``d[key]``, checked, for the fields :meth:`DFlashConfig.from_dict` derives defaults from."""
    if key not in d:
        raise config_error(key, None, f"an integer >= {minimum} (the field is missing)")
    _check_int(key, d[key], minimum)
    return d[key]


def _default_head_dim(d: Mapping[str, Any]) -> int:
    """``hidden_size // num_attention_heads``: the Qwen3 default when config.json has no ``head_dim``."""
    return _require_int(d, "hidden_size", 1) // _require_int(d, "num_attention_heads", 1)


def _as_tuple(value: Any) -> Any:
    """Lists (as JSON holds them) as tuples, so a config equals the one read back from its config.json."""
    return tuple(value) if isinstance(value, (list, tuple)) else value


def _shown(value: Any) -> Any:
    """A tuple field as config.json writes it (a list), for error messages."""
    return list(value) if isinstance(value, tuple) else value


def _parse_dtype(d: Mapping[str, Any]) -> str | None:
    """The weights' dtype from ``dtype`` (transformers 5) or ``torch_dtype``; None when neither is set."""
    key = "dtype" if d.get("dtype") is not None else "torch_dtype"
    value = d.get(key)
    if value is None:
        return None
    name = str(value).removeprefix("torch.")
    if name not in SUPPORTED_DTYPES:
        # Checked here, not only at construction, to name the key this file used.
        raise config_error(key, value, f"one of {SUPPORTED_DTYPES}")
    return name


def _parse_rope(d: Mapping[str, Any]) -> Any:
    """Normalise legacy (rope_theta + rope_scaling) and transformers-5 (rope_parameters) forms.

    Only the layout is normalised here; the values are checked by :func:`_check_rope` at construction.
    """
    params = d.get("rope_parameters")
    if params is None:
        params = dict(d.get("rope_scaling") or {})
        params.setdefault("rope_theta", d.get("rope_theta", 10000.0))
    if not isinstance(params, Mapping):
        return params
    params = dict(params)
    rope_type = params.pop("rope_type", params.pop("type", "default"))
    params.setdefault("rope_theta", d.get("rope_theta", 10000.0))
    return {"rope_type": rope_type, **params}


def _check_rope(params: Any) -> dict[str, Any]:
    """``rope_parameters`` checked, with ``rope_theta`` as a float."""
    if not isinstance(params, Mapping):
        raise config_error("rope_parameters", params, "a JSON object")
    rope_type = params.get("rope_type")
    if rope_type not in SUPPORTED_ROPE_TYPES:
        raise config_error("rope_parameters.rope_type", rope_type, f"one of {SUPPORTED_ROPE_TYPES}")
    theta = params.get("rope_theta")
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or theta <= 0:
        raise config_error("rope_theta", theta, "a positive number")
    if rope_type != "default" and "factor" not in params:
        raise config_error("rope_parameters.factor", None, f"a scaling factor for {rope_type} RoPE")
    return {**params, "rope_theta": float(theta)}


def _is_positive_number(value: Any) -> bool:
    """A finite JSON number > 0."""
    return (
        not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value > 0
    )


def _check_target_layer_ids(ids: Any, num_target_layers: int) -> None:
    """Distinct ascending ids of target layers whose hidden states SGLang can capture."""
    if not isinstance(ids, tuple) or not ids or not all(_is_int(i) for i in ids):
        raise config_error("dflash_config.target_layer_ids", _shown(ids), "a non-empty list of integers")
    if list(ids) != sorted(set(ids)):
        # SGLang captures target layers in ascending order: fc's input columns follow that order.
        raise config_error(
            "dflash_config.target_layer_ids", list(ids), "distinct layer ids in ascending order"
        )
    # HF hidden_states[id+1] is the output of layer `id`; the last layer's output is only seen
    # after the final norm, and SGLang captures the input of layer id+1, so id <= L-2.
    if any(not 0 <= i <= num_target_layers - 2 for i in ids):
        raise config_error(
            "dflash_config.target_layer_ids",
            list(ids),
            f"layer ids in [0, {num_target_layers - 2}] (num_target_layers={num_target_layers})",
        )


@dataclass(frozen=True)
class DFlashConfig:
    """Everything the drafter needs, checked when constructed (however it is built) and self-consistent.

    Field names are config.json's; ``target_layer_ids``, ``mask_token_id`` and ``mask_token`` live in
    its ``dflash_config`` object.  An empty ``layer_types`` means full attention in every layer.
    """

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
    rope_parameters: dict[str, Any] = field(
        default_factory=lambda: {"rope_type": "default", "rope_theta": 1e6}
    )
    max_position_embeddings: int = 40960
    attention_bias: bool = False
    hidden_act: str = "silu"
    layer_types: tuple[str, ...] = ()
    sliding_window: int | None = None
    is_causal: bool | None = None
    mask_token: str | None = None
    dtype: str | None = None  # the dtype the weights are saved in ("bfloat16", ...); None if unknown
    extra: dict[str, Any] = field(default_factory=dict)
    # DFlash2 (architecture DRAFT2_ARCHITECTURE): None in a first-generation drafter.
    architecture: str = DRAFT_ARCHITECTURE
    conv_kernel_size: int | None = None
    conv_group_size: int | None = None
    selector_rank: int | None = None
    selector_top_k: int | None = None
    output_multiplier: float = 1.0
    final_logit_softcapping: float | None = None  # None: no softcap
    input_embedding_scale: float = 1.0

    def __post_init__(self) -> None:
        """Check every field; raise :class:`DFlashConfigError` naming the first bad config.json field."""
        self._check_sizes()
        # object.__setattr__: the dataclass is frozen; these only canonicalise what was given.
        object.__setattr__(self, "target_layer_ids", _as_tuple(self.target_layer_ids))
        _check_target_layer_ids(self.target_layer_ids, self.num_target_layers)
        if not _is_int(self.mask_token_id) or not 0 <= self.mask_token_id < self.vocab_size:
            raise config_error(
                "dflash_config.mask_token_id", self.mask_token_id, f"an integer in [0, {self.vocab_size})"
            )
        if self.hidden_act != "silu":
            raise config_error("hidden_act", self.hidden_act, '"silu" (gated SiLU MLP)')
        object.__setattr__(
            self, "layer_types", _as_tuple(self.layer_types) or ("full_attention",) * self.num_hidden_layers
        )
        self._check_layer_types()
        eps = self.rms_norm_eps
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < 1 or math.isnan(eps):
            raise config_error("rms_norm_eps", eps, "a small positive number")
        object.__setattr__(self, "rope_parameters", _check_rope(self.rope_parameters))
        if self.dtype is not None and self.dtype not in SUPPORTED_DTYPES:
            raise config_error("dtype", self.dtype, f"one of {SUPPORTED_DTYPES}")
        self._check_dflash2()

    def _check_sizes(self) -> None:
        """Integer sizes, and the head layout attention and RoPE need."""
        for label, minimum in (
            ("hidden_size", 1),
            ("num_hidden_layers", 1),
            ("num_attention_heads", 1),
            ("num_key_value_heads", 1),
        ):
            _check_int(label, getattr(self, label), minimum)
        if self.num_attention_heads % self.num_key_value_heads:
            raise config_error(
                "num_key_value_heads",
                self.num_key_value_heads,
                f"a divisor of num_attention_heads={self.num_attention_heads}",
            )
        _check_int("head_dim", self.head_dim, 2)
        if self.head_dim % 2:
            raise config_error("head_dim", self.head_dim, "an even number (RoPE rotates pairs)")
        for label, minimum in (
            ("intermediate_size", 1),
            ("vocab_size", 1),
            ("block_size", 2),
            ("num_target_layers", 1),
        ):
            _check_int(label, getattr(self, label), minimum)

    def _check_layer_types(self) -> None:
        """One supported type per draft layer; sliding layers need a window."""
        types = self.layer_types
        if (
            not isinstance(types, tuple)
            or len(types) != self.num_hidden_layers
            or any(t not in SUPPORTED_LAYER_TYPES for t in types)
        ):
            raise config_error(
                "layer_types", _shown(types), f"{self.num_hidden_layers} entries from {SUPPORTED_LAYER_TYPES}"
            )
        if "sliding_attention" in types:
            _check_int("sliding_window", self.sliding_window, 1)

    def _check_dflash2(self) -> None:
        """DFlash2 fields: all present (and fitting the drafter) exactly when the architecture says so."""
        if self.architecture not in DRAFT_ARCHITECTURES:
            raise config_error("architectures", [self.architecture], f"one of {list(DRAFT_ARCHITECTURES)}")
        present = [name for name in DFLASH2_REQUIRED if getattr(self, name) is not None]
        if self.architecture == DRAFT_ARCHITECTURE:
            if present:
                raise config_error(
                    f"dflash_config.{present[0]}",
                    getattr(self, present[0]),
                    f"absent in a {DRAFT_ARCHITECTURE}; a drafter with a candidate selector and "
                    f'convolutions declares architectures ["{DRAFT2_ARCHITECTURE}"]',
                )
            return
        for name in DFLASH2_REQUIRED:
            if getattr(self, name) is None:
                raise config_error(
                    f"dflash_config.{name}", None, f"an integer >= 1 (required by {DRAFT2_ARCHITECTURE})"
                )
            _check_int(f"dflash_config.{name}", getattr(self, name), 1)
        if self.hidden_size % self.conv_group_size:
            raise config_error(
                "dflash_config.conv_group_size",
                self.conv_group_size,
                f"a divisor of hidden_size={self.hidden_size}",
            )
        if self.selector_top_k > self.vocab_size:
            raise config_error(
                "dflash_config.selector_top_k", self.selector_top_k, f"at most vocab_size={self.vocab_size}"
            )
        for name in ("output_multiplier", "input_embedding_scale"):
            if not _is_positive_number(getattr(self, name)):
                raise config_error(f"dflash_config.{name}", getattr(self, name), "a positive number")
        cap = self.final_logit_softcapping
        if cap is not None and not _is_positive_number(cap):
            raise config_error(
                "dflash_config.final_logit_softcapping", cap, "a positive number, or null for no softcap"
            )

    # ------------------------------------------------------------------ derived
    @property
    def generation(self) -> int:
        """1 for a DFlash drafter, 2 for a DFlash2 drafter (convolutions + candidate selector)."""
        return 2 if self.architecture == DRAFT2_ARCHITECTURE else 1

    @property
    def is_dflash2(self) -> bool:
        return self.generation == 2

    @property
    def conv_num_groups(self) -> int:
        """Channel groups of a DFlash2 convolution (each group shares one dynamic coefficient per tap)."""
        if not self.is_dflash2:
            raise ValueError(f"{DRAFTER}: conv_num_groups is asked of a {self.architecture}")
        return self.hidden_size // self.conv_group_size

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
    def from_dict(cls, d: Mapping[str, Any]) -> DFlashConfig:
        """Parse a config.json dictionary; raise :class:`DFlashConfigError` on the first bad field.

        Parsing maps the file's layout onto the fields and fills the defaults the published format
        derives (``head_dim``, ``target_layer_ids``); the values are checked at construction.
        """
        if not isinstance(d, Mapping):
            raise config_error("top level", type(d).__name__, "a JSON object")
        archs = d.get("architectures")
        known = [a for a in archs if a in DRAFT_ARCHITECTURES] if isinstance(archs, list) else []
        if len(known) != 1:
            expected = f'a list containing one of "{DRAFT_ARCHITECTURE}", "{DRAFT2_ARCHITECTURE}"'
            raise config_error("architectures", archs, expected)
        dflash = d.get("dflash_config") or {}
        if not isinstance(dflash, Mapping):
            raise config_error("dflash_config", dflash, "a JSON object")
        # Older files keep block_size and num_target_layers inside dflash_config; the top level wins.
        merged = {**dflash, **{k: v for k, v in d.items() if k != "dflash_config"}}
        # DFlash2 fields are dflash_config's first, as the public readers take them (vLLM reads only
        # dflash_config; z-lab's _draft_value falls back to the top level): a top-level copy never wins.
        dflash2_fields = {**merged, **dflash}
        ids = merged.get("target_layer_ids")
        if ids is None:
            ids = default_target_layer_ids(
                _require_int(merged, "num_target_layers", 1), _require_int(d, "num_hidden_layers", 1)
            )
        return cls(
            hidden_size=d.get("hidden_size"),
            num_hidden_layers=d.get("num_hidden_layers"),
            num_attention_heads=d.get("num_attention_heads"),
            num_key_value_heads=d.get("num_key_value_heads", d.get("num_attention_heads")),
            head_dim=d.get("head_dim") or _default_head_dim(d),
            intermediate_size=d.get("intermediate_size"),
            vocab_size=d.get("vocab_size"),
            block_size=merged.get("block_size"),
            num_target_layers=merged.get("num_target_layers"),
            target_layer_ids=ids,
            mask_token_id=merged.get("mask_token_id"),
            rms_norm_eps=d.get("rms_norm_eps", 1e-6),
            rope_parameters=_parse_rope(d),
            max_position_embeddings=int(d.get("max_position_embeddings", 40960)),
            attention_bias=bool(d.get("attention_bias", False)),
            hidden_act=d.get("hidden_act", "silu"),
            layer_types=d.get("layer_types") or (),
            sliding_window=d.get("sliding_window"),
            is_causal=d.get("is_causal"),
            mask_token=dflash.get("mask_token"),
            dtype=_parse_dtype(d),
            extra={k: v for k, v in d.items() if k not in _KNOWN_KEYS},
            architecture=known[0],
            **{name: dflash2_fields.get(name) for name in DFLASH2_REQUIRED},
            **_parse_dflash2_options(dflash2_fields, known[0]),
        )

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike) -> DFlashConfig:
        """Read ``config.json`` from a drafter directory (or the file itself)."""
        path = os.fspath(path)
        file = os.path.join(path, CONFIG_FILE) if os.path.isdir(path) else path
        if not os.path.exists(file):
            raise config_error(
                "draft model path", path, f"a directory containing {CONFIG_FILE}", where=DRAFTER
            )
        try:
            with open(file, encoding="utf-8") as f:
                raw = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise config_error(
                f"{CONFIG_FILE} file", file, f"a readable JSON file ({e})", where=DRAFTER
            ) from e
        return cls.from_dict(raw)

    # ------------------------------------------------------------------ writing
    def to_dict(self) -> dict[str, Any]:
        """The published layout: Qwen3 fields, top-level block_size/num_target_layers, dflash_config."""
        rope = dict(self.rope_parameters)
        legacy_scaling = (
            None if rope["rope_type"] == "default" else {k: v for k, v in rope.items() if k != "rope_theta"}
        )
        dflash_config: dict[str, Any] = {
            "target_layer_ids": list(self.target_layer_ids),
            "mask_token_id": self.mask_token_id,
        }
        if self.mask_token is not None:
            dflash_config["mask_token"] = self.mask_token
        if self.is_dflash2:
            dflash_config.update({name: getattr(self, name) for name in DFLASH2_REQUIRED})
            options = {k: getattr(self, k) for k in DFLASH2_OPTIONAL}
            dflash_config.update({k: v for k, v in options.items() if v != DFLASH2_OPTIONAL[k]})
        out: dict[str, Any] = {
            "architectures": [self.architecture],
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
        """Write ``directory/config.json``; returns its path."""
        os.makedirs(directory, exist_ok=True)
        file = os.path.join(directory, CONFIG_FILE)
        with open(file, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=2)
            f.write("\n")
        return file

    def replace(self, **changes: Any) -> DFlashConfig:
        """A copy with some fields changed (dataclass field names), checked as any construction is."""
        return dataclasses.replace(self, **changes)

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
            raise config_error(
                "num_target_layers", self.num_target_layers, f"the target's num_hidden_layers={t_layers}"
            )
        bad = [i for i in self.target_layer_ids if not 0 <= i <= t_layers - 2]
        if bad:
            raise config_error(
                "dflash_config.target_layer_ids",
                list(self.target_layer_ids),
                f"layer ids in [0, {t_layers - 2}] for a target with {t_layers} layers",
            )
        if self.vocab_size != t_vocab:
            raise config_error("vocab_size", self.vocab_size, f"the target's vocab_size={t_vocab}")
        if not 0 <= self.mask_token_id < t_vocab:
            raise config_error(
                "dflash_config.mask_token_id",
                self.mask_token_id,
                f"a token id inside the target vocab [0, {t_vocab})",
            )


def _parse_dflash2_options(merged: Mapping[str, Any], architecture: str) -> dict[str, Any]:
    """The optional DFlash2 fields of a DFlash2 config.json (defaults where absent; a softcap of 0 is none).

    A first-generation drafter takes the defaults whatever its file says: these fields mean nothing to it.
    """
    if architecture != DRAFT2_ARCHITECTURE:
        return {}
    out = {k: default if merged.get(k) is None else merged[k] for k, default in DFLASH2_OPTIONAL.items()}
    if out["final_logit_softcapping"] == 0:
        out["final_logit_softcapping"] = None
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
        raise config_error(name, value, "an integer in the target model's config", where=TARGET_CONFIG)
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
    rope = getattr(t, "rope_parameters", None) or {
        "rope_type": "default",
        "rope_theta": getattr(t, "rope_theta", 10000.0),
    }
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
