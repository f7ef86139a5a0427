"""crawler.privacy.spoken.redact_spoken: e-mail addresses (written, obfuscated, spoken) and phone numbers out
of what was said; names, years, times and other numbers stay."""

from __future__ import annotations

import pytest

from crawler.privacy.spoken import redact_spoken

EMAIL = "[email removed]"
PHONE = "[phone removed]"

REDACTED = [
    ("write to jane.doe@example.org today", f"write to {EMAIL} today"),
    ("write to jane (at) example (dot) org today", f"write to {EMAIL} today"),
    ("mail jane dot doe at example dot com today", f"mail {EMAIL} today"),
    ("mail JANE DOT DOE AT EXAMPLE DOT COM", f"mail {EMAIL}"),
    ("j underscore smith at uni dash hamburg dot de is mine", f"{EMAIL} is mine"),
    ("mail jane.doe at example dot com", f"mail {EMAIL}"),
    ("reach me at jane at mail dot example dot co dot uk please", f"reach me at {EMAIL} please"),
    ("call +44 20 7946 0958 now", f"call {PHONE} now"),
    ("call +1-555-123-4567.", f"call {PHONE}."),
    ("call +14155552671 now", f"call {PHONE} now"),
    ("call +1 (555) 123-4567 now", f"call {PHONE} now"),
    ("call +49 (0)30 1234567 now", f"call {PHONE} now"),
    ("call (555) 123-4567 now", f"call {PHONE} now"),
    ("call 555-123-4567, or", f"call {PHONE}, or"),
    ("call 555.123.4567 now", f"call {PHONE} now"),
    ("call 555 123 4567 now", f"call {PHONE} now"),
    # The domain written, a provider said alone, a name spelled out, a spaced "@".
    ("write to carol.x at gmail.com please", f"write to {EMAIL} please"),
    ("write to xy at hotmail.com", f"write to {EMAIL}"),
    ("mail jane dot doe at gmail today", f"mail {EMAIL} today"),
    ("mail jane_doe at outlook.", f"mail {EMAIL}."),
    ("it is d a v e @ example . com thanks", f"it is {EMAIL} thanks"),
    ("it is d a v e ＠ example . com", f"it is {EMAIL}"),
    ("spell j a n e dot d o e at example dot org", f"spell {EMAIL}"),
    ("call 0049 30 1234567 now", f"call {PHONE} now"),
    ("my office 030 1234567", f"my office {PHONE}"),
    ("text 07700 900123", f"text {PHONE}"),
]

KEPT = [
    "I am Jane Doe from Example Labs",
    "Jane Doe at Example Labs",
    "we looked at example dot com",
    "the code is available at github dot com",
    "in 2023 and 2024, 1999-2000-2001",
    "at 10:30 or 00:01:02 or 00:01:02.500",
    "pi is 3.14 and version 1.2.3",
    "we got +3 points on 12 345 samples",
    "the dates 2023-12-08 and 1,234,567 items",
    "call 911 or 112",
    "ISBN 978-3-16-148410-0",
    "a ratio of 3.555 123 4567",
    "serial 9555-123-4567 and 555 123 4567.5",
    "scores +1 2 3 up",
    "a note at section dot two",
    "jane dot doe at",
    # "at" and "dot" in prose, providers named, sites cited.
    "we looked at the dot product",
    "papers at aclweb.org and code at github.com",
    "she interned at yahoo",
    "jane at gmail",
    "I'm at gmail",
    "e.g. A @ B and x = A @ B.T",
    "hidden sizes 256 512 1024 and 2048",
    "prices moved +12.34 56.78",
    # A dictated name holds no word of prose: "the dot product" is none.
    "we looked at the dot product at arxiv.org",
    # Who is "at" a provider in prose.
    "she interned at yahoo.com before her PhD",
    "users at gmail.com and accounts at outlook.com",
    "our team at hotmail.com",
    # Digits and words inside a URL are its path's and its ids'.
    "the talk https://www.youtube.com/watch?v=0612345678 and www.example.org/call/030-1234567",
]

# A URL keeps its ids, and an address that goes on after a URL's text, or is said after a URL, is still
# one.
URLS = [
    (
        "see https://youtu.be/0612345678 or mail carol.x at gmail.com",
        f"see https://youtu.be/0612345678 or mail {EMAIL}",
    ),
    (
        "see https://example.org/jane dot doe at gmail dot com and https://youtu.be/0612345678",
        f"see https://example.org/{EMAIL} and https://youtu.be/0612345678",
    ),
]


@pytest.mark.parametrize(("said", "redacted"), REDACTED)
def test_personal_data_is_replaced(said: str, redacted: str) -> None:
    assert redact_spoken(said) == (redacted, 1)


@pytest.mark.parametrize("said", KEPT)
def test_what_is_no_personal_data_stays(said: str) -> None:
    assert redact_spoken(said) == (said, 0)


@pytest.mark.parametrize(("said", "redacted"), URLS)
def test_a_url_keeps_its_ids_and_no_address_around_it(said: str, redacted: str) -> None:
    assert redact_spoken(said) == (redacted, 1)


def test_several_in_one_text_are_counted() -> None:
    said = "mail jane dot doe at example dot com or j.doe@example.org or call 555 123 4567"
    assert redact_spoken(said) == (f"mail {EMAIL} or {EMAIL} or call {PHONE}", 3)


def test_findings_that_overlap_are_redacted_as_one() -> None:
    """A phone number whose last group also starts a spoken address: neither finding's remainder stays
    (what one leaves of the other is still personal), and they count once."""
    assert redact_spoken("call 555 123 4567 at example dot com today") == (f"call {PHONE} today", 1)
