"""What the doors refuse, checked where it is decided, in process: the
command line's ``--timeout`` and ``--questions-log-days``, the server's
``forwarded_allow_ips``, and a file given as a question log that is not one.
The same refusals are tried end to end (exit status 2, a message, no
traceback) by the CLI and fuzz tests, whose child processes coverage does
not see."""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

import pytest
from pydantic import ValidationError

from sphinx_ragcite.cli.parser import build_parser
from sphinx_ragcite.questions.log import MAX_DAYS
from sphinx_ragcite.questions.schema import SCHEMA_VERSION, LogVersionError, open_log
from sphinx_ragcite.server.settings import MAX_TIMEOUT, ServerSettings


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["serve", "BUILD", *argv])


@pytest.mark.parametrize("value", ["0.5", "60", str(MAX_TIMEOUT)])
def test_timeouts_a_server_can_wait(value: str) -> None:
    assert parse("--timeout", value).timeout == float(value)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon", "1e400", "86401"])
def test_timeouts_refused(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        parse("--timeout", value)
    assert stop.value.code == 2
    assert "at most 86400 (a day)" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["1", "30", str(MAX_DAYS)])
def test_log_days_kept(value: str) -> None:
    days = parse("--questions-log", "q.db", "--questions-log-days", value)
    assert days.questions_log_days == int(value)


@pytest.mark.parametrize("value", ["0", "-3", "1.5", "1000000", "a week"])
def test_log_days_refused(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        parse("--questions-log", "q.db", "--questions-log-days", value)
    assert stop.value.code == 2
    assert "whole number of days" in capsys.readouterr().err


@pytest.mark.parametrize(
    "proxies", [(), ("*",), ("127.0.0.1", "::1"), ("10.0.0.0/8", "fd00::/8")]
)
def test_trusted_proxies_accepted(tmp_path: Path, proxies: tuple[str, ...]) -> None:
    settings = ServerSettings(build_dir=tmp_path, forwarded_allow_ips=proxies)
    assert settings.forwarded_allow_ips == proxies


@pytest.mark.parametrize("proxy", ["localhost", "10.0.0.1/8", "300.1.1.1", "", "::g"])
def test_trusted_proxies_refused(tmp_path: Path, proxy: str) -> None:
    """A host name or a network with host bits set is refused, as uvicorn
    would refuse it only once the first request came in."""
    with pytest.raises(ValidationError, match="is not an IP address"):
        ServerSettings(build_dir=tmp_path, forwarded_allow_ips=("127.0.0.1", proxy))


def test_a_missing_log_is_not_created_when_only_read(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no question log"):
        open_log(tmp_path / "absent.db", create=False)
    assert not (tmp_path / "absent.db").exists()


def some_sqlite(path: Path, *, version: int = 0, table: str = "results") -> Path:
    connection = sqlite3.connect(path)
    connection.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY)")
    connection.execute(f"PRAGMA user_version = {version}")
    connection.commit()
    connection.close()
    return path


@pytest.mark.parametrize("create", [True, False])
def test_another_sqlite_file_is_not_a_log(tmp_path: Path, create: bool) -> None:
    path = some_sqlite(tmp_path / "other.db")
    before = path.read_bytes()
    with pytest.raises(LogVersionError, match="no questions table"):
        open_log(path, create=create)
    assert path.read_bytes() == before


@pytest.mark.parametrize("create", [True, False])
def test_a_log_of_another_version_is_refused(tmp_path: Path, create: bool) -> None:
    path = some_sqlite(tmp_path / "q.db", version=SCHEMA_VERSION + 1, table="questions")
    with pytest.raises(LogVersionError, match=f"schema version {SCHEMA_VERSION + 1}"):
        open_log(path, create=create)


def test_an_empty_sqlite_file_read_only_is_not_a_log(tmp_path: Path) -> None:
    """No tables at all: a new log when writing, not a log when reading."""
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()
    with pytest.raises(LogVersionError, match="no questions table"):
        open_log(path, create=False)
    open_log(path).close()
    open_log(path, create=False).close()


def test_random_bytes_are_not_a_log(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    path.write_bytes(b"\x00\xffnot sqlite at all" * 100)
    with pytest.raises(LogVersionError, match="is not a question log"):
        open_log(path, create=False)
