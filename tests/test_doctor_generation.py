"""``sglang-dflash doctor`` names the drafter's generation: DFlash or DFlash2.

The checks run in-process through :func:`~sglang_dflash.doctor.pair_verdicts` (what ``doctor`` prints
per check) over a tiny Qwen3 target and a random drafter of each generation saved as a user has them.
"""

import pytest

from sglang_dflash.checkpoint import save_drafter
from sglang_dflash.dflash2 import make_tiny_dflash2_drafter
from sglang_dflash.doctor import Verdict, pair_verdicts
from sglang_dflash.testing import make_tiny_drafter, make_tiny_target

pytest.importorskip("sglang", reason="needs the sglang extra installed")

# Distinct from dflash2_config_for_target's defaults, so the report is seen to read the file.
TAPS, TOP_K, RANK = 3, 5, 6


@pytest.fixture(scope="module")
def pair_dirs(tmp_path_factory) -> dict[str, str]:
    """Paths of a tiny Qwen3 target and of a DFlash and a DFlash2 drafter for it."""
    root = tmp_path_factory.mktemp("generation")
    target = make_tiny_target("qwen3", seed=0)
    paths = {name: str(root / name) for name in ("target", "dflash", "dflash2")}
    target.save_pretrained(paths["target"])
    save_drafter(make_tiny_drafter(target.config, seed=1, block_size=4), paths["dflash"])
    dflash2 = make_tiny_dflash2_drafter(
        target.config, seed=2, block_size=4, conv_kernel_size=TAPS, selector_top_k=TOP_K, selector_rank=RANK
    )
    save_drafter(dflash2, paths["dflash2"])
    return paths


def verdicts(pair_dirs: dict[str, str], drafter: str) -> dict[str, Verdict]:
    return {v.name: v for v in pair_verdicts(pair_dirs["target"], pair_dirs[drafter])}


def test_a_dflash_drafter_is_named_first_generation(pair_dirs):
    verdict = verdicts(pair_dirs, "dflash")["drafter config.json"]
    assert verdict.ok, verdict.detail
    assert verdict.detail.startswith("DFlash (DFlashDraftModel), block_size=4, "), verdict.detail
    assert "DFlash2" not in verdict.detail


def test_a_dflash2_drafter_is_named_with_its_convolutions_and_selector(pair_dirs):
    found = verdicts(pair_dirs, "dflash2")
    verdict = found["drafter config.json"]
    assert verdict.ok, verdict.detail
    assert verdict.detail.startswith(
        f"DFlash2 (DFlash2DraftModel: convolutions of {TAPS} taps, candidate selector top-{TOP_K} "
        f"rank {RANK}), block_size=4, "
    ), verdict.detail
    # The rest of the startup checks accept a DFlash2 drafter too (weights: the new tensors' shapes).
    assert [(v.name, v.detail) for v in found.values() if not v.ok] == []
