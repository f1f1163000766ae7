"""Where a study lives: the `--storage` URL (a SQLite file in the output folder by default), the
SQLite file it names, and how a storage URL is shown. A URL may carry a password (in its user
part, or as a query parameter): every message, report and error that names the storage goes
through `shown_url` or `scrub`, so no credential is ever printed or written."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from urllib.parse import unquote

from bertkit.core.errors import BertkitError, first_line
from bertkit.core.extras import install_command
from bertkit.tuning.search import require_optuna

STUDY_FILE = "study.db"  # the default storage: a SQLite file in the output folder
# SQLite's companions of a database file: the journal of an unfinished write (which a process
# killed mid-write leaves, and which the next open needs to roll the write back) and WAL mode's
SQLITE_COMPANIONS = ("-journal", "-wal", "-shm")
# A trial whose process stops sending heartbeats (killed, machine lost) is marked failed after
# this long, so a resumed study neither waits for it nor counts it.
HEARTBEAT_SECONDS, GRACE_SECONDS = 30, 120
# SQLite shared by several processes: wait this long for another's write to finish.
SQLITE_WAIT_SECONDS = 60
# Query parameters whose values are shown; every other value is hidden (passwords, tokens, keys
# come under many names: password, passwd, pwd, sslpassword, token, access_token, api_key...).
HARMLESS_QUERY = frozenset({
    "mode", "uri", "cache", "immutable", "nolock", "vfs", "check_same_thread", "timeout", "charset",
    "sslmode", "connect_timeout", "application_name", "target_session_attrs", "driver", "client_encoding",
    "options", "host", "port", "dbname", "database", "user", "username", "unix_socket", "ssl_check_hostname",
    "read_default_file", "read_default_group", "autocommit", "echo",
})  # fmt: skip
HIDDEN = "***"
# The database driver each URL scheme opens through (SQLAlchemy's default where the URL names
# none: psycopg 3 for postgresql:// since SQLAlchemy 2.1), and the install that provides it (an
# extra of bertkit's: its packages, by core/extras.py).
POSTGRES_EXTRA = "postgres"  # pyproject.toml's extra with psycopg 3
DRIVERS = {
    "postgresql": POSTGRES_EXTRA,
    "postgresql+psycopg": POSTGRES_EXTRA,
    "postgresql+psycopg2": "pip install psycopg2-binary",
    "postgresql+asyncpg": "pip install asyncpg",
    "postgresql+pg8000": "pip install pg8000",
    "mysql": "pip install mysqlclient",
    "mysql+pymysql": "pip install pymysql",
    "mysql+mysqlconnector": "pip install mysql-connector-python",
    "mysql+mysqldb": "pip install mysqlclient",
}
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


def storage_url(given: str | None, output: Path) -> str:
    """The study's storage: a URL as given (checked), else a SQLite file in the output folder."""
    if not given:
        return f"sqlite:///{(output / STUDY_FILE).resolve()}"
    if not _SCHEME.match(given):
        raise BertkitError(
            f"--storage {shown_url(given)}: give a database URL, e.g. sqlite:///study.db, "
            "postgresql://user:password@host/db or mysql+pymysql://user:password@host/db"
        )
    scheme = _SCHEME.match(given).group(1)
    if "@" in (_parsed_host(given) or ""):
        raise BertkitError(
            f"--storage {shown_url(given)}: the password holds '@', which ends it early (the rest would be read as "
            "the host): write '@' in a password as %40 (and '/' as %2F, ':' as %3A, '%' as %25)"
        )
    if scheme.split("+")[0].lower() == "sqlite" and sqlite_file(given) is None:
        raise BertkitError(
            f"--storage {shown_url(given)}: an in-memory SQLite database ends with this process, and the study "
            "with it; give a file, e.g. sqlite:///study.db (or leave --storage out for study.db in the output folder)"
        )
    return given


def _parsed_host(url: str) -> str | None:
    """The host SQLAlchemy reads from `url` (it ends a password at its first '@')."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).host
    except Exception:  # ArgumentError, ValueError, or no SQLAlchemy
        return None  # opening the storage says what is wrong with it


def sqlite_file(url: str) -> Path | None:
    """The file a SQLite URL names (resolved from the current folder), None for an in-memory one;
    None too for a URL of another database."""
    match = _SCHEME.match(url)
    if not match or match.group(1).split("+")[0].lower() != "sqlite":
        return None
    rest = url[match.end() :]
    if not rest.startswith("/"):  # sqlite:// or sqlite://host...: no file
        return None
    # %-escapes decoded first (SQLite decodes them in a URI filename and its query, in any case):
    # `file:%3Amemory%3A` and `mode=%6Demory` are in memory too
    database, _, query = rest[1:].partition("?")
    database, query = unquote(database), unquote(query)
    if database.lower().startswith("file:"):  # a SQLite URI filename (uri=true): file:path?mode=...
        database, _, inner = database[len("file:") :].partition("?")
        database = unquote(database)
        query = f"{inner}&{query}"
    pairs = (part.partition("=") for part in query.split("&"))
    params = {key.strip().lower(): value.strip().lower() for key, _, value in pairs}
    if not database or database.lower() == ":memory:" or params.get("mode") == "memory":
        return None
    return Path(database).expanduser().resolve()


def companions(name: str) -> list[str]:
    """A SQLite file's name and its companions' (journal, WAL)."""
    return [name, *(name + end for end in SQLITE_COMPANIONS)]


def sqlite_files(url: str) -> list[Path]:
    """The SQLite file a URL names and its companions, or [] for another storage."""
    path = sqlite_file(url)
    return [path.with_name(name) for name in companions(path.name)] if path else []


def _split(url: str) -> tuple[str, str | None, str | None, str]:
    """(scheme, user, password, the rest) of a URL. The user part ends at the *last* '@' (a
    password may hold '/', ':', '?' or an unescaped '@'), so that what follows it is never part
    of a password; a URL whose rest starts with '/' (sqlite:////path) has no user part."""
    match = _SCHEME.match(url)
    if not match:
        return "", None, None, url
    rest = url[match.end() :]
    if rest.startswith("/") or "@" not in rest:
        return match.group(1), None, None, rest
    userinfo, _, after = rest.rpartition("@")
    user, colon, password = userinfo.partition(":")
    if "/" in user or "?" in user:  # the '@' is in the path or the query (?password=a@b), not after a user
        return match.group(1), None, None, rest
    return match.group(1), user, password if colon else None, after


def shown_url(url: str) -> str:
    """A storage URL fit to print or write: the password and every query value that is not known
    to be harmless hidden (`postgresql://me:***@host/db?sslmode=require&password=***`)."""
    scheme, user, password, rest = _split(url)
    if not scheme:  # not a URL: whatever precedes an '@' may be a password
        return HIDDEN if "@" in url else _hide_query(url)
    shown = f"{scheme}://"
    if user is not None:
        shown += f"{user}:{HIDDEN}@" if password is not None else f"{user}@"
    return shown + _hide_query(rest)


def _hide_query(text: str) -> str:
    base, mark, query = text.partition("?")
    if not mark:
        return text
    shown = []
    for part in query.split("&"):
        key, equals, _ = part.partition("=")
        harmless = unquote(key).lower() in HARMLESS_QUERY
        shown.append(part if harmless else f"{key}={HIDDEN}" if equals else HIDDEN)
    return f"{base}?{'&'.join(shown)}"


def secrets(url: str) -> list[str]:
    """Every piece of `url` that may be a credential, as written and %-decoded, longest first:
    the password and the query values that `shown_url` hides."""
    _, _, password, rest = _split(url)
    found = {password} if password else set()
    for query in (rest.partition("?")[2], url.partition("?")[2]):  # after the user part, and after the first '?'
        for part in query.split("&") if query else []:
            key, equals, value = part.partition("=")
            if unquote(key).lower() not in HARMLESS_QUERY:
                found.add(value if equals else key)
    try:  # as SQLAlchemy reads it, too (a password it ends at an '@', the query it passes on)
        from sqlalchemy.engine import make_url

        parsed = make_url(url)
        found |= {parsed.password or ""}
        found |= {str(v) for k, v in parsed.query.items() if k.lower() not in HARMLESS_QUERY}
    except Exception:  # not a URL SQLAlchemy reads, or no SQLAlchemy
        pass
    found |= {unquote(piece) for piece in found}
    return sorted((piece for piece in found if piece), key=len, reverse=True)


def scrub(text: str, url: str) -> str:
    """`text` (a message, an error of SQLAlchemy or a database driver) with `url` in it shown as
    `shown_url` gives it, and any credential of the URL that it still holds hidden."""
    text = text.replace(url, shown_url(url))
    for piece in secrets(url):
        text = text.replace(piece, HIDDEN)
    return text


def open_storage(url: str, attempts: int = 5):
    """Optuna's RDBStorage on `url`; an error opening it is exit 2 naming the storage (its
    credentials hidden, also where the database's own message repeats them)."""

    optuna = require_optuna()
    import time
    import warnings

    kwargs = {"connect_args": {"timeout": SQLITE_WAIT_SECONDS}} if sqlite_file(url) else {}
    for attempt in range(attempts):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # heartbeats are marked experimental
            try:
                return optuna.storages.RDBStorage(url, engine_kwargs=kwargs, heartbeat_interval=HEARTBEAT_SECONDS,
                                                  grace_period=GRACE_SECONDS)  # fmt: skip
            except ImportError as err:
                raise BertkitError(f"--storage {shown_url(url)}: {missing_driver(url, err)}") from None
            except Exception as err:  # sqlalchemy's: a bad URL, an unreachable server, a read-only file
                # processes starting together on a new database race to create its tables: the
                # loser finds them made and tries again
                racing = ("already exists", "UNIQUE constraint", "database is locked", "Duplicate entry")
                if any(text in str(err) for text in racing) and attempt < attempts - 1:
                    time.sleep(1 + attempt)
                    continue
                raise BertkitError(
                    f"--storage {shown_url(url)}: cannot open the study storage: {scrub(str(err), url)}"
                ) from None
    raise AssertionError("unreachable")


def missing_driver(url: str, err: ImportError) -> str:
    """What to install for the database driver `url` needs, which failed to import (`err`)."""
    cause = err.__cause__ if isinstance(err.__cause__, ImportError) else err
    module = getattr(cause, "name", None)
    scheme = _SCHEME.match(url).group(1).lower()
    fix = DRIVERS.get(scheme) or (f"pip install {module}" if module else "install its driver")
    fix = install_command(fix) if fix == POSTGRES_EXTRA else fix
    named = f" ({module})" if module else ""
    return f"its database driver{named} is not installed: {fix}"


def lost(url: str, study_name: str) -> str | None:
    """Why the study storage at `url` can no longer be read (a SQLite file deleted or replaced, a
    server gone, the study dropped), or None while it can: asked after a run failed, so that a
    storage that vanished under it ends the run in one line, not in Optuna's and SQLAlchemy's
    tracebacks."""
    file = sqlite_file(url)
    if file is not None and not file.is_file():
        return f"{file} is gone"
    optuna = require_optuna()
    try:
        with contextlib.redirect_stderr(None), warnings_off():
            optuna.load_study(study_name=study_name, storage=url)
    except Exception as err:  # any driver's, or Optuna's KeyError for a study that is not there
        return first_line(scrub(str(err), url)) or type(err).__name__
    return None


@contextlib.contextmanager
def warnings_off():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@contextlib.contextmanager
def errors_hidden(url: str):
    """Errors of the storage (a server gone, a full disk) as exit 2 naming the storage, and any
    error repeating a credential of `url` with it hidden."""
    from sqlalchemy.exc import SQLAlchemyError  # installed with Optuna, which tune() required

    try:
        yield
    except SQLAlchemyError as err:
        raise BertkitError(f"--storage {shown_url(url)}: the study storage failed: {scrub(str(err), url)}") from None
    except BertkitError as err:  # kept as it is (its kind, its exit code), its message scrubbed
        if scrub(str(err), url) != str(err):
            err.args = (scrub(str(err), url),)
        raise
