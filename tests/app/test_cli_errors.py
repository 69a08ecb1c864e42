"""Every expected CLI failure: one line on stderr, a non-zero exit, no traceback.

The command-line cases run the real console entry point (``app.cli.main``) in a
subprocess, as a user would; the exception-class cases feed both click families (plain
``click`` and typer's bundled copy) to the one error printer.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np
import pytest

from app.cli import main
from app.cli.errors import INTERRUPTED_EXIT, click_classes, report_user_error, user_message

ENTRY = "from app.cli import main; main()"


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Outcome]:
    """Run ``driftlens ARGS`` in-process through the real entry point (``app.cli.main``)."""

    def run(*args: str) -> Outcome:
        monkeypatch.setattr(sys, "argv", ["driftlens", *args])
        monkeypatch.setenv("COLUMNS", "200")
        monkeypatch.delenv("DRIFTLENS_DEBUG", raising=False)
        capsys.readouterr()
        with pytest.raises(SystemExit) as stop:
            main()
        out = capsys.readouterr()
        return Outcome(int(stop.value.code or 0), out.out, out.err)

    return run


def assert_one_line(res: Outcome, needle: str) -> str:
    assert res.returncode != 0, res
    assert "Traceback" not in res.stderr, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert needle in lines[0], lines[0]
    return lines[0]


def _table(path: Path, *, condition: str = "n1") -> Path:
    rows = ["question_id,condition,condition_class,dtw"]
    for q in range(6):
        rows += [f"q{q},baseline,none,0.1", f"q{q},{condition},noise,0.2"]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--bootstrap", "0"), "--bootstrap"),
        (("--bootstrap", "abc"), "valid integer"),
        (("--bogus",), "No such option: --bogus"),
    ],
)
def test_stats_usage_errors_are_one_line(
    run_cli: Callable[..., Outcome], tmp_path: Path, args: tuple[str, ...], needle: str
) -> None:
    table = _table(tmp_path / "t.csv")
    line = assert_one_line(run_cli("stats", str(table), *args), needle)
    assert line.startswith("error: ")
    assert "driftlens stats --help" in line


def test_missing_argument_and_unknown_command_are_one_line(
    run_cli: Callable[..., Outcome],
) -> None:
    assert_one_line(run_cli("stats"), "Missing argument")
    assert_one_line(run_cli("no-such-command"), "No such command")


def test_markup_in_file_names_and_cells_is_printed_literally(
    run_cli: Callable[..., Outcome], tmp_path: Path
) -> None:
    odd = tmp_path / "a["
    odd.mkdir()
    missing = odd / "]b.csv"  # the path holds the Rich closing tag "[/]"
    line = assert_one_line(run_cli("stats", str(missing)), "[/]b.csv")
    assert str(missing) in line
    # A cell holding markup: the message shows it as written, not styled away.
    bad = tmp_path / "bold.csv"
    bad.write_text(
        "question_id,condition,condition_class,dtw\n"
        "q1,[bold]x[/bold],noise,0.1\nq1,[bold]x[/bold],attribute,0.2\n",
        encoding="utf-8",
    )
    assert_one_line(run_cli("stats", str(bad)), "'[bold]x[/bold]'")


def test_control_characters_in_messages_are_escaped(
    run_cli: Callable[..., Outcome], tmp_path: Path
) -> None:
    name = tmp_path / "evil\x1b]8;;http:x\x07name\x1b[2J.csv"
    res = run_cli("stats", str(name))
    line = assert_one_line(res, "File not found")
    assert "\x1b" not in res.stderr and "\x07" not in res.stderr
    assert "\\x1b]8;;http:x\\x07name\\x1b[2J.csv" in line


def test_yaml_syntax_error_names_file_and_line(
    run_cli: Callable[..., Outcome], tmp_path: Path
) -> None:
    bad = tmp_path / "onto.yaml"
    bad.write_text("name: x\nroots:\n  - name: [A\n", encoding="utf-8")
    line = assert_one_line(run_cli("ontology", "import", str(bad)), str(bad))
    assert "line 4" in line and "invalid YAML" in line


def test_ontology_validation_error_names_the_line(
    run_cli: Callable[..., Outcome], tmp_path: Path
) -> None:
    bad = tmp_path / "onto.yaml"
    bad.write_text(
        "name: x\nroots:\n- name: A\n  definition: a\n  leaves:\n"
        "  - {name: L, definition: d}\n  - {name: L, definition: e}\n",
        encoding="utf-8",
    )
    line = assert_one_line(run_cli("ontology", "import", str(bad)), str(bad))
    assert " line " in line


def test_non_utf8_file_names_the_file(run_cli: Callable[..., Outcome], tmp_path: Path) -> None:
    bad = tmp_path / "latin.yaml"
    bad.write_bytes("name: caf\xe9\n".encode("latin-1"))
    line = assert_one_line(run_cli("ontology", "import", str(bad)), str(bad))
    assert "not UTF-8" in line


def test_question_csv_error_names_the_line_where_the_record_starts(
    run_cli: Callable[..., Outcome], tmp_path: Path
) -> None:
    path = tmp_path / "q.csv"
    big = "x" * 1_000_000  # over the csv module's field limit
    path.write_text(f'id,question\nq1,"first\nspans two lines"\nq2,"{big}"\n', encoding="utf-8")
    line = assert_one_line(run_cli("questions", "import", str(path)), str(path))
    assert "line 4" in line, line


# ------------------------------------------------------------ both click families


def _families(name: str) -> list[type[BaseException]]:
    classes = list(click_classes(name))
    assert classes[0] is getattr(click.exceptions, name)
    return classes


def test_typer_bundled_click_family_is_recognised_when_present() -> None:
    try:
        from typer._click import exceptions as bundled
    except ImportError:
        pytest.skip("this typer uses plain click")
    assert bundled.UsageError in click_classes("UsageError")
    assert not issubclass(bundled.UsageError, click.ClickException)


@pytest.mark.parametrize("name", ["UsageError", "BadParameter", "NoSuchOption"])
def test_usage_errors_of_both_families_print_one_line(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for cls in _families(name):
        exc = cls("Bad value [/] here") if name != "NoSuchOption" else cls("--bogus")
        code = report_user_error(exc, debug=False)
        err = capsys.readouterr().err
        assert code == 2
        assert len(err.strip().splitlines()) == 1, err
        assert err.startswith("error: ") and "Traceback" not in err


def test_click_exception_and_abort_of_both_families(capsys: pytest.CaptureFixture[str]) -> None:
    for cls in _families("ClickException"):
        assert report_user_error(cls("plain [bold]failure[/bold]"), debug=False) == 1
        assert "plain [bold]failure[/bold]" in capsys.readouterr().err
    for cls in [*_families("Abort"), KeyboardInterrupt]:
        assert report_user_error(cls(), debug=False) == INTERRUPTED_EXIT
        err = capsys.readouterr().err
        assert "everything already stored" in err and "again to resume" in err
    for cls in _families("Exit"):
        assert user_message(cls(0)) == ("", 0)


def _wait_until_mapped(proc: subprocess.Popen[str], library: str, *, timeout: float) -> None:
    """Wait until ``proc`` has loaded ``library`` (its ``/proc/PID/maps`` names it)."""
    deadline = time.monotonic() + timeout
    maps = Path(f"/proc/{proc.pid}/maps")
    while library not in maps.read_text(errors="replace"):
        assert proc.poll() is None, "the command ended before it was interrupted"
        assert time.monotonic() < deadline, f"{library} not loaded within {timeout} s"
        time.sleep(0.05)


def test_ctrl_c_says_what_was_kept_and_how_to_resume(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    rows = ["question_id,condition,condition_class,dtw"]
    for q in range(300):
        for cond, klass in (("baseline", "none"), ("n1", "noise"), ("a1", "attribute")):
            rows += [f"q{q},{cond},{klass},{rng.random():.4f}" for _ in range(3)]
    table = tmp_path / "big.csv"
    table.write_text("\n".join(rows) + "\n", encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-c", ENTRY, "stats", str(table), "--bootstrap", "100000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A background job inherits SIGINT ignored; a user's terminal does not.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    # Ctrl-C once the command runs (it imports numpy only then): a fixed sleep sent it
    # while a loaded machine was still importing the CLI, before main() catches it.
    _wait_until_mapped(proc, "_multiarray_umath", timeout=180)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == INTERRUPTED_EXIT, err
    assert "Traceback" not in err
    assert "everything already stored" in err
    assert f"driftlens stats {table} --bootstrap 100000" in err


def test_json_lines_escape_c1_controls(capsys: pytest.CaptureFixture[str]) -> None:
    from app.cli.output import echo_jsonl

    echo_jsonl([{"text": "a\x9b2Jb\x1b[31m"}])
    out = capsys.readouterr().out
    assert "\x9b" not in out and "\x1b" not in out
    assert json.loads(out)["text"] == "a\x9b2Jb\x1b[31m"


def test_the_console_script_itself_prints_one_line(tmp_path: Path) -> None:
    """The installed entry point, in its own process: no traceback, exit 2."""
    table = _table(tmp_path / "t.csv")
    res = subprocess.run(
        [sys.executable, "-c", ENTRY, "stats", str(table), "--bootstrap", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: "), res.stderr


def test_stored_escape_sequences_are_listed_escaped(
    run_cli: Callable[..., Outcome], tmp_path: Path
) -> None:
    path = tmp_path / "q.jsonl"
    hostile = "[bold]x[/bold] move?\x1b[2J\x1b]8;;http://evil\x07click\x1b]8;;\x07"
    path.write_text(json.dumps({"id": "q\x1b[31m1", "text": hostile}) + "\n", encoding="utf-8")
    assert run_cli("questions", "import", str(path)).returncode == 0
    res = run_cli("questions", "list")
    assert res.returncode == 0
    assert "\x1b" not in res.stdout and "\x07" not in res.stdout
    assert "\\x1b[2J" in res.stdout and "[bold]x[/bold]" in res.stdout


def test_markdown_report_escapes_control_characters() -> None:
    from study.report.markdown import md_escape

    out = md_escape("a\x1b[2Jb\x9bc")
    assert "\x1b" not in out and "\x9b" not in out and "x1b" in out


# Ctrl-C while the CLI's modules are still loading, made deterministic: an import hook
# raises KeyboardInterrupt when ``app.cli.root`` is imported, as a real Ctrl-C would.
INTERRUPT_DURING_IMPORT = """
import sys

class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == "app.cli.root":
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, Interrupt())
from app.cli import main
main()
"""


def test_ctrl_c_while_the_cli_is_still_loading_is_one_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", INTERRUPT_DURING_IMPORT, "runs"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert proc.returncode == 130
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "Interrupted before the command started; nothing was changed."
    ]
