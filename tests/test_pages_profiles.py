"""Authors from profiles: the relationship's order, names, affiliations, ORCID iDs, nothing else."""

from __future__ import annotations

import json
from typing import Any

import pytest

from crawler.pages import (
    INVALID_ORCID,
    normalize_orcid,
    parse_lecture_document,
    parse_lecture_list,
    parse_lecture_page,
)
from crawler.pages.profiles import author, orcid_check_digit
from crawler.text.normalize import person_name
from tests.test_pages_underline import INCLUDED, WEB, api_lecture

EMAILS = ("jane.doe@example.org", "li.lei@example.cn", "ada@example.net", "jose@example.es")


def profile(ident: str, **attributes: Any) -> dict[str, Any]:
    return {
        "type": "profiles",
        "id": ident,
        "attributes": {"avatar_url": f"https://assets.underline.io/profile/{ident}/avatar.png", **attributes},
        "links": {"self": f"/api/v1/profiles/{ident}"},
    }


PROFILES = [
    profile(
        "9001",
        full_name="Jane  Q.\tDoe ",
        first_name="Jane",
        last_name="Doe",
        email=EMAILS[0],
        affiliation="University of Edinburgh",
        orcid="0000-0002-1825-0097",
        position=1,
    ),
    profile(
        "9002",
        first_name="Jose\u0301",
        last_name="Nu\u0301n\u0303ez",
        email=EMAILS[3],
        affiliation=None,
        orcid="https://orcid.org/0000-0002-1694-233X",
        position=3,
    ),
    profile(
        "9003",
        full_name="\u674e\u96f7",
        email=EMAILS[1],
        affiliation="Tsinghua University",
        orcid="0000-0002-1825-0098",
        position=0,
    ),
    profile("9004", first_name="Ada", last_name="Lovelace", email=EMAILS[2], affiliation="", position=2),
]
# The relationship's order; ``included`` below lists the profiles in another one.
SORTED = ["9003", "9001", "9004", "9002"]
SHUFFLED = [PROFILES[1], PROFILES[3], PROFILES[0], PROFILES[2]]

EXPECTED_AUTHORS = [
    {"name": "\u674e\u96f7", "affiliations": ["Tsinghua University"], "orcid": None},
    {"name": "Jane Q. Doe", "affiliations": ["University of Edinburgh"], "orcid": "0000-0002-1825-0097"},
    {"name": "Ada Lovelace", "affiliations": [], "orcid": None},
    {"name": "Jos\u00e9 N\u00fa\u00f1ez", "affiliations": [], "orcid": "0000-0002-1694-233X"},
]


def lecture_with_authors(lecture_id: str = "130123", order: list[str] = SORTED) -> dict[str, Any]:
    lecture = api_lecture(lecture_id)
    lecture["relationships"]["sorted_profiles"] = {"data": [{"type": "profiles", "id": i} for i in order]}
    return lecture


def no_personal_data(text: str) -> None:
    for address in EMAILS:
        assert address not in text, f"{address=}"
    assert "@" not in text
    assert "avatar" not in text


def test_authors_in_the_relationships_order_from_the_api() -> None:
    fields = parse_lecture_document({"data": lecture_with_authors(), "included": [*SHUFFLED, *INCLUDED]})
    assert fields.authors == EXPECTED_AUTHORS
    assert fields.problems == [f"{INVALID_ORCID}: '0000-0002-1825-0098'"]
    assert fields.parsed_record().values()["authors"] == EXPECTED_AUTHORS


def test_authors_from_the_listing_each_lecture_its_own_order() -> None:
    doc = {
        "data": [lecture_with_authors("130123"), lecture_with_authors("130124", ["9002", "9001"])],
        "included": [*SHUFFLED, *INCLUDED],
        "meta": {"total_pages": 1},
    }
    page = parse_lecture_list(doc)
    assert page.records[0].authors == EXPECTED_AUTHORS
    assert page.records[1].authors == [EXPECTED_AUTHORS[3], EXPECTED_AUTHORS[1]]
    no_personal_data(
        json.dumps([r.parsed_record().values() for r in page.records], default=str, ensure_ascii=False)
    )
    no_personal_data(repr([r.problems for r in page.records]))


def camel_profile(resource: dict[str, Any]) -> dict[str, Any]:
    names = {
        "full_name": "fullName",
        "first_name": "firstName",
        "last_name": "lastName",
        "avatar_url": "avatarUrl",
    }
    attributes = {names.get(k, k): v for k, v in resource["attributes"].items()}
    return {**resource, "attributes": attributes}


def test_authors_from_the_page_json_in_camel_case() -> None:
    lecture = lecture_with_authors()
    lecture["relationships"]["sortedProfiles"] = lecture["relationships"].pop("sorted_profiles")
    doc = {"data": lecture, "included": [*map(camel_profile, SHUFFLED), *INCLUDED]}
    payload = json.dumps({"props": {"pageProps": {"fallback": {"/api/v1/thin_lectures/130123": doc}}}})
    page = parse_lecture_page(f"<script id='__NEXT_DATA__'>{payload}</script>", f"{WEB}/lecture/130123-x")
    assert page.extraction == "next_data"
    assert page.fields is not None
    assert page.fields.authors == EXPECTED_AUTHORS
    assert f"{INVALID_ORCID}: '0000-0002-1825-0098'" in page.problems
    no_personal_data(json.dumps(page.fields.parsed_record().values(), default=str, ensure_ascii=False))


def test_profiles_missing_from_included_and_without_a_name_are_reported() -> None:
    nameless = profile("9005", email="x@example.org", affiliation="Somewhere")
    lecture = lecture_with_authors(order=["9001", "9099", "9005"])
    fields = parse_lecture_document({"data": lecture, "included": [PROFILES[0], nameless]})
    assert fields.authors == [EXPECTED_AUTHORS[1]]
    assert fields.problems == ["an author profile has no name", "1 author profile(s) not included"]


def test_a_lecture_without_the_relationship_has_no_authors() -> None:
    fields = parse_lecture_document({"data": api_lecture(), "included": [*PROFILES, *INCLUDED]})
    assert fields.authors == []
    assert fields.problems == []


def test_affiliations_are_never_split() -> None:
    one = profile("9006", full_name="A B", affiliation="Dept. of CS, University of X; Lab Y")
    listed = profile("9007", full_name="C D", affiliations=["Univ. P", "  Inst.  Q ", 5])
    lecture = lecture_with_authors(order=["9006", "9007"])
    fields = parse_lecture_document({"data": lecture, "included": [one, listed]})
    assert fields.authors == [
        {"name": "A B", "affiliations": ["Dept. of CS, University of X; Lab Y"], "orcid": None},
        {"name": "C D", "affiliations": ["Univ. P", "Inst. Q"], "orcid": None},
    ]


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("0000-0002-1825-0097", "0000-0002-1825-0097"),
        ("https://orcid.org/0000-0002-1825-0097", "0000-0002-1825-0097"),
        ("http://www.orcid.org/0000-0002-1825-0097/", "0000-0002-1825-0097"),
        (" orcid.org/0000-0002-1694-233x ", "0000-0002-1694-233X"),
        ("0000000218250097", "0000-0002-1825-0097"),
        ("0000-0002-1825-0098", None),
        ("0000-0002-1694-2330", None),
        ("https://example.org/0000-0002-1825-0097", None),
        ("0000-0002-1825-009", None),
        ("0000-0002-1825-00977", None),
        ("\uff10000-0002-1825-0097", None),
        ("jane.doe@example.org", None),
    ],
)
def test_orcid_forms(given: str, stored: str | None) -> None:
    assert normalize_orcid(given) == stored


def test_an_invalid_orcid_is_dropped_and_its_problem_names_no_email() -> None:
    bad = profile("9008", full_name="E F", orcid="mail jane.doe@example.org")
    fields = parse_lecture_document({"data": lecture_with_authors(order=["9008"]), "included": [bad]})
    assert fields.authors == [{"name": "E F", "affiliations": [], "orcid": None}]
    assert fields.problems == [f"{INVALID_ORCID}: 'mail [email removed]'"]


def test_names_and_affiliations_in_every_form() -> None:
    # An ASCII name is its own published form once whitespace is collapsed; any other goes through
    # person_name (format characters removed, NFC). Both give what person_name gives.
    cases: dict[str, tuple[dict[str, Any], str | None, list[str]]] = {
        "ascii": ({"full_name": " Pawan  Goyal ", "affiliation": " Univ.  X "}, "Pawan Goyal", ["Univ. X"]),
        "ascii separators": ({"full_name": "Ann\x1cLee\t", "affiliation": "\x1f"}, "Ann Lee", []),
        "ascii control": ({"full_name": "Ann\x01Lee"}, "Ann\x01Lee", []),
        "decomposed": (
            {"full_name": "Jose\u0301 Ruiz", "affiliation": "Universite\u0301"},
            "Jos\u00e9 Ruiz",
            ["Universit\u00e9"],
        ),
        "zero-width": (
            {"full_name": "Ann\u200b Lee\u200d", "affiliation": "U\u200b"},
            "Ann Lee",
            ["U\u200b"],
        ),
        "format only": (
            {"full_name": "\u200b\u00ad", "first_name": "Ada", "last_name": "Lovelace"},
            "Ada Lovelace",
            [],
        ),
        "soft hyphen part": ({"first_name": "\u00ad", "last_name": "Lee"}, "Lee", []),
        "parts, ascii": ({"first_name": " Ada ", "last_name": " Love  lace"}, "Ada Love lace", []),
        "no-break space": (
            {"full_name": "Ada\u00a0Lovelace", "affiliation": ["A", "A ", "\u00a0B", 5, None]},
            "Ada Lovelace",
            ["A", "B"],
        ),
        "no name": ({"full_name": " ", "affiliation": 7}, None, []),
        "number for an affiliation": ({"full_name": "Ann Lee", "affiliation": 7}, "Ann Lee", []),
        "surrogate": ({"full_name": "Ann\ud800 Lee"}, "Ann Lee", []),
    }
    for case, (attributes, name, affiliations_) in cases.items():
        given = profile("9100", **attributes)
        problems: list[str] = []
        found = author(given, problems)
        if name is None:
            assert (found, problems) == (None, ["an author profile has no name"]), f"case {case}"
        else:
            assert found == {"name": name, "affiliations": affiliations_, "orcid": None}, f"case {case}"
            assert found["name"] == person_name(found["name"]), f"case {case}"


def test_the_orcid_check_digit_of_any_digits() -> None:
    # The 15 ASCII digits of an iD are summed from their bytes; any other text by the standard's loop.
    arabic_indic = str.maketrans("0123456789", "".join(chr(0x0660 + d) for d in range(10)))
    cases = {
        "000000021825009": "7",
        "000000021694233": "X",
        "000000020787425": "9",
        "999999999999999": "4",
        "000000000000000": "1",
        "000000021825009".translate(arabic_indic): "7",
        "00000002182500": "2",
        "0000000218250090": "2",
        "": "1",
    }
    for digits, check in cases.items():
        assert orcid_check_digit(digits) == check, f"case {digits!r}"
