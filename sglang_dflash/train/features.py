"""Self-distillation that keeps the target's context features, so training never runs the target again.

While the target generates a response, forward hooks on the chosen target layers capture the
hidden states of every token it processes (the prompt in prefill, one token per decode step).
That is exactly the context feature the drafter reads at inference time, computed once.

A feature store is a directory:

- ``manifest.json``: target, layer ids, hidden size, feature dtype, generation settings;
- ``chunk-NNNNN.npy``: the features of one generation batch, [rows, K*H] float16/bfloat16
  (bfloat16 stored as uint16), one row per token except each record's last token (whose
  feature no anchor ever reads: an anchor a sees tokens < a <= len-2);
- ``chunk-NNNNN.jsonl``: the batch's records ``{"input_ids", "loss_start", "offset"}`` (``offset``
  = the record's first row in the chunk's array).

Chunks are written atomically (temporary name, then ``os.replace``; the ``.jsonl`` last, so it
marks a finished chunk).  Chunk ``i`` is always the same prompts (prompts of similar length, the
length buckets in a seeded random order), so a rerun generates only the chunks that are missing:
an interruption loses at most one batch, and the first N chunks are a fair sample of the mix.
Arrays are memory-mapped.  A feature store can also be rebuilt from a token store (the kept
tokens, no generation): :func:`.tokens.build_features_from_tokens`.
"""

from __future__ import annotations

import glob
import json
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from .data import generate_batch

MANIFEST = "manifest.json"
FEATURE_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


class LayerCapture:
    """Forward hooks collecting the outputs of target layers ``layer_ids`` (HF ``hidden_states[id + 1]``)."""

    def __init__(self, target: nn.Module, layer_ids: Sequence[int]) -> None:
        layers = target.model.layers
        bad = [i for i in layer_ids if not 0 <= i < len(layers)]
        if bad:
            raise ValueError(
                f"LayerCapture: layer ids {bad} are invalid; expected ids in [0, {len(layers) - 1}]"
            )
        self.outputs: list[list[torch.Tensor]] = [[] for _ in layer_ids]
        self._handles = [layers[i].register_forward_hook(self._hook(k)) for k, i in enumerate(layer_ids)]

    def _hook(self, k: int):
        def store(module, args, output):
            self.outputs[k].append((output[0] if isinstance(output, tuple) else output).detach())

        return store

    def features(self) -> torch.Tensor:
        """[bs, T, K*H]: every captured forward call concatenated along the sequence axis."""
        return torch.cat([torch.cat(chunks, dim=1) for chunks in self.outputs], dim=-1)

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()


@torch.inference_mode()
def generate_batch_with_features(
    target: nn.Module,
    prompts: Sequence[Sequence[int]],
    layer_ids: Sequence[int],
    max_new_tokens: int,
    eos_token_id: int | None,
    temperature: float = 0.0,
) -> list[tuple[dict, torch.Tensor]]:
    """Generate one left-padded batch; returns per prompt (record, features [len(input_ids) - 1, K*H])."""
    width = max(map(len, prompts))
    capture = LayerCapture(target, layer_ids)
    try:
        responses = generate_batch(target, prompts, max_new_tokens, eos_token_id, temperature)
        feats = capture.features()  # [bs, width + generated - 1, K*H]: the last token is never run
    finally:
        capture.remove()
    results = []
    for row, (prompt, response) in enumerate(zip(prompts, responses)):
        tokens = list(prompt) + response
        start = width - len(prompt)
        results.append(
            ({"input_ids": tokens, "loss_start": len(prompt)}, feats[row, start : start + len(tokens) - 1])
        )
    return results


def _to_numpy(features: torch.Tensor, dtype: str) -> np.ndarray:
    """float16 as is; bfloat16 as its raw 16 bits (numpy has no bfloat16)."""
    t = features.to(FEATURE_DTYPES[dtype]).contiguous()
    return t.view(torch.int16).numpy() if dtype == "bfloat16" else t.numpy()


def write_atomic(path: str, write) -> None:
    """``write(f)`` into a temporary file beside ``path``, then rename it: readers see all of it or none.

    The temporary name carries the process id, so processes filling one store side by side never
    write into each other's file.
    """
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_manifest(out_dir: str, manifest: dict) -> None:
    """Write ``manifest.json`` or check that an existing one (a run being resumed) agrees with it."""
    path = os.path.join(out_dir, MANIFEST)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            existing = json.load(f)
        changed = {k: (existing.get(k), v) for k, v in manifest.items() if existing.get(k) != v}
        if changed:
            raise ValueError(
                f"{path}: settings {changed} (stored, requested) differ; expected the same settings "
                "to resume, or a new output directory"
            )
        return
    os.makedirs(out_dir, exist_ok=True)
    write_atomic(path, lambda f: f.write(json.dumps(manifest, indent=2).encode()))


def generate_feature_store(
    target: nn.Module,
    prompts: Sequence[Sequence[int]],
    out_dir: str,
    layer_ids: Sequence[int],
    max_new_tokens: int,
    eos_token_id: int | None,
    batch_size: int = 32,
    temperature: float = 0.0,
    seed: int = 0,
    feature_dtype: str = "float16",
    manifest_extra: dict | None = None,
    max_minutes: float | None = None,
    shard: tuple[int, int] = (0, 1),
) -> int:
    """Generate (or finish generating) a feature store; returns the number of records in it.

    With ``max_minutes`` no new batch starts after that many minutes (a rerun continues).
    ``shard=(i, n)`` generates only chunks ``c`` with ``c % n == i``: n processes (one thread each)
    fill one store side by side, which on a shared CPU gets more done than one n-thread process.
    """
    index, count = shard
    if not 0 <= index < count:
        raise ValueError(f"shard is {index}/{count}; expected i/n with 0 <= i < n")
    started = time.time()
    if feature_dtype not in FEATURE_DTYPES:
        raise ValueError(f"feature_dtype is {feature_dtype!r}; expected one of {sorted(FEATURE_DTYPES)}")
    hidden = target.config.get_text_config().hidden_size
    write_manifest(
        out_dir,
        {
            "layer_ids": list(layer_ids),
            "hidden_size": hidden,
            "feature_dtype": feature_dtype,
            "max_new_tokens": max_new_tokens,
            "temperature": temperature,
            "seed": seed,
            "batch_size": batch_size,
            "num_prompts": len(prompts),
            "chunk_order": "length buckets, seeded shuffle",
            **(manifest_extra or {}),
        },
    )
    order = sorted(range(len(prompts)), key=lambda i: (len(prompts[i]), i))  # similar lengths pad less
    chunks = [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
    # Chunk c is the c-th batch generated; the length buckets go in a seeded random order so that any
    # prefix of finished chunks (an interrupted run) is a fair sample of the prompt mix, not its
    # shortest part.
    random.Random(seed).shuffle(chunks)
    mine = [c for c in range(len(chunks)) if c % count == index]
    todo = [c for c in mine if not chunk_done(out_dir, c)]
    bar = tqdm(todo, desc="generating+features", unit="batch", initial=len(mine) - len(todo), total=len(mine))
    tokens_done = 0
    for c in bar:
        if max_minutes is not None and time.time() - started > 60 * max_minutes:
            print(
                f"gen-data: stopping after {max_minutes} minutes with {c} of {len(chunks)} batches; "
                "rerun to continue"
            )
            break
        torch.manual_seed(seed * 1_000_003 + c)  # a resumed chunk samples exactly as it would have
        results = generate_batch_with_features(
            target, [prompts[i] for i in chunks[c]], layer_ids, max_new_tokens, eos_token_id, temperature
        )
        write_feature_chunk(out_dir, c, results, feature_dtype)
        tokens_done += sum(len(r["input_ids"]) - r["loss_start"] for r, _ in results)
        bar.set_postfix(response_tokens=tokens_done)
    return sum(1 for _ in read_store_records(out_dir))


def write_feature_chunk(
    out_dir: str, chunk: int, results: Sequence[tuple[dict, torch.Tensor]], feature_dtype: str
) -> None:
    """Write chunk ``chunk``: its (record, features [len(input_ids) - 1, K*H]) pairs, ``.jsonl`` last."""
    array = _to_numpy(torch.cat([f for _, f in results]), feature_dtype)
    if feature_dtype == "float16" and not np.isfinite(array).all():
        raise ValueError(
            f"chunk {chunk}: float16 features overflow; expected --feature-dtype bfloat16 for this target"
        )
    write_atomic(_chunk_path(out_dir, chunk, "npy"), lambda f: np.save(f, array))
    offset, lines = 0, []
    for record, feats in results:
        lines.append(json.dumps({**record, "offset": offset}))
        offset += feats.shape[0]
    text = ("\n".join(lines) + "\n").encode()
    write_atomic(_chunk_path(out_dir, chunk, "jsonl"), lambda f: f.write(text))


def chunk_done(out_dir: str, chunk: int) -> bool:
    """Whether chunk ``chunk`` of the feature store ``out_dir`` is finished (its ``.jsonl`` is last)."""
    return os.path.exists(_chunk_path(out_dir, chunk, "jsonl"))


def _chunk_path(out_dir: str, chunk: int, ext: str) -> str:
    return os.path.join(out_dir, f"chunk-{chunk:05d}.{ext}")


def read_store_records(out_dir: str) -> list[dict]:
    """All finished chunks' records, each with ``chunk`` and ``offset`` locating its features."""
    records = []
    for path in sorted(glob.glob(os.path.join(out_dir, "chunk-*.jsonl"))):
        chunk = int(os.path.basename(path)[6:11])
        with open(path, encoding="utf-8") as f:
            records += [{**json.loads(line), "chunk": chunk} for line in f if line.strip()]
    return records


@dataclass
class FeatureStore:
    """Read side of a feature store: records plus memory-mapped feature arrays."""

    path: str
    manifest: dict
    records: list[dict]

    @classmethod
    def open(cls, path: str) -> FeatureStore:
        manifest_path = os.path.join(path, MANIFEST)
        if not os.path.exists(manifest_path):
            raise FileNotFoundError(
                f"{manifest_path} is missing; expected a feature store written by gen-data --features"
            )
        with open(manifest_path, encoding="utf-8") as f:
            manifest = json.load(f)
        records = read_store_records(path)
        if not records:
            raise ValueError(f"{path} holds no finished chunk; expected at least one chunk-NNNNN.jsonl")
        return cls(path, manifest, records)

    @property
    def layer_ids(self) -> list[int]:
        return list(self.manifest["layer_ids"])

    def _array(self, chunk: int) -> np.ndarray:
        cache = self.__dict__.setdefault("_arrays", {})
        if chunk not in cache:
            cache[chunk] = np.load(_chunk_path(self.path, chunk, "npy"), mmap_mode="r")
        return cache[chunk]

    def features(self, record: dict, length: int) -> torch.Tensor:
        """Features [min(length, len - 1), K*H] (float32) of the record's first tokens."""
        rows = min(length, len(record["input_ids"]) - 1)
        array = np.array(self._array(record["chunk"])[record["offset"] : record["offset"] + rows])
        t = torch.from_numpy(array)
        if self.manifest["feature_dtype"] == "bfloat16":
            t = t.view(torch.bfloat16)
        return t.float()


# Manifest settings that must agree for stores to be read together: the features' meaning and layout.
_SHARED_SETTINGS = ("layer_ids", "hidden_size", "feature_dtype")


@dataclass
class FeatureStores:
    """Several feature stores read as one (``train --features A --extra-features B C``).

    Records are A's, then B's, then C's, each tagged with ``store`` (its index here); a store grown
    from new prompt sources thus adds data without regenerating or changing the first one.
    """

    stores: list[FeatureStore]
    records: list[dict]

    @classmethod
    def open(cls, paths: Sequence[str]) -> FeatureStores:
        stores = [FeatureStore.open(p) for p in paths]
        first = stores[0]
        for store in stores[1:]:
            for key in _SHARED_SETTINGS:
                if store.manifest.get(key) != first.manifest.get(key):
                    raise ValueError(
                        f"{store.path}: {key} is {store.manifest.get(key)!r}; expected "
                        f"{first.manifest.get(key)!r} as in {first.path} (stores read together must "
                        "hold the same features)"
                    )
        records = [{**r, "store": k} for k, store in enumerate(stores) for r in store.records]
        return cls(stores, records)

    @property
    def layer_ids(self) -> list[int]:
        return self.stores[0].layer_ids

    def features(self, record: dict, length: int) -> torch.Tensor:
        """Features [min(length, len - 1), K*H] (float32) of the record's first tokens."""
        return self.stores[record["store"]].features(record, length)

    def features_many(self, records: Sequence[dict], length: int) -> list[torch.Tensor]:
        """:meth:`features` of each record (one training batch's)."""
        return [self.features(record, length) for record in records]
