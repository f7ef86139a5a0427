"""crawler.privacy.scrub.scrub_text: one scrub for every text the project keeps (addresses written, spoken
or spelled, phone numbers), the quick look that lets most texts skip it, and the digest of its rules."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from crawler.privacy import rule
from crawler.privacy.emails import PLACEHOLDER, URL_PLACEHOLDER
from crawler.privacy.phones import PHONE_PLACEHOLDER, phone_positions, phone_spans
from crawler.privacy.rule import PRIVACY_RULE, RULE_MODULES, rule_digest
from crawler.privacy.scrub import (
    RECORD_URL_FIELDS,
    scrub_fields,
    scrub_text,
    scrub_value,
    texts_to_scrub,
    values_may_hold_address,
)
from crawler.privacy.shape import text_shape
from crawler.privacy.spoken import TRANSCRIPT_PRIVACY_RULE, redaction_spans

EMAIL = PLACEHOLDER
PHONE = PHONE_PLACEHOLDER

REMOVED = [
    ("Contact jane.doe@example.org.", f"Contact {EMAIL}."),
    ("Questions to carol.x at gmail.com please.", f"Questions to {EMAIL} please."),
    ("Mail d a v e @ example . com for the data.", f"Mail {EMAIL} for the data."),
    ("Write to jane dot doe at gmail.", f"Write to {EMAIL}."),
    ("Write to jane dot doe at example dot org.", f"Write to {EMAIL}."),
    ("Mail ｊａｎｅ＠ｅｘａｍｐｌｅ．ｏｒｇ today.", f"Mail {EMAIL} today."),
    ("Chair: Jane Doe (jane @ example . org)", f"Chair: Jane Doe ({EMAIL})"),
    ("Call +49 30 1234567 or (415) 555-2671.", f"Call {PHONE} or {PHONE}."),
    ("Tel. 030 1234567, e-mail j.doe@example.org", f"Tel. {PHONE}, e-mail {EMAIL}"),
]

KEPT = [
    "We train with batch sizes 256 512 1024 on 8 GPUs.",
    "Version 1.2.3 (2023) improves on 2.10.0; see doi 10.18653/v1/2023.emnlp-main.123.",
    "@dataclass\nclass Config:\n    x = A @ B.T  # @property, x@y",
    "We looked at the dot product at arxiv.org and code at github.com.",
    "She interned at yahoo.com; users at gmail.com were asked.",
    "Funded by NSF grant number 2234567 and ORCID 0000-0002-1825-0097.",
    "Hokkaido University, Sapporo 060-0808, Japan",
    "The video https://www.youtube.com/watch?v=0612345678 shows it.",
    "Held 2025-11-05T09:30:00Z in room 1.2, we reach 1 234 567 tokens.",
]


@pytest.mark.parametrize(("text", "expected"), REMOVED)
def test_every_address_and_phone_number_is_replaced_in_written_text(text: str, expected: str) -> None:
    clean, count = scrub_text(text)
    assert clean == expected
    assert count == expected.count(EMAIL) + expected.count(PHONE)


@pytest.mark.parametrize("text", KEPT)
def test_nothing_else_is_changed_and_the_same_string_comes_back(text: str) -> None:
    clean, count = scrub_text(text)
    assert (clean, count) == (text, 0)
    assert clean is text


def test_whitespace_is_kept_as_it_is() -> None:
    text = "Line one.\n\n  Mail jane dot doe at gmail dot com  \n\tor call +49 30 1234567\u00a0 now.\n"
    expected = f"Line one.\n\n  Mail {EMAIL}  \n\tor call {PHONE}\u00a0 now.\n"
    assert scrub_text(text) == (expected, 2)


@pytest.mark.parametrize(
    ("text", "placeholder"),
    [
        *((case, PLACEHOLDER) for case, _ in REMOVED),
        # A placeholder of address characters joins what followed an address into a new one, which is
        # scrubbed too.
        ("mail jane@example.org@example.org", "x"),
    ],
)
def test_scrubbing_what_the_scrub_returns_changes_nothing(text: str, placeholder: str) -> None:
    clean = scrub_text(text, placeholder)[0]
    assert scrub_text(clean, placeholder) == (clean, 0)


def test_the_placeholder_given_replaces_addresses_and_phone_numbers_keep_theirs() -> None:
    assert scrub_text("mail jane dot doe at gmail or call 030 1234567", "<x>") == (
        f"mail <x> or call {PHONE}",
        2,
    )


def test_a_records_strings_are_scrubbed_with_it_and_urls_as_urls() -> None:
    fields = {
        "abstract": "Questions: call +49 30 1234567.",
        "authors": [
            {"name": "A", "affiliations": ["Lab, d a v e @ example . com"], "orcid": "0000-0002-1825-0097"}
        ],
        "url": "http://x/lecture/5-0612345678",
        "source_urls": ["http://x/lecture/5-t", "http://x/lecture/5-me@example.org"],
        "keywords": ["jane dot doe at gmail", "LLM"],
    }
    out, counts = scrub_fields(fields, RECORD_URL_FIELDS)
    assert out == {
        "abstract": f"Questions: call {PHONE}.",
        "authors": [{"name": "A", "affiliations": [f"Lab, {EMAIL}"], "orcid": "0000-0002-1825-0097"}],
        "url": "http://x/lecture/5-0612345678",
        "source_urls": ["http://x/lecture/5-t", f"http://x/lecture/5-{URL_PLACEHOLDER}"],
        "keywords": [EMAIL, "LLM"],
    }
    assert counts == {"abstract": 1, "authors": 1, "source_urls": 1, "keywords": 1}
    assert scrub_value("write to carol.x at gmail.com") == (f"write to {EMAIL}", 1)
    assert scrub_value("http://x/lecture/5-carol.x at gmail.com", URL_PLACEHOLDER, url=True) == (
        "http://x/lecture/5-carol.x at gmail.com",
        0,
    )


def test_the_quick_look_admits_spoken_forms_and_phone_numbers() -> None:
    assert values_may_hold_address([["Jane", "carol.x at gmail.com"]])
    assert values_may_hold_address([{"description": "call 030 1234567"}])
    assert values_may_hold_address(["d a v e @ example . com"])
    # A record without any: one look, and no rules read.
    assert not values_may_hold_address(
        [
            "We train with batch sizes 256 512 1024 on 8 GPUs, version 1.2.3 (2023).",
            ["EMNLP 2025", "2025-11-05T09:30:00Z", "10.48448/ab12-cd34", "https://x/lecture/130100-t"],
            {"name": "Jane Doe", "affiliations": ["Example Labs"], "orcid": "0000-0002-1825-0097"},
        ]
    )
    strings = ["A title", "call +44 20 7946 0958", "Jane", "jane dot doe at gmail", "2025-11-05T09:30:00Z"]
    assert texts_to_scrub(strings) == {"call +44 20 7946 0958", "jane dot doe at gmail"}


# What personal data and what only looks like it are made of, for generated texts.
PIECES = [
    "@", " @ ", "＠", " [at] ", " (dot) ", " at ", " dot ", " underscore ", ".", "．", "-", "_", "/", "?v=",
    "jane", "d a v e", "gmail", "hotmail", "example", "com", "org", "de", "co", "uk", "interned", "look",
    "+", "+49 ", "0049 ", "030 ", "(0)", "(415) ", "555-", "2671", "1234567", "612 345 678", "07700 900123",
    "415.555.2671", "0000-0002-1825-0097", "060-0808", "10.48448/", "2025-11-05T09:30:00Z",
    "call ", "call me at ", "my number is ", "tel.: ", "reach us: ", "grant number ", "ID ", "arXiv:",
    "https://", "www.", " ", "  ", "\n", "\t", "\u00a0", "\u2013", "\u3000", "٣", "０", ",", ":", "(", ")",
]  # fmt: skip
TEXTS = st.lists(
    st.one_of(
        st.sampled_from(PIECES),
        st.from_regex(r"[A-Za-z0-9._+-]{1,10}", fullmatch=True),
        st.from_regex(r"[0-9]{1,8}", fullmatch=True),
        st.text(max_size=5),
    ),
    max_size=12,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(texts=st.lists(TEXTS, min_size=1, max_size=4))
@example(texts=["A title", "write to carol.x at gmail.com"])
@example(texts=["Session 1", "2025-11-05T09:30:00Z", "call +49 30 1234567"])
@example(texts=["d a v e @ example . com", "jane@example.org"])
def test_the_quick_look_misses_no_text_the_rules_find(texts: list[str]) -> None:
    # The rules themselves, not the scrub (which asks the quick look first).
    found = {text for text in texts if redaction_spans(text)}
    assert found <= texts_to_scrub(texts)
    for text in texts:
        if list(phone_spans(text)):
            assert phone_positions(text), text


@settings(max_examples=300, deadline=None)
@given(text=st.text())
def test_a_texts_shape_has_its_length_and_its_digits_and_spaces(text: str) -> None:
    shape = text_shape(text)
    assert len(shape) == len(text)
    assert [c == ord("0") for c in shape] == [char.isdecimal() for char in text]
    assert [c == ord(" ") for c in shape] == [char.isspace() for char in text]


def test_a_shape_reads_digits_spaces_and_dashes_beyond_ascii() -> None:
    # Arabic-Indic and full-width digits, a no-break and an em space, an en dash, a letter with an accent.
    text = (
        "Tel \u0660\u0663\u0660 \u0661\u0662\u0663\u0664\u0665\u0666\u0667"
        "\u00a0or \uff10\uff13\uff10\u2003x\u2013y \u00e9_:,#\x00"
    )
    assert text_shape(text) == b"tel 000 0000000 or 000 x-y ######"


@pytest.mark.parametrize(
    "text",
    [
        "1 " * 300_000,
        "0" * 1_000_000,
        "+1 " * 200_000,
        "(0)" * 200_000,
        "1-" * 300_000,
        "call 1 " * 100_000,
        "a at b.com " * 60_000,
        "at " * 300_000,
        "d a v e @ " * 60_000,
        "0000-0002-1825-0097\x00" * 40_000,
        "2025-11-05T09:30:00Z " * 40_000,
    ],
)
def test_the_scrub_and_the_quick_look_are_linear_on_a_megabyte(text: str) -> None:
    # CPU time, not wall time: the suite's other workers share the cores.
    started = time.process_time()
    texts_to_scrub([text])
    scrub_text(text)
    assert time.process_time() - started < 3.0


def test_one_digest_names_the_rules_of_every_text_transcripts_included() -> None:
    assert TRANSCRIPT_PRIVACY_RULE == PRIVACY_RULE == rule_digest()
    # Leaving out the module that scrubs a text names other rules.
    assert rule_digest(tuple(m for m in RULE_MODULES if m != "scrub.py")) != PRIVACY_RULE


def test_every_module_that_decides_what_a_text_keeps_is_in_the_digest() -> None:
    # The package's other modules decide nothing a text keeps: the package's face, the digest itself,
    # the stored pages' stripper and the dataset card's wider count.
    others = {"__init__.py", "rule.py", "stored.py", "email_like.py"}
    package = {path.name for path in Path(rule.__file__).parent.glob("*.py")}
    assert set(RULE_MODULES) == package - others
