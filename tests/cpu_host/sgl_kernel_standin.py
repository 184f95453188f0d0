"""Test-only stand-in for ``sgl_kernel`` on a CPU machine (see ``sitecustomize.py`` beside this file).

SGLang 0.5.16's CPU backend imports the CUDA ``sgl_kernel`` wheel (which needs ``libcuda.so.1``) and
calls three ops of sgl-kernel's CPU build. This module serves, through a meta-path finder:

- ``sgl_kernel`` and any ``sgl_kernel.*`` submodule, whose every attribute is a function that raises
  ``NotImplementedError`` naming the op when called (unlike a MagicMock, a kernel that SGLang really
  needs can never silently do nothing);
- pure-PyTorch versions of the three CPU ops SGLang calls on this path:
  ``assign_extend_cache_locs_cpu``, ``assign_req_to_token_pool_cpu`` and
  ``copy_all_layer_kv_cache_cpu``;
- the real wheel's pure-Python submodules that SGLang needs at import time (``scalar_type``),
  loaded from the installed files without the package's CUDA ``__init__``.
"""

from __future__ import annotations

import ctypes
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

STANDIN_NAME = "sgl_kernel"
PURE_PYTHON_SUBMODULES = ("scalar_type",)


def _row_ranges(start_offset, end_offset) -> list[tuple[int, int]]:
    return list(zip(start_offset.tolist(), end_offset.tolist()))


def assign_extend_cache_locs_cpu(
    req_pool_indices, req_to_token, start_offset, end_offset, out_cache_loc, pool_len
):
    """out_cache_loc <- concat over rows i of req_to_token[req_pool_indices[i], start[i]:end[i]]."""
    out = 0
    for row, (start, end) in zip(req_pool_indices.tolist(), _row_ranges(start_offset, end_offset)):
        out_cache_loc[out : out + end - start] = req_to_token[row, start:end]
        out += end - start


def assign_req_to_token_pool_cpu(
    req_pool_indices, req_to_token, start_offset, end_offset, out_cache_loc, pool_len
):
    """req_to_token[req_pool_indices[i], start[i]:end[i]] <- the next out_cache_loc entries, in order."""
    taken = 0
    for row, (start, end) in zip(req_pool_indices.tolist(), _row_ranges(start_offset, end_offset)):
        req_to_token[row, start:end] = out_cache_loc[taken : taken + end - start]
        taken += end - start


def copy_all_layer_kv_cache_cpu(data_ptrs, strides, tgt_loc, src_loc):
    """For every buffer (raw pointer, row stride in bytes): copy row src_loc[j] over row tgt_loc[j]."""
    pairs = list(zip(tgt_loc.tolist(), src_loc.tolist()))
    for ptr, stride in zip(data_ptrs.tolist(), strides.tolist()):
        for tgt, src in pairs:
            ctypes.memmove(ptr + tgt * stride, ptr + src * stride, stride)


IMPLEMENTED = {
    "assign_extend_cache_locs_cpu": assign_extend_cache_locs_cpu,
    "assign_req_to_token_pool_cpu": assign_req_to_token_pool_cpu,
    "copy_all_layer_kv_cache_cpu": copy_all_layer_kv_cache_cpu,
}


def _missing_op(qualified: str):
    def op(*args, **kwargs):
        raise NotImplementedError(f"{qualified} is not available in the CPU test stand-in for sgl_kernel")

    op.__name__ = qualified.rsplit(".", 1)[-1]
    op.__qualname__ = qualified
    return op


class _StandinModule(types.ModuleType):
    """A package whose unknown attributes are raising ops (dunder lookups stay AttributeErrors)."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _missing_op(f"{self.__name__}.{name}")


class _StandinFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] != STANDIN_NAME:
            return None
        real = _real_source(fullname)
        if real is not None:
            return importlib.util.spec_from_file_location(fullname, real)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = _StandinModule(spec.name)
        module.__path__ = []
        module.__version__ = "0.0.0+cpu-test-standin"
        if spec.name == STANDIN_NAME:
            module.__dict__.update(IMPLEMENTED)
        return module

    def exec_module(self, module):
        pass


def _real_source(fullname: str) -> str | None:
    """The installed wheel's file for an allow-listed pure-Python submodule, else None."""
    parts = fullname.split(".")
    if len(parts) != 2 or parts[1] not in PURE_PYTHON_SUBMODULES:
        return None
    real = importlib.machinery.PathFinder.find_spec(STANDIN_NAME)
    if real is None or not real.submodule_search_locations:
        return None
    path = os.path.join(list(real.submodule_search_locations)[0], parts[1] + ".py")
    return path if os.path.exists(path) else None


def cuda_driver_present() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def install() -> None:
    """Serve the stand-in for ``sgl_kernel`` (refused where a CUDA driver exists)."""
    if cuda_driver_present():
        raise RuntimeError("the sgl_kernel CPU test stand-in must not be used where libcuda.so.1 loads")
    if not any(isinstance(f, _StandinFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _StandinFinder())
