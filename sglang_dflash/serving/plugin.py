"""SGLang plugin entry point (group ``sglang.srt.plugins``): route the DFLASH algorithm to our worker.

Keeping the algorithm name ``DFLASH`` keeps every host branch keyed on it (target hidden-state
capture, KV pool sizing for the draft layers, TARGET_VERIFY graphs for target and drafter,
decode KV reservation through ``spec_info.prepare_for_decode``).  The hooks:

- ``SpeculativeAlgorithm.create_worker`` (AROUND): DFLASH -> :class:`~.worker.DFlashWorker`,
  and one log line saying which implementation is active;
- ``speculative_hook.handle_speculative_decoding`` (AROUND): for DFLASH, validate the drafter
  against the target with our parser and clear errors before anything is loaded (and before the
  host reads the drafter's config); pin the block size from the drafter;
- ``spec_aux_hidden_state._resolve_dflash_aux_hidden_state`` (AROUND): choose the captured
  target layers with our parser and check that the target family can capture them;
- ``scheduler.validate_dflash_request`` (AROUND): which request options we support, on servers
  running our DFLASH (the host calls it for DSPARK too, which keeps the host's check);
- ``DecodeCudaGraphRunner.get_spec_info`` and ``spec_info.create_dummy_verify_input`` (AROUND):
  capture graphs with our block input;
- ``speculative_hook._handle_dflash``, ``TorchNativeAttnBackend.forward_extend`` and
  ``XGrammarGrammar.apply_vocab_mask`` (AROUND): DFLASH and grammars on SGLang's CPU device
  (:mod:`.cpu_backend`);
- ``UnquantizedLinearMethod.apply`` and ``LogitsProcessor._compute_lm_head`` (AROUND, only in
  CPU-engine processes): few-row linears inside a DFLASH decode step (:mod:`.cpu_backend`), and
  the scheduler's four ``update_weights_from_*`` (AROUND, same processes): the packed weight
  copies of those linears are dropped after a weight update;
- ``TritonAttnBackend.__init__`` (AROUND, only on GPUs): unless ``SGLANG_DFLASH_SPLITKV=0`` the
  attention of our verify and draft passes runs split over the cached prefix (:func:`splitkv_setting`);
- ``Scheduler.is_disable_overlap_for_batch`` (AROUND): a decode batch with penalties waits for
  the previous step's result, so the penalties count every committed token;
- the model registry entry for ``DFlashDraftModel`` -> :class:`~.model.DFlashDrafterForSGLang`.

``SGLANG_DFLASH_IMPL=builtin`` leaves all of that out and runs SGLang's built-in DFLASH (for
side-by-side benchmarks).  SGLang only logs plugin failures, so a failure here raises
:class:`DFlashPluginError`, which SGLang's plugin loader does not swallow.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sglang.srt.server_args import ServerArgs

logger = logging.getLogger(__name__)

IMPL_ENV = "SGLANG_DFLASH_IMPL"
OURS, BUILTIN = "sglang-dflash", "builtin"

CREATE_WORKER = "sglang.srt.speculative.spec_info.SpeculativeAlgorithm.create_worker"
HANDLE_SPECULATIVE = "sglang.srt.arg_groups.speculative_hook.handle_speculative_decoding"
RESOLVE_AUX = (
    "sglang.srt.model_executor.model_runner_components.spec_aux_hidden_state._resolve_dflash_aux_hidden_state"
)
VALIDATE_REQUEST = "sglang.srt.managers.scheduler.validate_dflash_request"
GRAPH_SPEC_INFO = (
    "sglang.srt.model_executor.runner.decode_cuda_graph_runner.DecodeCudaGraphRunner.get_spec_info"
)
DUMMY_VERIFY = "sglang.srt.speculative.spec_info.create_dummy_verify_input"
HANDLE_DFLASH = "sglang.srt.arg_groups.speculative_hook._handle_dflash"
TORCH_NATIVE_EXTEND = "sglang.srt.layers.attention.torch_native_backend.TorchNativeAttnBackend.forward_extend"
XGRAMMAR_APPLY = "sglang.srt.constrained.xgrammar_backend.XGrammarGrammar.apply_vocab_mask"
OVERLAP_FOR_BATCH = "sglang.srt.managers.scheduler.Scheduler.is_disable_overlap_for_batch"
UNQUANTIZED_LINEAR = "sglang.srt.layers.quantization.unquant.UnquantizedLinearMethod.apply"
COMPUTE_LM_HEAD = "sglang.srt.layers.logits_processor.LogitsProcessor._compute_lm_head"
TRITON_BACKEND_INIT = "sglang.srt.layers.attention.triton_backend.TritonAttnBackend.__init__"
WEIGHT_UPDATES = tuple(
    f"sglang.srt.managers.scheduler_components.weight_updater.SchedulerWeightUpdaterManager.{method}"
    for method in (
        "update_weights_from_disk",
        "update_weights_from_distributed",
        "update_weights_from_tensor",
        "update_weights_from_ipc",
    )
)
SPLITKV_ENV = "SGLANG_DFLASH_SPLITKV"


class DFlashPluginError(BaseException):
    """Raised when the plugin cannot install itself; a BaseException so SGLang cannot just log it."""


def active_implementation() -> str:
    """Which DFLASH implementation runs: ``sglang-dflash`` (default) or ``builtin``."""
    value = os.environ.get(IMPL_ENV, OURS).strip().lower() or OURS
    if value not in (OURS, BUILTIN):
        raise DFlashPluginError(
            f"sglang-dflash: {IMPL_ENV} is {value!r}; expected {OURS!r} (default) or {BUILTIN!r}"
        )
    return value


def runs_dflash(server_args: ServerArgs) -> bool:
    """Whether these server arguments choose DFLASH (not another algorithm of the host's DFLASH family)."""
    return (getattr(server_args, "speculative_algorithm", None) or "").upper() == "DFLASH"


def serves_our_dflash() -> bool:
    """Whether this SGLang process serves DFLASH with our worker (not DSPARK, not the built-in).

    The host calls some hooked functions for its whole DFLASH family (DFLASH and DSPARK) without
    saying which algorithm runs; the target model runner publishes the process's ServerArgs before
    the scheduler takes any request, and they name it.  A call with nothing published (outside a
    server) is answered as ours: the hooks are installed only for our implementation.
    """
    if active_implementation() != OURS:
        return False
    from sglang.srt.server_args import get_global_server_args

    try:
        server_args = get_global_server_args()
    except ValueError:  # SGLang's "Global server args is not set yet!"
        return True
    return runs_dflash(server_args)


# ----------------------------------------------------------------------------- hooks
def _create_worker(original, self, server_args):
    if not self.is_dflash():
        return original(self, server_args)
    from .. import __version__

    if active_implementation() == BUILTIN:
        logger.info("DFLASH implementation: SGLang built-in (%s=%s)", IMPL_ENV, BUILTIN)
        return original(self, server_args)
    from .cpu_backend import allow_record_stream_on_cpu, is_cpu_device
    from .worker import DFlashWorker

    if is_cpu_device(server_args):
        allow_record_stream_on_cpu()
    logger.info(
        "DFLASH implementation: sglang-dflash %s (set %s=%s for SGLang's built-in)",
        __version__,
        IMPL_ENV,
        BUILTIN,
    )
    return DFlashWorker


def _handle_speculative_decoding(original, server_args):
    """For DFLASH, validate the drafter first (clear errors, nothing loaded yet), then the host's checks."""
    if runs_dflash(server_args):
        from .validation import admit_prefills_undelayed, check_server_args

        check_server_args(server_args)
        if active_implementation() != BUILTIN:  # the built-in keeps the host's defaults
            admit_prefills_undelayed(server_args)
    return original(server_args)


def _handle_dflash(original, server_args):
    """The host's DFLASH settings refuse every device but CUDA; on CPU apply ours instead."""
    from .cpu_backend import configure_cpu_server_args, is_cpu_device

    if is_cpu_device(server_args):
        return configure_cpu_server_args(server_args)
    return original(server_args)


def _torch_native_forward_extend(original, self, *args, **kwargs):
    from .cpu_backend import torch_native_forward_extend

    return torch_native_forward_extend(original, self, *args, **kwargs)


def _xgrammar_apply_vocab_mask(original, self, logits, vocab_mask):
    from ..grammar import apply_bitmask_on_cpu

    if logits.device.type != "cpu":
        return original(self, logits=logits, vocab_mask=vocab_mask)
    return apply_bitmask_on_cpu(logits, vocab_mask)


def _resolve_aux_hidden_state(
    original, *, config, server_args, model_config, spec_algorithm, is_draft_worker
):
    if not spec_algorithm.is_dflash() or is_draft_worker:
        return original(
            config=config,
            server_args=server_args,
            model_config=model_config,
            spec_algorithm=spec_algorithm,
            is_draft_worker=is_draft_worker,
        )
    from .validation import capture_layers

    layer_ids, num_draft_layers = capture_layers(server_args, model_config)
    config.dflash_use_aux_hidden_state = True
    config.dflash_draft_num_layers = num_draft_layers
    config.dflash_target_layer_ids = layer_ids


def _validate_request(original, req, enable_overlap: bool):
    """Our request check on servers running our DFLASH; the host's own check for the rest of its family."""
    if not serves_our_dflash():
        return original(req, enable_overlap)
    from .validation import unsupported_request_option

    return unsupported_request_option(req, enable_overlap)


def _is_disable_overlap_for_batch(original, self, batch, last_batch):
    """Also run a DFLASH decode batch with penalties after the previous result is processed.

    Penalties count every committed token (``worker.step_penalties`` reads ``req.output_ids``); under
    the overlap scheduler the previous step's tokens reach ``output_ids`` only after this batch
    would run. The host does the same for spec batches with grammars.
    """
    if original(self, batch, last_batch):
        return True
    if batch is None or not batch.spec_algorithm.is_dflash() or not batch.forward_mode.is_decode():
        return False
    if not getattr(self, "result_queue", None):
        return False
    from .worker import uses_penalties

    return any(uses_penalties(req.sampling_params) for req in batch.reqs)


def _capture_block_input(width: int, is_draft_worker: bool):
    """The block input CUDA graphs are captured with: no mask; FULL hidden capture for the target only."""
    from sglang.srt.model_executor.forward_batch_info import CaptureHiddenMode

    from .spec_inputs import DFlashBlockInput

    return DFlashBlockInput(
        None, None, width, CaptureHiddenMode.NULL if is_draft_worker else CaptureHiddenMode.FULL
    )


def _graph_spec_info(original, self, num_tokens):
    runner = self.model_runner
    if not runner.spec_algorithm.is_dflash():
        return original(self, num_tokens)
    return _capture_block_input(self.captured_req_width, runner.is_draft_worker)


def _dummy_verify(original, spec_algorithm, server_args, custom_mask, num_tokens_per_req, is_draft_worker):
    if not spec_algorithm.is_dflash():
        return original(spec_algorithm, server_args, custom_mask, num_tokens_per_req, is_draft_worker)
    return _capture_block_input(num_tokens_per_req, is_draft_worker)


OUR_HOOKS = (
    (HANDLE_SPECULATIVE, _handle_speculative_decoding, "AROUND"),
    (RESOLVE_AUX, _resolve_aux_hidden_state, "AROUND"),
    (VALIDATE_REQUEST, _validate_request, "AROUND"),
    (GRAPH_SPEC_INFO, _graph_spec_info, "AROUND"),
    (DUMMY_VERIFY, _dummy_verify, "AROUND"),
    (HANDLE_DFLASH, _handle_dflash, "AROUND"),
    (TORCH_NATIVE_EXTEND, _torch_native_forward_extend, "AROUND"),
    (XGRAMMAR_APPLY, _xgrammar_apply_vocab_mask, "AROUND"),
    (OVERLAP_FOR_BATCH, _is_disable_overlap_for_batch, "AROUND"),
)


def cpu_engine_hooks() -> list[tuple[str, object, str]]:
    """The few-row linear hooks, installed only where SGLang runs on the CPU
    (``SGLANG_USE_CPU_ENGINE=1``): GPU linears keep no extra Python frame."""
    from .cpu_backend import forget_packed_after, small_batch_linear_apply, small_batch_lm_head

    return [
        (UNQUANTIZED_LINEAR, small_batch_linear_apply, "AROUND"),
        (COMPUTE_LM_HEAD, small_batch_lm_head, "AROUND"),
        *((update, forget_packed_after, "AROUND") for update in WEIGHT_UPDATES),
    ]


def splitkv_setting() -> bool:
    """``SGLANG_DFLASH_SPLITKV``: on unless "0".

    SGLang's Triton backend runs the attention of our two block passes (the target's verify, the
    drafter's bidirectional pass) with its prefill kernel, one program per request and head that
    walks the whole cached prefix: a 16-token block over a short batch leaves most of a GPU idle
    (the first H100 run: a verify 2.4 ms against a 1.2 ms decode step).  On, both passes run
    :func:`~sglang_dflash.kernels.block_attention.block_attention_splitkv` in its place (the
    prefix split across programs; the backend's own switch for SGLang's causal-only split-KV
    verify kernel, which it enables on AMD's gfx95 alone, carries it).  On by default since the
    H200 run of 2026-12-04 measured it: greedy consistency 1.000 as plain decoding's, and less
    device time a step at concurrency 1, 16 and 64 (bench/README.md).  "0" keeps the prefill kernel.
    """
    from .worker import env_switch

    return env_switch(SPLITKV_ENV)


def _triton_backend_init(original, self, model_runner, *args, **kwargs):
    original(self, model_runner, *args, **kwargs)
    if model_runner.spec_algorithm.is_dflash() and splitkv_setting():
        import torch

        from ..kernels.block_attention import block_attention_splitkv

        # The backend calls it for TARGET_VERIFY passes only, in its prefill kernel's place, and
        # runs that kernel when it declines (a mask, a window, scaled K/V: it checks).
        self.use_verify_splitkv = True
        self.verify_splitkv_fwd = torch.compiler.disable(block_attention_splitkv)
        if not model_runner.is_draft_worker and names_a_verify_tree():
            # Armed before the target's verify graphs are captured, so that they read it.
            from ..kernels.block_attention import BlockMasks

            # "cuda" keys as the current device: the runner has set its own before building this.
            BlockMasks.arm(model_runner.device, int(model_runner.server_args.speculative_num_draft_tokens))


def names_a_verify_tree() -> bool:
    """Whether ``SGLANG_DFLASH_VERIFY_TREE`` names a tree file (what a GPU server verifies a tree
    by; ``auto`` verifies the chain there)."""
    from .tree_verify import names_tree_file, verify_tree_value

    return names_tree_file(verify_tree_value())


def gpu_engine_hooks() -> list[tuple[str, object, str]]:
    """The hooks installed only where SGLang runs on GPUs."""
    return [(TRITON_BACKEND_INIT, _triton_backend_init, "AROUND")]


def register_model() -> None:
    """Point SGLang's model registry's ``DFlashDraftModel`` and ``DFlash2DraftModel`` at our classes."""
    from sglang.srt.models.registry import ModelRegistry

    from ..config import DRAFT2_ARCHITECTURE, DRAFT_ARCHITECTURE
    from .dflash2_model import DFlash2DrafterForSGLang
    from .model import DFlashDrafterForSGLang

    ModelRegistry.models[DRAFT_ARCHITECTURE] = DFlashDrafterForSGLang
    ModelRegistry.models[DRAFT2_ARCHITECTURE] = DFlash2DrafterForSGLang


def _hook_installed(target: str, hook) -> bool:
    import pkgutil

    obj_path, attr = target.rsplit(".", 1)
    fn = getattr(pkgutil.resolve_name(obj_path), attr)
    while fn is not None:
        if (
            fn is hook
            or getattr(fn, "__closure__", None)
            and any(c.cell_contents is hook for c in fn.__closure__)
        ):
            return True
        fn = getattr(fn, "__wrapped__", None)
    return False


def register() -> None:
    """Entry point called by ``sglang.srt.plugins.load_plugins`` in every SGLang process."""
    try:
        from sglang.srt.plugins.hook_registry import HookRegistry, HookType
        from sglang.srt.utils import is_cpu

        impl = active_implementation()
        hooks = [(CREATE_WORKER, _create_worker, "AROUND")]
        if impl == OURS:
            hooks += list(OUR_HOOKS)
            hooks += cpu_engine_hooks() if is_cpu() else gpu_engine_hooks()
            register_model()
        for target, hook, kind in hooks:
            HookRegistry.register(target, hook, HookType[kind])
        HookRegistry.apply_hooks()
        missing = [target for target, hook, _ in hooks if not _hook_installed(target, hook)]
        if missing:
            raise RuntimeError(f"hooks not installed on {missing}")
    except DFlashPluginError:
        raise
    except Exception as e:
        raise DFlashPluginError(f"sglang-dflash could not install its SGLang hooks: {e!r}") from e
