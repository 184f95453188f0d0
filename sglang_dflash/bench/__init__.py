"""Benchmark harness: our DFLASH vs SGLang's built-in DFLASH vs NGRAM vs no speculation.

:mod:`.datasets` (prompt files -> chat-templated token ids), :mod:`.engine_run` (one mode in its
own process, timing every request), :mod:`.metrics` (throughput, latency, tau, speedups, output
agreement), :mod:`.report` (JSON, markdown, PNG), :mod:`.harness` (orchestration and CLI).
"""
