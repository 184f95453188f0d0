"""Shared test setup: one CPU thread (two stall on the CI machines), GPU tests skipped without CUDA."""

import os

import pytest
import torch

torch.set_num_threads(1)
if not torch.cuda.is_available():
    # Triton kernels run through Triton's interpreter on CPU; it must be chosen before triton is imported.
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and the SGLang stack; run on the GPU host (see README)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
