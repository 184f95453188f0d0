"""Shared test setup: one CPU thread (two stall on the CI machines), GPU tests skipped without CUDA."""

import pytest
import torch

torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU and the SGLang stack; run on the GPU host (see README)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
