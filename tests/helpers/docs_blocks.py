"""The shell blocks of README.md and docs/*.md, as the docs test (tests/test_docs_commands.py)
reads them. The conventions (docs/ci.md, "The docs are tested"):

- A fenced block tagged `bash`, `sh`, `shell` or `console` is run; a block with no tag or any
  other tag (`text`, `yaml`, `json`, `python`) is not.
- `bash`, `sh`, `shell`: the block is a script, run with `set -eo pipefail`; its output is not
  compared.
- `console`: lines starting `$ ` are commands (a line ending in `\\` continues on the next); the
  lines up to the next command are its expected output (stdout and stderr together), compared
  after stripping trailing spaces, where `...` stands for any text (within a line, or whole lines
  when it is alone on its line). A command whose expected output starts `error:` must exit 2. The
  block's commands run in one shell, so a variable one sets is there for the next.
- A `yaml` block whose first line is `# FILE.yaml` (or `.yml`) is a file the reader saves: the
  test writes it to FILE when the page's run reaches it, for the blocks after it.
- `<!-- docs-test: skip: REASON -->` on the line just before a block keeps the test from running
  it; the reason is reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

RUN = {"bash", "sh", "shell", "console"}
SKIP = re.compile(r"<!--\s*docs-test:\s*skip:\s*(.+?)\s*-->")
FENCE = re.compile(r"^(```+|~~~+)\s*([\w-]*)")
SAVED_AS = re.compile(r"^# ([\w./-]+\.ya?ml)\s*$")


@dataclass
class Command:
    line: int  # in the page, 1-based
    text: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    page: str
    line: int  # of the opening fence
    lang: str
    body: str
    skip: str | None = None
    saved_as: str | None = None  # a yaml block the reader saves under this name

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    def commands(self) -> list[Command]:
        """A console block's commands and their expected output."""
        found: list[Command] = []
        lines = self.body.split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.startswith("$ "):
                start = i
                text = line[2:]
                while text.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    text = text + "\n" + lines[i]
                found.append(Command(self.line + 1 + start, text))
            elif found:
                found[-1].expected.append(line.rstrip())
            i += 1
        for command in found:
            while command.expected and not command.expected[-1]:
                command.expected.pop()
        return found


def read_blocks(root: Path, page: str) -> list[Block]:
    lines = (root / page).read_text(encoding="utf-8").split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, lang = opening.group(1), opening.group(2).lower()
        end = i + 1
        while end < len(lines) and not lines[end].startswith(fence):
            end += 1
        body = "\n".join(lines[i + 1 : end])
        saved = SAVED_AS.match(lines[i + 1]) if lang == "yaml" and i + 1 < end else None
        if lang in RUN or saved:
            before = lines[i - 1] if i > 0 else ""
            skip = SKIP.search(before)
            blocks.append(Block(page, i + 1, lang, body, skip.group(1) if skip else None, saved and saved.group(1)))
        i = end + 1
    return blocks


def doc_pages(root: Path) -> list[str]:
    return ["README.md", *sorted(f"docs/{p.name}" for p in (root / "docs").glob("*.md"))]


def matches(expected: list[str], actual: list[str]) -> bool:
    """`expected` against `actual` line by line, `...` standing for any text (a line of its own:
    any number of lines)."""
    pattern = []
    for line in expected:
        if line.strip() == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            pattern.append(r"[^\n]*?".join(re.escape(part) for part in line.split("...")) + r"\n")
    return re.fullmatch("".join(pattern), "".join(a.rstrip() + "\n" for a in actual)) is not None
