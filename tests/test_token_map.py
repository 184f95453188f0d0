"""The hot draft vocabulary (``--speculative-token-map``): building a map from token stores, reading
and checking one as the server does at startup, the drafter's logits under one, and the refusals."""

import json
from types import SimpleNamespace

import pytest
import torch

from sglang_dflash.config import DFlashConfigError
from sglang_dflash.token_map import (
    check_token_ids,
    coverage,
    hot_token_ids,
    response_token_counts,
    write_token_map,
)
from sglang_dflash.train.tokens import chunk_path, open_for_writing, write_token_chunk

pytest.importorskip("sglang", reason="needs the sglang extra installed")


def write_store(path, records: list[tuple[list[int], list[int]]]) -> str:
    """A one-chunk token store of (prompt ids, response ids) records."""
    open_for_writing(str(path), {"test": True})
    rows = [
        {"input_ids": prompt + response, "loss_start": len(prompt), "prompt_index": i}
        for i, (prompt, response) in enumerate(records)
    ]
    write_token_chunk(chunk_path(str(path), 0), rows, "uint16")
    return str(path)


def test_a_map_holds_the_most_frequent_response_tokens_ties_by_lower_id(tmp_path):
    # Prompt tokens (9) never count; responses: 4 x3, 7 x2, 2 x2, 5 x1.
    first = write_store(tmp_path / "a", [([9, 9, 9], [4, 7, 4]), ([9], [2, 5])])
    second = write_store(tmp_path / "b", [([9, 9], [4, 7, 2])])
    counts = response_token_counts([first, second], vocab_size=12)
    assert counts.tolist() == [0, 0, 2, 0, 3, 1, 0, 2, 0, 0, 0, 0]
    assert hot_token_ids(counts, 3).tolist() == [2, 4, 7]  # 2 and 7 tie: both in, sorted by id
    assert hot_token_ids(counts, 2).tolist() == [2, 4]  # the tie broken by the lower id
    assert hot_token_ids(counts, 5).tolist() == [0, 2, 4, 5, 7]  # never-seen ids fill by lower id
    assert coverage(counts, hot_token_ids(counts, 2)) == pytest.approx(5 / 8)
    with pytest.raises(ValueError, match=r"--size is 13; expected 1..12"):
        hot_token_ids(counts, 13)
    with pytest.raises(ValueError, match="token id 9 is past the vocabulary; expected ids below 8"):
        response_token_counts([write_store(tmp_path / "c", [([1], [9])])], vocab_size=8)


def test_the_cli_writes_a_map_the_server_reads_back(tmp_path, capsys):
    from sglang_dflash.cli import main
    from sglang_dflash.token_map import read_token_map

    target = tmp_path / "target"
    target.mkdir()
    (target / "config.json").write_text(json.dumps({"vocab_size": 12}))
    store = write_store(tmp_path / "s", [([1], [3, 3, 8, 3, 8, 11])])
    out = tmp_path / "map.pt"
    assert (
        main(["token-map", "--target", str(target), "--tokens", store, "--out", str(out), "--size", "2"]) == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["size"] == 2 and summary["distinct_tokens"] == 3
    assert summary["coverage"] == pytest.approx(5 / 6)
    assert read_token_map(str(out), vocab_size=12).tolist() == [3, 8]


@pytest.mark.parametrize(
    "ids, expected",
    [
        (torch.tensor([[1, 2]]), "a non-empty list of integer token ids"),
        (torch.tensor([], dtype=torch.int64), "a non-empty list of integer token ids"),
        (torch.tensor([1.0, 2.0]), "a non-empty list of integer token ids"),
        (torch.tensor([3, 48]), r"token ids in 0..47 \(the target's vocabulary\); it holds 48"),
        (torch.tensor([3, -1]), r"token ids in 0..47 \(the target.s vocabulary\); it holds -1"),
        (torch.tensor([3, 5, 3]), "distinct token ids; it holds 1 repeated"),
    ],
)
def test_a_bad_map_is_refused_naming_the_flag_and_the_problem(ids, expected):
    with pytest.raises(DFlashConfigError, match=rf"--speculative-token-map is 'm.pt'; expected {expected}"):
        check_token_ids(ids, 48, "m.pt")


def test_a_file_that_is_not_a_list_of_ids_is_refused_naming_it(tmp_path):
    from sglang_dflash.token_map import read_token_map

    path = tmp_path / "dict.pt"
    torch.save({"ids": [1, 2]}, path)
    with pytest.raises(
        DFlashConfigError, match=r"--speculative-token-map is '.*dict.pt'; expected a readable"
    ):
        read_token_map(str(path), 48)


def test_the_server_refuses_a_map_outside_the_targets_vocabulary_with_dflash2_or_tensor_parallel(
    qwen3_pair, tmp_path
):
    from sglang_dflash.config import DFlashConfig
    from sglang_dflash.serving.validation import check_token_map

    config = DFlashConfig.from_pretrained(qwen3_pair[1])
    good, bad = tmp_path / "good.pt", tmp_path / "bad.pt"
    write_token_map(torch.tensor([1, 5, 9]), str(good))
    write_token_map(torch.tensor([1, config.vocab_size]), str(bad))

    def flags(path, tp_size=1):
        return SimpleNamespace(speculative_token_map=None if path is None else str(path), tp_size=tp_size)

    check_token_map(flags(good), config)
    check_token_map(flags(None), config)
    with pytest.raises(DFlashConfigError, match=f"it holds {config.vocab_size}"):
        check_token_map(flags(bad), config)
    with pytest.raises(DFlashConfigError, match="expected unset with --tp-size 2"):
        check_token_map(flags(good, tp_size=2), config)
    dflash2 = SimpleNamespace(is_dflash2=True, vocab_size=config.vocab_size)
    with pytest.raises(DFlashConfigError, match="expected unset for a DFlash2 drafter"):
        check_token_map(flags(good), dflash2)


def test_startup_checks_the_map(qwen3_pair, tmp_path):
    """The ServerArgs hook's whole check (validation.check_server_args) reads the map."""
    from test_refused_flags import refusal

    torch.save("not ids", tmp_path / "text.pt")
    message = refusal(qwen3_pair, speculative_token_map=str(tmp_path / "text.pt"))
    assert "--speculative-token-map is" in message and "expected a readable torch file" in message, message
