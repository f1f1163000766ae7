"""The whole config of a run (`Config`): the sections every run has, typed on the class, and one
section per registered task, each its task's settings class (`cfg.section(NerConfig)`, or
`cfg.settings()` for the run's own task). `config_class()` is the class a config is read with: `Config`
with a field per registered task, made again when a task registers. Also the default a key takes
when a config leaves it out (`default_of`)."""

from __future__ import annotations

import typing
from typing import Any, TypeVar

from pydantic import BaseModel, Field, create_model, field_validator, model_validator

from bertkit.core.data_settings import DataConfig
from bertkit.core.learning_rates import AUTO, StepScaledRate
from bertkit.core.settings import BASE_SECTIONS, ModelConfig, Section, TrainConfig, home_path
from bertkit.core.tune_settings import TuneConfig
from bertkit.tasks import registry

S = TypeVar("S", bound=Section)


def section_names() -> tuple[str, ...]:
    """The sections a config can have besides `task`, `tune` and `output_dir`."""
    return (*BASE_SECTIONS, *(item.section for item in registry.records()))


class Config(Section):
    """A run's config. The sections every run has are typed fields; each registered task's section is
    a field of the class `config_class()` makes, read through `section` (typed) or `settings`."""

    task: str = Field("classify", description="the job: a task of `bertkit train --help` (classify, ner, qa, ...)")
    model: ModelConfig = Field(default_factory=ModelConfig, description="the model to start from")
    data: DataConfig = Field(default_factory=DataConfig, description="where the examples come from")
    train: TrainConfig = Field(default_factory=TrainConfig, description="how to train")
    tune: TuneConfig = Field(
        default_factory=TuneConfig, description="what `bertkit tune` searches (bertkit train ignores it)"
    )
    output_dir: str = Field("outputs/run", description="where the trained model bundle goes")

    @model_validator(mode="before")
    @classmethod
    def _empty_sections(cls, value: Any) -> Any:
        # `mlm:` with nothing under it is an empty section in YAML terms, not an error
        if not isinstance(value, dict):
            return value
        value = {k: {} if v is None and k in (*section_names(), "tune") else v for k, v in value.items()}
        task = value.get("task", "classify")
        defaults = registry.record(task).defaults if task in registry.names() else {}
        train = value.get("train")
        if isinstance(train, dict) and train.get("adapter") is not None and "learning_rate" not in train:
            rule = registry.record(task).adapter_learning_rate if task in registry.names() else None
            if rule is not None:  # an adapter learns at its own measured rate (`rate_rule`, docs/benchmarks.md)
                value["train"] = {**train, "learning_rate": AUTO}
        for (section, key), default in defaults.items():
            given = value.setdefault(section, {})
            if isinstance(given, dict):
                value[section] = {key: default, **given}
            elif isinstance(given, BaseModel):
                value[section] = given.model_copy(update={} if key in given.model_fields_set else {key: default})
        return value

    @model_validator(mode="after")
    def _derived(self) -> Config:
        if self.train.adapter is not None:  # first: a task that takes none is told so before its own checks
            check_adapter(self)
        for item in registry.records():
            derive = getattr(getattr(self, item.section, None), "derive", None)
            if derive is not None:
                derive(self)
        if self.model.name is None:  # only distill fills it in (with its teacher)
            raise ValueError("model.name: null; give a hub id or a local model directory")
        auto = [k for k in ("learning_rate", "head_learning_rate") if getattr(self.train, k) == AUTO]
        rule = self.rate_rule()
        if auto and (rule is None or ("head_learning_rate" in auto and rule.head is None)):
            raise ValueError(
                f"train.{auto[-1]}: auto, but task {self.task} has no measured rule for it; give a number"
            )
        return self

    def rate_rule(self) -> StepScaledRate | None:
        """What `train.learning_rate: auto` follows: the task's rule (distill: its teacher task's), or
        with `train.adapter` the task's rule for adapters."""
        record = registry.record(self.task)
        if self.train.adapter is not None and record.adapter_learning_rate is not None:
            return record.adapter_learning_rate
        if record.learning_rate is not None:
            return record.learning_rate
        borrowed = getattr(getattr(self, record.section, None), "rate_task", None)
        return registry.record(borrowed).learning_rate if borrowed in registry.names() else None

    @field_validator("output_dir")
    @classmethod
    def _home(cls, value: str) -> str:

        return home_path(value)

    @field_validator("tune")
    @classmethod
    def _searched_keys(cls, value: TuneConfig) -> TuneConfig:
        sections = {name: model_of(f.annotation) for name, f in cls.model_fields.items() if name != "tune"}
        value.check_keys({name: model for name, model in sections.items() if model is not None})
        return value

    @field_validator("task")
    @classmethod
    def _known_task(cls, value: str) -> str:
        if value not in registry.names():
            raise ValueError(f"unknown task '{value}'; choose one of {', '.join(registry.names())}")
        return value

    def settings(self) -> Section:
        """The section of this run's own task."""
        return getattr(self, registry.record(self.task).section)

    def section(self, kind: type[S]) -> S:
        """The task section whose settings class is `kind` (`cfg.section(NerConfig).scheme`)."""
        for item in registry.records():
            if item.settings_class() is kind:
                return getattr(self, item.section)
        raise KeyError(f"no registered task has the settings {kind.__name__}")

    def dump(self) -> dict:
        data = self.model_dump(mode="json")
        data["output_dir"] = data.pop("output_dir")  # last, as config files have it
        return data


# why a task takes no adapter (a task whose record has no adapter_learning_rate)
NO_ADAPTER = {
    "mlm-adapt": "domain adaptation is meant to change the base model itself; adapt it in full, then train "
    "adapters of other tasks on the result",
    "distill": "the student is a new, smaller model trained in full; distil first, then train adapters on it",
    "rerank": "adapters were not measured for cross-encoders yet; train the reranker in full",
}


def check_adapter(cfg: Config) -> None:
    """train.adapter fits the task and the other training settings (a ValueError names the key)."""
    if registry.record(cfg.task).adapter_learning_rate is None:
        why = NO_ADAPTER.get(cfg.task, "this task has no adapter support")
        raise ValueError(f"train.adapter: the {cfg.task} task takes no adapter: {why}. Remove train.adapter")
    if cfg.model.random_init:
        raise ValueError("train.adapter: an adapter adapts pretrained weights; remove it or model.random_init")
    for key in ("freeze_embeddings", "freeze_layers"):
        if getattr(cfg.train, key):
            raise ValueError(f"train.{key}: with train.adapter the whole base is frozen already; remove {key}")


def _build() -> type[Config]:
    """`Config` with a field per registered task (its section, of its settings class)."""
    sections: dict[str, Any] = {}
    for item in registry.records():
        settings = item.settings_class()
        sections[item.section] = (
            settings,
            Field(default_factory=settings, description=f"settings of the {item.name} task"),
        )
    return create_model("Config", __base__=Config, **sections)


_current: list[type[Config]] = []  # the class for the tasks registered now; emptied when they change


def config_class() -> type[Config]:
    """The class a config is read with: `Config` and a section per registered task."""
    if not _current:
        _current.append(_build())
    return _current[0]


def _forget() -> None:
    _current.clear()




def default_of(task: str, section: str, key: str) -> Any:
    """The value `section.key` takes in a `task` config that leaves it out: the task's measured
    default (its registry record), else the field's own."""
    defaults = registry.record(task).defaults
    if (section, key) in defaults:
        return defaults[(section, key)]
    return model_of(config_class().model_fields[section].annotation).model_fields[key].get_default(
        call_default_factory=True
    )


def model_of(annotation) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = model_of(arg)
        if found:
            return found
    return None


registry.on_change(_forget)
