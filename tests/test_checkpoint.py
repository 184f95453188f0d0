"""Drafter checkpoints: save -> load gives identical outputs; bad weights fail clearly."""

import json
import logging
import os

import pytest
import torch
from safetensors.torch import load_file, save_file

from sglang_dflash import SamplingParams, load_drafter, save_drafter, spec_generate
from sglang_dflash.checkpoint import INDEX_FILE
from sglang_dflash.config import DFlashConfigError
from sglang_dflash.testing import make_tiny_drafter, make_tiny_target


@pytest.fixture(scope="module")
def target():
    return make_tiny_target("qwen3", seed=3)


def prompts():
    return [[3, 4, 5, 6], [9, 8], [1, 2, 3, 4, 5, 6, 7, 8, 9]]


def test_round_trip_gives_identical_generation(tmp_path, target):
    drafter = make_tiny_drafter(target.config, seed=4, num_layers=2, block_size=4)
    save_drafter(drafter, str(tmp_path))
    loaded = load_drafter(str(tmp_path), target_config=target.config)
    for name, tensor in drafter.state_dict().items():
        assert torch.equal(tensor, loaded.state_dict()[name]), name
    params = SamplingParams(max_new_tokens=24)
    expected = spec_generate(target, drafter, prompts(), params).token_ids
    assert spec_generate(target, loaded, prompts(), params).token_ids == expected
    with open(tmp_path / "config.json") as f:
        assert json.load(f)["architectures"] == ["DFlashDraftModel"]
    names = set(load_file(tmp_path / "model.safetensors"))
    assert "fc.weight" in names and "hidden_norm.weight" in names and "layers.1.mlp.down_proj.weight" in names
    assert not any("embed" in n or "lm_head" in n for n in names)


def test_sharded_round_trip(tmp_path, target):
    drafter = make_tiny_drafter(target.config, seed=5, num_layers=2)
    files = save_drafter(drafter, str(tmp_path), max_shard_bytes=20_000)
    shards = [f for f in files if f.endswith(".safetensors")]
    assert len(shards) > 1 and all(os.path.getsize(f) <= 20_000 + 4096 for f in shards)
    assert os.path.exists(tmp_path / INDEX_FILE)
    loaded = load_drafter(str(tmp_path))
    for name, tensor in drafter.state_dict().items():
        assert torch.equal(tensor, loaded.state_dict()[name]), name


def test_bf16_save_and_model_prefix_are_accepted(tmp_path, target):
    drafter = make_tiny_drafter(target.config, seed=6)
    save_drafter(drafter, str(tmp_path), dtype=torch.bfloat16)
    state = load_file(tmp_path / "model.safetensors")
    assert all(t.dtype == torch.bfloat16 for t in state.values())
    save_file({"model." + k: v for k, v in state.items()}, tmp_path / "model.safetensors")
    loaded = load_drafter(str(tmp_path))
    assert torch.equal(loaded.fc.weight, drafter.fc.weight.to(torch.bfloat16).float())


def _corrupt(tmp_path, target, edit):
    save_drafter(make_tiny_drafter(target.config, seed=7), str(tmp_path))
    state = load_file(tmp_path / "model.safetensors")
    edit(state)
    save_file(state, tmp_path / "model.safetensors")


def test_fc_shape_error_says_what_is_expected(tmp_path, target):
    _corrupt(tmp_path, target, lambda s: s.__setitem__("fc.weight", torch.zeros(32, 96)))
    with pytest.raises(DFlashConfigError) as err:
        load_drafter(str(tmp_path))
    assert "DFlash drafter weights: fc.weight shape is [32, 96]; expected [32, 32]" in str(err.value)
    assert "K*hidden_size" in str(err.value)


def test_missing_tensor_is_named(tmp_path, target):
    _corrupt(tmp_path, target, lambda s: s.pop("hidden_norm.weight"))
    with pytest.raises(DFlashConfigError, match="hidden_norm.weight"):
        load_drafter(str(tmp_path))


def test_unexpected_embeddings_are_rejected(tmp_path, target):
    _corrupt(tmp_path, target, lambda s: s.__setitem__("embed_tokens.weight", torch.zeros(64, 32)))
    with pytest.raises(DFlashConfigError, match="embed_tokens.weight"):
        load_drafter(str(tmp_path))


def test_unreadable_weights_and_missing_weights(tmp_path, target):
    save_drafter(make_tiny_drafter(target.config, seed=8), str(tmp_path))
    (tmp_path / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(DFlashConfigError, match="safetensors"):
        load_drafter(str(tmp_path))
    os.remove(tmp_path / "model.safetensors")
    with pytest.raises(DFlashConfigError, match="safetensors"):
        load_drafter(str(tmp_path))


def test_load_validates_against_target(tmp_path, target):
    save_drafter(make_tiny_drafter(target.config, seed=9), str(tmp_path))
    other = make_tiny_target("qwen3", hidden_size=48, head_dim=12).config
    with pytest.raises(DFlashConfigError, match="hidden_size is 32; expected the target's hidden_size=48"):
        load_drafter(str(tmp_path), target_config=other)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_saved_config_names_the_dtype_the_weights_are_saved_in(tmp_path, target, dtype):
    save_drafter(make_tiny_drafter(target.config, seed=6), str(tmp_path), dtype=dtype)
    written = json.loads((tmp_path / "config.json").read_text())
    assert written["torch_dtype"] == written["dtype"] == str(dtype).removeprefix("torch.")
    assert load_file(tmp_path / "model.safetensors")["fc.weight"].dtype == dtype


def test_rope_buffers_are_ignored_and_named_in_the_log(tmp_path, target, caplog):
    buffers = {"rotary_emb.inv_freq": torch.ones(4), "layers.0.self_attn.rotary_emb.inv_freq": torch.ones(4)}
    _corrupt(tmp_path, target, lambda s: s.update(buffers))
    with caplog.at_level(logging.INFO, logger="sglang_dflash.checkpoint"):
        loaded = load_drafter(str(tmp_path))
    assert all(name in caplog.text for name in buffers)
    assert torch.equal(loaded.fc.weight, make_tiny_drafter(target.config, seed=7).fc.weight)


def test_average_drafters_writes_the_elementwise_mean_in_the_first_drafters_dtype(tmp_path, target):
    from sglang_dflash.checkpoint import average_drafters

    drafters = [make_tiny_drafter(target.config, seed=seed, num_layers=2) for seed in (11, 12, 13)]
    dirs = [str(tmp_path / f"d{n}") for n in range(3)]
    for drafter, directory in zip(drafters, dirs):
        save_drafter(drafter, directory)
    average_drafters(dirs, str(tmp_path / "mean"))
    mean = load_drafter(str(tmp_path / "mean"), target_config=target.config)
    for name, tensor in mean.state_dict().items():
        expected = sum(d.state_dict()[name] for d in drafters) / 3
        torch.testing.assert_close(tensor, expected, rtol=1e-6, atol=1e-7, msg=name)
        assert not torch.equal(tensor, drafters[0].state_dict()[name]) or name.endswith("norm.weight")

    save_drafter(drafters[0], dirs[0], dtype=torch.bfloat16)  # the first drafter's dtype is kept
    average_drafters(dirs[:2], str(tmp_path / "mean16"))
    assert all(
        t.dtype == torch.bfloat16 for t in load_file(tmp_path / "mean16" / "model.safetensors").values()
    )
    with open(tmp_path / "mean16" / "config.json") as f:
        assert json.load(f)["dtype"] == "bfloat16"


def test_average_drafters_refuses_one_drafter_and_different_configs(tmp_path, target):
    from sglang_dflash.checkpoint import average_drafters

    save_drafter(make_tiny_drafter(target.config, seed=14, num_layers=2), str(tmp_path / "two"))
    save_drafter(make_tiny_drafter(target.config, seed=15, num_layers=1), str(tmp_path / "one"))
    with pytest.raises(DFlashConfigError, match="drafters is .*expected at least two drafter directories"):
        average_drafters([str(tmp_path / "two")], str(tmp_path / "mean"))
    with pytest.raises(DFlashConfigError, match="one/config.json'; expected the same drafter config as"):
        average_drafters([str(tmp_path / "two"), str(tmp_path / "one")], str(tmp_path / "mean"))
    assert not os.path.exists(tmp_path / "mean")  # nothing written before every check passed


def test_average_drafters_command(tmp_path, target):
    from sglang_dflash.cli import main

    dirs = [str(tmp_path / f"d{n}") for n in range(2)]
    for seed, directory in zip((16, 17), dirs):
        save_drafter(make_tiny_drafter(target.config, seed=seed), directory)
    assert main(["average-drafters", *dirs, "--out", str(tmp_path / "mean")]) == 0
    a, b, mean = (load_file(os.path.join(d, "model.safetensors")) for d in (*dirs, tmp_path / "mean"))
    torch.testing.assert_close(mean["fc.weight"], (a["fc.weight"] + b["fc.weight"]) / 2)
