"""SGLang at server startup with our plugin loaded through its entry point, as ``launch_server`` has it.

    python -m tests.scenarios.plugin_host < checks.json

The request maps a check name to ``[kind, keyword arguments]``, a kind being one of the checks
below; the result maps each name to what the check returned, or to ``"<exception type>: <message>"``
when it raised.  ``SGLANG_DFLASH_IMPL`` and the CPU settings in the environment choose the host
configuration; a bad ``SGLANG_DFLASH_IMPL`` stops the program while it loads the plugins.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from . import print_result

if TYPE_CHECKING:
    from sglang.srt.server_args import ServerArgs


def dflash_server_args(target: str, draft: str, device: str = "cuda", **extra: Any) -> ServerArgs:
    from sglang.srt.server_args import ServerArgs

    return ServerArgs(
        model_path=target,
        speculative_algorithm="DFLASH",
        speculative_draft_model_path=draft,
        device=device,
        **extra,
    )


def startup_fields(target: str, draft: str) -> SimpleNamespace:
    """The ServerArgs fields our startup checks read, without ServerArgs' own checks (which stop a
    hybrid target such as Qwen3-Next on a machine without CUDA)."""
    return SimpleNamespace(
        model_path=target,
        speculative_draft_model_path=draft,
        trust_remote_code=False,
        tp_size=1,
        speculative_dflash_block_size=None,
        speculative_num_draft_tokens=None,
    )


# ---------------------------------------------------------------------------------------- checks
def server_args(
    target: str, draft: str, device: str = "cuda", extra: dict | None = None, fields: Sequence[str] = ()
) -> dict[str, Any]:
    """ServerArgs for DFLASH with this pair (our startup validation runs in them): the named fields."""
    args = dflash_server_args(target, draft, device, **(extra or {}))
    return {field: getattr(args, field) for field in fields}


def server_args_from_modelscope(target: str, draft: str, cache: str) -> dict[str, Any]:
    """ServerArgs with ``SGLANG_USE_MODELSCOPE=1`` and a ModelScope cache at ``cache``: the drafter
    path our startup validated (the host resolves ModelScope ids before its speculative checks)."""
    saved = {k: os.environ.get(k) for k in ("SGLANG_USE_MODELSCOPE", "MODELSCOPE_CACHE")}
    os.environ.update(SGLANG_USE_MODELSCOPE="1", MODELSCOPE_CACHE=cache)
    try:
        return server_args(
            target, draft, fields=["speculative_draft_model_path", "speculative_num_draft_tokens"]
        )
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def speculative_workers(target: str, draft: str) -> dict[str, Any]:
    """The worker classes SGLang creates for DFLASH and EAGLE, the model class registered for the
    drafter's architecture, the step shape the DFLASH ServerArgs end up with, and the free slots the
    host's scheduler would wait for before admitting a prefill (by default and with the flag set)."""
    from sglang.srt.managers.min_free_slots_delayer import resolve_min_free_slots
    from sglang.srt.models.registry import ModelRegistry
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    args = dflash_server_args(target, draft)
    dflash = SpeculativeAlgorithm.DFLASH.create_worker(args)
    chosen = dflash_server_args(target, draft, min_free_slots_delay=3)

    def held_until_free(server_args: ServerArgs) -> int | None:
        """The running slots the host's scheduler waits for before a prefill, at 16 running requests."""
        return resolve_min_free_slots(server_args.min_free_slots_delay, 16, is_dflash_family=True)

    return dict(
        held_until_free=held_until_free(args),
        held_until_free_when_set=held_until_free(chosen),
        dflash=f"{dflash.__module__}.{dflash.__name__}",
        eagle=SpeculativeAlgorithm.EAGLE.create_worker(args).__name__,
        model=ModelRegistry.models["DFlashDraftModel"].__module__,
        block=args.speculative_num_draft_tokens,
        steps=args.speculative_num_steps,
        topk=args.speculative_eagle_topk,
    )


def request_verdicts() -> dict[str, str | None]:
    """What the scheduler's DFLASH request check answers: logprobs, a grammar, hidden states and
    penalties pass (None); a custom logit processor is refused with a message."""
    from sglang.srt.managers import scheduler

    def request(**fields) -> SimpleNamespace:
        base = dict(return_logprob=False, sampling_params=None, return_hidden_states=False)
        return SimpleNamespace(**{**base, **fields})

    grammar = SimpleNamespace(json_schema='{"type": "object"}')
    return {
        "logprobs": scheduler.validate_dflash_request(request(return_logprob=True), True),
        "grammar": scheduler.validate_dflash_request(request(sampling_params=grammar), True),
        "hidden states": scheduler.validate_dflash_request(request(return_hidden_states=True), True),
        "penalty": scheduler.validate_dflash_request(
            request(sampling_params=SimpleNamespace(frequency_penalty=0.5, min_new_tokens=4)), True
        ),
        "custom processor": scheduler.validate_dflash_request(
            request(custom_logit_processor='{"callable": "..."}'), True
        ),
    }


def check_server_args(target: str, draft: str) -> int:
    """The check the ServerArgs hook runs, called directly: the drafter's block size."""
    from sglang_dflash.serving.validation import check_server_args

    return check_server_args(startup_fields(target, draft)).block_size


def capture_layers(target: str, draft: str) -> tuple[list[int], int]:
    """The check the model runner hook runs, on the target config as SGLang parses it: the target
    layers to capture and the draft layer count."""
    from sglang.srt.utils.hf_transformers_utils import get_config

    from sglang_dflash.serving.validation import capture_layers

    hf_config = get_config(target, trust_remote_code=False)
    model_config = SimpleNamespace(hf_config=hf_config, hf_text_config=hf_config)
    return capture_layers(startup_fields(target, draft), model_config)


def drafter_dtype_host_auto(target: str, draft: str) -> str:
    """The dtype SGLang's own ``--dtype auto`` resolution gives the drafter."""
    from sglang.srt.configs.model_config import ModelConfig

    args = dflash_server_args(target, draft)
    return str(ModelConfig.from_server_args(args, model_path=draft, is_draft_model=True).dtype)


def drafter_dtype_in_worker(target: str, draft: str) -> dict[str, Any]:
    """The target's dtype, the dtype our worker gives the drafter, and the target's ``--dtype`` and
    ``--context-length`` afterwards."""
    from sglang.srt.configs.model_config import ModelConfig

    from sglang_dflash.serving.worker import draft_server_args

    args = dflash_server_args(target, draft)
    target_config = ModelConfig.from_server_args(args)
    draft_args = draft_server_args(args, target_config.context_len, target_config.dtype)
    drafter_config = ModelConfig.from_server_args(draft_args, model_path=draft, is_draft_model=True)
    return dict(
        target=str(target_config.dtype),
        worker=str(drafter_config.dtype),
        target_args=[args.dtype, args.context_length],
    )


def few_row_linears() -> dict[str, list[int]]:
    """The row counts of the host's linear and lm_head calls that our few-row product served, for
    1, 3, 16 and 17 rows inside the decode-step context and 3 rows outside it."""
    import torch
    from sglang.srt.layers.logits_processor import LogitsProcessor
    from sglang.srt.layers.quantization.unquant import UnquantizedLinearMethod

    from sglang_dflash.kernels import small_batch_linear

    served: list[int] = []
    real = small_batch_linear.few_row_product

    def counting(x, weight, bias=None):
        served.append(x.shape[0])
        return real(x, weight, bias)

    small_batch_linear.few_row_product = counting
    layer = SimpleNamespace(weight=torch.randn(8, 4))
    processor = SimpleNamespace(use_fp32_lm_head=False, rl_on_policy_target=None)
    result = {}
    for name, call in (
        ("linear", lambda x: UnquantizedLinearMethod().apply(layer, x)),
        ("lm_head", lambda x: LogitsProcessor._compute_lm_head(processor, x, layer)),
    ):
        served.clear()
        call(torch.randn(3, 4))
        with small_batch_linear.small_batch_linears():
            for rows in (1, 3, 16, 17):
                out = call(torch.randn(rows, 4))
                assert out.shape == (rows, 8), out.shape
        result[name] = list(served)
    small_batch_linear.few_row_product = real
    return result


def splitkv_hook() -> bool:
    """Whether the Triton backend's constructor passes through our split-KV attention switch."""
    from sglang_dflash.serving import plugin

    return plugin._hook_installed(plugin.TRITON_BACKEND_INIT, plugin._triton_backend_init)


CHECKS: dict[str, Callable[..., Any]] = {
    check.__name__: check
    for check in (
        server_args,
        server_args_from_modelscope,
        speculative_workers,
        request_verdicts,
        check_server_args,
        capture_layers,
        drafter_dtype_host_auto,
        drafter_dtype_in_worker,
        few_row_linears,
        splitkv_hook,
    )
}


def attempt(check: Callable[..., Any], arguments: dict) -> Any:
    try:
        return check(**arguments)
    except Exception as e:
        return f"{type(e).__name__}: {e}"


def main() -> None:
    checks = json.load(sys.stdin)
    logging.disable(logging.WARNING)
    from sglang.srt.plugins import load_plugins

    load_plugins()
    print_result({name: attempt(CHECKS[kind], arguments) for name, (kind, arguments) in checks.items()})


if __name__ == "__main__":
    main()
