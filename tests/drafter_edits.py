"""Copies of a saved drafter with one thing changed, for the startup checks."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable

import torch
from safetensors.torch import load_file, save_file


def copy_drafter(drafter: str, out_dir: str, **config_changes) -> str:
    """A copy of ``drafter`` in ``out_dir`` with config.json keys replaced (``dflash_config`` is
    updated key by key)."""
    shutil.copytree(drafter, out_dir)
    if config_changes:
        path = os.path.join(out_dir, "config.json")
        with open(path) as f:
            config = json.load(f)
        for key, value in config_changes.items():
            if key == "dflash_config":
                config[key].update(value)
            else:
                config[key] = value
        with open(path, "w") as f:
            json.dump(config, f)
    return out_dir


def edit_weights(directory: str, edit: Callable[[dict[str, torch.Tensor]], object]) -> str:
    """Apply ``edit`` to the state dict in ``directory/model.safetensors`` and save it back."""
    path = os.path.join(directory, "model.safetensors")
    state = load_file(path)
    edit(state)
    save_file(state, path)
    return directory
