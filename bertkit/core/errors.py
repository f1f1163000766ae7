"""The one exception type for mistakes a user can make (bad config, bad data, missing files).

The CLI prints its message and exits with code 2; everything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class BertkitError(Exception):
    """A problem the user can fix; the message says where it is and what to do."""

    exit_code = 2


class RecordError(BertkitError):
    """An input record that cannot be read: a field the model reads is missing or is not what it
    must be. `field` names it, so that an answer can point at it (`bertkit serve`'s 422 `loc`)."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def did_you_mean(word: str, choices) -> str:
    """' (did you mean 'x'?)' for the closest choice, or '' when nothing is close."""
    import difflib

    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def first_line(err: BaseException) -> str:
    """An exception's message in one line (its first), or its type's name when it says nothing:
    the reason quoted inside a BertkitError that replaces a library's error."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
