"""The real SGLang server on this CPU, in its own process group, for end-to-end tests.

``CpuServer`` runs ``python -m sglang.launch_server`` on 127.0.0.1 with SGLang's CPU flags
(float32, ``torch_native`` attention, ``pytorch`` sampling, no CUDA graphs) and the test-only
``sgl_kernel`` stand-in from ``tests/cpu_host`` on ``PYTHONPATH`` (so the scheduler and
detokenizer processes get it too).  The scheduler's strict idle memory check is on: a KV or
request-slot leak stops the server, which every later request then reports.  A server that
dies never takes the test process with it (SGLang kills its *parent* process group on a
scheduler crash; the server has its own session).
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence

import requests

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
CPU_HOST = os.path.join(TESTS, "cpu_host")
DATA_DIRS = [os.environ.get("DFLASH_DATA", ""), os.path.join(ROOT, "..", "shared", "data")]
SHIPPED_SMOLLM2_DRAFTER = os.path.join(ROOT, "drafters", "smollm2-135m-instruct")
# The shipped hot draft vocabulary (--speculative-token-map), built from the committed token stores.
SHIPPED_SMOLLM2_TOKEN_MAP = os.path.join(SHIPPED_SMOLLM2_DRAFTER, "token-map-8192.pt")
# Its server flags, the CPU speed configuration (docs/serving.md): drafts from the map's 8192 tokens
# (a random drafter too), verification over the whole vocabulary.
HOT_VOCABULARY = ("--speculative-token-map", SHIPPED_SMOLLM2_TOKEN_MAP)

CPU_FLAGS = (
    "--device",
    "cpu",
    "--dtype",
    "float32",
    "--attention-backend",
    "torch_native",
    "--sampling-backend",
    "pytorch",
    "--disable-cuda-graph",
    "--skip-server-warmup",
    # A small KV pool: without a size SGLang fills most of the host's free memory with it (13 GB here),
    # and zeroing that takes a CPU start minutes.  A server's own --max-total-tokens comes later in
    # its command line and wins (argparse keeps an option's last value).
    "--max-total-tokens",
    "6144",
)


def cpu_environment() -> dict[str, str]:
    """Environment for any SGLang process of the tests on this CPU (servers, engines, benchmarks)."""
    path = os.environ.get("PYTHONPATH", "")
    return {
        **os.environ,
        "SGLANG_USE_CPU_ENGINE": "1",
        "SGLANG_DFLASH_SGL_KERNEL_STANDIN": "1",
        "PYTHONPATH": CPU_HOST + (os.pathsep + path if path else ""),
        "SGLANG_ENABLE_STRICT_MEM_CHECK_DURING_IDLE": "1",
    }


def data_file(name: str) -> str:
    """A prompt set from ../shared/data (or ``$DFLASH_DATA``)."""
    for directory in DATA_DIRS:
        if directory and os.path.exists(os.path.join(directory, name)):
            return os.path.join(directory, name)
    raise FileNotFoundError(f"{name} not found in {[d for d in DATA_DIRS if d]}")


def _own_session_ending_with_parent() -> None:
    """In the server process before exec: its own session (a crash cannot kill the tests), and a
    SIGTERM when the test process dies (so no server outlives an interrupted test run)."""
    import ctypes

    os.setsid()
    pr_set_pdeathsig = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


# Lowest port a server is given: below it are well-known and registered services' ports.
LOWEST_SERVER_PORT = 10000
# How often a start that lost its port to another process is retried with a new one.
PORT_RETRIES = 3
ADDRESS_IN_USE = "address already in use"


def ephemeral_port_range() -> tuple[int, int]:
    """The kernel's range for ports it hands out by itself (bind to port 0, outgoing connections)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(word) for word in f.read().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def free_port() -> int:
    """A free port the kernel will not hand out by itself while the server starts.

    A port from ``bind(0)`` is free now but comes from the ephemeral range, and while the server
    loads (20-60 s) SGLang takes its ``nccl_port`` and torch its gloo sockets from that same range: a
    CI run lost its HTTP port that way ("address already in use" at uvicorn's bind).  So the port is
    drawn below the ephemeral range and checked free.
    """
    low, _ = ephemeral_port_range()
    candidates = list(range(LOWEST_SERVER_PORT, max(LOWEST_SERVER_PORT + 1, low)))
    for port in random.sample(candidates, min(len(candidates), 200)):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {LOWEST_SERVER_PORT}..{low - 1} after 200 draws")


class CpuServer:
    """One ``sglang.launch_server`` process on CPU; ``extra_args`` are more server flags, ``env`` more
    environment variables (SGLang reads some settings only from there, e.g. request timeouts)."""

    def __init__(
        self,
        model: str,
        extra_args: Sequence[str] = (),
        log_path: str = "server.log",
        start_timeout_s: float = 600,
        env: dict[str, str] | None = None,
    ) -> None:
        self.log_path = log_path
        self._args = list(extra_args)
        self._env = {**cpu_environment(), **(env or {})}
        for attempt in range(1, PORT_RETRIES + 1):
            self._start(model)
            try:
                self._wait_healthy(start_timeout_s)
                return
            except RuntimeError as error:
                # Another process took the port between the check and uvicorn's bind (it binds
                # last, after the model has loaded): start again on a new port, nothing else.
                self.shutdown()
                if ADDRESS_IN_USE not in str(error).lower() or attempt == PORT_RETRIES:
                    raise

    def _start(self, model: str) -> None:
        """Launch the server on a fresh free port (the log restarts with it)."""
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        args = [
            sys.executable,
            "-m",
            "sglang.launch_server",
            "--model-path",
            model,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *CPU_FLAGS,
            "--log-level",
            "warning",
            *self._args,
        ]
        self._log = open(self.log_path, "w")  # closed in shutdown()
        self.proc = subprocess.Popen(
            args,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=self._env,
            preexec_fn=_own_session_ending_with_parent,
        )

    # ------------------------------------------------------------------ lifecycle
    def _wait_healthy(self, timeout_s: float) -> None:
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"server exited with {self.proc.returncode} during start:\n{self.log_tail()}"
                )
            try:
                if requests.get(self.base + "/health", timeout=5).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(1)
        self.shutdown()
        raise TimeoutError(f"server not healthy after {timeout_s} s:\n{self.log_tail()}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, chars: int = 4000) -> str:
        if not self._log.closed:
            self._log.flush()
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()[-chars:]

    def shutdown(self, timeout_s: float = 60) -> int:
        """SIGTERM the process group; returns the server's exit code (SIGKILL after the timeout).

        A server whose main process has exited may leave its scheduler behind in the group: that
        group is killed too."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        else:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._log.close()
        return self.proc.returncode

    # ------------------------------------------------------------------ requests
    def generate(
        self,
        input_ids: Sequence[int] | None = None,
        sampling_params: dict | None = None,
        text: str | None = None,
        timeout_s: float = 900,
        **extra,
    ) -> dict:
        """Native ``/generate`` for one prompt: the response dict (``output_ids``, ``text``,
        ``meta_info``)."""
        body = {"sampling_params": sampling_params or {}, **extra}
        body.update({"input_ids": list(input_ids)} if input_ids is not None else {"text": text})
        reply = requests.post(self.base + "/generate", json=body, timeout=timeout_s)
        if reply.status_code != 200:
            raise AssertionError(
                f"/generate answered {reply.status_code}: {reply.text[:500]}\n{self.log_tail()}"
            )
        return reply.json()

    def generate_many(
        self, prompts: Sequence[Sequence[int]], sampling_params: dict | Sequence[dict], concurrency: int
    ) -> list[dict]:
        """Every prompt through ``/generate``, at most ``concurrency`` in flight; results in prompt order."""
        from concurrent.futures import ThreadPoolExecutor

        params = [sampling_params] * len(prompts) if isinstance(sampling_params, dict) else sampling_params
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            return list(pool.map(self.generate, prompts, params))

    def stream_lines(self, body: dict, timeout_s: float = 120) -> Iterator[dict]:
        """The JSON chunks of a streamed ``/generate`` (the caller may stop early: that disconnects)."""
        body = {**body, "stream": True}
        with requests.post(self.base + "/generate", json=body, stream=True, timeout=timeout_s) as r:
            for line in r.iter_lines():
                if line.startswith(b"data:") and line[5:].strip() != b"[DONE]":
                    yield json.loads(line[5:])

    def used_tokens_when_idle(self, timeout_s: float = 120) -> int:
        """KV slots in use once nothing runs and the radix cache is flushed (``/v1/loads``)."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            load = self.load()
            # /flush_cache refuses while requests run; it empties the radix cache when idle.
            if load["num_running_reqs"] == 0 and load["num_waiting_reqs"] == 0:
                if requests.post(self.base + "/flush_cache", timeout=30).status_code == 200:
                    return int(self.load()["num_used_tokens"])
            time.sleep(1)
        raise TimeoutError(f"server still busy after {timeout_s} s:\n{self.log_tail()}")

    def server_info(self) -> dict:
        """The arguments the server runs with, as SGLang reports them (``/server_info``)."""
        return requests.get(self.base + "/server_info", timeout=30).json()

    def load(self) -> dict:
        """The scheduler's load snapshot (``/v1/loads``, data-parallel rank 0)."""
        return requests.get(self.base + "/v1/loads", timeout=10).json()["loads"][0]


def smollm2_drafter(smollm2: str, out_dir: str) -> tuple[str, str]:
    """(path, kind): the shipped SmolLM2 drafter, else a random one (block 16, one layer, mask token 6)
    written to ``out_dir``."""
    if os.path.exists(os.path.join(SHIPPED_SMOLLM2_DRAFTER, "config.json")):
        return SHIPPED_SMOLLM2_DRAFTER, "shipped"
    from transformers import AutoConfig

    from sglang_dflash.checkpoint import save_drafter
    from sglang_dflash.testing import make_tiny_drafter

    model = make_tiny_drafter(
        AutoConfig.from_pretrained(smollm2), seed=0, std=0.02, block_size=16, num_layers=1, mask_token_id=6
    )
    save_drafter(model, out_dir)
    return out_dir, "random"
