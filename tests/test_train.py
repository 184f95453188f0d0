"""Training recipe on CPU: the objective's masks/labels, loss going down, acceptance going up,
export -> load -> identical outputs, exact resume, and prompts disjoint from the evaluation sets."""

import json
import os

import pytest
import torch

from sglang_dflash import SamplingParams, load_drafter, spec_generate
from sglang_dflash.testing import make_tiny_drafter, make_tiny_target, tiny_train_config
from sglang_dflash.train import trainer as trainer_module
from sglang_dflash.train.data import builtin_prompts, overlapping_prompts, read_prompts, read_records
from sglang_dflash.train.objective import IGNORE, build_blocks, context_visibility, position_weights, sample_anchors
from sglang_dflash.train.trainer import TrainConfig, init_from_target_layers, train

SHARED_DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")


def test_blocks_labels_and_visibility():
    ids = torch.arange(100, 112)[None]  # tokens 100..111 at positions 0..11
    loss_mask = torch.zeros(1, 12, dtype=torch.bool)
    loss_mask[0, 5:] = True  # response starts at position 5
    anchors = torch.tensor([[4, 9, -1]])
    blocks = build_blocks(ids, loss_mask, anchors, block_size=4, mask_token_id=7)
    assert blocks.tokens.view(3, 4)[:2].tolist() == [[104, 7, 7, 7], [109, 7, 7, 7]]
    assert blocks.positions.view(3, 4)[:2].tolist() == [[4, 5, 6, 7], [9, 10, 11, 12]]
    assert blocks.labels.view(3, 4).tolist() == [[IGNORE, 105, 106, 107], [IGNORE, 110, 111, IGNORE], [IGNORE] * 4]
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


def config(path, output, **kw):
    return tiny_train_config(path, output, **kw)


@pytest.fixture(scope="module")
def corpus(tiny_corpus):
    return tiny_corpus


@pytest.fixture(scope="module")
def trained(tiny_trained):
    return tiny_trained


def test_loss_goes_down_and_artifacts_are_written(trained):
    out, summary = trained
    log = [json.loads(line) for line in open(out / "train_log.jsonl")]
    assert log[-1]["loss"] < 0.5 * log[0]["loss"]
    assert summary["final"]["expected_accept"] > 1.0
    assert os.path.exists(out / "model.safetensors") and os.path.exists(out / "train_summary.json")


def test_trained_drafter_is_accepted_far_more_than_a_random_one(corpus, trained):
    target, _, records = corpus
    drafter = load_drafter(str(trained[0]), target_config=target.config)
    rand = make_tiny_drafter(target.config, seed=1, num_layers=2, target_layer_ids=list(drafter.config.target_layer_ids))
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
    assert a.token_ids == b.token_ids and a.accept_lengths == b.accept_lengths


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


def test_init_from_target_copies_matching_layers():
    target = make_tiny_target("qwen3", seed=2)
    drafter = make_tiny_drafter(target.config, num_layers=2)
    copied = init_from_target_layers(drafter, target)
    assert "layers.1.self_attn.q_proj.weight" in copied and "layers.0.mlp.down_proj.weight" in copied
    assert torch.equal(drafter.layers[1].self_attn.q_proj.weight, target.model.layers[5].self_attn.q_proj.weight)


def test_bad_train_config_and_records(tmp_path):
    with pytest.raises(ValueError, match="steps=0"):
        TrainConfig(target="t", data="d", output="o", steps=0)
    with pytest.raises(ValueError, match="block_size=1"):
        TrainConfig(target="t", data="d", output="o", block_size=1)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"input_ids": [1, 2], "loss_start": 2}) + "\n")
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        read_records(str(bad))


def test_builtin_prompts_are_deterministic_varied_and_disjoint_from_evaluation_sets():
    prompts = builtin_prompts()
    assert prompts == builtin_prompts() and len(prompts) > 1500 and len(set(prompts)) == len(prompts)
    kinds = {p.split()[0] for p in prompts}
    assert {"Complete", "Write", "Explain", "What"} <= kinds
    evaluation = read_prompts(os.path.join(SHARED_DATA, "humaneval.jsonl")) + read_prompts(os.path.join(SHARED_DATA, "gsm8k.jsonl"))
    assert len(evaluation) == 164 + 1319
    assert overlapping_prompts(prompts, evaluation) == []
    assert overlapping_prompts(evaluation[:3] + prompts[:3], evaluation) == evaluation[:3]  # the check has teeth
