"""The shape of the code: no import cycles between bertkit's modules (imports inside functions
count too: they are how cycles hide), and no module so long that a reader loses its thread."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "bertkit"
MAX_LINES = 400


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    hidden = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(n) for n in ast.walk(node))
    return hidden


def imported(name: str, path: Path, known: dict) -> set[str]:
    """The bertkit modules `name` makes Python run: each module it imports (anywhere in it, except
    under TYPE_CHECKING), and the package face (`__init__`) of every package on the way to it
    that `name` itself is not inside (importing `a.b.c` runs `a/b/__init__.py` first)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hidden = _type_checking_nodes(tree)
    targets = set()
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            targets.update(a.name for a in node.names if a.name.startswith("bertkit"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bertkit"):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                targets.add(sub if sub in known else node.module)
    ran = set()
    for target in targets:
        parts = target.split(".")
        for i in range(1, len(parts) + 1):
            step = ".".join(parts[:i])
            inside = name == step or name.startswith(step + ".")
            if step in known and not inside:
                ran.add(step)
    return ran - {name}


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(name, path, known) for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
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
    for face in (PACKAGE / "tasks").glob("*/__init__.py"):
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
