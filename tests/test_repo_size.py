"""The checkout must stay small enough to travel to the GPU host beside one part of the offline kit.

The device tool copies the working tree (tracked and untracked-not-ignored files) plus the carried
paths, at most 64 MiB per call; SGLang travels as kit parts of ``--part-mib`` MiB each, and the
evaluation prompts as ``.gpu-data/`` (docs/gpu-runbook.md). A checkout that outgrows this
budget makes every GPU call fail before it starts, so it fails here first.
"""

import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEVICE_CARRY_LIMIT_MIB = 64
# Room for ../shared/data copied into .gpu-data (the two prompt sets: about 0.6 MiB) and slack.
GPU_DATA_ALLOWANCE_MIB = 2
MIB = 2**20


def travelling_files() -> list[str]:
    """Paths the device tool copies: tracked files and untracked files git does not ignore."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [p for p in out.split("\0") if p and os.path.isfile(os.path.join(ROOT, p))]


def runbook_part_mib() -> int:
    """The ``--part-mib`` that the GPU runbook (docs/gpu-runbook.md) builds the kit with."""
    with open(os.path.join(ROOT, "docs", "gpu-runbook.md"), encoding="utf-8") as f:
        found = re.findall(r"build_kit\.py \.gpu-kit --with-smollm2 --part-mib (\d+)", f.read())
    assert found, "docs/gpu-runbook.md must build the kit with an explicit --part-mib"
    return int(found[0])


def test_the_checkout_and_one_kit_part_fit_in_one_device_call():
    files = travelling_files()
    sizes = {p: os.path.getsize(os.path.join(ROOT, p)) for p in files}
    tree_mib = sum(sizes.values()) / MIB
    budget_mib = DEVICE_CARRY_LIMIT_MIB - runbook_part_mib() - GPU_DATA_ALLOWANCE_MIB
    largest = sorted(sizes, key=sizes.get, reverse=True)[:5]
    assert tree_mib <= budget_mib, (
        f"the checkout is {tree_mib:.1f} MiB; expected <= {budget_mib} MiB so that it travels to the GPU "
        f"host with a kit part (largest: {[(p, round(sizes[p] / MIB, 1)) for p in largest]}); keep large "
        "files in git history only, as drafters/smollm2-135m-instruct/RUNS.md does for earlier runs"
    )


def test_earlier_drafter_runs_keep_their_weights_out_of_the_checkout():
    weights = [p for p in travelling_files() if "/cpu-run-" in p and p.endswith(".safetensors")]
    assert weights == []
