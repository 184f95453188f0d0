"""Programs the tests run in a fresh interpreter, as ``python -m tests.scenarios.<module>`` from the
repository root.

Loading SGLang's plugins patches SGLang process-wide, so a check of the host at startup runs in its
own process (with a timeout, as SGLang processes must be).  The request goes in as JSON on stdin;
the program prints its JSON result on the line that starts with ``RESULT `` (SGLang may print
other lines).  The environment the test passes is the host configuration (the plugin switch, the
CPU settings): one process per configuration runs every check a test module needs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULT = "RESULT "


def run(
    module: str, request: Any, env: Mapping[str, str] | None = None, timeout_s: float = 400
) -> subprocess.CompletedProcess:
    """``python -m tests.scenarios.<module>`` with ``request`` on stdin and ``env`` over this environment."""
    return subprocess.run(
        [sys.executable, "-m", f"tests.scenarios.{module}"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


def result_of(proc: subprocess.CompletedProcess) -> Any:
    """The JSON result a scenario printed; its exit code and output tails when it printed none."""
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT)]
    if not lines:
        raise AssertionError(
            f"no result (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return json.loads(lines[-1][len(RESULT) :])


def plugin_host(
    checks: Mapping[str, tuple[str, dict]], env: Mapping[str, str] | None = None, timeout_s: float = 400
) -> dict[str, Any]:
    """Every check in one plugin host (``plugin_host.py``): check name -> its result or error message."""
    return result_of(run("plugin_host", checks, env, timeout_s))


def print_result(result: Any) -> None:
    """In a scenario: hand ``result`` back to the test."""
    print(RESULT + json.dumps(result), flush=True)
