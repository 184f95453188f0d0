"""The test harness's own server start: the port it picks and what it does when another process takes it.

A CI run lost nine module fixtures to one "address already in use" at uvicorn's bind: the port came
from ``bind(0)``, the kernel's ephemeral range, where SGLang's ``nccl_port`` and torch's gloo sockets
are drawn from while the model loads.  ``free_port`` now draws below that range, and a start that
still loses its port starts again on a new one (and only then).
"""

from __future__ import annotations

import socket

import cpu_server
import pytest
from cpu_server import CpuServer, ephemeral_port_range, free_port


def test_free_port_is_below_the_ephemeral_range_and_free():
    low, high = ephemeral_port_range()
    assert 1024 <= low <= high
    ports = {free_port() for _ in range(20)}
    assert all(cpu_server.LOWEST_SERVER_PORT <= port < low for port in ports), (ports, low)
    assert len(ports) > 1, "every draw gave the same port: not drawn at random"
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # raises if the port was not free


@pytest.mark.slow
def test_a_start_that_loses_its_port_starts_again_on_a_new_one(smollm2, tmp_path, monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", free_port()))
        taken.listen()
        taken_port = taken.getsockname()[1]
        ports = iter([taken_port])
        monkeypatch.setattr(cpu_server, "free_port", lambda: next(ports, None) or free_port())
        server = CpuServer(smollm2, log_path=str(tmp_path / "server.log"))
        try:
            assert server.port != taken_port
            reply = server.generate(text="Hello", sampling_params={"max_new_tokens": 4, "temperature": 0})
            assert len(reply["output_ids"]) == 4
        finally:
            assert server.shutdown() is not None


@pytest.mark.slow
def test_a_start_that_fails_otherwise_is_not_retried(smollm2, tmp_path, monkeypatch):
    draws = []

    def counted_free_port() -> int:
        draws.append(free_port())
        return draws[-1]

    monkeypatch.setattr(cpu_server, "free_port", counted_free_port)
    with pytest.raises(RuntimeError, match="during start"):
        CpuServer(smollm2, ["--context-length", "not-a-number"], log_path=str(tmp_path / "server.log"))
    assert len(draws) == 1
