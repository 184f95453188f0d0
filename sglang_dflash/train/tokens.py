"""Token stores: the self-distilled token sequences, small enough to commit, and features rebuilt from them.

Generating the target's answers token by token is the expensive part of the CPU recipe; the
target's context features are a teacher-forced forward pass over those answers.  So the recipe
keeps the tokens (prompt ids + response ids) next to the drafter, grows them session by session,
and rebuilds a feature store (:mod:`.features`) from them on any machine with
:func:`build_features_from_tokens` (no generation).

A token store is a directory:

- ``header.json``: ``settings`` (must agree to add to the store: the target's weight digest, the
  prompt pool's description and digests, the generation settings, the chunk layout), ``created``,
  and a ``summary`` (chunks, records, tokens; rewritten after each chunk, informational: the chunk
  files are what a reader trusts);
- ``prompts.json.gz``: the prompt pool itself (texts, in pool order; its digest is the header's).
  A store grows from its own pool, never from a recomputed one: the built-in sources read the
  installed Python's stdlib, which differs between machines and Python builds;
- ``chunk-NNNNN.safetensors.gz``: one generation batch, ``tokens`` [n] (uint16 when the vocabulary
  fits, else int32) holding the records back to back, ``offsets`` [R + 1] int32 (record r is
  ``tokens[offsets[r]:offsets[r + 1]]``), ``loss_starts`` [R] int32 (the prompt's length: the
  response starts there) and ``prompt_index`` [R] int32 (the prompt's position in the pool); a
  safetensors file, gzip-compressed without a timestamp (the same records, the same bytes).  A chat
  template and templated prompts repeat across records, so gzip keeps about a sixth of the bytes.
  Stores written before 2026-11-28 hold plain ``chunk-NNNNN.safetensors`` files: they read the same,
  and :func:`compress_store` converts them.

Chunk ``c`` is always the same prompts: the pool (already a seeded shuffle) is cut into windows of
``window_chunks`` chunks, each window's prompts sorted by length (a batch pads little) and cut into
chunks.  A store covering whole windows is thus a uniform sample of the pool's first prompts, and
growing it (a larger ``num_prompts``) or resuming an interrupted run generates only missing chunks.
Every file is written atomically (a temporary file, then a rename), so the directory is a valid
store at any moment and can be committed while generation runs.
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from safetensors.numpy import load, save
from torch import nn

from .data import generate_batch
from .features import (
    FEATURE_DTYPES,
    MANIFEST,
    LayerCapture,
    chunk_done,
    write_atomic,
    write_feature_chunk,
    write_manifest,
)

HEADER = "header.json"
POOL = "prompts.json.gz"
FORMAT = "sglang-dflash token store 1"
WINDOW_CHUNKS = 8
COMPRESSED_SUFFIX = ".gz"
_CHUNK = re.compile(rf"chunk-(\d{{5}})\.safetensors(?:{re.escape(COMPRESSED_SUFFIX)})?")


def json_sha256(value: object) -> str:
    """sha256 of ``value`` as compact JSON: a digest of a prompt list or of settings."""
    return hashlib.sha256(json.dumps(value, separators=(",", ":")).encode()).hexdigest()


def weights_sha256(model: nn.Module) -> str:
    """sha256 over the model's state dict: names, shapes and values as float32.

    Float32 values make the digest the same whether the weights were loaded in bfloat16 or float32
    (bfloat16 widens exactly), so a store made with one dtype accepts the other.
    """
    digest = hashlib.sha256()
    for name, tensor in model.state_dict().items():
        values = tensor.detach().to("cpu", torch.float32).contiguous().reshape(-1)
        digest.update(f"{name}:{list(tensor.shape)};".encode())
        digest.update(values.view(torch.uint8).numpy())
    return digest.hexdigest()


def token_dtype(vocab_size: int) -> str:
    """``uint16`` when every id of the vocabulary fits in 16 bits, else ``int32``."""
    return "uint16" if vocab_size <= 2**16 else "int32"


def chunk_plan(prompt_ids: Sequence[Sequence[int]], chunk_size: int, window_chunks: int) -> list[list[int]]:
    """Prompt indices of every chunk: windows of consecutive pool prompts, each sorted by length and cut."""
    window = chunk_size * window_chunks
    plan = []
    for start in range(0, len(prompt_ids), window):
        members = range(start, min(start + window, len(prompt_ids)))
        ordered = sorted(members, key=lambda i: (len(prompt_ids[i]), i))
        plan += [ordered[s : s + chunk_size] for s in range(0, len(ordered), chunk_size)]
    return plan


def chunk_path(store_dir: str, chunk: int) -> str:
    """Where chunk ``chunk`` is written (compressed); :func:`existing_chunk_path` finds either form."""
    return os.path.join(store_dir, f"chunk-{chunk:05d}.safetensors{COMPRESSED_SUFFIX}")


def existing_chunk_path(store_dir: str, chunk: int) -> str | None:
    """The file holding chunk ``chunk``, compressed or (an older store's) plain; None when it is missing."""
    compressed = chunk_path(store_dir, chunk)
    for path in (compressed, compressed.removesuffix(COMPRESSED_SUFFIX)):
        if os.path.exists(path):
            return path
    return None


def finished_chunks(store_dir: str) -> list[int]:
    """Ids of the store's chunk files (temporary files of a write in progress are not chunks)."""
    names = (os.path.basename(p) for p in glob.glob(os.path.join(store_dir, "chunk-*.safetensors*")))
    return sorted({int(m.group(1)) for m in map(_CHUNK.fullmatch, names) if m})


def write_token_chunk(path: str, records: Sequence[dict], dtype: str) -> None:
    """Write records ``{"input_ids", "loss_start", "prompt_index"}`` as one chunk file (atomically)."""
    tokens = np.concatenate([np.asarray(r["input_ids"], dtype=np.int64) for r in records])
    limit = np.iinfo(dtype).max
    if tokens.min() < 0 or tokens.max() > limit:
        raise ValueError(
            f"{path}: token ids span {tokens.min()}..{tokens.max()}; expected ids in 0..{limit} ({dtype})"
        )
    lengths = [len(r["input_ids"]) for r in records]
    data = save(
        {
            "tokens": tokens.astype(dtype),
            "offsets": np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32),
            "loss_starts": np.asarray([r["loss_start"] for r in records], dtype=np.int32),
            "prompt_index": np.asarray([r["prompt_index"] for r in records], dtype=np.int32),
        }
    )
    if path.endswith(COMPRESSED_SUFFIX):
        data = gzip.compress(data, compresslevel=9, mtime=0)
    write_atomic(path, lambda f: f.write(data))


def read_chunk_arrays(path: str) -> dict[str, np.ndarray]:
    """The arrays of one chunk file, compressed (``.gz``) or plain."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        return load(gzip.decompress(data) if path.endswith(COMPRESSED_SUFFIX) else data)
    except Exception as error:  # gzip's and safetensors' errors do not name the file
        raise ValueError(
            f"{path} does not read as a token-store chunk ({error}); expected a safetensors file"
            + (", gzip-compressed" if path.endswith(COMPRESSED_SUFFIX) else "")
        ) from error


def read_token_chunk(path: str) -> list[dict]:
    """The records of one chunk file, checked: ``{"input_ids", "loss_start", "prompt_index"}``."""
    arrays = read_chunk_arrays(path)
    missing = {"tokens", "offsets", "loss_starts", "prompt_index"} - arrays.keys()
    if missing:
        raise ValueError(f"{path}: tensors {sorted(missing)} are missing; expected a token-store chunk")
    tokens, offsets = arrays["tokens"].astype(np.int64), arrays["offsets"].astype(np.int64)
    starts, index = arrays["loss_starts"], arrays["prompt_index"]
    lengths = np.diff(offsets)
    if (
        offsets[0] != 0
        or offsets[-1] != len(tokens)
        or not len(starts) == len(index) == len(lengths)
        or (lengths < 1).any()
        or not ((starts > 0) & (starts < lengths)).all()
    ):
        raise ValueError(
            f"{path}: offsets and loss_starts are inconsistent; expected offsets 0..{len(tokens)} and "
            "0 < loss_start < length for every record"
        )
    return [
        {
            "input_ids": tokens[offsets[r] : offsets[r + 1]].tolist(),
            "loss_start": int(starts[r]),
            "prompt_index": int(index[r]),
        }
        for r in range(len(lengths))
    ]


def _read_header(store_dir: str) -> dict:
    path = os.path.join(store_dir, HEADER)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} is missing; expected a token store written by gen-data --tokens")
    with open(path, encoding="utf-8") as f:
        header = json.load(f)
    if header.get("format") != FORMAT:
        raise ValueError(f"{path}: format is {header.get('format')!r}; expected {FORMAT!r}")
    return header


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _write_header(store_dir: str, header: dict) -> None:
    write_atomic(os.path.join(store_dir, HEADER), lambda f: f.write(json.dumps(header, indent=2).encode()))


def write_pool(store_dir: str, prompts: Sequence[str]) -> None:
    """Keep the prompt pool in the store (gzip without a timestamp: the same pool, the same bytes)."""

    def dump(f) -> None:
        with gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as gz:
            gz.write(json.dumps(list(prompts), ensure_ascii=False).encode())

    write_atomic(os.path.join(store_dir, POOL), dump)


def read_pool(store_dir: str) -> list[str] | None:
    """The store's own prompt pool, checked against its header's digest; None for a store without one
    (written before stores kept their pool)."""
    path = os.path.join(store_dir, POOL)
    if not os.path.exists(path):
        return None
    with gzip.open(path, "rb") as f:
        pool = json.loads(f.read().decode())
    expected = _read_header(store_dir)["settings"]["prompt_mix"]["texts_sha256"]
    if json_sha256(pool) != expected:
        raise ValueError(
            f"{path}: texts_sha256 is {json_sha256(pool)[:12]}...; expected {expected[:12]}... (the header's)"
        )
    return pool


def open_for_writing(store_dir: str, settings: dict) -> dict:
    """The store's header, created with ``settings`` or checked against them (a resumed or grown store)."""
    if os.path.exists(os.path.join(store_dir, HEADER)):
        header = _read_header(store_dir)
        stored = header["settings"]
        changed = {k: (stored.get(k), v) for k, v in settings.items() if stored.get(k) != v}
        if changed:
            raise ValueError(
                f"{os.path.join(store_dir, HEADER)}: settings {changed} (stored, requested) differ; "
                "expected the same target, prompt pool and generation settings to add to this store, "
                "or a new directory"
            )
        return header
    os.makedirs(store_dir, exist_ok=True)
    # A run killed mid-write leaves a temporary file; it is no part of the store, so it is not committed.
    with open(os.path.join(store_dir, ".gitignore"), "w", encoding="utf-8") as f:
        f.write("*.tmp\n")
    header = {"format": FORMAT, "settings": settings, "created": _now(), "summary": {}}
    _write_header(store_dir, header)
    return header


def _remove_stale_temporaries(store_dir: str) -> None:
    """Delete temporary files left by processes that no longer run (a killed generation)."""
    for path in glob.glob(os.path.join(store_dir, "*.tmp")):
        pid = path.rsplit(".", 2)[-2]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            os.remove(path)
        except PermissionError:  # alive, another user's
            pass


def training_order(found: Sequence[str], shipped: Sequence[str]) -> list[str]:
    """``found`` store paths in the order a run trains on them: the ones the shipped run named (its
    ``extra_features``, matched by folder name) in its order, then the others by name.  The hold-out
    is drawn among a run's first records, so a new run keeps holding out the shipped run's records
    and its held-out scores stay comparable."""
    by_name = {os.path.basename(os.path.normpath(path)): path for path in found}
    shipped_names = [os.path.basename(os.path.normpath(path)) for path in shipped]
    first = [by_name[name] for name in shipped_names if name in by_name]
    return first + sorted(path for name, path in by_name.items() if name not in shipped_names)


def stores_in_training_order(stores_dir: str, summary_path: str | None, exclude: str | None) -> list[str]:
    """The stores (token or feature: a folder with a ``header.json`` or a ``manifest.json``) in
    ``stores_dir`` but ``exclude``, in :func:`training_order` after the run whose
    ``train_summary.json`` is ``summary_path`` (absent or None: by name)."""
    shipped: list[str] = []
    if summary_path and os.path.isfile(summary_path):
        with open(summary_path, encoding="utf-8") as f:
            shipped = json.load(f)["config"].get("extra_features", [])
    skip = os.path.realpath(exclude) if exclude else None
    found = [
        os.path.join(stores_dir, name)
        for name in os.listdir(stores_dir)
        if any(os.path.isfile(os.path.join(stores_dir, name, marker)) for marker in (HEADER, MANIFEST))
        and os.path.realpath(os.path.join(stores_dir, name)) != skip
    ]
    return training_order(found, shipped)


def summarize(store_dir: str) -> dict:
    """Counts over the store's chunk files: chunks, records, prompt and response tokens."""
    chunks = finished_chunks(store_dir)
    records = [r for c in chunks for r in read_token_chunk(existing_chunk_path(store_dir, c))]
    return {
        "chunks": len(chunks),
        "records": len(records),
        "prompt_tokens": sum(r["loss_start"] for r in records),
        "response_tokens": sum(len(r["input_ids"]) - r["loss_start"] for r in records),
    }


def compress_store(store_dir: str) -> int:
    """Rewrite an older store's plain chunk files compressed; returns how many were converted.

    Each compressed file is written (atomically) and read back equal to the plain one before the
    plain one is removed, so a conversion stopped at any point leaves a valid store, and a rerun
    finishes it.
    """
    _read_header(store_dir)
    converted = 0
    for c in finished_chunks(store_dir):
        compressed = chunk_path(store_dir, c)
        plain = compressed.removesuffix(COMPRESSED_SUFFIX)
        if not os.path.exists(plain):
            continue
        records = read_token_chunk(plain)
        if not os.path.exists(compressed):
            dtype = str(read_chunk_arrays(plain)["tokens"].dtype)
            write_token_chunk(compressed, records, dtype)
        if read_token_chunk(compressed) != records:
            raise ValueError(f"{compressed} holds other records than {plain}; expected the same chunk")
        os.remove(plain)
        converted += 1
    return converted


def generate_token_store(
    target: nn.Module,
    prompts: Sequence[str],
    prompt_ids: Sequence[Sequence[int]],
    store_dir: str,
    mix: dict,
    max_new_tokens: int,
    eos_token_id: int | None,
    num_prompts: int | None = None,
    chunk_size: int = 32,
    temperature: float = 0.0,
    seed: int = 0,
    max_minutes: float | None = None,
    shard: tuple[int, int] = (0, 1),
    log: Callable[[str], None] = print,
) -> dict:
    """Generate (or grow, or finish) a token store over a prompt pool; returns its summary.

    ``prompts`` are the pool's texts and ``prompt_ids`` their token ids as the target reads them;
    ``mix`` describes where the pool comes from (sources or file, seed).  The pool's size and the
    digests of its texts and ids join the store's settings, and the pool itself is kept in the store
    (:func:`read_pool`: pass it back to grow the store on another machine).  ``num_prompts``
    (default: the whole pool) counts prompts in whole chunks from the first.  With ``max_minutes``
    no new chunk starts after that many minutes.  ``shard=(i, n)`` generates only chunks ``c`` with
    ``c % n == i`` (n processes fill one store side by side).  A target whose weights are not float32
    (``gen-data --dtype bfloat16``) generates in their dtype, which joins the generation settings: a
    store holds one dtype's responses, and float32 stores' settings stay as they were.
    """
    index, count = shard
    if not 0 <= index < count:
        raise ValueError(f"gen-data: --shard is {index}/{count}; expected i/n with 0 <= i < n")
    if num_prompts is not None and not 1 <= num_prompts <= len(prompt_ids):
        raise ValueError(
            f"gen-data: --num-prompts is {num_prompts}; expected 1..{len(prompt_ids)} (the prompt pool)"
        )
    if chunk_size < 1:
        raise ValueError(f"gen-data: --batch-size is {chunk_size}; expected an integer >= 1")
    if len(prompts) != len(prompt_ids):
        raise ValueError(f"prompt ids are {len(prompt_ids)} lists; expected one per prompt ({len(prompts)})")
    started = time.time()
    weights_dtype = next(target.parameters()).dtype
    settings = {
        "target": {"weights_sha256": weights_sha256(target)},
        "prompt_mix": {
            **mix,
            "prompts": len(prompts),
            "texts_sha256": json_sha256(list(prompts)),
            "ids_sha256": json_sha256([list(p) for p in prompt_ids]),
        },
        "generation": {
            "max_new_tokens": max_new_tokens,
            "temperature": temperature,
            "seed": seed,
            "eos_token_id": eos_token_id,
            # Only a non-float32 dtype is named: the stores made before the setting existed were float32.
            **(
                {} if weights_dtype == torch.float32 else {"dtype": str(weights_dtype).removeprefix("torch.")}
            ),
        },
        "layout": {
            "chunk_size": chunk_size,
            "window_chunks": WINDOW_CHUNKS,
            "token_dtype": token_dtype(target.config.get_text_config().vocab_size),
        },
    }
    header = open_for_writing(store_dir, settings)
    if not os.path.exists(os.path.join(store_dir, POOL)):  # a new store, or one from before pools were kept
        write_pool(store_dir, prompts)
    _remove_stale_temporaries(store_dir)
    plan = chunk_plan(prompt_ids, chunk_size, WINDOW_CHUNKS)
    wanted = len(plan) if num_prompts is None else -(-num_prompts // chunk_size)
    todo = [c for c in range(wanted) if c % count == index and existing_chunk_path(store_dir, c) is None]
    log(f"gen-data: {len(todo)} chunks to generate into {store_dir} (chunks 0..{wanted - 1} wanted)")
    for c in todo:
        if max_minutes is not None and time.time() - started > 60 * max_minutes:
            log(f"gen-data: stopping after {max_minutes} minutes before chunk {c}; rerun to continue")
            break
        chunk_started = time.time()
        torch.manual_seed(seed * 1_000_003 + c)  # a resumed chunk samples exactly as it would have
        prompts = [list(prompt_ids[i]) for i in plan[c]]
        responses = generate_batch(target, prompts, max_new_tokens, eos_token_id, temperature)
        records = [
            {"input_ids": p + r, "loss_start": len(p), "prompt_index": i}
            for i, p, r in zip(plan[c], prompts, responses)
        ]
        write_token_chunk(chunk_path(store_dir, c), records, settings["layout"]["token_dtype"])
        header["summary"] = {**summarize(store_dir), "updated": _now()}
        _write_header(store_dir, header)
        seconds = time.time() - chunk_started
        new_tokens = sum(map(len, responses))
        log(
            f"gen-data: chunk {c}: {len(records)} records, {new_tokens} response tokens in {seconds:.1f} s "
            f"({new_tokens / seconds:.0f} tok/s); store: {header['summary']}"
        )
    return summarize(store_dir)


@dataclass
class TokenStore:
    """Read side of a token store: its header and every finished chunk's records (tagged ``chunk``)."""

    path: str
    header: dict
    records: list[dict]

    @classmethod
    def open(cls, path: str) -> TokenStore:
        header = _read_header(path)
        records = [
            {**record, "chunk": c}
            for c in finished_chunks(path)
            for record in read_token_chunk(existing_chunk_path(path, c))
        ]
        return cls(path, header, records)

    @classmethod
    def open_with_records(cls, path: str) -> TokenStore:
        """Open ``path``, refusing a store with no finished chunk: nothing to train on or build from."""
        store = cls.open(path)
        if not store.records:
            raise ValueError(f"{path} holds no chunk; expected at least one chunk-NNNNN.safetensors.gz")
        return store

    @property
    def settings(self) -> dict:
        return self.header["settings"]

    def chunks(self) -> list[int]:
        return sorted({r["chunk"] for r in self.records})


def stored_prompt_texts(
    store: TokenStore, pool: Sequence[str] | None, encode: Callable[[str], list[int]]
) -> list[str]:
    """The text of every record's prompt, after checking that the store holds exactly what ``pool`` gives.

    ``pool`` (None: the store's own, :func:`read_pool`) must match the store's prompt digest, and
    each record's prompt ids must equal ``encode(pool[prompt_index])``: the texts returned are then
    the prompts the target answered.
    """
    if pool is None:
        pool = read_pool(store.path)
        if pool is None:
            raise ValueError(f"{os.path.join(store.path, POOL)} is missing; expected the store's prompt pool")
    mix = store.settings["prompt_mix"]
    if len(pool) != mix["prompts"] or json_sha256(list(pool)) != mix["texts_sha256"]:
        raise ValueError(
            f"{store.path}: the prompt pool given ({len(pool)} prompts) differs from the store's "
            f"({mix['prompts']} prompts, texts_sha256 {mix['texts_sha256'][:12]}...); expected the pool "
            "that generated it"
        )
    texts = []
    for record in store.records:
        text = pool[record["prompt_index"]]
        if record["input_ids"][: record["loss_start"]] != encode(text):
            raise ValueError(
                f"{store.path}: chunk {record['chunk']}'s prompt {record['prompt_index']} ids differ from "
                "the encoded pool prompt; expected the store's prompts to be the pool's"
            )
        texts.append(text)
    return texts


class _StopForward(Exception):
    """Raised after the deepest captured layer: the layers above it and the lm_head are not needed."""


@torch.inference_mode()
def teacher_forced_features(
    target: nn.Module,
    sequences: Sequence[Sequence[int]],
    layer_ids: Sequence[int],
    final_hidden: bool = False,
) -> list[torch.Tensor]:
    """Context features [len(seq) - 1, K*H] of each sequence, from one right-padded forward pass.

    Right padding needs no attention mask: causal attention keeps every real token from seeing the
    padding after it, and positions count from 0 as in generation.  The last token's feature is
    dropped, as in a feature store (no anchor reads it).  With ``final_hidden`` the pass runs to
    the last layer and each row ends with the target's final (normed) hidden state, [.., K*H + H]:
    ``lm_head`` of it is the target's next-token logits, which ``train --distill-weight`` matches.
    """
    width = max(map(len, sequences))
    ids = torch.zeros(len(sequences), width, dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = torch.tensor(list(seq))
    ids = ids.to(target.device)
    captured = [*layer_ids, len(target.model.layers) - 1] if final_hidden else list(layer_ids)
    capture = LayerCapture(target, captured)

    def stop(module, args, output):
        raise _StopForward

    # Registered after the capture's hook on the same layer, so it runs after the capture.
    handle = target.model.layers[max(captured)].register_forward_hook(stop)
    try:
        target.model(input_ids=ids, use_cache=False)
    except _StopForward:
        pass
    finally:
        handle.remove()
        capture.remove()
    feats = capture.features()  # [bs, width, K*H] (+ the last layer's H with final_hidden)
    if final_hidden:
        hidden = feats.shape[-1] // len(captured)
        feats = torch.cat([feats[..., :-hidden], target.model.norm(feats[..., -hidden:])], dim=-1)
    return [feats[row, : len(seq) - 1] for row, seq in enumerate(sequences)]


def check_store_target(store: TokenStore, target_sha256: str, command: str) -> None:
    """Refuse a token store written by another target: its features would mean nothing."""
    stored = store.settings["target"]["weights_sha256"]
    if stored != target_sha256:
        raise ValueError(
            f"{command}: --target's weights_sha256 is {target_sha256[:16]}...; expected {stored[:16]}... "
            f"as in {os.path.join(store.path, HEADER)} (features must come from the target that wrote "
            "the tokens)"
        )


class TokenFeatureStores:
    """Token stores read as feature stores whose features are computed when a batch needs them.

    ``train --features-from-tokens``: records are ordered and tagged (``store``, ``chunk``) exactly as
    :class:`.features.FeatureStores` orders the feature stores rebuilt from the same token stores,
    so a run's batches, hold-out and anchors are the same either way.  A record's features come
    from one teacher-forced target pass over its tokens (stopping after the deepest context layer,
    or after the last with ``final_hidden``; float32 whatever autocast the step runs under; with
    ``bf16_target``, under bf16 autocast: the target's linears, about three quarters of that pass
    on CPU, in bf16 with float32 accumulation, the residual stream still float32), rounded to
    ``feature_dtype`` as a store keeps them.  A run thus pays the target's forward pass for the
    sequences it trains on (a 600-step run of 8 sequences: 4800; about two thirds of a float32 step
    on CPU) instead of a rebuild of every store first; records passed to :meth:`keep` (the
    hold-out, evaluated again and again) are computed once.
    """

    def __init__(
        self,
        stores: list[TokenStore],
        target: nn.Module,
        layer_ids: Sequence[int],
        feature_dtype: str = "float16",
        bf16_target: bool = False,
        final_hidden: bool = False,
    ) -> None:
        if feature_dtype not in FEATURE_DTYPES:
            raise ValueError(
                f"train: feature dtype is {feature_dtype!r}; expected one of {sorted(FEATURE_DTYPES)}"
            )
        self.stores, self.target = stores, target
        self.bf16_target = bf16_target
        # Each record's features end with the target's final hidden state (see teacher_forced_features).
        self.final_hidden = final_hidden
        self.layer_ids = list(layer_ids)
        self.dtype = FEATURE_DTYPES[feature_dtype]
        self.records = [{**r, "store": k} for k, store in enumerate(stores) for r in store.records]
        self._kept: dict[int, torch.Tensor | None] = {}
        # One padded target pass per batch (see features_many): on a GPU, not on a CPU.
        self.one_pass_per_batch = target.device.type != "cpu"

    @classmethod
    def open(
        cls,
        paths: Sequence[str],
        target: nn.Module,
        layer_ids: Sequence[int],
        bf16_target: bool = False,
        final_hidden: bool = False,
    ) -> TokenFeatureStores:
        """Open the token stores ``paths`` after checking that ``target`` wrote every one."""
        stores = [TokenStore.open_with_records(p) for p in paths]
        ours = weights_sha256(target)
        for store in stores:
            check_store_target(store, ours, "train")
        LayerCapture(target, layer_ids).remove()  # checks the ids now, not at the first batch
        return cls(stores, target, layer_ids, bf16_target=bf16_target, final_hidden=final_hidden)

    def keep(self, records: Sequence[dict]) -> None:
        """Compute these records' features once and keep them (the held-out records)."""
        self._kept.update({id(r): None for r in records})

    def features(self, record: dict, length: int) -> torch.Tensor:
        """Features [min(length, len - 1), K*H] (float32; K*H + H with ``final_hidden``) of the
        record's first tokens."""
        return self.features_many([record], length)[0]

    def features_many(self, records: Sequence[dict], length: int) -> list[torch.Tensor]:
        """:meth:`features` of each record (one training batch's).

        On a GPU the records not kept share one right-padded target pass: one pass per record there
        is bound by kernel launches, not arithmetic.  On a CPU each record gets its own pass, as
        before: there the padding would cost arithmetic.
        """
        rows = [min(length, len(record["input_ids"]) - 1) for record in records]
        out: list[torch.Tensor | None] = []
        for record, n in zip(records, rows):
            kept = self._kept.get(id(record))
            out.append(kept[:n] if kept is not None and kept.shape[0] >= n else None)
        todo = [i for i, feats in enumerate(out) if feats is None]
        device_type = self.target.device.type
        passes = ([todo] if todo else []) if self.one_pass_per_batch else [[i] for i in todo]
        for members in passes:
            # Causal attention: the first rows + 1 tokens give the first rows features exactly.
            with torch.autocast(device_type=device_type, dtype=torch.bfloat16, enabled=self.bf16_target):
                computed = teacher_forced_features(
                    self.target,
                    [records[i]["input_ids"][: rows[i] + 1] for i in members],
                    self.layer_ids,
                    final_hidden=self.final_hidden,
                )
            for i, feats in zip(members, computed):
                out[i] = feats = feats.to(self.dtype).float().cpu()
                if id(records[i]) in self._kept:
                    self._kept[id(records[i])] = feats
        return out


def build_features_from_tokens(
    target: nn.Module,
    tokens_dir: str,
    out_dir: str,
    layer_ids: Sequence[int],
    feature_dtype: str = "float16",
    batch_size: int = 8,
    max_minutes: float | None = None,
    shard: tuple[int, int] = (0, 1),
    log: Callable[[str], None] = print,
) -> dict:
    """Build (or finish) a feature store from a token store: feature chunk c holds token chunk c's records.

    Sequences go through the target ``batch_size`` at a time, sorted by length within a chunk (less
    padding).  Resumable like generation (finished chunks are skipped).  Returns ``records``,
    ``tokens`` and ``seconds`` of the chunks built by this call.
    """
    index, count = shard
    if not 0 <= index < count:
        raise ValueError(f"gen-data: --shard is {index}/{count}; expected i/n with 0 <= i < n")
    if feature_dtype not in FEATURE_DTYPES:
        raise ValueError(
            f"gen-data: --feature-dtype is {feature_dtype!r}; expected one of {sorted(FEATURE_DTYPES)}"
        )
    if batch_size < 1:
        raise ValueError(f"gen-data: --batch-size is {batch_size}; expected an integer >= 1")
    started = time.time()
    store = TokenStore.open_with_records(tokens_dir)
    ours = weights_sha256(target)
    check_store_target(store, ours, "gen-data")
    write_manifest(
        out_dir,
        {
            "layer_ids": list(layer_ids),
            "hidden_size": target.config.get_text_config().hidden_size,
            "feature_dtype": feature_dtype,
            "from_tokens": {"settings_sha256": json_sha256(store.settings)},
            "target_weights_sha256": ours,
        },
    )
    by_chunk: dict[int, list[dict]] = {}
    for record in store.records:
        by_chunk.setdefault(record["chunk"], []).append(record)
    todo = [c for c in sorted(by_chunk) if c % count == index and not chunk_done(out_dir, c)]
    log(f"gen-data: {len(todo)} feature chunks to build into {out_dir} from {tokens_dir}")
    done = {"records": 0, "tokens": 0, "seconds": 0.0}
    for c in todo:
        if max_minutes is not None and time.time() - started > 60 * max_minutes:
            log(f"gen-data: stopping after {max_minutes} minutes before chunk {c}; rerun to continue")
            break
        chunk_started = time.time()
        records = by_chunk[c]
        order = sorted(range(len(records)), key=lambda i: len(records[i]["input_ids"]))
        feats: dict[int, torch.Tensor] = {}
        for s in range(0, len(order), batch_size):
            batch = order[s : s + batch_size]
            rows = teacher_forced_features(target, [records[i]["input_ids"] for i in batch], layer_ids)
            feats.update(zip(batch, rows))
        results = [
            ({k: r[k] for k in ("input_ids", "loss_start", "prompt_index")}, feats[i])
            for i, r in enumerate(records)
        ]
        write_feature_chunk(out_dir, c, results, feature_dtype)
        seconds = time.time() - chunk_started
        tokens = sum(len(r["input_ids"]) for r in records)
        done = {
            "records": done["records"] + len(records),
            "tokens": done["tokens"] + tokens,
            "seconds": done["seconds"] + seconds,
        }
        log(f"gen-data: feature chunk {c}: {len(records)} records, {tokens} tokens in {seconds:.1f} s")
    return done
