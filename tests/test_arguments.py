from __future__ import annotations

import json
from pathlib import Path

import pytest

from crawler.app.arguments import (
    SECONDS,
    ArgumentError,
    check_api_base,
    check_base_url,
    check_card_template,
    check_number,
    check_release_dir,
    check_setting,
    check_state_layout,
    check_writable,
    parse_event_id,
    parse_event_ids,
)
from crawler.publish.card import DEFAULT_TEMPLATE
from crawler.state.fsutil import DamagedFile


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("502", "502"),
        (469, "469"),
        (" 0431 ", "431"),
        ("https://underline.io/events/502/sessions?eventSessionId=1", "502"),
        ("https://underline.io/events/469/posters/12/poster/130001-x", "469"),
        ("http://127.0.0.1:8080/events/431", "431"),
    ],
)
def test_an_event_is_an_id_or_its_page_url(given: str | int, expected: str) -> None:
    assert parse_event_id(given) == expected


@pytest.mark.parametrize("given", ["abc", "", "5o2", "https://underline.io/lecture/130001-x", "-1"])
def test_anything_else_is_refused_with_what_to_pass(given: str) -> None:
    with pytest.raises(ArgumentError, match="event id"):
        parse_event_id(given)


def test_events_are_kept_once_in_the_order_given() -> None:
    assert parse_event_ids(["502", "https://underline.io/events/469/x", "502"]) == ("502", "469")
    with pytest.raises(ArgumentError):
        parse_event_ids([])


def test_base_urls_need_a_scheme_and_lose_a_trailing_slash() -> None:
    assert check_base_url("https://underline.io/", what="--web-base") == "https://underline.io"
    with pytest.raises(ArgumentError, match=r"--web-base .underline\.io. must be an http"):
        check_base_url("underline.io", what="--web-base")
    with pytest.raises(ArgumentError):
        check_base_url("ftp://underline.io", what="--web-base")


def test_an_api_base_given_with_its_api_path_is_accepted() -> None:
    assert check_api_base("https://app.underline.io/api/v1") == "https://app.underline.io"
    assert check_api_base("https://app.underline.io/api/v1/") == "https://app.underline.io"
    assert check_api_base("http://127.0.0.1:9/") == "http://127.0.0.1:9"


def test_settings_are_checked_against_their_defaults_type() -> None:
    assert check_setting("DOWNLOAD_DELAY", "1.5") == "1.5"
    assert check_setting("CONCURRENT_REQUESTS", 4) == 4
    assert check_setting("ROBOTSTXT_OBEY", "False") == "False"
    with pytest.raises(ArgumentError, match="DOWNLOAD_DELAY takes a number, not 'fast'"):
        check_setting("DOWNLOAD_DELAY", "fast")
    with pytest.raises(ArgumentError, match="whole number"):
        check_setting("CONCURRENT_REQUESTS", "2.5")
    with pytest.raises(ArgumentError, match="True or False"):
        check_setting("ROBOTSTXT_OBEY", "maybe")
    with pytest.raises(ArgumentError, match="must not be negative"):
        check_setting("DOWNLOAD_DELAY", "-1")
    with pytest.raises(ArgumentError, match="unknown setting 'DOWNLOAD_DELAYS'"):
        check_setting("DOWNLOAD_DELAYS", "1")


def test_a_folder_that_cannot_be_made_is_caught(tmp_path: Path) -> None:
    assert check_writable(tmp_path / "new" / "deeper", what="--out") == tmp_path / "new" / "deeper"
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(ArgumentError, match=r"--out .* is not writable"):
        check_writable(blocker / "out", what="--out")


@pytest.mark.parametrize(
    "url",
    [
        "https://jane:s3cret@underline.io",
        "https://jane@underline.io/",
        "http://:s3cret@127.0.0.1:8080",
        "jane:s3cret@underline.io",
        "ftp://jane:s3cret@underline.io",
    ],
)
def test_a_base_url_with_a_user_or_password_is_refused_without_printing_it(url: str) -> None:
    with pytest.raises(ArgumentError) as raised:
        check_base_url(url, what="--web-base")
    message = str(raised.value)
    assert message == (
        "--web-base must not carry a user name or password (user:password@host); "
        "give the site's address alone"
    )
    assert "s3cret" not in message and "jane" not in message
    with pytest.raises(ArgumentError, match="--api-base must not carry a user name or password"):
        check_api_base(url)


def test_an_at_sign_in_the_path_is_not_a_password() -> None:
    assert check_base_url("https://underline.io/@team", what="--web-base") == "https://underline.io/@team"


def test_a_port_that_is_not_a_number_is_refused() -> None:
    with pytest.raises(ArgumentError, match="has a port that is not a number"):
        check_base_url("http://127.0.0.1:80x", what="--web-base")


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("DOWNLOAD_DELAY", "nan", "setting DOWNLOAD_DELAY takes a finite number, not 'nan'"),
        ("DOWNLOAD_DELAY", "inf", "setting DOWNLOAD_DELAY takes a finite number, not 'inf'"),
        ("DOWNLOAD_DELAY", float("nan"), "setting DOWNLOAD_DELAY takes a finite number, not nan"),
        ("DOWNLOAD_DELAY", "1e9", "setting DOWNLOAD_DELAY must be at least 0 and at most 86400, not '1e9'"),
        ("CONCURRENT_REQUESTS_PER_DOMAIN", "0", "setting CONCURRENT_REQUESTS_PER_DOMAIN must be at least 1"),
        ("CONCURRENT_REQUESTS", 0, "setting CONCURRENT_REQUESTS must be at least 1, not 0"),
        ("CONCURRENT_ITEMS", "0", "setting CONCURRENT_ITEMS must be at least 1, not '0'"),
        ("DOWNLOAD_TIMEOUT", "0", "setting DOWNLOAD_TIMEOUT must be more than 0 and at most 86400"),
        (
            "WORKER_JOB_TIMEOUT",
            "0",
            "setting WORKER_JOB_TIMEOUT must be more than 0 and at most 86400, not '0'",
        ),
        (
            "WORKER_JOB_TIMEOUT",
            0.0,
            "setting WORKER_JOB_TIMEOUT must be more than 0 and at most 86400, not 0.0",
        ),
        ("WORKER_JOB_TIMEOUT", "1e6", "setting WORKER_JOB_TIMEOUT must be more than 0 and at most 86400"),
        (
            "MEMUSAGE_CHECK_INTERVAL_SECONDS",
            "0",
            "setting MEMUSAGE_CHECK_INTERVAL_SECONDS must be more than 0 and at most 86400, not '0'",
        ),
        ("UNDERLINE_REVALIDATE_AFTER_DAYS", "nan", "UNDERLINE_REVALIDATE_AFTER_DAYS takes a finite number"),
        ("UNDERLINE_REVALIDATE_AFTER_DAYS", "1e12", "UNDERLINE_REVALIDATE_AFTER_DAYS must be at least 0 and"),
        (
            "UNDERLINE_REVALIDATE_SHARE",
            "1.5",
            "setting UNDERLINE_REVALIDATE_SHARE must be at least 0 and at most 1",
        ),
        ("UNDERLINE_REVALIDATE_SHARE", "-0.1", "setting UNDERLINE_REVALIDATE_SHARE must not be negative"),
        ("UNDERLINE_PAGE_SIZE", "0", "setting UNDERLINE_PAGE_SIZE must be at least 1 and at most 100"),
        ("UNDERLINE_MAX_LISTING_PAGES", "0", "setting UNDERLINE_MAX_LISTING_PAGES must be at least 1"),
        ("AUTOTHROTTLE_TARGET_CONCURRENCY", "0", "must be more than 0"),
        (
            "UNDERLINE_WEB_BASE",
            "https://jane:s3cret@underline.io",
            "setting UNDERLINE_WEB_BASE must not carry",
        ),
        ("UNDERLINE_API_BASE", "underline.io", "setting UNDERLINE_API_BASE 'underline.io' must be an http"),
    ],
)
def test_settings_no_crawl_can_mean_are_refused_naming_the_setting(
    key: str, value: object, says: str
) -> None:
    with pytest.raises(ArgumentError) as raised:
        check_setting(key, value)
    assert says in str(raised.value)
    assert "s3cret" not in str(raised.value)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("DOWNLOAD_DELAY", "0", "0"),
        ("DOWNLOAD_DELAY", "86400", "86400"),
        ("UNDERLINE_REVALIDATE_SHARE", "1", "1"),
        ("UNDERLINE_REVALIDATE_SHARE", 0.0, 0.0),
        ("UNDERLINE_REVALIDATE_AFTER_DAYS", "0", "0"),
        ("CONCURRENT_ITEMS", "1", "1"),
        ("WORKER_JOB_TIMEOUT", "0.5", "0.5"),
        ("MEMUSAGE_CHECK_INTERVAL_SECONDS", "86400", "86400"),
        # 0 means "never" for these: still accepted.
        ("FRONTIER_IDLE_TIMEOUT", "0", "0"),
        ("CLOSESPIDER_TIMEOUT", "0", "0"),
        ("PROGRESS_INTERVAL", "0", "0"),
        ("BACKOFF_PRIORITY_ADJUST", "-2", "-2"),
        ("UNDERLINE_API_BASE", "http://127.0.0.1:9/api/v1/", "http://127.0.0.1:9"),
    ],
)
def test_the_edges_of_what_a_setting_may_be_are_accepted(key: str, value: object, expected: object) -> None:
    assert check_setting(key, value) == expected


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0, 86_401.0])
def test_a_delay_option_must_be_a_finite_number_of_seconds(value: float) -> None:
    with pytest.raises(ArgumentError, match=r"--delay must be a number at least 0 and at most 86400, not "):
        check_number(value, what="--delay", bounds=SECONDS)
    assert check_number(0.0, what="--delay", bounds=SECONDS) == 0.0


def test_known_state_entries_of_the_wrong_kind_are_damage_named_with_a_way_out(tmp_path: Path) -> None:
    assert check_state_layout(tmp_path) == tmp_path
    (tmp_path / "stage").write_text("x")
    with pytest.raises(
        DamagedFile, match=r"stage is damaged \(a file where a folder belongs\); move it aside"
    ):
        check_state_layout(tmp_path)
    (tmp_path / "stage").unlink()
    (tmp_path / "stage").mkdir()
    (tmp_path / "run.lock").mkdir()
    with pytest.raises(DamagedFile, match=r"run.lock is damaged \(a folder where a file belongs\)"):
        check_state_layout(tmp_path)


def test_an_output_folder_must_be_new_empty_or_a_readable_release(tmp_path: Path) -> None:
    assert check_release_dir(tmp_path / "new") == tmp_path / "new"
    (tmp_path / "empty").mkdir()
    assert check_release_dir(tmp_path / "empty") == tmp_path / "empty"
    other = tmp_path / "photos"
    other.mkdir()
    (other / "holiday.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(
        ArgumentError, match=r"--out '.*photos' exists and is not a release \(no manifest.json\)"
    ):
        check_release_dir(other)
    release = tmp_path / "release"
    (release / "changes").mkdir(parents=True)
    (release / "manifest.json").write_text(json.dumps({"version": "2026-12-01", "change_files": []}))
    assert check_release_dir(release) == release
    (release / "manifest.json").write_text(
        json.dumps({"version": "2026-12-01", "change_files": ["changes/2026-12-01.parquet"]})
    )
    (release / "changes" / "2026-12-01.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(DamagedFile, match=r"2026-12-01.parquet is damaged \(unreadable change file"):
        check_release_dir(release)
    (release / "manifest.json").write_text("{")
    with pytest.raises(DamagedFile, match=r"manifest.json is damaged \(not valid JSON"):
        check_release_dir(release)


def test_a_card_template_must_exist_be_text_and_parse(tmp_path: Path) -> None:
    good = tmp_path / "card.md"
    good.write_text("---\nlicense: mit\n---\n# {{ pretty_name }}\n", encoding="utf-8")
    assert check_card_template(good) == good
    with pytest.raises(ArgumentError, match=r"--card-template '.*missing.md' does not exist"):
        check_card_template(tmp_path / "missing.md")
    broken = tmp_path / "broken.md"
    broken.write_text("# {{ pretty_name\n", encoding="utf-8")
    with pytest.raises(
        ArgumentError, match=r"--card-template '.*broken.md' is not a valid template: .* \(line 1\)"
    ):
        check_card_template(broken)
    latin = tmp_path / "latin.md"
    latin.write_bytes("# Caf\xe9\n".encode("latin-1"))
    with pytest.raises(ArgumentError, match=r"is not UTF-8 text"):
        check_card_template(latin)
    with pytest.raises(ArgumentError, match=r"cannot be read"):
        check_card_template(tmp_path)


def test_a_card_template_may_read_only_what_the_card_defines(tmp_path: Path) -> None:
    template = tmp_path / "card.md"
    template.write_text(DEFAULT_TEMPLATE.read_text(encoding="utf-8"), encoding="utf-8")
    assert check_card_template(template) == template
    # Names set or looped over in the template, and Jinja's own, are defined.
    template.write_text(
        "{% set n = counts.lectures %}{{ n }}{% for r in range(3) %}{{ r }}{{ loop.index }}{% endfor %}\n",
        encoding="utf-8",
    )
    assert check_card_template(template) == template
    template.write_text(
        "# {{ pretty_name }}\n{{ versoin }}\n{% if extra is defined %}{{ extra.a }}{% endif %}\n",
        encoding="utf-8",
    )
    with pytest.raises(ArgumentError) as raised:
        check_card_template(template)
    assert str(raised.value) == (
        f"--card-template {str(template)!r} uses what the card does not define: 'versoin' (line 2), "
        "'extra' (line 3); the names it defines are CardContext's in crawler/publish/card.py and the "
        "metadata's fields"
    )
