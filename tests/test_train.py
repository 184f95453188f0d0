"""Training recipe on CPU: the objective's masks/labels, loss going down, acceptance going up,
export -> load -> identical outputs, exact resume, and prompts disjoint from the evaluation sets."""

import ast
import datetime
import functools
import gzip
import json
import math
import os
import random
import re
import statistics
import string
import subprocess
import sys
import types
from collections.abc import Callable, Sequence
from dataclasses import replace

import pytest
import torch

from sglang_dflash import SamplingParams, load_drafter, spec_generate
from sglang_dflash.draft_model import DFlashDraftModel
from sglang_dflash.testing import make_tiny_drafter, make_tiny_target, tiny_train_config
from sglang_dflash.train import trainer as trainer_module
from sglang_dflash.train.data import (
    builtin_prompts,
    overlapping_prompts,
    parse_python,
    read_prompts,
    read_records,
)
from sglang_dflash.train.objective import (
    IGNORE,
    build_blocks,
    context_visibility,
    position_weights,
    sample_anchors,
)
from sglang_dflash.train.trainer import (
    CosineSchedule,
    SchedulePacer,
    SequenceBatches,
    TrainConfig,
    build_drafter,
    fitted_steps,
    init_from_target_layers,
    load_training_data,
    resolve_order_seed,
    train,
)

SHARED_DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")


def test_blocks_labels_and_visibility():
    ids = torch.arange(100, 112)[None]  # tokens 100..111 at positions 0..11
    loss_mask = torch.zeros(1, 12, dtype=torch.bool)
    loss_mask[0, 5:] = True  # response starts at position 5
    anchors = torch.tensor([[4, 9, -1]])
    blocks = build_blocks(ids, loss_mask, anchors, block_size=4, mask_token_id=7)
    assert blocks.tokens.view(3, 4)[:2].tolist() == [[104, 7, 7, 7], [109, 7, 7, 7]]
    assert blocks.positions.view(3, 4)[:2].tolist() == [[4, 5, 6, 7], [9, 10, 11, 12]]
    assert blocks.labels.view(3, 4).tolist() == [
        [IGNORE, 105, 106, 107],
        [IGNORE, 110, 111, IGNORE],
        [IGNORE] * 4,
    ]
    visible = context_visibility(blocks, torch.ones(1, 12, dtype=torch.bool))
    assert visible[0, 0].nonzero().flatten().tolist() == [0, 1, 2, 3]  # block at anchor 4 sees tokens 0..3
    assert visible[0, 7].nonzero().flatten().tolist() == list(range(9))  # block at anchor 9 sees 0..8
    assert not visible[0, 8:].any()  # the padding block sees no context
    assert blocks.block_ids.view(3, 4)[:, 0].tolist() == [0, 1, -1]


def test_anchors_only_where_the_next_token_is_a_response_token():
    loss_mask = torch.zeros(2, 10, dtype=torch.bool)
    loss_mask[0, 6:] = True
    anchors = sample_anchors(loss_mask, 8, torch.Generator().manual_seed(0))
    assert anchors[0][anchors[0] >= 0].tolist() == [5, 6, 7, 8]
    assert (anchors[1] == -1).all()


def test_position_weights_decay_and_skip_the_anchor():
    w = position_weights(4, gamma=2.0)
    assert w[0] == 0 and w[1] == 1 and torch.allclose(w[2:], torch.exp(-torch.tensor([0.5, 1.0])))
    assert position_weights(4, None).tolist() == [0, 1, 1, 1]


def _block_batch_with_padding(vocab: int, block_size: int, mask_token_id: int):
    """Two sequences of 14 tokens, the second's response too short for its 6 anchors (padding blocks)."""
    ids = torch.randint(0, vocab, (2, 14), generator=torch.Generator().manual_seed(3))
    loss_mask = torch.zeros(2, 14, dtype=torch.bool)
    loss_mask[0, 4:] = True
    loss_mask[1, 11:] = True
    anchors = sample_anchors(loss_mask, 6, torch.Generator().manual_seed(4))
    assert (anchors[1] == -1).any() and (anchors[0] >= 0).all()
    return build_blocks(ids, loss_mask, anchors, block_size, mask_token_id)


@pytest.mark.parametrize(("precision", "group_blocks"), [("fp32", 16), ("fp32", 2), ("fp32", 1), ("bf16", 2)])
def test_the_factored_block_attention_trains_exactly_as_the_dense_mask(monkeypatch, precision, group_blocks):
    from sglang_dflash import draft_model
    from sglang_dflash.draft_model import BlockVisibility
    from sglang_dflash.train import objective
    from sglang_dflash.train.trainer import train_autocast

    # Groups of 1 and 2 blocks (of 6) stop their context scores at earlier columns than one group of all.
    monkeypatch.setattr(draft_model, "GROUP_BLOCKS", group_blocks)

    target = make_tiny_target("qwen3", seed=0)
    blocks = _block_batch_with_padding(target.config.vocab_size, 4, 3)
    drafter = make_tiny_drafter(target.config, num_layers=2, block_size=4).train()
    width = drafter.config.num_context_layers * target.config.hidden_size
    features = torch.randn(2, 14, width, generator=torch.Generator().manual_seed(5))
    valid = torch.ones(2, 14, dtype=torch.bool)
    weights = position_weights(4, 2.0)

    def loss_and_grads(drafter):
        drafter.zero_grad()
        with train_autocast(precision, "cpu"):
            out = objective.dflash_loss(
                drafter,
                target.get_input_embeddings(),
                target.get_output_embeddings(),
                features,
                valid,
                blocks,
                weights,
            )
        out.loss.backward()
        return out, {name: p.grad.clone() for name, p in drafter.named_parameters()}

    assert isinstance(
        objective.block_attention(drafter, blocks, torch.arange(14)[None], valid)[False][False],
        BlockVisibility,
    )
    factored, factored_grads = loss_and_grads(drafter)

    def dense(drafter, blocks, context_positions, context_visible):
        return drafter.attention_masks(blocks.positions, context_positions, context_visible, blocks.block_ids)

    monkeypatch.setattr(objective, "block_attention", dense)
    masked, masked_grads = loss_and_grads(drafter)
    # float32: the same numbers; bf16 autocast: the same up to its rounding (a few parts in a hundred).
    tol = {"fp32": 1e-5, "bf16": 3e-2}[precision]
    assert factored.loss.item() == pytest.approx(masked.loss.item(), rel=tol)
    assert torch.equal(factored.accuracy.isnan(), masked.accuracy.isnan())
    for name, grad in masked_grads.items():
        assert (factored_grads[name] - grad).norm() <= tol * grad.norm() + 1e-12, name
    assert any(g.abs().sum() > 0 for g in masked_grads.values())


def test_a_causal_drafter_keeps_the_dense_block_mask():
    from sglang_dflash.train.objective import block_attention

    target = make_tiny_target("qwen3", seed=0)
    blocks = _block_batch_with_padding(target.config.vocab_size, 4, 3)
    valid = torch.ones(2, 14, dtype=torch.bool)
    visible = context_visibility(blocks, valid)
    causal = make_tiny_drafter(target.config, num_layers=2, block_size=4, is_causal=True)
    masks = block_attention(causal, blocks, torch.arange(14)[None].expand(2, -1), visible)
    assert isinstance(masks[False][True], torch.Tensor) and masks[False][True].dtype == torch.bool


def config(path, output, **kw):
    return tiny_train_config(path, output, **kw)


@pytest.fixture(scope="module")
def corpus(tiny_corpus):
    return tiny_corpus


@pytest.fixture(scope="module")
def trained(tiny_trained):
    return tiny_trained


def training_rows(log_path) -> list[dict]:
    """The rows of a training log that follow optimizer steps (the held-out row of step -1 left out)."""
    return [row for row in map(json.loads, open(log_path)) if row["step"] >= 0]


def test_loss_goes_down_and_artifacts_are_written(trained):
    out, summary = trained
    log = training_rows(out / "train_log.jsonl")
    assert log[-1]["loss"] < 0.5 * log[0]["loss"]
    assert summary["final"]["expected_accept"] > 1.0
    assert os.path.exists(out / "model.safetensors") and os.path.exists(out / "train_summary.json")


def test_trained_drafter_is_accepted_far_more_than_a_random_one(corpus, trained):
    target, _, records = corpus
    drafter = load_drafter(str(trained[0]), target_config=target.config)
    rand = make_tiny_drafter(
        target.config, seed=1, num_layers=2, target_layer_ids=list(drafter.config.target_layer_ids)
    )
    prompts = [r["input_ids"][: r["loss_start"]] for r in records[:64]]  # the fixed training corpus
    params = SamplingParams(max_new_tokens=40)
    tau_trained = spec_generate(target, drafter, prompts, params).mean_tau
    tau_random = spec_generate(target, rand, prompts, params).mean_tau
    assert tau_random < 1.3, tau_random
    assert tau_trained > 2.0, tau_trained


def test_export_load_gives_identical_outputs(corpus, trained):
    target, _, records = corpus
    out, _ = trained
    state = torch.load(out / "checkpoints" / "last.pt", weights_only=False)["drafter"]
    in_memory = load_drafter(str(out))
    in_memory.load_state_dict({k: v.to(torch.bfloat16).float() for k, v in state.items()})  # export is bf16
    exported = load_drafter(str(out))
    prompts = [r["input_ids"][: r["loss_start"]] for r in records[64:80]]
    params = SamplingParams(max_new_tokens=24)
    a, b = spec_generate(target, in_memory, prompts, params), spec_generate(target, exported, prompts, params)
    assert a.token_ids == b.token_ids and a.accept_lens == b.accept_lens


def test_resume_reproduces_the_uninterrupted_run(corpus, tmp_path, monkeypatch):
    target, path, _ = corpus
    straight = tmp_path / "straight"
    train(config(path, straight, steps=20, save_every=5), target=target)

    resumed = tmp_path / "resumed"
    real_step = trainer_module.train_step

    def crash_after_12(drafter, target, batches, cfg, step, weights):
        if step == 12:
            raise KeyboardInterrupt
        return real_step(drafter, target, batches, cfg, step, weights)

    monkeypatch.setattr(trainer_module, "train_step", crash_after_12)
    with pytest.raises(KeyboardInterrupt):
        train(config(path, resumed, steps=20, save_every=5), target=target)
    assert torch.load(resumed / "checkpoints" / "last.pt", weights_only=False)["step"] == 10
    monkeypatch.setattr(trainer_module, "train_step", real_step)
    train(config(path, resumed, steps=20, save_every=5), target=target)
    a = torch.load(straight / "checkpoints" / "last.pt", weights_only=False)["drafter"]
    b = torch.load(resumed / "checkpoints" / "last.pt", weights_only=False)["drafter"]
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_order_seed_is_the_flag_a_resumed_runs_own_or_a_warm_restarts_weights(corpus, trained, tmp_path):
    from safetensors.torch import load_file, save_file

    target, path, _ = corpus
    earlier, _ = trained
    other = tmp_path / "other-start"  # the same drafter, one weight changed
    other.mkdir()
    for name in ("config.json", "model.safetensors"):
        (other / name).write_bytes((earlier / name).read_bytes())
    weights = load_file(other / "model.safetensors")
    weights["fc.weight"][0, 0] += 1.0
    save_file(weights, other / "model.safetensors")

    fresh = config(path, tmp_path / "fresh", seed=3)
    warm = config(path, tmp_path / "warm", seed=3, init_drafter=str(earlier))
    assert resolve_order_seed(fresh) == 3 and resolve_order_seed(config(path, "x", order_seed=9)) == 9
    # A warm restart's order follows its starting weights: the same start, the same order.
    warm_seed = resolve_order_seed(warm)
    other_seed = resolve_order_seed(config(path, tmp_path / "warm", seed=3, init_drafter=str(other)))
    assert warm_seed == resolve_order_seed(warm) and warm_seed not in (3, other_seed)
    first = {
        seed: [r["input_ids"] for r in load_training_data(config(path, "x", order_seed=seed))[0]._chosen(0)]
        for seed in (3, warm_seed)
    }
    assert first[3] != first[warm_seed]

    summary = train(replace(warm, steps=2), target=target)
    assert summary["config"]["order_seed"] == warm_seed
    # Resumed, a run keeps the order it began with, whatever its start holds by then; a checkpoint from
    # before order seeds ran in its seed's order.
    saved = torch.load(tmp_path / "warm" / "checkpoints" / "last.pt", weights_only=False)["config"]
    moved = config(path, tmp_path / "warm", seed=3, init_drafter=str(other))
    assert resolve_order_seed(moved, saved) == warm_seed
    del saved["order_seed"]
    assert resolve_order_seed(moved, saved) == 3
    with pytest.raises(ValueError, match="--order-seed is -1"):
        config(path, "x", order_seed=-1)


def test_init_from_target_copies_matching_layers():
    target = make_tiny_target("qwen3", seed=2)
    drafter = make_tiny_drafter(target.config, num_layers=2)
    copied = init_from_target_layers(drafter, target)
    assert "layers.1.self_attn.q_proj.weight" in copied and "layers.0.mlp.down_proj.weight" in copied
    assert torch.equal(
        drafter.layers[1].self_attn.q_proj.weight, target.model.layers[5].self_attn.q_proj.weight
    )


def test_warm_start_begins_from_the_earlier_drafter_and_refuses_another_shape(corpus, trained, tmp_path):
    target, path, _ = corpus
    earlier, summary = trained
    first_loss = {}
    for name, extra in (("fresh", {}), ("warm", {"init_drafter": str(earlier)})):
        out = tmp_path / name
        train(config(path, out, steps=1, lr=1e-9, warmup_steps=1, log_every=1, **extra), target=target)
        first_loss[name] = training_rows(out / "train_log.jsonl")[0]["loss"]
    # The warm run's first step is evaluated with the earlier drafter's weights: its loss, not a fresh one's.
    assert first_loss["warm"] < 0.5 * first_loss["fresh"], first_loss
    assert first_loss["warm"] < 2 * summary["final"]["loss"] + 0.1, (first_loss, summary["final"])
    with pytest.raises(ValueError, match=r"--init-drafter is .*block_size 4 \(this run: 8\)"):
        train(config(path, tmp_path / "other", block_size=8, init_drafter=str(earlier)), target=target)
    with pytest.raises(ValueError, match="--init-drafter is .*valid config.json"):
        train(config(path, tmp_path / "none", init_drafter=str(tmp_path / "missing")), target=target)


def test_a_warm_start_is_scored_on_the_held_out_records_before_its_first_update(corpus, trained, tmp_path):
    from sglang_dflash.train.trainer import heldout_acceptance

    target, path, _ = corpus
    earlier, _ = trained
    cfg = config(path, tmp_path / "warm", steps=2, log_every=1, heldout=8, eval_every=1, warmup_steps=0)
    cfg = replace(cfg, init_drafter=str(earlier))
    train(cfg, target=target)
    rows = [json.loads(line) for line in open(tmp_path / "warm" / "train_log.jsonl")]
    assert [row["step"] for row in rows] == [-1, 0, 1]
    assert set(rows[0]) == {"step", "seconds", "heldout_loss", "heldout_accept"}
    # The row of step -1 is the earlier drafter's own score; the row of step 0 follows a full-rate update.
    _, heldout = load_training_data(cfg, target)
    drafter = build_drafter(cfg, target)
    expected = heldout_acceptance(drafter, target, heldout, cfg, position_weights(cfg.block_size, cfg.gamma))
    assert rows[0]["heldout_loss"] == pytest.approx(expected["heldout_loss"], abs=1e-5)
    assert rows[1]["heldout_loss"] != pytest.approx(rows[0]["heldout_loss"], abs=1e-5)
    # A run without a hold-out logs training rows only.
    train(config(path, tmp_path / "plain", steps=2, log_every=1), target=target)
    assert [row["step"] for row in training_rows(tmp_path / "plain" / "train_log.jsonl")] == [0, 1]
    assert len(open(tmp_path / "plain" / "train_log.jsonl").readlines()) == 2


def test_the_heldout_score_keeps_its_own_block_count_whatever_the_steps_draw(corpus, trained, tmp_path):
    from sglang_dflash.train.trainer import HELDOUT_ANCHORS, heldout_acceptance, train_step

    target, path, _ = corpus
    earlier, _ = trained
    scores = {}
    for anchors in (2, HELDOUT_ANCHORS, 4 * HELDOUT_ANCHORS):
        cfg = config(path, tmp_path / str(anchors), heldout=8, num_anchors=anchors, init_drafter=str(earlier))
        _, heldout = load_training_data(cfg, target)
        drafter = build_drafter(cfg, target)
        scores[anchors] = heldout_acceptance(
            drafter, target, heldout, cfg, position_weights(cfg.block_size, cfg.gamma)
        )
    # A run drawing 2 or 128 blocks a sequence is scored on the same held-out blocks as one drawing 32.
    assert scores[2] == scores[HELDOUT_ANCHORS] == scores[4 * HELDOUT_ANCHORS], scores
    # The steps themselves do draw by the run's count: 2 blocks a sequence are fewer than 32.
    cfg = config(path, tmp_path / "count", heldout=8, num_anchors=2)
    _, heldout = load_training_data(cfg, target)
    drafter = build_drafter(cfg, target)
    weights = position_weights(cfg.block_size, cfg.gamma)
    few = train_step(drafter, target, heldout, cfg, 0, weights)
    many = train_step(drafter, target, heldout, replace(cfg, num_anchors=HELDOUT_ANCHORS), 0, weights)
    assert few.loss.item() != pytest.approx(many.loss.item(), abs=1e-6)


def test_a_grown_warm_start_drafts_what_the_earlier_drafter_did_then_trains_its_new_layer(
    corpus, trained, tmp_path
):
    target, path, _ = corpus
    earlier, _ = trained
    logs = {}
    same_context = {"target_layer_ids": [1, 3]}  # the earlier drafter's (the default follows the layer count)
    for name, layers in (("same", 2), ("grown", 3)):
        out = tmp_path / name
        train(
            config(
                path,
                out,
                steps=3,
                num_draft_layers=layers,
                init_drafter=str(earlier),
                **same_context,
                log_every=1,
            ),
            target=target,
        )
        logs[name] = training_rows(out / "train_log.jsonl")
    # Step 1 is scored before any update: the new layer adds exactly zero to the residual stream.
    assert logs["grown"][0]["loss"] == pytest.approx(logs["same"][0]["loss"], rel=1e-6), logs
    grown = load_drafter(str(tmp_path / "grown"), target_config=target.config)
    assert len(grown.layers) == 3
    assert grown.layers[2].self_attn.o_proj.weight.abs().sum() > 0  # trained away from zero
    start = build_drafter(
        config(path, tmp_path / "x", num_draft_layers=3, init_drafter=str(earlier), **same_context), target
    )
    before = load_drafter(str(earlier), target_config=target.config)
    assert all(
        torch.equal(a.float(), b.float())
        for a, b in zip(before.layers[1].parameters(), start.layers[1].parameters())
    )
    assert torch.equal(
        start.layers[2].self_attn.q_proj.weight, target.model.layers[-1].self_attn.q_proj.weight
    )
    assert (
        not start.layers[2].mlp.down_proj.weight.any() and not start.layers[2].self_attn.o_proj.weight.any()
    )
    with pytest.raises(
        ValueError, match=r"--init-drafter is .*fewer layers.*num_hidden_layers 2 \(this run: 1\)"
    ):
        train(
            config(path, tmp_path / "shrunk", num_draft_layers=1, init_drafter=str(earlier), **same_context),
            target=target,
        )


def test_bad_train_config_and_records(tmp_path):
    with pytest.raises(ValueError, match="--steps is 0"):
        TrainConfig(target="t", data="d", output="o", steps=0)
    with pytest.raises(ValueError, match="--block-size is 1"):
        TrainConfig(target="t", data="d", output="o", block_size=1)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"input_ids": [1, 2], "loss_start": 2}) + "\n")
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        read_records(str(bad))


def _store_records(counts: list[int]) -> list[dict]:
    """Records numbered by their input ids, ``counts[s]`` of them from store ``s``."""
    stores = [store for store, count in enumerate(counts) for _ in range(count)]
    return [{"input_ids": [i, 1, 2], "loss_start": 1, "store": store} for i, store in enumerate(stores)]


def test_batches_without_a_fresh_share_keep_the_order_every_committed_run_trained_in():
    records = _store_records([30, 13])
    batches = SequenceBatches(records, 8, 64, seed=11)
    for step in range(12):  # past the first epoch (5 batches of 8 of 43)
        epoch, index = divmod(step, 43 // 8)
        order = list(range(43))
        random.Random(11 * 1_000_003 + epoch).shuffle(order)
        assert batches._chosen(step) == [records[i] for i in order[index * 8 : (index + 1) * 8]]


def test_a_fresh_share_puts_the_fresh_stores_records_into_every_batch():
    records = _store_records([40, 20, 9, 3])  # stores 2 and 3 fresh: 12 records
    batches = SequenceBatches(records, 8, 64, seed=5, fresh_from=2, fresh_rows=2)
    drawn = [batches._chosen(step) for step in range(12)]
    assert all(len(batch) == 8 and sum(r["store"] >= 2 for r in batch) == 2 for batch in drawn)
    # Each group walks whole epochs of its own: 6 batches show every fresh record once, and the old
    # records (60, 6 a batch) once in 10 batches.
    fresh_ids = [r["input_ids"][0] for batch in drawn[:6] for r in batch if r["store"] >= 2]
    assert sorted(fresh_ids) == list(range(60, 72))
    old_ids = [r["input_ids"][0] for batch in drawn[:10] for r in batch if r["store"] < 2]
    assert sorted(old_ids) == list(range(60))
    assert drawn == [
        SequenceBatches(records, 8, 64, seed=5, fresh_from=2, fresh_rows=2)._chosen(s) for s in range(12)
    ]
    assert drawn != [
        SequenceBatches(records, 8, 64, seed=6, fresh_from=2, fresh_rows=2)._chosen(s) for s in range(12)
    ]
    with pytest.raises(
        ValueError,
        match=r"--fresh-stores splits the training records at store 4 into 72 old and 0 fresh; expected some",
    ):
        SequenceBatches(records, 8, 64, seed=5, fresh_from=4, fresh_rows=2)


def test_bad_fresh_share_settings_name_the_flag():
    def make(**kw):
        return TrainConfig(target="t", data="", output="o", features="a", extra_features=["b", "c"], **kw)

    assert make(fresh_stores=2, fresh_share=0.25).fresh_stores == 2
    with pytest.raises(
        ValueError, match=r"--fresh-share is 0.0; expected a share in \(0, 1\) with --fresh-stores 1"
    ):
        make(fresh_stores=1)
    with pytest.raises(ValueError, match=r"--fresh-share is 1.0; expected a share in \(0, 1\)"):
        make(fresh_stores=1, fresh_share=1.0)
    with pytest.raises(ValueError, match=r"--fresh-stores is 0; expected 1 to 2 \(the --extra-features"):
        make(fresh_share=0.25)
    with pytest.raises(ValueError, match=r"--fresh-stores is 3; expected 1 to 2"):
        make(fresh_stores=3, fresh_share=0.25)
    with pytest.raises(
        ValueError, match=r"--fresh-share is 0.05; expected a share of --batch-size 8 that rounds"
    ):
        make(fresh_stores=1, fresh_share=0.05)
    with pytest.raises(ValueError, match=r"--fresh-stores is -1; expected an integer >= 0"):
        make(fresh_stores=-1, fresh_share=0.25)


def test_builtin_prompts_are_deterministic_varied_and_disjoint_from_evaluation_sets():
    prompts = builtin_prompts()
    assert prompts == builtin_prompts() and len(prompts) > 1500 and len(set(prompts)) == len(prompts)
    kinds = {p.split()[0] for p in prompts}
    assert {"Complete", "Write", "Explain", "What"} <= kinds
    evaluation = read_prompts(os.path.join(SHARED_DATA, "humaneval.jsonl")) + read_prompts(
        os.path.join(SHARED_DATA, "gsm8k.jsonl")
    )
    assert len(evaluation) == 164 + 1319
    assert overlapping_prompts(prompts, evaluation) == []
    assert (
        overlapping_prompts(evaluation[:3] + prompts[:3], evaluation) == evaluation[:3]
    )  # the check has teeth


SENTINEL = object()  # prints as <object object at 0x...>: not Python


def test_signatures_with_machine_paths_or_unprintable_defaults_are_left_out():
    from sglang_dflash.train.data import _stable_signature

    def sep(path, separator="/"):
        pass

    def interpreter(executable=sys.executable):
        pass

    def sentinel(value=SENTINEL):
        pass

    assert _stable_signature(sep) == "(path, separator='/')"
    assert _stable_signature(interpreter) is None and _stable_signature(sentinel) is None


def test_evaluation_shaped_sources_are_opt_in_parse_as_python_and_stay_disjoint():
    from sglang_dflash.train.data import DEFAULT_SOURCES, code_completion_prompts, word_problems

    assert builtin_prompts() == builtin_prompts(sources=DEFAULT_SOURCES)  # the default mix is unchanged
    shaped = builtin_prompts(sources=("code-completions", "word-problems"))
    assert shaped == builtin_prompts(sources=("code-completions", "word-problems"))
    # the disjointness checks below compare against this set, built source by source
    assert set(shaped) == _union_of_pools(("code-completions", "word-problems"))
    assert len(shaped) > 1500 and not set(shaped) & set(builtin_prompts())
    # The same in another process (no memory address in a prompt): a chunk is the same prompts on resume.
    code = (
        "import json, sys; from sglang_dflash.train.data import builtin_prompts as b; "
        "json.dump([b(), b(sources=('code-completions', 'word-problems'))], sys.stdout)"
    )
    assert json.loads(subprocess.check_output([sys.executable, "-c", code])) == [builtin_prompts(), shaped]
    # Nor a path of this machine (platform.architecture's default is the interpreter's path): the
    # same pool on every machine, whether Python runs as python or python3.
    assert not [p for p in builtin_prompts() + shaped if sys.prefix in p or sys.base_prefix + "/" in p]
    code = code_completion_prompts()
    for prompt in code:  # a header and its docstring: valid Python, like a HumanEval prompt
        parse_python(prompt)
    doctests = [p for p in code if not p.startswith("import ")]  # the rest are stdlib headers
    assert len(doctests) >= 100 and all(p.count(">>> ") >= 2 for p in doctests)
    # The examples are the reference implementation's results, e.g. running_max's prefix maxima.
    example = next(p for p in doctests if "running_max([" in p)
    call, result = re.search(r">>> (running_max\(.*\))\n\s+(.*)", example).groups()
    numbers = json.loads(call[len("running_max(") : -1])
    assert json.loads(result) == [max(numbers[: i + 1]) for i in range(len(numbers))]
    stories = word_problems(50)
    assert len(set(stories)) > 45 and not any("step by step" in s for s in stories)
    evaluation = read_prompts(os.path.join(SHARED_DATA, "humaneval.jsonl")) + read_prompts(
        os.path.join(SHARED_DATA, "gsm8k.jsonl")
    )
    assert overlapping_prompts(shaped, evaluation) == []
    with pytest.raises(ValueError, match=r"prompt sources \['docs'\] are invalid"):
        builtin_prompts(sources=("docs",))


def test_second_evaluation_shaped_sources_are_opt_in_varied_python_and_disjoint():
    from sglang_dflash.train.data import (
        _MORE_STORY_TEMPLATES,
        _summary_and_examples,
        package_completion_prompts,
        story_problems,
    )

    sources = ("package-completions", "story-problems")
    mix = builtin_prompts(sources=sources)
    first_pair = builtin_prompts(sources=("code-completions", "word-problems"))
    assert len(mix) > 1800 and not set(mix) & (set(builtin_prompts()) | set(first_pair))
    code = "import json, sys; from sglang_dflash.train.data import builtin_prompts as b; "
    code += f"json.dump(b(sources={sources!r}), sys.stdout)"
    assert json.loads(subprocess.check_output([sys.executable, "-c", code])) == mix  # same on resume
    packages = package_completion_prompts()
    assert len(packages) > 500 and sum(">>> " in p for p in packages) > 300
    for prompt in packages:  # an import, a header and its docstring: valid Python, no dispatcher args
        parse_python(prompt)
        assert "backend_kwargs" not in prompt and len(prompt) <= 1500
    # The docstring keeps the summary and the examples, not the parameter tables.
    doc = "Sum it.\n\nParameters\n----------\nx : int\n\n"
    doc += "Examples\n--------\n>>> f(1)\n1\n\nNotes\n-----\nFast."
    assert _summary_and_examples(doc) == ("Sum it.", ">>> f(1)\n1")
    stories = story_problems(400)
    assert len(set(stories)) > 390 and "{" not in "".join(stories)
    # Every template shows up in 400 stories (its longest literal text does): the variety the first
    # word problems lacked.
    fragments = [max(re.split(r"\{\w+\}", t), key=len) for t in _MORE_STORY_TEMPLATES]
    assert len(fragments) == 44 and all(any(f in story for story in stories) for f in fragments)
    evaluation = read_prompts(os.path.join(SHARED_DATA, "humaneval.jsonl")) + read_prompts(
        os.path.join(SHARED_DATA, "gsm8k.jsonl")
    )
    assert overlapping_prompts(mix, evaluation) == []


def test_library_completions_are_numpy_scipy_pandas_headers_disjoint_from_the_other_sources():
    from sglang_dflash.train.data import library_completion_prompts

    prompts = library_completion_prompts()
    imports = {p.split("\n", 1)[0] for p in prompts}
    assert {"import numpy as np", "from scipy import stats", "import pandas as pd"} <= imports
    assert len(prompts) > 500 and sum(">>> " in p for p in prompts) > 400
    for prompt in prompts:  # an import, a header and its docstring: valid Python, no private names
        tree = parse_python(prompt)
        assert not tree.body[-1].name.startswith("_") and len(prompt) <= 1500
    mix = builtin_prompts(sources=("library-completions",))
    assert sorted(mix) == sorted(set(prompts))
    others = builtin_prompts(sources=("code-completions", "package-completions"))
    assert not set(mix) & (set(others) | set(builtin_prompts()))
    evaluation = read_prompts(os.path.join(SHARED_DATA, "humaneval.jsonl"))
    assert overlapping_prompts(mix, evaluation) == []


def test_every_prompt_source_adds_prompts_to_the_pool():
    from sglang_dflash.train.data import _POOL_MAKERS, SOURCES

    # A source listed in SOURCES without a maker would be accepted and add nothing.
    assert set(_POOL_MAKERS) | {"math-word-problems"} == set(SOURCES)


def _task_prompt(prompts: list[str], header: str) -> str:
    """The prompt defining the function whose header starts with ``header``: a bare name, or a name
    with the start of its signature when the test pins the signature too."""
    opening = f"def {header}" if "(" in header else f"def {header}("
    return next(p for p in prompts if opening in p)


def _doctest_examples(prompts: list[str], name: str) -> list[tuple[tuple, object]]:
    """The ``>>>`` examples of the prompt defining ``name``: (argument tuple, printed result) each."""
    prompt = _task_prompt(prompts, name)
    found = re.findall(rf">>> {name}\((.*)\)\n\s+(.*)", prompt)
    assert len(found) >= 2  # the checks that use them see every example
    return [(ast.literal_eval(f"({arguments},)"), ast.literal_eval(result)) for arguments, result in found]


def _assert_one_named_task_each(prompts: list[str]) -> None:
    """Every prompt parses (a typing import, a header and its docstring), has 2-3 ``>>>`` examples, and
    names its own function: one task per combination, named after its parts."""
    names = [parse_python(prompt).body[-1].name for prompt in prompts]
    assert len(set(names)) == len(prompts) and all(2 <= p.count(">>> ") <= 3 for p in prompts)


def _checked_pool(make: Callable[[], list[str]], count: int) -> list[str]:
    """``make()``'s prompts, checked to be ``count`` of them, the same on every call and each its own
    named task with 2-3 examples."""
    prompts = make()
    assert len(prompts) == count and prompts == make()
    _assert_one_named_task_each(prompts)
    return prompts


# The HumanEval-shaped code sources whose tasks must stay disjoint from each other's.
CODE_SOURCES = (
    "code-completions",
    "package-completions",
    "library-completions",
    "composed-functions",
    "threshold-functions",
    "text-functions",
    "position-functions",
    "digit-functions",
    "pair-functions",
    "mapping-functions",
    "sentence-functions",
    "grid-functions",
    "line-functions",
    "field-functions",
    "tuple-functions",
    "string-pair-functions",
    "number-word-functions",
    "interval-functions",
    "range-functions",
    "paren-functions",
    "fraction-functions",
    "date-functions",
    "version-functions",
    "time-functions",
    "money-functions",
    "path-functions",
    "binary-functions",
    "identifier-functions",
    "color-functions",
    "email-functions",
    "people-functions",
    "sequence-functions",
    "stock-functions",
    "log-functions",
    "url-functions",
    "ip-functions",
    "point-functions",
    "card-functions",
    "chess-functions",
    "note-functions",
    "size-functions",
    "temperature-functions",
    "distance-functions",
    "percent-functions",
    "seat-functions",
    "ingredient-functions",
    "match-functions",
    "dice-functions",
    "grade-functions",
    "compass-functions",
    "phone-functions",
    "formula-functions",
    "roman-functions",
    "isbn-functions",
    "dna-functions",
    "password-functions",
    "plate-functions",
    "tag-functions",
)


@functools.cache
def _source_pool(source: str) -> frozenset[str]:
    """One built-in source's whole pool as a set, built once per test session: each source's
    disjointness check compares it with every other source's pool, so without the cache the pools
    were rebuilt once per source, a cost growing with the square of the sources."""
    return frozenset(builtin_prompts(sources=(source,)))


def _union_of_pools(sources: Sequence[str]) -> frozenset[str]:
    """The set of ``builtin_prompts(sources=sources)``: de-duplicating and shuffling the mix keep its
    set the union of the sources' own pools."""
    return frozenset().union(*(_source_pool(source) for source in sources))


def _assert_pool_is_tasks_disjoint_from_code_and_humaneval(source: str, prompts: list[str]) -> None:
    """``source``'s pool is exactly ``prompts``, shares none with the other code sources and no
    12-word run with a HumanEval prompt."""
    mix = builtin_prompts(sources=(source,))
    assert sorted(mix) == sorted(prompts)
    others = tuple(other for other in CODE_SOURCES if other != source)
    assert not set(mix) & _union_of_pools(others)
    humaneval = read_prompts(os.path.join(SHARED_DATA, "humaneval.jsonl"))
    assert overlapping_prompts(mix, humaneval) == []


def test_composed_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import composed_function_prompts

    prompts = composed_function_prompts()
    # 10 filters x 8 changes x 9 summaries over numbers, 7 x 6 x 4 over words + 7 word counts.
    assert len(prompts) == 720 + 168 + 7 and prompts == composed_function_prompts()
    _assert_one_named_task_each(prompts)

    # The examples are what the docstring says, computed here independently of the source's code.
    for (numbers,), result in _doctest_examples(prompts, "sum_squared_even"):
        assert result == sum(x * x for x in numbers if x % 2 == 0)
    for (numbers,), result in _doctest_examples(prompts, "largest_last_digit_negative"):
        assert result == max((abs(x) % 10 for x in numbers if x < 0), default=None)
    for (numbers,), result in _doctest_examples(prompts, "mean_all"):
        assert result == (round(sum(numbers) / len(numbers), 2) if numbers else 0.0)
    for (words,), result in _doctest_examples(prompts, "joined_upper_vowel_initial"):
        assert result == " ".join(w.upper() for w in words if w[0] in "aeiou")
    sentence = "Return the sum of the squares of the even numbers in the list (0 if there are none)."
    assert sentence in _task_prompt(prompts, "sum_squared_even")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("composed-functions", prompts)


def test_tuple_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import tuple_function_prompts

    prompts = tuple_function_prompts()
    # 10 number filters x 8 changes x 4 tuple summaries.
    assert len(prompts) == 10 * 8 * 4 and prompts == tuple_function_prompts()
    _assert_one_named_task_each(prompts)
    assert "from typing import List, Optional, Tuple\n" in next(
        p for p in prompts if "first_and_last_all(" in p
    )

    # The examples are what the docstring says, computed here independently of the source's code.
    for (numbers,), result in _doctest_examples(prompts, "count_and_sum_squared_even"):
        assert result == (sum(x % 2 == 0 for x in numbers), sum(x * x for x in numbers if x % 2 == 0))
    for (numbers,), result in _doctest_examples(prompts, "sum_and_product_negated_positive"):
        assert result == (-sum(x for x in numbers if x > 0), math.prod(-x for x in numbers if x > 0))
    for (numbers,), result in _doctest_examples(prompts, "smallest_and_largest_absolute_odd"):
        odd = sorted(abs(x) for x in numbers if x % 2)
        assert result == ((odd[0], odd[-1]) if odd else None)
    for (numbers,), result in _doctest_examples(prompts, "first_and_last_doubled_triple"):
        kept = [2 * x for x in numbers if x % 3 == 0]
        assert result == ((kept[0], kept[-1]) if kept else None)
    sentence = (
        "Return a tuple of the sum and the product of all the numbers in the list"
        " (0 and 1 if there are none)."
    )
    assert sentence in _task_prompt(prompts, "sum_and_product_all")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("tuple-functions", prompts)


def test_string_pair_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import string_pair_function_prompts

    prompts = string_pair_function_prompts()
    # 6 pair filters x (2 number changes x 9 summaries + 5 character changes x 10 summaries), less the
    # counts of the 4 named character changes (a count is the same whatever the characters become).
    assert len(prompts) == 6 * (2 * 9 + 5 * 10 - 4) and prompts == string_pair_function_prompts()
    _assert_one_named_task_each(prompts)
    assert "def joined_later_chars_differing(a: str, b: str) -> str:" in "".join(prompts)

    # The examples are what the docstring says, computed here independently of the source's code.
    for (a, b), result in _doctest_examples(prompts, "joined_later_chars_differing"):
        assert len(a) == len(b) and result == "".join(max(x, y) for x, y in zip(a, b) if x != y)
    for (a, b), result in _doctest_examples(prompts, "sum_code_gaps_digit_pairs"):
        assert result == sum(abs(ord(x) - ord(y)) for x, y in zip(a, b) if x.isdigit() or y.isdigit())
    for (a, b), result in _doctest_examples(prompts, "count_matching"):
        assert result == sum(x == y for x, y in zip(a, b))
    # b repeats a at about a third of its positions, so most examples keep some matching pairs.
    pairs = [args for p in prompts for args in re.findall(r">>> \w+\('(\w+)', '(\w+)'\)", p)]
    assert len(pairs) >= 2 * len(prompts)
    assert sum(any(x == y for x, y in zip(a, b)) for a, b in pairs) > 0.75 * len(pairs)
    sentence = (
        "Return the characters b[i] of the character pairs (a[i], b[i]) that are both letters, "
        "joined into one string in their original order."
    )
    assert sentence in _task_prompt(prompts, "joined_b_chars_letter_pairs")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("string-pair-functions", prompts)


def test_number_word_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import number_word_function_prompts

    prompts = number_word_function_prompts()
    # 7 filters x (4 number changes x 9 summaries + 3 word changes x 6 summaries), less the counts of
    # the 2 named word changes (a count is the same whatever the words become).
    assert len(prompts) == 7 * (4 * 9 + 3 * 6 - 2) and prompts == number_word_function_prompts()
    _assert_one_named_task_each(prompts)

    # The examples are what the docstring says, computed here independently of the source's code.
    words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    for (text,), result in _doctest_examples(prompts, "sum_squared_values_odd_words"):
        assert result == sum(words.index(w) ** 2 for w in text.split() if words.index(w) % 2)
    for (text,), result in _doctest_examples(prompts, "by_value_upper_prime_words"):
        kept = sorted((w for w in text.split() if w in ("two", "three", "five", "seven")), key=words.index)
        assert result == " ".join(w.upper() for w in kept)
    for (text,), result in _doctest_examples(prompts, "count_large_words"):
        assert set(text.split()) <= set(words) and result == sum(words.index(w) > 4 for w in text.split())
    sentence = (
        "Return the words of the text that name an even number, ordered from the smallest number they"
        " name to the largest and joined by single spaces."
    )
    assert sentence in _task_prompt(prompts, "by_value_even_words(text: str) -> str:")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("number-word-functions", prompts)


def test_interval_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import interval_function_prompts

    prompts = interval_function_prompts()
    # 7 filters x (5 number changes x 9 summaries + 3 interval changes x 5 summaries), less the counts
    # of the 2 named interval changes (a count is the same whatever the intervals become).
    assert len(prompts) == 7 * (5 * 9 + 3 * 5 - 2) and prompts == interval_function_prompts()
    _assert_one_named_task_each(prompts)

    # The examples are what the docstring says, computed here independently of the source's code.
    for (intervals,), result in _doctest_examples(prompts, "sum_lengths_holding_zero"):
        assert all(start <= end for start, end in intervals)
        assert result == sum(end - start for start, end in intervals if start <= 0 <= end)
    for (intervals,), result in _doctest_examples(prompts, "span_widened_positive"):
        kept = [(start - 1, end + 1) for start, end in intervals if start > 0]
        assert result == ((min(s for s, _ in kept), max(e for _, e in kept)) if kept else None)
    for (intervals,), result in _doctest_examples(prompts, "count_points"):
        assert result == sum(start == end for start, end in intervals)
    sentence = "Return the intervals with an even start, each moved one to the right, sorted by their start"
    assert sentence in next(
        p for p in prompts if "def sorted_moved_even_start(intervals: List[Tuple[int, int]])" in p
    )
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("interval-functions", prompts)


def test_range_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import range_function_prompts

    prompts = range_function_prompts()
    # 7 filters x 6 changes x 9 number summaries.
    assert len(prompts) == 7 * 6 * 9 and prompts == range_function_prompts()
    _assert_one_named_task_each(prompts)

    # The examples are what the docstring says, computed here independently of the source's code.
    primes = [2, 3, 5, 7, 11, 13]
    for (n,), result in _doctest_examples(prompts, "sum_squared_primes_to_n"):
        assert 4 <= n <= 16 and result == sum(p * p for p in primes if p <= n)
    for (n,), result in _doctest_examples(prompts, "list_digit_sums_palindromes_to_n"):
        assert result == [x if x < 10 else 2 * (x // 10) for x in range(1, n + 1) if x < 10 or x == 11]
    for (n,), result in _doctest_examples(prompts, "count_distinct_last_digits_squares_to_n"):
        assert result == len({x * x % 10 for x in range(1, 5) if x * x <= n})
    sentence = "Return the product of the perfect squares from 1 to n, each doubled (1 if there are none)."
    assert sentence in _task_prompt(prompts, "product_doubled_squares_to_n(n: int) -> int:")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("range-functions", prompts)


def _walk_brackets(group: str) -> tuple[int, int]:
    """The deepest nesting of a balanced bracket group and how many of its pairs close with nothing
    left open, tracked with an explicit stack."""
    stack, deepest, top_level = [], 0, 0
    for bracket in group:
        if bracket == "(":
            stack.append(bracket)
            deepest = max(deepest, len(stack))
        else:
            stack.pop()
            top_level += not stack
    return deepest, top_level


def test_paren_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import paren_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 group changes x 5 summaries), less the counts
    # of the 3 named group changes (a count is the same whatever the groups become).
    prompts = _checked_pool(paren_function_prompts, 7 * (4 * 9 + 4 * 5 - 3))

    # The examples are what the docstring says, computed here independently of the source's code.
    for (paren_string,), result in _doctest_examples(prompts, "sum_depths_deep_groups"):
        groups = paren_string.split(" ")
        assert all(_walk_brackets(g)[0] >= 1 and g.count("(") == g.count(")") for g in groups)
        assert result == sum(depth for depth, _ in map(_walk_brackets, groups) if depth > 1)
    for (paren_string,), result in _doctest_examples(prompts, "list_top_level_counts_groups"):
        assert result == [_walk_brackets(g)[1] for g in paren_string.split(" ")]
    for (paren_string,), result in _doctest_examples(prompts, "joined_square_flat_groups"):
        assert result == " ".join("[]" * (len(g) // 2) for g in paren_string.split() if "((" not in g)
    sentence = (
        "Return the longest of the bracket groups of more than six brackets, each wrapped in one more pair;"
    )
    assert sentence in _task_prompt(prompts, "longest_wrapped_long_groups(paren_string: str)")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("paren-functions", prompts)


def test_fraction_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import fraction_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 fraction changes x 5 summaries), less the counts
    # of the 3 named fraction changes (a count is the same whatever the fractions become).
    prompts = _checked_pool(fraction_function_prompts, 7 * (4 * 9 + 4 * 5 - 3))

    # The examples are what the docstring says, computed here independently of the source's code
    # (cross-multiplied integers instead of fractions.Fraction).
    def parts(fraction: str) -> tuple[int, int]:
        numerator, denominator = map(int, fraction.split("/"))
        assert 1 <= numerator <= 12 and 1 <= denominator <= 8
        return numerator, denominator

    for (fractions,), result in _doctest_examples(prompts, "sum_whole_parts_improper"):
        assert result == sum(n // d for n, d in map(parts, fractions) if n >= d)
    for (fractions,), result in _doctest_examples(prompts, "list_simplified_even_denominator"):
        kept = [(n, d) for n, d in map(parts, fractions) if d % 2 == 0]
        simplest = [
            next((n // k, d // k) for k in range(d, 0, -1) if n % k == 0 and d % k == 0) for n, d in kept
        ]
        assert result == [f"{n}/{d}" for n, d in simplest]
    for (fractions,), result in _doctest_examples(prompts, "largest_inverted_proper"):
        upside_down = [(d, n) for n, d in map(parts, fractions) if n < d]
        best = None
        for n, d in upside_down:
            if best is None or n * best[1] > best[0] * d:
                best = (n, d)
        assert result == (f"{best[0]}/{best[1]}" if best else None)
    sentence = "Return the fractions with numerator 1, each with its numerator doubled, sorted from smallest"
    assert sentence in _task_prompt(prompts, "by_value_doubled_unit(fractions: List[str])")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("fraction-functions", prompts)


def test_date_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import date_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 date changes x 5 summaries), less the counts
    # of the 3 named date changes (a count is the same whatever the dates become).
    prompts = _checked_pool(date_function_prompts, 7 * (4 * 9 + 4 * 5 - 3))

    # The examples are what the docstring says, computed here independently of the source's code
    # (the day of the year from a table of month lengths).
    def day_of_year(date: str) -> int:
        year, month, day = map(int, date.split("-"))
        february = 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
        return sum((31, february, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[: month - 1]) + day

    for (dates,), result in _doctest_examples(prompts, "sum_days_of_year_weekend"):
        assert all(2019 <= int(d[:4]) <= 2026 for d in dates)
        weekend = [d for d in dates if datetime.date.fromisoformat(d).isoweekday() in (6, 7)]
        assert result == sum(map(day_of_year, weekend))
    for (dates,), result in _doctest_examples(prompts, "sorted_us_style_summer"):
        summer = sorted(d for d in dates if d[5:7] in ("06", "07", "08"))  # ISO text sorts by date
        assert result == [f"{d[5:7]}/{d[8:10]}/{d[:4]}" for d in summer]
    for (dates,), result in _doctest_examples(prompts, "latest_next_day_leap_year"):
        kept = [d for d in dates if int(d[:4]) % 4 == 0]  # 2020 and 2024: the leap years of 2019-2026
        latest = max(kept, default=None)
        assert result == (
            None if latest is None else str(datetime.date.fromisoformat(latest) + datetime.timedelta(1))
        )
    sentence = (
        "Return a list of the first days of the months of the dates with an odd day of the month, written"
    )
    assert sentence in _task_prompt(prompts, "list_month_firsts_odd_day(dates: List[str])")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("date-functions", prompts)


def test_version_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import version_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 version changes x 5 summaries), less the counts
    # of the 3 named version changes (a count is the same whatever the versions become).
    prompts = _checked_pool(version_function_prompts, 7 * (4 * 9 + 4 * 5 - 3))

    # The examples are what the docstring says, computed here independently of the source's code
    # (numbers compared as zero-padded text).
    def padded(version: str) -> str:
        return ".".join(part.zfill(2) for part in version.lstrip("v").split("."))

    for (versions,), result in _doctest_examples(prompts, "sum_patches_two_digit"):
        assert len(set(versions)) == len(versions) and all(v.count(".") == 2 for v in versions)
        assert result == sum(int(v.split(".")[2]) for v in versions if any(len(p) == 2 for p in v.split(".")))
    for (versions,), result in _doctest_examples(prompts, "sorted_next_minor_zero_major"):
        bumped = [f"0.{int(v.split('.')[1]) + 1}.0" for v in versions if v.startswith("0.")]
        assert result == sorted(bumped, key=padded)
    for (versions,), result in _doctest_examples(prompts, "newest_tagged_unpatched"):
        kept = ["v" + v for v in versions if v.endswith(".0")]
        assert result == (max(kept, key=padded) if kept else None)
    sentence = (
        "Return the versions with an even minor number, each with its patch number increased by one joined"
    )
    assert sentence in next(
        p for p in prompts if "def joined_next_patch_even_minor(versions: List[str])" in p
    )
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("version-functions", prompts)


def test_time_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import time_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 time changes x 5 summaries), less the counts
    # of the 3 named time changes (a count is the same whatever the times become).
    prompts = _checked_pool(time_function_prompts, 7 * (4 * 9 + 4 * 5 - 3))

    # The examples are what the docstring says, computed here independently of the source's code
    # (through datetime's clock arithmetic).
    def clock(text: str) -> datetime.datetime:
        return datetime.datetime.strptime(text, "%I:%M %p" if text.endswith("M") else "%H:%M")

    for (times,), result in _doctest_examples(prompts, "sum_minutes_quarter_hour"):
        assert len(set(times)) == len(times) and all(re.fullmatch(r"[0-2]\d:[0-5]\d", t) for t in times)
        assert result == sum(clock(t).minute for t in times if clock(t).minute in (0, 15, 30, 45))
    for (times,), result in _doctest_examples(prompts, "sorted_quarter_later_evening"):
        later = [(clock(t) + datetime.timedelta(minutes=15)).strftime("%H:%M") for t in times if t >= "18:00"]
        assert result == sorted(later)  # zero-padded 24-hour text sorts by the clock
    for (times,), result in _doctest_examples(prompts, "latest_twelve_hour_morning"):
        kept = [t for t in times if clock(t).hour < 12]
        assert result == (clock(max(kept)).strftime("%I:%M %p").lstrip("0") if kept else None)
    for (times,), result in _doctest_examples(prompts, "list_to_midnight_odd_hour"):
        assert result == [24 * 60 - clock(t).hour * 60 - clock(t).minute for t in times if clock(t).hour % 2]
    sentence = "Return a list of the starts of the hours of the times with an odd hour, written HH:00, in"
    assert sentence in _task_prompt(prompts, "list_hour_starts_odd_hour(times: List[str])")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("time-functions", prompts)


def test_money_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal

    from sglang_dflash.train.data import money_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 amount changes x 5 summaries), less the counts
    # of the 3 named amount changes (a count is the same whatever the amounts become).
    prompts = _checked_pool(money_function_prompts, 7 * (4 * 9 + 4 * 5 - 3))

    # The examples are what the docstring says, computed here independently of the source's code
    # (through Decimal's arithmetic on the dollars).
    def value(amount: str) -> Decimal:
        return Decimal(amount.lstrip("$"))

    for (amounts,), result in _doctest_examples(prompts, "sum_cents_ending_99"):
        assert len(set(amounts)) == len(amounts) and all(re.fullmatch(r"\$\d+\.\d\d", a) for a in amounts)
        assert result == sum(int(value(a) * 100) for a in amounts if a.endswith(".99"))
    for (amounts,), result in _doctest_examples(prompts, "sorted_taxed_over_fifty"):
        taxed = [(value(a) * Decimal("1.1")).quantize(Decimal("0.01"), rounding=ROUND_DOWN) for a in amounts]
        assert result == [f"${v}" for v in sorted(t for t, a in zip(taxed, amounts) if value(a) > 50)]
    for (amounts,), result in _doctest_examples(prompts, "list_rounded_with_cents"):
        kept = [value(a) for a in amounts if not a.endswith(".00")]
        assert result == [int(v.quantize(Decimal("1"), rounding=ROUND_HALF_UP)) for v in kept]
    for (amounts,), result in _doctest_examples(prompts, "largest_dollar_off_under_ten"):
        kept = [max(value(a) - 1, Decimal("0.00")) for a in amounts if value(a) < 10]
        assert result == (f"${max(kept)}" if kept else None)
    sentence = "Return the amounts of whole dollars (no cents), each doubled joined by commas ('' if there"
    assert sentence in _task_prompt(prompts, "joined_doubled_whole_dollars(amounts: List[str])")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("money-functions", prompts)


def test_path_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from pathlib import PurePosixPath

    from sglang_dflash.train.data import path_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 path changes x 5 summaries), less the counts
    # of the 3 named path changes (a count is the same whatever the paths become).
    prompts = _checked_pool(path_function_prompts, 7 * (4 * 9 + 4 * 5 - 3))

    # The examples are what the docstring says, computed here independently of the source's code
    # (through pathlib's pure paths: parts, name, parent, suffix).
    def parent(path: str) -> str:
        return "" if "/" not in path else str(PurePosixPath(path).parent)

    for (paths,), result in _doctest_examples(prompts, "sum_depths_python"):
        assert len(set(paths)) == len(paths) and not any(p.startswith("/") or p.endswith("/") for p in paths)
        assert result == sum(
            len(PurePosixPath(p).parts) - 1 for p in paths if PurePosixPath(p).suffix == ".py"
        )
    for (paths,), result in _doctest_examples(prompts, "list_extension_lengths_in_src"):
        assert result == [len(PurePosixPath(p).suffix) for p in paths if PurePosixPath(p).parts[0] == "src"]
    for (paths,), result in _doctest_examples(prompts, "longest_directories_nested"):
        kept = [parent(p) for p in paths if len(PurePosixPath(p).parts) >= 3]
        assert result == (max(kept, key=len) if kept else None)
    for (paths,), result in _doctest_examples(prompts, "list_stems_no_extension"):
        kept = [PurePosixPath(p) for p in paths if not PurePosixPath(p).suffix]
        assert result == [str(p.with_suffix("")) for p in kept]
    for (paths,), result in _doctest_examples(prompts, "joined_names_hidden"):
        assert result == ",".join(
            PurePosixPath(p).name for p in paths if PurePosixPath(p).name.startswith(".")
        )
    sentence = "Return the paths under the src directory, each without its extension sorted alphabetically."
    assert sentence in _task_prompt(prompts, "alphabetical_stems_in_src(paths: List[str])")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("path-functions", prompts)


def test_binary_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import binary_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 binary changes x 5 summaries), less the counts
    # of the 3 named binary changes (a count is the same whatever the binary numbers become).
    prompts = _checked_pool(binary_function_prompts, 7 * (4 * 9 + 4 * 5 - 3))

    # The examples are what the docstring says, computed here independently of the source's code
    # (through Python's bin() and int(text, 2), the digits as characters).
    def canonical(text: str) -> str:
        return bin(int(text, 2))[2:]

    for (binaries,), result in _doctest_examples(prompts, "sum_values_odd"):
        assert len(set(binaries)) == len(binaries)
        assert all(re.fullmatch("0|1[01]*", b) for b in binaries)
        assert result == sum(int(b, 2) for b in binaries if int(b, 2) % 2)
    for (binaries,), result in _doctest_examples(prompts, "list_trailing_zeros_even"):
        assert result == [len(re.search("0*$", b).group()) for b in binaries if int(b, 2) % 2 == 0]
    for (binaries,), result in _doctest_examples(prompts, "list_flipped_palindromes"):
        palindromes = [b for b in binaries if b == "".join(reversed(b))]
        flipped = ["".join("1" if d == "0" else "0" for d in b) for b in palindromes]
        assert result == [canonical(f) for f in flipped]
    for (binaries,), result in _doctest_examples(prompts, "largest_reversed_long"):
        kept = [int(b[::-1], 2) for b in binaries if len(b) > 4]
        assert result == (bin(max(kept))[2:] if kept else None)
    for (binaries,), result in _doctest_examples(prompts, "sorted_incremented_double_ones"):
        assert result == [bin(v)[2:] for v in sorted(int(b, 2) + 1 for b in binaries if "11" in b)]
    for (binaries,), result in _doctest_examples(prompts, "count_over_ten"):
        assert result == sum(int(b, 2) > 10 for b in binaries)
    sentence = "Return the binary numbers with two 1 digits in a row, each plus one (in binary) joined by"
    assert sentence in _task_prompt(prompts, "joined_incremented_double_ones(binaries:")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("binary-functions", prompts)


def test_identifier_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import identifier_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 identifier changes x 5 summaries), less the
    # counts of the 3 named identifier changes (a count is the same whatever the identifiers become).
    prompts = _checked_pool(identifier_function_prompts, 7 * (4 * 9 + 4 * 5 - 3))

    # The examples are what the docstring says, computed here independently of the source's code
    # (the words found by a regular expression over the runs of capitals, lower case and digits).
    def words(identifier: str) -> list[str]:
        return [w.lower() for w in re.findall("[A-Z]+[0-9]*(?![a-z])|[A-Z]?[a-z0-9]+", identifier)]

    for (identifiers,), result in _doctest_examples(prompts, "sum_capitals_camel_case"):
        assert len(set(identifiers)) == len(identifiers)
        assert all(re.fullmatch("_?[A-Za-z][A-Za-z0-9_]*", i) for i in identifiers)
        kept = [i for i in identifiers if i[0].islower() and re.search("[A-Z]", i)]
        assert result == sum(len(re.findall("[A-Z]", i)) for i in kept)
    for (identifiers,), result in _doctest_examples(prompts, "list_word_counts_private"):
        assert result == [len(words(i)) for i in identifiers if i[0] == "_"]
    for (identifiers,), result in _doctest_examples(prompts, "joined_snake_constants"):
        kept = [i for i in identifiers if re.search("[A-Z]", i) and not re.search("[a-z]", i)]
        assert result == ",".join("_".join(words(i)) for i in kept)
    for (identifiers,), result in _doctest_examples(prompts, "list_camel_snake_case"):
        kept = [words(i) for i in identifiers if "_" in i and not re.search("[A-Z]", i)]
        assert result == [w[0] + "".join(x[:1].upper() + x[1:] for x in w[1:]) for w in kept]
    for (identifiers,), result in _doctest_examples(prompts, "longest_upper_with_digits"):
        kept = [i.upper() for i in identifiers if re.search("[0-9]", i)]
        assert result == (max(kept, key=len) if kept else None)
    sentence = "Return the identifiers of at most six characters, each in upper case joined by commas"
    assert sentence in _task_prompt(prompts, "joined_upper_short(identifiers: List[str])")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("identifier-functions", prompts)


def test_color_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import color_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 color changes x 5 summaries), less the counts
    # of the 3 named color changes (a count is the same whatever the colors become).
    prompts = _checked_pool(color_function_prompts, 7 * (4 * 9 + 4 * 5 - 3))

    # The examples are what the docstring says, computed here independently of the source's code.
    def parts(color: str) -> list[int]:
        return [int(h, 16) for h in re.findall("[0-9a-fA-F]{2}", color)]

    for (colors,), result in _doctest_examples(prompts, "sum_brightness_grey"):
        assert len(set(colors)) == len(colors)
        assert all(re.fullmatch("#[0-9a-f]{6}", c) for c in colors)
        assert result == sum(sum(parts(c)) for c in colors if parts(c)[0] == parts(c)[1] == parts(c)[2])
    for (colors,), result in _doctest_examples(prompts, "list_spreads_reddish"):
        assert result == [max(parts(c)) - min(parts(c)) for c in colors if parts(c)[0] > max(parts(c)[1:])]
    for (colors,), result in _doctest_examples(prompts, "joined_inverted_web_safe"):
        kept = [c for c in colors if all(p in (0, 51, 102, 153, 204, 255) for p in parts(c))]
        assert result == ",".join("#" + "".join(f"{255 - p:02x}" for p in parts(c)) for c in kept)
    for (colors,), result in _doctest_examples(prompts, "sorted_greyed_dark"):
        greys = [sum(parts(c)) // 3 for c in colors if sum(parts(c)) < 384]
        assert result == ["#" + f"{g:02x}" * 3 for g in sorted(greys)]
    for (colors,), result in _doctest_examples(prompts, "largest_upper_bluish"):
        kept = [c for c in colors if parts(c)[2] > max(parts(c)[:2])]
        assert result == (max(kept).upper() if kept else None)
    sentence = "Return all the colors, each with its hex digits in upper case joined by commas"
    assert sentence in _task_prompt(prompts, "joined_upper_colors(colors: List[str])")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("color-functions", prompts)


def test_email_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import email_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 5 summaries), less the counts of
    # the 3 named text changes (a count is the same whatever the emails become).
    prompts = _checked_pool(email_function_prompts, 7 * (4 * 9 + 4 * 5 - 3))

    # The examples are what the docstring says, computed here independently of the source's code.
    for (emails,), result in _doctest_examples(prompts, "sum_dots_dotted"):
        assert len(set(emails)) == len(emails)
        assert all(re.fullmatch(r"[A-Za-z]+(\.[a-z]+)?[0-9]*@[a-z]+\.[a-z]+", e) for e in emails)
        assert result == sum(e.count(".") for e in emails if "." in e.partition("@")[0])
    for (emails,), result in _doctest_examples(prompts, "list_digits_with_digits"):
        assert result == [len(re.findall("[0-9]", e)) for e in emails if re.search("[0-9]", e)]
    for (emails,), result in _doctest_examples(prompts, "joined_domains_capitalized"):
        assert result == ",".join(e.partition("@")[2] for e in emails if re.search("[A-Z]", e))
    for (emails,), result in _doctest_examples(prompts, "alphabetical_users_dot_com"):
        assert result == sorted(e.partition("@")[0] for e in emails if e[-4:] == ".com")
    for (emails,), result in _doctest_examples(prompts, "longest_lower_long_domain"):
        kept = [e.lower() for e in emails if len(e.partition("@")[2]) >= 9]
        assert result == (max(kept, key=len) if kept else None)
    sentence = "the emails whose user name (the part before the @) has at most five characters, each in lower"
    assert sentence in _task_prompt(prompts, "joined_lower_short_user(emails: List[str])")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("email-functions", prompts)


def test_people_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import people_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries): every text change
    # is named, so none has a count (a count is the same whatever the people become).
    prompts = _checked_pool(people_function_prompts, 7 * (4 * 9 + 4 * 4))

    # The examples are what the docstring says, computed here independently of the source's code.
    for (people,), result in _doctest_examples(prompts, "sum_ages_adults"):
        assert 3 <= len(people) <= 5 and len({p["name"] for p in people}) == len(people)
        assert all(set(p) == {"name", "age", "city"} and 3 <= p["age"] <= 80 for p in people)
        assert result == sum(p["age"] for p in people if p["age"] > 17)
    for (people,), result in _doctest_examples(prompts, "list_ages_in_ten_years_children"):
        assert result == [p["age"] + 10 for p in people if p["age"] <= 12]
    for (people,), result in _doctest_examples(prompts, "joined_labels_teens"):
        assert result == ",".join(f"{p['name']} ({p['age']})" for p in people if 12 < p["age"] < 20)
    for (people,), result in _doctest_examples(prompts, "alphabetical_cities_even_ages"):
        assert result == sorted(p["city"] for p in people if not p["age"] & 1)
    for (people,), result in _doctest_examples(prompts, "longest_upper_names_long_names"):
        kept = [p["name"].upper() for p in people if len(p["name"]) >= 5]
        assert result == (max(kept, key=len) if kept else None)
    sentence = "Return the names of the people whose city is 'Oslo' in upper case joined by commas"
    assert sentence in _task_prompt(prompts, "joined_upper_names_in_oslo(people: List[dict])")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("people-functions", prompts)


def test_sequence_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import sequence_function_prompts

    # 8 sequences x 5 term filters x 9 number summaries.
    prompts = _checked_pool(sequence_function_prompts, 8 * 5 * 9)

    # The examples are what the docstring says, computed here independently of the source's code.
    def fibonacci_like(n: int) -> list[int]:
        terms = [1, 2]
        while len(terms) < n:
            terms.append(terms[-1] + terms[-2])
        return terms[:n]

    def thirds_walk(n: int) -> list[int]:
        return [n] + (thirds_walk(n // 3 if n % 3 == 0 else n + 1) if n != 1 else [])

    def prime_factors(n: int) -> list[int]:
        primes = [p for p in range(2, n + 1) if all(p % q for q in range(2, p))]
        return sorted(p for p in primes for k in range(1, 8) if n % p**k == 0)

    def digit_sum_chain(n: int) -> list[int]:
        return [n] + (digit_sum_chain(sum(int(d) for d in str(n))) if n >= 10 else [])

    for (n,), result in _doctest_examples(prompts, "sum_even_fibonacci_like"):
        assert result == sum(x for x in fibonacci_like(n) if x % 2 == 0)
    for (n,), result in _doctest_examples(prompts, "list_odd_thirds_walk"):
        assert result == [x for x in thirds_walk(n) if x % 2]
    for (n,), result in _doctest_examples(prompts, "descending_all_prime_factors"):
        assert result == sorted(prime_factors(n), reverse=True)
    for (n,), result in _doctest_examples(prompts, "count_distinct_all_digit_sum_chain"):
        assert result == len(set(digit_sum_chain(n)))
    for (n,), result in _doctest_examples(prompts, "product_triple_divisors"):
        assert result == math.prod(d for d in range(3, n + 1, 3) if n % d == 0)
    for (n,), result in _doctest_examples(prompts, "list_all_halvings"):
        assert result == [n >> k for k in range(n.bit_length())]
    for (n,), result in _doctest_examples(prompts, "largest_above_ten_triangular"):
        assert result == max((k * (k + 1) // 2 for k in range(1, n + 1) if k * (k + 1) > 20), default=None)
    for (n,), result in _doctest_examples(prompts, "mean_even_powers_of_two"):
        assert result == (round(sum(2**k for k in range(1, n)) / (n - 1), 2) if n > 1 else 0.0)
    sentence = "Return the smallest of the odd numbers in the divisors of n, or None if there are none."
    assert sentence in _task_prompt(prompts, "smallest_odd_divisors(n: int)")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("sequence-functions", prompts)


def test_stock_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import stock_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries): every text change
    # is named, so none has a count.
    prompts = _checked_pool(stock_function_prompts, 7 * (4 * 9 + 4 * 4))

    # The examples are what the docstring says, computed here independently of the source's code.
    for (stock,), result in _doctest_examples(prompts, "sum_totals_with_apples"):
        assert 2 <= len(stock) <= 4 and all(1 <= len(shelf) <= 4 for shelf in stock.values())
        assert result == sum(sum(shelf.values()) for shelf in stock.values() if "apple" in shelf)
    for (stock,), result in _doctest_examples(prompts, "list_apples_shops"):
        assert result == [shelf["apple"] if "apple" in shelf else 0 for shelf in stock.values()]
    for (stock,), result in _doctest_examples(prompts, "largest_kinds_with_empty_shelf"):
        assert result == max(
            (len(shelf) for shelf in stock.values() if min(shelf.values()) == 0), default=None
        )
    for (stock,), result in _doctest_examples(prompts, "joined_top_items_big"):
        tops = [
            sorted(shelf, key=lambda item: -shelf[item])[0]
            for shelf in stock.values()
            if sum(shelf.values()) >= 31
        ]
        assert result == ",".join(tops)
    for (stock,), result in _doctest_examples(prompts, "alphabetical_upper_names_well_stocked"):
        assert result == sorted(
            shop.upper() for shop, shelf in stock.items() if all(c >= 5 for c in shelf.values())
        )
    for (stock,), result in _doctest_examples(prompts, "list_item_lists_varied"):
        assert result == ["+".join(shelf) for shelf in stock.values() if len(shelf) > 2]
    for (stock,), result in _doctest_examples(prompts, "mean_largest_counts_long_names"):
        kept = [max(shelf.values()) for shop, shelf in stock.items() if len(shop) >= 5]
        assert result == (round(sum(kept) / len(kept), 2) if kept else 0.0)
    sentence = "Return the names of the shops with an item whose count is 0 in upper case joined by commas"
    assert sentence in _task_prompt(prompts, "joined_upper_names_with_empty_shelf(stock: Dict")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("stock-functions", prompts)


def test_log_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import log_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries): every text change
    # is named, so none has a count.
    prompts = _checked_pool(log_function_prompts, 7 * (4 * 9 + 4 * 4))

    def message(line: str) -> str:
        return line[line.index(":") + 2 :]

    # The examples are what the docstring says, computed here independently of the source's code.
    for (logs,), result in _doctest_examples(prompts, "sum_message_lengths_errors"):
        assert 3 <= len(logs) <= 6 and len(set(logs)) == len(logs)
        assert result == sum(len(line) - len("ERROR: ") for line in logs if line.split(":")[0] == "ERROR")
    for (logs,), result in _doctest_examples(prompts, "list_first_numbers_lines"):
        firsts = [[int(word) for word in message(line).split() if word.isdigit()] for line in logs]
        assert result == [numbers[0] if numbers else 0 for numbers in firsts]
    for (logs,), result in _doctest_examples(prompts, "largest_word_counts_not_debug"):
        assert result == max((message(line).count(" ") + 1 for line in logs if line[0] != "D"), default=None)
    for (logs,), result in _doctest_examples(prompts, "joined_levels_about_disk"):
        assert result == ",".join(line.split(":")[0].lower() for line in logs if "disk" in message(line))
    for (logs,), result in _doctest_examples(prompts, "alphabetical_upper_messages_warnings"):
        assert result == sorted(message(line).upper() for line in logs if line.startswith("WARN"))
    for (logs,), result in _doctest_examples(prompts, "mean_digit_counts_with_numbers"):
        kept = [len(re.findall(r"\d", line)) for line in logs if re.search(r"\d", line)]
        assert result == (round(sum(kept) / len(kept), 2) if kept else 0.0)
    for (logs,), result in _doctest_examples(prompts, "list_first_words_long_messages"):
        assert result == [message(line).split(" ")[0] for line in logs if message(line).count(" ") >= 3]
    sentence = "Return the messages of the lines whose level is ERROR in upper case joined by commas"
    assert sentence in _task_prompt(prompts, "joined_upper_messages_errors(logs: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("log-functions", prompts)


def test_url_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from urllib.parse import parse_qsl, urlsplit

    from sglang_dflash.train.data import url_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries): every text change
    # is named, so none has a count.
    prompts = _checked_pool(url_function_prompts, 7 * (4 * 9 + 4 * 4))

    def segments(url: str) -> list[str]:
        return [segment for segment in urlsplit(url).path.split("/") if segment]

    # The examples are what the docstring says, computed here independently of the source's code
    # (the standard library's url parser).
    for (urls,), result in _doctest_examples(prompts, "sum_host_lengths_secure"):
        assert 3 <= len(urls) <= 5 and len(set(urls)) == len(urls)
        assert result == sum(len(urlsplit(u).netloc) for u in urls if urlsplit(u).scheme == "https")
    for (urls,), result in _doctest_examples(prompts, "list_parameter_counts_urls"):
        assert result == [len(parse_qsl(urlsplit(u).query)) for u in urls]
    for (urls,), result in _doctest_examples(prompts, "largest_depths_with_query"):
        assert result == max((len(segments(u)) for u in urls if urlsplit(u).query), default=None)
    for (urls,), result in _doctest_examples(prompts, "joined_last_segments_deep"):
        assert result == ",".join(segments(u)[-1] for u in urls if len(segments(u)) > 1)
    for (urls,), result in _doctest_examples(prompts, "alphabetical_bare_hosts_www"):
        hosts = [urlsplit(u).netloc for u in urls]
        assert result == sorted(host[4:] for host in hosts if host[:4] == "www.")
    for (urls,), result in _doctest_examples(prompts, "list_schemes_org"):
        assert result == [urlsplit(u).scheme.upper() for u in urls if urlsplit(u).netloc[-4:] == ".org"]
    for (urls,), result in _doctest_examples(prompts, "mean_lengths_short"):
        kept = [len(u) for u in urls if len(u) < 31]
        assert result == (round(sum(kept) / len(kept), 2) if kept else 0.0)
    sentence = "Return the hosts of the urls whose scheme is https joined by commas"
    assert sentence in _task_prompt(prompts, "joined_hosts_secure(urls: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("url-functions", prompts)


def test_ip_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from ipaddress import IPv4Address, IPv4Network

    from sglang_dflash.train.data import ip_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(ip_function_prompts, 7 * (4 * 9 + 4 * 4))
    private = [IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")]

    def is_private(address: str) -> bool:
        return any(IPv4Address(address) in network for network in private)

    # The examples are what the docstring says, computed here independently of the source's code
    # (the standard library's address types).
    seen_private = seen_public_172 = False
    for (addresses,), result in _doctest_examples(prompts, "sum_number_sums_private"):
        assert 3 <= len(addresses) <= 5 and len(set(addresses)) == len(addresses)
        assert result == sum(sum(IPv4Address(a).packed) for a in addresses if is_private(a))
        seen_private |= any(is_private(a) for a in addresses)
    for (addresses,), result in _doctest_examples(prompts, "list_last_numbers_addresses"):
        assert result == [IPv4Address(a).packed[3] for a in addresses]
        seen_public_172 |= any(a.startswith("172.") and not is_private(a) for a in addresses)
    for (addresses,), result in _doctest_examples(prompts, "largest_first_numbers_loopback"):
        loopback = [IPv4Address(a).packed[0] for a in addresses if IPv4Address(a).is_loopback]
        assert result == max(loopback, default=None)
    for (addresses,), result in _doctest_examples(prompts, "joined_hex_even_last"):
        assert result == ",".join(
            IPv4Address(a).packed.hex() for a in addresses if IPv4Address(a).packed[3] % 2 == 0
        )
    for (addresses,), result in _doctest_examples(prompts, "list_reversed_with_zero"):
        kept = [a for a in addresses if 0 in IPv4Address(a).packed]
        assert result == [IPv4Address(a).reverse_pointer.removesuffix(".in-addr.arpa") for a in kept]
    for (addresses,), result in _doctest_examples(prompts, "alphabetical_networks_low_first"):
        kept = [a for a in addresses if IPv4Address(a).packed[0] < 128]
        assert result == sorted(str(IPv4Network(f"{a}/24", strict=False).network_address)[:-2] for a in kept)
    assert seen_private and seen_public_172
    sentence = "Return the addresses whose last number is below 100 with every number padded to three digits"
    assert sentence in _task_prompt(prompts, "joined_padded_low_last(addresses: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("ip-functions", prompts)


def test_point_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import point_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(point_function_prompts, 7 * (4 * 9 + 4 * 4))
    # The compass points as unit vectors: the nearest direction is the one with the largest dot product.
    compass = {
        name: (math.cos(math.radians(45 * i)), math.sin(math.radians(45 * i)))
        for i, name in enumerate(("E", "NE", "N", "NW", "W", "SW", "S", "SE"))
    }

    def direction(x: int, y: int) -> str:
        return max(compass, key=lambda name: x * compass[name][0] + y * compass[name][1]) if x or y else "O"

    def quadrant(x: int, y: int) -> str:  # from the angle, counter-clockwise from the x-axis
        return (
            "axis"
            if x * y == 0
            else ("I", "II", "III", "IV")[int(math.degrees(math.atan2(y, x)) % 360) // 90]
        )

    # The examples are what the docstring says, computed here independently of the source's code.
    seen_axis = seen_diagonal = False
    for (points,), result in _doctest_examples(prompts, "sum_manhattan_first_quadrant"):
        assert 3 <= len(points) <= 5 and len(set(points)) == len(points)
        assert result == sum(abs(x) + abs(y) for x, y in points if min(x, y) > 0)
    for (points,), result in _doctest_examples(prompts, "largest_squared_distances_on_axis"):
        kept = [round(math.hypot(x, y) ** 2) for x, y in points if x * y == 0]
        assert result == max(kept, default=None)
        seen_axis |= bool(kept)
    for (points,), result in _doctest_examples(prompts, "list_quadrants_near"):
        assert result == [quadrant(x, y) for x, y in points if math.hypot(x, y) <= 5]
    for (points,), result in _doctest_examples(prompts, "joined_directions_points"):
        assert result == ",".join(direction(x, y) for x, y in points)
    for (points,), result in _doctest_examples(prompts, "list_signs_even_x"):
        assert result == ["".join("0+-"[(v > 0) + 2 * (v < 0)] for v in p) for p in points if p[0] % 2 == 0]
    for (points,), result in _doctest_examples(prompts, "alphabetical_labels_diagonal"):
        diagonal = [f"{x}:{y}" for x, y in points if x * x == y * y]
        assert result == sorted(diagonal)
        seen_diagonal |= bool(diagonal)
    assert seen_axis and seen_diagonal
    sentence = "Return the sum of the y coordinates of the points above the x-axis (y positive)"
    assert sentence in _task_prompt(prompts, "sum_ys_above(points: List[Tuple[int, int]])")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("point-functions", prompts)


def test_card_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import card_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(card_function_prompts, 7 * (4 * 9 + 4 * 4))
    # A card read here independently of the source's code: its rank (2..14, the ace high) and suit.
    order = "23456789TJQKA"

    def rank(card: str) -> int:
        return order.index(card[:-1].replace("10", "T")) + 2

    def suit(card: str) -> str:
        return {"C": "clubs", "D": "diamonds", "H": "hearts", "S": "spades"}[card[-1]]

    seen_ten = seen_ace = False
    for (cards,), result in _doctest_examples(prompts, "sum_values_hearts"):
        assert 3 <= len(cards) <= 5 and len(set(cards)) == len(cards)
        assert all(re.fullmatch(r"(A|[2-9]|10|J|Q|K)[CDHS]", card) for card in cards)
        seen_ten |= any(card.startswith("10") for card in cards)
        seen_ace |= any(card.startswith("A") for card in cards)
        assert result == sum(rank(c) % 13 if rank(c) == 14 else rank(c) for c in cards if suit(c) == "hearts")
    for name, keep in (("faces", lambda c: 11 <= rank(c) <= 13), ("numbered", lambda c: rank(c) <= 10)):
        for (cards,), result in _doctest_examples(prompts, f"sum_points_{name}"):
            assert result == sum(11 if rank(c) == 14 else min(rank(c), 10) for c in cards if keep(c))
    for (cards,), result in _doctest_examples(prompts, "largest_high_values_cards"):
        assert result == max(rank(c) for c in cards)
    for (cards,), result in _doctest_examples(prompts, "list_names_red"):
        assert result == [f"{c[:-1]} of {suit(c)}" for c in cards if suit(c) in ("hearts", "diamonds")]
    for (cards,), result in _doctest_examples(prompts, "joined_colors_even_ranked"):
        kept = [c for c in cards if (1 if rank(c) == 14 else rank(c)) % 2 == 0]
        assert result == ",".join("red" if suit(c) in ("hearts", "diamonds") else "black" for c in kept)
    for (cards,), result in _doctest_examples(prompts, "list_lengths_spades"):
        assert result == [len(c) for c in cards if suit(c) == "spades"]
    assert seen_ten or seen_ace
    sentence = "Return a list of the suit names of the number cards"
    assert sentence in _task_prompt(prompts, "list_suits_numbered(cards: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("card-functions", prompts)


def test_chess_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import chess_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(chess_function_prompts, 7 * (4 * 9 + 4 * 4))

    # A square read here independently of the source's code: (column, row) from 0 to 7, 'a1' (0, 0).
    def cell(square: str) -> tuple[int, int]:
        return "abcdefgh".index(square[0]), "12345678".index(square[1])

    def dark(square: str) -> bool:
        column, row = cell(square)
        return column % 2 == row % 2  # 'a1' dark, 'b1' and 'a2' light

    seen_centre = seen_edge = False
    for (squares,), result in _doctest_examples(prompts, "sum_ranks_dark"):
        assert 3 <= len(squares) <= 5 and len(set(squares)) == len(squares)
        assert all(re.fullmatch(r"[a-h][1-8]", square) for square in squares)
        seen_centre |= any(square in ("d4", "d5", "e4", "e5") for square in squares)
        seen_edge |= any(square[0] in "ah" or square[1] in "18" for square in squares)
        assert result == sum(cell(q)[1] + 1 for q in squares if dark(q))
    for (squares,), result in _doctest_examples(prompts, "list_indices_light"):
        assert result == [cell(q)[1] * 8 + cell(q)[0] for q in squares if not dark(q)]
    for (squares,), result in _doctest_examples(prompts, "largest_king_distances_squares"):
        assert result == max(max(cell(q)) for q in squares)
    for (squares,), result in _doctest_examples(prompts, "sum_file_numbers_kingside"):
        assert result == sum(cell(q)[0] + 1 for q in squares if cell(q)[0] >= 4)
    for (squares,), result in _doctest_examples(prompts, "list_mirrored_ranks_white_half"):
        assert result == [q[0] + "87654321"[cell(q)[1]] for q in squares if cell(q)[1] <= 3]
    for (squares,), result in _doctest_examples(prompts, "joined_mirrored_files_edge"):
        kept = [q for q in squares if 0 in cell(q) or 7 in cell(q)]
        assert result == ",".join("hgfedcba"[cell(q)[0]] + q[1] for q in kept)
    for (squares,), result in _doctest_examples(prompts, "list_colors_central"):
        assert result == ["dark" if dark(q) else "light" for q in squares if q in ("d4", "d5", "e4", "e5")]
    assert seen_centre and seen_edge
    sentence = "Return a list of the names of the light squares"
    assert sentence in _task_prompt(prompts, "list_upper_light(squares: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("chess-functions", prompts)


def test_note_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import note_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(note_function_prompts, 7 * (4 * 9 + 4 * 4))
    names = ["C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B"]

    # A note read here independently of the source's code: its MIDI number, 'C4' 60 and 'A4' 69.
    def midi(note: str) -> int:
        return 12 * (int(note[-1]) + 1) + names.index(note[:-1])

    seen_sharp = seen_natural = False
    for (notes,), result in _doctest_examples(prompts, "sum_octaves_sharp"):
        assert 3 <= len(notes) <= 5 and len(set(notes)) == len(notes)
        assert all(re.fullmatch(r"[A-G]#?[2-6]", note) and note[:-1] in names for note in notes)
        seen_sharp |= any("#" in note for note in notes)
        seen_natural |= any("#" not in note for note in notes)
        assert result == sum(int(n[-1]) for n in notes if "#" in n)
    for (notes,), result in _doctest_examples(prompts, "list_midi_numbers_natural"):
        assert result == [midi(n) for n in notes if "#" not in n]
    for (notes,), result in _doctest_examples(prompts, "list_steps_from_middle_c_notes"):
        assert result == [midi(n) - 60 for n in notes]
    for (notes,), result in _doctest_examples(prompts, "sum_semitones_above_middle_c"):
        assert result == sum(names.index(n[:-1]) for n in notes if midi(n) > 60)
    for (notes,), result in _doctest_examples(prompts, "list_semitone_up_notes"):
        assert result == [names[(midi(n) + 1) % 12] + str((midi(n) + 1) // 12 - 1) for n in notes]
    for (notes,), result in _doctest_examples(prompts, "list_octave_up_middle_octave"):
        assert result == [n[:-1] + "5" for n in notes if n[-1] == "4"]
    for (notes,), result in _doctest_examples(prompts, "joined_names_c_major_chord"):
        assert result == ",".join(n[:-1] for n in notes if n[:-1] in ("C", "E", "G"))
    for (notes,), result in _doctest_examples(prompts, "list_lower_low"):
        assert result == [n.lower() for n in notes if int(n[-1]) <= 3]
    assert seen_sharp and seen_natural
    sentence = "Return a list of the distances of the notes of octave 4"
    assert sentence in _task_prompt(prompts, "list_steps_from_middle_c_middle_octave(notes: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("note-functions", prompts)


def test_size_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import size_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(size_function_prompts, 7 * (4 * 9 + 4 * 4))

    units_seen = set()

    # A size read here independently of the source's code: its number, unit and bytes (1 KB 1024 B).
    def parse(size: str) -> tuple[int, str, int]:
        number, unit = re.fullmatch(r"([1-9][0-9]*)(B|KB|MB|GB)", size).groups()
        units_seen.add(unit)
        return int(number), unit, int(number) * {"B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30}[unit]

    for (sizes,), result in _doctest_examples(prompts, "sum_numbers_kb"):
        assert 3 <= len(sizes) <= 5 and len(set(sizes)) == len(sizes)
        assert all(1 <= parse(size)[0] <= 999 for size in sizes)
        assert result == sum(parse(s)[0] for s in sizes if s.endswith("KB"))
    for (sizes,), result in _doctest_examples(prompts, "list_kilobytes_over_100_mb"):
        assert result == [parse(s)[2] // 1024 for s in sizes if parse(s)[2] > 100 * 2**20]
    for (sizes,), result in _doctest_examples(prompts, "list_megabytes_sizes"):
        assert result == [parse(s)[2] // 2**20 for s in sizes]
    for (sizes,), result in _doctest_examples(prompts, "sum_unit_powers_under_100_kb"):
        powers = ["B", "KB", "MB", "GB"]
        assert result == sum(powers.index(parse(s)[1]) for s in sizes if parse(s)[2] < 100 * 1024)
    for (sizes,), result in _doctest_examples(prompts, "list_doubled_round"):
        assert result == [f"{2 * parse(s)[0]}{parse(s)[1]}" for s in sizes if parse(s)[0] % 100 == 0]
    for (sizes,), result in _doctest_examples(prompts, "joined_spaced_even"):
        assert result == ",".join(f"{parse(s)[0]} {parse(s)[1]}" for s in sizes if parse(s)[0] % 2 == 0)
    for (sizes,), result in _doctest_examples(prompts, "list_units_mb"):
        assert result == [parse(s)[1] for s in sizes if s.endswith("MB")]
    for (sizes,), result in _doctest_examples(prompts, "list_lower_sizes"):
        assert result == [s.lower() for s in sizes]
    assert units_seen == {"B", "KB", "MB", "GB"}
    sentence = "Return a list of the sizes over 100 MB (1 KB is 1024 bytes, 1 MB 1024 KB, 1 GB 1024 MB) in"
    assert sentence in _task_prompt(prompts, "list_kilobytes_over_100_mb(sizes: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("size-functions", prompts)


def test_temperature_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import temperature_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(temperature_function_prompts, 7 * (4 * 9 + 4 * 4))

    units_seen = set()

    # A temperature read here independently of the source's code: its number, its unit, and its
    # degrees Celsius and Fahrenheit rounded down (math.floor of the exact conversion).
    def parse(temperature: str) -> tuple[int, str, int, int]:
        number, unit = re.fullmatch(r"(-?[0-9]+)([CF])", temperature).groups()
        number = int(number)
        units_seen.add(unit)
        celsius = number if unit == "C" else math.floor((number - 32) * 5 / 9)
        fahrenheit = number if unit == "F" else math.floor(number * 9 / 5 + 32)
        return number, unit, celsius, fahrenheit

    def freezing(t: str) -> bool:
        number, unit = parse(t)[:2]
        return number < 0 if unit == "C" else number < 32

    for (temperatures,), result in _doctest_examples(prompts, "sum_numbers_in_celsius"):
        assert 3 <= len(temperatures) <= 5 and len(set(temperatures)) == len(temperatures)
        assert all(-25 <= parse(t)[0] <= 105 for t in temperatures)
        assert result == sum(parse(t)[0] for t in temperatures if t.endswith("C"))
    for (temperatures,), result in _doctest_examples(prompts, "list_degrees_celsius_freezing"):
        assert result == [parse(t)[2] for t in temperatures if freezing(t)]
    for (temperatures,), result in _doctest_examples(prompts, "list_degrees_fahrenheit_temperatures"):
        assert result == [parse(t)[3] for t in temperatures]
    for (temperatures,), result in _doctest_examples(prompts, "sum_magnitudes_hot"):
        assert result == sum(abs(parse(t)[0]) for t in temperatures if parse(t)[2] > 30)
    for (temperatures,), result in _doctest_examples(prompts, "list_warmer_negative"):
        assert result == [f"{parse(t)[0] + 1}{parse(t)[1]}" for t in temperatures if parse(t)[0] < 0]
    for (temperatures,), result in _doctest_examples(prompts, "joined_spaced_even"):
        even = [t for t in temperatures if parse(t)[0] % 2 == 0]
        assert result == ",".join(f"{parse(t)[0]} {parse(t)[1]}" for t in even)
    for (temperatures,), result in _doctest_examples(prompts, "list_units_in_fahrenheit"):
        assert result == [parse(t)[1] for t in temperatures if t.endswith("F")]
    for (temperatures,), result in _doctest_examples(prompts, "list_lower_temperatures"):
        assert result == [t.lower() for t in temperatures]
    assert units_seen == {"C", "F"}
    sentence = "Return a list of the temperatures below freezing (under 0 degrees Celsius, that is under 32"
    assert sentence in _task_prompt(prompts, "list_degrees_celsius_freezing(temperatures: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("temperature-functions", prompts)


def test_distance_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import distance_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(distance_function_prompts, 7 * (4 * 9 + 4 * 4))

    units_seen = set()

    # A distance read here independently of the source's code: its number, its unit and its metres.
    def parse(distance: str) -> tuple[int, str, int]:
        number, unit = re.fullmatch(r"([0-9]+)(km|mi)", distance).groups()
        units_seen.add(unit)
        return int(number), unit, int(number) * {"km": 1000, "mi": 1609}[unit]

    for (distances,), result in _doctest_examples(prompts, "sum_numbers_in_km"):
        assert 3 <= len(distances) <= 5 and len(set(distances)) == len(distances)
        assert all(1 <= parse(d)[0] <= 300 for d in distances)
        assert result == sum(parse(d)[0] for d in distances if d.endswith("km"))
    for (distances,), result in _doctest_examples(prompts, "list_whole_miles_long"):
        assert result == [parse(d)[2] // 1609 for d in distances if parse(d)[2] > 100_000]
    for (distances,), result in _doctest_examples(prompts, "list_whole_km_short"):
        assert result == [parse(d)[2] // 1000 for d in distances if parse(d)[2] < 10_000]
    for (distances,), result in _doctest_examples(prompts, "sum_metres_round"):
        assert result == sum(parse(d)[2] for d in distances if parse(d)[0] % 10 == 0)
    for (distances,), result in _doctest_examples(prompts, "list_longer_odd"):
        assert result == [f"{parse(d)[0] + 1}{parse(d)[1]}" for d in distances if parse(d)[0] % 2 == 1]
    for (distances,), result in _doctest_examples(prompts, "joined_spaced_in_miles"):
        assert result == ",".join(f"{parse(d)[0]} mi" for d in distances if d.endswith("mi"))
    for (distances,), result in _doctest_examples(prompts, "list_upper_distances"):
        assert result == [d.upper() for d in distances]
    assert units_seen == {"km", "mi"}
    assert any(result for _, result in _doctest_examples(prompts, "list_whole_km_short"))  # keeps some
    sentence = "Return a list of the distances over 100 kilometres (a mile is 1609 metres) in whole miles"
    assert sentence in _task_prompt(prompts, "list_whole_miles_long(distances: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("distance-functions", prompts)


def test_percent_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import percent_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(percent_function_prompts, 7 * (4 * 9 + 4 * 4))

    # A percentage read here independently of the source's code: its number.
    def number(percent: str) -> int:
        return int(re.fullmatch(r"([0-9]+)%", percent).group(1))

    for (percents,), result in _doctest_examples(prompts, "sum_numbers_high"):
        assert 3 <= len(percents) <= 5 and len(set(percents)) == len(percents)
        assert all(0 <= number(p) <= 100 for p in percents)
        assert result == sum(number(p) for p in percents if number(p) > 50)
    for (percents,), result in _doctest_examples(prompts, "list_rests_passing"):
        assert result == [100 - number(p) for p in percents if number(p) >= 60]
    for (percents,), result in _doctest_examples(prompts, "list_tenths_odd"):
        assert result == [number(p) // 10 for p in percents if number(p) % 2 == 1]
    for (percents,), result in _doctest_examples(prompts, "sum_of_200_quarters"):
        assert result == sum(2 * number(p) for p in percents if number(p) % 25 == 0)
    for (percents,), result in _doctest_examples(prompts, "list_decimals_percents"):
        assert result == [f"{number(p) // 100}.{number(p) % 100:02d}" for p in percents]
    for (percents,), result in _doctest_examples(prompts, "joined_spelled_round"):
        assert result == ",".join(f"{number(p)} percent" for p in percents if number(p) % 10 == 0)
    for (percents,), result in _doctest_examples(prompts, "list_rest_percents_low"):
        assert result == [f"{100 - number(p)}%" for p in percents if number(p) < 10]
    assert any(result for _, result in _doctest_examples(prompts, "list_numbers_quarters"))  # keeps some
    sentence = "Return a list of the rest to 100 of each of the percentages of at least 60 (like '60%')"
    assert sentence in _task_prompt(prompts, "list_rests_passing(percents: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("percent-functions", prompts)


def test_seat_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import seat_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(seat_function_prompts, 7 * (4 * 9 + 4 * 4))
    letters_seen = set()

    # A seat read here independently of the source's code: its row and its letter.
    def parse(seat: str) -> tuple[int, str]:
        row, letter = re.fullmatch(r"([0-9]+)([A-F])", seat).groups()
        letters_seen.add(letter)
        return int(row), letter

    for (seats,), result in _doctest_examples(prompts, "sum_rows_window"):
        assert 3 <= len(seats) <= 5 and len(set(seats)) == len(seats)
        assert all(1 <= parse(s)[0] <= 40 for s in seats)
        assert result == sum(parse(s)[0] for s in seats if parse(s)[1] in ("A", "F"))
    for (seats,), result in _doctest_examples(prompts, "list_numbers_aisle"):
        assert result == [
            6 * (parse(s)[0] - 1) + " ABCDEF".index(parse(s)[1]) for s in seats if parse(s)[1] in "CD"
        ]
    for (seats,), result in _doctest_examples(prompts, "list_places_middle"):
        assert result == [" ABCDEF".index(parse(s)[1]) for s in seats if parse(s)[1] in "BE"]
    for (seats,), result in _doctest_examples(prompts, "sum_rows_behind_back"):
        assert result == sum(40 - parse(s)[0] for s in seats if parse(s)[0] > 30)
    for (seats,), result in _doctest_examples(prompts, "list_one_back_front"):
        assert result == [f"{parse(s)[0] + 1}{parse(s)[1]}" for s in seats if parse(s)[0] < 10]
    for (seats,), result in _doctest_examples(prompts, "joined_dashed_even_rows"):
        assert result == ",".join(f"{parse(s)[0]}-{parse(s)[1]}" for s in seats if parse(s)[0] % 2 == 0)
    for (seats,), result in _doctest_examples(prompts, "list_lower_seats"):
        assert result == [s.lower() for s in seats]
    assert letters_seen == set("ABCDEF")
    assert any(result for _, result in _doctest_examples(prompts, "list_rows_back"))  # keeps some
    sentence = "Return a list of the rows behind each of the seats in rows over 30 in a 40-row cabin"
    assert sentence in _task_prompt(prompts, "list_rows_behind_back(seats: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("seat-functions", prompts)


def test_ingredient_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import ingredient_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(ingredient_function_prompts, 7 * (4 * 9 + 4 * 4))
    units_seen = set()

    # A recipe line read here independently of the source's code: quantity, unit as written, name.
    def parse(line: str) -> tuple[int, str, str]:
        quantity, unit, name = re.fullmatch(r"([0-9]+) (cups?|tbsp|tsp) ([a-z]+)", line).groups()
        assert (unit == "cup") == (unit.startswith("cup") and quantity == "1")  # 'cups' past one
        units_seen.add(unit)
        return int(quantity), unit, name

    def teaspoons(line: str) -> int:
        quantity, unit, _ = parse(line)
        return quantity * {"cup": 48, "cups": 48, "tbsp": 3, "tsp": 1}[unit]

    for (lines,), result in _doctest_examples(prompts, "sum_quantities_ingredients"):
        assert 3 <= len(lines) <= 5 and len(set(lines)) == len(lines)
        assert all(1 <= parse(i)[0] <= 12 for i in lines)
        assert result == sum(parse(i)[0] for i in lines)
    for (lines,), result in _doctest_examples(prompts, "list_teaspoons_spoons"):
        assert result == [teaspoons(i) for i in lines if parse(i)[1] in ("tbsp", "tsp")]
    for (lines,), result in _doctest_examples(prompts, "list_teaspoons_cups"):
        assert result == [teaspoons(i) for i in lines if parse(i)[1].startswith("cup")]
    for (lines,), result in _doctest_examples(prompts, "sum_name_lengths_sweet"):
        assert result == sum(len(parse(i)[2]) for i in lines if parse(i)[2] in ("sugar", "honey", "cocoa"))
    for (lines,), result in _doctest_examples(prompts, "list_doubled_large"):
        assert result == [2 * parse(i)[0] for i in lines if parse(i)[0] > 4]
    for (lines,), result in _doctest_examples(prompts, "list_double_single"):
        expected = [
            f"2 {'cups' if parse(i)[1] == 'cup' else parse(i)[1]} {parse(i)[2]}"
            for i in lines
            if parse(i)[0] == 1
        ]
        assert result == expected
    for (lines,), result in _doctest_examples(prompts, "joined_units_even"):
        assert result == ",".join(parse(i)[1] for i in lines if parse(i)[0] % 2 == 0)
    for (lines,), result in _doctest_examples(prompts, "list_upper_ingredients"):
        assert result == [i.upper() for i in lines]
    assert units_seen == {"cup", "cups", "tbsp", "tsp"}
    sentence = "Return a list of the sweet lines (sugar, honey or cocoa) in teaspoons (a cup is 48, a tbsp 3"
    assert sentence in _task_prompt(prompts, "list_teaspoons_sweet(ingredients: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("ingredient-functions", prompts)


def test_match_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import match_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(match_function_prompts, 7 * (4 * 9 + 4 * 4))

    # A result read here independently of the source's code: home and away goals.
    def goals(result: str) -> tuple[int, int]:
        home, away = re.fullmatch(r"([0-9])-([0-9])", result).groups()
        return int(home), int(away)

    for (results,), value in _doctest_examples(prompts, "sum_totals_home_wins"):
        assert 3 <= len(results) <= 5 and len(set(results)) == len(results)
        assert all(max(goals(r)) <= 5 for r in results)
        assert value == sum(sum(goals(r)) for r in results if goals(r)[0] > goals(r)[1])
    for (results,), value in _doctest_examples(prompts, "list_margins_clean_sheets"):
        assert value == [goals(r)[0] - goals(r)[1] for r in results if 0 in goals(r)]
    for (results,), value in _doctest_examples(prompts, "sum_home_points_results"):
        assert value == sum(3 if h > a else 1 if h == a else 0 for h, a in map(goals, results))
    for (results,), value in _doctest_examples(prompts, "list_home_goals_draws"):
        assert value == [goals(r)[0] for r in results if goals(r)[0] == goals(r)[1]]
    for (results,), value in _doctest_examples(prompts, "joined_winners_high_scoring"):
        kept = [goals(r) for r in results if sum(goals(r)) > 4]
        assert value == ",".join("home" if h > a else "away" if a > h else "draw" for h, a in kept)
    for (results,), value in _doctest_examples(prompts, "list_reversed_away_wins"):
        assert value == [f"{goals(r)[1]}-{goals(r)[0]}" for r in results if goals(r)[1] > goals(r)[0]]
    for (results,), value in _doctest_examples(prompts, "list_one_more_even_totals"):
        assert value == [f"{goals(r)[0] + 1}-{goals(r)[1]}" for r in results if sum(goals(r)) % 2 == 0]
    assert any(value for _, value in _doctest_examples(prompts, "list_totals_draws"))  # keeps some
    sentence = "Return the winners of the results with more than four goals in all ('home', 'away' or 'draw')"
    assert sentence in _task_prompt(prompts, "joined_winners_high_scoring(results: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("match-functions", prompts)


def test_dice_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import dice_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(dice_function_prompts, 7 * (4 * 9 + 4 * 4))

    # A roll read here independently of the source's code: dice, sides, bonus.
    def dice(roll: str) -> tuple[int, int, int]:
        count, sides, bonus = re.fullmatch(r"([1-4])d(4|6|8|10|12|20)(?:\+([1-5]))?", roll).groups()
        return int(count), int(sides), int(bonus or 0)

    for (rolls,), value in _doctest_examples(prompts, "sum_highest_d6"):
        assert 3 <= len(rolls) <= 5 and len(set(rolls)) == len(rolls)
        assert value == sum(n * s + b for n, s, b in map(dice, rolls) if s == 6)
    for (rolls,), value in _doctest_examples(prompts, "list_lowest_rolls"):
        assert value == [n + b for n, _, b in map(dice, rolls)]
    for (rolls,), value in _doctest_examples(prompts, "list_bonuses_big_dice"):
        assert value == [b for _, s, b in map(dice, rolls) if s > 8]
    for (rolls,), value in _doctest_examples(prompts, "list_counts_even_counts"):
        assert value == [n for n, _, _ in map(dice, rolls) if n % 2 == 0]
    for (rolls,), value in _doctest_examples(prompts, "list_doubled_with_bonus"):
        assert value == [f"{2 * n}d{s}+{b}" for n, s, b in map(dice, rolls) if b > 0]
    for (rolls,), value in _doctest_examples(prompts, "list_bare_single"):
        assert value == [f"1d{s}" for n, s, _ in map(dice, rolls) if n == 1]
    for (rolls,), value in _doctest_examples(prompts, "joined_dies_no_bonus"):
        assert value == ",".join(f"d{s}" for _, s, b in map(dice, rolls) if b == 0)
    assert any(value for _, value in _doctest_examples(prompts, "list_counts_with_bonus"))  # keeps some
    sentence = "Return a list of the rolls with a bonus (like '2d6+3') with twice the dice"
    assert sentence in _task_prompt(prompts, "list_doubled_with_bonus(rolls: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("dice-functions", prompts)


def test_grade_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import grade_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(grade_function_prompts, 7 * (4 * 9 + 4 * 4))
    order = "F D- D D+ C- C C+ B- B B+ A- A A+".split()  # written out here, lowest first
    points = {"A": 4, "B": 3, "C": 2, "D": 1, "F": 0}
    sign = {"+": 1, "-": -1, "": 0}

    for (grades,), value in _doctest_examples(prompts, "sum_points_passing"):
        assert 3 <= len(grades) <= 5 and len(set(grades)) == len(grades) and set(grades) <= set(order)
        assert value == sum(points[g[0]] for g in grades if g[0] in "ABC")
    for (grades,), value in _doctest_examples(prompts, "list_tenths_grades"):
        assert value == [10 * points[g[0]] + 3 * sign[g[1:]] for g in grades]
    for (grades,), value in _doctest_examples(prompts, "list_steps_low"):
        assert value == [order.index(g) for g in grades if g[0] in "DF"]
    for (grades,), value in _doctest_examples(prompts, "list_sign_values_grades"):
        assert value == [sign[g[1:]] for g in grades]
    for (grades,), value in _doctest_examples(prompts, "list_raised_grades"):
        assert value == [order[min(order.index(g) + 1, 12)] for g in grades]
    for (grades,), value in _doctest_examples(prompts, "list_letters_minus"):
        assert value == [g[0] for g in grades if g.endswith("-")]
    for (grades,), value in _doctest_examples(prompts, "joined_sign_words_a_grades"):
        words = {"+": "plus", "-": "minus", "": "none"}
        assert value == ",".join(words[g[1:]] for g in grades if g[0] == "A")
    assert any(value for _, value in _doctest_examples(prompts, "list_points_unsigned"))  # keeps some
    sentence = "Return a list of the grades of C- or better one step up ('B+' becomes 'A-'"
    assert sentence in _task_prompt(prompts, "list_raised_passing(grades: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("grade-functions", prompts)


def test_compass_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import compass_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(compass_function_prompts, 7 * (4 * 9 + 4 * 4))
    # Bearings and names written out here, not read from the source.
    bearing = {"N": 0, "NE": 45, "E": 90, "SE": 135, "S": 180, "SW": 225, "W": 270, "NW": 315}
    by_bearing = {degrees: point for point, degrees in bearing.items()}
    names = {"N": "north", "NE": "northeast", "E": "east", "SE": "southeast"}
    names |= {"S": "south", "SW": "southwest", "W": "west", "NW": "northwest"}

    for (directions,), value in _doctest_examples(prompts, "sum_bearings_northern"):
        assert 3 <= len(directions) <= 5 and len(set(directions)) == len(directions)
        assert value == sum(bearing[d] for d in directions if d in ("N", "NE", "NW"))
    for (directions,), value in _doctest_examples(prompts, "list_opposite_bearings_directions"):
        assert value == [(bearing[d] + 180) % 360 for d in directions]
    for (directions,), value in _doctest_examples(prompts, "list_turns_to_north_directions"):
        assert value == [(360 - bearing[d]) % 360 // 45 for d in directions]
    for (directions,), value in _doctest_examples(prompts, "list_letter_counts_north_to_south"):
        assert value == [len(d) for d in directions if bearing[d] <= 180]
    for (directions,), value in _doctest_examples(prompts, "list_opposites_eastern"):
        assert value == [by_bearing[(bearing[d] + 180) % 360] for d in directions if "E" in d]
    for (directions,), value in _doctest_examples(prompts, "list_turned_right_directions"):
        assert value == [by_bearing[(bearing[d] + 90) % 360] for d in directions]
    for (directions,), value in _doctest_examples(prompts, "joined_names_diagonal"):
        assert value == ",".join(names[d] for d in directions if len(d) == 2)
    assert any(value for _, value in _doctest_examples(prompts, "list_bearings_cardinal"))  # keeps some
    sentence = "Return a list of the directions with a south part (S, SE or SW) turned a quarter turn"
    assert sentence in _task_prompt(prompts, "list_turned_right_southern(directions: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("compass-functions", prompts)


def test_phone_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import phone_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(phone_function_prompts, 7 * (4 * 9 + 4 * 4))

    # A phone number read here independently of the source's code: area code, exchange, line.
    def groups(phone: str) -> tuple[str, str, str]:
        return re.fullmatch(r"(212|305|415|617|800|888|919)-([2-9]\d\d)-(\d{4})", phone).groups()

    for (phones,), value in _doctest_examples(prompts, "sum_area_codes_toll_free"):
        assert 3 <= len(phones) <= 5 and len(set(phones)) == len(phones)
        assert value == sum(int(a) for a, _, _ in map(groups, phones) if a in ("800", "888"))
    for (phones,), value in _doctest_examples(prompts, "list_digit_sums_phones"):
        assert value == [sum(int(d) for d in "".join(groups(n))) for n in phones]
    for (phones,), value in _doctest_examples(prompts, "list_lines_exchange_555"):
        assert value == [int(line) for _, x, line in map(groups, phones) if x == "555"]
    for (phones,), value in _doctest_examples(prompts, "list_zero_counts_low_line"):
        assert value == ["".join(groups(n)).count("0") for n in phones if int(groups(n)[2]) < 5000]
    for (phones,), value in _doctest_examples(prompts, "list_digits_only_doubled"):
        digits = ["".join(groups(n)) for n in phones]
        assert value == [d for d in digits if re.search(r"(\d)\1", d)]
    for (phones,), value in _doctest_examples(prompts, "list_bracketed_area_above_500"):
        assert value == [f"({a}) {x}-{line}" for a, x, line in map(groups, phones) if int(a) > 500]
    for (phones,), value in _doctest_examples(prompts, "joined_masked_even_last"):
        assert value == ",".join("***-***-" + n[-4:] for n in phones if n[-1] in "02468")
    assert any(value for _, value in _doctest_examples(prompts, "list_area_codes_toll_free"))  # keeps some
    sentence = "Return a list of the toll-free numbers (area code 800 or 888) with dots for dashes"
    assert sentence in _task_prompt(prompts, "list_dotted_toll_free(phones: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("phone-functions", prompts)


def test_formula_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import formula_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(formula_function_prompts, 7 * (4 * 9 + 4 * 4))
    mass = {"C": 12, "H": 1, "N": 14, "O": 16, "S": 32, "Na": 23, "Cl": 35}  # written out here

    # A formula read here independently of the source's code: {element: atoms}, in the written order.
    def atoms(formula: str) -> dict[str, int]:
        assert re.fullmatch(r"((?:Na|Cl|[CHNOS])[2-6]?){2,3}", formula), formula
        parts = re.findall(r"(Na|Cl|[CHNOS])([2-6]?)", formula)
        return {element: int(count or 1) for element, count in parts}

    for (formulas,), value in _doctest_examples(prompts, "sum_masses_with_carbon"):
        assert 3 <= len(formulas) <= 5 and len(set(formulas)) == len(formulas)
        assert value == sum(
            sum(mass[e] * n for e, n in atoms(f).items()) for f in formulas if "C" in atoms(f)
        )
    for (formulas,), value in _doctest_examples(prompts, "list_atoms_formulas"):
        assert value == [sum(atoms(f).values()) for f in formulas]
    for (formulas,), value in _doctest_examples(prompts, "list_hydrogens_with_oxygen"):
        assert value == [atoms(f).get("H", 0) for f in formulas if "O" in atoms(f)]
    for (formulas,), value in _doctest_examples(prompts, "list_elements_small"):
        assert value == [len(atoms(f)) for f in formulas if sum(atoms(f).values()) <= 5]
    for (formulas,), value in _doctest_examples(prompts, "list_element_lists_salts"):
        assert value == ["-".join(atoms(f)) for f in formulas if {"Na", "Cl"} & set(atoms(f))]
    for (formulas,), value in _doctest_examples(prompts, "list_doubled_two_elements"):
        doubled = [
            "".join(f"{e}{2 * n}" for e, n in atoms(f).items()) for f in formulas if len(atoms(f)) == 2
        ]
        assert value == doubled
    for (formulas,), value in _doctest_examples(prompts, "joined_dehydrated_formulas"):
        assert value == ",".join(re.sub(r"H\d*", "", f) for f in formulas)
    assert any(value for _, value in _doctest_examples(prompts, "list_masses_no_hydrogen"))  # keeps some
    sentence = "Return a list of the formulas with carbon (the element C, not Cl) in lower case"
    assert sentence in _task_prompt(prompts, "list_lower_with_carbon(formulas: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("formula-functions", prompts)


def test_roman_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import roman_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(roman_function_prompts, 7 * (4 * 9 + 4 * 4))

    # A numeral read here independently of the source's code: its hundreds, tens and ones, each one
    # of the ten standard spellings of its place, below 200 (the drawn numerals' range).
    places = [
        ["", "C"],
        ["", "X", "XX", "XXX", "XL", "L", "LX", "LXX", "LXXX", "XC"],
        ["", "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"],
    ]

    def value(numeral: str) -> int:
        match = re.fullmatch(r"(C?)(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})", numeral)
        assert match and numeral, numeral
        hundreds, tens, ones = (spellings.index(group) for spellings, group in zip(places, match.groups()))
        return 100 * hundreds + 10 * tens + ones

    def numeral(number: int) -> str:
        return "C" * (number // 100) + places[1][number // 10 % 10] + places[2][number % 10]

    assert [numeral(n) for n in (4, 9, 14, 40, 49, 90, 99, 144, 199)] == [
        "IV", "IX", "XIV", "XL", "XLIX", "XC", "XCIX", "CXLIV", "CXCIX"
    ]  # fmt: skip
    for (numerals,), total in _doctest_examples(prompts, "sum_values_below_ten"):
        assert 3 <= len(numerals) <= 5 and len(set(numerals)) == len(numerals)
        assert total == sum(value(r) for r in numerals if value(r) < 10)
    for (numerals,), result in _doctest_examples(prompts, "list_values_even"):
        assert result == [value(r) for r in numerals if value(r) % 2 == 0]
    for (numerals,), result in _doctest_examples(prompts, "list_letter_counts_numerals"):
        assert result == [len(r) for r in numerals]
    for (numerals,), result in _doctest_examples(prompts, "list_hundreds_digits_numerals"):
        assert result == [value(r) // 100 for r in numerals]
    for (numerals,), result in _doctest_examples(prompts, "list_distinct_letters_fives"):
        assert result == [len(set(r)) for r in numerals if value(r) % 5 == 0]
    for (numerals,), result in _doctest_examples(prompts, "list_next_numerals"):
        assert result == [numeral(value(r) + 1) for r in numerals]
    for (numerals,), result in _doctest_examples(prompts, "list_doubled_numerals"):
        assert result == [numeral(2 * value(r)) for r in numerals]
    for (numerals,), result in _doctest_examples(prompts, "joined_in_digits_short"):
        assert result == ",".join(str(value(r)) for r in numerals if len(r) <= 3)
    for (numerals,), result in _doctest_examples(prompts, "list_lower_subtractive"):
        # IV, IX, XL, XC: the four pairs where a smaller letter stands before a larger one below 400
        kept = [r for r in numerals if re.search("IV|IX|XL|XC", r)]
        assert result == [r.lower() for r in kept]
    assert any(value for _, value in _doctest_examples(prompts, "list_values_hundreds"))  # keeps some
    sentence = "Return a list of the numerals of even numbers written in digits ('XIV' becomes '14')"
    assert sentence in _task_prompt(prompts, "list_in_digits_even(numerals: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("roman-functions", prompts)


def test_isbn_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import isbn_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(isbn_function_prompts, 7 * (4 * 9 + 4 * 4))

    # An ISBN-13 read here independently of the source's code: its five groups and its digits.
    def groups(isbn: str) -> tuple[str, ...]:
        return re.fullmatch(r"(97[89])-(\d)-(\d{3})-(\d{5})-(\d)", isbn).groups()

    def digits(isbn: str) -> list[int]:
        return [int(d) for d in "".join(groups(isbn))]

    def is_valid(isbn: str) -> bool:  # the standard rule: all thirteen, weighted 1, 3, ..., sum to 0 mod 10
        return sum(d * w for d, w in zip(digits(isbn), [1, 3] * 7)) % 10 == 0

    assert is_valid("978-0-306-40615-7") and not is_valid("978-0-306-40615-1")
    for (isbns,), total in _doctest_examples(prompts, "sum_check_digits_valid"):
        assert 3 <= len(isbns) <= 5 and len(set(isbns)) == len(isbns)
        assert total == sum(digits(n)[-1] for n in isbns if is_valid(n))
    for (isbns,), result in _doctest_examples(prompts, "list_digit_sums_prefix_979"):
        assert result == [sum(digits(n)) for n in isbns if groups(n)[0] == "979"]
    for (isbns,), result in _doctest_examples(prompts, "list_groups_isbns"):
        assert result == [int(groups(n)[1]) for n in isbns]
    for (isbns,), result in _doctest_examples(prompts, "list_weighted_sums_isbns"):
        assert result == [sum(d * w for d, w in zip(digits(n)[:12], [1, 3] * 6)) for n in isbns]
    for (isbns,), result in _doctest_examples(prompts, "list_titles_english"):
        assert result == [groups(n)[3] for n in isbns if groups(n)[1] in "01"]
    for (isbns,), result in _doctest_examples(prompts, "list_digits_only_big_sum"):
        assert result == ["".join(groups(n)) for n in isbns if sum(digits(n)) > 60]
    for (isbns,), result in _doctest_examples(prompts, "list_corrected_isbns"):
        # the one last digit that makes the number valid
        fixed = [next(n[:-1] + str(d) for d in range(10) if is_valid(n[:-1] + str(d))) for n in isbns]
        assert result == fixed and all(map(is_valid, result))
    for (isbns,), result in _doctest_examples(prompts, "joined_spaced_low_publisher"):
        assert result == ",".join(" ".join(groups(n)) for n in isbns if groups(n)[2][0] in "012")
    for (isbns,), result in _doctest_examples(prompts, "list_check_digits_even_check"):
        assert result == [digits(n)[-1] for n in isbns if digits(n)[-1] % 2 == 0]
    assert any(value for _, value in _doctest_examples(prompts, "list_check_digits_valid"))  # keeps some
    drawn = [n for (isbns,), _ in _doctest_examples(prompts, "list_corrected_isbns") for n in isbns]
    assert not all(map(is_valid, drawn))  # some check digits are wrong: the correction changes something
    sentence = "Return a list of the ISBNs that start with 979 with spaces for dashes"
    assert sentence in _task_prompt(prompts, "list_spaced_prefix_979(isbns: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("isbn-functions", prompts)


def test_dna_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import dna_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(dna_function_prompts, 7 * (4 * 9 + 4 * 4))

    # A strand's pairs read here independently of the source's code: A with T, C with G.
    partner = {"A": "T", "T": "A", "C": "G", "G": "C"}

    def complement(strand: str) -> str:
        return "".join(partner[letter] for letter in strand)

    def gc(strand: str) -> int:
        return sum(letter in "GC" for letter in strand)

    for (strands,), total in _doctest_examples(prompts, "sum_lengths_gc_rich"):
        assert 3 <= len(strands) <= 5 and len(set(strands)) == len(strands)
        assert all(re.fullmatch(r"[ACGT]{4,12}", s) for s in strands)
        assert total == sum(len(s) for s in strands if gc(s) > len(s) - gc(s))
    for (strands,), result in _doctest_examples(prompts, "list_gc_counts_start_codon"):
        assert result == [gc(s) for s in strands if s[:3] == "ATG"]
    for (strands,), result in _doctest_examples(prompts, "list_a_counts_ends_gc"):
        assert result == [s.count("A") for s in strands if s[-1] in "GC"]
    for (strands,), result in _doctest_examples(prompts, "list_codon_counts_long"):
        assert result == [len(s) // 3 for s in strands if len(s) > 8]
    for (strands,), result in _doctest_examples(prompts, "list_complements_strands"):
        assert result == [complement(s) for s in strands]
    for (strands,), result in _doctest_examples(prompts, "list_reverse_complements_even_length"):
        assert result == [complement(s)[::-1] for s in strands if len(s) % 2 == 0]
    for (strands,), result in _doctest_examples(prompts, "list_rna_doubled_letter"):
        doubled = [s for s in strands if any(s[i] == s[i + 1] for i in range(len(s) - 1))]
        assert result == ["".join("U" if letter == "T" else letter for letter in s) for s in doubled]
    for (strands,), result in _doctest_examples(prompts, "joined_lower_strands"):
        assert result == ",".join(s.lower() for s in strands)
    drawn = [s for (strands,), _ in _doctest_examples(prompts, "list_complements_strands") for s in strands]
    assert any(s.startswith("ATG") for s in drawn) and not all(s.startswith("ATG") for s in drawn)
    assert any(value for _, value in _doctest_examples(prompts, "list_lengths_start_codon"))  # keeps some
    sentence = "Return a list of the reverse complements of the strands that start with ATG"
    assert sentence in _task_prompt(prompts, "list_reverse_complements_start_codon(strands: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("dna-functions", prompts)


def test_password_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import password_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(password_function_prompts, 7 * (4 * 9 + 4 * 4))

    # A password's characters read here independently of the source's code, by regular expressions.
    def count(pattern: str, password: str) -> int:
        return len(re.findall(pattern, password))

    def strong(password: str) -> bool:
        return len(password) >= 8 and count("[0-9]", password) > 0 and count("[A-Z]", password) > 0

    for (passwords,), total in _doctest_examples(prompts, "sum_lengths_strong"):
        assert 3 <= len(passwords) <= 5 and len(set(passwords)) == len(passwords)
        assert all(re.fullmatch(r"[!@#$%&*]?[0-9]{0,4}[A-Za-z]+[0-9]{0,4}[!@#$%&*]?", p) for p in passwords)
        assert total == sum(len(p) for p in passwords if strong(p))
    for (passwords,), result in _doctest_examples(prompts, "list_digit_counts_has_symbol"):
        assert result == [count("[0-9]", p) for p in passwords if count("[!@#$%&*]", p)]
    for (passwords,), result in _doctest_examples(prompts, "list_upper_counts_letter_first"):
        assert result == [count("[A-Z]", p) for p in passwords if re.match("[A-Za-z]", p)]
    for (passwords,), result in _doctest_examples(prompts, "list_kinds_passwords"):
        kinds = ("[a-z]", "[A-Z]", "[0-9]", "[!@#$%&*]")
        assert result == [sum(count(kind, p) > 0 for kind in kinds) for p in passwords]
    for (passwords,), result in _doctest_examples(prompts, "list_masked_short"):
        assert result == [re.sub(".(?=..)", "*", p) for p in passwords if len(p) < 8]
    for (passwords,), result in _doctest_examples(prompts, "list_backwards_has_digit"):
        assert result == ["".join(reversed(p)) for p in passwords if count("[0-9]", p)]
    for (passwords,), result in _doctest_examples(prompts, "list_letters_only_no_upper"):
        assert result == [re.sub("[^a-z]", "", p) for p in passwords if not count("[A-Z]", p)]
    for (passwords,), result in _doctest_examples(prompts, "joined_swapped_case_passwords"):
        lower, upper = string.ascii_lowercase, string.ascii_uppercase
        swap = str.maketrans(lower + upper, upper + lower)
        assert result == ",".join(p.translate(swap) for p in passwords)
    drawn = [p for (passwords,), _ in _doctest_examples(prompts, "list_kinds_passwords") for p in passwords]
    assert any(not re.match("[A-Za-z]", p) for p in drawn) and any(count("[A-Z]", p) for p in drawn)
    strong_tasks = ("list_lengths_strong", "list_digit_counts_strong", "list_backwards_strong")
    assert any(value for task in strong_tasks for _, value in _doctest_examples(prompts, task))  # keeps some
    sentence = "Return a list of the passwords of fewer than 8 characters read backwards"
    assert sentence in _task_prompt(prompts, "list_backwards_short(passwords: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("password-functions", prompts)


def test_plate_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import plate_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(plate_function_prompts, 7 * (4 * 9 + 4 * 4))

    # A plate read here independently of the source's code, by one regular expression.
    def parts(plate: str) -> tuple[str, ...]:
        """(letters, separator, digits, suffix)."""
        return re.fullmatch(r"([A-Z]{2,3})([- ]?)([1-9][0-9]{1,3})([A-Z]?)", plate).groups()

    for (plates,), total in _doctest_examples(prompts, "sum_numbers_even_number"):
        assert 3 <= len(plates) <= 5 and len(set(plates)) == len(plates)
        assert total == sum(int(parts(p)[2]) for p in plates if int(parts(p)[2]) % 2 == 0)
    for (plates,), result in _doctest_examples(prompts, "list_digit_sums_hyphenated"):
        assert result == [sum(map(int, parts(p)[2])) for p in plates if parts(p)[1] == "-"]
    for (plates,), result in _doctest_examples(prompts, "list_letter_counts_ends_letter"):
        assert result == [len(parts(p)[0]) + 1 for p in plates if parts(p)[3]]
    for (plates,), result in _doctest_examples(prompts, "list_lengths_three_letters"):
        assert result == [len(p) for p in plates if len(parts(p)[0]) == 3]
    for (plates,), result in _doctest_examples(prompts, "list_compact_long"):
        assert result == [
            letters + digits + suffix
            for p in plates
            if len(p) > 6
            for letters, _, digits, suffix in [parts(p)]
        ]
    for (plates,), result in _doctest_examples(prompts, "list_letters_vowel_free"):
        assert result == [parts(p)[0] + parts(p)[3] for p in plates if not set("AEIOU") & set(p)]
    for (plates,), result in _doctest_examples(prompts, "list_masked_plates"):
        assert result == [re.sub("[0-9]", "#", p) for p in plates]
    for (plates,), result in _doctest_examples(prompts, "joined_lower_plates"):
        assert result == ",".join(p.lower() for p in plates)
    drawn = [parts(p) for (plates,), _ in _doctest_examples(prompts, "list_masked_plates") for p in plates]
    assert {separator for _, separator, _, _ in drawn} == {"-", " ", ""} and any(s for *_, s in drawn)
    assert any(value for _, value in _doctest_examples(prompts, "list_numbers_vowel_free"))  # keeps some
    sentence = "Return a list of the plates of more than 6 characters with the spaces and hyphens taken out"
    assert sentence in _task_prompt(prompts, "list_compact_long(plates: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("plate-functions", prompts)


def test_tag_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import tag_function_prompts

    # 7 filters x (4 number changes x 9 summaries + 4 text changes x 4 summaries).
    prompts = _checked_pool(tag_function_prompts, 7 * (4 * 9 + 4 * 4))

    # A tag read here independently of the source's code, by one regular expression.
    def parts(tag: str) -> tuple[list[str], str]:
        """(its words, its year or "")."""
        found = re.fullmatch(r"#((?:[A-Z][a-z]+){1,3}|[a-z]+)([0-9]{4})?", tag)
        words = re.findall("[A-Z][a-z]*", found[1]) or [found[1]]
        return words, found[2] or ""

    for (tags,), total in _doctest_examples(prompts, "sum_capital_counts_long"):
        assert 3 <= len(tags) <= 5 and len(set(tags)) == len(tags)
        assert total == sum(len(parts(t)[0]) for t in tags if len(t) > 14 and t[1].isupper())
    for (tags,), result in _doctest_examples(prompts, "list_years_tags"):
        assert result == [int(parts(t)[1] or 0) for t in tags]
    for (tags,), result in _doctest_examples(prompts, "list_letter_counts_has_year"):
        assert result == [len("".join(parts(t)[0])) for t in tags if parts(t)[1]]
    for (tags,), result in _doctest_examples(prompts, "list_spaced_camel"):
        assert result == [" ".join(parts(t)[0]) + parts(t)[1] for t in tags if t[1].isupper()]
    for (tags,), result in _doctest_examples(prompts, "list_bare_vowel_first"):
        assert result == [t[1:] for t in tags if t[1].lower() in "aeiou"]
    for (tags,), result in _doctest_examples(prompts, "list_letters_all_lower"):
        assert result == ["".join(parts(t)[0]) for t in tags if t == t.lower()]
    for (tags,), result in _doctest_examples(prompts, "list_lengths_short"):
        assert result == [len(t) for t in tags if len(t) <= 10]
    names = ("list_years_tags", "list_lengths_tags", "list_bare_tags", "list_lower_tags")
    drawn = [parts(t) for name in names for (tags,), _ in _doctest_examples(prompts, name) for t in tags]
    assert {len(words) for words, _ in drawn} == {1, 2, 3} and any(year for _, year in drawn)
    assert any(value for _, value in _doctest_examples(prompts, "list_spaced_camel"))  # keeps some
    sentence = "Return a list of the tags whose first letter is a capital ('#SummerFun') without the '#' and"
    assert sentence in _task_prompt(prompts, "list_spaced_camel(tags: List")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("tag-functions", prompts)


def test_threshold_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import threshold_function_prompts

    prompts = threshold_function_prompts()
    # 8 filters x 8 changes x 9 summaries.
    assert len(prompts) == 8 * 8 * 9 and prompts == threshold_function_prompts()
    _assert_one_named_task_each(prompts)

    # The examples are what the docstring says, computed here independently of the source's code.
    for (numbers, k), result in _doctest_examples(prompts, "sum_squared_above_k"):
        assert result == sum(x * x for x in numbers if x > k)
    for (numbers, k), result in _doctest_examples(prompts, "smallest_last_digit_not_multiple_of_k"):
        assert result == min((abs(x) % 10 for x in numbers if x % k), default=None)
    for (numbers, k), result in _doctest_examples(prompts, "count_distinct_within_k"):
        assert result == len({x for x in numbers if abs(x) <= k})
    sentence = (
        "Return the sum of the squares of the numbers in the list greater than k (0 if there are none)."
    )
    assert sentence in _task_prompt(prompts, "sum_squared_above_k")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("threshold-functions", prompts)


def test_text_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import text_function_prompts

    prompts = text_function_prompts()
    # 9 filters x 6 changes x 10 summaries, less the 9 x 5 counts of changed characters.
    assert len(prompts) == 9 * 6 * 10 - 9 * 5 and prompts == text_function_prompts()
    _assert_one_named_task_each(prompts)

    # The examples are what the docstring says, computed here independently of the source's code.
    for (text,), result in _doctest_examples(prompts, "joined_upper_vowels"):
        assert result == "".join(c.upper() for c in text if c.lower() in "aeiou")
    for (text,), result in _doctest_examples(prompts, "count_distinct_lowercase"):
        assert result == len({c for c in text if "a" <= c <= "z"})
    for (text,), result in _doctest_examples(prompts, "reversed_shifted_digits"):
        assert result == "".join(chr(ord(c) + 1) for c in text if c in "0123456789")[::-1]
    for (text,), result in _doctest_examples(prompts, "most_common_chars"):
        counts = {c: text.count(c) for c in text}
        assert result == next((c for c in text if counts[c] == max(counts.values())), None)
    sentence = "Return the vowels in the text, in upper case, joined into one string in their original order."
    assert sentence in _task_prompt(prompts, "joined_upper_vowels")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("text-functions", prompts)


def test_position_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import position_function_prompts

    prompts = position_function_prompts()
    # 8 position filters x 8 changes x 9 summaries.
    assert len(prompts) == 8 * 8 * 9 and prompts == position_function_prompts()
    _assert_one_named_task_each(prompts)

    # The examples are what the docstring says, computed here independently of the source's code.
    for (numbers,), result in _doctest_examples(prompts, "sum_squared_even_index"):
        assert result == sum(x * x for x in numbers[::2])
    for (numbers,), result in _doctest_examples(prompts, "list_rising"):
        assert result == [b for a, b in zip(numbers, numbers[1:]) if b > a]
    for (numbers,), result in _doctest_examples(prompts, "largest_negated_peak"):
        padded = [float("-inf"), *numbers, float("-inf")]
        peaks = [padded[i] for i in range(1, len(padded) - 1) if padded[i - 1] < padded[i] > padded[i + 1]]
        assert result == max((-x for x in peaks), default=None)
    for (numbers,), result in _doctest_examples(prompts, "list_record"):
        assert result == [x for i, x in enumerate(numbers) if i == 0 or x > max(numbers[:i])]
    for (numbers,), result in _doctest_examples(prompts, "count_distinct_first_half"):
        assert result == len(set(numbers[: len(numbers) - len(numbers) // 2]))
    sentence = (
        "Return the sum of the numbers at odd positions of the list, counting from 0 (0 if there are none)."
    )
    assert sentence in _task_prompt(prompts, "sum_odd_index")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("position-functions", prompts)


def test_digit_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import digit_function_prompts

    prompts = digit_function_prompts()
    # 7 digit filters x 7 changes x 11 summaries, less the 7 x 6 counts of changed digits.
    assert len(prompts) == 7 * 7 * 11 - 7 * 6 and prompts == digit_function_prompts()
    _assert_one_named_task_each(prompts)

    # The examples are what the docstring says, computed here independently of the source's code.
    for (n,), result in _doctest_examples(prompts, "product_odd_digits"):
        assert result == math.prod(int(d) for d in str(n) if d in "13579")
    for (n,), result in _doctest_examples(prompts, "concatenated_complemented_prime_digits"):
        assert result == "".join(str(9 - int(d)) for d in str(n) if d in "2357")
    for (n,), result in _doctest_examples(prompts, "count_large_digits"):
        assert result == sum(d in "56789" for d in str(n))
    for (n,), result in _doctest_examples(prompts, "mean_squared_digits"):
        assert result == round(sum(int(d) ** 2 for d in str(n)) / len(str(n)), 2)
    sentence = "Return the largest of the cubes of the digits of n less than 5, or None if there are none."
    assert sentence in _task_prompt(prompts, "largest_cubed_small_digits")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("digit-functions", prompts)


def test_pair_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import pair_function_prompts

    prompts = pair_function_prompts()
    # 7 pair filters x 6 changes x 9 summaries.
    assert len(prompts) == 7 * 6 * 9 and prompts == pair_function_prompts()
    _assert_one_named_task_each(prompts)

    # The examples are what the docstring says, computed here independently of the source's code.
    for (a, b), result in _doctest_examples(prompts, "sum_products_first_larger"):
        assert len(a) == len(b) and result == sum(x * y for x, y in zip(a, b) if x > y)
    for (a, b), result in _doctest_examples(prompts, "largest_gaps_same_parity"):
        assert result == max((abs(x - y) for x, y in zip(a, b) if (x + y) % 2 == 0), default=None)
    for (a, b), result in _doctest_examples(prompts, "count_distinct_smaller_both_positive"):
        assert result == len({min(x, y) for x, y in zip(a, b) if x > 0 and y > 0})
    for (a, b), result in _doctest_examples(prompts, "list_differences_unequal"):
        assert result == [x - y for x, y in zip(a, b) if x != y]
    sentence = (
        "Return the sum of the products of the pairs (a[i], b[i]) with a[i] > b[i] (0 if there are none)."
    )
    assert sentence in _task_prompt(prompts, "sum_products_first_larger")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("pair-functions", prompts)


def test_mapping_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import mapping_function_prompts

    prompts = mapping_function_prompts()
    # 7 entry filters x (6 number changes x 9 summaries + 3 name changes x 5 word summaries), less
    # the 7 x 2 counts of changed names.
    assert len(prompts) == 7 * (6 * 9 + 3 * 5) - 7 * 2 and prompts == mapping_function_prompts()
    _assert_one_named_task_each(prompts)

    # The examples are what the docstring says, computed here independently of the source's code.
    for (scores,), result in _doctest_examples(prompts, "sum_scores_passing"):
        assert result == sum(score for score in scores.values() if score >= 50)
    for (scores,), result in _doctest_examples(prompts, "largest_bonus_scores_vowel_name"):
        bonus = [score + len(name) for name, score in scores.items() if name[0] in "AEIOU"]
        assert result == max(bonus, default=None)
    for (scores,), result in _doctest_examples(prompts, "joined_upper_even_score"):
        assert result == " ".join(name.upper() for name, score in scores.items() if score % 2 == 0)
    for (scores,), result in _doctest_examples(prompts, "count_short_name"):
        assert result == sum(len(name) <= 4 for name in scores)
    sentence = (
        "Return the sum of the scores of the students with a score of at least 50 (0 if there are none)."
    )
    assert sentence in _task_prompt(prompts, "sum_scores_passing")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("mapping-functions", prompts)


def test_sentence_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import sentence_function_prompts

    prompts = sentence_function_prompts()
    # 7 word filters x (3 number changes x 9 summaries + 4 word changes x 5 word summaries), less the
    # 7 x 3 counts of changed words.
    assert len(prompts) == 7 * (3 * 9 + 4 * 5) - 7 * 3 and prompts == sentence_function_prompts()
    _assert_one_named_task_each(prompts)

    # The examples are what the docstring says, computed here independently of the source's code.
    for (sentence,), result in _doctest_examples(prompts, "sum_vowel_counts_plural"):
        assert result == sum(sum(c in "aeiouAEIOU" for c in w) for w in sentence.split() if w[-1] == "s")
    for (sentence,), result in _doctest_examples(prompts, "list_lengths_capitalized"):
        assert result == [len(w) for w in sentence.split(" ") if w[0].isupper()]
    for (sentence,), result in _doctest_examples(prompts, "joined_backwards_long_words"):
        assert result == " ".join(w[::-1] for w in sentence.split() if len(w) > 4)
    for (sentence,), result in _doctest_examples(prompts, "count_doubled"):
        assert result == sum(any(a == b for a, b in zip(w, w[1:])) for w in sentence.split())
    sentence = (
        "Return the sum of the numbers of vowels in the words of the sentence that end with the letter s"
        " (0 if there are none)."
    )
    assert sentence in _task_prompt(prompts, "sum_vowel_counts_plural")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("sentence-functions", prompts)


def test_grid_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import grid_function_prompts

    prompts = grid_function_prompts()
    # 7 row filters x (6 number changes x 9 summaries + 4 row changes x 4 row summaries), less the
    # 7 x 3 counts of changed rows.
    assert len(prompts) == 7 * (6 * 9 + 4 * 4) - 7 * 3 and prompts == grid_function_prompts()
    _assert_one_named_task_each(prompts)

    # The examples are what the docstring says, computed here independently of the source's code.
    for (grid,), result in _doctest_examples(prompts, "sum_row_sums_rows_with_zero"):
        assert result == sum(sum(row) for row in grid if 0 in row)
    for (grid,), result in _doctest_examples(prompts, "largest_row_spans_long_rows"):
        assert result == max((max(row) - min(row) for row in grid if len(row) > 3), default=None)
    for (grid,), result in _doctest_examples(prompts, "flattened_sorted_increasing_rows"):
        assert result == [x for row in grid if row == sorted(set(row)) for x in row]
    for (grid,), result in _doctest_examples(prompts, "longest_squared_rows_with_negative"):
        kept = [[x * x for x in row] for row in grid if any(x < 0 for x in row)]
        assert result == (max(kept, key=len) if kept else None)
    for (grid,), result in _doctest_examples(prompts, "count_even_sum_rows"):
        assert result == sum(sum(row) % 2 == 0 for row in grid)
    sentence = "Return the sum of the sums of the rows of the grid that contain a zero (0 if there are none)."
    assert sentence in _task_prompt(prompts, "sum_row_sums_rows_with_zero")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("grid-functions", prompts)


def test_line_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import line_function_prompts

    prompts = line_function_prompts()
    # 7 line filters x (4 number changes x 9 summaries + 4 line changes x 5 line summaries), less the
    # 7 x 3 counts of changed lines.
    assert len(prompts) == 7 * (4 * 9 + 4 * 5) - 7 * 3 and prompts == line_function_prompts()
    _assert_one_named_task_each(prompts)

    # The examples are what the docstring says, computed here independently of the source's code.
    for (text,), result in _doctest_examples(prompts, "sum_digit_sums_comment_lines"):
        assert result == sum(
            int(c) for line in text.split("\n") if line[:1] == "#" for c in line if c in "0123456789"
        )
    for (text,), result in _doctest_examples(prompts, "largest_indents_nonblank_lines"):
        indents = [len(line) - len(line.lstrip()) for line in text.split("\n") if line.strip()]
        assert result == max(indents, default=None)
    for (text,), result in _doctest_examples(prompts, "joined_first_words_lines_with_digits"):
        firsts = [line.split()[0] for line in text.split("\n") if any(c.isdigit() for c in line)]
        assert result == "\n".join(firsts)
    for (text,), result in _doctest_examples(prompts, "alphabetical_stripped_indented_lines"):
        assert result == sorted(line.strip() for line in text.split("\n") if line[:1] == " ")
    for (text,), result in _doctest_examples(prompts, "count_long_lines"):
        assert result == sum(len(line) > 12 for line in text.split("\n"))
    sentence = (
        "Return the sum of the sums of the digits in the lines of the text that start with '#'"
        " (0 if there are none)."
    )
    assert sentence in _task_prompt(prompts, "sum_digit_sums_comment_lines")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("line-functions", prompts)


def test_field_functions_are_every_combination_with_right_examples_and_disjoint_from_humaneval():
    from sglang_dflash.train.data import field_function_prompts

    prompts = field_function_prompts()
    # 7 field filters x (4 number changes x 9 summaries + 4 field changes x 5 field summaries), less
    # the 7 x 3 counts of changed fields.
    assert len(prompts) == 7 * (4 * 9 + 4 * 5) - 7 * 3 and prompts == field_function_prompts()
    _assert_one_named_task_each(prompts)

    # The examples are what the docstring says, computed here independently of the source's code.
    def is_whole_number(field: str) -> bool:
        return re.fullmatch(r" *-?[0-9]+ *", field) is not None

    for (record,), result in _doctest_examples(prompts, "sum_digit_counts_number_fields"):
        assert result == sum(len(re.findall("[0-9]", f)) for f in record.split(",") if is_whole_number(f))
    for (record,), result in _doctest_examples(prompts, "largest_space_counts_padded_fields"):
        padded = [f for f in record.split(",") if f[:1] == " " or f[-1:] == " "]
        assert result == max((f.count(" ") for f in padded), default=None)
    for (record,), result in _doctest_examples(prompts, "joined_lower_capital_fields"):
        assert result == ",".join(f.lower() for f in record.split(",") if f[:1].isupper())
    for (record,), result in _doctest_examples(prompts, "alphabetical_stripped_fields"):
        assert result == sorted(f.strip() for f in record.split(","))
    for (record,), result in _doctest_examples(prompts, "count_short_fields"):
        assert result == sum(len(f) <= 2 for f in record.split(","))
    sentence = (
        "Return the sum of the numbers of digits in the fields of the record that are whole numbers once"
        " stripped of spaces (0 if there are none)."
    )
    assert sentence in _task_prompt(prompts, "sum_digit_counts_number_fields")
    _assert_pool_is_tasks_disjoint_from_code_and_humaneval("field-functions", prompts)


# (source, its templates, its maker, its pool size) for every template story source.
TEMPLATE_STORY_SOURCES = [
    ("chain-problems", "_CHAIN_STORY_TEMPLATES", "chain_problems", 1000),
    # one of the 1000 drawn stories repeats another: the pool de-duplicates it
    ("compare-problems", "_COMPARE_STORY_TEMPLATES", "compare_problems", 999),
    # short stories over few slots: 11 of the 1000 drawn repeat another
    ("remainder-problems", "_REMAINDER_STORY_TEMPLATES", "remainder_problems", 989),
    # three of the 1000 drawn stories repeat another
    ("growth-problems", "_GROWTH_STORY_TEMPLATES", "growth_problems", 997),
    # five of the 1000 drawn stories repeat another
    ("shopping-problems", "_SHOPPING_STORY_TEMPLATES", "shopping_problems", 995),
    # short stories over few slots: 31 of the 1000 drawn repeat another
    ("rate-problems", "_RATE_STORY_TEMPLATES", "rate_problems", 969),
    # 30 of the 1000 drawn stories repeat another
    ("measure-problems", "_MEASURE_STORY_TEMPLATES", "measure_problems", 970),
    # one of the 1000 drawn stories repeats another
    ("schedule-problems", "_SCHEDULE_STORY_TEMPLATES", "schedule_problems", 999),
    # short stories over few slots: 21 of the 1000 drawn repeat another
    ("portion-problems", "_PORTION_STORY_TEMPLATES", "portion_problems", 979),
    # one of the 1000 drawn stories repeats another
    ("average-problems", "_AVERAGE_STORY_TEMPLATES", "average_problems", 999),
    # two of the 1000 drawn stories repeat another
    ("relation-problems", "_RELATION_STORY_TEMPLATES", "relation_problems", 998),
    # 18 of the 1000 drawn stories repeat another
    ("score-problems", "_SCORE_STORY_TEMPLATES", "score_problems", 982),
    # four of the 1000 drawn stories repeat another
    ("farm-problems", "_FARM_STORY_TEMPLATES", "farm_problems", 996),
    # none of the 1000 drawn stories repeats another
    ("pay-problems", "_PAY_STORY_TEMPLATES", "pay_problems", 1000),
    # ten of the 1000 drawn stories repeat another
    ("school-problems", "_SCHOOL_STORY_TEMPLATES", "school_problems", 990),
    # fifteen of the 1000 drawn stories repeat another
    ("trip-problems", "_TRIP_STORY_TEMPLATES", "trip_problems", 985),
    # three of the 1000 drawn stories repeat another
    ("kitchen-problems", "_KITCHEN_STORY_TEMPLATES", "kitchen_problems", 997),
    # four of the 1000 drawn stories repeat another
    ("garden-problems", "_GARDEN_STORY_TEMPLATES", "garden_problems", 996),
    # two of the 1000 drawn stories repeat another
    ("craft-problems", "_CRAFT_STORY_TEMPLATES", "craft_problems", 998),
    # four of the 1000 drawn stories repeat another
    ("party-problems", "_PARTY_STORY_TEMPLATES", "party_problems", 996),
    # 13 of the 1000 drawn stories repeat another
    ("pet-problems", "_PET_STORY_TEMPLATES", "pet_problems", 987),
    # three of the 1000 drawn stories repeat another
    ("home-problems", "_HOME_STORY_TEMPLATES", "home_problems", 997),
    # six of the 1000 drawn stories repeat another
    ("sport-problems", "_SPORT_STORY_TEMPLATES", "sport_problems", 994),
    # eleven of the 1000 drawn stories repeat another
    ("weather-problems", "_WEATHER_STORY_TEMPLATES", "weather_problems", 989),
    # nine of the 1000 drawn stories repeat another
    ("music-problems", "_MUSIC_STORY_TEMPLATES", "music_problems", 991),
    # ten of the 1000 drawn stories repeat another
    ("factory-problems", "_FACTORY_STORY_TEMPLATES", "factory_problems", 990),
    # 27 of the 1000 drawn stories repeat another (the taxi and tram templates have few slots)
    ("transit-problems", "_TRANSIT_STORY_TEMPLATES", "transit_problems", 973),
    # 25 of the 1000 drawn stories repeat another (the pages-a-day and audiobook templates have few slots)
    ("reading-problems", "_READING_STORY_TEMPLATES", "reading_problems", 975),
]
# Every story source a template source must stay disjoint from (the two older ones without templates too).
STORY_SOURCES = ("word-problems", "story-problems", *(case[0] for case in TEMPLATE_STORY_SOURCES))


@pytest.mark.parametrize("source, templates_name, make_name, pool_size", TEMPLATE_STORY_SOURCES)
def test_template_story_sources_use_every_template_and_stay_disjoint_from_gsm8k(
    source, templates_name, make_name, pool_size
):
    from sglang_dflash.train import data

    templates, make = getattr(data, templates_name), getattr(data, make_name)
    stories = make(400)
    assert len(set(stories)) > 390 and "{" not in "".join(stories)
    fragments = [max(re.split(r"\{\w+\}", t), key=len) for t in templates]
    assert len(fragments) == 40 and all(any(f in story for story in stories) for f in fragments)
    mix = builtin_prompts(sources=(source,))
    assert len(mix) == pool_size
    others = [s for s in STORY_SOURCES if s != source]
    assert not set(mix) & _union_of_pools(others)
    gsm8k = read_prompts(os.path.join(SHARED_DATA, "gsm8k.jsonl"))
    assert overlapping_prompts(mix, gsm8k) == []


def test_chain_problems_are_longer_than_story_problems():
    from sglang_dflash.train.data import chain_problems, story_problems

    def sentences(stories):
        return statistics.mean(story.count(". ") + story.count("? ") + 1 for story in stories)

    # More sentences for the quantities to pass through.
    assert sentences(chain_problems(400)) > sentences(story_problems(400)) + 0.5


# ------------------------------------------------------------------ CPU recipe: feature store, cheaper loss


def _store(target, tmp_path, prompts, name="store", **kw):
    from sglang_dflash.train.features import generate_feature_store

    out = str(tmp_path / name)
    args = dict(layer_ids=[1, 3], max_new_tokens=12, eos_token_id=None, batch_size=4)
    args.update(kw)
    generate_feature_store(target, prompts, out, **args)
    return out


def _prompts(count=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [
        torch.randint(1, 63, (int(torch.randint(3, 9, (1,), generator=g)),), generator=g).tolist()
        for _ in range(count)
    ]


def test_stored_features_are_the_targets_hidden_states_of_every_token(tmp_path):
    from sglang_dflash.train.features import FeatureStore

    target = make_tiny_target("llama", seed=0)
    store = FeatureStore.open(_store(target, tmp_path, _prompts()))
    assert len(store.records) == 10
    for record in store.records:
        with torch.no_grad():
            out = target.model(input_ids=torch.tensor([record["input_ids"]]), output_hidden_states=True)
        expected = DFlashDraftModel.select_target_features(out.hidden_states, (1, 3))[0, :-1]
        stored = store.features(record, 10**6)
        assert stored.shape == expected.shape  # one row per token but the last
        torch.testing.assert_close(stored, expected, atol=2e-3, rtol=2e-3)  # float16 storage


def test_feature_store_rerun_generates_only_missing_chunks(tmp_path):
    from sglang_dflash.train import features as features_module

    target = make_tiny_target("llama", seed=0)
    prompts = _prompts()
    out = _store(target, tmp_path, prompts)
    chunks = sorted(p for p in os.listdir(out) if p.endswith(".jsonl"))
    assert chunks == ["chunk-00000.jsonl", "chunk-00001.jsonl", "chunk-00002.jsonl"]
    chunk_1 = os.path.join(out, "chunk-00001.jsonl")
    with open(chunk_1) as f:
        before = f.read()
    os.remove(chunk_1)  # as if killed before committing chunk 1
    calls = []
    real = features_module.generate_batch_with_features
    features_module.generate_batch_with_features = lambda *a, **k: calls.append(1) or real(*a, **k)
    try:
        _store(target, tmp_path, prompts)
    finally:
        features_module.generate_batch_with_features = real
    with open(chunk_1) as f:
        assert len(calls) == 1 and f.read() == before
    with pytest.raises(ValueError, match="max_new_tokens"):
        _store(target, tmp_path, prompts, max_new_tokens=13)  # a resume with other settings is refused


def test_training_from_a_feature_store_never_runs_the_target(tmp_path):
    target = make_tiny_target("llama", seed=0)
    store = _store(target, tmp_path, _prompts(24), max_new_tokens=24)

    def no_forward(*args, **kwargs):
        raise AssertionError("the target ran during training from a feature store")

    target.model.forward = no_forward
    out = tmp_path / "drafter"
    summary = train(
        config(
            "",
            out,
            features=store,
            target_layer_ids=[1, 3],
            steps=30,
            heldout=4,
            eval_every=10,
            sample_positions=True,
        ),
        target=target,
    )
    log = training_rows(out / "train_log.jsonl")
    assert log[-1]["loss"] < log[0]["loss"] and "heldout_accept" in log[-1]
    assert summary["sequences"] == 20 and load_drafter(
        str(out), target_config=target.config
    ).config.target_layer_ids == (1, 3)


def test_sampled_positions_follow_the_loss_weights():
    from sglang_dflash.train.trainer import sample_block_positions

    weights = position_weights(8, gamma=2.0)
    labels = torch.zeros(64, 8 * 500, dtype=torch.long)
    kept, equal = sample_block_positions(labels, weights, torch.Generator().manual_seed(0))
    rate = (kept != IGNORE).float().view(64, 500, 8).mean((0, 1))
    assert rate[0] == 0 and torch.allclose(rate, weights / weights.max(), atol=0.01)
    assert equal.tolist() == [0.0] + [1.0] * 7


def test_heldout_records_never_train(tmp_path):
    from sglang_dflash.train.trainer import load_training_data

    target = make_tiny_target("llama", seed=0)
    store = _store(target, tmp_path, _prompts(24), max_new_tokens=24)
    batches, heldout = load_training_data(config("", tmp_path / "o", features=store, heldout=5, num_chunks=5))
    train_ids = {tuple(r["input_ids"]) for r in batches.records}
    held_ids = {tuple(r["input_ids"]) for r in heldout.records}
    assert len(held_ids) == 5 and not train_ids & held_ids and len(train_ids) == 15
    # On grown data, --heldout-among keeps the smaller run's hold-out.
    _, small_held = load_training_data(config("", tmp_path / "o", features=store, heldout=5, num_chunks=3))
    _, grown_held = load_training_data(
        config("", tmp_path / "o", features=store, heldout=5, num_chunks=5, heldout_among=12)
    )
    assert [r["input_ids"] for r in grown_held.records] == [r["input_ids"] for r in small_held.records]
    assert {tuple(r["input_ids"]) for r in grown_held.records} != held_ids  # the pool mattered
    with pytest.raises(
        ValueError, match=r"--heldout-among is 21; expected more than --heldout 5 and at most"
    ):
        load_training_data(
            config("", tmp_path / "o", features=store, heldout=5, num_chunks=5, heldout_among=21)
        )
    with pytest.raises(ValueError, match=r"chunks \[6\] are unfinished"):
        load_training_data(config("", tmp_path / "o", features=store, num_chunks=7))


def test_extra_feature_stores_append_their_records_and_must_hold_the_same_features(tmp_path):
    from sglang_dflash.train.trainer import load_training_data

    target = make_tiny_target("llama", seed=0)
    first = _store(target, tmp_path, _prompts(24), max_new_tokens=24)
    second = _store(target, tmp_path, _prompts(8, seed=1), name="second", max_new_tokens=24)
    alone, alone_held = load_training_data(
        config("", tmp_path / "o", features=first, heldout=5, num_chunks=3)
    )
    both, both_held = load_training_data(
        config(
            "",
            tmp_path / "o",
            features=first,
            extra_features=[second],
            heldout=5,
            num_chunks=3,
            heldout_among=12,
        )
    )
    # --num-chunks freezes the first store only; every finished chunk of the extra store joins, and
    # --heldout-among 12 keeps the first store's hold-out.
    assert len(alone.records) == 12 - 5 and len(both.records) == 12 - 5 + 8
    assert [r["input_ids"] for r in both_held.records] == [r["input_ids"] for r in alone_held.records]
    extra = [r for r in both.records if r["store"] == 1]
    assert sorted(r["input_ids"] for r in extra) == sorted(
        r["input_ids"] for r in load_training_data(config("", tmp_path / "p", features=second))[0].records
    )
    for record in extra:  # features come from the record's own store
        with torch.no_grad():
            out = target.model(input_ids=torch.tensor([record["input_ids"]]), output_hidden_states=True)
        expected = DFlashDraftModel.select_target_features(out.hidden_states, (1, 3))[0, :-1]
        torch.testing.assert_close(both.store.features(record, 10**6), expected, atol=2e-3, rtol=2e-3)
    # --fresh-stores 1 --fresh-share 0.5: half of every batch from the extra store.
    mixed, _ = load_training_data(
        config("", tmp_path / "o", features=first, extra_features=[second], fresh_stores=1, fresh_share=0.5)
    )
    assert all(sum(r["store"] == 1 for r in mixed._chosen(step)) == 4 for step in range(6))
    other_layers = _store(target, tmp_path, _prompts(4), name="other", layer_ids=[0, 3])
    with pytest.raises(ValueError, match=r"other: layer_ids is \[0, 3\]; expected \[1, 3\]"):
        load_training_data(config("", tmp_path / "o", features=first, extra_features=[other_layers]))
    with pytest.raises(ValueError, match=r"--features is None; expected a feature store with --extra-"):
        config("", tmp_path / "o", extra_features=[second])


def test_time_boxed_training_exports_and_a_rerun_finishes_the_schedule(corpus, tmp_path):
    target, path, _ = corpus
    out = tmp_path / "boxed"
    first = train(config(path, out, steps=20, save_every=5, max_minutes=0.0), target=target)
    assert first["steps_done"] == 1 and os.path.exists(out / "model.safetensors")
    second = train(config(path, out, steps=20, save_every=5), target=target)
    assert second["steps_done"] == 20
    assert torch.load(out / "checkpoints" / "last.pt", weights_only=False)["step"] == 20


def fake_step_clock(monkeypatch, seconds: Callable[[int], float]) -> list[float]:
    """The trainer's clock made fake, advanced by ``seconds(step)`` at each training step; returns
    the clock's one-element list, at 0.0 now, which a test may read or reset."""
    from sglang_dflash.train import trainer as trainer_module

    now = [0.0]
    real_step = trainer_module.train_step

    def timed_step(drafter, target, batches, config, step, weights):
        now[0] += seconds(step)
        return real_step(drafter, target, batches, config, step, weights)

    monkeypatch.setattr(trainer_module, "time", types.SimpleNamespace(time=lambda: now[0]))
    monkeypatch.setattr(trainer_module, "train_step", timed_step)
    return now


def test_schedule_minutes_fits_the_schedule_to_the_time_box_and_a_resume_keeps_it(
    corpus, tmp_path, monkeypatch
):
    """Every step takes 2 s on a fake clock: after 11 steps (22 s) a 1-minute budget leaves 19 more,
    so the cosine runs 30 steps and ends at its floor; rerunning the command resumes at 30 and stops."""
    target, path, _ = corpus
    now = fake_step_clock(monkeypatch, lambda step: 2.0)
    out = tmp_path / "fitted"
    boxed = config(path, out, steps=1000, warmup_steps=5, log_every=1, save_every=7, schedule_minutes=1.0)
    first = train(boxed, target=target)
    assert first["steps_done"] == first["config"]["steps"] == 30 and now[0] == 60.0
    rows = [json.loads(line) for line in open(out / "train_log.jsonl")]
    assert rows[-1]["step"] == 29 and rows[-1]["lr"] == pytest.approx(boxed.lr * boxed.min_lr_ratio)
    assert torch.load(out / "checkpoints" / "last.pt", weights_only=False)["step"] == 30
    again = train(boxed, target=target)
    assert again["steps_done"] == 30 and now[0] == 60.0  # no step ran
    with pytest.raises(ValueError, match=r"train: --schedule-minutes is 0; expected a positive number"):
        config(path, out, schedule_minutes=0)


def test_a_heldout_evaluation_inside_the_timed_window_is_counted_once():
    """Steps take 2 s and every fifth step also evaluates for 5 s (1 s a step at its rate): the
    window of ten steps holds two evaluations, which come out of it and back in at their rate."""
    pacer = SchedulePacer(budget_s=100.0, eval_every=5)
    now = 0.0
    fitted = None
    for step in range(11):
        now += 2.0
        if step % 5 == 0:
            pacer.evaluated(5.0)
            now += 5.0
        fitted = pacer.step_done(step, now, 0.0, 1000)
        assert (fitted is None) == (step < 10)
    assert pacer.step_s == pytest.approx(3.0)
    assert fitted == fitted_steps(1000, 11, now, 100.0, 3.0)


def test_the_cosine_schedule_bends_where_its_length_changes_without_a_jump():
    schedule = CosineSchedule(warmup=4, total=24, min_ratio=0.1)
    assert [schedule(s) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert schedule(14) == pytest.approx(0.55)  # half way through the decay: halfway to the floor
    assert schedule(24) == schedule(99) == pytest.approx(0.1)
    schedule.retotal(2, 44)  # during the warmup: only the end moves
    assert (schedule.bend, schedule(24)) == (0, pytest.approx(0.55))
    before = schedule(24)
    schedule.retotal(24, 34)  # shorter: the rest of the decay in 10 steps, from where it is
    assert schedule(24) == pytest.approx(before) and schedule(29) == pytest.approx(
        0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 0.75))
    )
    assert schedule(34) == pytest.approx(0.1)
    factors = [schedule(s) for s in range(24, 40)]
    assert all(later <= earlier for earlier, later in zip(factors, factors[1:]))


def test_schedule_minutes_refits_the_schedule_when_steps_speed_up_and_a_resume_keeps_its_curve(
    corpus, tmp_path, monkeypatch
):
    """Steps 0-20 take 3 s and later ones 1 s on a fake clock (other work beside the run ended): the
    first ten timed steps size a 2-minute schedule to 40 steps, the windows after the speed-up to 78,
    which end exactly at 120 s with the rate falling all the way to its floor (sized once, the run
    would have ended at 82 s; bent without care, the rate would have jumped up at step 31).  A run
    stopped by --max-minutes after the bend resumes on the same curve."""
    target, path, _ = corpus
    now = fake_step_clock(monkeypatch, lambda step: 3.0 if step <= 20 else 1.0)
    boxed = config(
        path,
        tmp_path / "whole",
        steps=1000,
        warmup_steps=5,
        log_every=1,
        save_every=1000,
        schedule_minutes=2.0,
    )
    whole = train(boxed, target=target)
    assert whole["steps_done"] == whole["config"]["steps"] == 78 and now[0] == 120.0
    lrs = {row["step"]: row["lr"] for row in training_rows(tmp_path / "whole" / "train_log.jsonl")}
    decay = [lrs[step] for step in range(4, 78)]
    assert all(later <= earlier for earlier, later in zip(decay, decay[1:]))
    assert lrs[77] == pytest.approx(boxed.lr * boxed.min_lr_ratio)

    now[0] = 0.0
    stopped = replace(boxed, output=str(tmp_path / "resumed"), max_minutes=1.2)
    first = train(stopped, target=target)  # 73 s > 72 after step 30, whose window sized 78 steps
    assert first["steps_done"] == 31
    again = train(replace(stopped, max_minutes=None), target=target)
    assert again["steps_done"] == again["config"]["steps"] == 78
    resumed = {row["step"]: row["lr"] for row in training_rows(tmp_path / "resumed" / "train_log.jsonl")}
    assert resumed == pytest.approx(lrs)


def test_fitted_steps_stay_between_one_more_step_and_the_cap():
    assert fitted_steps(1000, 11, 22.0, 60.0, 2.0) == 30
    assert fitted_steps(20, 11, 22.0, 60.0, 2.0) == 20  # --steps caps it
    assert fitted_steps(1000, 11, 70.0, 60.0, 2.0) == 12  # over budget already: one more step ends it


def test_tau_measurement_resumes_from_finished_batches(corpus, trained, tmp_path, monkeypatch):
    from sglang_dflash.train import acceptance

    target, _, records = corpus
    drafter = load_drafter(str(trained[0]), target_config=target.config)
    prompts = [r["input_ids"][: r["loss_start"]] for r in records[64:76]]
    partial = str(tmp_path / "tau.partial.jsonl")
    first = acceptance.measure_tau(
        target, drafter, prompts, SamplingParams(max_new_tokens=16), 4, partial, {"s": 1}
    )
    # No eos in the tiny target: 16 tokens per prompt, the first from the prefill, 15 from verify steps.
    assert first["prompts"] == 12 and first["complete"] and first["tokens"] == 12 * 15
    assert first["mean_tau"] == first["tokens"] / first["verify_steps"]
    histogram = first["steps_per_commit"]
    assert len(histogram) == drafter.block_size + 1 and histogram[0] == 0
    assert sum(histogram) == first["verify_steps"]
    assert sum(c * n for c, n in enumerate(histogram)) == first["tokens"]
    assert len(first["draft_acceptance"]) == drafter.block_size - 1
    monkeypatch.setattr(
        acceptance, "spec_generate", lambda *a, **k: pytest.fail("a finished batch was rerun")
    )
    again = acceptance.measure_tau(
        target, drafter, prompts, SamplingParams(max_new_tokens=16), 4, partial, {"s": 1}
    )
    assert {k: again[k] for k in ("mean_tau", "tokens", "verify_steps")} == {
        k: first[k] for k in ("mean_tau", "tokens", "verify_steps")
    }
    with pytest.raises(ValueError, match="settings"):
        acceptance.measure_tau(
            target, drafter, prompts, SamplingParams(max_new_tokens=16), 4, partial, {"s": 2}
        )


def test_draft_acceptance_is_each_positions_share_of_the_steps_that_reached_it():
    from sglang_dflash.train.acceptance import commit_histogram, draft_acceptance

    # Steps committing 1, 1, 2, 3, 3, 4 tokens (0, 0, 1, 2, 2, 3 accepted drafts) in a block of 4.
    histogram = commit_histogram([[1, 2, 3], [1, 3, 4]], 4)
    assert histogram == [0, 2, 1, 2, 1]
    # Draft 1: 4 of 6 steps; draft 2: 3 of those 4; draft 3: 1 of those 3.
    assert draft_acceptance(histogram) == [round(4 / 6, 4), 0.75, round(1 / 3, 4)]
    assert draft_acceptance([0, 3, 0, 0, 0]) == [0.0, None, None]


def test_acceptance_curve_chains_warm_started_runs(tmp_path):
    from sglang_dflash.train import curve

    def log(name, steps, accepts, seconds_per_step=None, threads=None):
        folder = tmp_path / name
        folder.mkdir()
        rows = [{"step": s, "heldout_accept": a, "blocks": (s + 1) * 256} for s, a in zip(steps, accepts)]
        if seconds_per_step is not None:
            for row in rows:
                row["seconds"] = (row["step"] + 1) * seconds_per_step
        if threads is not None:
            (folder / "train_summary.json").write_text(json.dumps({"config": {"threads": threads}}))
        path = folder / "train_log.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return str(path)

    first = log("first", [0, 49, 99], [0.1, 0.3, 0.5], seconds_per_step=36)
    second = log("second", [0, 59], [0.5, 0.7], seconds_per_step=18, threads=2)
    tau = tmp_path / "tau-set.json"
    tau.write_text(json.dumps({"mean_tau": 1.6, "prompts": 3}))
    chained = curve.chain_runs([(first, []), (second, [str(tau)])])
    assert [offset for offset, _, _ in chained] == [0, 100]
    assert chained[1][2] == [101, 160]
    assert [r["heldout_accept"] for r in chained[1][1]] == [0.5, 0.7]
    # CPU-hours: the first run 100 steps x 36 s on one thread = 1 h; the second 60 x 18 s x 2 threads.
    hours = curve.chain_runs([(first, []), (second, [str(tau)])], "cpu-hours")
    assert [offset for offset, _, _ in hours] == [0, 1.0]
    assert hours[1][2] == pytest.approx([1.01, 1.6])
    # A gzip-compressed log (the drafter folder keeps earlier runs' logs so) reads the same, threads too.
    compressed = second + ".gz"
    with open(second, "rb") as plain, gzip.open(compressed, "wb") as packed:
        packed.write(plain.read())
    assert curve.chain_runs([(first, []), (compressed, [str(tau)])], "cpu-hours") == hours
    # So does a gzip-compressed summary beside it: its threads still count (2, not the default 1).
    summary = tmp_path / "second" / "train_summary.json"
    (tmp_path / "second" / "train_summary.json.gz").write_bytes(gzip.compress(summary.read_bytes()))
    summary.unlink()
    assert curve.chain_runs([(first, []), (compressed, [str(tau)])], "cpu-hours") == hours
    # A gzip-compressed tau file (earlier runs' folders keep them so) is the same set's point.
    packed_tau = tmp_path / "tau-set.json.gz"
    packed_tau.write_bytes(gzip.compress(tau.read_bytes()))
    ends = [100.0, 160.0]
    assert curve._tau_points([(first, []), (second, [str(packed_tau)])], ends) == curve._tau_points(
        [(first, []), (second, [str(tau)])], ends
    )
    assert curve._tau_points([(first, [str(tau)]), (second, [str(packed_tau)])], ends) == {
        "set": [(100.0, {"mean_tau": 1.6, "prompts": 3}), (160.0, {"mean_tau": 1.6, "prompts": 3})]
    }
    out = tmp_path / "curve.png"
    assert curve.main(["--run", first, "--run", second, str(tau), "--out", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    hours_png = tmp_path / "hours.png"
    assert (
        curve.main(
            ["--run", first, str(tau), "--run", second, str(tau), "--cpu-hours", "--out", str(hours_png)]
        )
        == 0
    )
    assert hours_png.read_bytes()[:4] == b"\x89PNG"
    with pytest.raises(SystemExit):
        curve.main(["--log", first, "--run", second, "--out", str(out)])
    with pytest.raises(SystemExit):
        curve.main(["--log", first, "--cpu-hours", "--final-step", "9", "--out", str(out)])
    with pytest.raises(ValueError, match="axis is 'tokens'"):
        curve.chain_runs([(first, [])], "tokens")
    (tmp_path / "bare.jsonl").write_text(json.dumps({"step": 0, "loss": 1.0}) + "\n")
    with pytest.raises(ValueError, match="no row has heldout_accept"):
        curve.chain_runs([(str(tmp_path / "bare.jsonl"), [])])
    (tmp_path / "untimed.jsonl").write_text(json.dumps({"step": 0, "heldout_accept": 0.2}) + "\n")
    with pytest.raises(ValueError, match="no seconds"):
        curve.chain_runs([(str(tmp_path / "untimed.jsonl"), [])], "cpu-hours")


def test_gen_data_refuses_unknown_sources_and_sources_with_prompts(capsys, tmp_path):
    from sglang_dflash.cli import main as cli_main

    base = ["gen-data", "--target", "unused", "--out", str(tmp_path / "o")]
    assert cli_main([*base, "--sources", "docs"]) == 2
    assert "gen-data: prompt sources ['docs'] are invalid; expected some of" in capsys.readouterr().err
    assert cli_main([*base, "--sources", "word-problems", "--prompts", "p.jsonl"]) == 2
    err = capsys.readouterr().err
    assert "gen-data: --sources is ['word-problems'] with --prompts 'p.jsonl'; expected one of them" in err
    assert not os.path.exists(tmp_path / "o")


def test_cpu_bf16_precision_runs_the_steps_in_bf16_keeps_the_heldout_float32_and_learns(
    corpus, tmp_path, monkeypatch
):
    native, emulated = tmp_path / "cpuinfo-native", tmp_path / "cpuinfo-emulated"  # read once per path
    native.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 fma\n")
    assert trainer_module.cpu_has_native_bf16(str(native))
    emulated.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512bw fma\n")
    assert not trainer_module.cpu_has_native_bf16(str(emulated))
    assert not trainer_module.cpu_has_native_bf16(str(tmp_path / "missing"))
    for native, expected in ((True, "bf16"), (False, "fp32")):
        monkeypatch.setattr(trainer_module, "cpu_has_native_bf16", lambda native=native: native)
        assert trainer_module.resolve_precision("auto", "cpu") == expected
    assert trainer_module.resolve_precision("auto", "cuda:0") == "bf16"
    assert trainer_module.resolve_precision("fp32", "cuda") == "fp32"
    with pytest.raises(ValueError, match=r"--precision is 'fp16'; expected one of auto, bf16, fp32"):
        TrainConfig(target="t", data="d", output="o", precision="fp16")

    # Which dtype the drafter's first projection computes in, during steps and held-out evaluations.
    target, path, _ = corpus
    seen = {"train": set(), "eval": set()}
    real_step = trainer_module.train_step

    def step_noting_dtypes(drafter, target, batches, cfg, step, weights):
        phase = "train" if drafter.training else "eval"
        hook = drafter.layers[0].self_attn.q_proj.register_forward_hook(
            lambda module, args, out: seen[phase].add(out.dtype)
        )
        try:
            return real_step(drafter, target, batches, cfg, step, weights)
        finally:
            hook.remove()

    monkeypatch.setattr(trainer_module, "train_step", step_noting_dtypes)
    out = tmp_path / "bf16"
    summary = train(
        config(path, out, steps=60, precision="bf16", heldout=8, eval_every=30, log_every=10),
        target=target,
    )
    assert seen == {"train": {torch.bfloat16}, "eval": {torch.float32}}, seen
    assert summary["precision"] == "bf16"
    log = training_rows(out / "train_log.jsonl")
    assert log[-1]["loss"] < 0.7 * log[0]["loss"], (log[0]["loss"], log[-1]["loss"])
