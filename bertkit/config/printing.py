"""What `config show` and `config init` print: a resolved config, or a commented starting one."""

from __future__ import annotations

from bertkit.config.schema import Config, config_class, default_of, model_of
from bertkit.core.settings import BASE_SECTIONS
from bertkit.tasks import registry


def to_yaml(config: Config) -> str:
    import yaml

    return yaml.safe_dump(config.dump(), sort_keys=False, allow_unicode=True)


def starter_yaml(task: str) -> str:
    """A complete, commented config for `task`: every key, its default and its help."""
    item = registry.record(task)

    out = [
        f"# bertkit config for `bertkit train {task}`. Every key shows its default, except those marked",
        "# 'starter value': they are examples to replace (a key left out takes its default, not these).",
        "",
        f"task: {task}",
    ]
    sections = [*BASE_SECTIONS, item.section]
    examples = {("model", "name"): "sentence-transformers/all-MiniLM-L6-v2", **item.starter}
    for name in sections:
        field = config_class().model_fields[name]
        out += ["", f"# {field.description}", f"{name}:"]
        for key, sub in model_of(field.annotation).model_fields.items():
            default = default_of(task, name, key)
            out.append(f"  # {sub.description}")
            if (name, key) in examples:
                out.append(f"  # starter value; the default is {_flow(default)}")
            out.append(f"  {key}: {_flow(examples.get((name, key), default))}")
    out += ["", f"# {config_class().model_fields['output_dir'].description}"]
    default_dir = config_class().model_fields["output_dir"].default
    out += [f"# starter value; the default is {default_dir}", f"output_dir: outputs/{task}"]
    return "\n".join(out) + "\n"


def _flow(value) -> str:
    import yaml

    text = yaml.safe_dump(value, default_flow_style=True).strip()
    return text.removesuffix("\n...").removesuffix("...").strip()
