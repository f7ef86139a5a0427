"""Operator mistakes get exit status 2 and one clear line, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from crawler.app.cli import main
from crawler.schema import Lecture
from crawler.state.stage import StageWriter
from tests.support.replica import QUICK_GIVE_UP, eventcrawl
from tests.test_stage import record

UNREACHABLE = ["--web-base", "http://127.0.0.1:9", "--api-base", "http://127.0.0.1:9"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["crawl", "--event-id", "abc"], "event 'abc' is neither an event id"),
        (["crawl", "--web-base", "underline.io"], "--web-base 'underline.io' must be an http"),
        (["crawl", "-s", "DOWNLOAD_DELAY=fast"], "setting DOWNLOAD_DELAY takes a number, not 'fast'"),
        (["crawl", "-s", "DOWNLOAD_DELAYS=1"], "unknown setting 'DOWNLOAD_DELAYS'"),
        (["run", "--event-id", "12x"], "event '12x' is neither an event id"),
        # Nothing listens on port 9 of loopback: were the setting taken, the crawl would fail (exit 5).
        (
            ["crawl", *UNREACHABLE, *QUICK_GIVE_UP, "-s", "WORKER_JOB_TIMEOUT=0"],
            "setting WORKER_JOB_TIMEOUT must be more than 0 and at most 86400, not '0'",
        ),
        (
            ["crawl", *UNREACHABLE, *QUICK_GIVE_UP, "-s", "MEMUSAGE_CHECK_INTERVAL_SECONDS=0"],
            "setting MEMUSAGE_CHECK_INTERVAL_SECONDS must be more than 0 and at most 86400, not '0'",
        ),
        (["run", "--api-base", "app.underline.io/api/v1"], "--api-base 'app.underline.io/api/v1' must be"),
    ],
)
def test_a_mistake_gets_one_line_and_status_2(tmp_path: Path, args: list[str], says: str) -> None:
    result = eventcrawl(*args, "--state", str(tmp_path / "state"), cwd=tmp_path, timeout=60)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert says in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "state" / "stage").exists()


def test_an_output_folder_that_cannot_be_written_is_refused_before_crawling(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = eventcrawl(
        "run", "--state", str(tmp_path / "state"), "--out", str(blocker / "out"), cwd=tmp_path, timeout=60
    )
    assert result.returncode == 2, result.stderr
    assert "is not writable" in result.stderr or "exists and is not a directory" in result.stderr
    assert not (tmp_path / "state" / "stage").exists()


def test_a_configuration_with_an_unknown_setting_or_a_gate_out_of_range_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "eventcrawl.toml"
    config.write_text(
        '[crawl]\nevent_ids = ["502"]\n[crawl.settings]\nDOWNLOAD_DELAI = 1\n', encoding="utf-8"
    )
    result = eventcrawl("run", "--config", str(config), cwd=tmp_path, timeout=60)
    assert result.returncode == 2
    assert "unknown setting 'DOWNLOAD_DELAI'" in result.stderr
    config.write_text("[gate]\nmax_drop = 10\n", encoding="utf-8")
    result = eventcrawl("run", "--config", str(config), cwd=tmp_path, timeout=60)
    assert result.returncode == 2
    assert "[gate] max_drop is a share between 0 and 1, got 10" in result.stderr


def test_a_site_that_cannot_be_reached_is_a_failed_crawl_not_a_usage_error(tmp_path: Path) -> None:
    # Port 9 on loopback: nothing listens there.
    result = eventcrawl(
        "crawl", "--state", str(tmp_path / "state"),
        "--web-base", "http://127.0.0.1:9", "--api-base", "http://127.0.0.1:9",
        *QUICK_GIVE_UP, "-s", "DOWNLOAD_DELAY=0", "-s", "LOG_LEVEL=ERROR",
        cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert result.returncode == 5, result.stderr[-2000:]
    assert (
        "could not be reached" in result.stderr or "could not read the whole lecture listing" in result.stderr
    )


SECRET = "s3cret"


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """The command's entry point in this process, for mistakes it refuses before any crawl; a
    traceback would fail the test."""
    code = main(list(args))
    out, err = capsys.readouterr()
    assert out == ""
    return code, err


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["crawl", "--web-base", f"http://jane:{SECRET}@127.0.0.1:9"],
            "--web-base must not carry a user name",
        ),
        (
            ["crawl", "--api-base", f"https://jane:{SECRET}@app.underline.io"],
            "--api-base must not carry a user",
        ),
        (
            ["run", "--web-base", f"https://jane:{SECRET}@underline.io"],
            "--web-base must not carry a user name",
        ),
        (["check-site", "--web-base", f"https://jane:{SECRET}@underline.io"], "--web-base must not carry"),
        (["record", "--out", "rec", "--api-base", f"https://:{SECRET}@x.org"], "--api-base must not carry"),
        (
            ["crawl", "-s", f"UNDERLINE_WEB_BASE=https://jane:{SECRET}@x.org"],
            "setting UNDERLINE_WEB_BASE must not",
        ),
        (["crawl", "-s", "DOWNLOAD_DELAY=nan"], "setting DOWNLOAD_DELAY takes a finite number, not 'nan'"),
        (["crawl", "-s", "DOWNLOAD_DELAY=inf"], "setting DOWNLOAD_DELAY takes a finite number, not 'inf'"),
        (
            ["crawl", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=0"],
            "setting CONCURRENT_REQUESTS_PER_DOMAIN must be at",
        ),
        (["crawl", "-s", "CONCURRENT_ITEMS=0"], "setting CONCURRENT_ITEMS must be at least 1, not '0'"),
        (
            ["run", "-s", "UNDERLINE_REVALIDATE_AFTER_DAYS=nan"],
            "UNDERLINE_REVALIDATE_AFTER_DAYS takes a finite",
        ),
        (
            ["run", "-s", "UNDERLINE_REVALIDATE_SHARE=1.5"],
            "UNDERLINE_REVALIDATE_SHARE must be at least 0 and at",
        ),
        (["check-site", "--delay", "inf"], "--delay must be a number at least 0 and at most 86400, not inf"),
        (["check-site", "--delay", "nan"], "--delay must be a number at least 0 and at most 86400, not nan"),
        (["record", "--out", "rec", "--timeout", "0"], "--timeout must be a number more than 0 and at most"),
        (["record", "--out", "rec", "--lectures", "0"], "--lectures must be at least 1, not 0"),
    ],
)
def test_values_that_cannot_be_meant_are_usage_errors_that_never_print_a_password(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    says: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = run_main(capsys, *args)
    assert code == 2, err
    assert err.startswith("eventcrawl: ") and says in err
    assert len(err.strip().splitlines()) == 1
    assert SECRET not in err
    assert not (tmp_path / "rec").exists()
    assert not (tmp_path / "state").exists()


def test_cache_purge_refuses_an_age_that_is_no_number_of_days(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run_main(capsys, "cache", "purge", "--state", str(tmp_path), "--max-age-days", "nan")
    assert (code, err.strip()) == (
        2,
        "eventcrawl: --max-age-days must be a number at least 0 and at most 36500, not nan",
    )


@pytest.mark.parametrize(
    ("command", "entry", "kind"),
    [
        ("crawl", "run.lock", "a folder where a file belongs"),
        ("run", "run.lock", "a folder where a file belongs"),
        ("run", "stage", "a file where a folder belongs"),
        ("publish", "stage", "a file where a folder belongs"),
    ],
)
def test_a_state_entry_of_the_wrong_kind_is_damage_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, entry: str, kind: str
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    if kind.startswith("a folder"):
        (state / entry).mkdir()
    else:
        (state / entry).write_text("x")
    extra = ["--out", str(tmp_path / "out")] if command != "crawl" else []
    site = UNREACHABLE if command != "publish" else []
    code, err = run_main(capsys, command, "--state", str(state), *extra, *site)
    assert code == 8, err
    (line,) = err.strip().splitlines()
    assert line.startswith(f"eventcrawl: {state / entry} is damaged ({kind}); move it aside (mv ")
    assert not (state / "crawl-report.json").exists()


def a_release_with_a_damaged_change_file(folder: Path) -> Path:
    (folder / "changes").mkdir(parents=True)
    manifest = {"version": "2026-12-01", "change_files": ["changes/2026-12-01.parquet"]}
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (folder / "changes" / "2026-12-01.parquet").write_bytes(b"PAR1" + b"\0" * 64)
    return folder


def a_folder_that_is_no_release(folder: Path) -> Path:
    folder.mkdir()
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("make", "code", "says"),
    [
        (
            a_folder_that_is_no_release,
            2,
            "' exists and is not a release (no manifest.json); name a new or empty",
        ),
        (a_release_with_a_damaged_change_file, 8, "2026-12-01.parquet is damaged (unreadable change file: "),
    ],
)
def test_run_checks_its_output_folder_before_crawling(
    tmp_path: Path, make: Callable[[Path], Path], code: int, says: str
) -> None:
    out = make(tmp_path / "out")
    result = eventcrawl(
        "run", "--state", str(tmp_path / "state"), "--out", str(out), *UNREACHABLE, cwd=tmp_path, timeout=120
    )
    # A crawl of the unreachable site would have ended with 5 and written its report.
    assert result.returncode == code, result.stderr[-2000:]
    (line,) = result.stderr.strip().splitlines()
    assert says in line
    assert not (tmp_path / "state" / "crawl-report.json").exists()
    assert (out / "notes.txt").exists() or (out / "manifest.json").exists()


@pytest.mark.parametrize(
    ("config", "says"),
    [
        (
            '[publish]\nredact_authors = [" "]\n',
            "[publish] redact_authors entries must be names or ORCID iDs, got ' '",
        ),
        ("[gate]\nmin_items = inf\n", "[gate] min_items must be a finite number, got inf"),
        (
            "[crawl.settings]\nUNDERLINE_REVALIDATE_AFTER_DAYS = nan\n",
            "UNDERLINE_REVALIDATE_AFTER_DAYS takes a finite",
        ),
        ("[crawl]\nstate = 'caf\xe9'\n", "is not UTF-8 text (invalid continuation byte at byte 20)"),
    ],
)
def test_a_configuration_no_run_can_mean_is_refused_before_crawling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: str, says: str
) -> None:
    path = tmp_path / "eventcrawl.toml"
    path.write_bytes(config.encode("latin-1"))
    code, err = run_main(
        capsys, "run", "--config", str(path), "--state", str(tmp_path / "state"), *UNREACHABLE
    )
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert says in line
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize(
    ("template", "says"),
    [
        (None, "--card-template 'missing.md' does not exist"),
        (b"# {{ pretty_name\n", "--card-template 'card.md' is not a valid template: "),
        (b"# Caf\xe9\n", "--card-template 'card.md' is not UTF-8 text"),
    ],
)
def test_publish_checks_its_card_template_and_output_folder_first(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    template: bytes | None,
    says: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    name = "missing.md" if template is None else "card.md"
    if template is not None:
        (tmp_path / name).write_bytes(template)
    code, err = run_main(capsys, "publish", "--state", "state", "--out", "out", "--card-template", name)
    assert code == 2
    assert err.strip().startswith(f"eventcrawl: {says}")
    a_folder_that_is_no_release(tmp_path / "other")
    code, err = run_main(capsys, "publish", "--state", "state", "--out", "other")
    assert (code, "exists and is not a release (no manifest.json)" in err) == (2, True)


def test_a_card_template_that_reads_what_the_card_lacks_is_a_usage_error(tmp_path: Path) -> None:
    writer = StageWriter(tmp_path / "state")
    writer.open()
    for lecture_id in ("1", "2"):
        writer.write_lecture(Lecture.from_json(record(lecture_id)))
    writer.close(complete=True, summary={"reason": "finished", "event_ids": ["502"]})
    # Two bare records (no authors): the gate would refuse them; the card is what is tested here.
    first = eventcrawl("publish", "--state", "state", "--out", "out", "--force", cwd=tmp_path, timeout=120)
    assert first.returncode == 0, first.stderr
    before = {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    names = "the names it defines are CardContext's in crawler/publish/card.py and the metadata's fields"
    for body, says in [
        ("{{ no_such_thing }}", f"--card-template 'card.md' uses what the card does not define: "
                                f"'no_such_thing' (line 4); {names}"),
        ("{{ x.y }}", f"--card-template 'card.md' uses what the card does not define: 'x' (line 4); {names}"),
        ("{{ stats.no_such_field }}", "card template 'card.md' uses what the card does not define: "
                                      "'dict object' has no attribute 'no_such_field' (line 4)"),
    ]:  # fmt: skip
        (tmp_path / "card.md").write_text(f"---\n{{{{ card_data }}}}\n---\n{body}\n", encoding="utf-8")
        result = eventcrawl(
            "publish",
            "--state",
            "state",
            "--out",
            "out",
            "--card-template",
            "card.md",
            "--force",
            cwd=tmp_path,
            timeout=120,
        )
        assert (result.returncode, result.stderr) == (2, f"eventcrawl: {says}\n"), f"case {body}"
        after = {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
        assert after == before, f"case {body}"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.lock", "card.md", "out", "state"]
