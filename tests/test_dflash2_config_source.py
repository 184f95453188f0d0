"""Where a DFlash2 config.json field is read from: ``dflash_config`` first, the top level as a fallback.

The public readers agree on this (vLLM ``qwen3_dflash2.py`` reads ``config.dflash_config[...]`` only;
z-lab ``dflash/model.py`` ``_draft_value`` tries ``dflash_config`` before the top level), so a file
carrying a stale top-level copy drafts the same here as there.
"""

from test_dflash2_format import zlab_config

from sglang_dflash.config import DFlashConfig


def test_dflash_config_wins_over_a_top_level_copy():
    raw = zlab_config()
    raw.update(selector_top_k=2, conv_kernel_size=5, output_multiplier=3.0, final_logit_softcapping=7.0)
    config = DFlashConfig.from_dict(raw)
    inner = raw["dflash_config"]
    assert config.selector_top_k == inner["selector_top_k"] != 2
    assert config.conv_kernel_size == inner["conv_kernel_size"] != 5
    assert config.output_multiplier == inner["output_multiplier"] != 3.0
    assert config.final_logit_softcapping == inner["final_logit_softcapping"] != 7.0


def test_a_field_only_at_the_top_level_is_still_read():
    raw = zlab_config()
    raw["selector_rank"] = raw["dflash_config"].pop("selector_rank") + 1
    raw["input_embedding_scale"] = 2.0
    config = DFlashConfig.from_dict(raw)
    assert config.selector_rank == raw["selector_rank"]
    assert config.input_embedding_scale == 2.0
