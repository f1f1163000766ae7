"""Reading a config: YAML with line numbers (duplicate keys refused), `--set` overrides, and
validation errors that name the file, the line and the key."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from bertkit.config.schema import config_class, model_of
from bertkit.core.errors import BertkitError, did_you_mean

if TYPE_CHECKING:
    from bertkit.config.schema import Config


def load_config(
    path: str | Path | None, overrides: list[str] | None = None, task: str | None = None, **values
) -> Config:
    """Read a YAML config, apply `key.sub=value` overrides and `values`, and validate it.

    `task` is the job the command runs: it fills in a missing `task:` and must match a given one.
    """
    raw: dict = {}
    lines: dict[tuple, int | str] = {}  # where each key was set: a line of the file, or a command-line option
    source = str(path) if path else "<defaults>"
    if path is not None:
        raw, lines = _read_yaml(Path(path))
    for item in overrides or []:
        key, value = _parse_override(item)
        _set_dotted(raw, key, value, f"--set {item}")
        _forget_below(lines, tuple(key.split(".")))
        lines[tuple(key.split("."))] = f"--set {item}"
    if task is not None:  # after the overrides: `--set task=...` may not change the command's job
        given = raw.setdefault("task", task)
        if not isinstance(given, str):
            origin = lines.get(("task",))
            where = origin if isinstance(origin, str) else f"{source}:{origin}"
            raise BertkitError(f"{where}: task must be one name, such as {task}, not {given!r}")
        if given != task:
            origin = lines.get(("task",))
            where = origin if isinstance(origin, str) else f"{source}:{origin}"
            raise BertkitError(
                f"{where}: this config is for `task: {given}`, but the command trains "
                f"{task}. Run `bertkit train {given}`, or change the task."
            )
    for key, value in values.items():
        if value is not None:
            option = f"--{key.replace('_', '-')}"
            _set_dotted(raw, key, value, option)
            lines[tuple(key.split("."))] = f"{option} {value}"
    try:
        return config_class().model_validate(raw)
    except ValidationError as err:
        raise BertkitError(_explain(err, source, lines)) from None


def _forget_below(lines: dict, key: tuple) -> None:
    for known in [k for k in lines if k[: len(key)] == key]:
        del lines[known]


def _loader():
    """yaml.SafeLoader that refuses a key given twice in one mapping (YAML would keep the last)."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
        pass

    def mapping(loader, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    "a merge key (<<) is not read in bertkit configs; write the keys out",
                    key_node.start_mark,
                )
            key = loader.construct_object(key_node, deep=deep)
            if not isinstance(key, str | int | float | bool) and key is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, f"a key must be a name, not a {type(key).__name__}", key_node.start_mark
                )
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"key '{key}' appears twice in one section (first on line {seen[key]}); YAML would keep only "
                    "the second and silently drop the first. Merge them",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line + 1
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return StrictLoader


def _read_yaml(path: Path) -> tuple[dict, dict[tuple, int]]:
    import yaml

    if path.is_dir():
        raise BertkitError(f"{path} is a folder; give the config file (a .yaml file) inside it")
    if not path.exists():
        raise BertkitError(
            f"config file not found: {path}. Check the path, or write one with "
            "`bertkit config init classify > my.yaml`."
        )
    try:
        raw = path.read_bytes()  # a pipe (`-c <(...)`) or a device reads as well as a file
    except OSError as err:
        raise BertkitError(f"cannot read the config {path}: {err.strerror or err}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise BertkitError(f"{path}:{line}: not UTF-8 text ({err.reason}); save the config as UTF-8") from None
    if not text.strip():
        raise BertkitError(f"{path}: the config is empty. Write one with `bertkit config init classify > {path}`")
    try:
        data = yaml.load(text, Loader=_loader())  # noqa: S506 - a SafeLoader subclass
        node = yaml.compose(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(err, "problem", None) or str(err)
        kind = "" if isinstance(err, yaml.constructor.ConstructorError) else "YAML syntax error: "
        raise BertkitError(f"{where}: {kind}{problem}") from None
    if data is None:
        return {}, {}
    if not isinstance(data, dict):
        raise BertkitError(f"{path}: a config must be a mapping of sections (task, model, data, ...)")
    lines: dict[tuple, int] = {}
    _collect_lines(node, (), lines)
    return data, lines


def _collect_lines(node, prefix: tuple, out: dict[tuple, int]) -> None:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = prefix + (key_node.value,)
            out[key] = key_node.start_mark.line + 1
            _collect_lines(value_node, key, out)


NULLS = ("null", "Null", "NULL", "~")


def _parse_override(item: str) -> tuple[str, Any]:
    """`key=value`: the value is read as YAML where that gives a number, a boolean, null, a list
    or a mapping, or a quoted string; anything else is taken as written (so `|`, `>` and `#x`
    stay themselves instead of becoming YAML syntax)."""
    import yaml

    if "=" not in item:
        raise BertkitError(f"--set {item}: write overrides as key.sub=value, e.g. train.epochs=1")
    key, _, text = item.partition("=")
    key, text = key.strip(), text.strip()
    if not key or any(not part for part in key.split(".")):
        raise BertkitError(f"--set {item}: '{key}' is not a key; write it as section.key, e.g. train.epochs=1")
    if not text:
        raise BertkitError(
            f"--set {item}: no value after '='. Write {key}=null to unset it, or {key}=\"\" for an empty text"
        )
    try:
        value = yaml.load(text, Loader=_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError:
        return key, text
    quoted = text[0] in "'\"" and text[-1] == text[0] and len(text) > 1
    if value is None and text not in NULLS:
        return key, text
    if isinstance(value, str) and not quoted and value != text:
        return key, text
    return key, value


def _set_dotted(raw: dict, key: str, value: Any, origin: str) -> None:
    parts = key.split(".")
    node = raw
    for part in parts[:-1]:
        child = node.get(part)
        if child is None or isinstance(child, str):
            # A string source (data.train: file.csv) becomes a mapping when a sub-key is set.
            child = {"path": child} if isinstance(child, str) else {}
            node[part] = child
        if not isinstance(child, dict):
            raise BertkitError(f"{origin}: '{part}' is not a section")
        node = child
    node[parts[-1]] = value


def _explain(err: ValidationError, source: str, lines: dict[tuple, int | str]) -> str:
    messages = []
    for item in err.errors():
        loc = tuple(str(p) for p in item["loc"] if not str(p).startswith("function-"))
        # pydantic adds the union member tried ('DataSource', 'str', ...) to the location
        loc = tuple(p for p in loc if p[:1].islower() or p.isdigit() or p == "")
        key = ".".join(loc) or "(top level)"
        origin = _line_for(loc, lines)
        where = origin if isinstance(origin, str) else f"{source}:{origin}" if origin else source
        if item["type"] == "extra_forbidden":
            hint = did_you_mean(loc[-1], _fields_at(loc[:-1]))
            known = ", ".join(_fields_at(loc[:-1]))
            messages.append(f"{where}: unknown key '{key}'{hint}. Known keys here: {known}")
        else:
            got = item.get("input")
            shown = "" if isinstance(got, dict) else f" (got {got!r})"
            message = item["msg"].removeprefix("Value error, ")
            messages.append(f"{where}: {key}: {message}{shown}")
    return "invalid config:\n  " + "\n  ".join(messages)


def _line_for(loc: tuple, lines: dict[tuple, int | str]) -> int | str | None:
    for end in range(len(loc), 0, -1):
        if loc[:end] in lines:
            return lines[loc[:end]] or None
    below = [origin for key, origin in lines.items() if key[: len(loc)] == loc and origin]
    return below[0] if below else None  # a section that only a deeper key (a --set) brought in


def _fields_at(loc: tuple) -> list[str]:
    model: type[BaseModel] | None = config_class()
    mapping = False
    for part in loc:
        if mapping:  # a key of a mapping such as tune.space: its values are `model`
            mapping = False
            continue
        field = model.model_fields.get(part) if model else None
        model = model_of(field.annotation) if field else None
        mapping = field is not None and "dict[" in str(field.annotation)
    return list(model.model_fields) if model else []
