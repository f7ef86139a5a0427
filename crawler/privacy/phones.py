"""Phone numbers in what was said, told from the other numbers a talk is full of.

A run of digit groups is taken for a phone number only with evidence that it is one, and only when
``phonenumbers`` (Google's libphonenumber) agrees that it can be one:

- evidence is an international prefix (``+49 30 1234567``, ``0049 30 1234567``), a trunk prefix glued
  to the first group (``030 1234567``, ``(0)30``), a North American number written to be dialled
  (``(415) 555-2671``, ``415-555-2671``, ``415.555.2671``), or a word that announces a number right before it
  (``call``, ``phone``, ``tel``, ``fax``, ``mobile``, ``number``..., with at most three small words
  between: ``call me at``, ``my number is``);
- a number with a prefix is taken when it is valid (for its country code, or for one of the countries
  that dial a trunk "0"); a number a word announces needs only be possible (the right length for its
  country), since made-up numbers (``555 123 4567``) are still read out to be dialled.

Validation alone is no evidence: with region US, ``256 512 1024`` is a valid number, and a list of layer
sizes is no one's. What is never a candidate: digits glued to a word or a decimal point (``3.555 123
4567``, ``4567.5``), groups mixing "." with other separators (``+12.34 56.78``), two groups joined by one
"." (a decimal, an arXiv id ``0712.3456``), dates (``08.12.2023``), runs of single digits (``0 1 2 3 4 5 6
7``), round quantities with their thousands grouped (``1 000 000``), fewer than seven digits (``call 911 or
112``) and a number an identifier's label names (``grant number 2234567``, ``ID 0612345678``, ``arXiv:``).
A trunk prefix is no evidence for a postal code's shape (``Sapporo 060-0808``, ``MA 02139-4307``,
``05508-090``): affiliations are full of them.

The same rules read every text the project keeps, written or said: an abstract's "we reach" is no call.

``phonenumbers`` runs only on candidates with evidence, so a talk full of numbers costs one search.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

import phonenumbers

from crawler.privacy.shape import text_shape

PHONE_PLACEHOLDER = "[phone removed]"

# One group: digits (taken whole, so that no run of digits can be split two ways) or a parenthesized
# area code or trunk prefix.
_GROUP = r"(?:\(\d{1,5}\)|\d++)"
# Between two groups: a space, or a dash, dot or slash with a space on either side or none.
_SEPARATOR = r"(?:[ \u00a0]|[ \u00a0]?[-.\u2010\u2011\u2012\u2013/][ \u00a0]?)?"
# A "+", "(" or digit first: the one-character look fails fast everywhere else, before the look back.
# Never glued to a word, a "+" or a dash before it, nor the decimals of a number (3.555 123 4567).
_CANDIDATE_BEFORE = r"(?=[+(\d])(?<![\w+\-\u2010-\u2013])(?<!\d[.,:])"
_CANDIDATE_BODY = (
    rf"(?:\+[ \u00a0]?)?(?:(?=\()|\b){_GROUP}(?:{_SEPARATOR}{_GROUP})*+"
    # Nor glued to a word or a decimal part after it (4567.5, 10:30).
    r"(?!\w)(?![.,:]\d)"
)
_CANDIDATE = re.compile(_CANDIDATE_BEFORE + _CANDIDATE_BODY)
# The digits of a phone number, prefixes included: fewer than 7 is no number one can call, and E.164's
# 15 plus a "00" is the most.
_MIN_DIGITS = 7
_MAX_DIGITS = 17
# A run of a shape (see :mod:`crawler.privacy.shape`) that may hold a candidate: digits and what may stand
# between them, from a digit to a digit or a closing bracket (where every candidate ends), seven
# characters or more.
_SHAPE_RUN = re.compile(rb"0[0() ./+-]{5,}[0)]")
# What a number with a prefix's evidence or a North American number's groups has in its run, or up to
# three characters before (see :func:`phone_positions`): a "+" or a "(", a "0" that may start it but no
# "000" (no country code starts with "0"), or the groups.
_EVIDENCE_IN_RUN = re.compile(r"[+(]|(?<![\w+\-\u2010-\u2013])0(?!00)|\d{3}[-.]\d{3}[-.]\d{4}")
# Where a word announcing a number ends right before a run: no digit stands between a cue and its number,
# so the number's first digit is the run's first.
_WORD_END_BEFORE_RUN = re.compile(r"[^\W\d_][\s.:,#-]{1,3}[+(\s\u00a0]{0,3}\Z")
# A candidate that starts with seven digits or more, each from the one before by what may stand between
# two digits of one (a closing bracket, a separator, an opening bracket): a search for these runs at the
# expression engine's speed over a text full of short numbers (years, ids, a timestamp's), and finds every
# candidate long enough to be a phone number (those before it, being shorter, end where they would).
_LONG_CANDIDATE = re.compile(
    _CANDIDATE_BEFORE
    + rf"(?=[+( \u00a0]{{0,3}}\d(?:[ \u00a0()\-./\u2010-\u2013]{{0,5}}\d){{{_MIN_DIGITS - 1}}})"
    + _CANDIDATE_BODY
)
# Where a candidate can start: the expression above looks ahead for one of these first, at every character
# of the text; a search for them skips the others at once.
_CANDIDATE_START = re.compile(r"[+(\d]")
# Words that announce a number, then up to three small words before it ("call me at", "my number is").
_CUE_WORDS = (
    "phone|phones|telephone|tel|call|calls|calling|fax|mobile|cell|cellphone|number|whatsapp|dial|hotline"
    "|contact|ext|extension|landline|office"
    # "text me", "reach us", "my direct line": the words alone are too common in talks and papers to
    # announce a number ("we reach 1 234 567 tokens").
    r"|text(?:s|ing)?\s+(?:me|us)|reach\s+(?:me|us|him|her|them)|(?:direct|phone|office|land)\s*line"
)
_LINK_WORDS = "me|us|him|her|them|at|on|is|was|to|via|under|my|our|his|their|the|no|nr|please|directly"
_CUE_BEFORE = re.compile(
    rf"\b(?:{_CUE_WORDS})\b[\s.:,#-]{{0,3}}(?:(?:{_LINK_WORDS})\b[\s.:,#-]{{1,3}}){{0,3}}\Z", re.IGNORECASE
)
# A label that names the number an identifier, right before it (``grant number 2234567``, ``ID:
# 0612345678``, ``arXiv:0712.3456``): no evidence, not even a prefix, makes it a phone number.
_IDENTIFIER_LABEL = re.compile(
    r"\b(?:grant|award|project|contract|serial|patent|order|ticket|invoice|case|issue|version|model|part"
    r"|item|product|registration|reference|tracking|isbn|issn|doi|orcid|arxiv|pmid|pmcid|id)"
    r"(?:[\s.:#-]{0,3}(?:number|num|no|nr)\b)?[\s.:#-]{0,3}\Z",
    re.IGNORECASE,
)
# How far before a candidate its label may start.
_LABEL_WINDOW = 40
# The shapes of postal codes with a leading "0" (Japan's 060-0808, Brazil's 05508-090, a ZIP+4 02139-4307):
# a trunk prefix alone does not make one a phone number.
_POSTAL_CODE = re.compile(r"0\d{2}-\d{4}|0\d{4}-\d{3,4}")
# Where a word ends right before a number, but for what may stand between a cue and its number: every
# cue ends so (its last word, or a small word after it).
_WORD_END_BEFORE = re.compile(r"[^\W\d_][\s.:,#-]{0,3}\Z")
# What may stand between two numbers one word announced.
_ALTERNATIVE = re.compile(r"[\s,;/]{0,3}(?:(?:or|and)[\s,:]{1,3})?", re.IGNORECASE)
# How far before a candidate its cue may start.
_CUE_WINDOW = 60
_DATE = re.compile(r"\d{1,2}([./-])\d{1,2}\1\d{2,4}")
# North American numbers as they are written to be dialled: "(415) 555-2671", "415-555-2671",
# "415.555.2671". The punctuation is the evidence (a list of sizes is written with spaces).
_NANP_WRITTEN = re.compile(r"\(\d{3}\)[ \u00a0]?\d{3}[-.\u2010-\u2013]\d{4}|\d{3}([-.])\d{3}\1\d{4}")
# A round quantity with its thousands grouped: "1 000 000", "175 000 000" (every group after the first
# "000"): no phone number is written so ("612 345 678", grouped alike, is a Spanish number).
_GROUPED_THOUSANDS = re.compile(r"\d{1,3}(?:[ \u00a0\u202f,.]000)+")
# Where a national number is written with a trunk "0" (030 1234567 is Berlin, 020 7946 0958 London).
_TRUNK_REGIONS = (
    "DE", "GB", "FR", "NL", "BE", "CH", "AT", "SE", "FI", "IE", "AU", "NZ", "JP", "KR", "CN", "IN", "IL",
    "TR", "ZA",
)  # fmt: skip
# Where a national number is written without one (NANP's 415 555 0142 among them).
_PLAIN_REGIONS = ("US", "ES", "IT", "PT", "DK", "NO")
_DASHES = str.maketrans("\u2010\u2011\u2012\u2013", "----")


def phone_positions(text: str, shape: bytes | None = None) -> list[int]:
    """Where ``text`` may hold a phone number: empty when :func:`phone_spans` finds none.

    Everything :func:`phone_spans` asks but ``phonenumbers``' word: the shape of a number (never a date,
    a year, a timestamp's digits, a decimal), no identifier's label, and evidence (a prefix, a North
    American number written to be dialled, a word announcing it). A number announced only as the
    alternative to one before it follows one found here. Candidates are looked for only in the runs of
    ``shape`` (:func:`crawler.privacy.shape.text_shape` of ``text``) that hold seven digits or more:
    every candidate's characters are a run's. What a text holds is found within it, so texts joined by a
    character no number holds (``"\\x00"``) are searched as one.
    """
    if shape is None:
        shape = text_shape(text)
    found: list[int] = []
    for run in _SHAPE_RUN.finditer(shape):
        start, end = run.span()
        if shape.count(b"0", start, end) < _MIN_DIGITS:
            continue
        # A candidate starts up to three characters before its first digit ("+ (0"), a word announcing
        # it ends up to four before that, and what follows it is read up to two characters after it.
        if (
            _EVIDENCE_IN_RUN.search(text, max(0, start - 3), end) is None
            and _WORD_END_BEFORE_RUN.search(text, max(0, start - 7), start) is None
        ):
            continue  # a timestamp's date, an ORCID iD, a DOI's prefix: no number with evidence in it
        for match in _LONG_CANDIDATE.finditer(text, max(0, start - 3), min(len(text), end + 2)):
            if _may_be_phone_number(text, match):
                found.append(match.start())
    return found


def _may_be_phone_number(text: str, match: re.Match[str]) -> bool:
    """Whether :func:`phone_spans` may take the candidate ``match`` but for ``phonenumbers``: evidence
    first, cheapest look first, then the shape."""
    number = match[0]
    if not (_prefixed(number) or _NANP_WRITTEN.fullmatch(number)):
        start = match.start()
        # A word announcing a number ends right before it, but for a few signs and spaces.
        if _WORD_END_BEFORE.search(text, max(0, start - 4), start) is None:
            return False
        if _CUE_BEFORE.search(text, max(0, start - _CUE_WINDOW), start) is None:
            return False
    return next(_shaped_numbers(text, iter([match])), None) is not None


def phone_spans(text: str) -> Iterator[tuple[int, int]]:
    """Where ``text`` holds a phone number, in order: (start, end)."""
    after_number = -1
    for match, cued in _shaped_numbers(text, _candidates(text)):
        start = match.start()
        announced = cued or (
            # "call +1 415 555 0142 or 030 1234567": what announced the first announces the next.
            after_number >= 0 and _ALTERNATIVE.fullmatch(text, after_number, start) is not None
        )
        if is_phone_number(match[0], announced=announced):
            after_number = match.end()
            yield start, after_number


def _shaped_numbers(text: str, candidates: Iterator[re.Match[str]]) -> Iterator[tuple[re.Match[str], bool]]:
    """The ``candidates`` of ``text`` shaped like a phone number and named by no identifier's label, each
    with whether a word right before it announces a number."""
    for match in candidates:
        number = match[0]
        if len(number) < _MIN_DIGITS:
            continue
        digits = sum(char.isdigit() for char in number)
        if not _MIN_DIGITS <= digits <= _MAX_DIGITS or not _well_formed(number):
            continue
        start = match.start()
        if _GROUPED_THOUSANDS.fullmatch(number):
            continue
        if _IDENTIFIER_LABEL.search(text, max(0, start - _LABEL_WINDOW), start) is not None:
            continue
        yield match, _CUE_BEFORE.search(text, max(0, start - _CUE_WINDOW), start) is not None


def _prefixed(number: str) -> bool:
    """Whether ``number`` starts with what :func:`is_phone_number` takes for a prefix: "+", or a "0"
    (international "00", a trunk "0"); not "000", which no country code follows (an ORCID iD's
    ``0000-0002-1825-0097``). A candidate starts with "+", "(" or a digit."""
    if number.startswith(("+", "(0")):
        return True
    if not number.startswith("0"):
        return False
    return not re.sub(r"\D", "", number[:16]).startswith("000")


def _candidates(text: str) -> Iterator[re.Match[str]]:
    """The matches of ``_CANDIDATE`` in ``text``, as ``finditer`` finds them, tried only where one can
    start."""
    at = 0
    while (start := _CANDIDATE_START.search(text, at)) is not None:
        found = _CANDIDATE.match(text, start.start())
        if found is None:
            at = start.start() + 1
        else:
            yield found
            at = found.end()


def _well_formed(number: str) -> bool:
    """Whether the groups read as a phone number's: "." never mixed with other separators nor joining
    two groups alone (a decimal, an arXiv id), no date, and at most one group of a single digit after the
    first (+33 1 23 45 67 89, +49 (0)30 ...)."""
    groups = re.findall(r"\d+", number)
    if sum(len(group) == 1 for group in groups[1:]) > 1:
        return False
    separators = set(re.sub(r"[\d+()]", "", number))
    if "." in separators and (separators != {"."} or len(groups) == 2):
        return False
    return _DATE.fullmatch(number) is None


def is_phone_number(number: str, *, announced: bool) -> bool:
    """Whether ``number`` (digit groups as written, a "+" or "00" perhaps first) is a phone number:
    valid with a prefix's evidence, or possible when a word announced it (see the module's text)."""
    digits = re.sub(r"\D", "", number)
    # Written as it was ("+49 (0)30 ..." drops its trunk "0" only so): the library reads the separators.
    written = number.translate(_DASHES)
    if number.startswith("+"):
        return _checked(written, None, announced=announced)
    if digits.startswith("00"):
        return _checked("+" + written[2:], None, announced=announced)
    if number.startswith("(0") or (digits.startswith("0") and re.match(r"\d\d", number)):
        if not announced and _POSTAL_CODE.fullmatch(number):
            return False
        return any(_checked(written, region, announced=announced) for region in _TRUNK_REGIONS)
    if _NANP_WRITTEN.fullmatch(number):
        return _checked(written, "US", announced=announced)
    return announced and any(_checked(written, region, announced=True) for region in _PLAIN_REGIONS)


@functools.lru_cache(maxsize=4096)
def _checked(number: str, region: str | None, *, announced: bool) -> bool:
    try:
        parsed = phonenumbers.parse(number, region)
    except phonenumbers.NumberParseException:
        return False
    if phonenumbers.is_valid_number(parsed):
        return True
    return announced and phonenumbers.is_possible_number(parsed)
