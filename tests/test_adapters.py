"""LoRA adapters, the fast parts: which layers `auto` adapts in each family (tiny models built from
their config classes), the base model's hash and its checks, and the configs refused."""

from __future__ import annotations

import json
import sys

import pytest

from bertkit.core.errors import BertkitError

# per family: (config class, its sizes, what auto adapts in one layer, the head trained in full)
FAMILIES = {
    # BERT's and ALBERT's classifiers read [CLS] through the base's pooler: trained with the head
    "bert": ("BertConfig", {}, 6, ["classifier", "bert.pooler"]),
    "roberta": ("RobertaConfig", {}, 6, ["classifier"]),
    "xlm-roberta": ("XLMRobertaConfig", {}, 6, ["classifier"]),
    "electra": ("ElectraConfig", {}, 6, ["classifier"]),
    "distilbert": ("DistilBertConfig", {"dim": 32, "n_layers": 2, "n_heads": 2, "hidden_dim": 64}, 6, None),
    "deberta-v2": ("DebertaV2Config", {}, 6, ["pooler", "classifier"]),
    "albert": ("AlbertConfig", {"embedding_size": 16}, 6, ["classifier", "albert.pooler"]),
    "mpnet": ("MPNetConfig", {}, 6, ["classifier"]),
    "modernbert": (
        "ModernBertConfig",
        {"pad_token_id": 0, "eos_token_id": 1, "bos_token_id": 2, "cls_token_id": 2, "sep_token_id": 1},
        4,
        ["head", "classifier"],
    ),
}
SIZES = {
    "vocab_size": 100,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
}


def tiny(family: str, auto_class: str = "AutoModelForSequenceClassification"):
    import transformers

    from bertkit.core.models import quiet_transformers

    quiet_transformers()
    name, extra, _, _ = FAMILIES[family]
    sizes = {"vocab_size": 100} if family == "distilbert" else dict(SIZES)
    config = getattr(transformers, name)(**sizes, **extra)
    return getattr(transformers, auto_class).from_config(config)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_auto_targets_each_familys_attention_and_feed_forward(family):
    from bertkit.core.adapters.targets import FAMILY_TARGETS, head_modules, target_modules

    model = tiny(family)
    chosen, endings = target_modules(model, "auto")
    per_layer = FAMILIES[family][2]
    # ALBERT shares one layer's weights across the depth: one set of projections whatever the depth
    layers = 1 if family == "albert" else 2
    assert len(chosen) == per_layer * layers, chosen
    assert endings == list(FAMILY_TARGETS[family])
    prefix = model.base_model_prefix + "."
    assert all(name.startswith(prefix) for name in chosen)  # never the head, never the pooler
    assert not any("pooler" in name or "embeddings_project" in name for name in chosen)
    head = FAMILIES[family][3] or ["pre_classifier", "classifier"]
    assert head_modules(model) == head


def test_auto_on_an_encoder_and_a_token_classifier():
    from bertkit.core.adapters.targets import head_modules, target_modules

    encoder = tiny("bert", "AutoModel")
    assert len(target_modules(encoder, "auto")[0]) == 12 and head_modules(encoder) == []
    tagger = tiny("roberta", "AutoModelForTokenClassification")
    assert head_modules(tagger) == ["classifier"]


def test_target_modules_that_match_nothing_are_refused_naming_the_layers():
    from bertkit.core.adapters.targets import target_modules

    model = tiny("distilbert")
    with pytest.raises(BertkitError) as found:
        target_modules(model, ["query", "value"])
    message = str(found.value)
    assert "train.adapter.target_modules" in message and "query, value" in message
    assert "attention.q_lin" in message  # what the family has instead
    chosen, _ = target_modules(model, ["q_lin", "v_lin"])
    assert len(chosen) == 4
    with pytest.raises(BertkitError, match="lin9"):  # one of several that matches nothing
        target_modules(model, ["q_lin", "lin9"])


@pytest.mark.parametrize("empty", ["[]", "['']"])
def test_an_empty_target_list_is_refused_by_the_config(tmp_path, empty):
    with pytest.raises(BertkitError, match="target_modules: an empty list adapts no layer"):
        _config(tmp_path, "classify", f"{{adapter: {{kind: lora, target_modules: {empty}}}}}")


def _folder(tmp_path, name: str, seed: int):
    import torch

    torch.manual_seed(seed)
    model = tiny("bert", "AutoModel")
    model.save_pretrained(tmp_path / name)
    return tmp_path / name


def test_base_hash_finds_the_base_and_refuses_a_different_or_missing_one(tmp_path):
    from bertkit.core.adapters.base import describe_base, find_base, weights_hash

    base = _folder(tmp_path, "base", 0)
    record = describe_base(str(base), str(base))
    assert record["base_hash"] == weights_hash(str(base)) and record["base_hash"].startswith("sha256:")
    assert find_base(tmp_path / "bundle", record) == str(base)
    other = _folder(tmp_path, "other", 1)
    assert weights_hash(str(other)) != record["base_hash"]
    (base / "model.safetensors").write_bytes((other / "model.safetensors").read_bytes())  # replaced in place
    with pytest.raises(BertkitError, match="is a different one"):
        find_base(tmp_path / "bundle", record)
    (base / "model.safetensors").unlink()
    (base / "config.json").unlink()
    with pytest.raises(BertkitError, match=r"adapter of the base model .*which is not here") as refused:
        find_base(tmp_path / "bundle", record)
    assert f"at {base}, or run" in str(refused.value)  # the place said once (its name is its path here)


def test_a_hub_base_is_hashed_and_found_at_the_commit_it_was_trained_on(tmp_path, monkeypatch):
    """model.revision pinned to an older commit than the cache's main: the hash was taken of main's
    weights, the adapter then found main again, and ran on weights it was never trained on."""
    import huggingface_hub.constants

    from bertkit.core.adapters.base import describe_base, find_base, weights_hash

    repo = tmp_path / "cache" / "models--tiny--bert"
    old, new = _folder(repo / "snapshots", "aaaa1111", 0), _folder(repo / "snapshots", "bbbb2222", 1)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("bbbb2222")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    pinned = describe_base("tiny/bert", "tiny/bert", "aaaa1111")
    assert pinned["base_revision"] == "aaaa1111" and pinned["base_hash"] == weights_hash(str(old))
    assert find_base(tmp_path / "bundle", pinned) == str(old)
    latest = describe_base("tiny/bert", "tiny/bert")  # main, recorded as the commit it was then
    assert latest["base_revision"] == "bbbb2222" and latest["base_hash"] == weights_hash(str(new))
    (repo / "refs" / "main").write_text("aaaa1111")  # main moves back: the adapter keeps its commit
    assert find_base(tmp_path / "bundle", latest) == str(new)


def test_the_base_is_found_at_its_name_when_its_recorded_folder_holds_another(tmp_path, monkeypatch):
    """A base named by a relative path, copied beside a run elsewhere: the folder it was read from
    now holds another model, and the name, read where the command runs, holds the base."""
    from bertkit.core.adapters.base import describe_base, find_base

    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    base = _folder(first, "base", 0)
    monkeypatch.chdir(first)
    record = describe_base("base", "base")
    assert record["base_path"] == str(base.resolve())
    copy = _folder(second, "base", 0)  # the same weights (same seed) beside the second run
    _folder(first, "base", 1)  # and another model where the first run read it
    monkeypatch.chdir(second)
    assert find_base(tmp_path / "bundle", record) == "base"
    assert copy.is_dir()


def test_an_adapter_bundle_is_not_a_base(tmp_path):
    from bertkit.core.adapters.base import describe_base

    bundle = tmp_path / "adapter"
    bundle.mkdir()
    (bundle / "adapter_config.json").write_text("{}")
    (bundle / "bertkit.json").write_text(json.dumps({"task": "classify", "adapter": {"r": 8}}))
    with pytest.raises(BertkitError, match="adapter merge"):
        describe_base(str(bundle), str(bundle))


def _config(tmp_path, task: str, train: str, extra: str = "", model: str = "some/model"):
    path = tmp_path / "run.yaml"
    path.write_text(f"task: {task}\nmodel: {{name: {model}}}\ndata: {{train: x.csv}}\ntrain: {train}\n{extra}")
    from bertkit.config import load_config

    return load_config(str(path))


@pytest.mark.parametrize("task", ["mlm-adapt", "distill", "rerank"])
def test_tasks_that_take_no_adapter_are_refused(tmp_path, task):
    extra = "distill: {teacher: t}\n" if task == "distill" else ""
    with pytest.raises(BertkitError, match=rf"train.adapter.*{task} task takes no adapter"):
        _config(tmp_path, task, "{adapter: {r: 8}}", extra)


def test_adapter_settings_refused_with_random_init_or_frozen_layers(tmp_path):
    with pytest.raises(BertkitError, match="freeze_layers"):
        _config(tmp_path, "ner", "{adapter: {}, freeze_layers: 2}")
    with pytest.raises(BertkitError, match="random_init"):
        path = tmp_path / "r.yaml"
        path.write_text(
            "task: classify\nmodel: {name: m, random_init: true}\ndata: {train: x.csv}\ntrain: {adapter: {}}\n"
        )
        from bertkit.config import load_config

        load_config(str(path))
    with pytest.raises(BertkitError, match="r"):
        _config(tmp_path, "classify", "{adapter: {r: 0}}")


def test_an_adapter_learns_at_its_measured_rate_unless_one_is_given(tmp_path):
    from bertkit.core.learning_rates import ADAPTER_RATES

    # the measured points (docs/benchmarks.md "LoRA adapters"): 4e-3 for 100 steps, near 2e-3 for 300
    assert ADAPTER_RATES.base * ADAPTER_RATES.factor(100) == pytest.approx(4.0e-3)
    assert ADAPTER_RATES.base * ADAPTER_RATES.factor(300) == pytest.approx(2.31e-3, rel=1e-2)
    assert ADAPTER_RATES.base * ADAPTER_RATES.factor(5000) == pytest.approx(2.0e-3)
    for task in ("classify", "ner", "qa", "embed"):
        cfg = _config(tmp_path, task, "{adapter: {kind: lora}}")
        assert cfg.train.learning_rate == "auto" and cfg.rate_rule() is ADAPTER_RATES and cfg.train.adapter.r == 8
        assert cfg.train.adapter.target_modules == "auto"
    assert _config(tmp_path, "classify", "{adapter: {}, learning_rate: 1.0e-4}").train.learning_rate == 1.0e-4
    assert _config(tmp_path, "classify", "{epochs: 1}").train.learning_rate == "auto"  # no adapter: as before


def test_without_peft_the_error_says_what_to_install(monkeypatch):
    from bertkit.core.adapters import require_peft

    monkeypatch.setitem(sys.modules, "peft", None)
    with pytest.raises(BertkitError, match=r"pip install -e '\.\[adapters\]'"):
        require_peft()


def test_merging_a_whole_model_is_refused(tmp_path, cli):
    base = _folder(tmp_path, "base", 0)
    code, _, err = cli("adapter", "merge", "-m", base, "-o", tmp_path / "merged")
    assert code == 2 and "not an adapter" in err


def test_a_rank_as_wide_as_the_layers_is_warned(capsys, monkeypatch):
    """r 128 on layers 32 wide trained more parameters than the layers have, without a word."""
    from types import SimpleNamespace

    from bertkit.core.adapters import training

    monkeypatch.setattr(training, "describe_base", lambda *args: {})  # no base folder to hash here
    for rank, warned in ((32, True), (8, False)):
        settings = SimpleNamespace(kind="lora", r=rank, alpha=16, dropout=0.0, target_modules="auto")
        model = tiny("bert")
        training.attach(model, model, settings, "tiny", "tiny")
        said = " ".join(capsys.readouterr().err.split())
        assert ("train.adapter.r 32 is not below the width of the narrowest adapted layer (32)" in said) == warned, said
