from __future__ import annotations

from pathlib import Path

import pytest

from crawler.arguments import (
    ArgumentError,
    check_api_base,
    check_base_url,
    check_setting,
    check_writable,
    parse_event_id,
    parse_event_ids,
)


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
