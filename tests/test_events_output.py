"""What `eventcrawl events` prints and keeps of text the site sent: nothing a terminal obeys, no personal
data.

The replica serves the library listing over HTTP on loopback, its event names and answers made hostile;
the real command runs in a subprocess and its output and ``<state>/events.json`` are read as they are.
The cleaning's rules are checked on :mod:`crawler.sitetools.safe_text`'s functions directly below.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from crawler.replica.layout import ReplicaSite, build_site, load_records
from crawler.replica.server import ReplicaServer
from crawler.sitetools.safe_text import kept_text, terminal_text
from tests.support.replica import eventcrawl
from tests.support.sites import Override

# An event name as a hostile listing could send it: a colour change, a right-to-left override and an
# address said aloud.
HOSTILE_NAME = "\x1b[31mEMNLP 2025\u202e, ask jane dot doe at example dot com"
HOSTILE_PLACE = "Suzhou,\u200f China\u2066"


@pytest.fixture(scope="module")
def site() -> ReplicaSite:
    plain = build_site(load_records(), seed=3, lectures=30, side_event_every=3)
    events = dict(plain.events)
    events["502"] = dataclasses.replace(events["502"], name=HOSTILE_NAME, location=HOSTILE_PLACE)
    return dataclasses.replace(plain, events=events)


def events(server: ReplicaServer, state: Path, *extra: str) -> Any:
    return eventcrawl(
        "events", "--api-base", server.base_url, "--state", str(state), "--delay", "0",
        "--page-size", "10", *extra, timeout=120,
    )  # fmt: skip


def test_a_hostile_name_is_printed_escaped_and_kept_clean(site: ReplicaSite, tmp_path: Path) -> None:
    state = tmp_path / "state"
    with ReplicaServer(site) as server:
        first = events(server, state)
        as_json = events(server, state, "--json")
    assert first.returncode == 0, first.stderr
    # Every character the site sent is there to see, none obeyed; the address is not there.
    assert first.stdout.splitlines()[:3] == [
        r"id   name                                           start       end         lectures",
        r"469  EMNLP 2024                                     2024-11-12  2024-11-16        10",
        r"502  \x1b[31mEMNLP 2025\u202e, ask [email removed]  2025-11-05  2025-11-09        20",
    ]
    kept = json.loads((state / "events.json").read_text(encoding="utf-8"))
    assert kept["events"][1] == {
        "id": "502",
        "name": "EMNLP 2025, ask [email removed]",
        "start_date": "2025-11-05",
        "end_date": "2025-11-09",
        "location": "Suzhou, China",
        "lectures": 20,
    }
    # --json prints what the file keeps (the kept copy answers it, as it answers the table later).
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["events"][1]["name"] == "EMNLP 2025, ask [email removed]"
    assert "\u202e" not in as_json.stdout and "\x1b" not in as_json.stdout


def test_a_name_is_matched_as_it_is_kept(site: ReplicaSite, tmp_path: Path) -> None:
    with ReplicaServer(site) as server:
        found = events(server, tmp_path / "state", "--match", "EMNLP 2025, ask")
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[-1] == 'event_ids = ["502"]'


class FirstPageAs:
    """Answers listing page 1 with a body and content type of the test's own."""

    def __init__(self, body: bytes, content_type: str) -> None:
        self.body = body
        self.content_type = content_type

    def lecture_page(self, lecture: Any, query: Any) -> None:
        return None

    def listing(self, lectures: Any, size: int, number: int) -> Override | None:
        return Override(200, self.body, self.content_type, []) if number == 1 else None


def serve_first_page(site: ReplicaSite, body: bytes, content_type: str = "application/json") -> ReplicaServer:
    return ReplicaServer(site, overrides=lambda s, base: FirstPageAs(body, content_type))


@pytest.mark.parametrize(
    ("body", "content_type", "said"),
    [
        (
            json.dumps({"errors": [{"status": "503", "title": "\x1b]0;owned\x07Down\u202e"}]}).encode(),
            "application/json",
            r"eventcrawl: listing page 1 cannot be read: API error: 503 \x1b]0;owned\x07Down\u202e",
        ),
        (
            b"<html>maintenance</html>",
            "text/html\x1b[2J",
            r"eventcrawl: listing page 1 is not JSON (text/html\x1b[2J)",
        ),
    ],
)
def test_a_failure_quoting_the_site_is_printed_escaped(
    site: ReplicaSite, tmp_path: Path, body: bytes, content_type: str, said: str
) -> None:
    with serve_first_page(site, body, content_type) as server:
        failed = events(server, tmp_path / "state")
    assert failed.returncode == 1
    assert failed.stderr.splitlines()[-1] == said


def test_a_note_quoting_the_site_is_kept_and_printed_without_personal_data(
    site: ReplicaSite, tmp_path: Path
) -> None:
    page = {
        "data": [{"type": "thin_lectures", "id": "7", "attributes": {"event_id": 502}}],
        "included": [
            {
                "type": "thin_events",
                "id": "502",
                "attributes": {"name": "EMNLP 2025", "start_date": "jane dot doe at example dot com"},
            }
        ],
        "meta": {"total_pages": 1, "total_count": 1},
    }
    state = tmp_path / "state"
    with serve_first_page(site, json.dumps(page).encode()) as server:
        shown = events(server, state)
    assert shown.returncode == 0, shown.stderr
    note = "page 1: event 502 start is not a date: '[email removed]'"
    assert shown.stderr.splitlines() == [f"eventcrawl: {note}"]
    assert json.loads((state / "events.json").read_text(encoding="utf-8"))["notes"] == [note]


# -- the rules, on the functions themselves ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown", "kept"),
    [
        # C0 and C1 controls but the space; whitespace controls are kept as a space.
        ("a\x00b\x07c\x08d\x7fe", r"a\x00b\x07c\x08d\x7fe", "abcde"),
        ("a\x80b\x90c\x9fd", r"a\x80b\x90c\x9fd", "abcd"),
        ("tab\there\nand\rthere", r"tab\there\nand\rthere", "tab here and there"),
        ("line\u2028para\u2029end", r"line\u2028para\u2029end", "line para end"),
        # Bidirectional embeddings, overrides, isolates and marks.
        ("\u202aa\u202bb\u202cc\u202dd\u202ee", r"\u202aa\u202bb\u202cc\u202dd\u202ee", "abcde"),
        ("\u2066a\u2067b\u2068c\u2069d", r"\u2066a\u2067b\u2068c\u2069d", "abcd"),
        ("a\u200eb\u200fc\u061cd", r"a\u200eb\u200fc\u061cd", "abcd"),
        # Zero-width characters, the byte order mark, the soft hyphen, a tag character.
        ("a\u200bb\u200cc\u200dd\u2060e\ufefff", r"a\u200bb\u200cc\u200dd\u2060e\ufefff", "abcdef"),
        ("soft\u00adhyphen\U000e0041", r"soft\xadhyphen\U000e0041", "softhyphen"),
        # Escape sequences: shown with their ESC escaped, kept out whole.
        ("\x1b[1;31mred\x1b[0m", r"\x1b[1;31mred\x1b[0m", "red"),
        ("\x1b]0;title\x07name", r"\x1b]0;title\x07name", "name"),
        ("\x1b]8;;https://x.example/\x1b\\link", r"\x1b]8;;https://x.example/\x1b\link", "link"),
        ("\x1bcreset \x9b2Jclear", r"\x1bcreset \x9b2Jclear", "reset clear"),
        ("ends\x1b", r"ends\x1b", "ends"),
        # A lone surrogate cannot even be written to a terminal.
        ("a\ud800b", r"a\ud800b", "ab"),
        # Text with none of these is left as it is.
        ("Ångström 2025 — ACL/EMNLP (中国) C\\C++", "Ångström 2025 — ACL/EMNLP (中国) C\\C++", None),
    ],
)
def test_every_unsafe_character_is_escaped_to_show_and_removed_to_keep(
    text: str, shown: str, kept: str | None
) -> None:
    assert (terminal_text(text), kept_text(text)) == (shown, text if kept is None else kept)


@pytest.mark.parametrize(
    ("text", "shown", "kept"),
    [
        ("mail jane.doe@example.com now", "mail [email removed] now", "mail [email removed] now"),
        ("ask jane dot doe at example dot com", "ask [email removed]", "ask [email removed]"),
        ("call +44 20 7946 0958 today", "call [phone removed] today", "call [phone removed] today"),
        # A character hidden inside an address does not keep it; one just before it is still shown.
        (
            "\u202ejane\u200b dot doe at exa\u2060mple dot com\u202c!",
            r"\u202e[email removed]\u202c!",
            "[email removed]!",
        ),
        ("\x1b[31mjane.doe\x1b[0m@example.com", r"\x1b[31m[email removed]", "[email removed]"),
    ],
)
def test_personal_data_is_replaced_in_both(text: str, shown: str, kept: str) -> None:
    assert (terminal_text(text), kept_text(text)) == (shown, kept)
