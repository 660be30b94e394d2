"""The command line's help names the data command (issue 39): `python -m toprank --help`
tells a new user how the demo's data are fetched, in plain text."""

import subprocess
import sys

import pytest

from toprank.cli import main
from toprank.datasets import DATASETS


def _help(capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def test_help_names_the_data_command_and_every_data_set(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys)
    assert "python -m toprank.datasets fetch [NAME ...] [--data-home DIR]" in text
    epilog = text[text.index("python -m toprank.datasets fetch [NAME") :]
    for name in DATASETS:
        assert name in epilog.split(), name


def test_help_shows_no_restructuredtext_markup(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys)
    assert "``" not in text and ":mod:" not in text
    assert "python -m toprank demo" in text


def test_module_entry_point_prints_the_same_help() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toprank", "--help"], capture_output=True, text=True, timeout=120, check=True
    )
    assert "python -m toprank.datasets fetch" in done.stdout
