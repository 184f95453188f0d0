"""What our DFLASH startup accepts and refuses with the real sglang 0.5.16, before any weights load:
drafter dtype resolution, hub ids, hybrid targets, two-batch overlap, harmless checkpoint buffers.

All checks run in one fresh interpreter (``tests/scenarios/plugin_host.py``: hooks patch SGLang
process-wide; starting one costs tens of seconds on a small CPU); each test asserts one outcome of it.
"""

import os
import shutil

import pytest
import scenarios
import torch
from drafter_edits import copy_drafter, edit_weights

from sglang_dflash import save_drafter
from sglang_dflash.testing import make_tiny_drafter, make_tiny_target

pytest.importorskip("sglang", reason="needs the sglang extra installed")

HUB_ID = "tiny-org/tiny-dflash-b4"
MODELSCOPE_ID = "tiny-org/tiny-dflash-ms"
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
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=6,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        linear_num_value_heads=2,
        linear_num_key_heads=2,
        linear_key_head_dim=8,
        linear_value_head_dim=8,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=16,
        shared_expert_intermediate_size=16,
        max_position_embeddings=1024,
        architectures=["Qwen3NextForCausalLM"],
    )
    target, drafter = os.path.join(root, "next"), os.path.join(root, "next-drafter")
    cfg.save_pretrained(target)
    save_drafter(make_tiny_drafter(cfg, seed=1, num_layers=2, block_size=4), drafter)
    return target, drafter


@pytest.fixture(scope="module")
def paths(tmp_path_factory) -> dict[str, str]:
    """A bfloat16 target; its drafter saved in bfloat16, in float32, with rotary buffers, and in a
    local hub cache (``hf``); a Qwen3-Next target and its drafter."""
    root = str(tmp_path_factory.mktemp("serving"))
    target = make_tiny_target("qwen3", seed=0).to(torch.bfloat16)  # its config.json says bfloat16
    target.save_pretrained(os.path.join(root, "target"))
    drafter = make_tiny_drafter(target.config, seed=1, num_layers=2, block_size=4)
    paths = {"target": os.path.join(root, "target")}
    for name, dtype in (("bf16", torch.bfloat16), ("f32", torch.float32)):
        paths[name] = os.path.join(root, f"drafter-{name}")
        save_drafter(drafter, paths[name], dtype=dtype)
    buffers = {"layers.0.self_attn.rotary_emb.inv_freq": torch.ones(4), "rotary_emb.inv_freq": torch.ones(4)}
    paths["buffers"] = edit_weights(
        copy_drafter(paths["bf16"], os.path.join(root, "drafter-buffers")),
        lambda state: state.update(buffers),
    )
    paths["hf"] = os.path.join(root, "hf")
    paths["snapshot"] = write_hf_cache_entry(paths["hf"], HUB_ID, paths["bf16"])
    # ModelScope's cache keeps a model at <MODELSCOPE_CACHE>/models/<org>/<name>.
    paths["modelscope"] = os.path.join(root, "modelscope")
    shutil.copytree(paths["bf16"], os.path.join(paths["modelscope"], "models", MODELSCOPE_ID))
    paths["next"], paths["next_drafter"] = qwen3_next_pair(root)
    return paths


@pytest.fixture(scope="module")
def outcomes(paths) -> dict:
    target = paths["target"]

    def server_args(draft: str, **extra) -> tuple[str, dict]:
        return "server_args", {
            "target": target,
            "draft": draft,
            "extra": extra,
            "fields": ["speculative_draft_model_path", "speculative_num_draft_tokens"],
        }

    hybrid = {"target": paths["next"], "draft": paths["next_drafter"]}
    return scenarios.plugin_host(
        {
            "bf16 drafter, host auto": (
                "drafter_dtype_host_auto",
                {"target": target, "draft": paths["bf16"]},
            ),
            "bf16 drafter in the worker": (
                "drafter_dtype_in_worker",
                {"target": target, "draft": paths["bf16"]},
            ),
            "f32 drafter in the worker": (
                "drafter_dtype_in_worker",
                {"target": target, "draft": paths["f32"]},
            ),
            "hub id": server_args(HUB_ID),
            "modelscope id": (
                "server_args_from_modelscope",
                {"target": target, "draft": MODELSCOPE_ID, "cache": paths["modelscope"]},
            ),
            "unknown hub id": server_args("tiny-org/no-such-drafter"),
            "two-batch overlap": server_args(paths["bf16"], enable_two_batch_overlap=True),
            "harmless buffers": server_args(paths["buffers"]),
            # The host itself stops a Qwen3-Next ServerArgs on a CPU machine (mamba needs CUDA), so the
            # hybrid checks are called directly, as the ServerArgs hook and the model runner hook call them.
            "hybrid target at ServerArgs": ("check_server_args", hybrid),
            "hybrid target at model runner": ("capture_layers", hybrid),
        },
        env={"HF_HOME": paths["hf"], "HF_HUB_OFFLINE": "1"},
    )


def test_a_drafter_saved_in_bf16_resolves_to_bf16_in_sglang(outcomes):
    """The saved config.json names its dtype, so SGLang's own "auto" resolution picks it (not float16)."""
    assert outcomes["bf16 drafter, host auto"] == "torch.bfloat16"


def test_the_drafter_runs_in_the_target_dtype_whatever_it_was_saved_in(outcomes):
    for name in ("bf16", "f32"):
        result = outcomes[f"{name} drafter in the worker"]
        assert isinstance(result, dict), result
        assert result["target"] == result["worker"] == "torch.bfloat16", (name, result)
        assert result["target_args"] == ["auto", None], "the target's ServerArgs are left untouched"


def test_a_hub_id_in_the_local_hf_cache_validates_and_resolves_to_its_snapshot(outcomes, paths):
    result = outcomes["hub id"]
    assert isinstance(result, dict), result
    assert os.path.realpath(result["speculative_draft_model_path"]) == os.path.realpath(paths["snapshot"])


def test_a_modelscope_id_resolves_through_the_hosts_modelscope_cache(outcomes, paths):
    """With SGLANG_USE_MODELSCOPE=1 SGLang resolves the draft path before its speculative checks run,
    so ours validate the ModelScope snapshot (no Hugging Face lookup of the id)."""
    result = outcomes["modelscope id"]
    assert isinstance(result, dict), result
    expected = os.path.join(paths["modelscope"], "models", MODELSCOPE_ID)
    assert os.path.realpath(result["speculative_draft_model_path"]) == os.path.realpath(expected)
    assert result["speculative_num_draft_tokens"] == 4


def test_an_unknown_hub_id_gives_a_clear_error(outcomes):
    message = outcomes["unknown hub id"]
    assert "--speculative-draft-model-path is 'tiny-org/no-such-drafter'" in message, message
    assert "expected" in message, message


def test_two_batch_overlap_is_refused_at_startup(outcomes):
    message = outcomes["two-batch overlap"]
    assert "--enable-two-batch-overlap is True" in message and "expected False" in message, message


def test_harmless_buffers_in_a_checkpoint_pass_startup(outcomes):
    result = outcomes["harmless buffers"]
    assert isinstance(result, dict) and result["speculative_num_draft_tokens"] == 4, result


@pytest.mark.parametrize("where", ["ServerArgs", "model runner"])
def test_targets_with_recurrent_state_are_refused(outcomes, where):
    message = outcomes[f"hybrid target at {where}"]
    assert "Qwen3NextForCausalLM" in message and "expected an attention-only target" in message, message
