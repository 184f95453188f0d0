"""Load a script of bench/ as a module, for the tests of its pure parts (the scripts are not a package)."""

import importlib.util
import os
import sys
from types import ModuleType

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench")


def load_bench_script(name: str) -> ModuleType:
    """``bench/<name>.py`` as the module ``name``, registered in ``sys.modules`` first (dataclasses look
    their module up while a class is built)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCH, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
