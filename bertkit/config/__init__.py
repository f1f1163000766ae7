"""The run configuration: schema, YAML loading, dotted overrides and readable errors.

One YAML file fully describes a run. Every key has a default and a line of help (the
`description` of its field, which `bertkit config init` turns into comments). Unknown keys,
wrong types and bad values become a `BertkitError` naming the file, the line and the key.

- `schema`: `Config`, the whole config (the sections every config has are in bertkit/core/settings.py,
  each task's in its folder, bertkit/tasks/<task>/settings.py), and each key's default;
- `loading`: `load_config`, reading YAML and `--set` overrides with errors that name their place;
- `printing`: what `config show` and `config init` print.
"""

from bertkit.config.loading import load_config
from bertkit.config.printing import starter_yaml, to_yaml
from bertkit.config.schema import Config, config_class, default_of, section_names
from bertkit.core.data_settings import DataSource
from bertkit.core.settings import Section

__all__ = [
    "Config", "DataSource", "Section", "config_class", "default_of", "load_config", "section_names", "starter_yaml",
    "to_yaml",
]
