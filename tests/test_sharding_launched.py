"""predict, embed and evaluate as two CPU processes (gloo) through torchrun and accelerate launch:
the one output is byte for byte what one process writes, and a process that fails, dies or hangs
ends the run with an error, no output and no parts left behind."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.launch import BIN, free_port
from helpers.tiny import sentence

pytestmark = pytest.mark.slow

LAUNCHERS = {
    "torchrun": [str(BIN / "torchrun"), "--nproc_per_node", "2", "--master_port", "PORT"],
    "accelerate": [
        str(BIN / "accelerate"),
        "launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--main_process_port",
        "PORT",
    ],
}


def environment(**extra) -> dict:
    # one thread a process, alone or launched: the same kernels, so the same bits
    return {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", **extra}


def bertkit(*args, launcher: str | None = None, **extra) -> subprocess.CompletedProcess:
    """`bertkit ARGS` as one process, or as two through `launcher`."""
    start = [sys.executable]
    if launcher:
        start = [str(free_port()) if part == "PORT" else part for part in LAUNCHERS[launcher]]
    command = [*start, "-m", "bertkit", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, env=environment(**extra), timeout=300)


@pytest.fixture
def alone(cli):
    """`bertkit ARGS` in this process, with one thread as each launched process has: the reference."""
    import torch

    def run(*args):
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            code, out, err = cli(*args)
        finally:
            torch.set_num_threads(threads)
        assert code == 0, err[-3000:]

    return run


def ok(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name)


@pytest.fixture(scope="module")
def texts(tmp_path_factory) -> Path:
    """2,600 lines, blank ones among them: three of classify's 1,024-record units."""
    rng = random.Random(3)
    lines = [
        "" if i % 97 == 5 else sentence(rng, rng.choice(["positive", "negative"])) * (1 + i % 3) for i in range(2600)
    ]
    path = tmp_path_factory.mktemp("texts") / "texts.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


# Each launcher runs each command once: torchrun writes NER's JSON lines, embed's .npy and
# evaluate's classify scores; accelerate predict's CSV and evaluate's NER scores. (torchrun's
# classify predict and accelerate's embed, run here before, added nothing: 14 s of processes.)
@pytest.mark.parametrize(("launcher", "suffix"), [("accelerate", "csv")])
def test_predict_classify_is_what_one_process_writes(launcher, suffix, alone, classify_bundle, texts, tmp_path):
    alone("predict", "-m", classify_bundle, "-i", texts, "-o", tmp_path / f"one.{suffix}")
    result = ok(
        bertkit("predict", "-m", classify_bundle, "-i", texts, "-o", tmp_path / f"two.{suffix}", launcher=launcher)
    )
    assert (tmp_path / f"two.{suffix}").read_bytes() == (tmp_path / f"one.{suffix}").read_bytes()
    # rank 0 speaks for both
    assert (result.stdout + result.stderr).count("2,600 predictions written to") == 1
    assert leftovers(tmp_path) == []


def test_predict_ner_is_what_one_process_writes(alone, head_models, tmp_path):
    rng = random.Random(4)
    words = "Anna went to Paris and Berlin with Tom on Monday".split()
    lines = ["" if i % 50 == 7 else " ".join(rng.sample(words, 6)) for i in range(1100)]  # 3 units of 512
    source = tmp_path / "sentences.txt"
    source.write_text("\n".join(lines) + "\n")
    alone("predict", "-m", head_models["ner"], "-i", source, "-o", tmp_path / "one.jsonl")
    ok(bertkit("predict", "-m", head_models["ner"], "-i", source, "-o", tmp_path / "two.jsonl", launcher="torchrun"))
    one = (tmp_path / "one.jsonl").read_bytes()
    assert (tmp_path / "two.jsonl").read_bytes() == one and one.count(b"\n") == 1100


@pytest.mark.parametrize(("launcher", "suffix"), [("torchrun", "npy")])
def test_embed_is_what_one_process_writes(launcher, suffix, alone, tiny_model, texts, tmp_path):
    source = tmp_path / "more.txt"
    source.write_text(texts.read_text() * 2)  # 5,200 lines: two of embed's 4,096-line units
    alone("embed", "-m", tiny_model, "-i", source, "-o", tmp_path / f"one.{suffix}")
    ok(bertkit("embed", "-m", tiny_model, "-i", source, "-o", tmp_path / f"two.{suffix}", launcher=launcher))
    assert (tmp_path / f"two.{suffix}").read_bytes() == (tmp_path / f"one.{suffix}").read_bytes()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("launcher", ["torchrun", "accelerate"])
def test_evaluate_scores_the_whole_set_once(
    launcher, alone, classify_bundle, head_models, ner_data, easy_data, tmp_path
):
    model, data = (
        (classify_bundle, easy_data["test"]) if launcher == "torchrun" else (head_models["ner"], ner_data["test"])
    )
    alone("evaluate", "-m", model, "-d", data, "-o", tmp_path / "one", "--batch-size", "8")
    result = ok(
        bertkit("evaluate", "-m", model, "-d", data, "-o", tmp_path / "two", "--batch-size", "8", launcher=launcher)
    )
    one = json.loads((tmp_path / "one" / "metrics.json").read_text())
    assert json.loads((tmp_path / "two" / "metrics.json").read_text()) == one
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == sorted(p.name for p in (tmp_path / "one").iterdir())
    assert (result.stdout + result.stderr).count("metrics written to") == 1


def failing_input(tmp_path: Path) -> Path:
    """6,000 JSON lines, one of them (in rank 1's unit) with a list for its text."""
    path = tmp_path / "texts.jsonl"
    with open(path, "w") as handle:
        for i in range(6000):
            handle.write(json.dumps({"text": ["oops"] if i == 5000 else f"text number {i}"}) + "\n")
    return path


def test_a_rank_that_fails_ends_the_run_with_its_message_and_no_output(tiny_model, tmp_path):
    source = failing_input(tmp_path)
    result = bertkit("embed", "-m", tiny_model, "-i", source, "-o", tmp_path / "vectors.npy", launcher="torchrun")
    assert result.returncode != 0
    assert "error (rank 1 of 2): " in result.stderr and "texts.jsonl:5001: 'text' holds a list" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["texts.jsonl"]  # no output, no parts


def by_hand(rank: int, port: int, args: list, **extra) -> subprocess.Popen:
    """One of two processes started without a launcher, so no agent stops the other one."""
    env = environment(
        RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), **extra
    )
    command = [sys.executable, "-m", "bertkit", *map(str, args)]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("how", ["killed", "stopped"])
def test_a_rank_that_dies_or_hangs_does_not_leave_the_other_waiting(how, classify_bundle, texts, tmp_path):
    """Without a launcher to stop the others: rank 1 killed (gloo sees the connection close) or
    frozen (the exchange times out after BERTKIT_DIST_TIMEOUT); rank 0 ends with exit 2."""
    args = ["predict", "-m", classify_bundle, "-i", texts, "-o", tmp_path / "out.jsonl"]
    port = free_port()
    ranks = [by_hand(rank, port, args, BERTKIT_DIST_TIMEOUT="8") for rank in (0, 1)]
    try:
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob(".out.jsonl.tmp-*/part-1")):  # both joined, rank 1 not yet done
            assert time.monotonic() < deadline and ranks[1].poll() is None, ranks[1].stderr.read()[-2000:]
            time.sleep(0.02)
        ranks[1].send_signal(signal.SIGKILL if how == "killed" else signal.SIGSTOP)
        started = time.monotonic()
        _, err = ranks[0].communicate(timeout=120)
        assert ranks[0].returncode == 2, err[-2000:]
        assert "error (rank 0 of 2): another process stopped (or went silent for 8 s)" in err
        assert "Nothing was written." in err
        assert time.monotonic() - started < 60
        assert sorted(p.name for p in tmp_path.iterdir()) == []  # no output, the parts' folder removed
    finally:
        for process in ranks:
            process.kill()
            process.communicate()


def test_a_rank_that_never_comes_is_not_waited_for_forever(classify_bundle, texts, tmp_path):
    port = free_port()
    alone = by_hand(
        0, port, ["predict", "-m", classify_bundle, "-i", texts, "-o", tmp_path / "out.jsonl"], BERTKIT_DIST_TIMEOUT="3"
    )
    _, err = alone.communicate(timeout=120)
    assert alone.returncode == 2
    assert "the 2 processes did not all join within 3 s" in err
    assert list(tmp_path.iterdir()) == []


def test_stdin_and_stdout_are_refused_under_a_launcher(classify_bundle, texts):
    result = bertkit("predict", "-m", classify_bundle, "-i", texts, WORLD_SIZE="2", RANK="0")
    assert result.returncode == 2 and "give --output FILE (not stdout)" in result.stderr
