"""The run configuration: schema, YAML loading, dotted overrides and readable errors.

One YAML file fully describes a run. Every key has a default and a line of help (the
`description` of its field, which `bertkit config init` turns into comments). Unknown keys,
wrong types and bad values become a `BertkitError` naming the file, the line and the key.

- `sections`: the sections every config has (model, data, train) and their keys;
- `task_sections`: one section per task (classify, ner, qa, mlm, embed);
- `schema`: `Config`, the whole config built from the task registry, and each key's default;
- `loading`: `load_config`, reading YAML and `--set` overrides with errors that name their place;
- `printing`: what `config show` and `config init` print.
"""

from bertkit.config import schema
from bertkit.config.loading import load_config
from bertkit.config.printing import starter_yaml, to_yaml
from bertkit.config.schema import RunConfig, default_of
from bertkit.config.sections import (
    BASE_SECTIONS,
    DataConfig,
    DataSource,
    ModelConfig,
    Section,
    TrainConfig,
    derived_doc_stride,
    section_names,
)
from bertkit.config.task_sections import (
    ClassifyConfig,
    EmbedConfig,
    MlmConfig,
    NerConfig,
    QaConfig,
)

__all__ = [
    "BASE_SECTIONS", "ClassifyConfig", "Config", "DataConfig", "DataSource", "EmbedConfig", "MlmConfig",
    "ModelConfig", "NerConfig", "QaConfig", "RunConfig", "Section", "TrainConfig", "default_of",
    "derived_doc_stride", "load_config", "section_names", "starter_yaml", "to_yaml",
]


def __getattr__(name: str):
    # `Config` is rebuilt whenever a task is registered: always hand out the current one
    if name == "Config":
        return schema.Config
    raise AttributeError(f"module 'bertkit.config' has no attribute '{name}'")
