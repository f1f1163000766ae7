"""Assertions shared by the tests."""


def assert_refused(code: int, err: str, *needles: str) -> None:
    """A clean refusal: exit code 2, no traceback, and each needle in the message (whitespace
    runs, such as rich's line wrapping, count as one space)."""
    assert code == 2, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in " ".join(err.split()), err
