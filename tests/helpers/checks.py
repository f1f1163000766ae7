"""Assertions shared by the tests."""


def assert_refused(code: int, err: str, *needles: str) -> None:
    """A clean refusal: exit code 2, no traceback, and each needle in the message (whitespace
    runs, such as rich's line wrapping, count as one space)."""
    assert code == 2, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in " ".join(err.split()), err


def write_config(tmp_path, model, train, out=None, extra: str = "", max_length: int = 32, task: str = "classify"):
    """A small training config at tmp_path/run.yaml: `extra` is appended as YAML (more sections)."""
    path = tmp_path / "run.yaml"
    path.write_text(
        f"task: {task}\nmodel:\n  name: {model}\n  max_length: {max_length}\n"
        f"data:\n  train: {train}\noutput_dir: {out or tmp_path / 'out'}\n{extra}"
    )
    return path
