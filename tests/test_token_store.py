"""Token stores: compact self-distilled tokens that round-trip, resume and grow to the same bytes as one
uninterrupted run, rebuild the features generation captures, and (the committed one) hold no
evaluation prompt."""

import copy
import gzip
import json
import os
from dataclasses import replace

import numpy as np
import pytest
import torch
from cpu_server import SHIPPED_SMOLLM2_DRAFTER

from sglang_dflash.testing import make_tiny_target
from sglang_dflash.train import tokens as tokens_module
from sglang_dflash.train.data import overlapping_prompts, read_prompts
from sglang_dflash.train.features import FeatureStore, generate_feature_store
from sglang_dflash.train.tokens import (
    TokenStore,
    build_features_from_tokens,
    chunk_plan,
    generate_token_store,
    read_pool,
    stored_prompt_texts,
    weights_sha256,
    write_pool,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.path.join(ROOT, "..", "shared", "data")
TOKEN_DATA = os.path.join(SHIPPED_SMOLLM2_DRAFTER, "token-data")
# The default mix's store must be there; any other committed store is checked too.
COMMITTED = sorted(
    {"default"} | {n for n in os.listdir(TOKEN_DATA) if os.path.isdir(os.path.join(TOKEN_DATA, n))}
    if os.path.isdir(TOKEN_DATA)
    else {"default"}
)
LAYERS = [1, 3]


def _pool(count=40, seed=0):
    """Random token prompts (3-8 tokens) of the tiny vocabulary, and a text naming each."""
    g = torch.Generator().manual_seed(seed)
    ids = [
        torch.randint(1, 63, (int(torch.randint(3, 9, (1,), generator=g)),), generator=g).tolist()
        for _ in range(count)
    ]
    return [" ".join(map(str, p)) for p in ids], ids


def _generate(target, store, pool, **kw):
    texts, ids = pool
    args = dict(max_new_tokens=10, eos_token_id=None, chunk_size=4, log=lambda line: None)
    args.update(kw)
    return generate_token_store(target, texts, ids, str(store), {"sources": ["test"], "seed": 0}, **args)


def _files(store):
    """Every file of the store but the header (its timestamps differ), as bytes."""
    return {name: (store / name).read_bytes() for name in sorted(os.listdir(store)) if name != "header.json"}


@pytest.fixture(scope="module")
def target():
    return make_tiny_target("llama", seed=0)


def test_store_round_trips_records_compactly(target, tmp_path):
    pool = _pool()
    summary = _generate(target, tmp_path / "s", pool)
    store = TokenStore.open(str(tmp_path / "s"))
    assert summary["records"] == len(store.records) == 40 and summary["chunks"] == 10
    for record in store.records:  # each record is its prompt (by index into the pool) + the target's answer
        prompt = pool[1][record["prompt_index"]]
        assert record["input_ids"][: record["loss_start"]] == prompt
        assert len(record["input_ids"]) == len(prompt) + 10
    assert sorted(r["prompt_index"] for r in store.records) == list(range(40))
    arrays = tokens_module.read_chunk_arrays(str(tmp_path / "s" / "chunk-00000.safetensors.gz"))
    assert arrays["tokens"].dtype == np.uint16 and arrays["offsets"].dtype == np.int32
    header = json.loads((tmp_path / "s" / "header.json").read_text())
    assert header["settings"]["target"]["weights_sha256"] == weights_sha256(target)
    assert header["settings"]["prompt_mix"]["prompts"] == 40 and header["summary"]["records"] == 40
    assert (tmp_path / "s" / ".gitignore").read_text() == "*.tmp\n"


def test_greedy_records_are_the_targets_own_continuations(target, tmp_path):
    pool = _pool(8)
    _generate(target, tmp_path / "s", pool)
    for record in TokenStore.open(str(tmp_path / "s")).records:
        prompt = record["input_ids"][: record["loss_start"]]
        plain = target.generate(torch.tensor([prompt]), max_new_tokens=10, do_sample=False, pad_token_id=0)
        assert record["input_ids"] == plain[0].tolist()


def test_chunks_are_windows_of_the_pool_sorted_by_length():
    ids = [[1] * n for n in (5, 3, 9, 1, 7, 2, 8, 4, 6)]
    plan = chunk_plan(ids, chunk_size=2, window_chunks=2)  # windows of 4 prompts: 0-3, 4-7, 8
    assert plan == [[3, 1], [0, 2], [5, 7], [4, 6], [8]]


def test_a_stopped_run_resumed_and_a_grown_store_equal_one_uninterrupted_run(target, tmp_path, monkeypatch):
    pool = _pool()
    _generate(target, tmp_path / "straight", pool)

    # Grown in two sessions: the first covers 10 prompts (3 chunks of 4), the second the rest.
    _generate(target, tmp_path / "grown", pool, num_prompts=10)
    assert TokenStore.open(str(tmp_path / "grown")).chunks() == [0, 1, 2]
    _generate(target, tmp_path / "grown", pool)

    # Killed while writing chunk 4: chunks 0-3 stay, chunk 4 is a temporary file of a dead process.
    real_write = tokens_module.write_token_chunk

    def killed_at_chunk_4(path, records, dtype):
        if path.endswith("chunk-00004.safetensors.gz"):
            with open(path + ".999999999.tmp", "wb") as f:
                f.write(b"half a chunk")
            raise KeyboardInterrupt
        real_write(path, records, dtype)

    monkeypatch.setattr(tokens_module, "write_token_chunk", killed_at_chunk_4)
    with pytest.raises(KeyboardInterrupt):
        _generate(target, tmp_path / "resumed", pool)
    assert TokenStore.open(str(tmp_path / "resumed")).chunks() == [0, 1, 2, 3]  # a valid store meanwhile
    monkeypatch.setattr(tokens_module, "write_token_chunk", real_write)
    calls = []
    real_generate = tokens_module.generate_batch
    monkeypatch.setattr(
        tokens_module, "generate_batch", lambda *a, **k: calls.append(1) or real_generate(*a, **k)
    )
    _generate(target, tmp_path / "resumed", pool)
    assert len(calls) == 6  # chunks 4-9 only

    straight = _files(tmp_path / "straight")
    assert _files(tmp_path / "grown") == straight and _files(tmp_path / "resumed") == straight
    headers = [
        json.loads((tmp_path / n / "header.json").read_text()) for n in ("straight", "grown", "resumed")
    ]
    assert all(h["settings"] == headers[0]["settings"] and h["summary"]["records"] == 40 for h in headers)


def test_an_older_stores_plain_chunks_read_the_same_and_compress_to_a_new_stores_bytes(target, tmp_path):
    pool = _pool(12)
    _generate(target, tmp_path / "new", pool)
    new = tmp_path / "new"
    # An older store: the same records as plain safetensors chunks (gzip's bytes taken off).
    old = tmp_path / "old"
    old.mkdir()
    for name, data in _files(new).items():
        plain = name.removesuffix(".gz") if name.startswith("chunk-") else name
        (old / plain).write_bytes(gzip.decompress(data) if plain != name else data)
    (old / "header.json").write_bytes((new / "header.json").read_bytes())
    assert sorted(p.name for p in old.glob("chunk-*")) == [f"chunk-0000{c}.safetensors" for c in range(3)]
    assert TokenStore.open(str(old)).records == TokenStore.open(str(new)).records

    # Stopped halfway through a conversion: chunk 0 already compressed beside its plain file.
    (old / "chunk-00000.safetensors.gz").write_bytes((new / "chunk-00000.safetensors.gz").read_bytes())
    assert TokenStore.open(str(old)).chunks() == [0, 1, 2]
    assert tokens_module.compress_store(str(old)) == 3
    assert _files(old) == _files(new)
    assert tokens_module.compress_store(str(old)) == 0
    # A damaged chunk is refused by name.
    (old / "chunk-00001.safetensors.gz").write_bytes(b"not gzip")
    with pytest.raises(ValueError, match=r"chunk-00001\.safetensors\.gz does not read as a token-store"):
        TokenStore.open(str(old))
    compressed = sum(len(d) for n, d in _files(new).items() if n.startswith("chunk-"))
    plain = sum(len(gzip.decompress(d)) for n, d in _files(new).items() if n.startswith("chunk-"))
    assert compressed < plain


def test_shards_fill_one_store_as_a_single_process_does(target, tmp_path):
    pool = _pool(24)
    _generate(target, tmp_path / "one", pool)
    for shard in ((0, 2), (1, 2)):
        _generate(target, tmp_path / "two", pool, shard=shard)
    assert _files(tmp_path / "two") == _files(tmp_path / "one")


def test_adding_to_a_store_with_other_settings_or_another_target_is_refused(target, tmp_path):
    pool = _pool(8)
    _generate(target, tmp_path / "s", pool)
    with pytest.raises(ValueError, match=r"settings \{'generation'.*differ; expected the same target"):
        _generate(target, tmp_path / "s", pool, max_new_tokens=11)
    with pytest.raises(ValueError, match=r"settings \{'target'"):
        _generate(make_tiny_target("llama", seed=1), tmp_path / "s", pool)
    with pytest.raises(ValueError, match=r"settings \{'prompt_mix'"):
        _generate(target, tmp_path / "s", _pool(8, seed=1))
    with pytest.raises(ValueError, match=r"--num-prompts is 9; expected 1..8"):
        _generate(target, tmp_path / "s", pool, num_prompts=9)


def test_a_bf16_target_generates_its_own_greedy_tokens_into_a_store_that_records_the_dtype(target, tmp_path):
    """gen-data --dtype bfloat16: the responses are the bf16 weights' greedy ones, the header says so
    (a float32 run may not add to it), and the target's digest is the float32 one where the weights
    are bf16 values (as a bf16 checkpoint's are)."""
    bf16 = copy.deepcopy(target).to(torch.bfloat16)
    widened = copy.deepcopy(bf16).to(torch.float32)  # float32 weights of exactly the bf16 values
    pool = _pool(16)
    _generate(bf16, tmp_path / "s", pool, max_new_tokens=30)
    for record in TokenStore.open(str(tmp_path / "s")).records:
        prompt = record["input_ids"][: record["loss_start"]]
        plain = bf16.generate(torch.tensor([prompt]), max_new_tokens=30, do_sample=False, pad_token_id=0)
        assert record["input_ids"] == plain[0].tolist()
    settings = json.loads((tmp_path / "s" / "header.json").read_text())["settings"]
    assert settings["generation"]["dtype"] == "bfloat16"
    assert settings["target"]["weights_sha256"] == weights_sha256(widened)
    with pytest.raises(ValueError, match=r"settings \{'generation'.*'dtype': 'bfloat16'.*differ"):
        _generate(widened, tmp_path / "s", pool, max_new_tokens=30)
    # float32: no dtype named, as in every older store
    _generate(widened, tmp_path / "f32", pool, max_new_tokens=30)
    assert "dtype" not in json.loads((tmp_path / "f32" / "header.json").read_text())["settings"]["generation"]
    # The two dtypes' greedy responses differ somewhere (so the checks above tell one from the other).
    responses = {
        name: [r["input_ids"] for r in TokenStore.open(str(tmp_path / name)).records] for name in ("s", "f32")
    }
    assert responses["s"] != responses["f32"]


def test_rebuilt_features_equal_those_captured_during_generation(target, tmp_path):
    texts, ids = _pool(12)
    captured = str(tmp_path / "captured")
    generate_feature_store(target, ids, captured, LAYERS, max_new_tokens=10, eos_token_id=None, batch_size=4)
    _generate(target, tmp_path / "tokens", (texts, ids))
    rebuilt = str(tmp_path / "rebuilt")
    done = build_features_from_tokens(
        target, str(tmp_path / "tokens"), rebuilt, LAYERS, batch_size=5, log=print
    )
    assert done["records"] == 12 and done["tokens"] == sum(len(p) + 10 for p in ids)
    old, new = FeatureStore.open(captured), FeatureStore.open(rebuilt)
    old_by_ids = {tuple(r["input_ids"]): r for r in old.records}
    assert sorted(old_by_ids) == sorted(tuple(r["input_ids"]) for r in new.records)  # the same samples
    for record in new.records:
        expected = old.features(old_by_ids[tuple(record["input_ids"])], 10**6)
        got = new.features(record, 10**6)
        assert got.shape == expected.shape == (len(record["input_ids"]) - 1, 2 * 32)
        torch.testing.assert_close(got, expected, atol=2e-3, rtol=2e-3)  # float16 storage
    # A rerun builds nothing; features of another target are refused.
    assert (
        build_features_from_tokens(target, str(tmp_path / "tokens"), rebuilt, LAYERS, log=print)["records"]
        == 0
    )
    with pytest.raises(ValueError, match="--target's weights_sha256 is .*; expected .* as in"):
        build_features_from_tokens(
            make_tiny_target("llama", seed=1), str(tmp_path / "tokens"), rebuilt, LAYERS
        )


def _token_and_feature_stores(target, tmp_path):
    """Two token stores (12 and 8 records, chunks of 4) and the feature stores rebuilt from them."""
    paths = {}
    for name, count, seed in (("a", 12, 0), ("b", 8, 1)):
        texts, ids = _pool(count, seed=seed)
        _generate(target, tmp_path / f"tokens-{name}", (texts, ids))
        paths[name] = str(tmp_path / f"tokens-{name}"), str(tmp_path / f"features-{name}")
        build_features_from_tokens(target, paths[name][0], paths[name][1], LAYERS, batch_size=3, log=print)
    return paths


def _config_on_both_token_stores(paths: dict, tmp_path, **overrides):
    """A tiny training config on the two token stores themselves (features computed when drawn)."""
    from sglang_dflash.testing import tiny_train_config

    fields = dict(
        features=paths["a"][0],
        extra_features=[paths["b"][0]],
        features_from_tokens=True,
        target_layer_ids=LAYERS,
        order_seed=5,
        batch_size=4,
        heldout=3,
    )
    return tiny_train_config("", tmp_path / "o", **{**fields, **overrides})


def test_training_on_token_stores_sees_the_rebuilt_feature_stores_batches_and_features(target, tmp_path):
    from sglang_dflash.testing import tiny_train_config
    from sglang_dflash.train.trainer import load_training_data, train

    paths = _token_and_feature_stores(target, tmp_path)
    common = dict(target_layer_ids=LAYERS, heldout=3, num_chunks=2, order_seed=5, batch_size=4)
    stored = tiny_train_config(
        "", tmp_path / "o", features=paths["a"][1], extra_features=[paths["b"][1]], **common
    )
    from_tokens = replace(
        stored, features=paths["a"][0], extra_features=[paths["b"][0]], features_from_tokens=True
    )
    (batches, held), (token_batches, token_held) = (
        load_training_data(stored),
        load_training_data(from_tokens, target),
    )
    # The same records in the same order (store 0's first two chunks, then store 1), so the same batches.
    assert [(r["store"], r["chunk"], r["input_ids"]) for r in token_batches.records] == [
        (r["store"], r["chunk"], r["input_ids"]) for r in batches.records
    ]
    assert len(batches.records) == 8 - 3 + 8
    assert [r["input_ids"] for r in token_held.records] == [r["input_ids"] for r in held.records]
    for step in range(4):
        assert token_batches._chosen(step) == [
            {k: v for k, v in r.items() if k != "offset"} for r in batches._chosen(step)
        ]
        # Computed in float32 under the steps' bf16 autocast too, then rounded to the stores' float16.
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got = token_batches.features(step)
        torch.testing.assert_close(got, batches.features(step), atol=2e-3, rtol=2e-3)
    # The held-out records' features are computed once, however often the curve is evaluated.
    forwards = []
    counter = target.model.register_forward_pre_hook(lambda module, args: forwards.append(1))
    first = token_held.features(0)
    assert len(forwards) == len(held._chosen(0))
    assert torch.equal(token_held.features(0), first) and len(forwards) == len(held._chosen(0))
    torch.testing.assert_close(first, held.features(0), atol=2e-3, rtol=2e-3)
    counter.remove()
    # Training itself: the same losses either way, to the features' float16 rounding.
    logs = {}
    for name, cfg in (("stored", stored), ("tokens", from_tokens)):
        out = tmp_path / f"drafter-{name}"
        train(replace(cfg, output=str(out), steps=12, log_every=1, eval_every=4), target=target)
        logs[name] = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    # Scored before the first update (step -1) too: the same weights and held-out features either way.
    assert logs["tokens"][0]["step"] == logs["stored"][0]["step"] == -1
    assert logs["tokens"][0]["heldout_loss"] == pytest.approx(logs["stored"][0]["heldout_loss"], rel=1e-3)
    logs = {name: rows[1:] for name, rows in logs.items()}
    assert [row["loss"] for row in logs["tokens"]] == pytest.approx(
        [row["loss"] for row in logs["stored"]], rel=1e-3
    )
    assert logs["tokens"][-1]["heldout_loss"] == pytest.approx(logs["stored"][-1]["heldout_loss"], rel=1e-3)


def test_a_gpu_computes_a_batchs_token_features_in_one_padded_pass_equal_to_one_pass_each(target, tmp_path):
    """On a GPU one target pass per record is launch-bound, so a batch's records share one
    right-padded pass there (``one_pass_per_batch``, chosen by the target's device); causal attention
    keeps the padding out of every real token's features, so they equal one pass each."""
    from sglang_dflash.train.trainer import load_training_data

    cfg = _config_on_both_token_stores(_token_and_feature_stores(target, tmp_path), tmp_path)
    (apart, held), (together, _) = load_training_data(cfg, target), load_training_data(cfg, target)
    assert not apart.store.one_pass_per_batch  # a CPU target: one pass each, as before
    together.store.one_pass_per_batch = True
    forwards = []
    counter = target.model.register_forward_pre_hook(lambda module, args: forwards.append(1))
    for step in range(3):
        chosen = together._chosen(step)
        assert len({len(r["input_ids"]) for r in chosen}) > 1  # padding is exercised
        forwards.clear()
        got = together.features(step)
        assert len(forwards) == 1
        forwards.clear()
        want = apart.features(step)
        assert len(forwards) == len(chosen)
        torch.testing.assert_close(got, want, atol=2e-3, rtol=2e-3)  # to the stores' float16 rounding
    # A batch with kept (held-out) records computes only the others, still in one pass.
    together.store.keep(held.records)
    first = together.store.features_many(held.records, 10**6)
    forwards.clear()
    again = together.store.features_many([*held.records, *together._chosen(0)], 10**6)
    counter.remove()
    assert len(forwards) == 1 and all(torch.equal(a, b) for a, b in zip(again, first))


def test_token_store_features_from_a_bf16_target_pass_are_near_the_float32_ones_and_not_them(
    target, tmp_path, capsys
):
    """``--feature-precision bf16`` runs the target's feature pass under bf16 autocast (most of a
    float32 CPU step is that pass): the features move by bf16's rounding, no further."""
    from sglang_dflash.cli import main as cli_main
    from sglang_dflash.testing import tiny_train_config
    from sglang_dflash.train.trainer import load_training_data

    paths = _token_and_feature_stores(target, tmp_path)
    exact_cfg = tiny_train_config(
        "", tmp_path / "o", features=paths["a"][0], features_from_tokens=True, target_layer_ids=LAYERS
    )
    exact, _ = load_training_data(replace(exact_cfg, order_seed=5, batch_size=4), target)
    fast, _ = load_training_data(
        replace(exact_cfg, order_seed=5, batch_size=4, feature_precision="bf16"), target
    )
    for step in range(3):
        want, got = exact.features(step), fast.features(step)
        assert not torch.equal(got, want)  # the pass did run in bf16
        scale = want.abs().mean()
        assert (got - want).abs().mean() < 0.02 * scale and (got - want).abs().max() < 0.2 * scale
    with pytest.raises(
        ValueError, match=r"train: --feature-precision is 'fp16'; expected one of auto, bf16, fp32"
    ):
        replace(exact_cfg, feature_precision="fp16")
    args = [
        "train",
        "--target",
        "t",
        "--data",
        "x.jsonl",
        "--out",
        str(tmp_path / "o"),
        "--feature-precision",
        "fp16",
    ]
    assert cli_main(args) == 2
    assert "train: --feature-precision is 'fp16'; expected one of auto, bf16, fp32" in capsys.readouterr().err


def test_training_on_token_stores_is_refused_without_its_layers_target_or_stores(target, tmp_path, capsys):
    from sglang_dflash.cli import main as cli_main
    from sglang_dflash.testing import tiny_train_config
    from sglang_dflash.train.trainer import load_training_data

    paths = _token_and_feature_stores(target, tmp_path)
    with pytest.raises(ValueError, match=r"--target-layer-ids is None; expected the context layers"):
        tiny_train_config("", tmp_path / "o", features=paths["a"][0], features_from_tokens=True)
    with pytest.raises(
        ValueError, match=r"--features is None; expected token stores with --features-from-tokens"
    ):
        tiny_train_config("x.jsonl", tmp_path / "o", features_from_tokens=True, target_layer_ids=LAYERS)
    cfg = tiny_train_config(
        "", tmp_path / "o", features=paths["a"][0], features_from_tokens=True, target_layer_ids=LAYERS
    )
    with pytest.raises(ValueError, match=r"--features-from-tokens is True; expected a target"):
        load_training_data(cfg)
    with pytest.raises(ValueError, match=r"train: --target's weights_sha256 is .*; expected .* as in"):
        load_training_data(cfg, make_tiny_target("llama", seed=1))
    with pytest.raises(ValueError, match=r"layer ids \[9\] are invalid"):
        load_training_data(replace(cfg, target_layer_ids=[1, 9]), target)
    with pytest.raises(FileNotFoundError, match="header.json is missing; expected a token store"):
        load_training_data(replace(cfg, features=paths["a"][1]), target)
    empty = tmp_path / "empty"  # a header and no chunk: its one chunk is the other shard's
    _generate(target, empty, _pool(4), shard=(1, 2))
    assert TokenStore.open(str(empty)).records == []
    for refused in (
        lambda: load_training_data(replace(cfg, features=str(empty)), target),
        lambda: build_features_from_tokens(target, str(empty), str(tmp_path / "f"), LAYERS),
    ):
        with pytest.raises(ValueError, match=r"empty holds no chunk; expected at least one chunk-NNNNN"):
            refused()
    args = ["train", "--target", "t", "--out", str(tmp_path / "o"), "--features", paths["a"][0]]
    assert cli_main([*args, "--features-from-tokens"]) == 2
    assert "train: --target-layer-ids is None; expected the context layers" in capsys.readouterr().err


def test_a_final_hidden_pass_ends_each_feature_row_with_the_targets_next_token_state(target):
    """``final_hidden`` appends what the target's lm_head reads for its next-token logits, after the
    very context features the pass gives without it."""
    from sglang_dflash.train.tokens import teacher_forced_features

    sequences = [_pool(2, seed=3)[1][0] + [5, 7, 9], _pool(2, seed=4)[1][1]]
    plain = teacher_forced_features(target, sequences, LAYERS)
    with_final = teacher_forced_features(target, sequences, LAYERS, final_hidden=True)
    hidden = target.config.hidden_size
    for seq, feats, both in zip(sequences, plain, with_final):
        assert both.shape == (len(seq) - 1, len(LAYERS) * hidden + hidden)
        assert torch.equal(both[:, :-hidden], feats)
        with torch.no_grad():
            logits = target(input_ids=torch.tensor([seq])).logits[0, :-1]
            torch.testing.assert_close(target.lm_head(both[:, -hidden:]), logits, atol=1e-5, rtol=1e-5)


def test_distillation_adds_the_kl_to_the_targets_distribution_and_vanishes_where_they_agree():
    from sglang_dflash.train.objective import distillation_kl

    torch.manual_seed(0)
    lm_head = torch.nn.Linear(8, 11, bias=False)
    final = torch.randn(2, 6, 8)
    positions = torch.tensor([[2, 3, 4], [1, 2, 3]])
    supervised = torch.tensor([[True, True, False], [False, True, True]])
    # Queries drafting exactly the target's logits one position back: no divergence.
    rows = torch.tensor([0, 0, 1, 1])
    same = lm_head(final[rows, positions[supervised] - 1]).detach()
    assert distillation_kl(same, lm_head, final, positions, supervised).abs().max() < 1e-5
    other = torch.randn(4, 11, requires_grad=True)
    kl = distillation_kl(other, lm_head, final, positions, supervised)
    p = torch.softmax(same, -1)
    want = (p * (p.log() - torch.log_softmax(other, -1))).sum(-1)
    torch.testing.assert_close(kl, want)
    kl.sum().backward()  # the drafter's side learns; the target's side is a constant
    assert other.grad.abs().sum() > 0 and lm_head.weight.grad is None
    with pytest.raises(ValueError, match="target_final is None with a distill weight; expected"):
        distillation_kl(other, lm_head, None, positions, supervised)


def test_a_distilling_run_trains_on_the_mix_and_keeps_a_cross_entropy_heldout_curve(target, tmp_path, capsys):
    """``--distill-weight``: each step's loss mixes the cross-entropy (logged as ``ce``) with the KL
    to the target; the held-out loss stays the cross-entropy, so its curve compares with any run's."""
    from sglang_dflash.cli import main as cli_main
    from sglang_dflash.testing import tiny_train_config
    from sglang_dflash.train.trainer import train

    cfg = _config_on_both_token_stores(
        _token_and_feature_stores(target, tmp_path), tmp_path, steps=12, log_every=1, eval_every=11
    )
    logs = {}
    for name, weight in (("ce", 0.0), ("distilled", 0.5)):
        out = tmp_path / name
        train(replace(cfg, output=str(out), distill_weight=weight), target=target)
        logs[name] = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    plain, distilled = logs["ce"], logs["distilled"]
    assert distilled[0]["heldout_loss"] == pytest.approx(plain[0]["heldout_loss"], rel=1e-6)
    assert "ce" not in plain[1] and distilled[1]["ce"] == pytest.approx(plain[1]["loss"], rel=1e-5)
    assert all(row["loss"] != row["ce"] for row in distilled[1:])  # the KL is in the loss
    assert distilled[-1]["heldout_loss"] < distilled[0]["heldout_loss"]
    assert distilled[-1]["heldout_loss"] != pytest.approx(plain[-1]["heldout_loss"], rel=1e-6)
    with pytest.raises(ValueError, match=r"train: --distill-weight is 1.5; expected a weight in \[0, 1\]"):
        replace(cfg, distill_weight=1.5)
    with pytest.raises(
        ValueError, match=r"--features-from-tokens is False; expected set with --distill-weight 0.5"
    ):
        tiny_train_config("x.jsonl", tmp_path / "o", distill_weight=0.5)
    assert (
        cli_main(["train", "--target", "t", "--data", "x.jsonl", "--out", "o", "--distill-weight", "-1"]) == 2
    )
    assert "train: --distill-weight is -1.0; expected a weight in [0, 1]" in capsys.readouterr().err


def test_stored_prompt_texts_check_the_pool_and_every_records_ids(target, tmp_path):
    texts, ids = _pool(8)
    _generate(target, tmp_path / "s", (texts, ids))
    store = TokenStore.open(str(tmp_path / "s"))
    encode = {t: i for t, i in zip(texts, ids)}.__getitem__
    assert sorted(stored_prompt_texts(store, texts, encode)) == sorted(texts)
    with pytest.raises(ValueError, match="the prompt pool given .* differs from the store's"):
        stored_prompt_texts(store, texts[::-1], encode)
    with pytest.raises(ValueError, match="ids differ from the encoded pool prompt"):
        stored_prompt_texts(store, texts, lambda t: encode(t)[1:])


def test_a_store_keeps_its_pool_and_grows_from_it_where_the_recomputed_pool_differs(target, tmp_path):
    """Another machine's built-in pool can differ (the stdlib is the installed Python's): the store's
    own pool, kept beside its chunks, is what grows it there."""
    from sglang_dflash.cli import _store_pool

    texts, ids = _pool(16)
    first = _generate(target, tmp_path / "s", (texts, ids), num_prompts=8)
    assert first["records"] == 8 and read_pool(str(tmp_path / "s")) == texts
    elsewhere = [t + " (this machine)" if i == 12 else t for i, t in enumerate(texts)]
    with pytest.raises(ValueError, match=r"settings \{'prompt_mix'"):
        _generate(target, tmp_path / "s", (elsewhere, ids))
    assert _store_pool(str(tmp_path / "s")) == texts and _store_pool(str(tmp_path / "new")) is None
    grown = _generate(target, tmp_path / "s", (_store_pool(str(tmp_path / "s")), ids))
    assert grown["records"] == 16
    assert sorted(
        stored_prompt_texts(TokenStore.open(str(tmp_path / "s")), None, dict(zip(texts, ids)).get)
    ) == sorted(texts)


def test_a_pool_file_that_is_not_the_headers_is_refused(target, tmp_path):
    texts, ids = _pool(8)
    _generate(target, tmp_path / "s", (texts, ids))
    write_pool(str(tmp_path / "s"), texts[::-1])
    with pytest.raises(
        ValueError, match=r"prompts.json.gz: texts_sha256 is .*; expected .* \(the header's\)"
    ):
        read_pool(str(tmp_path / "s"))


def test_gen_data_token_flags_are_checked(capsys, tmp_path):
    from sglang_dflash.cli import main as cli_main

    base = ["gen-data", "--target", "unused", "--out", str(tmp_path / "o")]
    cases = {
        ("--tokens", "--features"): "--tokens is set with --features; expected one of them",
        ("--tokens", "--backend", "sglang"): "--backend is 'sglang'; expected 'hf' with --tokens",
        ("--from-tokens", "t"): "--from-tokens is 't' without --features; expected --features",
        ("--from-tokens", "t", "--features"): "--target-layer-ids is None; expected the layers to keep",
        ("--dtype", "bfloat16"): "--dtype is 'bfloat16' without --tokens; expected 'float32'",
    }
    for flags, message in cases.items():
        assert cli_main([*base, *flags]) == 2
        assert f"gen-data: {message}" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "o")


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_token_data_holds_no_evaluation_prompt(name):
    """The committed store holds its pool's prompts (ids checked); none shares 12 words with an eval one."""
    from transformers import AutoTokenizer

    from sglang_dflash.smollm2 import ensure_smollm2
    from sglang_dflash.train.data import chat_prompt_ids

    store = TokenStore.open(os.path.join(TOKEN_DATA, name))
    assert len(store.records) >= 32 or name != "default"  # another mix's store may hold its header only
    tokenizer = AutoTokenizer.from_pretrained(ensure_smollm2())
    # The store's own pool (its digest checked against the header), not one recomputed here.
    texts = stored_prompt_texts(store, None, lambda text: chat_prompt_ids(tokenizer, text))
    evaluation = read_prompts(os.path.join(SHARED_DATA, "humaneval.jsonl")) + read_prompts(
        os.path.join(SHARED_DATA, "gsm8k.jsonl")
    )
    assert len(evaluation) == 164 + 1319
    assert overlapping_prompts(texts, evaluation) == []
    evaluation_ids = {tuple(chat_prompt_ids(tokenizer, e)) for e in evaluation}
    assert not evaluation_ids & {tuple(r["input_ids"][: r["loss_start"]]) for r in store.records}


# Stores whose pool the prompt sources have changed since they were made: they keep the pool they
# were made from (prompts.json.gz), so recomputing it would not give their prompts back.
POOLS_CHANGED_SINCE = {"default", "code-completions+word-problems"}


@pytest.mark.parametrize("name", sorted(set(COMMITTED) - POOLS_CHANGED_SINCE))
def test_committed_stores_pools_are_what_the_prompt_sources_make_today(name):
    """A change to the prompt sources (their order, seeds or texts) that would give a committed store
    a different pool fails here, before a grown store mixes two pools."""
    from sglang_dflash.train.data import builtin_prompts

    store_dir = os.path.join(TOKEN_DATA, name)
    with open(os.path.join(store_dir, "header.json"), encoding="utf-8") as f:
        mix = json.load(f)["settings"]["prompt_mix"]
    # read_pool checks the store's own pool against its header's digest.
    assert builtin_prompts(mix["prompts"], mix["seed"], mix["sources"]) == read_pool(store_dir)


def _store_folder(path, marker: str | None) -> str:
    """A folder under ``path`` holding ``marker`` (header.json: a token store; manifest.json: a
    feature store; None: not a store)."""
    os.makedirs(path)
    if marker:
        with open(os.path.join(path, marker), "w", encoding="utf-8") as f:
            f.write("{}")
    return str(path)


def test_stores_train_in_the_shipped_runs_order_then_the_newer_ones_by_name(tmp_path, capsys):
    """The recipe's default and the GPU session's train stage read one order: a new run keeps holding
    out the shipped run's records (drawn among the first ones) whatever the stores are called."""
    from sglang_dflash.cli import main as cli_main
    from sglang_dflash.train.tokens import stores_in_training_order, training_order

    stores = tmp_path / "token-data"
    for name, marker in [
        ("default", "header.json"),
        ("zeta", "header.json"),
        ("alpha", "header.json"),
        ("beta", "manifest.json"),
        ("gamma", "header.json"),
        ("notes", None),
    ]:
        _store_folder(stores / name, marker)
    summary = tmp_path / "train_summary.json"
    # The shipped run named its stores by another path (relative, run from the repository root) and
    # one store that is gone since.
    shipped = ["drafters/x/token-data/zeta", "drafters/x/token-data/gone", "drafters/x/token-data/gamma"]
    summary.write_text(json.dumps({"config": {"extra_features": shipped}}))

    names = [
        os.path.basename(p)
        for p in stores_in_training_order(str(stores), str(summary), str(stores / "default"))
    ]
    assert names == ["zeta", "gamma", "alpha", "beta"]
    by_name = stores_in_training_order(str(stores), str(tmp_path / "absent.json"), None)
    assert [os.path.basename(p) for p in by_name] == ["alpha", "beta", "default", "gamma", "zeta"]
    assert training_order(["a/y", "a/x/"], ["b/x"]) == ["a/x/", "a/y"]

    assert (
        cli_main(
            ["store-order", str(stores), "--summary", str(summary), "--exclude", str(stores / "default")]
        )
        == 0
    )
    assert capsys.readouterr().out.split() == [str(stores / n) for n in ("zeta", "gamma", "alpha", "beta")]
    with pytest.raises(SystemExit, match=r"stores='.*missing' is not a folder"):
        cli_main(["store-order", str(tmp_path / "missing")])


def _assert_committed_stores_in_shipped_order(paths: list[str]) -> None:
    """``paths`` name every committed store but default, the shipped run's (its train_summary.json's
    ``extra_features``, by folder name) first and in its order."""
    with open(os.path.join(os.path.dirname(TOKEN_DATA), "train_summary.json"), encoding="utf-8") as f:
        shipped = [os.path.basename(p) for p in json.load(f)["config"]["extra_features"]]
    names = [os.path.basename(p) for p in paths]
    assert names[: len(shipped)] == shipped
    assert sorted(names) == sorted(n for n in COMMITTED if n != "default")


def test_the_committed_stores_train_in_the_shipped_order():
    """The committed drafter's own stores: the shipped run's in its order, every newer one after them."""
    from sglang_dflash.train.tokens import stores_in_training_order

    summary = os.path.join(os.path.dirname(TOKEN_DATA), "train_summary.json")
    _assert_committed_stores_in_shipped_order(
        stores_in_training_order(TOKEN_DATA, summary, os.path.join(TOKEN_DATA, "default"))
    )


def test_the_cpu_recipe_trains_on_the_committed_stores_in_the_shipped_order(tmp_path):
    """recipe-cpu.sh with EXTRA_FEATURES unset: the train stage is given every committed store but
    default, the shipped run's in its order first (what the GPU session's train stage reads)."""
    import subprocess
    import sys

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "train-args"
    # The recipe's console script: its train call is recorded, anything else is the real CLI.
    fake = bin_dir / "sglang-dflash"
    fake.write_text(
        "#!/usr/bin/env bash\n"
        f'if [[ $1 == train ]]; then printf "%s\\n" "$@" > {calls}; exit 0; fi\n'
        f'exec {sys.executable} -m sglang_dflash.cli "$@"\n'
    )
    fake.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "WORK": str(tmp_path / "work"),
        "TARGET": str(tmp_path / "target"),  # never read: train is the fake's
        "FEATURES_FROM_TOKENS": "1",
        "NUM_CHUNKS": "1",
        "STAGES": "train",
    }
    env.pop("EXTRA_FEATURES", None)
    recipe = os.path.join(os.path.dirname(TOKEN_DATA), "recipe-cpu.sh")
    proc = subprocess.run(["bash", recipe], env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    args = calls.read_text().split("\n")
    extra = args[args.index("--extra-features") + 1 : args.index("--num-chunks")]
    _assert_committed_stores_in_shipped_order(extra)
    # Started from the repository root, the recipe names the drafter folder and its stores relative
    # to it (what train_summary.json records), not by this checkout's absolute path.
    drafter = os.path.relpath(os.path.dirname(TOKEN_DATA), ROOT)
    assert args[args.index("--init-drafter") + 1] == drafter
    assert args[args.index("--features") + 1] == os.path.join(drafter, "token-data", "default")
    assert all(path.startswith(os.path.join(drafter, "token-data") + os.sep) for path in extra)
