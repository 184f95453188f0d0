"""Run one benchmark mode in its own process: start ``sglang.Engine``, time every request, stop.

    python -m sglang_dflash.bench.engine_run CONFIG.json RESULT.json

CONFIG holds ``mode``, ``engine_args``, ``sampling_params``, ``warmup``, ``warm_every_level`` and
``groups`` (each a dataset name, a concurrency and its prompts as token ids).  Requests of a group
are issued with at most ``concurrency`` in flight; each is streamed so its time to first token is
measured.  With ``first_wave: "batch"`` (the default) a group's first ``concurrency`` requests go
to the engine as one batched request, as an offline batch job's do, so they reach the scheduler
together and share one prefill; one by one, the first of them often reaches an idle scheduler
alone and is prefilled by itself while the others wait, which moved a one-wave level's wall time
by up to a second from run to run.  The requests after the first wave follow one by one as slots
free.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

from tqdm import tqdm

FIRST_WAVES = ("batch", "separate")


class _Stream:
    """One request's streamed chunks: its time to first token, latency and output."""

    def __init__(self, prompt: dict, start: float) -> None:
        self.prompt, self.start = prompt, start
        self.ttft: float | None = None
        self.latency: float | None = None
        self.last: dict | None = None
        self.chunks: list[list[int]] = []

    def add(self, chunk: dict) -> None:
        if self.ttft is None:
            self.ttft = time.perf_counter() - self.start
        self.chunks.append(list(chunk.get("output_ids") or []))
        self.last = chunk

    def finish(self) -> None:
        self.latency = time.perf_counter() - self.start

    @property
    def finished(self) -> bool:
        return (self.last or {}).get("meta_info", {}).get("finish_reason") is not None

    def sample(self) -> dict:
        meta = (self.last or {}).get("meta_info", {})
        completion = int(meta.get("completion_tokens", 0))
        chunks = self.chunks
        # Non-incremental streaming repeats all tokens in every chunk; incremental streaming does not.
        whole = chunks and len(chunks[-1]) == completion
        output_ids = chunks[-1] if whole else [t for c in chunks for t in c]
        return {
            "id": self.prompt["id"],
            "output_ids": output_ids,
            "latency": self.latency,
            "ttft": self.ttft,
            "completion_tokens": completion,
            "spec_verify_ct": meta.get("spec_verify_ct"),
            "spec_accept_length": meta.get("spec_accept_length"),
            "finish_reason": str(meta.get("finish_reason")),
        }


async def _one(engine, prompt: dict, params: dict, limiter: asyncio.Semaphore) -> list[dict]:
    async with limiter:
        one = _Stream(prompt, time.perf_counter())
        stream = await engine.async_generate(
            input_ids=list(prompt["input_ids"]), sampling_params=params, stream=True
        )
        async for chunk in stream:
            one.add(chunk)
        one.finish()
    return [one.sample()]


async def _wave(engine, prompts: list[dict], params: dict, limiter: asyncio.Semaphore) -> list[dict]:
    """``prompts`` as one batched streamed request, each holding a slot of ``limiter`` until it ends."""
    for _ in prompts:
        await limiter.acquire()
    start = time.perf_counter()
    streams = [_Stream(p, start) for p in prompts]
    batch = await engine.async_generate(
        input_ids=[list(p["input_ids"]) for p in prompts], sampling_params=params, stream=True
    )
    async for chunk in batch:
        one = streams[chunk["index"]]
        one.add(chunk)
        if one.finished:
            one.finish()
            limiter.release()
    for one in streams:
        if one.latency is None:  # ended without a finish reason: the stream's end is its end
            one.finish()
            limiter.release()
    return [one.sample() for one in streams]


async def run_group(
    engine, prompts: list[dict], params: dict, concurrency: int, desc: str, first_wave: str = "batch"
) -> tuple[list[dict], float]:
    if first_wave not in FIRST_WAVES:
        raise ValueError(f"bench: first_wave is {first_wave!r}; expected one of {list(FIRST_WAVES)}")
    limiter = asyncio.Semaphore(concurrency)
    start = time.perf_counter()
    wave = prompts[:concurrency] if first_wave == "batch" and concurrency > 1 else []
    tasks = [asyncio.ensure_future(_wave(engine, wave, params, limiter))] if wave else []
    tasks += [asyncio.ensure_future(_one(engine, p, params, limiter)) for p in prompts[len(wave) :]]
    samples = []
    with tqdm(total=len(prompts), desc=desc, unit="req", file=sys.stderr) as bar:
        for task in asyncio.as_completed(tasks):
            done = await task
            samples += done
            bar.update(len(done))
    return samples, time.perf_counter() - start


# Tokens per request of a level's warm-up: enough to run every batch size the level reaches.
WARM_LEVEL_TOKENS = 16


def warmup_runs(cfg: dict) -> list[tuple[list[dict], int, dict]]:
    """The warm-up runs before the timed groups, as (prompts, concurrency, sampling params).

    Always ``warmup`` prompts of the first group, all at once.  With ``warm_every_level`` (GPU
    runs) also, for every higher concurrency level, that many prompts of its first group for
    :data:`WARM_LEVEL_TOKENS` tokens: the first steps at a new batch size pay one-time costs
    (kernel compilation, allocator growth) that would otherwise land in whichever dataset is timed
    first at that level.
    """
    params = cfg["sampling_params"]
    warm = cfg["groups"][0]["prompts"][: cfg.get("warmup", 4)]
    runs = [(warm, len(warm), params)]
    if cfg.get("warm_every_level"):
        short = {**params, "max_new_tokens": min(WARM_LEVEL_TOKENS, params["max_new_tokens"])}
        seen = {len(warm)}
        for group in cfg["groups"]:
            level = group["concurrency"]
            if level not in seen and level > len(warm):
                seen.add(level)
                runs.append((group["prompts"][:level], level, short))
    return runs


def read_profile(path: str | None) -> dict | None:
    """The worker's step profile file (``SGLANG_DFLASH_PROFILE``), or None when there is none yet."""
    if not path or not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def profile_delta(before: dict | None, after: dict | None) -> dict | None:
    """Mean ms per step of each phase over the steps between two reads of a profile with
    ``totals_ms`` (the CPU wall-clock profiler), i.e. of one group alone; None without such totals."""
    if not after or "totals_ms" not in after:
        return None
    prev_totals = (before or {}).get("totals_ms", {})
    steps = after["steps"] - (before or {}).get("steps", 0)
    if steps <= 0:
        return None
    means = {name: (total - prev_totals.get(name, 0.0)) / steps for name, total in after["totals_ms"].items()}
    tallies = {
        "widths": format_width_steps(before, after),
        "width_ms": format_width_ms(before, after),
        "graphs": format_graph_steps(before, after, steps),
        "staged": format_staged_steps(before, after, steps),
        "linears": after.get("notes", {}).get("linears", ""),  # CPU: the product the linears took
    }
    return {**means, "steps": steps, **{name: text for name, text in tallies.items() if text}}


def format_staged_steps(before: dict | None, after: dict, steps: int) -> str:
    """Of ``steps`` steps between two reads of a CPU profile, how many staged their verify, how
    many requests their second passes scored and how many onward requests the second-pass gate cut
    at the first pass (``"12/20 second 9 cut 4"``); empty where none staged."""
    counts, prev = after.get("counts", {}), (before or {}).get("counts", {})

    def delta(name: str) -> int:
        return counts.get(name, 0) - prev.get(name, 0)

    staged = delta("staged_steps")
    if staged <= 0:
        return ""
    return f"{staged}/{steps} second {delta('second_pass_requests')} cut {delta('cut_requests')}"


def format_graph_steps(before: dict | None, after: dict, steps: int) -> str:
    """Of ``steps`` steps between two reads of a GPU profile, how many replayed a CUDA graph in the
    draft and in the verify pass (``"draft 412/412 verify 0/412"``); empty without such counts."""
    if "graph_steps" not in after:
        return ""
    prev = (before or {}).get("graph_steps", {})
    counts = after["graph_steps"].items()
    return " ".join(f"{name} {count - prev.get(name, 0)}/{steps}" for name, count in counts)


def width_deltas(before: dict | None, after: dict) -> list[tuple[str, int, float | None]]:
    """Per verify width that ran between two reads of a profile: (width, steps, mean step ms over
    those steps, or None where the profile keeps counts without times)."""
    prev = (before or {}).get("widths", {})
    deltas = []
    for width, tally in after.get("widths", {}).items():
        earlier = prev.get(width, {})
        steps = tally["steps"] - earlier.get("steps", 0)
        if steps <= 0:
            continue
        mean_ms = None
        if "step_ms" in tally:
            total = tally["steps"] * tally["step_ms"] - earlier.get("steps", 0) * earlier.get("step_ms", 0.0)
            mean_ms = total / steps
        deltas.append((width, steps, mean_ms))
    return deltas


def format_width_steps(before: dict | None, after: dict) -> str:
    """The steps each verify width ran between two reads of a profile, as ``"width:steps"`` pairs
    (``"1:37 4:14"``: what an adaptive policy chose); empty where the profile has no widths."""
    return " ".join(f"{width}:{steps}" for width, steps, _ in width_deltas(before, after))


def format_width_ms(before: dict | None, after: dict) -> str:
    """The mean step time of each verify width between two reads of a profile, as ``"width:ms"``
    pairs (``"1:41.2 4:55.0"``: what each width cost the group); empty where the profile has no
    per-width times."""
    deltas = width_deltas(before, after)
    return " ".join(f"{width}:{ms:.1f}" for width, _, ms in deltas if ms is not None)


def main(config_path: str, result_path: str) -> None:
    import sglang

    with open(config_path, encoding="utf-8") as f:
        cfg = json.load(f)
    engine = sglang.Engine(**cfg["engine_args"])
    loop = asyncio.get_event_loop()
    results = {"mode": cfg["mode"], "groups": []}
    try:
        for prompts, level, params in warmup_runs(cfg):
            desc = f"{cfg['mode']} warmup c={level}"
            loop.run_until_complete(run_group(engine, prompts, params, level, desc))
        profile_path = os.environ.get("SGLANG_DFLASH_PROFILE")
        for group in cfg["groups"]:
            desc = f"{cfg['mode']} {group['dataset']} c={group['concurrency']}"
            before = read_profile(profile_path)
            samples, wall = loop.run_until_complete(
                run_group(
                    engine,
                    group["prompts"],
                    cfg["sampling_params"],
                    group["concurrency"],
                    desc,
                    cfg.get("first_wave", "batch"),
                )
            )
            # The worker rewrites its profile after each step, before the step's tokens reach us.
            group_profile = profile_delta(before, read_profile(profile_path))
            results["groups"].append(
                {
                    "dataset": group["dataset"],
                    "concurrency": group["concurrency"],
                    "wall_seconds": wall,
                    "samples": samples,
                    **({"group_step_profile": group_profile} if group_profile else {}),
                }
            )
    finally:
        engine.shutdown()
    profile = os.environ.get("SGLANG_DFLASH_PROFILE")
    if profile and os.path.exists(profile):
        with open(profile, encoding="utf-8") as f:
            results["step_profile"] = json.load(f)
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
