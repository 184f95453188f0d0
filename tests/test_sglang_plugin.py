"""The SGLang plugin on CPU with the real sglang 0.5.16: discovery, routing, the environment switch,
ServerArgs validation with our drafter, and every startup error of the worker.

Hooks patch SGLang process-wide, so each scenario runs in a fresh interpreter (with a timeout, as
SGLang processes must be).
"""

import json
import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points

import pytest

pytest.importorskip("sglang", reason="needs the sglang extra installed")

from sglang_dflash.testing import save_tiny_pair  # noqa: E402

PRELUDE = """
import json, logging, os, sys
logging.disable(logging.WARNING)
from sglang.srt.plugins import load_plugins
"""


def run_python(code: str, env_extra: dict | None = None, timeout: int = 240) -> dict:
    env = {**os.environ, **(env_extra or {})}
    proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if not lines:
        raise AssertionError(f"no result (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("pair")
    target, drafter = save_tiny_pair(str(root), "qwen3", block_size=4, num_layers=2)
    return target, drafter, root


def test_entry_point_is_declared():
    eps = {ep.name: ep.value for ep in entry_points(group="sglang.srt.plugins")}
    assert eps.get("dflash") == "sglang_dflash.serving.plugin:register"


def dflash_worker_code(target: str, drafter: str) -> str:
    """Load plugins, validate ServerArgs for DFLASH with the pair, ask for the worker class."""
    return f"""
        load_plugins()
        from sglang.srt.server_args import ServerArgs
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
        from sglang.srt.models.registry import ModelRegistry
        sa = ServerArgs(model_path={target!r}, speculative_algorithm="DFLASH",
                        speculative_draft_model_path={drafter!r}, device="cuda")
        worker = SpeculativeAlgorithm.DFLASH.create_worker(sa)
    """


def test_plugin_routes_dflash_to_our_worker_and_model(pair):
    target, drafter, _ = pair
    result = run_python(dflash_worker_code(target, drafter) + """
        from sglang.srt.managers import scheduler
        eagle = SpeculativeAlgorithm.EAGLE.create_worker(sa)
        from types import SimpleNamespace
        req = SimpleNamespace(return_logprob=True, sampling_params=None, return_hidden_states=False)
        print("RESULT " + json.dumps(dict(
            worker=worker.__module__ + "." + worker.__name__,
            eagle=eagle.__name__,
            model=ModelRegistry.models["DFlashDraftModel"].__module__,
            block=sa.speculative_num_draft_tokens, steps=sa.speculative_num_steps, topk=sa.speculative_eagle_topk,
            logprob_message=scheduler.validate_dflash_request(req, True),
        )))
    """)
    assert result["worker"] == "sglang_dflash.serving.worker.DFlashWorker"
    assert result["eagle"] == "EAGLEWorkerV2"  # other algorithms are untouched
    assert result["model"] == "sglang_dflash.serving.model"
    assert (result["block"], result["steps"], result["topk"]) == (4, 1, 1)
    assert "sglang-dflash" in result["logprob_message"]


def test_environment_switch_selects_the_builtin(pair):
    target, drafter, _ = pair
    result = run_python(dflash_worker_code(target, drafter) + """
        print("RESULT " + json.dumps(dict(worker=worker.__module__, model=ModelRegistry.models["DFlashDraftModel"].__module__)))
    """, {"SGLANG_DFLASH_IMPL": "builtin"})
    assert result["worker"].startswith("sglang.srt.speculative.") and "sglang_dflash" not in result["worker"]
    assert result["model"].startswith("sglang.srt.models.")


def test_a_bad_switch_value_fails_loudly():
    proc = subprocess.run([sys.executable, "-c", PRELUDE + "load_plugins()\nprint('survived')"], capture_output=True,
                          text=True, timeout=240, env={**os.environ, "SGLANG_DFLASH_IMPL": "ours-please"})
    assert proc.returncode != 0 and "survived" not in proc.stdout
    assert "SGLANG_DFLASH_IMPL='ours-please' is invalid" in proc.stderr


def _edit_config(src, dst, **changes):
    import shutil

    shutil.copytree(src, dst)
    with open(os.path.join(dst, "config.json")) as f:
        raw = json.load(f)
    for key, value in changes.items():
        if key == "dflash_config":
            raw["dflash_config"].update(value)
        else:
            raw[key] = value
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(raw, f)
    return dst


def test_every_startup_error_names_the_value(pair):
    """Item 6 of the worker issue: each bad drafter fails at ServerArgs time with a clear message."""
    import torch
    from safetensors.torch import load_file, save_file

    target, drafter, root = pair
    cases = {
        "missing": (str(root / "nope"), {}, "--speculative-draft-model-path="),
        "architecture": (_edit_config(drafter, root / "arch", architectures=["Qwen3ForCausalLM"]), {}, "architectures"),
        "hidden size": (_edit_config(drafter, root / "hidden", hidden_size=64, head_dim=16), {}, "hidden_size=64"),
        "vocab": (_edit_config(drafter, root / "vocab", vocab_size=96), {}, "vocab_size=96"),
        "layer ids": (_edit_config(drafter, root / "ids", num_target_layers=12, dflash_config={"target_layer_ids": [1, 9]}),
                      {}, "num_target_layers=12"),
        "mask token": (_edit_config(drafter, root / "mask", dflash_config={"mask_token_id": 64}), {}, "mask_token_id=64"),
        "block size": (_edit_config(drafter, root / "block", block_size=1), {}, "block_size=1"),
        "block mismatch": (drafter, {"speculative_num_draft_tokens": 8}, "--speculative-num-draft-tokens=8"),
    }
    fc_dir = _edit_config(drafter, root / "fc")
    state = load_file(os.path.join(fc_dir, "model.safetensors"))
    state["fc.weight"] = torch.zeros(32, 96)
    save_file(state, os.path.join(fc_dir, "model.safetensors"))
    cases["fc shape"] = (fc_dir, {}, "fc.weight shape=[32, 96]")
    unreadable = _edit_config(drafter, root / "unreadable")
    with open(os.path.join(unreadable, "config.json"), "w") as f:
        f.write("{")
    cases["unreadable config"] = (unreadable, {}, "config.json")

    result = run_python(f"""
        load_plugins()
        from sglang.srt.server_args import ServerArgs
        cases = {json.dumps({k: [str(v[0]), v[1]] for k, v in cases.items()})}
        out = {{}}
        for name, (path, extra) in cases.items():
            try:
                ServerArgs(model_path={target!r}, speculative_algorithm="DFLASH", speculative_draft_model_path=path,
                           device="cuda", **extra)
                out[name] = "no error"
            except Exception as e:
                out[name] = f"{{type(e).__name__}}: {{e}}"
        print("RESULT " + json.dumps(out))
    """)
    for name, (_, _, needle) in cases.items():
        assert needle in result[name], (name, result[name])
        assert "expected" in result[name], (name, result[name])


def test_target_family_without_hidden_state_capture_is_rejected(pair):
    """A Qwen2 target cannot capture layers for DFLASH in SGLang 0.5.16: say so before loading it."""
    _, drafter, _ = pair
    result = run_python(f"""
        from types import SimpleNamespace
        from transformers import Qwen2Config
        from sglang_dflash.serving.validation import capture_layers
        cfg = Qwen2Config(vocab_size=64, hidden_size=32, num_hidden_layers=6, num_attention_heads=4,
                          num_key_value_heads=2, intermediate_size=64, architectures=["Qwen2ForCausalLM"])
        model_config = SimpleNamespace(hf_config=cfg, hf_text_config=cfg)
        args = SimpleNamespace(speculative_draft_model_path={drafter!r})
        try:
            capture_layers(args, model_config)
            out = "no error"
        except Exception as e:
            out = str(e)
        cfg.architectures = ["LlamaForCausalLM"]
        print("RESULT " + json.dumps(dict(qwen2=out, llama=capture_layers(args, model_config))))
    """)
    assert "Qwen2ForCausalLM" in result["qwen2"] and "expected" in result["qwen2"]
    assert result["llama"] == [[1, 3], 2]
