"""Train a DFlash drafter for a frozen Hugging Face target; resumable; exports the published format.

    from sglang_dflash.train.trainer import TrainConfig, train
    train(TrainConfig(target="path/to/target", data="records.jsonl", output="out/drafter"))

Every step: a batch of self-distilled sequences -> the frozen target's hidden states of the
chosen layers -> ``num_anchors`` blocks per sequence -> one drafter forward -> weighted
cross-entropy (see :mod:`.objective`).  AdamW, linear warmup then cosine decay, bf16 autocast on
CUDA.  ``output/checkpoints/last.pt`` is rewritten every ``save_every`` steps; a rerun with the
same config resumes from it and reproduces the uninterrupted run exactly (data order and anchors
are functions of the seed and the step).  The final drafter is written to ``output/`` in the
published safetensors layout, plus ``train_log.jsonl`` and ``train_summary.json``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import time
from dataclasses import dataclass, field
from typing import Any

import torch
from tqdm import tqdm

from ..checkpoint import save_drafter
from ..config import draft_config_for_target
from ..draft_model import DFlashDraftModel
from .data import read_records
from .objective import build_blocks, dflash_loss, position_weights, sample_anchors

CHECKPOINT = os.path.join("checkpoints", "last.pt")


@dataclass
class TrainConfig:
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
    device: str = field(default_factory=lambda: "cuda" if torch.cuda.is_available() else "cpu")
    save_every: int = 200
    log_every: int = 10
    max_shard_mb: float = 15.0
    resume: bool = True

    def __post_init__(self) -> None:
        positive = {"steps": self.steps, "batch_size": self.batch_size, "num_anchors": self.num_anchors,
                    "max_seq_len": self.max_seq_len, "num_draft_layers": self.num_draft_layers,
                    "save_every": self.save_every, "log_every": self.log_every}
        for name, value in positive.items():
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} is invalid; expected an integer >= 1")
        if self.block_size < 2:
            raise ValueError(f"block_size={self.block_size!r} is invalid; expected >= 2")
        if not self.lr > 0:
            raise ValueError(f"lr={self.lr!r} is invalid; expected a positive number")
        if self.gamma is not None and not self.gamma > 0:
            raise ValueError(f"gamma={self.gamma!r} is invalid; expected a positive number or None")


def lr_factor(step: int, warmup: int, total: int, min_ratio: float) -> float:
    """Linear warmup to 1, then cosine decay to ``min_ratio`` at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


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
    dcfg = draft_config_for_target(tcfg, num_layers=config.num_draft_layers, block_size=config.block_size,
                                   target_layer_ids=config.target_layer_ids, mask_token_id=mask_token_id, **overrides)
    if config.mask_token is not None:
        dcfg = dcfg.replace(mask_token=config.mask_token)
    torch.manual_seed(config.seed)
    drafter = DFlashDraftModel(dcfg)
    with torch.no_grad():
        for name, p in drafter.named_parameters():
            if not name.endswith("norm.weight"):
                p.normal_(0.0, tcfg.initializer_range if hasattr(tcfg, "initializer_range") else 0.02)
    if config.init_from_target:
        init_from_target_layers(drafter, target)
    return drafter


class SequenceBatches:
    """Deterministic shuffled batches: batch ``step`` is a function of (seed, step) alone."""

    def __init__(self, records: list[dict], batch_size: int, max_seq_len: int, seed: int) -> None:
        self.records = [r for r in records if r["loss_start"] < min(len(r["input_ids"]), max_seq_len)]
        if not self.records:
            raise ValueError(f"no record has a response token within max_seq_len={max_seq_len}")
        self.batch_size, self.max_seq_len, self.seed = batch_size, max_seq_len, seed
        self.per_epoch = max(1, len(self.records) // batch_size)

    def __call__(self, step: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """input_ids, attention mask, loss mask: [R, T] right-padded."""
        epoch, index = divmod(step, self.per_epoch)
        order = list(range(len(self.records)))
        random.Random(self.seed * 1_000_003 + epoch).shuffle(order)
        chosen = [self.records[i] for i in order[index * self.batch_size:(index + 1) * self.batch_size]]
        seqs = [r["input_ids"][: self.max_seq_len] for r in chosen]
        width = max(map(len, seqs))
        ids = torch.zeros(len(seqs), width, dtype=torch.long)
        attn = torch.zeros(len(seqs), width, dtype=torch.bool)
        loss = torch.zeros(len(seqs), width, dtype=torch.bool)
        for row, (seq, rec) in enumerate(zip(seqs, chosen)):
            ids[row, : len(seq)] = torch.tensor(seq)
            attn[row, : len(seq)] = True
            loss[row, rec["loss_start"]: len(seq)] = True
        return ids, attn, loss


def target_features(target: torch.nn.Module, layer_ids: tuple[int, ...], ids: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        out = target.model(input_ids=ids, attention_mask=attn.long(), output_hidden_states=True, use_cache=False)
        return DFlashDraftModel.select_target_features(out.hidden_states, layer_ids)


def train_step(drafter, target, batches: SequenceBatches, config: TrainConfig, step: int, weights: torch.Tensor):
    ids, attn, loss_mask = (t.to(config.device) for t in batches(step))
    gen = torch.Generator().manual_seed(config.seed * 7919 + step)
    anchors = sample_anchors(loss_mask.cpu(), config.num_anchors, gen)
    blocks = build_blocks(ids.cpu(), loss_mask.cpu(), anchors, drafter.block_size, drafter.mask_token_id)
    blocks = dataclasses.replace(blocks, **{f.name: getattr(blocks, f.name).to(config.device) for f in dataclasses.fields(blocks)})
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if config.device.startswith("cuda") else torch.autocast("cpu", enabled=False)
    with autocast:
        feats = target_features(target, drafter.config.target_layer_ids, ids, attn)
        return dflash_loss(drafter, target.get_input_embeddings(), target.get_output_embeddings(), feats, attn, blocks, weights)


def _save_checkpoint(path: str, drafter, optimizer, scheduler, step: int, seconds: float, config: TrainConfig) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    torch.save({"drafter": drafter.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                "step": step, "train_seconds": seconds, "config": dataclasses.asdict(config)}, tmp)
    os.replace(tmp, path)


def train(config: TrainConfig, target: torch.nn.Module | None = None) -> dict:
    """Run (or resume) training; returns the summary also written to ``train_summary.json``."""
    from transformers import AutoModelForCausalLM

    started = time.time()
    if target is None:
        dtype = torch.bfloat16 if config.device.startswith("cuda") else torch.float32
        target = AutoModelForCausalLM.from_pretrained(config.target, dtype=dtype)
    target = target.to(config.device).eval().requires_grad_(False)
    batches = SequenceBatches(read_records(config.data), config.batch_size, config.max_seq_len, config.seed)
    drafter = build_drafter(config, target).to(config.device).train()
    optimizer = torch.optim.AdamW(drafter.parameters(), lr=config.lr, weight_decay=config.weight_decay, betas=(0.9, 0.95))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_factor(s, config.warmup_steps, config.steps, config.min_lr_ratio))
    weights = position_weights(config.block_size, config.gamma)

    ckpt_path = os.path.join(config.output, CHECKPOINT)
    log_path = os.path.join(config.output, "train_log.jsonl")
    start_step, earlier_seconds = 0, 0.0
    if config.resume and os.path.exists(ckpt_path):
        state = torch.load(ckpt_path, map_location=config.device, weights_only=False)
        drafter.load_state_dict(state["drafter"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start_step, earlier_seconds = state["step"], state["train_seconds"]
    os.makedirs(config.output, exist_ok=True)
    if start_step == 0 and os.path.exists(log_path):
        os.remove(log_path)

    history: list[dict] = []
    bar = tqdm(range(start_step, config.steps), initial=start_step, total=config.steps, desc="training", unit="step")
    for step in bar:
        out = train_step(drafter, target, batches, config, step, weights)
        optimizer.zero_grad(set_to_none=True)
        out.loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(drafter.parameters(), config.grad_clip)
        optimizer.step()
        scheduler.step()
        if step % config.log_every == 0 or step == config.steps - 1:
            row = {"step": step, "loss": round(out.loss.item(), 5), "lr": scheduler.get_last_lr()[0],
                   "grad_norm": round(float(grad_norm), 4), "acc": [round(float(a), 4) for a in out.accuracy[1:4]],
                   "expected_accept": round(float(out.expected_accept), 4)}
            history.append(row)
            with open(log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
            bar.set_postfix(loss=row["loss"], acc1=row["acc"][0] if row["acc"] else None)
        if (step + 1) % config.save_every == 0 or step == config.steps - 1:
            _save_checkpoint(ckpt_path, drafter, optimizer, scheduler, step + 1,
                             earlier_seconds + time.time() - started, config)

    drafter.eval()
    save_drafter(drafter, config.output, dtype=torch.bfloat16, max_shard_bytes=int(config.max_shard_mb * 2**20))
    summary = {"config": dataclasses.asdict(config), "sequences": len(batches.records), "final": history[-1] if history else None,
               "train_seconds": round(earlier_seconds + time.time() - started, 1), "device": config.device}
    with open(os.path.join(config.output, "train_summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
    return summary
