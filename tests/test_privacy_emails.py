from __future__ import annotations

import json
import re
import time

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from crawler.privacy.emails import (
    _EMAIL,
    PLACEHOLDER,
    URL_PLACEHOLDER,
    contains_email,
    json_address_positions,
    json_may_hold_address,
    scrub_emails,
    scrub_url,
    strings_to_scrub,
)
from crawler.privacy.scrub import scrub_fields, scrub_value, values_may_hold_address

R = PLACEHOLDER


@pytest.mark.parametrize(
    ("text", "expected", "count"),
    [
        ("Contact jane.doe@example.org for data.", f"Contact {R} for data.", 1),
        ("first.author+nlp@univ.example.edu.", f"{R}.", 1),
        ("<jane_d-1@sub.mail.example.co.uk>", f"<{R}>", 1),
        ("a@example.com, b@example.com;c@example.com", f"{R}, {R};{R}", 3),
        ("mailto:jane@example.org", f"mailto:{R}", 1),
        ("JANE@EXAMPLE.ORG", R, 1),
        ("jane [at] example [dot] org", R, 1),
        ("jane (at) example (dot) org", R, 1),
        ("jane{at}example{dot}org", R, 1),
        ("jane <AT> example <DOT> org", R, 1),
        ("jane[at]example.org", R, 1),
        ("ｊａｎｅ＠ｅｘａｍｐｌｅ．ｏｒｇ", R, 1),
        ("jane\ufe6bexample.org", R, 1),
        ("jane&#64;example.org", R, 1),
        ("jane&#x40;example&#46;org", R, 1),
        ("jane&commat;example.org", R, 1),
        ("jane%40example.org", R, 1),
        ("jane\u200b@\u200bexample.org", R, 1),
        ("ja\u200dne@exa\u2060mple.org", R, 1),
        # An invisible character glued to the address goes with it.
        ("\u202ejane@example.org\u202c", f"{R}\u202c", 1),
        ("müller@universität.de", R, 1),
        ("王@例子.中国", R, 1),
        ("x@xn--80ak6aa92e.xn--p1ai", R, 1),
        ("Code at github.com/x and data@ 5.org", "Code at github.com/x and data@ 5.org", 0),
        # The host's own name and hosts written as their address, bracketed or bare.
        ("user@localhost", R, 1),
        ("Mail ROOT@LOCALHOST.", f"Mail {R}.", 1),
        ("jane@[192.168.1.1]", R, 1),
        ("jane@[IPv6:2001:db8::1]", R, 1),
        ("jane@[2001:DB8::FFFF:1.2.3.4]", R, 1),
        ("jane@192.168.1.1.", f"{R}.", 1),
        # Spaces on both sides of "@", within a line.
        ("name @ example.com", R, 1),
        ("Mail name  @  example.com today", f"Mail {R} today", 1),
        ("name\u00a0@\u00a0example.com", R, 1),
        ("name\u3000＠\u3000example.com", R, 1),
        ("jane @ example [dot] org", R, 1),
        # Apostrophes and RFC 5322's rarer characters inside a local part.
        ("o'brien+talks@example.org", R, 1),
        ("Contact O\u2019Brien@example.org.", f"Contact {R}.", 1),
        ("jane'@example.org", R, 1),
        ("first=last@example.org", R, 1),
        ("a!b#c$d*e?f^g`h|i~j@example.org", R, 1),
        ("'jane@example.org'", f"'{R}'", 1),
        ("`jane@example.org`", f"`{R}`", 1),
        ("**jane@example.org**", f"**{R}**", 1),
        # Quoted local parts.
        ('"john doe"@example.org', R, 1),
        ('Write to "J. Doe" @ example.org.', f"Write to {R}.", 1),
        ('"o\'brien" [at] example.org', R, 1),
        ("JANE.DOE.@EXAMPLE.ORG.", f"{R}.", 1),
    ],
)
def test_addresses_in_every_form_are_replaced(text: str, expected: str, count: int) -> None:
    assert scrub_emails(text) == (expected, count)
    assert contains_email(text) is bool(count)


@pytest.mark.parametrize(
    "text",
    [
        "We evaluate on @article{smith2020} and @inproceedings.",
        "user@localhosts and user@localhost-dev",
        "e.g. A @ B",
        "x = A @ B.T",
        "@emnlp",
        "Follow us on @emnlp and @acl.",
        "@dataclass\nclass Config:",
        "@property def x(self): return a@b",
        "J. O'Brien, A. D'Souza and M. O\u2019Neil",
        "mAP@0.5 and P@10, Hits@1, acc @ 5",
        "x@1.2.3 and y@1.2.3.4.5 and z@[12]",
        "jane @example.org and jane@ example.org",
        "name    @    example.com",
        "name\n@\nexample.com",
        'He said "yes"@home',
        '<a href="mailto:x" title="@example.org">',
        '{"domain":"@example.org","at": "@example.org"}',
        '" title="@example.org and " @ example.org',
        '"a@b"@example',
        "5@3.14 and 2@10.5",
        "x@y.z1",
        "a@b.c",
        "look at results.in the table",
        "scores at 5.2 and at 7.1",
        "the [at] sign and [dot] product",
        "@handle on social media",
        "10.48448/7fqa-2p0c and arXiv:2301.12345",
        "C++ & C# @ 50%",
        "",
    ],
)
def test_text_without_addresses_is_unchanged(text: str) -> None:
    assert scrub_emails(text) == (text, 0)
    assert not contains_email(text)


def test_a_custom_placeholder_and_idempotence() -> None:
    assert scrub_emails("see a.b@example.org", "<x>") == ("see <x>", 1)
    once, _ = scrub_emails("a@example.org b [at] example [dot] org")
    assert scrub_emails(once) == (once, 0)
    assert scrub_emails(URL_PLACEHOLDER) == (URL_PLACEHOLDER, 0)


@pytest.mark.parametrize(
    "text",
    [
        "a" * 1_000_000 + "@" + "b" * 1_000_000,
        "a@" * 500_000,
        "a." * 500_000 + "@x",
        "x@" + "a." * 500_000,
        "x@" + "a-" * 500_000 + ".org",
        " [at] " * 200_000,
        "x (at) " * 200_000,
        ("jane@example.org " * 60_000),
        "a'" * 500_000 + "@x",
        " @ " * 300_000,
        "x@[" * 300_000,
        '"a"@' * 250_000,
        "x@[1:" + ":1" * 400_000,
    ],
)
def test_linear_time_on_a_megabyte(text: str) -> None:
    # CPU time, not wall time: the suite's other workers share the cores.
    started = time.process_time()
    scrub_emails(text)
    assert time.process_time() - started < 2.0


@pytest.mark.parametrize(
    ("url", "expected", "count"),
    [
        ("http://x/lecture/12-jane@example.org", "http://x/lecture/12-email-removed", 1),
        (
            "http://x/lecture/12-jane%40example.org?tab=a@example.org",
            "http://x/lecture/12-email-removed?tab=email-removed",
            2,
        ),
        ("mailto:jane@example.org", "mailto:email-removed", 1),
        ("http://x/lecture/12-plain-slug", "http://x/lecture/12-plain-slug", 0),
    ],
)
def test_urls_keep_their_lecture_id(url: str, expected: str, count: int) -> None:
    assert scrub_url(url) == (expected, count)


def test_a_placeholder_never_forms_a_new_address_with_what_follows() -> None:
    # Found by the fuzzer: "Ot@1.aOt" replaced by "email-removed" left "email-removed@1.at".
    text = "\x00\x04Ot@1.aOt@1.at\udc98m?? zhou"
    url, count = scrub_url(text)
    assert (url, count) == ("\x00\x04email-removed\udc98m?? zhou", 2)
    assert not contains_email(url)
    assert scrub_emails("a@b.cc@d.ee", "x") == ("x", 2)


def test_scrub_value_walks_lists_tuples_and_mappings() -> None:
    value = ["ok", ("a@example.org", 3), {"k": ["b@example.org"], "n": None}]
    clean, count = scrub_value(value)
    assert clean == ["ok", (R, 3), {"k": [R], "n": None}]
    assert count == 2
    untouched = ["ok", ("x",)]
    assert scrub_value(untouched)[0] is untouched
    assert scrub_value(42) == (42, 0)


def test_scrub_fields_counts_per_field_and_keeps_urls_urls() -> None:
    record = {
        "title": "T (a@example.org)",
        "abstract": "b@example.org and c@example.org",
        "keywords": ["k", "d@example.org"],
        "url": "http://x/lecture/1-e%40example.org",
        "source_urls": ["http://x/lecture/1-f@example.org"],
        "is_premium": False,
    }
    clean, counts = scrub_fields(record, url_fields={"url", "source_urls"})
    assert clean == {
        "title": f"T ({R})",
        "abstract": f"{R} and {R}",
        "keywords": ["k", R],
        "url": f"http://x/lecture/1-{URL_PLACEHOLDER}",
        "source_urls": [f"http://x/lecture/1-{URL_PLACEHOLDER}"],
        "is_premium": False,
    }
    assert counts == {"title": 1, "abstract": 2, "keywords": 1, "url": 1, "source_urls": 1}


SIMPLE_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")
local = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,20}", fullmatch=True)
domain = st.from_regex(r"([A-Za-z0-9-]{1,12}\.){1,3}[A-Za-z]{2,8}", fullmatch=True)
# Text around an address: anything but the characters an address is written with.
filler = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="@\uff20\ufe6b&%"), max_size=30
)


@settings(max_examples=300, deadline=None)
@given(before=filler, user=local, host=domain, after=filler)
def test_generated_addresses_never_survive(before: str, user: str, host: str, after: str) -> None:
    clean, count = scrub_emails(f"{before} {user}@{host} {after}")
    assert count >= 1
    assert not SIMPLE_EMAIL.search(clean)
    assert scrub_emails(clean) == (clean, 0)


odd_local = st.one_of(
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,12}(['\u2019=!~][A-Za-z0-9._+-]{1,8}){0,2}", fullmatch=True),
    st.from_regex(r'"[A-Za-z0-9]([A-Za-z0-9. ]{0,18}[A-Za-z0-9.])?"', fullmatch=True),
)
odd_at = st.sampled_from(
    ["@", " @ ", "\u00a0@\u00a0", "  @ ", "\t@\u3000", " [at] ", "(at)", "\uff20", "&#64;", "%40"]
)
odd_host = st.one_of(
    domain,
    st.sampled_from(["localhost", "LOCALHOST", "[192.168.1.1]", "[IPv6:2001:db8::1]", "[::1]", "10.1.2.3"]),
)


@settings(max_examples=400, deadline=None)
@given(before=filler, user=odd_local, at=odd_at, host=odd_host, after=filler)
def test_generated_addresses_in_every_form_are_replaced_whole(
    before: str, user: str, at: str, host: str, after: str
) -> None:
    # Text around the address that holds none itself, nor a "[dot]" that would carry the domain on.
    assume(not contains_email(before) and not contains_email(after) and "dot" not in after.lower())
    assert scrub_emails(f"{before} {user}{at}{host} {after}") == (f"{before} {R} {after}", 1)


@settings(max_examples=500, deadline=None)
@given(text=st.text(max_size=200))
def test_generated_text_is_scrubbed_for_good(text: str) -> None:
    clean, count = scrub_emails(text)
    assert (clean == text) is (count == 0)
    assert not contains_email(clean)
    assert scrub_emails(clean) == (clean, 0)


# The full expression run over the whole text, with no pre-check and no "@" positions: what every
# address form means. Scrubbing, and the search for what to scrub, must find everything it finds.
def scrubbed_by_full_expression(text: str, placeholder: str = R) -> tuple[str, int]:
    total = 0
    while True:
        text, count = _EMAIL.subn(placeholder, text)
        total += count
        if not count:
            return text, total


AT_FORMS = [
    "@",
    "\uff20",
    "\ufe6b",
    "&#64;",
    "&#064;",
    "&#x40;",
    "&#X40;",
    "&#x0040;",
    "&commat;",
    "&COMMAT;",
    "%40",
    " [at] ",
    "(at)",
    "{AT}",
    "<at>",
    " <At> ",
    "   [ at ]   ",
    "\u3000[at]\u3000",
    "\u200b@\u200b",
    "\u00a0(at)\u00a0",
    "[at)",
    "<at]",
    " @ ",
    "   @   ",
    "\u00a0@\t",
    "\u3000\uff20\u3000",
]
# Forms that look close but are not one: the expression finds no address through them.
NOT_AT_FORMS = [
    "&#65;", "%41", "    [at]", "[at]    ", "[a t]", "[att]", "at", "(@", "&amp;",
    " @", "@ ", "    @ ", " @    ", "\n@\n",
]  # fmt: skip
# Local parts and domains beyond the plain ones.
LOCAL_FORMS = [
    "o'brien+talks",
    "o\u2019brien",
    "jane'",
    "a=b!c",
    '"john doe"',
    '"o.brien"',
    "'jane",
    "a''b",
    '"a"b"',
]
DOMAIN_FORMS = [
    "localhost",
    "LocalHost",
    "[192.168.1.1]",
    "[IPv6:2001:db8::1]",
    "[::1]",
    "10.0.0.1",
    "[12]",
    "1.2.3",
]
DOT_FORMS = [".", "\uff0e", "\u3002", "&#46;", "&#x2e;", "&period;", " [dot] ", "(DOT)", "<dot>"]
SURROUNDINGS = [
    ("", ""),
    ("Mail ", " for the code."),
    ("<p>", "</p>"),
    ('<a href="mailto:', '">write</a>'),
    ('{"email":"', '","name":"Jane"}'),
    ("12-", "?tab=1"),
    ("\u202e", "\u202c"),
    ("x" * 70, "y" * 70),
]


def email_corpus() -> list[str]:
    corpus = []
    for at in AT_FORMS + NOT_AT_FORMS:
        for dot in DOT_FORMS:
            for before, after in SURROUNDINGS:
                corpus.append(f"{before}ja\u200dne.doe{at}exa\u2060mple{dot}org{after}")
                corpus.append(f"{before}jane{at}example{dot}co{dot}uk{after}")
    for at in AT_FORMS[:4] + AT_FORMS[-4:] + NOT_AT_FORMS[-6:]:
        for user in LOCAL_FORMS:
            for host in [*DOMAIN_FORMS, "example.org"]:
                for before, after in SURROUNDINGS[:4]:
                    corpus.append(f"{before}{user}{at}{host}{after}")
    # Addresses split across tags, or by more than the forms allow.
    corpus += [
        "<b>jane</b>@<i>example.org</i>",
        "jane<span>@</span>example.org",
        "jane@<!-- -->example.org",
        "jane <at> example <dot> org<br>",
        "jane@example.org@example.org",
        "a@b.cc@d.ee",
        "a" * 200 + "@example.org",
        "x@y.z1 and " + "b" * 300 + "[at]example.org",
        "@example.org and jane@ example.org",
        "10%40 of jane%40example.org",
        "&#64;&#64;jane&#64;example.org",
    ]
    return corpus


def test_the_address_search_finds_what_the_full_expression_finds() -> None:
    # Four thousand texts in one test (as cases they cost more in pytest's bookkeeping than in the
    # search); a failure lists every text on which the search and the full expression disagree.
    disagreements = []
    for text in email_corpus():
        expected = scrubbed_by_full_expression(text)
        # What the search says: the text scrubbed, whether it holds an address, whether a list gives it.
        said = (
            scrub_emails(text),
            contains_email(text),
            not expected[1] or text in strings_to_scrub(["no address here", text, "none [here]"]),
        )
        if said != (expected, bool(expected[1]), True):
            disagreements.append((text, said, expected))
    assert disagreements == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("jane&COMMAT;example.org", R),
        ("Jane [AT] Example [DOT] Org", R),
        ("jane\u3000[at]\u3000example.org", R),
        ("jane    [at] example.org", "jane    [at] example.org"),
        ("<b>jane</b>@<i>example.org</i>", "<b>jane</b>@<i>example.org</i>"),
        ("pass@1 and recall@75, precision@8.", "pass@1 and recall@75, precision@8."),
        ("x" * 300 + "@example.org y", f"{R} y"),
    ],
)
def test_hand_checked_forms(text: str, expected: str) -> None:
    assert scrub_emails(text)[0] == expected


@settings(max_examples=400, deadline=None)
@given(
    pieces=st.lists(
        st.one_of(
            st.sampled_from(
                AT_FORMS
                + NOT_AT_FORMS
                + DOT_FORMS
                + LOCAL_FORMS
                + DOMAIN_FORMS
                + ["<p>", "</p>", "\x00", " ", "\u200b", '"', "'", "\u2019", "="]
            ),
            st.from_regex(r"[A-Za-z0-9._+-]{1,12}", fullmatch=True),
            st.text(max_size=8),
        ),
        max_size=14,
    )
)
def test_generated_forms_match_the_full_expression(pieces: list[str]) -> None:
    text = "".join(pieces)
    expected = scrubbed_by_full_expression(text)
    assert scrub_emails(text) == expected
    assert contains_email(text) is bool(expected[1])
    if expected[1]:
        assert text in strings_to_scrub([*pieces, text])


def test_strings_to_scrub_names_only_strings_that_can_change() -> None:
    strings = ["abc", "a@b", "x", "y [at] z", "%40", "&#64;", "q%", "40", "&", "#64;"]
    assert strings_to_scrub(strings) == {"a@b", "y [at] z", "%40", "&#64;"}
    assert strings_to_scrub([]) == set()


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(
        st.one_of(
            st.text(max_size=30),
            st.lists(st.text(max_size=20), max_size=3),
            st.dictionaries(st.text(max_size=5), st.text(max_size=20), max_size=3),
            st.none(),
            st.integers(),
        ),
        max_size=6,
    ),
    address=st.sampled_from(["", "jane@example.org", "x%40example.org", "a [at] b [dot] org", "a&#64;b.org"]),
)
def test_values_without_an_address_form_are_left_alone_by_scrub_value(
    values: list[object], address: str
) -> None:
    if address:
        values = [*values, [f"see {address} now"]]
    may = values_may_hold_address(values)
    if address:
        assert may
    if not may:
        for value in values:
            assert scrub_value(value) == (value, 0), f"{value=}"
            assert scrub_value(value, URL_PLACEHOLDER, url=True) == (value, 0), f"{value=}"
    assert values_may_hold_address(["plain text", ["and a list"], {"k": "of strings"}, None, 3]) is False


def test_json_text_may_hold_an_address_written_with_escapes() -> None:
    # What json.dumps writes (ensure_ascii off) of strings that hold an address, and of strings that
    # cannot: a LaTeX \url is a backslash before a "u", no escape; brackets around other words are text.
    holding = [
        "jane@example.org",
        "jane%40example.org",
        "jane＠example.org",
        "jane&#64;example.org",
        "jane(at)example.org",
        *(f"jane({c}at{c})example.org" for c in "\t\n\r\x0c\x0b\x1c\x1f"),
    ]
    for text in holding:
        dumped = json.dumps({"abstract": text}, ensure_ascii=False)
        assert json_may_hold_address(dumped), f"case {text!r}"
    for text in ["see \\url{x} (data) [that]", "a\\\\u b & c", "(at\tx) [\tat"]:
        dumped = json.dumps({"abstract": text}, ensure_ascii=False)
        assert not json_may_hold_address(dumped), f"case {text!r}"


def _json_writings(text: str) -> dict[str, str]:
    """A string's JSON literal as writers write it: as it is, all ASCII, HTML-safe as Next.js writes
    it, and with every character a \\u escape."""
    plain = json.dumps(text, ensure_ascii=False)
    return {
        "plain": plain,
        "ascii": json.dumps(text),
        "html-safe": plain.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"),
        "escaped": '"' + "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else c for c in text) + '"',
    }


def test_json_address_positions_fall_in_every_literal_the_scrub_changes() -> None:
    # Each string is written in a JSON text as a member's value and as a key, between strings that
    # hold nothing: every string the scrub changes must hold a position, and a text read as plain
    # text whose flag says so must be left as it is by the scrub.
    corpus = [*email_corpus(), "jane(\tat)example.org", "see \\url{x} (data) [that]", "J. O'Brien"]
    for text in corpus:
        changes = scrub_emails(text)[0] != text
        for writing, literal in _json_writings(text).items():
            for head, tail in (('{"a":"x","b":', ',"c":"y"}'), ('{"a":"x",', ':[1,"y"]}')):
                doc = head + literal + tail
                assert json.loads(doc), f"case {text!r} {writing}"
                positions, plain = json_address_positions(doc)
                start, end = len(head), len(head) + len(literal)
                assert all(start < at < end for at in positions), f"case {text!r} {writing}"
                if changes:
                    assert positions, f"case {text!r} {writing}"
                if not plain:
                    assert scrub_emails(doc) == (doc, 0), f"case {text!r} {writing}"


def test_json_address_positions_of_a_text_without_any_form_of_at() -> None:
    doc = json.dumps({"abstract": "see \\url{x} (data) [that] & <b>", "n": [1, 2.5, None]})
    assert json_address_positions(doc) == ([], False)
    html_safe = doc.replace("<", "\\u003c")
    assert json_address_positions(html_safe) == ([html_safe.index("\\u003c")], False)
    spaced = json.dumps({"a": "write to jane(\tat)example.org", "b": "jane (at) example.org"})
    positions, plain = json_address_positions(spaced)
    assert positions == [spaced.index("(\\tat)"), spaced.index("(at)")]
    assert plain


def test_json_address_positions_hold_every_escape_of_a_character_a_form_of_at_holds() -> None:
    # The characters the forms of "@" are made of: the "@"s, the references' and "%40"'s, the brackets
    # and "at" (in any case the scrub reads), and every space; every ASCII one is taken. An escape of
    # any other character is no position: a text written ASCII-only is not read literal by literal.
    form_char = re.compile(r"[\x00-\x7f\uff20\ufe6b\s]|(?i:[@&#;%0-9xcomat\[\](){}<>])")
    for code in range(0x10000):
        if 0xD800 <= code < 0xE000:
            continue
        for escape in (f"\\u{code:04x}", f"\\u{code:04X}"):
            positions, _ = json_address_positions('{"a":"x' + escape + 'y"}')
            expected = [7] if form_char.fullmatch(chr(code)) else []
            assert positions == expected, f"case {escape}"
