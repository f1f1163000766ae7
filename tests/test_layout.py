"""The shape of the code, as docs/architecture.md states it: every top-level module or package of
bertkit/ (a room) has its place in a layer, and imports point down the layers; no import cycles,
between modules or between the rooms of any package; imports of bertkit's own modules at the top
of the module (imports inside functions count everywhere here: they are how cycles hide); no
module so long that a reader loses its thread."""

import ast
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "bertkit"
MAX_LINES = 400

# The layers, lowest first: a room imports from its own layer or the ones below it, never above.
# Rooms of one layer may import each other, but never in a loop (`test_no_cycles_between_rooms`).
LAYERS = [
    ("the package's version", {"__init__"}),
    ("the shared machinery: data, outputs, models, tokenizers, inference, metrics, settings", {"core"}),
    ("the tasks: the contract, the registry, bundles, one folder per task", {"tasks"}),
    (
        "what the commands do",
        {
            "config", "training", "prediction", "evaluation", "comparison", "tuning", "serving", "exporting",
            "explain", "inspection", "embeddings", "attention", "smoke", "tiny_models", "tiny_families", "families",
            "bundle_summary", "adapter_merging", "auditing", "selection",
        },
    ),
    ("the command line", {"cli"}),
    ("`python -m bertkit`", {"__main__"}),
]  # fmt: skip
LAZY_MARK = "# lazy:"  # a bertkit import inside a function outside cli/ says why on its line


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache  # the tree is read once a session; its callers only read what it gives
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def room(name: str, package: str = "bertkit") -> str:
    """The part of `package` that module `name` belongs to: its own module or sub-package ("__init__"
    for the package's own face)."""
    rest = name[len(package) + 1 :].split(".") if name != package else []
    return rest[0] if rest and rest[0] else "__init__"


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    hidden = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(n) for n in ast.walk(node))
    return hidden


def _targets(node, known: dict) -> set[str]:
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name.startswith("bertkit")}
    if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bertkit"):
        return {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module for a in node.names}
    return set()


def import_statements(path: Path, known: dict, typing: bool = False) -> list[tuple[ast.stmt, set[str], bool]]:
    """Each import of bertkit modules in the file (those under TYPE_CHECKING too when `typing`):
    the statement, the modules it names, and whether it is inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hidden = set() if typing else _type_checking_nodes(tree)
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            inside.update(id(n) for n in ast.walk(node) if n is not node)
    found = []
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        targets = _targets(node, known)
        if targets:
            found.append((node, targets, id(node) in inside))
    return found


def imported(name: str, path: Path, known: dict) -> set[str]:
    """The bertkit modules `name` makes Python run: each module it imports (anywhere in it, except
    under TYPE_CHECKING), and the package face (`__init__`) of every package on the way to it
    that `name` itself is not inside (importing `a.b.c` runs `a/b/__init__.py` first)."""
    targets = {t for _, found, _ in import_statements(path, known) for t in found}
    ran = set()
    for target in targets:
        parts = target.split(".")
        for i in range(1, len(parts) + 1):
            step = ".".join(parts[:i])
            inside = name == step or name.startswith(step + ".")
            if step in known and not inside:
                ran.add(step)
    return ran - {name}


@functools.cache
def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(name, path, known) for name, path in known.items()}


@functools.cache
def direct_imports() -> list[tuple[str, str, int]]:
    """(importer, imported, line) for every import of a bertkit module, lazy ones and those for
    type checkers (`if TYPE_CHECKING:`) included: a type named from a room above is a dependency on
    it too (the rooms' direction and loops count them; the modules' run-time loops do not)."""
    known = modules()
    return [
        (name, target, node.lineno)
        for name, path in known.items()
        for node, targets, _ in import_statements(path, known, typing=True)
        for target in sorted(targets)
    ]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer_of(name: str) -> int:
    for number, (_, rooms) in enumerate(LAYERS):
        if name in rooms:
            return number
    raise KeyError(name)


# ---------------------------------------------------------------- the layers


def test_every_room_has_its_place_in_one_layer():
    rooms = {room(name) for name in modules()}
    placed = [name for _, members in LAYERS for name in members]
    assert len(placed) == len(set(placed)), "a room is placed in two layers"
    assert not rooms - set(placed), f"rooms without a layer (add them to LAYERS and the page): {rooms - set(placed)}"
    assert not set(placed) - rooms, f"layers name rooms that do not exist: {set(placed) - rooms}"


def test_imports_point_down_the_layers():
    upward = [
        f"{source}:{line} -> {target} ({room(source)} is in layer {layer_of(room(source))}, "
        f"{room(target)} in layer {layer_of(room(target))})"
        for source, target, line in direct_imports()
        if layer_of(room(target)) > layer_of(room(source))
    ]
    assert not upward, "imports pointing up a layer:\n" + "\n".join(upward)


def test_no_cycles_between_rooms():
    """In bertkit/ and in each of its packages, the parts never import each other in a loop."""
    known = modules()
    packages = sorted({n for n, p in known.items() if p.name == "__init__.py"})
    found = []
    for package in packages:
        graph: dict[str, set[str]] = {}
        for source, target, _ in direct_imports():
            if source.startswith(package + ".") and target.startswith(package + "."):
                a, b = room(source, package), room(target, package)
                if a != b:
                    graph.setdefault(a, set()).add(b)
        found += [f"{package}: {', '.join(group)}" for group in cycles(graph)]
    assert not found, "parts of a package that import each other in a loop:\n" + "\n".join(found)


def test_imports_of_bertkits_modules_are_at_the_top():
    """Outside cli/ (whose commands import what they run inside their bodies, so `bertkit --help`
    loads nothing heavy), an import of a bertkit module inside a function says why on its line."""
    known = modules()
    hidden = []
    for name, path in known.items():
        if name.startswith("bertkit.cli"):
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for node, _, lazy in import_statements(path, known):
            said = any(LAZY_MARK in lines[i - 1] for i in range(node.lineno, node.end_lineno + 1))
            if lazy and not said:
                hidden.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    assert not hidden, f"imports inside functions with no `{LAZY_MARK} why`:\n" + "\n".join(hidden)


def test_the_layer_check_sees_an_import_up_a_layer_hidden_in_a_function(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from bertkit.cli import main  # lazy: a reason that does not help\n")
    known = {"bertkit.cli": None}
    [(node, targets, lazy)] = import_statements(source, known)
    assert targets == {"bertkit.cli"} and lazy
    assert layer_of(room("bertkit.cli")) > layer_of(room("bertkit.core.errors"))


# ---------------------------------------------------------------- modules


def test_no_import_cycles():
    graph = import_graph()
    found = cycles(graph)
    detail = "\n".join(
        "; ".join(f"{v} -> {', '.join(sorted(w for w in graph[v] if w in group))}" for v in group) for group in found
    )
    assert not found, f"import cycles:\n{detail}"


def test_the_cycle_check_sees_a_cycle_hidden_in_a_function():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_an_import_runs_the_package_faces_on_its_way(tmp_path):
    known = {"bertkit.x": None, "bertkit.x.y": None, "bertkit.z": None}
    source = tmp_path / "z.py"
    source.write_text("def f():\n    from bertkit.x.y import thing\n", encoding="utf-8")
    assert imported("bertkit.z", source, known) == {"bertkit.x", "bertkit.x.y"}
    inner = tmp_path / "w.py"
    inner.write_text("from bertkit.x import y\n", encoding="utf-8")
    assert imported("bertkit.x.w", inner, known) == {"bertkit.x.y"}  # its own package face already ran


def test_no_module_is_too_long_to_read():
    long = {name: n for name, path in modules().items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by what they do): {long}"


def test_each_task_package_face_is_light():
    """A task's package `__init__` only describes it: importing a helper such as
    `bertkit.tasks.ner.tags` must not load the task (and the model code behind it)."""
    faces = [face for face in (PACKAGE / "tasks").glob("*/__init__.py") if (face.parent / "record.py").is_file()]
    assert len(faces) >= 7
    for face in faces:
        tree = ast.parse(face.read_text(encoding="utf-8"))
        assert not [n for n in tree.body if not isinstance(n, ast.Expr)], f"{face} does more than describe"


def test_only_the_commands_build_a_config():
    """Readers take what they need (a source, the columns, a task's settings), so `evaluate` and
    the tasks read data without inventing a throwaway config: `load_config` is the commands' alone."""
    callers = sorted(
        name
        for name, path in modules().items()
        if "load_config(" in path.read_text(encoding="utf-8")
        and not name.startswith(("bertkit.cli", "bertkit.config"))
    )
    assert not callers, f"modules that build a config of their own: {callers}"
