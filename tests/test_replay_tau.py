"""Replayed tau: the reference decoder's verify steps recomputed teacher-forced from the target's greedy
response (``measure_tau(responses=...)``, ``sglang-dflash eval-tau --replay``), and the kept responses."""

import json

import pytest
from cpu_server import SHIPPED_SMOLLM2_DRAFTER

from sglang_dflash import SamplingParams, load_drafter, spec_generate
from sglang_dflash.testing import make_tiny_drafter
from sglang_dflash.train import acceptance
from sglang_dflash.train.acceptance import greedy_responses, measure_tau, replay_spec, replay_walk


@pytest.fixture(scope="module")
def setup(tiny_corpus, tiny_trained):
    target, _, records = tiny_corpus
    drafter = load_drafter(str(tiny_trained[0]), target_config=target.config)
    prompts = [r["input_ids"][: r["loss_start"]] for r in records[64:72]]  # not trained on
    return target, drafter, prompts


def stop_token_inside_some_responses(target, drafter, prompts) -> int:
    """A token the greedy responses emit mid-way, so that some requests stop early."""
    tokens = spec_generate(target, drafter, prompts, SamplingParams(max_new_tokens=24)).token_ids
    middles = [t for row in tokens for t in row[4:12]]
    return max(set(middles), key=middles.count)


def test_replay_walk_commits_each_run_plus_one_and_stops_at_the_response_end():
    assert replay_walk([0, 0, 0]) == [1, 1, 1]
    # anchor 0: 2 right -> 3 tokens; anchor 3: 0 right -> 1; anchor 4: 5 right, but 1 token is left
    assert replay_walk([2, 9, 9, 0, 5]) == [3, 1, 1]
    assert replay_walk([]) == []


@pytest.mark.parametrize("which", ["trained", "random"])
def test_replayed_verify_steps_equal_the_reference_decoders(setup, which):
    target, drafter, prompts = setup
    if which == "random":
        drafter = make_tiny_drafter(
            target.config, seed=3, num_layers=2, target_layer_ids=list(drafter.config.target_layer_ids)
        )
    params = SamplingParams(
        max_new_tokens=24, stop_token_ids=(stop_token_inside_some_responses(target, drafter, prompts),)
    )
    decoded = spec_generate(target, drafter, prompts, params)
    assert "stop" in decoded.finish_reasons and "length" in decoded.finish_reasons
    replayed = replay_spec(target, drafter, prompts, decoded.token_ids, params)
    assert replayed.accept_lens == decoded.accept_lens
    assert replayed.finish_reasons == decoded.finish_reasons
    if which == "trained":  # runs of several drafts, not only the bonus token
        assert max(max(steps, default=0) for steps in decoded.accept_lens) >= 3


@pytest.mark.parametrize("name", ["greedy.jsonl", "greedy.jsonl.gz"])
def test_kept_greedy_responses_are_the_targets_and_resume(setup, tmp_path, monkeypatch, name):
    target, drafter, prompts = setup
    params = SamplingParams(
        max_new_tokens=20, stop_token_ids=(stop_token_inside_some_responses(target, drafter, prompts),)
    )
    path = str(tmp_path / name)
    first = greedy_responses(target, prompts[:3], params, path)
    assert first == spec_generate(target, drafter, prompts[:3], params).token_ids  # lossless: the same
    made = []
    real = acceptance.generate_batch
    monkeypatch.setattr(acceptance, "generate_batch", lambda *a, **k: made.append(1) or real(*a, **k))
    assert greedy_responses(target, prompts[:3], params, path) == first and not made
    grown = greedy_responses(target, prompts[:5], params, path)  # only the two new prompts run
    assert grown[:3] == first and len(made) == 2
    assert grown == spec_generate(target, drafter, prompts[:5], params).token_ids
    with open(path, "rb") as f:
        assert (f.read(2) == b"\x1f\x8b") == name.endswith(".gz")  # gzip's magic number


def test_kept_gzip_responses_survive_a_torn_last_member(setup, tmp_path, monkeypatch):
    """A kill while appending to a ``.gz`` file tears its last member: the responses before it stand
    and only the torn one is made again."""
    target, _, prompts = setup
    params = SamplingParams(max_new_tokens=8)
    path = tmp_path / "greedy.jsonl.gz"
    first = greedy_responses(target, prompts[:3], params, str(path))
    path.write_bytes(path.read_bytes()[:-20])  # the last member loses its trailer and some data
    made = []
    real = acceptance.generate_batch
    monkeypatch.setattr(acceptance, "generate_batch", lambda *a, **k: made.append(1) or real(*a, **k))
    assert greedy_responses(target, prompts[:3], params, str(path)) == first and len(made) == 1
    assert greedy_responses(target, prompts[:3], params, str(path)) == first and len(made) == 1


def test_kept_responses_refuse_another_budget_or_another_prompt(setup, tmp_path):
    target, _, prompts = setup
    path = str(tmp_path / "greedy.jsonl")
    greedy_responses(target, prompts[:2], SamplingParams(max_new_tokens=8), path)
    with pytest.raises(ValueError, match="max_new_tokens"):
        greedy_responses(target, prompts[:2], SamplingParams(max_new_tokens=9), path)
    with pytest.raises(ValueError, match="prompt 1 has digest"):
        greedy_responses(target, [prompts[0], prompts[5]], SamplingParams(max_new_tokens=8), path)
    with pytest.raises(ValueError, match="at most one stop token"):
        greedy_responses(target, prompts[:2], SamplingParams(max_new_tokens=8, stop_token_ids=(1, 2)), path)
    with open(path, encoding="utf-8") as f:
        assert len(f.readlines()) == 3  # the settings and the two responses, nothing lost


def test_measure_tau_from_kept_responses_equals_decoding_and_never_decodes(setup, tmp_path, monkeypatch):
    target, drafter, prompts = setup
    params = SamplingParams(max_new_tokens=16)
    decoded = measure_tau(target, drafter, prompts, params, batch_size=4)
    responses = greedy_responses(target, prompts, params, str(tmp_path / "greedy.jsonl"))
    monkeypatch.setattr(acceptance, "spec_generate", lambda *a, **k: pytest.fail("decoded"))
    replayed = measure_tau(target, drafter, prompts, params, batch_size=4, responses=responses)
    for key in ("tokens", "verify_steps", "per_request_verify_steps", "per_request_tau"):
        assert replayed[key] == decoded[key], key
    with pytest.raises(ValueError, match="got 7 responses for 8 prompts"):
        measure_tau(target, drafter, prompts, params, responses=responses[:7])
    with pytest.raises(ValueError, match="temperature is 0.7"):
        replay_spec(target, drafter, prompts, responses, SamplingParams(max_new_tokens=16, temperature=0.7))


def test_partial_results_of_a_replay_are_json(setup, tmp_path):
    target, drafter, prompts = setup
    params = SamplingParams(max_new_tokens=12)
    responses = greedy_responses(target, prompts[:4], params, str(tmp_path / "greedy.jsonl"))
    partial = str(tmp_path / "tau.partial.jsonl")
    measure_tau(target, drafter, prompts[:4], params, 2, partial, {"method": "replay"}, responses=responses)
    with open(partial, encoding="utf-8") as f:
        assert [json.loads(line)["start"] for line in f] == [0, 2]


def test_teacher_forced_accept_is_the_training_objectives_acceptance_at_every_anchor(setup, tmp_path):
    """The replay's lazy lm_head gives the runs the training objective measures with full logits."""
    import torch

    from sglang_dflash.train.objective import build_blocks, dflash_loss, position_weights
    from sglang_dflash.train.trainer import target_features

    target, drafter, prompts = setup
    params = SamplingParams(max_new_tokens=20)
    responses = greedy_responses(target, prompts[:3], params, str(tmp_path / "greedy.jsonl"))
    replayed = measure_tau(target, drafter, prompts[:3], params, batch_size=3, responses=responses)
    hits, blocks = 0.0, 0
    for prompt, response in zip(prompts[:3], responses):
        ids = torch.tensor([prompt + response])
        loss_mask = torch.zeros_like(ids)
        loss_mask[0, len(prompt) :] = 1
        anchors = torch.arange(len(prompt), ids.shape[1] - 1)[None]
        batch = build_blocks(ids, loss_mask, anchors, drafter.block_size, drafter.mask_token_id)
        valid = torch.ones_like(ids, dtype=torch.bool)
        features = target_features(target, drafter.config.target_layer_ids, ids, valid)
        with torch.no_grad():
            out = dflash_loss(
                drafter,
                target.get_input_embeddings(),
                target.get_output_embeddings(),
                features,
                valid,
                batch,
                position_weights(drafter.block_size, None),
            )
        hits += float(out.expected_accept) * anchors.numel()
        blocks += anchors.numel()
    assert replayed["teacher_forced_accept"] == pytest.approx(hits / blocks, abs=1e-6)
    assert replayed["teacher_forced_accept"] > 0  # not a trivial 0 == 0: some drafts are right


SHIPPED = SHIPPED_SMOLLM2_DRAFTER


def write_prompt_file(path, count: int) -> str:
    with open(path, "w", encoding="utf-8") as f:
        for n in range(count):
            f.write(json.dumps({"prompt": f"Write a Python function that returns {n} plus one."}) + "\n")
    return str(path)


def test_eval_tau_measures_the_slice_from_first_prompt(smollm2_float32, tmp_path):
    """``--first-prompt 2 --num-prompts 2`` measures prompts 2 and 3 and keeps their responses,
    recorded in the settings, so a selection slice never mixes with the first prompts' files."""
    from sglang_dflash.cli import main
    from sglang_dflash.smollm2 import ensure_smollm2
    from sglang_dflash.train.data import chat_prompt_ids, read_prompts
    from sglang_dflash.train.tokens import json_sha256

    _, tokenizer = smollm2_float32
    prompts = write_prompt_file(tmp_path / "prompts.jsonl", 5)
    replay, out = str(tmp_path / "greedy.jsonl"), str(tmp_path / "tau.json")
    argv = ["eval-tau", "--target", ensure_smollm2(), "--drafter", SHIPPED, "--prompts", prompts]
    budget = ["--num-prompts", "2", "--max-new-tokens", "8", "--batch-size", "2"]
    assert main([*argv, *budget, "--first-prompt", "2", "--replay", replay, "--json-out", out]) == 0
    with open(out, encoding="utf-8") as f:
        result = json.load(f)
    assert (result["settings"]["first_prompt"], result["settings"]["num_prompts"]) == (2, 2)
    with open(replay, encoding="utf-8") as f:
        kept = [json.loads(line) for line in f][1:]
    texts = read_prompts(prompts)
    assert [entry["prompt_sha256"] for entry in kept] == [
        json_sha256(chat_prompt_ids(tokenizer, text)) for text in texts[2:4]
    ]
    with pytest.raises(ValueError, match="another prompt list"):  # prompts 0-1 are other prompts
        main([*argv, *budget, "--replay", replay])


def test_eval_tau_refuses_a_first_prompt_past_the_file_before_loading(tmp_path, capsys):
    from sglang_dflash.cli import main

    prompts = write_prompt_file(tmp_path / "prompts.jsonl", 3)
    argv = ["eval-tau", "--target", str(tmp_path / "absent"), "--drafter", str(tmp_path / "absent")]
    assert main([*argv, "--prompts", prompts, "--first-prompt", "3"]) == 2
    assert "--first-prompt is 3; expected 0 to 2" in capsys.readouterr().err


@pytest.mark.parametrize("count", ["0", "-5"])
def test_eval_tau_refuses_no_prompts_before_loading(tmp_path, capsys, count):
    from sglang_dflash.cli import main

    prompts = write_prompt_file(tmp_path / "prompts.jsonl", 3)
    argv = ["eval-tau", "--target", str(tmp_path / "absent"), "--drafter", str(tmp_path / "absent")]
    assert main([*argv, "--prompts", prompts, "--num-prompts", count]) == 2
    assert f"--num-prompts is {count}; expected a whole number >= 1" in capsys.readouterr().err


@pytest.mark.parametrize("extra", [[], ["--tree", "tree.json"]], ids=["without-tree", "too-long"])
def test_eval_tau_refuses_a_lookup_branch_without_a_tree_before_loading(tmp_path, capsys, extra):
    from sglang_dflash.cli import main

    prompts = write_prompt_file(tmp_path / "prompts.jsonl", 3)
    argv = ["eval-tau", "--target", str(tmp_path / "absent"), "--drafter", str(tmp_path / "absent")]
    lookup = "4" if not extra else "16"
    assert main([*argv, "--prompts", prompts, "--prompt-lookup", lookup, *extra]) == 2
    assert f"--prompt-lookup is {lookup} (--tree" in capsys.readouterr().err
