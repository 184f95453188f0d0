"""Bad input at server start: the startup rows of README's "Bad input" table that other modules do
not already cover (see the table for those).  Each bad drafter or flag must stop ``ServerArgs``
before any weights load, with an error naming the flag or file, the value and what was expected.

All scenarios run in one fresh interpreter (hooks patch SGLang process-wide); each test asserts one
outcome of it.  The per-request rows run against a live server in ``test_soak.py``.
"""

import json
import os
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file
from test_sglang_plugin import run_python  # skips this module, as that one, without the sglang extra

from sglang_dflash.testing import save_tiny_pair


def copy_drafter(drafter: str, root: str, name: str, **config_changes) -> str:
    """A copy of ``drafter`` under ``root/name`` with top-level config.json keys replaced."""
    out = shutil.copytree(drafter, os.path.join(root, name))
    if config_changes:
        with open(os.path.join(out, "config.json")) as f:
            config = json.load(f)
        config.update(config_changes)
        with open(os.path.join(out, "config.json"), "w") as f:
            json.dump(config, f)
    return out


def edit_weights(directory: str, edit) -> str:
    path = os.path.join(directory, "model.safetensors")
    state = load_file(path)
    edit(state)
    save_file(state, path)
    return directory


def bad_drafters(target: str, drafter: str, root: str) -> dict[str, str]:
    """Scenario name -> a drafter directory that is wrong in exactly that way."""
    out = {"good": drafter, "target given as drafter": target}
    truncated = copy_drafter(drafter, root, "truncated")
    weights = os.path.join(truncated, "model.safetensors")
    with open(weights, "r+b") as f:
        f.truncate(os.path.getsize(weights) // 2)
    out["truncated weights"] = truncated
    no_weights = copy_drafter(drafter, root, "no-weights")
    os.remove(os.path.join(no_weights, "model.safetensors"))
    out["no weights file"] = no_weights
    no_config = copy_drafter(drafter, root, "no-config")
    os.remove(os.path.join(no_config, "config.json"))
    out["no config.json"] = no_config
    out["missing tensor"] = edit_weights(copy_drafter(drafter, root, "missing-tensor"),
                                         lambda s: s.pop("layers.1.mlp.down_proj.weight"))
    out["unexpected tensor"] = edit_weights(copy_drafter(drafter, root, "embeddings"),
                                            lambda s: s.update({"embed_tokens.weight": torch.zeros(64, 32)}))
    out["sliding draft layers"] = copy_drafter(drafter, root, "sliding", sliding_window=8,
                                               layer_types=["sliding_attention", "full_attention"])
    out["config.json not an object"] = copy_drafter(drafter, root, "list-config")
    with open(os.path.join(out["config.json not an object"], "config.json"), "w") as f:
        json.dump(["DFlashDraftModel"], f)
    return out


FLAG_SCENARIOS = {
    "--tp-size 2": {"tp_size": 2},
    "--speculative-dflash-block-size 8": {"speculative_dflash_block_size": 8},
    "--pp-size 2": {"pp_size": 2},
}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, str]:
    root = str(tmp_path_factory.mktemp("bad-input"))
    target, drafter = save_tiny_pair(root, "qwen3", block_size=4, num_layers=2)
    drafters = bad_drafters(target, drafter, root)
    return run_python(f"""
        load_plugins()
        from sglang.srt.server_args import ServerArgs
        target, drafter = {target!r}, {drafter!r}
        drafters, flags = json.loads({json.dumps(drafters)!r}), json.loads({json.dumps(FLAG_SCENARIOS)!r})
        out = {{}}

        def attempt(name, draft, **extra):
            try:
                ServerArgs(model_path=target, speculative_algorithm="DFLASH",
                           speculative_draft_model_path=draft, device="cuda", **extra)
                out[name] = "no error"
            except Exception as e:
                out[name] = f"{{type(e).__name__}}: {{e}}"

        for name, draft in drafters.items():
            attempt(name, draft)
        for name, extra in flags.items():
            attempt(name, drafter, **extra)
        print("RESULT " + json.dumps(out))
    """, timeout=400)


def test_the_good_pair_passes(outcomes):
    """The control: the same target and drafter, unchanged, start."""
    assert outcomes["good"] == "no error"


@pytest.mark.parametrize("scenario, needles", [
    ("truncated weights", ["weights file=", "model.safetensors", "expected a readable safetensors file"]),
    ("no weights file", ["draft model path=", "expected a directory with *.safetensors weights"]),
    ("no config.json", ["config.json", "expected"]),
    ("config.json not an object", ["config.json", "expected"]),
    ("target given as drafter", ["architectures", "expected"]),
    ("missing tensor", ["layers.1.mlp.down_proj.weight", "expected"]),
    ("unexpected tensor", ["embed_tokens.weight", "expected"]),
    ("sliding draft layers", ["layer_types=", "expected full_attention layers only"]),
])
def test_a_bad_drafter_stops_startup_naming_what_is_wrong(outcomes, scenario, needles):
    message = outcomes[scenario]
    assert message != "no error", scenario
    for needle in needles:
        assert needle in message, (scenario, message)


@pytest.mark.parametrize("scenario, needle", [
    ("--tp-size 2", "--tp-size=2"),
    ("--speculative-dflash-block-size 8", "--speculative-dflash-block-size=8"),
    ("--pp-size 2", "pp_size == 1"),
])
def test_a_flag_dflash_cannot_serve_with_stops_startup_naming_it(outcomes, scenario, needle):
    message = outcomes[scenario]
    assert message != "no error", scenario
    assert needle in message, (scenario, message)


def test_an_empty_prompt_is_refused_per_request_naming_the_prompt():
    """A DFLASH step drafts from the last prompt token: an empty prompt gets a 400, not a worker crash."""
    from types import SimpleNamespace

    from sglang_dflash.serving.validation import unsupported_request_option

    def request(prompt: list[int]) -> SimpleNamespace:
        return SimpleNamespace(origin_input_ids=prompt, return_logprob=False, return_hidden_states=False,
                               sampling_params=None, custom_logit_processor=None)

    message = unsupported_request_option(request([]), True)
    assert message is not None and "prompt (text / input_ids) is empty (0 tokens); expected" in message
    assert unsupported_request_option(request([5]), True) is None
