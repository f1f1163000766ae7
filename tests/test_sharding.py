"""The pieces of sharded predict / embed / evaluate that need no launcher: where a process stands,
how units are dealt, and how rank 0 puts the parts back in input order."""

import pytest

from bertkit.core import sharding
from bertkit.core.data.records import Blank, Record
from bertkit.core.errors import BertkitError
from bertkit.prediction import aligned, units
from bertkit.tasks.contract import Prediction
from bertkit.tasks.contract.options import PredictOptions


def test_place_from_the_launchers_environment(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert sharding.place() is None and sharding.is_main() and sharding.local_rank() is None
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert sharding.place() is None
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "5")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("RANK", "3")
    here = sharding.place()
    assert (here.rank, here.size, here.local_rank, here.main) == (3, 4, 1, False)
    assert [u for u in range(10) if here.owns(u)] == [3, 7]
    assert not sharding.is_main()
    monkeypatch.setenv("RANK", "4")
    with pytest.raises(BertkitError, match="RANK=4 with WORLD_SIZE=4"):
        sharding.place()
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(BertkitError, match="WORLD_SIZE='two': expected a whole number"):
        sharding.place()


def test_streams_are_refused_under_a_launcher():
    with pytest.raises(BertkitError, match="give --input FILE, not - "):
        sharding.refuse_streams("-", "out.jsonl", "predict")
    with pytest.raises(BertkitError, match="give --output FILE"):
        sharding.refuse_streams("in.txt", None, "embed")
    sharding.refuse_streams("in.txt", "out.jsonl", "predict")


def test_a_gpu_named_without_its_number_is_the_processs_own(monkeypatch):
    import torch

    from bertkit.core.inference import pick_device

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert pick_device("cpu") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert pick_device(None) == torch.device("cuda", 1)
    assert pick_device("cuda") == torch.device("cuda", 1)
    assert pick_device("cuda:0") == torch.device("cuda", 0)  # a number given is kept
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(BertkitError, match="LOCAL_RANK=1 but this machine has 1 CUDA GPU"):
        pick_device(None)


class EchoPrediction(Prediction):
    """Predicts the upper-cased text, two records per pass; remembers the chunks it was given."""

    records_per_pass = 2

    def __init__(self):
        self.chunks = []

    def is_empty(self, record, info, options):
        return not record.get("text", "").strip()

    def gold_fields(self, info):
        return []

    def predict(self, model, tokenizer, info, records, options):
        from bertkit.core.inference import chunks

        for chunk in chunks(records, self.records_per_pass):
            self.chunks.append([r["text"] for r in chunk])
            yield from ({"text": r["text"].upper()} for r in chunk)

    def empty_result(self, model, record, info, options):
        like = record.like if isinstance(record, Blank) else record
        return {"text": None, "empty": True, "like": like and like.get("text")}


class EchoTask:
    """A task with the prediction part above alone (what sharded prediction reads of a task)."""

    name = "echo"

    def __init__(self):
        self.prediction = EchoPrediction()
        self.chunks = self.prediction.chunks


def _records() -> list:
    texts = ["", "a", " ", "b", "c", "", "d", "e", "f", "", ""]
    return [Blank() if t == "" else Record(text=t) for t in texts]


@pytest.mark.parametrize("size", [2, 3, 5])
def test_the_ranks_units_put_back_in_order_are_what_one_process_gives(size):
    alone = EchoTask()
    expected = list(aligned(alone, None, None, {}, _records(), PredictOptions()))
    parts, chunks = [], []
    for rank in range(size):
        here = sharding.Place(rank, size, rank)
        task = EchoTask()
        parts.append(list(units(task, None, None, {}, _records(), PredictOptions(), here.owns)))
        assert all(here.owns(unit) for unit, _ in parts[-1])
        chunks += task.chunks
    # every rank ran whole chunks of the single run, so the same batches
    assert sorted(chunks) == sorted(alone.chunks)
    merged = [result for unit in range(10) for part in parts for u, result in part if u == unit]
    assert merged == expected
    # a blank line takes the input's first record's shape on whichever rank it falls
    assert [r.get("like") for r in merged if r.get("empty")] == ["a", " ", "a", "a", "a"]


def test_parts_are_merged_in_unit_order(tmp_path):
    size = 3
    shards = [sharding.Shards(sharding.Place(rank, size, rank), tmp_path) for rank in range(size)]
    for unit in range(8):
        for item in range(unit % 3 + 1):  # units of different lengths
            shards[unit % size].add(unit, (unit, item))
    for part in shards:
        part.close()
    assert list(shards[0].merged()) == [(u, i) for u in range(8) for i in range(u % 3 + 1)]
    # a part that is not this run's (a unit where another rank's should be) is a bug, not a reorder
    (tmp_path / "part-1").write_bytes((tmp_path / "part-2").read_bytes())
    with pytest.raises(RuntimeError, match="unit 1 missing from part-1"):
        list(shards[0].merged())
