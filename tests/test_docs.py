"""README.md, docs/*.md and the READMEs they link to stay true to the repository: every relative link
(and ``#anchor``) resolves, and every command line in a ``bash`` block names only flags its command
accepts.

The commands checked are ``sglang-dflash ...`` / ``python -m sglang_dflash.cli ...`` (against the
parser ``sglang_dflash.cli.main`` builds, subcommand by subcommand) and ``python -m
sglang.launch_server ...`` (against SGLang's own ``ServerArgs.add_cli_args``, as ``launch_server``
builds it). A renamed flag or a moved page then fails here, not in a reader's terminal. No server
starts: the parsers are built and read, nothing runs.
"""

from __future__ import annotations

import argparse
import functools
import glob
import os
import re
import shlex
from collections.abc import Iterator
from unittest import mock

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FENCE = re.compile(r"^\s*(```|~~~)\s*([\w+-]*)")
# [text](target) or [text](target "title"); images too. Targets with spaces are not used here.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*([^)\s]+)(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:, ...
SHELL_LANGS = {"bash", "sh", "shell", "console"}
# Split a command line into simple commands; the checked CLIs never take these as arguments.
SHELL_SEPARATORS = {"&&", "||", ";", "|", "&"}
LAUNCH_SERVER = "sglang.launch_server"
OUR_CLI = "sglang-dflash"


def doc_files(root: str = ROOT) -> list[str]:
    """README.md, every page under docs/ and the pages they link to (bench/, drafters/ with each
    drafter's run log, patches/), as paths relative to ``root``."""
    pages = [
        "docs/*.md",
        "bench/README.md",
        "drafters/*/README.md",
        "drafters/*/RUNS.md",
        "patches/README.md",
    ]
    found = [p for pattern in pages for p in sorted(glob.glob(os.path.join(root, pattern)))]
    return ["README.md"] + [os.path.relpath(p, root) for p in found]


def read(root: str, page: str) -> str:
    with open(os.path.join(root, page), encoding="utf-8") as f:
        return f.read()


def split_fences(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(the prose of a Markdown page, its fenced blocks as (language, body) pairs)."""
    prose: list[str] = []
    blocks: list[tuple[str, str]] = []
    block: list[str] | None = None
    lang = ""
    for line in text.splitlines():
        fence = FENCE.match(line)
        if fence and block is None:
            block, lang = [], fence.group(2).lower()
        elif fence:
            blocks.append((lang, "\n".join(block)))
            block = None
        elif block is not None:
            block.append(line)
        else:
            prose.append(line)
    return "\n".join(prose), blocks


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text in lower case, punctuation dropped, spaces -> '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").replace("*", "").lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading anchor of a Markdown page (GitHub numbers repeated headings -1, -2, ...)."""
    repeats: dict[str, int] = {}
    found = set()
    for line in split_fences(text)[0].splitlines():
        match = HEADING.match(line)
        if match:
            slug = github_slug(match.group(2))
            found.add(f"{slug}-{repeats[slug]}" if slug in repeats else slug)
            repeats[slug] = repeats.get(slug, 0) + 1
    return found


def broken_links(page: str, root: str = ROOT) -> list[str]:
    """``<page>: link <target> ...`` for every relative link of ``page`` that does not resolve."""
    path = os.path.join(root, page)
    prose = re.sub(r"`[^`]*`", "", split_fences(read(root, page))[0])  # links in code are not links
    problems = []
    for target in LINK.findall(prose):
        if EXTERNAL.match(target):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.exists(resolved):
            problems.append(f"{page}: link {target!r} is a missing path; expected an existing file or folder")
        elif anchor and resolved.endswith(".md"):
            known = anchors(read(root, os.path.relpath(resolved, root)))
            if anchor not in known:
                problems.append(
                    f"{page}: link {target!r} names anchor #{anchor}; expected one of the headings of "
                    f"{os.path.relpath(resolved, root)}: {sorted(known)}"
                )
    return problems


def shell_commands(text: str) -> Iterator[list[str]]:
    """The simple commands (word lists) of every shell block of a page: continuations joined,
    comments dropped, lines split at ``&&``, ``||``, ``;``, ``|`` and ``&``."""
    for lang, body in split_fences(text)[1]:
        if lang not in SHELL_LANGS:
            continue
        for line in body.replace("\\\n", " ").splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line)  # as bash: '#' starts a comment only at a word's start
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
            lexer.whitespace_split = True
            words: list[str] = []
            for word in lexer:
                if word in SHELL_SEPARATORS:
                    yield from [words] if words else []
                    words = []
                else:
                    words.append(word)
            yield from [words] if words else []


def checked_command(words: list[str]) -> tuple[str, list[str]] | None:
    """(``sglang-dflash`` or ``sglang.launch_server``, the words after it) when ``words`` runs one of
    the checked CLIs, wherever it stands (after ``VAR=value``, ``taskset -c 0``, ...); else None."""
    for i, word in enumerate(words):
        if os.path.basename(word) == OUR_CLI:
            return OUR_CLI, words[i + 1 :]
        if re.fullmatch(r"python3?", os.path.basename(word)) and words[i + 1 : i + 2] == ["-m"]:
            module = words[i + 2] if len(words) > i + 2 else ""
            if module == "sglang_dflash.cli":
                return OUR_CLI, words[i + 3 :]
            return (LAUNCH_SERVER, words[i + 3 :]) if module == LAUNCH_SERVER else None
    return None


def flags_of(args: list[str]) -> list[str]:
    """The ``--flag`` words of ``args`` (``--flag=value`` -> ``--flag``; ``[--flag]`` placeholders too)."""
    words = (word.strip("[]") for word in args)
    return [word.split("=", 1)[0] for word in words if word.startswith("--") and len(word) > 2]


def option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string ``parser`` accepts (``-h``/``--help`` included)."""
    return {option for action in parser._actions for option in action.option_strings}


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommand parsers of ``parser`` by name (empty without subcommands)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


class _Built(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def our_parser() -> argparse.ArgumentParser:
    """The parser ``sglang_dflash.cli.main`` builds, caught when it starts parsing (nothing runs)."""
    from sglang_dflash import cli

    def catch(parser, *args, **kwargs):
        raise _Built(parser)

    with mock.patch.object(argparse.ArgumentParser, "parse_args", catch):
        try:
            cli.main(["--help"])
        except _Built as built:
            return built.parser
    raise AssertionError("sglang_dflash.cli.main: parse_args is never called; expected it to parse argv")


def launch_server_parser() -> argparse.ArgumentParser:
    """The parser ``python -m sglang.launch_server`` reads flags with (SGLang's ``prepare_server_args``)."""
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    return parser


@functools.cache
def real_parsers() -> dict[str, argparse.ArgumentParser]:
    return {OUR_CLI: our_parser(), LAUNCH_SERVER: launch_server_parser()}


def unknown_flags(command: str, args: list[str], parsers: dict[str, argparse.ArgumentParser]) -> list[str]:
    """``<command> [subcommand]: ...`` for every flag (or subcommand) in ``args`` the command rejects."""
    parser, where = parsers[command], command
    commands = subparsers(parser)
    name = next((a for a in args if not a.startswith("-")), None) if commands else None
    if name is not None:
        if name not in commands:
            return [f"{command}: subcommand is {name!r}; expected one of {sorted(commands)}"]
        parser, where = commands[name], f"{command} {name}"
    accepted = option_strings(parser)
    return [
        f"{where}: flag {flag} is not accepted; expected a flag of `{where} --help`"
        for flag in flags_of(args)
        if flag not in accepted
    ]


def bad_flags(page: str, root: str = ROOT, parsers: dict[str, argparse.ArgumentParser] | None = None) -> list:
    """``<page>: ...`` for every unknown flag or subcommand in the page's shell blocks."""
    parsers = parsers or real_parsers()
    problems = []
    for words in shell_commands(read(root, page)):
        found = checked_command(words)
        if found is not None:
            problems += [f"{page}: {p}" for p in unknown_flags(*found, parsers)]
    return problems


# --- the repository's own pages ---------------------------------------------------------------------


def test_every_relative_link_in_the_readme_and_docs_resolves():
    problems = [p for page in doc_files() for p in broken_links(page)]
    assert not problems, "\n".join(problems)


def test_every_command_block_names_only_flags_the_cli_accepts():
    problems = [p for page in doc_files() for p in bad_flags(page)]
    assert not problems, "\n".join(problems)


def test_the_pages_hold_commands_of_both_clis_to_check():
    """Guards the check above against passing vacuously (e.g. if the block parsing stopped finding
    commands)."""
    seen = {
        found[0]
        for page in doc_files()
        for words in shell_commands(read(ROOT, page))
        if (found := checked_command(words)) is not None
    }
    assert seen == {OUR_CLI, LAUNCH_SERVER}


def test_the_readme_keeps_the_test_command_that_ci_runs():
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as f:
        ci = f.read()
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    test_section = re.search(r"^## Test\n+```bash\n(.*?)\n```", readme, re.S | re.M)
    assert test_section, "README.md: section '## Test' with a bash block is missing"
    assert test_section.group(1) in ci.splitlines()


# --- the checker itself, on small fixtures ------------------------------------------------------------


def _tree(tmp_path, files: dict[str, str]) -> str:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return str(tmp_path)


def test_a_missing_page_and_a_missing_anchor_are_reported(tmp_path):
    root = _tree(
        tmp_path,
        {
            "README.md": "# Top\n\n[ok](docs/a.md#the-part) [gone](docs/b.md) [bad](docs/a.md#nowhere)\n"
            "[web](https://example.com/x) [self](#top)\n```bash\n[in code](docs/none.md)\n```\n",
            "docs/a.md": "# A\n\n## The part\n\n[up](../README.md#top) [code](../src/)\n",
            "src/x.py": "",
        },
    )
    assert broken_links("docs/a.md", root) == []
    problems = broken_links("README.md", root)
    assert len(problems) == 2
    assert "'docs/b.md' is a missing path" in problems[0]
    assert "names anchor #nowhere" in problems[1] and "'the-part'" in problems[1]


def test_anchors_follow_github_slugs():
    page = "# Serving with SGLang\n## Request options\n### `seed` and masks: on/off\n## Request options"
    assert anchors(page) == {
        "serving-with-sglang",
        "request-options",
        "seed-and-masks-onoff",
        "request-options-1",
    }


def _fixture_parsers() -> dict[str, argparse.ArgumentParser]:
    cli = argparse.ArgumentParser(prog="sglang-dflash")
    sub = cli.add_subparsers(dest="command")
    sub.add_parser("doctor").add_argument("--target")
    server = argparse.ArgumentParser()
    server.add_argument("--model-path")
    server.add_argument("--device")
    return {OUR_CLI: cli, LAUNCH_SERVER: server}


def test_an_unknown_flag_or_subcommand_is_reported_for_either_cli(tmp_path):
    root = _tree(
        tmp_path,
        {
            "README.md": "```bash\n"
            "sglang-dflash doctor --target T [--json]   # a comment --not-a-flag\n"
            "SGLANG_X=1 taskset -c 0 python -m sglang.launch_server --model-path M \\\n"
            "  --device=cpu --dveice cpu && python3 -m sglang_dflash.cli doctor --target T\n"
            "sglang-dflash doctr\n"
            "python -m pytest --not-checked\n"
            "```\n```python\nsglang-dflash doctor --in-python-block\n```\n",
        },
    )
    assert bad_flags("README.md", root, _fixture_parsers()) == [
        "README.md: sglang-dflash doctor: flag --json is not accepted; expected a flag of "
        "`sglang-dflash doctor --help`",
        "README.md: sglang.launch_server: flag --dveice is not accepted; expected a flag of "
        "`sglang.launch_server --help`",
        "README.md: sglang-dflash: subcommand is 'doctr'; expected one of ['doctor']",
    ]


def test_the_real_parsers_know_the_flags_the_pages_rely_on():
    """The parsers are the real ones: a documented flag is accepted, a misspelt one is not."""
    parsers = real_parsers()
    assert unknown_flags(OUR_CLI, ["bench", "--device", "cpu", "--drafter", "d"], parsers) == []
    assert unknown_flags(OUR_CLI, ["bench", "--devcie", "cpu"], parsers) != []
    adaptive = ["--speculative-algorithm", "DFLASH", "--speculative-adaptive"]
    assert unknown_flags(LAUNCH_SERVER, adaptive, parsers) == []
    assert unknown_flags(LAUNCH_SERVER, ["--speculative-algoritm", "DFLASH"], parsers) != []


@pytest.mark.parametrize("page", doc_files())
def test_each_page_starts_with_a_title(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        assert f.readline().startswith("# "), f"{page}: first line; expected a '# Title' heading"
