"""Train a DFlash drafter for a frozen Hugging Face target; resumable; exports the published format.

    from sglang_dflash.train.trainer import TrainConfig, train
    train(TrainConfig(target="path/to/target", data="records.jsonl", output="out/drafter"))

Every step: a batch of self-distilled sequences -> the frozen target's hidden states of the
chosen layers -> ``num_anchors`` blocks per sequence -> one drafter forward -> weighted
cross-entropy (see :mod:`.objective`).  AdamW, linear warmup then cosine decay, bf16 autocast on
CUDA and on CPUs with native bf16 dot products (``precision``: :func:`resolve_precision`).
``output/checkpoints/last.pt`` is rewritten every ``save_every`` steps; a rerun with the
same config resumes from it and reproduces the uninterrupted run exactly (data order and anchors
are functions of the order seed and the step; a warm restart's order seed mixes in its starting
weights, :func:`resolve_order_seed`).  The final drafter is written to ``output/`` in the
published safetensors layout, plus ``train_log.jsonl`` and ``train_summary.json``.

CPU-sized training (see ``drafters/smollm2-135m-instruct/recipe-cpu.sh``):

- ``features``: a feature store from ``gen-data --features`` (:mod:`.features`) holds the target's
  context features of every token, captured once during generation; training then never runs
  the target (only its embeddings and lm_head, which the drafter shares).  ``extra_features``
  appends more stores' records (:class:`.features.FeatureStores`).  With ``features_from_tokens``
  they are token stores instead (:class:`.tokens.TokenFeatureStores`): the target computes each
  batch's features when it is drawn, so a fresh machine trains at once, paying the forward pass for
  the sequences it trains on rather than a rebuild of every store.
- ``sample_positions``: the shared lm_head over every supervised block position dominates a
  step's cost.  Each supervised position i is kept with probability w_i / max(w) and kept
  positions are weighed equally, so the loss stays an (importance-sampled) estimate of the same
  weighted objective while the lm_head runs on ~sum(w)/max(w) of the block_size-1 positions (6.6 of 15
  for gamma 7).
- ``heldout`` / ``eval_every``: ``heldout`` random records never train; every ``eval_every``
  steps the drafter's teacher-forced acceptance on them (all positions, fixed anchors) is logged
  as ``heldout_accept`` (mean accepted drafts per block; 1 + it estimates tau on that data), and
  once before the first update, as the log's row of step -1 (held-out fields and ``seconds`` only).
- ``snapshot_every``: the drafter weights at those steps are kept for an acceptance curve.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import hashlib
import json
import math
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any

import torch
from tqdm import tqdm

from ..checkpoint import ignored_tensors, read_state_dict, save_drafter
from ..config import DFlashConfig, draft_config_for_target
from ..draft_model import DFlashDraftModel
from .data import read_records
from .features import FeatureStores
from .objective import (
    IGNORE,
    build_blocks,
    dflash_loss,
    position_weights,
    sample_anchors,
)
from .tokens import TokenFeatureStores

CHECKPOINT = os.path.join("checkpoints", "last.pt")
# Blocks per held-out sequence: every run's held-out curve used 32 (the steps' default), whatever
# its own --num-anchors, so that curves of runs with other batch shapes still compare.
HELDOUT_ANCHORS = 32


def train_error(name: str, value: object, expected: str) -> ValueError:
    """``train: --<flag> is <value>; expected <expected>`` for the :class:`TrainConfig` field ``name``."""
    return ValueError(f"train: --{name.replace('_', '-')} is {value!r}; expected {expected}")


@dataclass
class TrainConfig:
    """One training run: the ``train`` command's flags (``output`` is ``--out``); checked when constructed.

    Copies with changed fields go through ``dataclasses.replace``, which checks them again.
    """

    target: str
    data: str
    output: str
    num_draft_layers: int = 1
    block_size: int = 16
    target_layer_ids: list[int] | None = None
    mask_token_id: int | None = None
    mask_token: str | None = None
    intermediate_size: int | None = None
    init_from_target: bool = True
    init_drafter: str | None = None
    steps: int = 1000
    batch_size: int = 8
    num_anchors: int = 32
    max_seq_len: int = 1024
    lr: float = 6e-4
    min_lr_ratio: float = 0.1
    warmup_steps: int = 50
    weight_decay: float = 0.01
    gamma: float | None = 7.0
    grad_clip: float = 1.0
    seed: int = 0
    order_seed: int | None = None  # the batches' order and anchors: see resolve_order_seed
    device: str = field(default_factory=lambda: "cuda" if torch.cuda.is_available() else "cpu")
    save_every: int = 200
    log_every: int = 10
    max_shard_mb: float = 15.0
    resume: bool = True
    features: str | None = None
    extra_features: list[str] = field(default_factory=list)
    features_from_tokens: bool = False  # features/extra_features are token stores: see TokenFeatureStores
    num_chunks: int | None = None
    heldout: int = 0
    heldout_among: int | None = None
    eval_every: int = 0
    sample_positions: bool = False
    snapshot_every: int = 0
    threads: int | None = None
    max_minutes: float | None = None
    # Size ``steps`` (at most the given one) from the pace of the steps, timed every PACE_STEPS, so
    # that the schedule ends this many minutes after the run started: see SchedulePacer.
    schedule_minutes: float | None = None
    precision: str = "auto"  # the training steps' autocast: see resolve_precision
    # The target's pass for features_from_tokens: fp32 (exact), or bf16 autocast (see TokenFeatureStores).
    feature_precision: str = "fp32"
    # The last ``fresh_stores`` stores given (--features, then --extra-features) fill ``fresh_share``
    # of every batch (rounded to whole rows), the others the rest: see SequenceBatches.
    fresh_stores: int = 0
    fresh_share: float = 0.0
    # Each position's loss: (1 - distill_weight) * CE + distill_weight * KL(target || drafter), see
    # objective.distillation_kl; the target's distributions need features_from_tokens.
    distill_weight: float = 0.0

    def __post_init__(self) -> None:
        """Raise ValueError naming the first bad setting by its ``train`` flag."""
        for name, minimum in (
            ("steps", 1),
            ("batch_size", 1),
            ("num_anchors", 1),
            ("max_seq_len", 1),
            ("num_draft_layers", 1),
            ("save_every", 1),
            ("log_every", 1),
            ("block_size", 2),
            ("heldout", 0),
            ("eval_every", 0),
            ("snapshot_every", 0),
            ("fresh_stores", 0),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise train_error(name, value, f"an integer >= {minimum}")
        if self.order_seed is not None and (
            isinstance(self.order_seed, bool) or not isinstance(self.order_seed, int) or self.order_seed < 0
        ):
            raise train_error("order_seed", self.order_seed, "an integer >= 0, or None")
        for name in ("precision", "feature_precision"):
            if getattr(self, name) not in PRECISIONS:
                raise train_error(name, getattr(self, name), f"one of {', '.join(PRECISIONS)}")
        if not self.lr > 0:
            raise train_error("lr", self.lr, "a positive number")
        if self.schedule_minutes is not None and not (
            isinstance(self.schedule_minutes, (int, float)) and self.schedule_minutes > 0
        ):
            raise train_error("schedule_minutes", self.schedule_minutes, "a positive number of minutes")
        if self.gamma is not None and not self.gamma > 0:
            raise train_error("gamma", self.gamma, "a positive number or None")
        if self.eval_every and not self.heldout:
            raise train_error(
                "heldout",
                self.heldout,
                f">= 1 with --eval-every {self.eval_every} (held-out records to evaluate on)",
            )
        if self.extra_features and not self.features:
            raise train_error(
                "features", self.features, f"a feature store with --extra-features {self.extra_features}"
            )
        if self.features_from_tokens and not self.features:
            raise train_error("features", self.features, "token stores with --features-from-tokens")
        if self.features_from_tokens and not self.target_layer_ids:
            raise train_error(
                "target_layer_ids",
                self.target_layer_ids,
                "the context layers with --features-from-tokens (a token store keeps no features)",
            )
        self._check_fresh_share()
        if isinstance(self.distill_weight, bool) or not 0 <= self.distill_weight <= 1:
            raise train_error("distill_weight", self.distill_weight, "a weight in [0, 1]")
        if self.distill_weight and not self.features_from_tokens:
            raise train_error(
                "features_from_tokens",
                self.features_from_tokens,
                f"set with --distill-weight {self.distill_weight} (the target's next-token "
                "distributions come from its pass over the token stores; a feature store keeps none)",
            )
        if self.num_chunks is not None and not self.features:
            raise train_error(
                "features", self.features, f"a feature store with --num-chunks {self.num_chunks}"
            )

    def _check_fresh_share(self) -> None:
        """Raise ValueError unless fresh_stores and fresh_share are both unset or name a share of
        whole rows (at least one, not the whole batch) and leave at least one store not fresh."""
        if not self.fresh_stores and not self.fresh_share:
            return
        if isinstance(self.fresh_share, bool) or not 0 < self.fresh_share < 1:
            raise train_error(
                "fresh_share", self.fresh_share, f"a share in (0, 1) with --fresh-stores {self.fresh_stores}"
            )
        if not 1 <= self.fresh_stores <= len(self.extra_features):
            raise train_error(
                "fresh_stores",
                self.fresh_stores,
                f"1 to {len(self.extra_features)} (the --extra-features stores; --features stays not "
                f"fresh) with --fresh-share {self.fresh_share}",
            )
        if not 1 <= fresh_rows(self) < self.batch_size:
            raise train_error(
                "fresh_share",
                self.fresh_share,
                f"a share of --batch-size {self.batch_size} that rounds to 1..{self.batch_size - 1} rows",
            )


def fresh_rows(config: TrainConfig) -> int:
    """The rows of every training batch drawn from the fresh stores (``fresh_share`` of the batch)."""
    return round(config.batch_size * config.fresh_share)


PRECISIONS = ("auto", "bf16", "fp32")
# CPU flags of native bf16 dot products (Zen 4, Cooper Lake, Sapphire Rapids and later): there bf16
# matmuls run 2-3x faster than float32 ones; elsewhere oneDNN emulates them, slower than float32.
NATIVE_BF16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


@functools.cache
def cpu_has_native_bf16(cpuinfo_path: str = "/proc/cpuinfo") -> bool:
    """Whether this CPU computes bf16 dot products natively (Linux's flags; False where unreadable).

    Read once per path: every training step's autocast asks (:func:`train_autocast`).
    """
    try:
        with open(cpuinfo_path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return not NATIVE_BF16_CPU_FLAGS.isdisjoint(line.split(":", 1)[1].split())
    except OSError:
        pass
    return False


def resolve_precision(precision: str, device: str) -> str:
    """``bf16`` or ``fp32``: what ``precision`` means on ``device``.

    ``auto`` is bf16 on CUDA and on CPUs with native bf16 (:func:`cpu_has_native_bf16`; measured on
    this project's Zen 4 cores: training steps 1.75x faster, losses equal to 3 decimals), fp32 on
    other CPUs.
    """
    if precision != "auto":
        return precision
    return "bf16" if device.startswith("cuda") or cpu_has_native_bf16() else "fp32"


def train_autocast(precision: str, device: str) -> torch.autocast:
    """The autocast one training step runs under (:func:`resolve_precision`)."""
    device_type = "cuda" if device.startswith("cuda") else "cpu"
    bf16 = resolve_precision(precision, device) == "bf16"
    return torch.autocast(device_type, dtype=torch.bfloat16, enabled=bf16)


def resolve_order_seed(config: TrainConfig, resumed: dict | None = None) -> int:
    """The seed of the training batches' order and of their anchors.

    ``order_seed`` when set; else a resumed run's own (``resumed``: the config saved in the checkpoint
    it resumes from; one written before order seeds existed ran in ``seed``'s order); else ``seed``
    for a run from the target, and for a warm restart (``init_drafter``) ``seed`` mixed with a digest
    of the starting weights.  A chain of warm restarts over the same stores then walks a new order
    each time; with one order each restart trained on the run before's first batches again (600
    steps of 8: the same 4800 of 17231 sequences).
    """
    if config.order_seed is not None:
        return config.order_seed
    if resumed is not None:
        return resumed["seed"] if resumed.get("order_seed") is None else resumed["order_seed"]
    if not config.init_drafter:
        return config.seed
    digest = hashlib.sha256(str(config.seed).encode())
    for name in sorted(glob.glob(os.path.join(config.init_drafter, "*.safetensors"))):
        with open(name, "rb") as f:
            digest.update(f.read())
    return int.from_bytes(digest.digest()[:4], "big")


def _order_seed(config: TrainConfig) -> int:
    """``order_seed`` once resolved (:func:`resolve_order_seed`); ``seed`` before."""
    return config.seed if config.order_seed is None else config.order_seed


@dataclasses.dataclass
class CosineSchedule:
    """The learning rate's factor at a step (a ``LambdaLR`` lambda): linear warmup to 1, then
    cosine decay to ``min_ratio`` at step ``total``.

    ``--schedule-minutes`` moves ``total`` while the run goes on (:meth:`retotal`); the decay then
    bends at that step, its progress running on from where it was to 1 at the new ``total``, so the
    rate never jumps.  An object rather than a function, so the scheduler's state dict saves it and a
    resumed run continues the same curve.
    """

    warmup: int
    total: int
    min_ratio: float
    bend: int = 0  # from this step the progress runs linearly from bent_at to 1 at total
    bent_at: float = 0.0

    def progress(self, step: int) -> float:
        """How far the decay is at ``step`` (0 at its start, 1 at ``total`` and after)."""
        start = max(self.bend, self.warmup)
        left = 1.0 - self.bent_at
        return min(1.0, self.bent_at + max(0, step - start) * left / max(1, self.total - start))

    def __call__(self, step: int) -> float:
        if step < self.warmup:
            return (step + 1) / self.warmup
        return self.min_ratio + (1 - self.min_ratio) * 0.5 * (1 + math.cos(math.pi * self.progress(step)))

    def retotal(self, step: int, total: int) -> None:
        """End the decay at ``total`` instead, bent at ``step`` (the next step to run)."""
        if step > self.warmup:
            self.bend, self.bent_at = step, self.progress(step)
        self.total = total


# Steps timed before --schedule-minutes sizes the schedule (the first, slower one not among them).
PACE_STEPS = 10


def fitted_steps(steps_cap: int, steps_done: int, elapsed_s: float, budget_s: float, step_s: float) -> int:
    """How many steps the schedule runs so that it ends ``budget_s`` after the run started.

    ``steps_done`` steps took ``elapsed_s`` (loading included) and the next ones are expected to take
    ``step_s`` each; the result is at least one step more than done and at most ``steps_cap``.
    """
    remaining = max(0, math.floor((budget_s - elapsed_s) / max(step_s, 1e-9)))
    return max(steps_done + 1, min(steps_cap, steps_done + remaining))


@dataclasses.dataclass
class SchedulePacer:
    """Sizes the schedule for ``--schedule-minutes``: times :data:`PACE_STEPS` steps after this
    process's first one (the slower first step not among them), held-out evaluations taken out of
    that window and added back at their own rate, so an evaluation inside the window is not counted
    twice; then times every next window of as many steps and sizes the schedule again, so that a
    machine that speeds up or slows down (other work started or ended beside the run) still ends
    the schedule on time."""

    budget_s: float
    eval_every: int  # 0: no held-out evaluation runs
    eval_s: float = 0.0  # the latest held-out evaluation's seconds
    eval_total_s: float = 0.0  # every held-out evaluation's seconds so far
    window: tuple[int, float, float] | None = None  # (step, time, eval_total_s) where timing began
    step_s: float | None = None  # the expected seconds a step, once timed

    def evaluated(self, seconds: float) -> None:
        """A held-out evaluation took ``seconds``."""
        self.eval_s = seconds
        self.eval_total_s += seconds

    def step_done(self, step: int, now: float, started: float, steps_cap: int) -> int | None:
        """After ``step`` finished at ``now``: the schedule's length when a window has just been
        timed, else None."""
        if self.window is None:
            self.window = (step, now, self.eval_total_s)
            return None
        first, began, evals_before = self.window
        if step - first != PACE_STEPS:
            return None
        self.step_s = (now - began - (self.eval_total_s - evals_before)) / PACE_STEPS
        if self.eval_every:
            self.step_s += self.eval_s / self.eval_every
        self.window = (step, now, self.eval_total_s)
        return fitted_steps(steps_cap, step + 1, now - started, self.budget_s, self.step_s)


def _target_layers(target: torch.nn.Module):
    return target.model.layers


def init_from_target_layers(drafter: DFlashDraftModel, target: torch.nn.Module) -> list[str]:
    """Start draft layer i from target layer L-N+i wherever shapes agree; returns the copied names."""
    layers = _target_layers(target)
    copied = []
    with torch.no_grad():
        for i, draft_layer in enumerate(drafter.layers):
            source = layers[len(layers) - len(drafter.layers) + i].state_dict()
            for name, tensor in draft_layer.state_dict().items():
                if name in source and source[name].shape == tensor.shape:
                    tensor.copy_(source[name].to(tensor.dtype))
                    copied.append(f"layers.{i}.{name}")
    return copied


def build_drafter(config: TrainConfig, target: torch.nn.Module) -> DFlashDraftModel:
    overrides: dict[str, Any] = {}
    if config.intermediate_size:
        overrides["intermediate_size"] = config.intermediate_size
    tcfg = target.config.get_text_config()
    mask_token_id = config.mask_token_id if config.mask_token_id is not None else tcfg.vocab_size - 1
    dcfg = draft_config_for_target(
        tcfg,
        num_layers=config.num_draft_layers,
        block_size=config.block_size,
        target_layer_ids=config.target_layer_ids,
        mask_token_id=mask_token_id,
        **overrides,
    )
    if config.mask_token is not None:
        dcfg = dcfg.replace(mask_token=config.mask_token)
    torch.manual_seed(config.seed)
    drafter = DFlashDraftModel(dcfg)
    with torch.no_grad():
        for name, p in drafter.named_parameters():
            if not name.endswith("norm.weight"):
                p.normal_(0.0, tcfg.initializer_range if hasattr(tcfg, "initializer_range") else 0.02)
    if config.init_from_target:
        # Under a grown warm start the layers the earlier drafter lacks keep these copies.
        init_from_target_layers(drafter, target)
    if config.init_drafter:
        load_warm_start(drafter, config.init_drafter)
    return drafter


def load_warm_start(drafter: DFlashDraftModel, directory: str) -> None:
    """Start from an earlier drafter's weights (``--init-drafter``): same shape and context layers,
    or the same with fewer draft layers (a grown drafter, :func:`grow_layers`).

    The rest of the run is new (optimizer, schedule, data order), so this is a warm restart, not a
    resume; ``checkpoints/last.pt`` of the new run still takes precedence when it exists.
    """
    try:
        earlier = DFlashConfig.from_pretrained(directory)
    except (OSError, ValueError) as e:
        raise train_error(
            "init_drafter", directory, f"a drafter directory with a valid config.json ({e})"
        ) from e
    ours, theirs = drafter.config.to_dict(), earlier.to_dict()
    grown = 0 < earlier.num_hidden_layers < drafter.config.num_hidden_layers
    if grown:  # compare the earlier drafter with this one's first layers
        theirs = {**theirs, "num_hidden_layers": ours["num_hidden_layers"]}
        theirs["layer_types"] = (
            list(earlier.layer_types) + list(ours["layer_types"])[earlier.num_hidden_layers :]
        )
    differing = sorted(
        k
        for k in ours.keys() | theirs.keys()
        if k not in ("torch_dtype", "dtype") and ours.get(k) != theirs.get(k)
    )
    if differing:
        shown = ", ".join(f"{k} {theirs.get(k)!r} (this run: {ours.get(k)!r})" for k in differing)
        raise train_error(
            "init_drafter", directory, f"a drafter of this run's shape or fewer layers; it differs in {shown}"
        )
    state = read_state_dict(directory)
    for name in ignored_tensors(state):
        del state[name]
    with torch.no_grad():
        if grown:
            state = {**drafter.state_dict(), **state}
        drafter.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
        if grown:
            grow_layers(drafter, earlier.num_hidden_layers)


def grow_layers(drafter: DFlashDraftModel, kept: int) -> None:
    """Make draft layers ``kept ..`` identity maps of the residual stream (their attention output and
    MLP down projections zeroed), so the grown drafter drafts exactly what its first ``kept`` layers
    did and training starts from the earlier drafter's acceptance, not below it.

    Their other weights keep their initialisation (the target's layers where shapes agree), so the
    zeroed projections receive gradients from the first step on.
    """
    with torch.no_grad():
        for layer in drafter.layers[kept:]:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
            if layer.self_attn.o_proj.bias is not None:
                layer.self_attn.o_proj.bias.zero_()


class SequenceBatches:
    """Deterministic shuffled batches: batch ``step`` is a function of (seed, step) alone.

    With ``fresh_from`` (a store index) and ``fresh_rows``, every batch holds ``fresh_rows`` records
    of the stores from ``fresh_from`` on and the rest from the stores before it, each group walking
    its own shuffled epochs: a run that adds small new stores to large old ones then trains on the
    new records in every batch instead of about as rarely as on any old one.
    """

    # Salts the fresh records' shuffles, so that they never walk the old records' order.
    FRESH_ORDER_SALT = 500_009

    def __init__(
        self,
        records: list[dict],
        batch_size: int,
        max_seq_len: int,
        seed: int,
        store: FeatureStores | None = None,
        fresh_from: int | None = None,
        fresh_rows: int = 0,
    ) -> None:
        self.records = [r for r in records if r["loss_start"] < min(len(r["input_ids"]), max_seq_len)]
        if not self.records:
            raise train_error(
                "max_seq_len", max_seq_len, "a length that keeps at least one response token of some record"
            )
        self.batch_size, self.max_seq_len, self.seed, self.store = batch_size, max_seq_len, seed, store
        self.per_epoch = max(1, len(self.records) // batch_size)
        # (records, rows per batch, order salt) of each group a batch draws from.
        self.groups: list[tuple[list[dict], int, int]] = [(self.records, batch_size, 0)]
        if fresh_rows:
            old = [r for r in self.records if r["store"] < fresh_from]
            fresh = [r for r in self.records if r["store"] >= fresh_from]
            if not old or not fresh:  # the value is a store index here, not the flag's count
                raise ValueError(
                    f"train: --fresh-stores splits the training records at store {fresh_from} into "
                    f"{len(old)} old and {len(fresh)} fresh; expected some on both sides"
                )
            self.groups = [(old, batch_size - fresh_rows, 0), (fresh, fresh_rows, self.FRESH_ORDER_SALT)]

    def features(self, step: int) -> torch.Tensor:
        """Cached target features [R, T, K*H] of batch ``step`` (zero where a token has none)."""
        if self.store is None:
            raise train_error("features", None, "a feature store (these batches were built without one)")
        chosen = self._chosen(step)
        width = max(min(len(r["input_ids"]), self.max_seq_len) for r in chosen)
        rows = self.store.features_many(chosen, width)
        out = torch.zeros(len(rows), width, rows[0].shape[-1])
        for i, f in enumerate(rows):
            out[i, : f.shape[0]] = f
        return out

    def _chosen(self, step: int) -> list[dict]:
        return [record for group in self.groups for record in self._drawn(*group, step)]

    def _drawn(self, records: list[dict], rows: int, salt: int, step: int) -> list[dict]:
        """Batch ``step``'s ``rows`` records of ``records``: a slice of its shuffled epoch."""
        epoch, index = divmod(step, max(1, len(records) // rows))
        order = list(range(len(records)))
        random.Random(self.seed * 1_000_003 + epoch + salt).shuffle(order)
        return [records[i] for i in order[index * rows : (index + 1) * rows]]

    def __call__(self, step: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """input_ids, attention mask, loss mask: [R, T] right-padded."""
        chosen = self._chosen(step)
        seqs = [r["input_ids"][: self.max_seq_len] for r in chosen]
        width = max(map(len, seqs))
        ids = torch.zeros(len(seqs), width, dtype=torch.long)
        attn = torch.zeros(len(seqs), width, dtype=torch.bool)
        loss = torch.zeros(len(seqs), width, dtype=torch.bool)
        for row, (seq, rec) in enumerate(zip(seqs, chosen)):
            ids[row, : len(seq)] = torch.tensor(seq)
            attn[row, : len(seq)] = True
            loss[row, rec["loss_start"] : len(seq)] = True
        return ids, attn, loss


def target_features(
    target: torch.nn.Module, layer_ids: tuple[int, ...], ids: torch.Tensor, attn: torch.Tensor
) -> torch.Tensor:
    with torch.no_grad():
        out = target.model(
            input_ids=ids, attention_mask=attn.long(), output_hidden_states=True, use_cache=False
        )
        return DFlashDraftModel.select_target_features(out.hidden_states, layer_ids)


def sample_block_positions(
    labels: torch.Tensor, weights: torch.Tensor, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Keep supervised position i with probability w_i / max(w); returns (labels, equal weights).

    E[sum_kept CE] is proportional to sum_i w_i CE_i, so training on the kept positions with equal
    weights optimises the same weighted objective while the lm_head sees fewer positions.
    """
    block_size = weights.numel()
    keep_prob = (weights / weights.max())[torch.arange(labels.shape[1]) % block_size]
    keep = torch.rand(labels.shape, generator=generator) < keep_prob[None, :]
    return torch.where(keep, labels, torch.full_like(labels, IGNORE)), (weights > 0).float()


def train_step(
    drafter, target, batches: SequenceBatches, config: TrainConfig, step: int, weights: torch.Tensor
):
    ids, attn, loss_mask = (t.to(config.device) for t in batches(step))
    gen = torch.Generator().manual_seed(_order_seed(config) * 7919 + step)
    anchors = sample_anchors(loss_mask.cpu(), config.num_anchors, gen)
    blocks = build_blocks(ids.cpu(), loss_mask.cpu(), anchors, drafter.block_size, drafter.mask_token_id)
    if config.sample_positions:
        labels, weights = sample_block_positions(blocks.labels, weights, gen)
        blocks = dataclasses.replace(blocks, labels=labels)
    blocks = blocks.to(config.device)
    with train_autocast(config.precision, config.device):
        if batches.store is not None:
            feats = batches.features(step).to(config.device)  # captured at generation: no target forward
        else:
            feats = target_features(target, drafter.config.target_layer_ids, ids, attn)
        final = None
        if getattr(batches.store, "final_hidden", False):  # the last H columns: see TokenFeatureStores
            hidden = feats.shape[-1] // (len(drafter.config.target_layer_ids) + 1)
            feats, final = feats[..., :-hidden], feats[..., -hidden:]
        return dflash_loss(
            drafter,
            target.get_input_embeddings(),
            target.get_output_embeddings(),
            feats,
            attn,
            blocks,
            weights,
            target_final=final,
            distill_weight=config.distill_weight,
        )


@torch.no_grad()
def heldout_acceptance(
    drafter, target, heldout: SequenceBatches, config: TrainConfig, weights: torch.Tensor
) -> dict:
    """Teacher-forced acceptance on held-out records: every position, the same anchors every time."""
    drafter.eval()
    totals = {"loss": 0.0, "accept": 0.0}
    batches = range(heldout.per_epoch)
    # On CPU the held-out curve stays float32 whatever the steps run in, so that it compares with
    # every earlier run's (CUDA runs always evaluated under bf16 autocast).
    precision = config.precision if config.device.startswith("cuda") else "fp32"
    for step in batches:
        # The held-out anchors keep their own seed and count, so the curve compares across runs,
        # orders and batch shapes; its loss is the cross-entropy alone, distilling or not, for the
        # same reason.
        full = dataclasses.replace(
            config,
            sample_positions=False,
            order_seed=config.seed + 1,
            num_anchors=HELDOUT_ANCHORS,
            precision=precision,
            distill_weight=0.0,
        )
        out = train_step(drafter, target, heldout, full, step, weights)
        totals["loss"] += out.loss.item()
        totals["accept"] += float(out.expected_accept)
    drafter.train()
    return {
        "heldout_loss": round(totals["loss"] / len(batches), 5),
        "heldout_accept": round(totals["accept"] / len(batches), 4),
    }


def open_feature_stores(
    config: TrainConfig, target: torch.nn.Module | None
) -> FeatureStores | TokenFeatureStores | None:
    """The stores named by ``features`` and ``extra_features``: feature stores, or token stores whose
    features ``target`` computes on demand (``features_from_tokens``); None when training reads JSONL."""
    if not config.features:
        return None
    paths = [config.features, *config.extra_features]
    if not config.features_from_tokens:
        return FeatureStores.open(paths)
    if target is None:
        raise train_error("features_from_tokens", True, "a target to compute the token stores' features with")
    bf16 = resolve_precision(config.feature_precision, config.device) == "bf16"
    return TokenFeatureStores.open(
        paths, target, config.target_layer_ids, bf16_target=bf16, final_hidden=config.distill_weight > 0
    )


def load_training_data(
    config: TrainConfig, target: torch.nn.Module | None = None
) -> tuple[SequenceBatches, SequenceBatches | None]:
    """Training batches and held-out batches (``heldout`` random records), from JSONL, feature stores
    or token stores (``features_from_tokens``: ``target`` computes their features)."""
    store = open_feature_stores(config, target)
    records = store.records if store is not None else read_records(config.data)
    if config.num_chunks is not None:  # the first store's (--features): checked by TrainConfig
        records = [r for r in records if r["store"] > 0 or r["chunk"] < config.num_chunks]
        missing = sorted(set(range(config.num_chunks)) - {r["chunk"] for r in records if r["store"] == 0})
        if missing:
            raise ValueError(
                f"{config.features}: chunks {missing} are unfinished; expected chunks "
                f"0..{config.num_chunks - 1} (let gen-data finish them or lower --num-chunks)"
            )
    pool = len(records) if config.heldout_among is None else config.heldout_among
    if not config.heldout < pool <= len(records):
        raise train_error(
            "heldout_among",
            pool,
            f"more than --heldout {config.heldout} and at most the {len(records)} records",
        )
    # A seeded random hold-out: generation order groups prompts by length, so a contiguous slice
    # would not be fair.  Drawn among the first `pool` records, so a run on grown data can keep an
    # earlier run's hold-out (the same seed and pool give the same records).
    held_ids = set(random.Random(config.seed + 1).sample(range(pool), config.heldout))
    train_records = [r for i, r in enumerate(records) if i not in held_ids]
    held = [r for i, r in enumerate(records) if i in held_ids]
    if isinstance(store, TokenFeatureStores):
        store.keep(held)
    fresh_from = 1 + len(config.extra_features) - config.fresh_stores
    batches = SequenceBatches(
        train_records,
        config.batch_size,
        config.max_seq_len,
        _order_seed(config),
        store,
        fresh_from=fresh_from,
        fresh_rows=fresh_rows(config) if config.fresh_stores else 0,
    )
    heldout = None
    if held:
        heldout = SequenceBatches(
            held, min(config.batch_size, len(held)), config.max_seq_len, config.seed, store
        )
    return batches, heldout


def _save_checkpoint(
    path: str,
    drafter,
    optimizer,
    scheduler,
    step: int,
    seconds: float,
    config: TrainConfig,
    sequences: int,
    schedule_fitted: bool = False,
) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    torch.save(
        {
            "drafter": drafter.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "step": step,
            "train_seconds": seconds,
            "config": dataclasses.asdict(config),
            "sequences": sequences,
            "schedule_fitted": schedule_fitted,
        },
        tmp,
    )
    os.replace(tmp, path)


def train(config: TrainConfig, target: torch.nn.Module | None = None) -> dict:
    """Run (or resume) training; returns the summary also written to ``train_summary.json``."""
    from transformers import AutoModelForCausalLM

    started = time.time()
    if config.threads:
        torch.set_num_threads(config.threads)
    if target is None:
        dtype = torch.bfloat16 if config.device.startswith("cuda") else torch.float32
        target = AutoModelForCausalLM.from_pretrained(config.target, dtype=dtype)
    target = target.to(config.device).eval().requires_grad_(False)
    ckpt_path = os.path.join(config.output, CHECKPOINT)
    state = None
    if config.resume and os.path.exists(ckpt_path):
        state = torch.load(ckpt_path, map_location=config.device, weights_only=False)
    resumed = state["config"] if state is not None else None
    config = dataclasses.replace(config, order_seed=resolve_order_seed(config, resumed))
    # A schedule sized by --schedule-minutes keeps its length when the run resumes.
    schedule_fitted = config.schedule_minutes is None or bool(state and state.get("schedule_fitted"))
    if config.schedule_minutes is not None and schedule_fitted:
        config = dataclasses.replace(config, steps=resumed["steps"])
    batches, heldout = load_training_data(config, target)
    if batches.store is not None:
        stored = batches.store.layer_ids
        if config.target_layer_ids is None:
            config = dataclasses.replace(config, target_layer_ids=stored)
        elif list(config.target_layer_ids) != stored:
            raise train_error("target_layer_ids", config.target_layer_ids, f"the feature store's {stored}")
    drafter = build_drafter(config, target).to(config.device).train()
    optimizer = torch.optim.AdamW(
        drafter.parameters(), lr=config.lr, weight_decay=config.weight_decay, betas=(0.9, 0.95)
    )
    schedule = CosineSchedule(config.warmup_steps, config.steps, config.min_lr_ratio)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    weights = position_weights(config.block_size, config.gamma)

    log_path = os.path.join(config.output, "train_log.jsonl")
    start_step, earlier_seconds = 0, 0.0
    if state is not None:
        drafter.load_state_dict(state["drafter"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start_step, earlier_seconds = state["step"], state["train_seconds"]
        if state.get("sequences", len(batches.records)) != len(batches.records):
            raise ValueError(
                f"{ckpt_path}: sequences is {state['sequences']}; "
                f"expected {len(batches.records)} "
                "(the data changed since this checkpoint: use the same --data, --features, "
                "--extra-features, --num-chunks and --heldout, or a new --out)"
            )
    os.makedirs(config.output, exist_ok=True)
    if start_step == 0 and os.path.exists(log_path):
        os.remove(log_path)

    evaluates = heldout is not None and bool(config.eval_every)
    # While --schedule-minutes sizes the schedule: from this command's start (a resumed run whose
    # schedule was sized keeps it), None without the flag.
    pacer, steps_cap = None, config.steps
    if not schedule_fitted:
        pacer = SchedulePacer(60 * config.schedule_minutes, config.eval_every if evaluates else 0)

    def save_checkpoint(steps_done: int) -> None:
        _save_checkpoint(
            ckpt_path,
            drafter,
            optimizer,
            scheduler,
            steps_done,
            earlier_seconds + time.time() - started,
            config,
            len(batches.records),
            schedule_fitted,
        )

    history: list[dict] = []
    stopped_at = None

    def heldout_row() -> dict:
        eval_started = time.time()
        row = heldout_acceptance(drafter, target, heldout, config, weights)
        if pacer is not None:
            pacer.evaluated(time.time() - eval_started)
        return row

    if start_step == 0 and evaluates:
        # The weights training starts from (a warm start's), scored before any update: the step-0 row
        # comes after one optimizer step, and a fresh AdamW's first step moves every weight by about
        # the learning rate, so only this row says what a warm restart costs before it pays.
        start_row = {"step": -1, "seconds": 0.0, **heldout_row()}
        with open(log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(start_row) + "\n")
    bar = tqdm(initial=start_step, total=config.steps, desc="training", unit="step")
    step = start_step - 1
    while step + 1 < config.steps:
        step += 1
        out = train_step(drafter, target, batches, config, step, weights)
        optimizer.zero_grad(set_to_none=True)
        out.loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(drafter.parameters(), config.grad_clip)
        optimizer.step()
        scheduler.step()
        if step % config.log_every == 0 or step == config.steps - 1:
            row = {
                "step": step,
                "loss": round(out.loss.item(), 5),
                **({"ce": round(out.ce.item(), 5)} if config.distill_weight else {}),
                "lr": scheduler.get_last_lr()[0],
                "grad_norm": round(float(grad_norm), 4),
                "acc": [round(float(a), 4) for a in out.accuracy[1:4]],
                # with sampled positions a block's run of hits is cut by unsampled positions: not logged
                "expected_accept": (
                    None if config.sample_positions else round(float(out.expected_accept), 4)
                ),
                "blocks": (step + 1) * config.batch_size * config.num_anchors,
                "seconds": round(earlier_seconds + time.time() - started, 1),
            }
            if evaluates and (step % config.eval_every == 0 or step == config.steps - 1):
                row.update(heldout_row())
            history.append(row)
            with open(log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
            bar.set_postfix(loss=row["loss"], acc1=row["acc"][0] if row["acc"] else None)
        if (step + 1) % config.save_every == 0 or step == config.steps - 1:
            save_checkpoint(step + 1)
        if config.snapshot_every and (step + 1) % config.snapshot_every == 0:
            snapshot = os.path.join(config.output, "checkpoints", f"step-{step + 1:06d}.pt")
            torch.save(drafter.state_dict(), snapshot + ".tmp")
            os.replace(snapshot + ".tmp", snapshot)
        bar.update(1)
        fitted = None if pacer is None else pacer.step_done(step, time.time(), started, steps_cap)
        if fitted is not None and (fitted != config.steps or not schedule_fitted):
            tqdm.write(
                f"train: --schedule-minutes {config.schedule_minutes}: {pacer.step_s:.2f} s a step, "
                f"so the schedule runs {fitted} steps"
            )
            schedule.retotal(step + 1, fitted)
            config, schedule_fitted = dataclasses.replace(config, steps=fitted), True
            bar.total = fitted
        out_of_time = config.max_minutes is not None and time.time() - started > 60 * config.max_minutes
        if out_of_time and step < config.steps - 1:
            # Time box: checkpoint, export what there is, and let a rerun finish the schedule.
            save_checkpoint(step + 1)
            stopped_at = step + 1
            break
    bar.close()

    drafter.eval()
    save_drafter(
        drafter, config.output, dtype=torch.bfloat16, max_shard_bytes=int(config.max_shard_mb * 2**20)
    )
    summary = {
        "config": dataclasses.asdict(config),
        "sequences": len(batches.records),
        "final": history[-1] if history else None,
        "steps_done": stopped_at if stopped_at is not None else config.steps,
        "train_seconds": round(earlier_seconds + time.time() - started, 1),
        "device": config.device,
        "precision": resolve_precision(config.precision, config.device),
    }
    with open(os.path.join(config.output, "train_summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
    return summary


def export_snapshot(train_output: str, snapshot: str, out: str, target: torch.nn.Module | None = None) -> str:
    """Write a kept snapshot (``checkpoints/step-N.pt``) of a training run as a drafter in ``out``."""
    from transformers import AutoModelForCausalLM

    state = torch.load(os.path.join(train_output, CHECKPOINT), map_location="cpu", weights_only=False)
    config = TrainConfig(**state["config"])
    if target is None:
        target = AutoModelForCausalLM.from_pretrained(config.target, dtype=torch.float32)
    drafter = build_drafter(dataclasses.replace(config, init_from_target=False, init_drafter=None), target)
    drafter.load_state_dict(torch.load(snapshot, map_location="cpu", weights_only=True))
    save_drafter(drafter.eval(), out, dtype=torch.bfloat16, max_shard_bytes=int(config.max_shard_mb * 2**20))
    return out
