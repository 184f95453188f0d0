"""Server flags our DFLASH worker cannot honour stop startup, naming the flag, the value and what works.

``check_server_args`` is what our ServerArgs hook runs for DFLASH (before the host's own speculative
checks); it is called here on every ServerArgs field at the host's default, so "unset" means what
SGLang 0.5.16 leaves a flag at when the user does not type it.
"""

import dataclasses
from types import SimpleNamespace

import pytest

pytest.importorskip("sglang", reason="needs the sglang extra installed")

from sglang_dflash.config import DFlashConfigError  # noqa: E402
from sglang_dflash.serving.validation import check_server_args  # noqa: E402


def startup_args(pair: tuple[str, str], **flags) -> SimpleNamespace:
    """ServerArgs' fields at SGLang's defaults for DFLASH with this target and drafter, ``flags`` set."""
    from sglang.srt.server_args import ServerArgs

    defaults = {
        field.name: field.default
        for field in dataclasses.fields(ServerArgs)
        if field.default is not dataclasses.MISSING
    }
    target, drafter = pair
    chosen = dict(model_path=target, speculative_algorithm="DFLASH", speculative_draft_model_path=drafter)
    return SimpleNamespace(**{**defaults, **chosen, **flags})


def refusal(pair: tuple[str, str], **flags) -> str:
    """The startup error these flags give."""
    with pytest.raises(DFlashConfigError) as info:
        check_server_args(startup_args(pair, **flags))
    return str(info.value)


@pytest.mark.parametrize("backend", [None, "xgrammar", "none"])
def test_xgrammar_or_no_grammar_backend_starts(qwen3_pair, backend):
    """Unset is SGLang's default, xgrammar; ``none`` makes SGLang itself refuse grammar requests."""
    assert check_server_args(startup_args(qwen3_pair, grammar_backend=backend)).block_size == 4


@pytest.mark.parametrize("backend", ["outlines", "llguidance"])
def test_another_grammar_backend_is_refused_naming_it(qwen3_pair, backend):
    message = refusal(qwen3_pair, grammar_backend=backend)
    assert f"--grammar-backend is {backend!r}; expected 'xgrammar'" in message, message
    assert "'none'" in message, message


def test_a_draft_window_is_refused_naming_the_flag(qwen3_pair):
    message = refusal(qwen3_pair, speculative_draft_window_size=64)
    assert "--speculative-draft-window-size is 64; expected unset" in message, message
    assert "DFLASH drafts attend over the whole context" in message, message


@pytest.mark.parametrize("mode", ["prefill", "decode"])
def test_prefill_decode_disaggregation_is_refused_naming_the_flag(qwen3_pair, mode):
    message = refusal(qwen3_pair, disaggregation_mode=mode)
    assert f"--disaggregation-mode is {mode!r}; expected 'null'" in message, message


def test_deterministic_inference_with_adaptive_width_is_refused_naming_both_flags(qwen3_pair):
    flags = dict(device="cpu", speculative_adaptive=True, enable_deterministic_inference=True)
    message = refusal(qwen3_pair, **flags)
    assert "--speculative-adaptive is True" in message, message
    assert "--enable-deterministic-inference" in message, message


def test_deterministic_inference_alone_starts(qwen3_pair):
    args = startup_args(qwen3_pair, enable_deterministic_inference=True)
    assert check_server_args(args).block_size == 4


def test_adaptive_width_alone_starts_on_cpu(qwen3_pair):
    args = startup_args(qwen3_pair, device="cpu", speculative_adaptive=True)
    check_server_args(args)
    assert args.speculative_adaptive is False  # taken from the host for our worker
