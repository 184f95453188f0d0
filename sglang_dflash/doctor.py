"""``sglang-dflash doctor``: what is installed, which DFLASH implementation runs, and whether a
target/drafter pair passes every startup check, without loading any weights.

Each check is a :class:`Verdict` (name, ok, detail).  The pair checks call the same functions the
server calls at startup (:mod:`sglang_dflash.serving.validation`, :mod:`sglang_dflash.config`,
:mod:`sglang_dflash.checkpoint`), one per verdict, so a failing pair is named check by check rather
than stopping at the first error; a check whose input failed earlier is reported as skipped (a
failure).  Safetensors are read through their headers only.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from importlib import metadata
from types import SimpleNamespace
from typing import Any

# (name printed, distribution name): what the serving stack is made of.
PACKAGES = (
    ("sglang", "sglang"),
    ("torch", "torch"),
    ("triton", "triton"),
    ("flashinfer", "flashinfer-python"),
    ("sgl-kernel", "sglang-kernel"),
)
PLUGIN_GROUP, PLUGIN_NAME = "sglang.srt.plugins", "dflash"
PLUGIN_VALUE = "sglang_dflash.serving.plugin:register"
# What the startup checks and SGLang's plugin loading raise: reported as a failed verdict.
CHECK_ERRORS = (ValueError, OSError, RuntimeError, ImportError, KeyError, TypeError, AttributeError)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One check: its name, whether it passed, and what it found (or why it failed)."""

    name: str
    ok: bool
    detail: str


def package_versions() -> dict[str, str | None]:
    """Installed versions of the serving stack (None where a package is missing); nothing is imported."""
    versions: dict[str, str | None] = {}
    for name, distribution in PACKAGES:
        try:
            versions[name] = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def describe_draft_layers(config) -> str:
    """``2 layers: full_attention x2, bidirectional``; sliding layers name their window."""
    layers = range(config.num_hidden_layers)
    types = [config.layer_types[i] for i in layers]
    counts = ", ".join(f"{t} x{types.count(t)}" for t in dict.fromkeys(types))
    window = f" (window {config.sliding_window})" if "sliding_attention" in types else ""
    causal = [i for i in layers if config.layer_is_causal(i)]
    attention = f"causal in layers {causal}" if causal else "bidirectional"
    return f"{config.num_hidden_layers} layers: {counts}{window}, {attention}"


def device_description() -> str:
    """``CUDA (<name>, <n> GPUs)`` when torch sees a GPU, else ``CPU (<n> cores)``."""
    import torch

    if torch.cuda.is_available():
        return f"CUDA ({torch.cuda.get_device_name(0)}, {torch.cuda.device_count()} GPUs)"
    return f"CPU ({os.cpu_count()} cores; serve with --device cpu, see docs/cpu.md)"


def plugin_verdict() -> Verdict:
    """Our entry point is declared, allowed by ``SGLANG_PLUGINS`` and installs its hooks in SGLang."""
    name = "plugin registered"
    declared = {ep.name: ep.value for ep in metadata.entry_points(group=PLUGIN_GROUP)}
    if declared.get(PLUGIN_NAME) != PLUGIN_VALUE:
        found = declared.get(PLUGIN_NAME)
        return Verdict(
            name,
            False,
            f"entry point {PLUGIN_GROUP}:{PLUGIN_NAME} is {found!r}; "
            f"expected {PLUGIN_VALUE!r} (reinstall sglang-dflash)",
        )
    allowed = [x.strip() for x in os.environ.get("SGLANG_PLUGINS", "").split(",") if x.strip()]
    if allowed and PLUGIN_NAME not in allowed:
        return Verdict(
            name, False, f"SGLANG_PLUGINS is {','.join(allowed)!r}; expected it to include {PLUGIN_NAME!r}"
        )
    try:
        from sglang.srt.plugins import load_plugins

        from .serving import plugin

        load_plugins()
        installed = plugin._hook_installed(plugin.CREATE_WORKER, plugin._create_worker)
    except (*CHECK_ERRORS, plugin_error()) as e:
        return Verdict(name, False, f"SGLang could not load the plugin: {e}")
    if not installed:
        return Verdict(
            name, False, f"hook on {plugin.CREATE_WORKER} is not installed; expected it after load_plugins()"
        )
    return Verdict(name, True, f"{PLUGIN_GROUP}:{PLUGIN_NAME} -> {PLUGIN_VALUE}, hooks installed")


def plugin_error() -> type[BaseException]:
    """The plugin's own error type (a BaseException, so SGLang cannot swallow it)."""
    from .serving.plugin import DFlashPluginError

    return DFlashPluginError


def implementation_verdict() -> Verdict:
    """Which DFLASH implementation a server started from this environment would run."""
    from .serving.plugin import BUILTIN, IMPL_ENV, active_implementation

    try:
        impl = active_implementation()
    except plugin_error() as e:
        return Verdict("DFLASH implementation", False, str(e))
    from . import __version__

    detail = (
        f"SGLang built-in ({IMPL_ENV}={BUILTIN})"
        if impl == BUILTIN
        else f"sglang-dflash {__version__} (set {IMPL_ENV}={BUILTIN} for SGLang's built-in)"
    )
    return Verdict("DFLASH implementation", True, detail)


# ----------------------------------------------------------------------------- the pair
class _Skipped(Exception):
    """A check whose input failed earlier."""


def _run(name: str, check: Callable[[], str]) -> Verdict:
    try:
        return Verdict(name, True, check())
    except _Skipped as e:
        return Verdict(name, False, f"skipped: {e}")
    except CHECK_ERRORS as e:  # report the check's own clear error, go on with the next check
        return Verdict(name, False, str(e))


def pair_verdicts(
    target: str, drafter: str, num_draft_tokens: int | None = None, drafter_revision: str | None = None
) -> list[Verdict]:
    """Every startup check of ``--model-path target --speculative-draft-model-path drafter``, in order."""
    from .checkpoint import check_shapes, read_shapes
    from .config import DFlashConfig
    from .serving import validation

    found: dict[str, Any] = {}

    def need(key: str) -> Any:
        if key not in found:
            raise _Skipped(f"needs a {key} (failed above)")
        return found[key]

    def drafter_path() -> str:
        found["drafter directory"] = validation.resolve_drafter_path(drafter, drafter_revision)
        return found["drafter directory"]

    def drafter_config() -> str:
        config = found["drafter config"] = DFlashConfig.from_pretrained(need("drafter directory"))
        generation = (
            f"DFlash2 ({config.architecture}: convolutions of {config.conv_kernel_size} taps, candidate "
            f"selector top-{config.selector_top_k} rank {config.selector_rank})"
            if config.is_dflash2
            else f"DFlash ({config.architecture})"
        )
        return (
            f"{generation}, block_size={config.block_size}, {config.num_hidden_layers} draft layers reading "
            f"target layers {list(config.target_layer_ids)}, mask_token_id={config.mask_token_id}"
        )

    def target_config() -> str:
        args = SimpleNamespace(model_path=target, trust_remote_code=False, revision=None)
        config = found["target config"] = validation.load_target_config(args)
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        archs = list(getattr(config, "architectures", None) or ["?"])
        return f"{archs[0]}, {text.num_hidden_layers} layers, hidden_size={text.hidden_size}"

    def fits_target() -> str:
        need("drafter config").validate_against_target(need("target config"))
        found["drafter that fits the target"] = True
        return "hidden size, layer count and ids, vocab size and mask token fit the target"

    def attention_only() -> str:
        from sglang.srt.configs.linear_attn_model_registry import get_linear_attn_config

        config = need("target config")
        validation.check_attention_only_target(config, get_linear_attn_config(config))
        return "no recurrent (mamba / linear-attention) state"

    def captures() -> str:
        config, _ = need("target config"), need("drafter that fits the target")
        text = config.get_text_config() if hasattr(config, "get_text_config") else config
        server_args = SimpleNamespace(speculative_draft_model_path=need("drafter directory"))
        model_config = SimpleNamespace(hf_config=config, hf_text_config=text)
        layers, _ = validation.capture_layers(server_args, model_config)
        return f"the target's SGLang model captures layers {layers} for DFLASH"

    def weights() -> str:
        shapes = read_shapes(need("drafter directory"))
        check_shapes(need("drafter config"), shapes)
        return f"{len(shapes)} tensors, every shape matches config.json (headers only)"

    def draft_layers() -> str:
        import torch

        config = need("drafter config")
        # As a server on this machine's device would check them (GPU backends have no draft window).
        device = "cuda" if torch.cuda.is_available() else "cpu"
        server_args = SimpleNamespace(device=device, context_length=None)
        validation.check_draft_attention(config, server_args, need("target config"))
        return describe_draft_layers(config)

    def block_size() -> str:
        config = need("drafter config")
        validation.check_block_size_flag("--speculative-num-draft-tokens", num_draft_tokens, config)
        agrees = ", agrees with --speculative-num-draft-tokens" if num_draft_tokens is not None else ""
        return f"{config.block_size} (>= 2{agrees})"

    def dtype() -> str:
        saved = need("drafter config").dtype or "unknown"
        config = need("target config")
        target_dtype = str(getattr(config, "dtype", None) or getattr(config, "torch_dtype", None))
        return (
            f"drafter saved in {saved}, target in {target_dtype.removeprefix('torch.')}; "
            "the drafter always runs in the target's dtype"
        )

    checks = [
        ("drafter path", drafter_path),
        ("drafter config.json", drafter_config),
        ("target config.json", target_config),
        ("drafter fits target", fits_target),
        ("attention-only target", attention_only),
        ("target captures hidden states", captures),
        ("drafter weights", weights),
        ("draft layers", draft_layers),
        ("block size", block_size),
        ("dtype", dtype),
    ]
    return [_run(name, check) for name, check in checks]


# ----------------------------------------------------------------------------- report
def diagnose(
    target: str | None = None, drafter: str | None = None, num_draft_tokens: int | None = None
) -> dict:
    """Everything ``doctor`` reports, as a JSON-ready dict; ``ok`` is False when any check failed."""
    verdicts = [plugin_verdict(), implementation_verdict()]
    if target or drafter:
        if not (target and drafter):
            verdicts.append(
                Verdict(
                    "pair",
                    False,
                    f"doctor: --target is {target!r} and --drafter is {drafter!r}; expected both or neither",
                )
            )
        else:
            verdicts += pair_verdicts(target, drafter, num_draft_tokens)
    return {
        "versions": package_versions(),
        "device": device_description(),
        "checks": [dataclasses.asdict(v) for v in verdicts],
        "ok": all(v.ok for v in verdicts),
    }


def format_report(report: dict) -> str:
    """The human-readable form of :func:`diagnose`'s dict."""
    lines = ["versions:"]
    lines += [f"  {name:<11} {version or 'not installed'}" for name, version in report["versions"].items()]
    lines.append(f"device:       {report['device']}")
    lines += [f"[{'ok' if c['ok'] else 'FAIL'}] {c['name']}: {c['detail']}" for c in report["checks"]]
    failed = sum(not c["ok"] for c in report["checks"])
    lines.append("all checks passed" if not failed else f"{failed} check(s) failed")
    return "\n".join(lines)


def main(target: str | None, drafter: str | None, num_draft_tokens: int | None, as_json: bool) -> int:
    """Print the report; exit status 1 when any check failed."""
    report = diagnose(target, drafter, num_draft_tokens)
    print(json.dumps(report, indent=2) if as_json else format_report(report))
    return 0 if report["ok"] else 1
