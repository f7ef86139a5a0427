from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawler.urls import (
    LectureRef,
    canonical_lecture_url,
    lecture_ref,
    same_host,
    without_credentials,
)

WEB = "https://underline.io"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://underline.io/lecture/130123-router-tuning", ("130123", "router-tuning")),
        ("/lecture/130123", ("130123", None)),
        ("/lecture/130123/", ("130123", None)),
        ("/events/502/sessions/7001/lecture/130123-router-tuning", ("130123", "router-tuning")),
        (
            "/events/502/posters/7002/poster/130123-router-tuning?tab=abstract",
            ("130123", "router-tuning"),
        ),
        ("/lecture/000130123-router-tuning", ("130123", "router-tuning")),
        ("/events/502/sessions?eventSessionId=7001", None),
        ("/lecture/router-tuning", None),
        ("javascript:alert(1)//lecture/1", None),
        ("data:text/html,/lecture/1", None),
        ("https://underline.io/log-in", None),
    ],
)
def test_every_lecture_url_form_gives_its_id_and_slug(url: str, expected: LectureRef | None) -> None:
    assert lecture_ref(url) == expected


def test_a_lecture_without_a_slug_has_the_bare_canonical_url() -> None:
    assert canonical_lecture_url(WEB + "/", "7", None) == f"{WEB}/lecture/7"


def test_same_host_compares_host_and_port() -> None:
    assert same_host("http://127.0.0.1:8000/a", "http://127.0.0.1:8000")
    assert not same_host("http://127.0.0.1:8001/a", "http://127.0.0.1:8000")
    assert same_host("https://Underline.io/x", WEB)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://user:secret@underline.io:8443/x?y=1", "https://underline.io:8443/x?y=1"),
        ("https://hf_token@underline.io/", "https://underline.io/"),
        ("http://[::1]:80/a", "http://[::1]:80/a"),
        ("http://u:p@[::1]:80/a", "http://[::1]:80/a"),
        ("https://underline.io", "https://underline.io"),
    ],
)
def test_credentials_are_removed_from_urls(url: str, expected: str) -> None:
    assert without_credentials(url) == expected


@given(
    st.integers(min_value=1, max_value=10**9), st.from_regex(r"[a-z0-9]+(-[a-z0-9]+){0,4}", fullmatch=True)
)
def test_canonical_urls_parse_back_to_their_parts(lecture_id: int, slug: str) -> None:
    url = canonical_lecture_url(WEB, str(lecture_id), slug)
    assert lecture_ref(url) == (str(lecture_id), slug)
