"""sglang-dflash: DFlash block-diffusion speculative decoding for SGLang.

The modules importable without SGLang (or a GPU) are the algorithm's reference:
:mod:`.config` (drafter config), :mod:`.checkpoint` (safetensors format), :mod:`.draft_model`
(pure PyTorch drafter), :mod:`.speculative` (block building, draft choice and acceptance; the
glossary of the words used throughout) and :mod:`.reference` (batched speculative generation
against a Hugging Face target).  Everything that imports SGLang
lives in :mod:`sglang_dflash.serving` and is never imported from here.
"""

from .checkpoint import load_drafter, save_drafter
from .config import DFlashConfig, DFlashConfigError, default_target_layer_ids
from .draft_model import DFlashDraftModel
from .reference import SpecResult, spec_generate
from .speculative import SamplingParams

__version__ = "0.1.0"

__all__ = [
    "DFlashConfig",
    "DFlashConfigError",
    "DFlashDraftModel",
    "SamplingParams",
    "SpecResult",
    "default_target_layer_ids",
    "load_drafter",
    "save_drafter",
    "spec_generate",
]
