"""DFlash2 config.json and checkpoint format: z-lab's layout loads, every bad field or tensor is named.

The z-lab-shaped files copy the published fixture's keys and tensor names (z-lab/dflash
tests/fixtures/dflash2-config.json and dflash2-safetensors-header.json: a 5-layer, hidden 6656
drafter) at small dimensions; the safetensors file is written from a header alone, zero-filled.
"""

import json
import os
import struct

import pytest
import torch

from sglang_dflash.checkpoint import (
    check_shapes,
    drafter_class,
    expected_shapes,
    load_drafter,
    read_shapes,
    save_drafter,
)
from sglang_dflash.config import DFlashConfig, DFlashConfigError
from sglang_dflash.dflash2 import DFlash2DraftModel, make_tiny_dflash2_drafter
from sglang_dflash.draft_model import DFlashDraftModel
from sglang_dflash.testing import make_tiny_target, tiny_target_config

# Small stand-ins for the fixture's sizes (hidden 6656, 5 layers, vocab 202048, rank 256, top-k 16).
HIDDEN, LAYERS, VOCAB, RANK, TOP_K, TAPS, GROUP = 64, 3, 96, 8, 4, 2, 16
HEADS, KV_HEADS, HEAD_DIM, INTERMEDIATE, TARGET_LAYERS = 4, 2, 16, 128, 12
TARGET_LAYER_IDS = [1, 4, 7, 10]


def zlab_config() -> dict:
    """z-lab's DFlash2 config.json, keys and layout as published (block_size inside dflash_config)."""
    return {
        "architectures": ["DFlash2DraftModel"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 90,
        "is_causal": False,
        "dflash_config": {
            "block_size": 16,
            "conv_group_size": GROUP,
            "conv_kernel_size": TAPS,
            "final_logit_softcapping": 20.0,
            "mask_token_id": 95,
            "output_multiplier": 0.19611613513818404,
            "selector_rank": RANK,
            "selector_top_k": TOP_K,
            "target_layer_ids": TARGET_LAYER_IDS,
        },
        "dtype": "bfloat16",
        "eos_token_id": 91,
        "head_dim": HEAD_DIM,
        "hidden_act": "silu",
        "hidden_size": HIDDEN,
        "initializer_range": 0.02,
        "intermediate_size": INTERMEDIATE,
        "layer_types": ["sliding_attention"] * LAYERS,
        "max_position_embeddings": 131072,
        "max_window_layers": LAYERS,
        "model_type": "qwen3",
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "num_key_value_heads": KV_HEADS,
        "num_target_layers": TARGET_LAYERS,
        "pad_token_id": 92,
        "rms_norm_eps": 1e-05,
        "rope_parameters": {"rope_theta": 500000.0, "rope_type": "default"},
        "sliding_window": 2048,
        "tie_word_embeddings": False,
        "transformers_version": "5.15.0",
        "use_cache": False,
        "use_sliding_window": True,
        "vocab_size": VOCAB,
    }


def zlab_header() -> dict[str, list[int]]:
    """Tensor name -> shape, z-lab's names (codebooks without ``.weight``), sorted as the fixture is."""
    shapes = {
        "candidate_selector.hidden_projection.weight": [RANK, HIDDEN],
        "candidate_selector.predecessor_codebook": [VOCAB, RANK],
        "candidate_selector.successor_codebook": [VOCAB, RANK],
        "fc.weight": [HIDDEN, len(TARGET_LAYER_IDS) * HIDDEN],
        "hidden_norm.weight": [HIDDEN],
        "norm.weight": [HIDDEN],
    }
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    for n in range(LAYERS):
        p = f"layers.{n}."
        for conv in ("attention_conv", "mlp_conv"):
            shapes[f"{p}{conv}.base_kernel"] = [2, TAPS, HIDDEN]
            shapes[f"{p}{conv}.kernel_projection.weight"] = [2 * TAPS * HIDDEN // GROUP, HIDDEN]
        shapes.update(
            {
                p + "input_layernorm.weight": [HIDDEN],
                p + "post_attention_layernorm.weight": [HIDDEN],
                p + "mlp.down_proj.weight": [HIDDEN, INTERMEDIATE],
                p + "mlp.gate_proj.weight": [INTERMEDIATE, HIDDEN],
                p + "mlp.up_proj.weight": [INTERMEDIATE, HIDDEN],
                p + "self_attn.k_norm.weight": [HEAD_DIM],
                p + "self_attn.k_proj.weight": [kv, HIDDEN],
                p + "self_attn.o_proj.weight": [HIDDEN, q],
                p + "self_attn.q_norm.weight": [HEAD_DIM],
                p + "self_attn.q_proj.weight": [q, HIDDEN],
                p + "self_attn.v_proj.weight": [kv, HIDDEN],
            }
        )
    return dict(sorted(shapes.items()))


def write_zlab_drafter(directory, config: dict | None = None, shapes: dict | None = None) -> str:
    """config.json plus a zero-filled BF16 safetensors file written from its header alone."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(zlab_config() if config is None else config, f)
    header, offset = {}, 0
    for name, shape in (zlab_header() if shapes is None else shapes).items():
        size = 2 * int(torch.tensor(shape).prod())
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    with open(os.path.join(directory, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + bytes(offset))
    return str(directory)


def test_zlab_shaped_config_parses_as_dflash2():
    config = DFlashConfig.from_dict(zlab_config())
    assert config.generation == 2 and config.is_dflash2
    assert (config.conv_kernel_size, config.conv_group_size, config.conv_num_groups) == (TAPS, GROUP, 4)
    assert (config.selector_rank, config.selector_top_k) == (RANK, TOP_K)
    assert config.block_size == 16 and config.mask_token_id == 95
    assert config.target_layer_ids == tuple(TARGET_LAYER_IDS)
    assert config.final_logit_softcapping == 20.0 and config.output_multiplier == pytest.approx(0.196116135)
    assert config.dtype == "bfloat16"
    # is_causal: false overrides the sliding layer type's default (causal); the window still applies.
    assert all(config.layer_is_sliding(i) and not config.layer_is_causal(i) for i in range(LAYERS))
    assert DFlashConfig.from_dict(config.to_dict()) == config


def test_zlab_shaped_header_matches_the_expected_tensors(tmp_path):
    config = DFlashConfig.from_dict(zlab_config())
    assert expected_shapes(config) == {k: tuple(v) for k, v in zlab_header().items()}
    directory = write_zlab_drafter(tmp_path / "zlab")
    check_shapes(config, read_shapes(directory))
    model = load_drafter(directory)
    assert isinstance(model, DFlash2DraftModel) and drafter_class(config) is DFlash2DraftModel
    assert model.candidate_selector.predecessor_codebook.shape == (VOCAB, RANK)
    assert model.layers[2].mlp_conv.base_kernel.shape == (2, TAPS, HIDDEN)


def test_save_and_load_round_trip(tmp_path):
    target = make_tiny_target("qwen3", seed=0)
    drafter = make_tiny_dflash2_drafter(target.config, seed=1, num_layers=2, final_logit_softcapping=None)
    drafter.config = drafter.config.replace(final_logit_softcapping=15.0, output_multiplier=0.5)
    save_drafter(drafter, str(tmp_path / "d2"))
    with open(tmp_path / "d2" / "config.json") as f:
        written = json.load(f)
    assert written["architectures"] == ["DFlash2DraftModel"]
    assert written["dflash_config"]["selector_top_k"] == drafter.config.selector_top_k
    assert written["dflash_config"]["final_logit_softcapping"] == 15.0
    loaded = load_drafter(str(tmp_path / "d2"), target_config=target.config)
    assert loaded.config == drafter.config.replace(dtype="float32")
    for (name, a), (_, b) in zip(drafter.state_dict().items(), loaded.state_dict().items()):
        assert torch.equal(a, b), name


BAD_CONFIGS = {
    "missing selector_rank": (
        lambda c: c["dflash_config"].pop("selector_rank"),
        "dflash_config.selector_rank is None; expected an integer >= 1 (required by DFlash2DraftModel)",
    ),
    "missing conv_kernel_size": (
        lambda c: c["dflash_config"].pop("conv_kernel_size"),
        "dflash_config.conv_kernel_size is None",
    ),
    "group size not dividing hidden": (
        lambda c: c["dflash_config"].update(conv_group_size=24),
        "dflash_config.conv_group_size is 24; expected a divisor of hidden_size=64",
    ),
    "top-k past the vocabulary": (
        lambda c: c["dflash_config"].update(selector_top_k=VOCAB + 1),
        f"dflash_config.selector_top_k is {VOCAB + 1}; expected at most vocab_size={VOCAB}",
    ),
    "zero rank": (lambda c: c["dflash_config"].update(selector_rank=0), "selector_rank is 0"),
    "negative softcap": (
        lambda c: c["dflash_config"].update(final_logit_softcapping=-1.0),
        "final_logit_softcapping is -1.0; expected a positive number, or null",
    ),
    "string multiplier": (
        lambda c: c["dflash_config"].update(output_multiplier="0.2"),
        "output_multiplier is '0.2'; expected a positive number",
    ),
    "selector fields under the DFlash architecture": (
        lambda c: c.update(architectures=["DFlashDraftModel"]),
        "dflash_config.conv_kernel_size is 2; expected absent in a DFlashDraftModel; a drafter with a "
        'candidate selector and convolutions declares architectures ["DFlash2DraftModel"]',
    ),
    "both architectures": (
        lambda c: c.update(architectures=["DFlashDraftModel", "DFlash2DraftModel"]),
        "architectures is ['DFlashDraftModel', 'DFlash2DraftModel']; expected a list containing one of",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_CONFIGS))
def test_bad_dflash2_config_fields_are_named(name):
    edit, message = BAD_CONFIGS[name]
    raw = zlab_config()
    edit(raw)
    with pytest.raises(DFlashConfigError) as info:
        DFlashConfig.from_dict(raw)
    assert str(info.value).startswith("DFlash drafter config.json: ")
    assert message in str(info.value)


def test_softcap_zero_means_none():
    raw = zlab_config()
    raw["dflash_config"]["final_logit_softcapping"] = 0
    assert DFlashConfig.from_dict(raw).final_logit_softcapping is None


BAD_TENSORS = {
    "missing codebook": (
        lambda s: s.pop("candidate_selector.successor_codebook"),
        "missing tensors is ['candidate_selector.successor_codebook']",
    ),
    "missing conv": (
        lambda s: s.pop("layers.1.mlp_conv.kernel_projection.weight"),
        "missing tensors is ['layers.1.mlp_conv.kernel_projection.weight']",
    ),
    "base kernel with three taps": (
        lambda s: s.update({"layers.0.attention_conv.base_kernel": [2, 3, HIDDEN]}),
        "layers.0.attention_conv.base_kernel shape is [2, 3, 64]; expected [2, 2, 64] from "
        "[2, dflash_config.conv_kernel_size, hidden_size]",
    ),
    "kernel projection of another group size": (
        lambda s: s.update({"layers.2.mlp_conv.kernel_projection.weight": [32, HIDDEN]}),
        "layers.2.mlp_conv.kernel_projection.weight shape is [32, 64]; expected [16, 64] from "
        "[2*conv_kernel_size*hidden_size/conv_group_size, hidden_size]",
    ),
    "codebook of another rank": (
        lambda s: s.update({"candidate_selector.predecessor_codebook": [VOCAB, 2 * RANK]}),
        "candidate_selector.predecessor_codebook shape is [96, 16]; expected [96, 8] from "
        "[vocab_size, dflash_config.selector_rank]",
    ),
    "hidden projection transposed": (
        lambda s: s.update({"candidate_selector.hidden_projection.weight": [HIDDEN, RANK]}),
        "candidate_selector.hidden_projection.weight shape is [64, 8]; expected [8, 64]",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_TENSORS))
def test_missing_or_misshaped_dflash2_tensors_are_named(tmp_path, name):
    edit, message = BAD_TENSORS[name]
    shapes = zlab_header()
    edit(shapes)
    directory = write_zlab_drafter(tmp_path / "bad", shapes=shapes)
    with pytest.raises(DFlashConfigError) as info:
        load_drafter(directory)
    assert str(info.value).startswith("DFlash drafter weights: ")
    assert message in str(info.value)


def test_dflash2_weights_under_a_dflash_config_get_a_hint(tmp_path):
    raw = zlab_config()
    raw["architectures"] = ["DFlashDraftModel"]
    for name in ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k"):
        raw["dflash_config"].pop(name)
    directory = write_zlab_drafter(tmp_path / "mixed", config=raw)
    with pytest.raises(
        DFlashConfigError,
        match=r'these are DFlash2 tensors: config.json must say architectures \["DFlash2DraftModel"\]',
    ):
        load_drafter(directory)


def test_dflash_weights_under_a_dflash2_config_are_missing_the_new_tensors(tmp_path):
    shapes = {k: v for k, v in zlab_header().items() if "_conv." not in k and "candidate_selector" not in k}
    directory = write_zlab_drafter(tmp_path / "old", shapes=shapes)
    with pytest.raises(DFlashConfigError, match="missing tensors is .*attention_conv.base_kernel"):
        load_drafter(directory)


def test_model_classes_refuse_the_other_generation():
    config = DFlashConfig.from_dict(zlab_config())
    with pytest.raises(ValueError, match="DFlashDraftModel: config generation is 2"):
        DFlashDraftModel(config)
    dflash = config.replace(
        architecture="DFlashDraftModel",
        conv_kernel_size=None,
        conv_group_size=None,
        selector_rank=None,
        selector_top_k=None,
    )
    with pytest.raises(ValueError, match="DFlash2DraftModel: config generation is 1"):
        DFlash2DraftModel(dflash)
    assert drafter_class(dflash) is DFlashDraftModel


def test_dflash2_config_fits_the_target_it_was_made_for():
    config = tiny_target_config("qwen3")
    drafter = make_tiny_dflash2_drafter(config, seed=0)
    drafter.config.validate_against_target(config)
    assert drafter.config.conv_group_size == 16 and drafter.config.hidden_size % 16 == 0
