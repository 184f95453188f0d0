"""Training data: prompts that are disjoint from the evaluation sets, answered by the target itself.

Prompt sources (no download, no evaluation data):

- ``stdlib-functions``: "complete this function" prompts built from the signatures and docstrings
  of public functions in pure-Python standard-library modules (the code-completion shape).
- ``coding-tasks``: "write a Python function that ..." built from a grid of operations and data.
- ``math-word-problems``: arithmetic word problems from templates with random names and numbers.
- ``concepts``: explanations of Python language topics (``pydoc_data.topics``) and stdlib modules.

Responses come from the target (self-distillation): Hugging Face ``generate`` on CPU for small
models, ``sglang.Engine`` on a GPU host.  A record is ``{"input_ids": prompt + response,
"loss_start": len(prompt)}``; the loss covers the response only.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import random
import re
from collections.abc import Iterable, Iterator, Sequence

import torch
from tqdm import tqdm

SOURCES = ("stdlib-functions", "coding-tasks", "math-word-problems", "concepts")

# Prompt-mix tables: kept compact on purpose (one idea per line, not one word per line).
# fmt: off
_STDLIB_MODULES = (
    "textwrap", "string", "statistics", "fractions", "heapq", "bisect", "functools", "difflib", "calendar",
    "colorsys", "shlex", "fnmatch", "glob", "ipaddress", "json", "csv", "random", "html", "urllib.parse",
    "email.utils", "posixpath", "base64", "quopri", "pprint", "reprlib", "copy", "keyword", "dataclasses",
    "shutil", "tempfile", "zipfile", "tarfile", "gzip", "configparser", "argparse", "logging", "locale",
    "gettext", "mimetypes", "webbrowser", "secrets", "uuid", "hmac", "platform", "sysconfig", "tokenize",
    "inspect", "types", "typing", "contextlib", "abc", "numbers", "enum", "graphlib", "pathlib", "os.path",
    "http.cookies", "wave", "plistlib", "netrc", "filecmp", "linecache", "traceback",
    "warnings", "weakref", "queue", "sched", "selectors", "socketserver", "smtplib", "ftplib", "poplib",
    "imaplib", "xml.dom.minidom", "xml.etree.ElementTree", "html.parser", "codecs",
    "encodings.idna", "stringprep", "unicodedata", "operator", "itertools", "collections", "datetime",
)

_OPERATIONS = (
    "returns the {k} largest values of", "removes duplicates from", "counts how often each item occurs in",
    "reverses", "sorts by absolute value", "returns the running sum of",
    "splits into chunks of size {k} from",
    "finds the longest increasing run in", "rotates by {k} positions", "returns every {k}-th element of",
    "checks whether it is a palindrome:", "interleaves with its reverse:",
    "returns the pairwise differences of",
    "normalises to the range 0..1:", "groups consecutive equal items of", "finds the index of the minimum of",
    "computes the median of", "returns the product of the non-zero items of",
    "flattens one level of nesting in",
    "returns items that appear exactly {k} times in",
)
_DATA = (
    "a list of integers", "a list of floats", "a string", "a list of strings", "a tuple of numbers",
    "a list of words", "a list of (name, score) pairs", "a dictionary's values", "a list of lists",
    "a bytes object",
)
_NAMES = ("Ava", "Ben", "Chen", "Dara", "Eli", "Fatima", "Goran", "Hana", "Ivan", "Jin", "Kofi", "Lena",
          "Mateo", "Nia",
          "Omar", "Priya", "Quinn", "Rosa", "Sami", "Tomas", "Uma", "Viktor", "Wen", "Yara", "Zane")
_ITEMS = (("apples", 1, 3), ("pencils", 1, 2), ("books", 5, 20), ("tickets", 8, 40), ("plants", 3, 15),
          ("cupcakes", 2, 6), ("marbles", 1, 1), ("stamps", 1, 4), ("candles", 2, 9), ("notebooks", 2, 7))
_MATH_TEMPLATES = (
    "{a} has {x} {item}. {b} gives {a} {y} more, and {a} then gives away {z}. How many {item} does "
    "{a} have now?",
    "{a} buys {x} {item} at ${p} each and pays with a ${bill} bill. How much change does {a} get?",
    "A box holds {x} {item}. {a} fills {y} boxes and has {z} {item} left over. How many {item} did "
    "{a} start with?",
    "{a} reads {x} pages a day for {y} days, then {z} pages on the last day. How many pages did {a} "
    "read in total?",
    "{a} saves ${x} every week. After {y} weeks {a} spends ${z}. How much money is left?",
    "{a} and {b} share {x} {item} so that {a} gets {y} more than {b}. How many {item} does {b} get?",
    "A shop sells {item} for ${p} each, or {y} for ${q}. How much does {a} save buying {y} at the "
    "bundle price?",
    "{a} runs {x} kilometres on Monday, twice that on Tuesday and {z} fewer than Tuesday on Wednesday. "
    "How far did {a} run over the three days?",
    "There are {x} {item} in a basket. {a} takes a third of them rounded down and {b} takes {z}. How "
    "many remain?",
    "{a} earns ${p} per hour and works {x} hours a week for {y} weeks. What are {a}'s total earnings?",
)

# fmt: on


def stdlib_function_prompts() -> list[str]:
    """Complete-this-function prompts from public, documented stdlib functions."""
    prompts: list[str] = []
    for module_name in _STDLIB_MODULES:
        try:
            module = importlib.import_module(module_name)
        except Exception:  # a module missing on this Python is simply skipped
            continue
        for name, fn in sorted(vars(module).items()):
            if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != module.__name__:
                continue
            doc = inspect.getdoc(fn)
            try:
                signature = str(inspect.signature(fn))
            except (TypeError, ValueError):
                continue
            if not doc or len(doc) < 40:
                continue
            summary = doc.split("\n\n")[0].strip().replace('"""', "'''")
            body = f'def {name}{signature}:\n    """{summary}\n    """\n'
            prompts.append(
                f"Complete the following Python function from the {module_name} "
                f"module.\n\n```python\n{body}```"
            )
    return prompts


def coding_task_prompts() -> list[str]:
    prompts = []
    for i, op in enumerate(_OPERATIONS):
        for j, data in enumerate(_DATA):
            k = 2 + (i + j) % 4
            prompts.append(
                f"Write a Python function that {op.format(k=k)} {data}. Include a short docstring and "
                f"an example."
            )
    return prompts


def math_word_problems(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    prompts = []
    for _ in range(count):
        a, b = rng.sample(_NAMES, 2)
        item, lo, hi = rng.choice(_ITEMS)
        x, y, z = rng.randint(6, 60), rng.randint(2, 12), rng.randint(1, 5)
        p = rng.randint(lo, hi)
        values = dict(
            a=a,
            b=b,
            item=item,
            x=x,
            y=y,
            z=z,
            p=p,
            q=max(1, p * y - rng.randint(1, y)),
            bill=(p * x // 10 + 1) * 10 + rng.choice((0, 10, 20)),
        )
        prompts.append(rng.choice(_MATH_TEMPLATES).format(**values) + " Explain your reasoning step by step.")
    return prompts


def concept_prompts() -> list[str]:
    import sys
    from pydoc_data.topics import topics

    prompts = [f"Explain the Python language topic '{t}' with a short example." for t in sorted(topics)]
    prompts += [
        f"What is the Python standard library module `{m}` used for? Show a short example."
        for m in sorted(sys.stdlib_module_names)
        if not m.startswith("_")
    ]
    return prompts


def builtin_prompts(count: int | None = None, seed: int = 0, sources: Sequence[str] = SOURCES) -> list[str]:
    """A shuffled, de-duplicated mix of the built-in prompt sources (see module doc)."""
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        raise ValueError(f"prompt sources {unknown} are invalid; expected some of {SOURCES}")
    pool: list[str] = []
    if "stdlib-functions" in sources:
        pool += stdlib_function_prompts()
    if "coding-tasks" in sources:
        pool += coding_task_prompts()
    if "concepts" in sources:
        pool += concept_prompts()
    if "math-word-problems" in sources:
        pool += math_word_problems(max(1000, (count or 0) - len(pool)), seed)
    pool = list(dict.fromkeys(pool))
    random.Random(seed).shuffle(pool)
    return pool[:count] if count else pool


def read_prompts(path: str) -> list[str]:
    """Prompts from a JSONL file with a "prompt" field per line."""
    prompts = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                record = json.loads(line)
                if not isinstance(record.get("prompt"), str):
                    raise ValueError(f'{path}:{n}: expected a JSON object with a string "prompt" field')
                prompts.append(record["prompt"])
    return prompts


def _shingles(text: str, n: int) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def overlapping_prompts(train: Iterable[str], evaluation: Iterable[str], n: int = 12) -> list[str]:
    """Training prompts equal to an evaluation prompt or sharing an ``n``-word run with one."""
    eval_list = list(evaluation)
    exact = set(eval_list)
    eval_shingles = set().union(*(_shingles(e, n) for e in eval_list)) if eval_list else set()
    return [t for t in train if t in exact or _shingles(t, n) & eval_shingles]


def chat_prompt_ids(tokenizer, prompt: str) -> list[int]:
    """Token ids of a user turn with the generation prompt (plain encoding without a chat template)."""
    if getattr(tokenizer, "chat_template", None):
        ids = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=True
        )
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)
    return tokenizer.encode(prompt)


def left_padded(prompts: Sequence[Sequence[int]], pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded input ids and attention mask [bs, max_len] of a batch of prompts (HF generate's layout)."""
    width = max(map(len, prompts))
    ids = torch.tensor([[pad_id] * (width - len(p)) + list(p) for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    return ids, mask


def generate_padded(
    target: torch.nn.Module,
    ids: torch.Tensor,
    mask: torch.Tensor,
    max_new_tokens: int,
    eos_token_id: int | None,
    temperature: float = 0.0,
) -> torch.Tensor:
    """``target.generate`` over a left-padded batch: greedy at temperature 0, plain sampling otherwise.

    Returns [bs, width + generated] ids; rows that stop early are padded with the eos token.
    """
    return target.generate(
        ids,
        attention_mask=mask,
        max_new_tokens=max_new_tokens,
        do_sample=temperature > 0,
        temperature=temperature if temperature > 0 else None,
        top_p=None,
        top_k=None,
        eos_token_id=eos_token_id,
        pad_token_id=eos_token_id if eos_token_id is not None else 0,
    )


@torch.inference_mode()
def generate_responses_hf(
    target: torch.nn.Module,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    eos_token_id: int | None,
    temperature: float = 0.0,
    batch_size: int = 16,
    seed: int = 0,
) -> Iterator[dict]:
    """Self-distillation with Hugging Face generate (CPU-friendly); yields training records."""
    torch.manual_seed(seed)
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))  # similar lengths pad less
    for start in tqdm(range(0, len(order), batch_size), desc="generating", unit="batch"):
        chunk = [list(prompts[i]) for i in order[start : start + batch_size]]
        width = max(map(len, chunk))
        ids, mask = left_padded(chunk)
        out = generate_padded(target, ids, mask, max_new_tokens, eos_token_id, temperature)
        for prompt, row in zip(chunk, out[:, width:].tolist()):
            if eos_token_id is not None and eos_token_id in row:
                row = row[: row.index(eos_token_id) + 1]
            yield {"input_ids": prompt + row, "loss_start": len(prompt)}


def generate_responses_sglang(
    model_path: str,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    temperature: float = 0.0,
    engine_kwargs: dict | None = None,
) -> Iterator[dict]:
    """Self-distillation with ``sglang.Engine`` (GPU host); yields training records."""
    import sglang

    engine = sglang.Engine(model_path=model_path, **(engine_kwargs or {}))
    try:
        params = {"max_new_tokens": max_new_tokens, "temperature": temperature}
        outputs = engine.generate(input_ids=[list(p) for p in prompts], sampling_params=params)
        for prompt, out in zip(prompts, outputs):
            yield {"input_ids": list(prompt) + list(out["output_ids"]), "loss_start": len(prompt)}
    finally:
        engine.shutdown()


def write_records(records: Iterable[dict], path: str) -> int:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    count = 0
    with open(path, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")
            count += 1
    return count


def read_records(path: str) -> list[dict]:
    records = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            record = json.loads(line)
            ids, start = record.get("input_ids"), record.get("loss_start")
            if not isinstance(ids, list) or not isinstance(start, int) or not 0 < start < len(ids):
                raise ValueError(
                    f'{path}:{n}: expected {{"input_ids": [...], "loss_start": k}} '
                    "with 0 < k < len(input_ids)"
                )
            records.append(record)
    if not records:
        raise ValueError(f"{path} holds no training records")
    return records
