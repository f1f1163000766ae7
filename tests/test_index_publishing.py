"""A reader never sees half an index and an index is never missing: searches running while writers
rebuild and add to the same index always see one generation whole; a writer killed at any step of
its publish leaves a usable index, and the next write cleans up; an index of the earlier flat layout
is read and upgraded. Published directories (bundles, tiny models...) are replaced in one step, and a
run killed while replacing one leaves the old one or the new one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("faiss")

from helpers import index_fakes  # noqa: E402
from helpers.index_fakes import FakeEncoder, add, build, check_search  # noqa: E402


@pytest.fixture(autouse=True)
def fake_encoder(monkeypatch):
    """Searches and `index add` in this process encode with the fake encoder."""
    monkeypatch.setattr("bertkit.embeddings.index.index_encoder", lambda *args, **kwargs: FakeEncoder())


ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")]), "HF_HUB_OFFLINE": "1"}


def generation_of(folder: Path) -> Path:
    """The generation folder that the index's index.json names."""
    return folder / json.loads((folder / "index.json").read_text())["generation"]


def run_child(script: str, *args, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", script, *map(str, args)], env=ENV, capture_output=True, text=True, timeout=timeout
    )


def tidy(folder: Path) -> None:
    """What a finished write leaves: index.json, the manifest, the current and the previous
    generation, and nothing bertkit does not count as its own."""
    from bertkit.core.outputs import check_output_dir

    names = sorted(p.name for p in folder.iterdir())
    assert names[0] == ".bertkit-output.json" and names[-1] == "index.json" and len(names) <= 4, names
    assert all(n.startswith("gen-") for n in names[1:-1]), names
    assert generation_of(folder).is_dir()
    assert not [p.name for p in folder.parent.iterdir() if ".tmp-" in p.name or ".old-" in p.name]
    check_output_dir(folder, True, kind="index")  # --overwrite would accept it: every file is bertkit's


# ---------------------------------------------------------------- readers while writers write


READER = """
import json, sys, time
from pathlib import Path
from helpers import index_fakes
index_fakes.use_fake_encoder()
folder, stop_at = Path(sys.argv[1]), float(sys.argv[2])
reads, failures, tags = 0, [], set()
while time.time() < stop_at:
    try:
        tag, _ = index_fakes.check_search(folder)
        tags.add(tag)
        reads += 1
    except BaseException as err:  # a BertkitError, an IndexError, an AssertionError: all count
        failures.append(f"{type(err).__name__}: {err}")
print(json.dumps({"reads": reads, "tags": sorted(tags), "failures": failures[:5], "failed": len(failures)}))
"""


@pytest.mark.spawns
def test_searches_see_one_whole_generation_while_writers_rebuild_and_add(tmp_path):
    folder = tmp_path / "idx"
    flat_index(folder, "g0", 40)  # of bertkit's earlier layout: the first writes upgrade it as the readers read
    stop_at = time.time() + 12  # the readers take a few seconds to start (imports)
    readers = [
        subprocess.Popen(
            [sys.executable, "-c", READER, str(folder), str(stop_at)], env=ENV, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    writes, generation = 0, 0
    while time.time() < stop_at:
        generation += 1
        tag = f"g{generation}"
        lines = 30 + 10 * (generation % 4)  # each generation of another size
        build(folder, tag, lines)  # build --overwrite: a whole new index in the same folder
        add(folder, tag, 12)  # then texts added to it
        writes += 2
    results = [json.loads(reader.communicate(timeout=60)[0]) for reader in readers]
    for result in results:
        assert result["failed"] == 0, result
        assert result["reads"] >= 10 and len(result["tags"]) >= 3, (result, writes)  # they did overlap the writes
    assert check_search(folder)[0] == f"g{generation}"
    tidy(folder)


# ---------------------------------------------------------------- a writer killed at each step


CRASH = """
import os, sys
from pathlib import Path
from helpers import index_fakes
from bertkit.embeddings import ann, index_publishing

index_fakes.use_fake_encoder()

point, action, folder = sys.argv[1], sys.argv[2], Path(sys.argv[3])

def die(*args, **kwargs):
    os._exit(9)

if point == "writing the vectors":
    ann.save = die
elif point == "flushing the generation":
    index_publishing._sync = die
elif point == "before index.json is replaced":
    index_publishing._list_info = die
elif point == "flushing index.json":  # its new text written beside it, not yet renamed over it
    real_fsync = os.fsync
    os.fsync = lambda fd: die() if ".index.json.tmp-" in os.readlink(f"/proc/self/fd/{fd}") else real_fsync(fd)
elif point == "replacing index.json":
    real = os.replace
    os.replace = lambda src, dst, *a, **k: die() if str(dst).endswith("index.json") else real(src, dst, *a, **k)
elif point == "before the old generations go":
    index_publishing._remove_old = die
elif point == "removing an old generation":
    def halfway(path, *args, **kwargs):
        next(p for p in Path(path).iterdir() if p.name == "texts.jsonl").unlink()
        die()
    index_publishing.shutil.rmtree = halfway
if action == "build":
    index_fakes.build(folder, "new", 25)
else:
    index_fakes.add(folder, "old", 9)
os._exit(0)
"""
STEPS = {  # the step, and which index a reader sees after a kill there
    "writing the vectors": "old",
    "flushing the generation": "old",
    "before index.json is replaced": "old",
    "flushing index.json": "old",
    "replacing index.json": "old",
    "before the old generations go": "new",
    "removing an old generation": "new",
}


@pytest.mark.spawns
@pytest.mark.parametrize("action", ["build", "add"])
def test_a_writer_killed_at_any_step_leaves_a_usable_index(tmp_path, action):
    folder = tmp_path / "idx"
    for point, seen in STEPS.items():
        build(folder, "old", 50)
        add(folder, "old", 5)  # three generations to have one to remove
        add(folder, "old", 5)
        before = check_search(folder)
        done = run_child(CRASH, point, action, folder)
        assert done.returncode == 9, (point, done.stderr)
        after = check_search(folder)  # whole, and the old or the new one
        if seen == "old":
            assert after == before, point
        else:
            assert after == (("new", 21) if action == "build" else ("old", before[1] + 8)), (point, after)
        add(folder, after[0], 3)  # the next write succeeds and clears what the killed one left
        tidy(folder)


@pytest.mark.spawns
def test_a_new_index_killed_while_written_is_absent_then_built(tmp_path):
    folder = tmp_path / "idx"
    done = run_child(CRASH, "flushing the generation", "build", folder)
    assert done.returncode == 9 and not folder.exists()  # no half index under the name
    build(folder, "g1", 20, overwrite=False)  # and nothing stands in the way of the next build
    tidy(folder)


def test_a_full_disk_while_adding_leaves_the_index_as_it_was(tmp_path, monkeypatch, cli):
    import errno

    from bertkit.core import outputs
    from bertkit.embeddings import ann, index_publishing

    folder = tmp_path / "idx"
    build(folder, "g1", 20)
    more = index_fakes.corpus(tmp_path, "g1", 5, 20)
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    real_save, real_json = ann.save, outputs.write_json

    def faiss_full(*args, **kwargs):  # FAISS reports a failed write as a RuntimeError in words
        raise RuntimeError("Error in faiss::FileIOWriter::operator(): write error (No space left on device)")

    def info_full(path, data, **kwargs):
        if path.name == "index.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        real_json(path, data, **kwargs)

    for target, failing in ((ann, ("save", faiss_full)), (index_publishing, ("write_json", info_full))):
        monkeypatch.setattr(target, *failing)
        code, _, err = cli("index", "add", "--index", folder, "--corpus", more)
        flat = " ".join(err.split())
        assert code == 2 and "No space left on device" in flat and "Traceback" not in err, err
        monkeypatch.setattr(ann, "save", real_save)
        monkeypatch.setattr(index_publishing, "write_json", real_json)
        assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before  # nothing left behind
        assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert check_search(folder) == ("g1", 17)


# ---------------------------------------------------------------- the flat layout of earlier bertkit


def flat_index(folder: Path, tag: str, lines: int) -> None:
    """An index as bertkit wrote it before generations: the three files in the folder itself,
    index.json of format 1 (no generation), no checksums."""
    build(folder, tag, lines)
    generation = generation_of(folder)
    info = json.loads((folder / "index.json").read_text())
    del info["texts_sha256"], info["vectors_sha256"], info["generation"]
    (folder / "index.json").write_text(json.dumps({**info, "format": 1}))
    for name in ("texts.jsonl", "vectors.faiss"):
        (generation / name).rename(folder / name)
    for item in generation.iterdir():
        item.unlink()
    generation.rmdir()
    manifest = {"written_by": "bertkit", "kind": "index", "files": ["index.json", "texts.jsonl", "vectors.faiss"]}
    (folder / ".bertkit-output.json").write_text(json.dumps(manifest))


def test_an_index_of_the_flat_layout_is_read_and_upgraded(tmp_path, cli):
    folder = tmp_path / "idx"
    flat_index(folder, "flat", 30)
    assert check_search(folder) == ("flat", 26)
    add(folder, "flat", 10)  # the first write makes a generation and keeps the flat files for readers
    assert check_search(folder) == ("flat", 34)
    info = json.loads((folder / "index.json").read_text())
    assert (info["format"], info["generation"], info["count"]) == (2, "gen-000001", 34)
    assert (folder / "texts.jsonl").is_file() and (folder / "vectors.faiss").is_file()
    add(folder, "flat", 10)  # the next one removes them
    assert check_search(folder) == ("flat", 43)
    assert not (folder / "texts.jsonl").exists() and not (folder / "vectors.faiss").exists()
    tidy(folder)
    # a flat index whose lines were reordered by hand (no checksum to tell) is still caught by its keys
    flat_index(tmp_path / "other", "flat", 10)
    lines = (tmp_path / "other" / "texts.jsonl").read_text().splitlines(keepends=True)
    lines[2], lines[3] = lines[3], lines[2]  # line 3 is blank: the blank moves
    (tmp_path / "other" / "texts.jsonl").write_text("".join(lines))
    code, _, err = cli("search", "--index", tmp_path / "other", "-q", "x")
    assert code == 2 and "not keyed by the 9 non-blank lines" in err and "rebuild the index" in err


@pytest.mark.parametrize("layout", ["generations", "flat"])
def test_a_reader_whose_generation_is_removed_while_it_reads_starts_over(tmp_path, monkeypatch, layout):
    """index.json is read once; when two writes go by between that and the reading of the data
    files (so the generation it named is gone), the reader reads index.json again and the
    generation it names now, whole."""
    from bertkit.embeddings import index_folder

    folder = tmp_path / "idx"
    (flat_index if layout == "flat" else build)(folder, "g1", 20)
    real, seen = index_folder.read_texts, []

    def two_writes_meanwhile(generation, info):
        seen.append(generation.number)
        if len(seen) == 1:
            monkeypatch.setattr(index_folder, "read_texts", real)  # the writers read as usual
            add(folder, "g1", 4)
            add(folder, "g1", 4)  # the generation read first is removed now
            monkeypatch.setattr(index_folder, "read_texts", two_writes_meanwhile)
        return real(generation, info)

    monkeypatch.setattr(index_folder, "read_texts", two_writes_meanwhile)
    loaded = index_folder.load(folder)
    first = 0 if layout == "flat" else 1
    assert seen == [first, first + 2] and loaded.generation.number == first + 2
    assert len(loaded.texts) == loaded.info["lines"] == 28 and loaded.vectors.ntotal == loaded.info["count"]
    monkeypatch.setattr(index_folder, "read_texts", real)
    assert check_search(folder) == ("g1", 24)


# ---------------------------------------------------------------- damage


def damage_cases(folder: Path, outside: Path) -> list:
    """(what is done to the index, what the error says): to its index.json (as a script editing it
    by hand would), to the generation it names, to the files of that generation."""
    generation = generation_of(folder)
    info = json.loads((folder / "index.json").read_text())

    def edit_info(**changes):
        def apply():
            (folder / "index.json").write_text(json.dumps({**info, **changes}))

        return apply

    def without(key):
        return lambda: (folder / "index.json").write_text(json.dumps({k: v for k, v in info.items() if k != key}))

    def edit_lines(change):
        def apply():
            lines = (generation / "texts.jsonl").read_text().splitlines(keepends=True)
            change(lines)
            (generation / "texts.jsonl").write_text("".join(lines))

        return apply

    def swap(lines):
        lines[0], lines[1] = lines[1], lines[0]

    def put(number, text):
        return lambda lines: lines.__setitem__(number, text)

    def linked_elsewhere():  # the generation's folder a link to a copy elsewhere
        shutil.copytree(generation, outside)
        shutil.rmtree(generation)
        generation.symlink_to(outside)

    def file_linked_elsewhere():
        shutil.copy(generation / "texts.jsonl", outside)
        (generation / "texts.jsonl").unlink()
        (generation / "texts.jsonl").symlink_to(outside)

    def generation_a_file():
        shutil.rmtree(generation)
        generation.write_text("x")

    def info_linked_elsewhere():  # the same index.json, elsewhere: a rebuild must not write there
        outside.write_bytes((folder / "index.json").read_bytes())
        (folder / "index.json").unlink()
        (folder / "index.json").symlink_to(outside)

    texts, name = "texts.jsonl", generation.name
    named = "'generation' names"
    odd = "not the name of a generation folder beside it"
    return [
        (edit_lines(put(4, "{not json\n")), f"{texts}:5: is not a JSON string"),
        (edit_lines(put(1, "17\n")), f"{texts}:2: holds 17, not a JSON string"),
        (edit_lines(put(1, '["a", "b"]\n')), f"{texts}:2: holds"),
        (edit_lines(put(1, '"g1 line 0 edited"\n')), "edited, reordered or replaced by hand"),
        (edit_lines(swap), "edited, reordered or replaced by hand"),
        (edit_lines(lambda lines: lines.pop()), "holds 19 lines, not the 20"),
        (edit_lines(lambda lines: lines.__setitem__(-1, lines[-1].rstrip("\n"))), ":20: is cut short"),
        (
            lambda: (generation / texts).write_bytes((generation / texts).read_bytes().replace(b"line 5", b"\xff")),
            f"{texts}:6: is not UTF-8 text",
        ),  # fmt: skip
        (edit_info(dimension="16"), "index.json: 'dimension' is \"16\", not a whole number"),
        (edit_info(count=-1), "'count' is -1, below 0"),
        (edit_info(lines=None), "'lines' is null, not a whole number"),
        (edit_info(settings={**info["settings"], "normalize": "yes"}), "'settings.normalize' is \"yes\""),
        (edit_info(settings={**info["settings"], "pooling": "median"}), "'settings.pooling' is 'median'"),
        (edit_info(settings={**info["settings"], "max_length": 0}), "'settings.max_length' is 0, below 1"),
        (edit_info(ann={**info["ann"], "ef_search": 9.5}), "'ann.ef_search' is 9.5, not a whole number"),
        (edit_info(corpora="all"), "'corpora' is \"all\", not a list"),
        (edit_info(corpora=[{**info["corpora"][0], "first": 3}]), "'corpora[0].first' is 3"),
        (
            edit_info(count=info["count"] + 1, corpora=[{**info["corpora"][0], "texts": info["count"] + 1}]),
            "holds 17 vectors, not the 18",
        ),  # fmt: skip
        (edit_info(model=["a"]), "'model' is [\"a\"], not text"),
        (edit_info(texts_sha256="abc"), "'texts_sha256' is not a SHA-256 checksum"),
        # format 2 always has its checksums: without them, texts reordered by hand would pair with other vectors
        (without("texts_sha256"), "index.json: lacks 'texts_sha256'"),
        (without("vectors_sha256"), "index.json: lacks 'vectors_sha256'"),
        (lambda: (without("texts_sha256")(), edit_lines(swap)()), "lacks 'texts_sha256'"),
        # numbers in their ranges: what FAISS keeps in a C int, what bertkit writes
        (edit_info(ann={**info["ann"], "ef_search": 2**31}), "'ann.ef_search' is 2147483648, above 100,000"),
        (edit_info(ann={**info["ann"], "ef_search": 0}), "'ann.ef_search' is 0, below 1"),
        (edit_info(ann={**info["ann"], "m": 2**40}), "'ann.m' is 1099511627776, above"),
        (edit_info(ann={**info["ann"], "rescore": float("nan")}), "'ann.rescore' is nan, not a finite number"),
        (edit_info(ann={**info["ann"], "rescore": float("inf")}), "'ann.rescore' is inf, not a finite number"),
        (edit_info(ann={**info["ann"], "rescore": "2"}), "'ann.rescore' is \"2\", not a whole number or a number"),
        (
            lambda: (folder / "index.json").write_text(json.dumps(info).replace('"rescore": 2', '"rescore": 1e999')),
            "'ann.rescore' is inf",
        ),  # fmt: skip
        (edit_info(ann={**info["ann"], "kind": "hnsw"}), "'ann.kind' is \"hnsw\", not one of"),
        (
            edit_info(ann={**info["ann"], "kind": "HNSW"}),
            "an index of kind HNSW-SQ8, where index.json's 'ann.kind' says HNSW",
        ),
        (edit_info(ann={**info["ann"], "kind": "IVF-PQ4FS", "lists": 4, "probes": 1}), "'ann.kind' says IVF-PQ4FS"),
        (
            edit_info(settings={**info["settings"], "max_length": 10**12}),
            "'settings.max_length' is 1000000000000, above",
        ),
        (edit_info(dimension=10**12), "'dimension' is 1000000000000, above"),
        (edit_info(metric="l2"), "'metric' is \"l2\", not cosine"),
        (edit_info(extra=[1, float("-inf")]), "'extra[1]' is -inf, not a finite number"),
        (edit_info(vectors_sha256=7), "'vectors_sha256' is 7, not text"),
        (edit_info(format="2"), "'format' is \"2\", not a whole number"),
        (edit_info(format=1), "holds 'generation', which an index of format 1"),
        (without("model"), "index.json: lacks 'model'"),
        (lambda: (folder / "index.json").write_text("[1, 2]"), "index.json: is not a JSON object"),
        (lambda: (folder / "index.json").write_text("{not json"), "index.json: is not JSON"),
        (lambda: (folder / "index.json").write_bytes(b""), "index.json: is not JSON"),
        (lambda: ((folder / "index.json").unlink(), (folder / "index.json").mkdir()), "index.json: is not a file"),
        (lambda: ((folder / "index.json").unlink(), os.mkfifo(folder / "index.json")), "index.json: is not a file"),
        (info_linked_elsewhere, "index.json: is a symbolic link"),
        # the generation it names: of the wrong type, not a generation's name, not there, not a folder
        (without("generation"), "index.json: lacks 'generation'"),
        (edit_info(generation=None), "'generation' is null, not text"),
        (edit_info(generation=2), "'generation' is 2, not text"),
        (edit_info(generation=[name]), f"'generation' is [\"{name}\"], not text"),
        (edit_info(generation="../x"), f"'generation' is \"../x\", {odd}"),
        (edit_info(generation=str(generation)), odd),  # an absolute path, even to the right folder
        (edit_info(generation=f"{name}/."), odd),
        (edit_info(generation=f"{name}/../{name}"), odd),
        (edit_info(generation=f"./{name}"), odd),
        (edit_info(generation="gen-000000"), odd),
        (edit_info(generation="gen-1"), odd),
        (edit_info(generation=""), odd),
        (edit_info(generation="gen-" + "9" * 5000), odd),  # more digits than Python turns into a number
        (edit_info(generation="gen-\u0661\u0662\u0663\u0664\u0665\u0666"), odd),  # digits, not ASCII ones
        (edit_info(generation="gen-000009"), f"{named} gen-000009, a folder"),
        (generation_a_file, f"{named} {name}, which is not a folder"),
        (linked_elsewhere, f"{named} {name}, a symbolic link"),
        (file_linked_elsewhere, f"{name}/texts.jsonl: is a symbolic link"),
        (lambda: (generation / texts).unlink(), f"lacks {name}/texts.jsonl"),
        (lambda: (generation / "vectors.faiss").unlink(), f"lacks {name}/vectors.faiss"),
        (lambda: ((generation / texts).unlink(), (generation / texts).mkdir()), f"{texts}: is not a file"),
        (lambda: ((generation / texts).unlink(), os.mkfifo(generation / texts)), f"{texts}: is not a file"),
        (lambda: (generation / "vectors.faiss").write_bytes(b"garbage"), "cannot be read as a FAISS index"),
    ]


def test_a_damaged_index_is_an_error_saying_to_rebuild_it(tmp_path, cli):
    from bertkit.core.errors import BertkitError

    folder = tmp_path / "idx"
    outside = tmp_path / "elsewhere"
    more = index_fakes.corpus(tmp_path, "more", 3, 20)
    for number in range(len(damage_cases(_fresh(folder), outside))):
        _fresh(folder)
        shutil.rmtree(outside, ignore_errors=True)
        outside.unlink(missing_ok=True)
        damage, message = damage_cases(folder, outside)[number]
        damage()
        kept = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
        elsewhere = {p: p.read_bytes() for p in [outside, *outside.rglob("*")] if p.is_file()}
        added = ("index", "add", "--index", folder, "--corpus", more)
        for args in (("search", "--index", folder, "-q", "film"), added):
            code, _, err = cli(*args)
            flat = " ".join(err.split())
            assert code == 2 and message in flat and "rebuild the index" in flat, (args[0], message, err)
            assert "Traceback" not in err
        assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == kept  # add left it as it was
        try:
            build(folder, "g2", 20)  # index build --overwrite rebuilds it...
        except BertkitError as err:  # ...unless it holds what bertkit did not write (a link, a file)
            assert "holds files bertkit did not write" in str(err), (message, err)
        else:
            assert check_search(folder) == ("g2", 17), message
            tidy(folder)
        assert {p: p.read_bytes() for p in [outside, *outside.rglob("*")] if p.is_file()} == elsewhere, message


def _fresh(folder: Path) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    build(folder, "g1", 20)
    return folder


def test_another_index_files_swapped_in_is_caught(tmp_path, cli):
    build(tmp_path / "a", "g1", 20)
    build(tmp_path / "b", "g2", 20)  # same size, other texts and vectors
    a, b = generation_of(tmp_path / "a"), generation_of(tmp_path / "b")
    (a / "vectors.faiss").write_bytes((b / "vectors.faiss").read_bytes())
    code, _, err = cli("search", "--index", tmp_path / "a", "-q", "x")
    assert code == 2 and "vectors.faiss: it is not the file the index was built with" in " ".join(err.split())


def test_the_fake_encoder_builds_real_indexes(tmp_path):
    assert FakeEncoder().encode(["a", "b"]).shape == (2, index_fakes.DIMENSION)
    build(tmp_path / "idx", "g1", 20)
    assert check_search(tmp_path / "idx") == ("g1", 17)


# ---------------------------------------------------------------- published directories


PUBLISH = """
import os, sys, types
from pathlib import Path
from bertkit.core.outputs import dirs

point, final = sys.argv[1], Path(sys.argv[2])

def die(*args, **kwargs):
    os._exit(9)

if point == "before the exchange":
    dirs.exchange_dirs = die
elif point == "after the exchange":
    dirs.shutil = types.SimpleNamespace(rmtree=die)
elif point == "between the renames":  # a file system that cannot exchange two directories
    dirs.exchange_dirs = lambda first, second: False
    real = Path.rename
    Path.rename = lambda self, target: die() if self.name.startswith(".out.tmp-") else real(self, target)
staged = dirs.staging_dir(final)
(staged / "weights.bin").write_text("new")
dirs.publish_dir(staged, final, True, "bundle")
os._exit(0)
"""


@pytest.mark.spawns
@pytest.mark.parametrize(
    "point, seen",
    [("before the exchange", "old"), ("after the exchange", "new"), ("between the renames", None), ("", "new")],
)
def test_a_run_killed_while_replacing_a_directory_leaves_one_whole(tmp_path, point, seen):
    from bertkit.core import outputs
    from bertkit.core.errors import BertkitError

    final = tmp_path / "out"
    with outputs.staged_dir(final, False, "bundle") as staged:
        (staged / "weights.bin").write_text("old")
    done = run_child(PUBLISH, point, final)
    assert done.returncode == (0 if not point else 9), done.stderr
    if seen is not None:  # replaced in one step: the name always holds a whole directory
        assert (final / "weights.bin").read_text() == seen
    else:  # moved aside, not yet replaced: the next run that looks at it puts it back
        assert not final.exists() and [p for p in tmp_path.iterdir() if p.name.startswith(".out.old-")]
        with pytest.raises(BertkitError, match="already exists"):
            outputs.check_output_dir(final, False)
        assert (final / "weights.bin").read_text() == "old"
    with outputs.staged_dir(final, True, "bundle") as staged:  # the next write, and what it sweeps
        (staged / "weights.bin").write_text("newer")
    assert (final / "weights.bin").read_text() == "newer"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.spawns
def test_a_bundle_killed_between_the_renames_is_put_back_by_the_next_run(tmp_path, tiny_model, cli):
    out = tmp_path / "out"
    made = ("model", "tiny", "--from", tiny_model, "-o", out, "--layers", "1", "--hidden", "32", "--heads", "2")
    assert cli(*made)[0] == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    child = """
import os, sys
from pathlib import Path
from bertkit.core.outputs import dirs
dirs.exchange_dirs = lambda first, second: False
real = Path.rename
Path.rename = lambda self, target: os._exit(9) if self.name.startswith(".out.tmp-") else real(self, target)
from bertkit.cli import main
main(sys.argv[1:])
"""
    done = run_child(child, *made, "--seed", "1", "--overwrite")
    assert done.returncode == 9 and not out.exists(), done.stderr
    code, _, err = cli(*made)  # no --overwrite: the old model is back, so it is refused
    assert code == 2 and "already exists" in err and "put back" in " ".join(err.split())
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert cli(*made, "--seed", "1", "--overwrite")[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_bundle_replaced_while_a_command_reads_it_is_not_mixed(tmp_path, tiny_model):
    """The name always holds a whole bundle; a command that opened the old one and reads its files
    one by one after the new one was published stops, rather than run a mixture of the two."""
    import shutil

    from bertkit.core import outputs
    from bertkit.core.errors import BertkitError
    from bertkit.tasks.bundle import open_bundle

    final = tmp_path / "bundle"
    for _ in range(2):
        with outputs.staged_dir(final, True, "bundle") as staged:
            shutil.copytree(tiny_model, staged, dirs_exist_ok=True)
            (staged / "bertkit.json").write_text(json.dumps({"task": "embed", "pooling": "mean", "max_length": 32}))
        if not _:
            opened = open_bundle(str(final))
    for load in (opened.load_tokenizer, lambda: opened.load_model("AutoModel")):
        with pytest.raises(BertkitError, match="was replaced while it was being read"):
            load()
    again = open_bundle(str(final))  # opened afresh: the new one, whole
    assert again.load_tokenizer() is not None and again.load_model("AutoModel") is not None


def test_a_model_replaced_while_an_encoder_loads_it_is_not_mixed(tmp_path, tiny_model, monkeypatch):
    """The same for the encoder of `embed`, `similarity` and `search`: the tokenizer is read after
    the weights, and a model published over the folder in between is noticed."""
    import shutil

    from bertkit.core import outputs, tokenization
    from bertkit.core.errors import BertkitError
    from bertkit.tasks.embed import encoder
    from bertkit.tasks.embed.encoder import load_encoder

    final = tmp_path / "model"

    def publish():
        with outputs.staged_dir(final, True, "bundle") as staged:
            shutil.copytree(tiny_model, staged, dirs_exist_ok=True)

    publish()
    real = tokenization.load_tokenizer

    def replaced_meanwhile(*args, **kwargs):
        publish()  # another run's --overwrite, between the weights and the tokenizer
        return real(*args, **kwargs)

    monkeypatch.setattr(encoder, "load_tokenizer", replaced_meanwhile)
    with pytest.raises(BertkitError, match="was replaced while it was being read"):
        load_encoder(str(final), "mean")
    monkeypatch.setattr(encoder, "load_tokenizer", real)
    assert load_encoder(str(final), "mean").dimension == 64


# ---------------------------------------------------------------- options in range, links refused before any work


@pytest.mark.parametrize(
    "args",
    [
        ("search", "--index", "{idx}", "-q", "x", "--ef-search", "3000000000"),
        ("search", "--index", "{idx}", "-q", "x", "--probes", "3000000000"),
        ("index", "build", "-m", "m", "--corpus", "{corpus}", "-o", "{tmp}/b", "--ef-search", "2147483648"),
        ("index", "build", "-m", "m", "--corpus", "{corpus}", "-o", "{tmp}/b", "--links", "100000"),
        ("index", "build", "-m", "m", "--corpus", "{corpus}", "-o", "{tmp}/b", "--ef-construction", "9999999999"),
        ("index", "build", "-m", "m", "--corpus", "{corpus}", "-o", "{tmp}/b", "--lists", "9999999999"),
        ("index", "build", "-m", "m", "--corpus", "{corpus}", "-o", "{tmp}/b", "--probes", "9999999999"),
    ],
)
def test_a_number_faiss_cannot_hold_is_refused_naming_the_option_and_its_limit(tmp_path, cli, args):
    from bertkit.embeddings import ann_params

    folder = tmp_path / "idx"
    build(folder, "g1", 20)
    source = index_fakes.corpus(tmp_path, "c", 5)
    asked = [a.format(idx=folder, corpus=source, tmp=tmp_path) for a in args]
    code, _, err = cli(*asked)
    option = next(a for a in asked if a.startswith("--") and a.lstrip("-") in ("ef-search", "probes", "links",
                  "ef-construction", "lists"))  # fmt: skip
    flat = " ".join(err.split())
    limit = ann_params.LIMITS[{"links": "m"}.get(option[2:], option[2:].replace("-", "_"))]
    assert code == 2 and option in flat and str(limit) in flat.replace(",", ""), err
    assert "Traceback" not in err and not (tmp_path / "b").exists()


def test_index_add_through_a_link_is_refused_before_the_model_loads(tmp_path, cli, monkeypatch):
    folder = tmp_path / "idx"
    build(folder, "g1", 20)
    link = tmp_path / "lnk"
    link.symlink_to(folder)
    kept = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded before the index was checked")

    monkeypatch.setattr("bertkit.embeddings.index.index_encoder", no_model)
    more = index_fakes.corpus(tmp_path, "more", 3, 20)
    code, _, err = cli("index", "add", "--index", link, "--corpus", more)
    flat = " ".join(err.split())
    assert code == 2 and f"--index {link} is a symbolic link to {folder}" in flat, err
    assert f"give --index {folder}" in flat and "--overwrite" not in flat
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == kept
    monkeypatch.setattr("bertkit.embeddings.index.index_encoder", lambda *args, **kwargs: FakeEncoder())
    assert check_search(link) == ("g1", 17)  # reading through the link is fine
    assert cli("index", "add", "--index", folder, "--corpus", more)[0] == 0
    # index build --overwrite through the link: refused up front too, naming the folder to give
    monkeypatch.setattr("bertkit.embeddings.index._build", no_model)
    code, _, err = cli("index", "build", "-m", "m", "--corpus", more, "-o", link, "--overwrite")
    flat = " ".join(err.split())
    assert code == 2 and f"--output {link} is a symbolic link to {folder}" in flat and f"give --output {folder}" in flat
