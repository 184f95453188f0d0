"""Bad input at server start: the startup rows of docs/reliability.md's "Bad input" table that other
modules do not already cover (see the table for those).  Each bad drafter or flag must stop ``ServerArgs``
before any weights load, with an error naming the flag or file, the value and what was expected.

All scenarios run in one fresh interpreter (``tests/scenarios/plugin_host.py``: hooks patch SGLang
process-wide); each test asserts one outcome of it.  The per-request rows run against a live server
in ``test_soak.py``.
"""

import json
import os

import pytest
import scenarios
import torch
from drafter_edits import copy_drafter, edit_weights

pytest.importorskip("sglang", reason="needs the sglang extra installed")


def bad_drafters(target: str, drafter: str, root: str) -> dict[str, str]:
    """Scenario name -> a drafter directory that is wrong in exactly that way."""
    out = {"good": drafter, "target given as drafter": target}
    truncated = copy_drafter(drafter, os.path.join(root, "truncated"))
    weights = os.path.join(truncated, "model.safetensors")
    with open(weights, "r+b") as f:
        f.truncate(os.path.getsize(weights) // 2)
    out["truncated weights"] = truncated
    no_weights = copy_drafter(drafter, os.path.join(root, "no-weights"))
    os.remove(os.path.join(no_weights, "model.safetensors"))
    out["no weights file"] = no_weights
    no_config = copy_drafter(drafter, os.path.join(root, "no-config"))
    os.remove(os.path.join(no_config, "config.json"))
    out["no config.json"] = no_config
    out["missing tensor"] = edit_weights(
        copy_drafter(drafter, os.path.join(root, "missing-tensor")),
        lambda s: s.pop("layers.1.mlp.down_proj.weight"),
    )
    out["unexpected tensor"] = edit_weights(
        copy_drafter(drafter, os.path.join(root, "embeddings")),
        lambda s: s.update({"embed_tokens.weight": torch.zeros(64, 32)}),
    )
    out["config.json not an object"] = copy_drafter(drafter, os.path.join(root, "list-config"))
    with open(os.path.join(out["config.json not an object"], "config.json"), "w") as f:
        json.dump(["DFlashDraftModel"], f)
    return out


FLAG_SCENARIOS = {
    "--tp-size 3": {"tp_size": 3},
    "--enable-dp-attention": {"enable_dp_attention": True, "dp_size": 2, "tp_size": 2},
    "--speculative-dflash-block-size 8": {"speculative_dflash_block_size": 8},
    "--pp-size 2": {"pp_size": 2},
    "--grammar-backend outlines": {"grammar_backend": "outlines"},
    "--speculative-draft-window-size 64": {"speculative_draft_window_size": 64},
    "--disaggregation-mode decode": {"disaggregation_mode": "decode"},
    "--enable-deterministic-inference --speculative-adaptive": {
        "enable_deterministic_inference": True,
        "speculative_adaptive": True,
    },
}


@pytest.fixture(scope="module")
def outcomes(qwen3_pair, tmp_path_factory) -> dict:
    """Scenario name -> the ServerArgs' block size, or the error message."""
    target, drafter = qwen3_pair
    drafters = bad_drafters(target, drafter, str(tmp_path_factory.mktemp("bad-input")))
    runs = {name: (draft, {}) for name, draft in drafters.items()}
    runs.update({name: (drafter, extra) for name, extra in FLAG_SCENARIOS.items()})
    return scenarios.plugin_host(
        {
            name: (
                "server_args",
                {
                    "target": target,
                    "draft": draft,
                    "extra": extra,
                    "fields": ["speculative_num_draft_tokens"],
                },
            )
            for name, (draft, extra) in runs.items()
        }
    )


def test_the_good_pair_passes(outcomes):
    """The control: the same target and drafter, unchanged, start."""
    assert outcomes["good"] == {"speculative_num_draft_tokens": 4}


@pytest.mark.parametrize(
    "scenario, needles",
    [
        (
            "truncated weights",
            ["weights file is ", "model.safetensors", "expected a readable safetensors file"],
        ),
        ("no weights file", ["draft model path is ", "expected a directory with *.safetensors weights"]),
        ("no config.json", ["config.json", "expected"]),
        ("config.json not an object", ["config.json", "expected"]),
        ("target given as drafter", ["architectures", "expected"]),
        ("missing tensor", ["layers.1.mlp.down_proj.weight", "expected"]),
        ("unexpected tensor", ["embed_tokens.weight", "expected"]),
    ],
)
def test_a_bad_drafter_stops_startup_naming_what_is_wrong(outcomes, scenario, needles):
    message = outcomes[scenario]
    assert isinstance(message, str), (scenario, message)
    for needle in needles:
        assert needle in message, (scenario, message)


@pytest.mark.parametrize(
    "scenario, needle",
    [
        ("--tp-size 3", "drafter num_attention_heads is 4; expected a multiple of --tp-size=3"),
        ("--enable-dp-attention", "--enable-dp-attention is True"),
        ("--speculative-dflash-block-size 8", "--speculative-dflash-block-size is 8"),
        ("--pp-size 2", "pp_size == 1"),
        ("--grammar-backend outlines", "--grammar-backend is 'outlines'"),
        ("--speculative-draft-window-size 64", "--speculative-draft-window-size is 64"),
        ("--disaggregation-mode decode", "--disaggregation-mode is 'decode'"),
        ("--enable-deterministic-inference --speculative-adaptive", "--speculative-adaptive"),
    ],
)
def test_a_flag_dflash_cannot_serve_with_stops_startup_naming_it(outcomes, scenario, needle):
    message = outcomes[scenario]
    assert isinstance(message, str), (scenario, message)
    assert needle in message, (scenario, message)


def test_an_empty_prompt_is_refused_per_request_naming_the_prompt():
    """A DFLASH step drafts from the last prompt token: an empty prompt gets a 400, not a worker crash."""
    from types import SimpleNamespace

    from sglang_dflash.serving.validation import unsupported_request_option

    def request(prompt: list[int]) -> SimpleNamespace:
        return SimpleNamespace(
            origin_input_ids=prompt,
            return_logprob=False,
            return_hidden_states=False,
            sampling_params=None,
            custom_logit_processor=None,
        )

    message = unsupported_request_option(request([]), True)
    assert message is not None and "prompt (text / input_ids) is empty (0 tokens); expected" in message
    assert unsupported_request_option(request([5]), True) is None
