"""`bertkit tune` without training: the default space of each task, the `tune:` section's
checks, the pruning callback, the per-trial seeding, and the message when Optuna is missing."""

import re
import sys

import pytest

from bertkit.config import load_config
from bertkit.core.errors import BertkitError
from bertkit.core.tune_settings import SearchRange
from bertkit.tasks import registry


def config(tmp_path, text: str, task: str = "classify"):
    path = tmp_path / "run.yaml"
    path.write_text(f"task: {task}\nmodel:\n  name: m\ndata:\n  train: t.csv\n{text}")
    return load_config(path)


def ranges(space: dict) -> dict:
    return {k: (v.choices,) if v.choices is not None else (v.low, v.high, v.log, v.integer) for k, v in space.items()}


@pytest.mark.parametrize("task", ["classify", "ner", "qa", "mlm-adapt", "embed"])
def test_each_task_has_a_default_space_centred_on_its_measured_defaults(tmp_path, task):
    from bertkit.tuning.space import check_space, default_space, space_of

    cfg = config(tmp_path, "", task)
    space = space_of(cfg)
    assert space == default_space(cfg)
    defaults = registry.record(task).defaults
    lr = defaults.get(("train", "learning_rate"), 2.0e-5)
    if lr == "auto":  # the middle of the rule's range: from long runs' rate to short runs' highest
        rule = registry.record(task).learning_rate
        lr = rule.base * rule.max_factor**0.5
    low, high, log, _ = ranges(space)["train.learning_rate"]
    assert log and low == pytest.approx(lr / 4, rel=1e-2) and high == pytest.approx(lr * 4, rel=1e-2)
    batch = defaults.get(("train", "batch_size"), 16)
    assert space["train.batch_size"].choices == [batch // 2, batch, batch * 2]
    assert ranges(space)["train.epochs"] == (1, 5, False, True)  # whole epochs around the default 3
    assert {"train.warmup_ratio", "train.weight_decay"} <= set(space)
    head = defaults.get(("train", "head_learning_rate"))
    if task == "embed":  # no task head of its own
        assert "train.head_learning_rate" not in space
    elif head:
        assert ranges(space)["train.head_learning_rate"][:2] == pytest.approx((head / 4, head * 4), rel=1e-2)
    else:
        assert ranges(space)["train.head_learning_rate"][:2] == pytest.approx((lr / 2, lr * 20))
    check_space(cfg, space)  # every end of every range makes a valid config


def test_the_contrastive_route_searches_its_own_keys(tmp_path):
    # classify on a few examples a label trains by pairs: fine-tuning's rates and epochs do nothing there
    from bertkit.tuning.space import check_space, space_of

    cfg = config(tmp_path, "", "classify")
    space = space_of(cfg, "contrastive")
    assert ranges(space) == {
        "classify.contrastive_learning_rate": (pytest.approx(5e-6), pytest.approx(8e-5), True, False),
        "classify.pair_rounds": (10, 40, False, True),
        "train.batch_size": ([8, 16, 32],),
    }
    check_space(cfg, space)  # every end makes a valid config
    assert space_of(cfg, "finetune") == space_of(cfg)


def test_a_searched_key_the_route_never_reads_is_refused():
    """tune.space over fine-tuning's keys on data that takes the contrastive route ran every trial
    as the same model, and ended saying no parameter made a difference."""
    from bertkit.core.errors import BertkitError
    from bertkit.tuning.space import SearchRange, refuse_unused_keys

    rates = {
        "train.learning_rate": SearchRange(low=1e-5, high=1e-4, log=True),
        "train.batch_size": SearchRange(choices=[8, 16]),
    }
    with pytest.raises(BertkitError, match="contrastive route on this data, which does not read train.learning_rate:"):
        refuse_unused_keys(rates, "contrastive")
    refuse_unused_keys(rates, "finetune")  # fine-tuning reads them
    refuse_unused_keys(rates, None)  # another task: no route
    own = {"classify.pair_rounds": SearchRange(low=5, high=10, step=1)}
    refuse_unused_keys(own, "contrastive")
    with pytest.raises(BertkitError, match="finetune route on this data, which does not read classify.pair_rounds"):
        refuse_unused_keys(own, "finetune")
    refuse_unused_keys({**rates, "classify.strategy": SearchRange(choices=["finetune", "contrastive"])}, "contrastive")
    # the whole encoder frozen: the contrastive route fits its head only, its own keys change nothing
    with pytest.raises(BertkitError, match="whole encoder frozen .* does not read classify.pair_rounds"):
        refuse_unused_keys(own, "contrastive", frozen=True)
    refuse_unused_keys({"model.max_length": SearchRange(choices=[32, 64])}, "contrastive", frozen=True)


def test_the_default_space_follows_the_config_and_a_given_space_replaces_it(tmp_path):
    from bertkit.tuning.space import space_of

    cfg = config(tmp_path, "train:\n  learning_rate: 1.0e-4\n  max_steps: 50\n  epochs: 1\n")
    space = space_of(cfg)
    assert ranges(space)["train.learning_rate"][:2] == pytest.approx((2.5e-5, 4e-4))
    assert "train.epochs" not in space  # max_steps decides the length
    cfg = config(
        tmp_path,
        "tune:\n  space:\n    train.learning_rate: {low: 1.0e-5, high: 1.0e-3, log: true}\n"
        "    train.batch_size: {choices: [16, 32]}\n    train.epochs: {low: 1, high: 4, step: 1}\n",
    )
    assert ranges(space_of(cfg)) == {
        "train.learning_rate": (1e-5, 1e-3, True, False),
        "train.batch_size": ([16, 32],),
        "train.epochs": (1, 4, False, True),
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tune:\n  spaec: {}\n", "unknown key 'tune.spaec' (did you mean 'space'?)"),
        ("tune:\n  space:\n    train.learnin_rate: {low: 1, high: 2}\n", "train has no key 'learnin_rate'"),
        ("tune:\n  space:\n    trian.epochs: {low: 1, high: 2}\n", "no section 'trian' (did you mean 'train'?)"),
        ("tune:\n  space:\n    train.learning_rate: {low: 1.0e-3, high: 1.0e-5}\n", "must be below high"),
        ("tune:\n  space:\n    train.warmup_ratio: {low: 0.0, high: 0.2, log: true}\n", "log scale needs low above 0"),
        ("tune:\n  space:\n    train.batch_size: {low: 8.0, high: 32.5}\n", "whole number"),
        ("tune:\n  space:\n    train.warmup_ratio: {low: 0.1, high: 1.5}\n", "1.5 is not a valid value"),
        ("tune:\n  space:\n    train.batch_size: {low: 8, high: 32, choices: [8]}\n", "choices or a range"),
        ("tune:\n  space:\n    train.batch_size: {lo: 8}\n", "(did you mean 'low'?)"),
        ("tune:\n  space:\n    train.lr_scheduler: {low: 1, high: 2}\n", "not a number; search it with choices"),
        ("tune:\n  space: {}\n", "space is empty"),
        ("tune:\n  pruner: hyperband\n", "tune.pruner"),
    ],
)
def test_a_bad_tune_section_is_refused_with_its_line(tmp_path, text, message):
    with pytest.raises(BertkitError) as caught:
        config(tmp_path, text)
    assert message in str(caught.value)
    assert re.search(r"run\.yaml:[678]: ", str(caught.value))  # the line of the key at fault


def test_a_range_that_makes_an_invalid_config_is_refused_before_any_trial(tmp_path):
    from bertkit.tuning.space import check_space

    cfg = config(tmp_path, "")  # (the config itself refuses a range outside a key's own bounds)
    with pytest.raises(BertkitError, match="model.max_length=4 is not valid"):
        check_space(cfg, {"model.max_length": SearchRange(low=4, high=64)})


def test_integer_ranges_are_sampled_as_integers():
    assert SearchRange(low=1, high=4).integer and SearchRange(low=1, high=9, step=2).integer
    assert not SearchRange(low=1.0, high=4.0).integer and not SearchRange(low=1, high=4, step=0.5).integer


def study_with_a_good_trial(optuna, pruner):
    study = optuna.create_study(direction="maximize", pruner=pruner)
    good = study.ask()
    for step in (1, 2, 3):
        good.report(0.9, step)
    study.tell(good, 0.9)
    return study


def test_the_pruning_callback_stops_a_lagging_trial_and_says_where():
    import optuna

    from bertkit.core.tune_settings import TuneConfig
    from bertkit.tuning.search import pruner, pruning_callback

    settings = TuneConfig(prune_after_trials=1, prune_after_evaluations=1)
    study = study_with_a_good_trial(optuna, pruner(settings))
    trial = study.ask()
    callback = pruning_callback(trial, "accuracy")
    callback.on_evaluate(None, None, None, metrics={"eval_loss": 1.0, "eval_accuracy": 0.5})  # warm-up: kept
    with pytest.raises(optuna.TrialPruned, match="accuracy 0.5000 at evaluation 2"):
        callback.on_evaluate(None, None, None, metrics={"eval_accuracy": 0.5})
    assert trial.user_attrs["pruned_at_evaluation"] == 2
    leading = study.ask()  # a trial ahead of the median goes on
    ahead = pruning_callback(leading, "accuracy")
    for _ in range(3):
        ahead.on_evaluate(None, None, None, metrics={"eval_accuracy": 0.95})
    never = pruning_callback(study.ask(), "accuracy")  # pruner: none never stops one
    never_study = study_with_a_good_trial(optuna, pruner(TuneConfig(pruner="none")))
    never = pruning_callback(never_study.ask(), "accuracy")
    for _ in range(3):
        never.on_evaluate(None, None, None, metrics={"eval_accuracy": 0.1})


def test_the_sampler_is_seeded_per_trial_so_processes_sharing_a_study_differ():
    import optuna

    from bertkit.tuning.search import sampler

    def proposals(seed: int, numbers: int) -> list:
        study = optuna.create_study(sampler=sampler(seed, 5))
        out = []
        for _ in range(numbers):
            trial = study.ask()
            out.append(trial.suggest_float("lr", 1e-5, 1e-3, log=True))
            study.tell(trial, out[-1])
        return out

    first = proposals(42, 3)
    assert proposals(42, 3) == first  # reproducible from the config's seed
    assert len(set(first)) == 3  # each trial number its own draw
    assert proposals(7, 3) != first


def test_durations_and_storage_urls():
    from bertkit.tuning.search import parse_duration
    from bertkit.tuning.storage import shown_url, storage_url

    assert parse_duration("90") == 90 and parse_duration("2h") == 7200 and parse_duration("1h30m") == 5400
    for bad in ("soon", "2x", "0", "1h and more"):
        with pytest.raises(BertkitError, match="--timeout"):
            parse_duration(bad)
    assert shown_url("postgresql://me:secret@db.example/tune") == "postgresql://me:***@db.example/tune"
    with pytest.raises(BertkitError, match="database URL"):
        storage_url("study.db", None)


def test_without_optuna_the_command_names_the_extra(cli, tmp_path, monkeypatch, easy_data):
    monkeypatch.setitem(sys.modules, "optuna", None)  # `import optuna` raises ImportError
    path = tmp_path / "run.yaml"
    path.write_text(f"task: classify\nmodel:\n  name: m\ndata:\n  train: {easy_data['train']}\n")
    code, out, err = cli("tune", "-c", path, "-o", tmp_path / "out")
    assert code == 2
    assert "'optuna>=4'" in err and "pip install -e '.[tune]'" in err
    assert not (tmp_path / "out").exists()


def test_a_folder_bertkit_tune_did_not_write_is_refused(cli, tmp_path, easy_data, tiny_model):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    path = tmp_path / "run.yaml"
    path.write_text(
        f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 32\ndata:\n  train: {easy_data['train']}\n"
    )
    for extra in ([], ["--overwrite"]):
        code, _, err = cli("tune", "-c", path, "-o", out, "--trials", "1", *extra)
        assert code == 2
        assert "not written by bertkit" in err.replace("\n", " ")
    assert (out / "notes.txt").read_text() == "mine"


def test_a_study_continued_under_another_metric_is_refused():
    import optuna

    from bertkit.tuning.study import check_same_study

    study = optuna.create_study(direction="maximize")
    check_same_study(study, "s", "f1", "maximize")  # a new study takes the metric
    check_same_study(study, "s", "f1", "maximize")
    with pytest.raises(BertkitError, match="study 's' optimises f1 .maximize., this config accuracy"):
        check_same_study(study, "s", "accuracy", "maximize")


def test_a_trial_still_suggesting_in_another_process_is_no_other_space():
    # two processes share a study: one's running trial may have suggested some keys and not yet the
    # others; read as the study's space it looked narrower, and the second process refused to start
    import optuna

    from bertkit.core.tune_settings import SearchRange
    from bertkit.tuning.space import check_study_space

    space = {"train.learning_rate": SearchRange(low=1e-5, high=1e-3, log=True),
             "train.batch_size": SearchRange(choices=[16, 32])}  # fmt: skip
    study = optuna.create_study(direction="maximize")
    running = study.ask()
    running.suggest_float("train.learning_rate", 1e-5, 1e-3, log=True)  # batch_size not suggested yet
    check_study_space(study, "s", space, "--study NEW")
    done = study.ask()
    done.suggest_float("train.learning_rate", 1e-5, 1e-3, log=True)
    study.tell(done, 0.5)  # a finished trial over another space still counts
    with pytest.raises(BertkitError, match="train.batch_size: not searched"):
        check_study_space(study, "s", space, "--study NEW")


def test_an_interrupted_trial_is_marked_failed_not_left_running(tmp_path, monkeypatch, easy_data, tiny_model):
    """Ctrl-C or SIGTERM mid-trial: the trial ends as failed in the storage (Optuna leaves it
    running, for good, when the interruption is not an Exception), and the reports are written."""
    import json

    import optuna

    from bertkit.cli import Interrupted
    from bertkit.tuning import TuneOptions, study

    def interrupted(*args, **kwargs):
        raise Interrupted(15)

    monkeypatch.setattr("bertkit.tuning.study.train", interrupted)
    path = tmp_path / "run.yaml"
    path.write_text(
        f"task: classify\nmodel:\n  name: {tiny_model}\n  max_length: 32\ndata:\n  train: {easy_data['train']}\n"
    )
    cfg = load_config(path, output_dir=str(tmp_path / "out"))
    with pytest.raises(Interrupted):
        study.tune(cfg, TuneOptions(trials=2, study="run"))
    stored = optuna.load_study(study_name="run", storage=f"sqlite:///{tmp_path / 'out' / 'study.db'}")
    assert [t.state.name for t in stored.trials] == ["FAIL"]
    assert [t["state"] for t in json.loads((tmp_path / "out" / "trials.json").read_text())["trials"]] == ["fail"]


def test_the_reports_listed_are_the_files_written(tmp_path):
    """The closing line lists what `report.write` wrote: importances.png and best.yaml when they
    are written, not when they are not (and a stale importances.png does not stay behind)."""
    import optuna
    from optuna.distributions import FloatDistribution
    from optuna.trial import create_trial

    from bertkit.tuning import report
    from bertkit.tuning.study import TuneResult

    cfg = config(tmp_path, "")
    rate = {"train.learning_rate": FloatDistribution(1e-5, 1e-2, log=True)}
    for count in (3, 1):
        out = tmp_path / f"study-{count}"
        out.mkdir()
        (out / "importances.png").write_bytes(b"from an earlier run")
        study = optuna.create_study(direction="maximize")
        for i in range(count):
            params = {"train.learning_rate": 10 ** -(i + 2)}
            study.add_trial(create_trial(params=params, distributions=rate, value=0.5 + 0.1 * i))
        result = TuneResult(output=out, study="s", storage="sqlite://", metric="f1_macro", direction="maximize")
        report.write(study, cfg, result, {"train.learning_rate": None})
        assert sorted(result.written) == sorted(p.name for p in out.iterdir()), result.written
        assert ("importances.png" in result.written) == (count >= 2) and "best.yaml" in result.written


def test_a_frozen_encoder_is_judged_as_training_freezes_it(cli, tmp_path, tiny_model):
    """By the config and by every value the space searches for the freezing keys; on the model as
    training freezes it: MPNet's relative attention bias stays trainable with every layer frozen,
    so its route still tunes (counting layers refused it); DistilBERT's refusal is training's own."""
    from bertkit.tasks.classify.strategy import frozen_in_every_trial

    def frozen(model, keys: str, space=None) -> bool:
        cfg = config(tmp_path, f"train:\n{keys}")
        cfg.model.name = str(model)
        return frozen_in_every_trial(cfg, space)

    every = "  freeze_embeddings: true\n  freeze_layers: 2\n"  # the tiny BERT has 2 layers
    assert frozen(tiny_model, every)
    assert not frozen(tiny_model, "  freeze_embeddings: true\n  freeze_layers: 1\n")
    assert not frozen(tiny_model, every, {"train.freeze_layers": SearchRange(choices=[0, 2])})
    assert frozen(tiny_model, "  freeze_layers: 0\n", {
        "train.freeze_layers": SearchRange(choices=[2]), "train.freeze_embeddings": SearchRange(choices=[True])})
    families = {}
    for family in ("mpnet", "distilbert"):
        families[family] = tmp_path / family
        code, _, err = cli("model", "tiny", "--family", family, "--layers", "2", "-o", families[family])
        assert code == 0, err
    assert not frozen(families["mpnet"], every)
    with pytest.raises(BertkitError, match="train.freeze_.*not supported for DistilBert"):
        frozen(families["distilbert"], every)


def test_a_trusted_custom_code_model_is_judged_with_its_trust(tmp_path, tiny_model, monkeypatch):
    """The frozen check read the config without model.trust_remote_code: a trusted custom-code
    model with freezing on was refused, asking for the trust already given."""
    from bertkit.core import models
    from bertkit.tasks.classify import strategy

    seen = []
    real = models.from_pretrained
    monkeypatch.setattr(models, "from_pretrained", lambda *a, **k: seen.append(a[2:] or k) or real(*a, **k))
    cfg = config(tmp_path, "train:\n  freeze_embeddings: true\n  freeze_layers: 2\n")
    cfg.model.name, cfg.model.trust_remote_code = str(tiny_model), True
    assert strategy.frozen_in_every_trial(cfg)
    assert seen == [(True,)]
