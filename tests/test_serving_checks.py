"""What our DFLASH startup accepts and refuses with the real sglang 0.5.16, before any weights load:
drafter dtype resolution, hub ids, hybrid targets, two-batch overlap, harmless checkpoint buffers.

All scenarios run in one fresh interpreter (hooks patch SGLang process-wide; starting one costs
tens of seconds on a small CPU); each test asserts one outcome of it.
"""

import json
import os
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file
from test_sglang_plugin import run_python  # skips this module, as that one, without the sglang extra

from sglang_dflash import save_drafter
from sglang_dflash.testing import make_tiny_drafter, make_tiny_target

HUB_ID = "tiny-org/tiny-dflash-b4"
SNAPSHOT = "0123456789abcdef0123456789abcdef01234567"


def write_hf_cache_entry(hf_home: str, repo_id: str, source: str) -> str:
    """Lay ``source`` out as the Hugging Face hub cache does for ``repo_id`` at revision main."""
    repo = os.path.join(hf_home, "hub", "models--" + repo_id.replace("/", "--"))
    snapshot = os.path.join(repo, "snapshots", SNAPSHOT)
    shutil.copytree(source, snapshot)
    os.makedirs(os.path.join(repo, "refs"))
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write(SNAPSHOT)
    return snapshot


def qwen3_next_pair(root: str) -> tuple[str, str]:
    """A tiny Qwen3-Next target config (linear attention + full attention layers) and a drafter for it."""
    from transformers import Qwen3NextConfig

    cfg = Qwen3NextConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=6, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, linear_num_value_heads=2, linear_num_key_heads=2,
        linear_key_head_dim=8, linear_value_head_dim=8, num_experts=4, num_experts_per_tok=2,
        moe_intermediate_size=16, shared_expert_intermediate_size=16, max_position_embeddings=1024,
        architectures=["Qwen3NextForCausalLM"])
    target, drafter = os.path.join(root, "next"), os.path.join(root, "next-drafter")
    cfg.save_pretrained(target)
    save_drafter(make_tiny_drafter(cfg, seed=1, num_layers=2, block_size=4), drafter)
    return target, drafter


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("serving"))
    target = make_tiny_target("qwen3", seed=0).to(torch.bfloat16)  # its config.json says bfloat16
    target.save_pretrained(os.path.join(root, "target"))
    drafter = make_tiny_drafter(target.config, seed=1, num_layers=2, block_size=4)
    paths = {"target": os.path.join(root, "target")}
    for name, dtype in (("bf16", torch.bfloat16), ("f32", torch.float32)):
        paths[name] = os.path.join(root, f"drafter-{name}")
        save_drafter(drafter, paths[name], dtype=dtype)
    paths["buffers"] = shutil.copytree(paths["bf16"], os.path.join(root, "drafter-buffers"))
    weights = os.path.join(paths["buffers"], "model.safetensors")
    state = load_file(weights)
    state["layers.0.self_attn.rotary_emb.inv_freq"] = torch.ones(4)
    state["rotary_emb.inv_freq"] = torch.ones(4)
    save_file(state, weights)
    hf_home = os.path.join(root, "hf")
    paths["snapshot"] = write_hf_cache_entry(hf_home, HUB_ID, paths["bf16"])
    paths["next"], paths["next_drafter"] = qwen3_next_pair(root)

    return run_python(f"""
        load_plugins()
        from types import SimpleNamespace
        from sglang.srt.configs.model_config import ModelConfig
        from sglang.srt.server_args import ServerArgs
        from sglang.srt.utils.hf_transformers_utils import get_config
        from sglang_dflash.serving.validation import capture_layers, check_server_args
        paths = {json.dumps(paths)}
        out = {{}}

        def attempt(name, fn):
            try:
                out[name] = fn()
            except Exception as e:
                out[name] = f"{{type(e).__name__}}: {{e}}"

        def dflash_args(draft, **extra):
            return ServerArgs(model_path=paths["target"], speculative_algorithm="DFLASH",
                              speculative_draft_model_path=draft, device="cuda", **extra)

        def host_auto_dtype(draft):
            args = dflash_args(draft)
            return str(ModelConfig.from_server_args(args, model_path=draft, is_draft_model=True).dtype)

        def worker_dtypes(draft):
            from sglang_dflash.serving.worker import draft_server_args

            args = dflash_args(draft)
            target = ModelConfig.from_server_args(args)
            ours = ModelConfig.from_server_args(draft_server_args(args, target.context_len, target.dtype),
                                                model_path=draft, is_draft_model=True)
            return dict(target=str(target.dtype), worker=str(ours.dtype),
                        target_args=[args.dtype, args.context_length])

        attempt("bf16 drafter, host auto", lambda: host_auto_dtype(paths["bf16"]))
        for name in ("bf16", "f32"):
            attempt(f"{{name}} drafter in the worker", lambda: worker_dtypes(paths[name]))
        attempt("hub id", lambda: [dflash_args(HUB_ID).speculative_draft_model_path, paths["snapshot"]])
        attempt("unknown hub id", lambda: dflash_args("tiny-org/no-such-drafter").model_path)
        attempt("two-batch overlap", lambda: dflash_args(paths["bf16"], enable_two_batch_overlap=True).dtype)
        attempt("harmless buffers", lambda: dflash_args(paths["buffers"]).speculative_num_draft_tokens)
        # The host itself stops a Qwen3-Next ServerArgs on a CPU machine (mamba needs CUDA), so the
        # hybrid check is called directly, as the ServerArgs hook and the model runner hook call it.
        next_args = SimpleNamespace(
            model_path=paths["next"], speculative_draft_model_path=paths["next_drafter"],
            trust_remote_code=False, tp_size=1, speculative_dflash_block_size=None,
            speculative_num_draft_tokens=None)
        attempt("hybrid target at ServerArgs", lambda: check_server_args(next_args).block_size)
        next_config = get_config(paths["next"], trust_remote_code=False)
        model_config = SimpleNamespace(hf_config=next_config, hf_text_config=next_config)
        attempt("hybrid target at model runner", lambda: capture_layers(next_args, model_config))
        print("RESULT " + json.dumps(out))
    """.replace("HUB_ID", repr(HUB_ID)), {"HF_HOME": hf_home, "HF_HUB_OFFLINE": "1"}, timeout=400)


def test_a_drafter_saved_in_bf16_resolves_to_bf16_in_sglang(outcomes):
    """The saved config.json names its dtype, so SGLang's own "auto" resolution picks it (not float16)."""
    assert outcomes["bf16 drafter, host auto"] == "torch.bfloat16"


def test_the_drafter_runs_in_the_target_dtype_whatever_it_was_saved_in(outcomes):
    for name in ("bf16", "f32"):
        result = outcomes[f"{name} drafter in the worker"]
        assert isinstance(result, dict), result
        assert result["target"] == result["worker"] == "torch.bfloat16", (name, result)
        assert result["target_args"] == ["auto", None], "the target's ServerArgs are left untouched"


def test_a_hub_id_in_the_local_hf_cache_validates_and_resolves_to_its_snapshot(outcomes):
    resolved, snapshot = outcomes["hub id"]
    assert os.path.realpath(resolved) == os.path.realpath(snapshot)


def test_an_unknown_hub_id_gives_a_clear_error(outcomes):
    message = outcomes["unknown hub id"]
    assert "--speculative-draft-model-path='tiny-org/no-such-drafter'" in message, message
    assert "expected" in message, message


def test_two_batch_overlap_is_refused_at_startup(outcomes):
    message = outcomes["two-batch overlap"]
    assert "--enable-two-batch-overlap=True" in message and "expected False" in message, message


def test_harmless_buffers_in_a_checkpoint_pass_startup(outcomes):
    assert outcomes["harmless buffers"] == 4, outcomes["harmless buffers"]


@pytest.mark.parametrize("where", ["ServerArgs", "model runner"])
def test_targets_with_recurrent_state_are_refused(outcomes, where):
    message = outcomes[f"hybrid target at {where}"]
    assert "Qwen3NextForCausalLM" in message and "expected an attention-only target" in message, message
