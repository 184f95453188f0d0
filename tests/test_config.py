"""DFlash drafter config: the published format parses, writes back, and every bad field fails clearly."""

import json
import os

import pytest

from sglang_dflash.config import DFlashConfig, DFlashConfigError, config_error, default_target_layer_ids
from sglang_dflash.testing import tiny_target_config


def published_config(**changes):
    """A config.json in the layout of z-lab/Qwen3-8B-DFlash-b16 (shrunk)."""
    raw = {
        "architectures": ["DFlashDraftModel"],
        "model_type": "qwen3",
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "intermediate_size": 64,
        "vocab_size": 64,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1000000,
        "rope_scaling": None,
        "max_position_embeddings": 1024,
        "attention_bias": False,
        "hidden_act": "silu",
        "block_size": 16,
        "num_target_layers": 6,
        "dflash_config": {"target_layer_ids": [1, 3], "mask_token_id": 63},
        "torch_dtype": "bfloat16",
    }
    raw.update(changes)
    return raw


def test_published_layout_parses():
    cfg = DFlashConfig.from_dict(published_config())
    assert cfg.block_size == 16 and cfg.num_target_layers == 6
    assert cfg.target_layer_ids == (1, 3) and cfg.mask_token_id == 63
    assert cfg.rope_parameters == {"rope_type": "default", "rope_theta": 1e6}
    assert cfg.layer_types == ("full_attention", "full_attention")
    assert not cfg.layer_is_causal(0)


def test_block_size_and_num_target_layers_inside_dflash_config():
    raw = published_config()
    del raw["block_size"], raw["num_target_layers"]
    raw["dflash_config"].update(block_size=8, num_target_layers=6)
    cfg = DFlashConfig.from_dict(raw)
    assert (cfg.block_size, cfg.num_target_layers) == (8, 6)


def test_transformers5_rope_parameters_parse():
    raw = published_config(rope_parameters={"rope_type": "default", "rope_theta": 5000.0})
    assert DFlashConfig.from_dict(raw).rope_parameters["rope_theta"] == 5000.0


def test_default_target_layers_spread_over_1_to_L_minus_3():
    assert default_target_layer_ids(36, 5) == [1, 9, 17, 25, 33]
    assert default_target_layer_ids(28, 1) == [14]
    raw = published_config()
    del raw["dflash_config"]["target_layer_ids"]
    assert DFlashConfig.from_dict(raw).target_layer_ids == (1, 3)  # 6 target layers, 2 draft layers


def test_round_trip_through_json(tmp_path):
    cfg = DFlashConfig.from_dict(published_config(my_extra_key=[1, 2]))
    cfg.save(tmp_path)
    again = DFlashConfig.from_pretrained(tmp_path)
    assert again == cfg
    written = json.loads((tmp_path / "config.json").read_text())
    assert written["architectures"] == ["DFlashDraftModel"]
    assert written["block_size"] == 16 and written["num_target_layers"] == 6
    assert written["dflash_config"] == {"target_layer_ids": [1, 3], "mask_token_id": 63}
    assert written["my_extra_key"] == [1, 2]


@pytest.mark.parametrize("key", ["torch_dtype", "dtype"])
def test_weights_dtype_is_read_from_either_spelling_and_written_in_both(tmp_path, key):
    raw = published_config()
    del raw["torch_dtype"]
    raw[key] = "bfloat16"
    cfg = DFlashConfig.from_dict(raw)
    assert cfg.dtype == "bfloat16"
    cfg.save(tmp_path)
    written = json.loads((tmp_path / "config.json").read_text())
    assert written["torch_dtype"] == written["dtype"] == "bfloat16"


def direct_fields(**changes):
    """Constructor arguments of a valid drafter config, as a caller building one in Python passes them."""
    fields = dict(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        intermediate_size=64,
        vocab_size=64,
        block_size=16,
        num_target_layers=6,
        target_layer_ids=[1, 3],
        mask_token_id=63,
    )
    fields.update(changes)
    return fields


def test_a_directly_built_config_equals_its_config_json_round_trip():
    cfg = DFlashConfig(**direct_fields())
    assert cfg.layer_types == ("full_attention", "full_attention") and cfg.target_layer_ids == (1, 3)
    assert DFlashConfig.from_dict(cfg.to_dict()) == cfg


@pytest.mark.parametrize(
    "changes,needle",
    [
        (dict(block_size=1), "config.json: block_size is 1; expected an integer >= 2"),
        (dict(target_layer_ids=[3, 1]), "dflash_config.target_layer_ids is [3, 1]; expected distinct"),
        (dict(mask_token_id=64), "dflash_config.mask_token_id is 64; expected an integer in [0, 64)"),
        (dict(head_dim=7), "head_dim is 7; expected an even number"),
        (dict(dtype="int8"), "dtype is 'int8'; expected one of"),
    ],
)
def test_direct_construction_with_an_invalid_field_raises_naming_it(changes, needle):
    with pytest.raises(DFlashConfigError) as err:
        DFlashConfig(**direct_fields(**changes))
    assert needle in str(err.value)


def test_replace_returns_a_copy_with_only_the_change():
    cfg = DFlashConfig.from_dict(published_config())
    assert cfg.replace(block_size=4) == DFlashConfig.from_dict(published_config(block_size=4))
    assert cfg.block_size == 16


def test_replace_with_an_invalid_value_raises_naming_the_field():
    cfg = DFlashConfig.from_dict(published_config())
    with pytest.raises(DFlashConfigError, match="block_size is 1; expected an integer >= 2"):
        cfg.replace(block_size=1)


def test_a_server_flag_error_names_the_flag_the_user_typed():
    message = str(config_error("--speculative-num-draft-tokens", 20, "the drafter's block_size=16"))
    assert message == (
        "sglang-dflash: --speculative-num-draft-tokens is 20; expected the drafter's block_size=16"
    )


def test_validates_against_a_matching_target():
    DFlashConfig.from_dict(published_config()).validate_against_target(tiny_target_config("qwen3"))


def dflash_fields(**changes):
    """A ``dflash_config`` override: the published one with ``changes``."""
    return {"dflash_config": {"target_layer_ids": [1, 3], "mask_token_id": 63, **changes}}


BAD_CONFIGS = {
    "wrong architecture": (dict(architectures=["Qwen3ForCausalLM"]), "architectures"),
    "block size below 2": (dict(block_size=1), "block_size is 1"),
    "layer id out of range": (dflash_fields(target_layer_ids=[1, 5]), "target_layer_ids is [1, 5]"),
    "negative layer id": (dflash_fields(target_layer_ids=[-1, 2]), "target_layer_ids is [-1, 2]"),
    "empty layer ids": (dflash_fields(target_layer_ids=[]), "target_layer_ids is []"),
    "mask token outside vocab": (dflash_fields(mask_token_id=64), "mask_token_id is 64"),
    "mask token missing": (dict(dflash_config={"target_layer_ids": [1, 3]}), "mask_token_id is None"),
    "heads not divisible": (dict(num_key_value_heads=3), "num_key_value_heads is 3"),
    "hidden size missing": (dict(hidden_size=None), "hidden_size is None"),
    "unsupported rope": (dict(rope_scaling={"rope_type": "yarn", "factor": 4.0}), "rope_type is 'yarn'"),
    "unsupported activation": (dict(hidden_act="gelu"), "hidden_act is 'gelu'"),
    "layer types length": (dict(layer_types=["full_attention"]), "layer_types"),
    "sliding without window": (dict(layer_types=["sliding_attention", "full_attention"]), "sliding_window"),
    "unsupported weights dtype": (dict(torch_dtype="int8"), "torch_dtype is 'int8'"),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_config_raises_clear_error(case):
    changes, needle = BAD_CONFIGS[case]
    with pytest.raises(DFlashConfigError) as err:
        DFlashConfig.from_dict(published_config(**changes))
    assert str(err.value).startswith("DFlash drafter config.json: ") and needle in str(err.value)
    assert "; expected " in str(err.value)


BAD_TARGETS = {
    "hidden size mismatch": (dict(hidden_size=64, head_dim=16), "hidden_size is 32", "hidden_size=64"),
    "target too shallow for layer ids": (
        dict(num_hidden_layers=4),
        "num_target_layers is 6",
        "num_hidden_layers=4",
    ),
    "vocab mismatch": (dict(vocab_size=128), "vocab_size is 64", "vocab_size=128"),
}


@pytest.mark.parametrize("case", sorted(BAD_TARGETS))
def test_mismatched_target_raises_clear_error(case):
    target_changes, needle, expected = BAD_TARGETS[case]
    cfg = DFlashConfig.from_dict(published_config())
    with pytest.raises(DFlashConfigError) as err:
        cfg.validate_against_target(tiny_target_config("qwen3", **target_changes))
    assert needle in str(err.value) and expected in str(err.value)


def test_layer_ids_beyond_target_depth_are_named():
    raw = published_config(num_target_layers=12, **dflash_fields(target_layer_ids=[1, 9]))
    cfg = DFlashConfig.from_dict(raw)
    with pytest.raises(DFlashConfigError, match=r"num_target_layers is 12"):
        cfg.validate_against_target(tiny_target_config("qwen3"))


def test_missing_directory_and_unreadable_json(tmp_path):
    with pytest.raises(DFlashConfigError, match="draft model path"):
        DFlashConfig.from_pretrained(tmp_path / "nope")
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(DFlashConfigError, match="config.json"):
        DFlashConfig.from_pretrained(tmp_path)
    assert os.path.exists(tmp_path / "config.json")  # nothing is lost


def test_unsorted_layer_ids_are_rejected():
    with pytest.raises(DFlashConfigError, match=r"target_layer_ids is \[3, 1\].*ascending"):
        DFlashConfig.from_dict(published_config(**dflash_fields(target_layer_ids=[3, 1])))
