"""Prompt sets for the benchmark: JSONL files with ``{"id", "prompt"}`` per line."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Prompt:
    id: str
    text: str
    input_ids: tuple[int, ...]


def read_jsonl_prompts(path: str, limit: int | None = None) -> list[tuple[str, str]]:
    """(id, prompt) pairs; a clear error for a missing file or a malformed line."""
    if not os.path.exists(path):
        raise FileNotFoundError(
            f'{path}: the file does not exist; expected a JSONL file of {{"id", "prompt"}} lines'
        )
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(
                    f"{path}:{n}: the line is not valid JSON ({e}); expected one JSON object per line"
                ) from e
            if not isinstance(record, dict) or not isinstance(record.get("prompt"), str):
                raise ValueError(
                    f"{path}:{n}: the line is {line.strip()[:80]!r}; expected an object with a "
                    'string "prompt" field'
                )
            out.append((str(record.get("id", f"{os.path.basename(path)}-{n}")), record["prompt"]))
            if limit is not None and len(out) >= limit:
                break
    if not out:
        raise ValueError(f"{path}: the number of prompts is 0; expected at least one")
    return out


def dataset_name(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def load_dataset(path: str, tokenizer, limit: int | None = None) -> list[Prompt]:
    """Prompts with the model's chat template applied (plain encoding if it has none)."""
    from ..train.data import chat_prompt_ids

    return [
        Prompt(pid, text, tuple(chat_prompt_ids(tokenizer, text)))
        for pid, text in read_jsonl_prompts(path, limit)
    ]
