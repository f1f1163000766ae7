
import pytest
import yaml
from helpers.checks import assert_refused

from bertkit.config import config_class, load_config, starter_yaml, to_yaml
from bertkit.core.errors import BertkitError
from bertkit.tasks import registry


def write(tmp_path, text):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    return path


def test_defaults_fill_every_key(tmp_path):
    cfg = load_config(write(tmp_path, "data:\n  train: a.csv\n"))
    assert cfg.task == "classify"
    assert cfg.model.max_length == 256
    # classify's measured rule (5e-5 for long runs, raised for short ones), not the generic field default
    assert cfg.train.learning_rate == "auto" and cfg.rate_rule().base == 5e-5
    assert cfg.data.train.path == "a.csv"


def test_every_key_has_help():
    def walk(model):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no help"
            sub = getattr(field.annotation, "model_fields", None)
            if sub:
                walk(field.annotation)

    walk(config_class())


def test_unknown_key_suggests_and_names_line(tmp_path):
    path = write(tmp_path, "task: classify\ntrain:\n  epochs: 1\n  lerning_rate: 0.1\n")
    with pytest.raises(BertkitError) as err:
        load_config(path)
    message = str(err.value)
    assert f"{path}:4" in message
    assert "train.lerning_rate" in message
    assert "did you mean 'learning_rate'" in message


def test_unknown_section_suggests(tmp_path):
    with pytest.raises(BertkitError, match="did you mean 'train'"):
        load_config(write(tmp_path, "trian:\n  epochs: 1\n"))


def test_wrong_type_names_key_file_and_line(tmp_path):
    path = write(tmp_path, "model:\n  name: x\n  max_length: lots\n")
    with pytest.raises(BertkitError) as err:
        load_config(path)
    assert f"{path}:3" in str(err.value) and "model.max_length" in str(err.value)


def test_bad_value_is_explained(tmp_path):
    with pytest.raises(BertkitError, match="classify.truncation"):
        load_config(write(tmp_path, "classify:\n  truncation: middle\n"))


def test_yaml_syntax_error_has_line(tmp_path):
    path = write(tmp_path, "model:\n  name: x\n   max_length: 3\n")
    with pytest.raises(BertkitError, match=rf"{path}:3:\d+: YAML syntax error"):
        load_config(path)


def test_missing_file():
    with pytest.raises(BertkitError, match="config file not found"):
        load_config("nope/missing.yaml")


def test_overrides_are_typed(tmp_path):
    cfg = load_config(
        write(tmp_path, "data:\n  train: a.csv\n"),
        ["train.learning_rate=3e-5", "train.epochs=1", "data.labels=[neg, pos]", "train.max_steps=null"],
    )
    assert cfg.train.learning_rate == pytest.approx(3e-5)
    assert cfg.train.epochs == 1
    assert cfg.data.labels == ["neg", "pos"]


def test_override_of_source_subkey(tmp_path):
    cfg = load_config(write(tmp_path, "data:\n  train: a.txt\n"), ["data.train.format=tsv"])
    assert (cfg.data.train.path, cfg.data.train.format) == ("a.txt", "tsv")


def test_unknown_override_key():
    with pytest.raises(BertkitError, match="did you mean 'batch_size'"):
        load_config(None, ["train.batchsize=8"])


def test_override_needs_equals():
    with pytest.raises(BertkitError, match="key.sub=value"):
        load_config(None, ["train.epochs"])


def test_hub_source_and_conflicts(tmp_path):
    cfg = load_config(write(tmp_path, "data:\n  train: {hub: imdb, split: train}\n"))
    assert cfg.data.train.hub == "imdb" and cfg.data.train.describe().startswith("hub data set")
    with pytest.raises(BertkitError, match="give one of a file path, `files: {label: path}` or `hub: NAME`"):
        load_config(write(tmp_path, "data:\n  train: {hub: imdb, path: a.csv}\n"))


def test_task_must_match_command(tmp_path):
    path = write(tmp_path, "task: classify\n")
    assert load_config(path, task="classify").task == "classify"
    with pytest.raises(BertkitError, match="unknown task"):
        load_config(write(tmp_path, "task: translate\n"))


def test_starter_config_is_valid_and_commented():
    text = starter_yaml("classify")
    assert text.count("\n  # ") > 40
    cfg = config_class().model_validate(yaml.safe_load(text))
    assert cfg.task == "classify"
    assert cfg.data.train.path == "examples/reviews/train.csv"


@pytest.mark.parametrize("task", ["ner", "qa"])
def test_starter_config_of_each_task(task):
    cfg = config_class().model_validate(yaml.safe_load(starter_yaml(task)))
    assert cfg.task == task and cfg.data.train.path.startswith("data/")
    assert f"\n{task}:\n" in starter_yaml(task)
    if task == "qa":
        assert cfg.model.max_length == 384 and cfg.qa.doc_stride == 128


def test_show_round_trips(tmp_path):
    cfg = load_config(write(tmp_path, "train:\n  epochs: 2\n"))
    again = config_class().model_validate(yaml.safe_load(to_yaml(cfg)))
    assert again == cfg


def _shipped_configs():
    from conftest import ROOT

    return sorted(str(p.relative_to(ROOT / "configs")) for p in (ROOT / "configs").rglob("*.yaml"))


@pytest.mark.parametrize("name", _shipped_configs())
def test_shipped_configs_validate(name):
    from conftest import ROOT

    cfg = load_config(ROOT / "configs" / name)
    assert cfg.task in registry.names() and cfg.data.train is not None


def test_unquoted_no_is_a_strategy(tmp_path):
    assert load_config(write(tmp_path, "train:\n  eval_strategy: no\n")).train.eval_strategy == "no"
    assert load_config(None, ["train.eval_strategy=no"]).train.eval_strategy == "no"


@pytest.mark.parametrize(
    "task, expected",
    [
        ("classify", {"train.learning_rate": "auto", "train.head_learning_rate": None, "model.max_length": 256}),
        ("ner", {"train.learning_rate": "auto", "model.max_length": 256}),
        (
            "qa",
            {
                "train.learning_rate": 3e-4,
                "train.head_learning_rate": 3e-3,
                "train.warmup_ratio": 0.1,
                "train.group_by_length": True,
                "model.max_length": 384,
                "qa.doc_stride": 128,
            },
        ),
        ("mlm-adapt", {"train.learning_rate": 1e-4, "train.head_learning_rate": 1e-3, "model.max_length": 128}),
        ("embed", {"train.learning_rate": 3e-5, "train.batch_size": 32, "train.warmup_ratio": 0.1}),
    ],
)
def test_each_task_takes_its_measured_defaults(tmp_path, task, expected):
    """A key the config leaves out takes the task's measured value; `config show` prints it; a
    value the user writes (file or --set) wins."""
    path = write(tmp_path, f"task: {task}\ndata:\n  train: a.txt\n")
    cfg = load_config(path)
    shown = yaml.safe_load(to_yaml(cfg))
    for key, value in expected.items():
        section, name = key.split(".")
        assert getattr(getattr(cfg, section), name) == value, key
        assert shown[section][name] == value, key
    starter = yaml.safe_load(starter_yaml(task))
    for (section, name), value in registry.record(task).defaults.items():
        assert getattr(getattr(cfg, section), name) == value
        if (section, name) not in registry.record(task).starter:  # the starter file shows the task's default
            assert starter[section][name] == value, (section, name)
    written = write(tmp_path, f"task: {task}\ntrain:\n  learning_rate: 1.0e-5\ndata:\n  train: a.txt\n")
    assert load_config(written).train.learning_rate == 1e-5
    assert load_config(path, ["train.learning_rate=2e-6"]).train.learning_rate == 2e-6


def test_training_uses_the_task_defaults(tmp_path):
    from bertkit.training.trainer import training_arguments

    cfg = load_config(write(tmp_path, "task: qa\ndata:\n  train: a.json\n"))
    args = training_arguments(cfg, tmp_path / "work", "fp32", "f1")
    assert args.learning_rate == pytest.approx(3e-4) and args.warmup_steps == pytest.approx(0.1)


def test_qa_doc_stride_follows_the_window_unless_set(tmp_path):
    path = write(tmp_path, "task: qa\nmodel:\n  max_length: 192\ndata:\n  train: a.json\n")
    assert load_config(path).qa.doc_stride == 64  # a fixed 128 would leave 192-token windows no room
    assert load_config(path, ["qa.doc_stride=100"]).qa.doc_stride == 100
    assert load_config(path, ["model.max_length=384"]).qa.doc_stride == 128


@pytest.mark.parametrize("seed", [-1, 2**32])
def test_a_seed_numpy_cannot_take_is_refused_by_the_config_check(tmp_path, seed):
    """train.seed -1 or 2**32 passed the config check and stopped every route with numpy's
    ValueError traceback (exit 1)."""
    with pytest.raises(BertkitError, match="train.seed"):
        load_config(write(tmp_path, f"train:\n  seed: {seed}\n"))
    assert load_config(write(tmp_path, f"train:\n  seed: {2**32 - 1}\n")).train.seed == 2**32 - 1


# ---------------------------------------------------------------- one value, one reading


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("train:\n  max_steps: on\n", "train.max_steps"),
        ("train:\n  batch_size: true\n", "train.batch_size"),
        ("train:\n  seed: false\n", "train.seed"),
        ("train:\n  learning_rate: yes\n", "train.learning_rate"),
        ("train:\n  epochs: no\n", "train.epochs"),
        ("ner:\n  stride: off\n", "ner.stride"),
        ("tune:\n  trials: true\n", "tune"),
    ],
)
def test_a_boolean_in_a_numbers_place_is_refused_naming_the_key(tmp_path, text, key):
    """YAML reads on, off, yes, no, true and false as booleans, which pydantic took for 1 and 0
    (`max_steps: on` ran one step); a file and `--set` refuse them alike."""
    path = write(tmp_path, "task: classify\nmodel:\n  name: m\n" + text)
    with pytest.raises(BertkitError) as err:
        load_config(path)
    assert key in str(err.value) and ("not true or false" in str(err.value) or key == "tune"), str(err.value)


def test_a_boolean_in_a_numbers_place_is_refused_in_an_override_too(tmp_path):
    path = write(tmp_path, "task: classify\nmodel:\n  name: m\n")
    for setting in ("train.epochs=false", "train.max_steps=on", "classify.few_shot_examples=yes"):
        with pytest.raises(BertkitError, match="not true or false") as err:
            load_config(path, [setting])
        assert f"--set {setting}" in str(err.value)
    cfg = load_config(path, ["train.gradient_checkpointing=yes", "model.random_init=off"])  # booleans stay booleans
    assert cfg.train.gradient_checkpointing is True and cfg.model.random_init is False


@pytest.mark.parametrize(
    "setting", ["train.batch_size: 1.0e+29", "train.eval_batch_size: 3000000000", "train.max_steps: 10000000000"]
)
def test_a_count_past_what_the_code_can_use_is_refused_with_its_limit(tmp_path, setting):
    section, _, value = setting.partition(".")
    key, _, number = value.partition(": ")
    path = write(tmp_path, f"task: classify\nmodel:\n  name: m\n{section}:\n  {key}: {number}\n")
    with pytest.raises(BertkitError) as err:
        load_config(path)
    message = str(err.value)
    assert f"{path}:5" in message and f"{section}.{key}" in message and "2,147,483,647" in message, message


def test_a_key_given_twice_is_an_error(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("task: classify\ntrain:\n  epochs: 1\ndata:\n  train: x.csv\ntrain:\n  batch_size: 4\n")
    with pytest.raises(BertkitError, match=r"c.yaml:6:1: key 'train' appears twice .*first on line 2"):
        load_config(path)
    path.write_text("train:\n  epochs: 1\n  epochs: 2\n")
    with pytest.raises(BertkitError, match=r"c.yaml:3:3: key 'epochs' appears twice"):
        load_config(path)


def test_set_values_are_taken_as_written():
    cfg = load_config(None, ["data.label_separator=|", "model.name=#foo", "data.labels=[a, b]", "train.epochs=2"])
    assert cfg.data.label_separator == "|" and cfg.model.name == "#foo"
    assert cfg.data.labels == ["a", "b"] and cfg.train.epochs == 2
    assert load_config(None, ["data.test=null"]).data.test is None
    assert load_config(None, ["model.name='quoted'"]).model.name == "quoted"


def test_set_errors_name_the_option_not_the_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("task: classify\ntrain:\n  epochs: 1\n")
    with pytest.raises(BertkitError) as caught:
        load_config(path, ["train.epochs=many"])
    assert "--set train.epochs=many: train.epochs" in str(caught.value) and "c.yaml" not in str(caught.value)
    with pytest.raises(BertkitError, match="c.yaml:3: train.epochs"):
        path.write_text("train:\n  x: 1\n  epochs: zero\n")
        load_config(path)


def test_labels_listed_twice_or_blank_separator():
    with pytest.raises(BertkitError, match="'pos' is listed twice"):
        load_config(None, ["data.labels=[pos, neg, pos]"])
    with pytest.raises(BertkitError, match="label_separator"):
        load_config(None, ["data.label_separator=' '"])


def test_config_init_marks_starter_values():
    text = starter_yaml("classify")
    assert "'starter value'" in text
    lines = text.splitlines()
    at = lines.index("  name: sentence-transformers/all-MiniLM-L6-v2")
    assert lines[at - 1] == "  # starter value; the default is bert-base-uncased"
    epochs = lines.index("  epochs: 3")
    assert "starter value" not in lines[epochs - 1]


@pytest.mark.parametrize(
    "section",
    ["? [a, b]\n: 1\n", "? {a: 1}\n: 1\n", "base: &b {epochs: 1}\ntrain:\n  <<: *b\n  epochs: 3\n"],
)
def test_yaml_keys_that_are_not_names_are_errors(tmp_path, section):
    from bertkit.config import load_config

    path = tmp_path / "c.yaml"
    path.write_text("task: classify\nmodel: {name: x}\ndata: {train: a.csv}\n" + section)
    with pytest.raises(BertkitError, match=r"c\.yaml:\d+:\d+: (a key must be a name|a merge key)"):
        load_config(path)


def test_a_config_that_is_a_folder_empty_or_not_utf8_says_so(cli, tmp_path):
    from helpers.checks import assert_refused

    code, _, err = cli("config", "show", "-c", tmp_path)
    assert_refused(code, err, f"{tmp_path} is a folder")
    empty = tmp_path / "empty.yaml"
    empty.write_text("\n")
    code, _, err = cli("config", "show", "-c", empty)
    assert_refused(code, err, f"{empty}: the config is empty")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"task: classify\n# caf\xe9\n")
    code, _, err = cli("config", "show", "-c", latin)
    assert_refused(code, err, f"{latin}:2: not UTF-8 text")
    listed = tmp_path / "listed.yaml"
    listed.write_text("task: [classify]\n")
    code, _, err = cli("train", "classify", "-c", listed)
    assert_refused(code, err, f"{listed}:1: task must be one name")


def test_home_in_config_paths_is_expanded(tmp_path):
    import os

    from bertkit.config import load_config

    cfg = load_config(
        None, ["data.train=~/d/train.csv", "output_dir=~/runs/x", "model.name=~/models/m"], task="classify"
    )
    home = os.path.expanduser("~")
    assert cfg.data.train.path == f"{home}/d/train.csv" and cfg.output_dir == f"{home}/runs/x"
    assert cfg.model.name == f"{home}/models/m"


def test_config_init_to_stdout_with_a_dash(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, plain, _ = cli("config", "init", "ner")
    assert code == 0
    code, dashed, err = cli("config", "init", "ner", "-o", "-")
    assert code == 0 and dashed == plain, err
    assert list(tmp_path.iterdir()) == []


def test_config_init_makes_missing_folders_and_leaves_no_temporaries(cli, tmp_path):
    _, text, _ = cli("config", "init", "qa")
    target = tmp_path / "configs" / "runs" / "qa.yaml"
    code, _, err = cli("config", "init", "qa", "-o", target)
    assert code == 0, err
    assert target.read_text(encoding="utf-8") == text
    assert [p.name for p in target.parent.iterdir()] == ["qa.yaml"]


def test_config_init_refusals(cli, tmp_path):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("mine")
    code, _, err = cli("config", "init", "classify", "-o", blocker / "run.yaml")
    assert_refused(code, err, f"cannot write {blocker / 'run.yaml'}", f"{blocker} is a file, not a folder")
    code, _, err = cli("config", "init", "classify", "-o", tmp_path)
    assert_refused(code, err, f"--output {tmp_path} is a directory")
    code, _, err = cli("config", "init", "classify", "-o", blocker)
    assert_refused(code, err, f"{blocker} already exists", "--overwrite")
    assert blocker.read_text() == "mine"
    code, _, err = cli("config", "init", "clasify", "-o", tmp_path / "new" / "x.yaml")
    assert_refused(code, err, "did you mean 'classify'")
    assert not (tmp_path / "new").exists()
    code, _, err = cli("config", "init", "classify", "-o", blocker, "--overwrite")
    assert code == 0, err
    assert blocker.read_text().startswith("# bertkit config")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
