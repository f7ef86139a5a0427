"""crawler.privacy.phones: a phone number is taken only with evidence (a prefix, a word announcing it)
and libphonenumber's word that it can be one; the numbers a talk is full of stay."""

from __future__ import annotations

import time

import pytest

from crawler.privacy.phones import is_phone_number, phone_spans
from crawler.privacy.spoken import redaction_spans


def found(text: str) -> list[str]:
    return [text[start:end] for start, end in phone_spans(text)]


@pytest.mark.parametrize(
    ("text", "numbers"),
    [
        # A prefix is evidence: "+", "00", a trunk "0" glued to the first group or in brackets.
        ("write 0049 30 1234567", ["0049 30 1234567"]),
        ("Berlin 030 1234567", ["030 1234567"]),
        ("mobile 07700 900123", ["07700 900123"]),
        ("London 020 7946 0958.", ["020 7946 0958"]),
        ("ask +49 (0)30 1234567 for it", ["+49 (0)30 1234567"]),
        ("ask +33 1 23 45 67 89 for it", ["+33 1 23 45 67 89"]),
        # A word announcing it is evidence too, and carries to the next number of a list.
        ("call 555 123 4567", ["555 123 4567"]),
        ("my number is 612 345 678", ["612 345 678"]),
        ("Tel.: 415-555-0142", ["415-555-0142"]),
        ("call +1 415 555 0142 or 030 1234567", ["+1 415 555 0142", "030 1234567"]),
        ("text me: 212 555 7890", ["212 555 7890"]),
        ("my direct line is 617 253 1000", ["617 253 1000"]),
        # A North American number written to be dialled is its own evidence.
        ("you can reach me at 415-555-2671", ["415-555-2671"]),
        ("contact me at (415) 555-2671", ["(415) 555-2671"]),
        ("I'm at 617.253.1000", ["617.253.1000"]),
        # Quantities with their thousands grouped, even announced, are no one's number.
        ("it calls 1 000 000 times", []),
        ("the number is 175 000 000 parameters", []),
        ("the text 2023 2024 2025 and line 256 512 1024", []),
        # Neither: a valid number (with region US) is still a list of sizes.
        ("hidden sizes 256 512 1024 and 2048", []),
        ("415 555 0142", []),
        # Evidence, but no number libphonenumber accepts.
        ("prices +12.34 56.78", []),
        ("+12 3456 7890 12", []),
        ("call 911 or 112", []),
        ("the number of parameters is 7 000 000 000", []),
        # Shapes that are never one: single digits, dates, decimals.
        ("seeds 0 1 2 3 4 5 6 7 8", []),
        ("batch sizes 0 256 512 1024", []),
        ("on 08.12.2023 and 01/02/2024", []),
        ("ratio 3.555 123 4567 and 555 123 4567.5", []),
        # What written text holds: a number an identifier's label names, even with a prefix's evidence.
        ("funded by NSF grant number 2234567", []),
        ("under award number 0612345678", []),
        ("ID 0123456789 and ID: 0612345678", []),
        ("see arXiv:0712.3456 and arXiv 0904.12345", []),
        # Two groups joined by one ".": a decimal or an id, not a number to dial.
        ("the ratio 0712.3456 held", []),
        # Postal codes with a leading "0": a trunk prefix is no evidence for their shape, but a word
        # announcing a number still is, and Berlin's numbers are written so too.
        ("Hokkaido University, Sapporo 060-0808, Japan; my number is 060-0808", ["060-0808"]),
        ("University of Sao Paulo, 05508-090, Brazil", []),
        ("MIT, Cambridge, MA 02139-4307, USA, or Berlin 030-1234567", ["030-1234567"]),
        # "reach" announces a number only when someone is to be reached.
        ("we reach 1 234 567 samples; reach us: 612 345 678", ["612 345 678"]),
        ("we reach 1234567 tokens, so you can reach me at 612 345 678", ["612 345 678"]),
    ],
)
def test_numbers_with_evidence_and_a_valid_form_are_phone_numbers(text: str, numbers: list[str]) -> None:
    assert found(text) == numbers


def test_a_word_lets_a_possible_number_through_a_prefix_needs_a_valid_one() -> None:
    # 555 numbers are made up: possible (the right length), not valid.
    assert is_phone_number("+1 555 123 4567", announced=True)
    assert not is_phone_number("+1 555 123 4567", announced=False)
    assert is_phone_number("+1 415 555 0142", announced=False)
    assert not is_phone_number("256 512 1024", announced=False)
    assert is_phone_number("256 512 1024", announced=True)


@pytest.mark.parametrize(
    "text",
    [
        "1 " * 300_000,
        "12-" * 200_000,
        "1" * 1_000_000,
        "+1 " * 200_000,
        "(1)" * 200_000,
        "a " * 500_000,
        "jane at " * 100_000,
        "jane dot " * 100_000,
        "a b c @ " * 100_000,
        "a at b dot " * 80_000,
        "030 1234567 " * 20_000,
    ],
)
def test_redaction_is_linear_on_a_megabyte(text: str) -> None:
    # CPU time, not wall time: the suite's other workers share the cores.
    started = time.process_time()
    redaction_spans(text)
    assert time.process_time() - started < 2.0
