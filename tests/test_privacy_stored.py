"""API answers and lecture pages stripped of personal data before anything stores them."""

from __future__ import annotations

import copy
import json
from typing import Any

from crawler.pages import parse_lecture_document, parse_lecture_page
from crawler.privacy.emails import PLACEHOLDER, scrub_emails
from crawler.privacy.stored import (
    _rewritten_next_data,
    _strip_next_data,
    strip_page_personal_data,
    strip_personal_data,
)
from tests.test_pages_profiles import (
    EMAILS,
    EXPECTED_AUTHORS,
    SHUFFLED,
    lecture_with_authors,
    no_personal_data,
)
from tests.test_pages_underline import INCLUDED, WEB, api_lecture


def answer() -> dict[str, Any]:
    lecture = lecture_with_authors()
    lecture["attributes"]["abstract"] = "Questions to jane.doe@example.org, please."
    return {"data": lecture, "included": [*SHUFFLED, *INCLUDED], "meta": {"contact": "ada@example.net"}}


def test_profiles_keep_only_the_allowed_attributes() -> None:
    original = answer()
    kept = copy.deepcopy(original)
    stripped = strip_personal_data(original)
    assert original == kept  # the input is not changed
    profiles = {r["id"]: r for r in stripped["included"] if r["type"] == "profiles"}
    assert profiles["9001"] == {
        "type": "profiles",
        "id": "9001",
        "attributes": {
            "full_name": "Jane  Q.\tDoe ",
            "first_name": "Jane",
            "last_name": "Doe",
            "affiliation": "University of Edinburgh",
            "orcid": "0000-0002-1825-0097",
        },
    }
    assert profiles["9004"] == {
        "type": "profiles",
        "id": "9004",
        "attributes": {"first_name": "Ada", "last_name": "Lovelace", "affiliation": ""},
    }
    assert stripped["data"]["attributes"]["abstract"] == "Questions to [email removed], please."
    assert stripped["meta"] == {"contact": "[email removed]"}
    assert stripped["included"][4:] == INCLUDED
    no_personal_data(json.dumps(stripped, ensure_ascii=False))


def test_a_stripped_answer_reads_the_same_authors() -> None:
    assert parse_lecture_document(strip_personal_data(answer())).authors == EXPECTED_AUTHORS


def test_profiles_under_another_type_are_found_through_the_relationship() -> None:
    lecture = api_lecture()
    lecture["relationships"]["sorted_profiles"] = {"data": [{"type": "people", "id": "1"}]}
    person = {"type": "people", "id": "1", "attributes": {"full_name": "A B", "phone": "+44 20 7946 0000"}}
    stripped = strip_personal_data({"data": [lecture], "included": [person]})
    assert stripped["included"] == [{"type": "people", "id": "1", "attributes": {"full_name": "A B"}}]


def test_anything_else_only_loses_its_addresses() -> None:
    assert strip_personal_data(["a@example.org", 5, None]) == ["[email removed]", 5, None]
    assert strip_personal_data({"errors": [{"detail": "no"}]}) == {"errors": [{"detail": "no"}]}


HEAD = (
    "<!DOCTYPE html><html><head><title>Router-Tuning | Underline</title></head>"
    "<body><main><p>Router-Tuning</p>"
    "<p>Mail jane.doe@example.org for the code.</p></main>"
    '<script id="__NEXT_DATA__" type="application/json">'
)
TAIL = "</script><footer>Stay up to date with the latest Underline news!</footer></body></html>"


def page_with(doc: dict[str, Any]) -> str:
    tree = {"props": {"pageProps": {"fallback": {"/api/v1/thin_lectures/130123": doc}}}, "page": "/lecture"}
    return HEAD + json.dumps(tree).replace("<", "\\u003c") + TAIL


def test_a_page_loses_profile_data_and_addresses_and_nothing_else() -> None:
    doc = answer()
    doc["data"]["attributes"]["title"] = "Router </script> Tuning"
    original = page_with(doc)
    stripped = strip_page_personal_data(original)
    head, _, rest = stripped.partition('<script id="__NEXT_DATA__" type="application/json">')
    assert head + '<script id="__NEXT_DATA__" type="application/json">' == HEAD.replace(
        "jane.doe@example.org", "[email removed]"
    )
    assert rest.endswith(TAIL)
    for address in EMAILS:
        assert address not in stripped, f"{address=}"
    assert "avatar" not in stripped
    assert "</script>" not in rest[: -len(TAIL)]
    before = parse_lecture_page(original, f"{WEB}/lecture/130123")
    after = parse_lecture_page(stripped, f"{WEB}/lecture/130123")
    assert after.fields is not None and before.fields is not None
    assert after.fields.authors == EXPECTED_AUTHORS
    assert after.fields.title == "Router </script> Tuning"
    assert after.fields.abstract == "Questions to [email removed], please."
    assert after.blocks == [b.replace("jane.doe@example.org", "[email removed]") for b in before.blocks]


def test_a_page_as_bytes_keeps_bytes_that_are_not_utf8() -> None:
    original = page_with(answer()).encode("utf-8").replace(b"for the code", b"for the c\xffde")
    stripped = strip_page_personal_data(original)
    assert isinstance(stripped, bytes)
    assert b"for the c\xffde." in stripped
    assert b"@" not in stripped


def test_a_page_without_personal_data_is_unchanged() -> None:
    clean = page_with({"data": api_lecture(), "included": INCLUDED}).replace("jane.doe@example.org", "us")
    assert strip_page_personal_data(clean) == clean
    unreadable = HEAD.replace("jane.doe@example.org", "us") + '{"props": ' + TAIL
    assert strip_page_personal_data(unreadable) == unreadable


def test_an_answer_without_personal_data_comes_back_equal_and_unchanged() -> None:
    doc = {"data": api_lecture(), "included": INCLUDED, "meta": {"n": [1.5, None, True]}}
    kept = copy.deepcopy(doc)
    assert strip_personal_data(doc) == kept
    assert doc == kept


def test_nesting_deeper_than_any_answer_is_dropped() -> None:
    deep: Any = "a@example.org"
    for _ in range(205):
        deep = [deep]
    stripped = strip_personal_data({"errors": deep})
    node = stripped["errors"]
    for _ in range(199):
        node = node[0]
    assert node == [None]


def test_only_a_document_that_had_something_to_cut_is_written_again() -> None:
    # The document with a profile to cut is written again, in place and compact; the rest of the
    # script, a document whose profile had nothing to cut included, keeps its bytes.
    plain = {"id": "7", "type": "profiles", "attributes": {"full_name": "A B"}}
    tree = {
        "props": {
            "a": {"data": {"type": "profiles", "id": "8", "attributes": {"email": "x@example.org"}}},
            "b": {"data": [plain]},
        }
    }
    page = HEAD + json.dumps(tree) + TAIL
    stripped = strip_page_personal_data(page)
    script = stripped[len(HEAD.replace("jane.doe@example.org", "[email removed]")) : -len(TAIL)]
    assert script == (
        '{"props": {"a": {"data":{"type":"profiles","id":"8","attributes":{}}}, '
        '"b": {"data": [{"id": "7", "type": "profiles", "attributes": {"full_name": "A B"}}]}}}'
    )
    only_plain = HEAD + json.dumps({"props": {"b": {"data": [plain]}}}) + TAIL
    assert strip_page_personal_data(only_plain) == only_plain.replace(
        "jane.doe@example.org", "[email removed]"
    )


def test_every_form_of_an_address_leaves_a_page_and_its_markup_stays() -> None:
    # JSON writes the quotes and the tab escaped: the page's script holds them in no address's form.
    forms = [
        "o'brien+talks@example.org",
        '"J. Doe" @ example.org',
        "root@localhost",
        "jane\t@\t[192.168.1.1]",
    ]
    doc = answer()
    doc["data"]["attributes"]["abstract"] = "Write to " + ", ".join(forms) + "."
    visible = '<p title="@example.org" class="x">Or to ' + " and ".join(forms) + ".</p>"
    original = page_with(doc).replace("</main>", visible + "</main>")
    stripped = strip_page_personal_data(original)
    for form in forms:
        assert form not in stripped, f"case {form}"
    assert "brien" not in stripped and "J. Doe" not in stripped and "192.168" not in stripped
    assert (
        '<p title="@example.org" class="x">Or to [email removed] and [email removed] and [email removed] and '
        "[email removed].</p>" in stripped
    )
    after = parse_lecture_page(stripped, f"{WEB}/lecture/130123")
    assert after.fields is not None
    assert (
        after.fields.abstract
        == "Write to [email removed], [email removed], [email removed], [email removed]."
    )
    assert after.fields.authors == EXPECTED_AUTHORS


def test_an_address_the_page_script_writes_escaped_leaves_the_page() -> None:
    # Next.js writes "&" as \u0026 in the script; JSON may write any character as \uXXXX. The script's
    # text then holds no "@" in any form; its decoded strings do.
    lecture = api_lecture()
    lecture["attributes"]["abstract"] = "Write to jane&#64;example.org or ｊａｎｅ＠ｅｘａｍｐｌｅ．ｏｒｇ."
    tree = {"props": {"pageProps": {"fallback": {"/api/v1/thin_lectures/130123": {"data": lecture}}}}}
    script = json.dumps(tree).replace("&", "\\u0026")
    assert "@" not in script and "&" not in script and "\uff20" not in script
    head = HEAD.replace("jane.doe@example.org", "us")
    stripped = strip_page_personal_data(head + script + TAIL)
    after = parse_lecture_page(stripped, f"{WEB}/lecture/130123")
    assert after.fields is not None
    assert after.fields.abstract == "Write to [email removed] or [email removed]."
    assert "#64;" not in stripped and "\\uff20" not in stripped


# Addresses whose "@" is a bracketed "at" with control characters for its spaces: JSON writes the tab,
# line feed, carriage return and form feed as short escapes, the others as \u00XX, so the script's
# text (and the dump of its JSON) holds none of the forms the scrub looks for.
CONTROL_SPACED = [f"jane({c}at{c})example.org" for c in "\t\n\r\x0c\x0b\x1c\x1f"]


def test_an_address_spaced_with_control_characters_leaves_a_page_that_had_profiles() -> None:
    for address in CONTROL_SPACED:
        doc = answer()
        del doc["meta"]  # its address would have the page's strings searched whatever the rest holds
        # A backslash before a "u" written as \\u in the script (LaTeX's \url) is no escape.
        doc["data"]["attributes"]["abstract"] = f"See \\url{{x}}, write to {address}."
        stripped = strip_page_personal_data(page_with(doc))
        after = parse_lecture_page(stripped, f"{WEB}/lecture/130123")
        assert after.fields is not None, f"case {address!r}"
        assert after.fields.abstract == "See \\url{x}, write to [email removed].", f"case {address!r}"
        assert after.fields.authors == EXPECTED_AUTHORS, f"case {address!r}"


def test_an_address_spaced_with_control_characters_leaves_a_page_without_profiles() -> None:
    head = HEAD.replace("jane.doe@example.org", "us")
    for address in CONTROL_SPACED:
        lecture = api_lecture()
        lecture["attributes"]["abstract"] = f"Write to {address}."
        page = head + json.dumps(_page_tree(lecture)) + TAIL
        after = parse_lecture_page(strip_page_personal_data(page), f"{WEB}/lecture/130123")
        assert after.fields is not None, f"case {address!r}"
        assert after.fields.abstract == "Write to [email removed].", f"case {address!r}"


def _page_tree(lecture: dict[str, Any]) -> dict[str, Any]:
    return {"props": {"pageProps": {"fallback": {"/api/v1/thin_lectures/130123": {"data": lecture}}}}}


def test_an_address_the_page_script_writes_as_json_or_html_escapes_leaves_the_page() -> None:
    # Each script's text holds no "@" in a form the scrub reads; its decoded strings do. The page
    # holds profiles or not: their addresses are cut before anything else is searched.
    head = HEAD.replace("jane.doe@example.org", "us")
    for profiles in (True, False):
        lecture = lecture_with_authors() if profiles else api_lecture()
        lecture["attributes"]["abstract"] = 'Write to jane@example.org or "J. Doe"@example.org.'
        tree = _page_tree(lecture)
        if profiles:
            tree["props"]["pageProps"]["fallback"]["/api/v1/thin_lectures/130123"]["included"] = [
                *SHUFFLED,
                *INCLUDED,
            ]
        dumped = json.dumps(tree)
        scripts = {
            "json": dumped.replace("@", "\\u0040"),
            # HTML-escaped JSON, its "@" a character reference without its semicolon.
            "html": dumped.replace("&", "&amp;").replace('"', "&quot;").replace("@", "&#64"),
        }
        for kind, script in scripts.items():
            case = f"case {kind}, profiles {profiles}"
            stripped = strip_page_personal_data(head + script + TAIL)
            after = parse_lecture_page(stripped, f"{WEB}/lecture/130123")
            assert after.fields is not None, case
            assert after.fields.abstract == "Write to [email removed] or [email removed].", case
            assert "example.org" not in stripped, case
            if profiles:
                assert after.fields.authors == EXPECTED_AUTHORS, case


def _next_js_script(tree: Any) -> str:
    """A script's text as Next.js writes it: compact, with "<", ">" and "&" escaped."""
    text = json.dumps(tree, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _script_of(page: str) -> str:
    return page.partition('type="application/json">')[2].rpartition("</script>")[0]


def _lecture_page_tree(lecture_doc: dict[str, Any]) -> dict[str, Any]:
    related = {"data": [api_lecture("130124")], "included": INCLUDED}
    related["data"][0]["attributes"]["abstract"] = "Q&A <b>after</b> the talk"
    fallback = {
        "/api/v1/thin_lectures/130123?include=sorted_profiles": lecture_doc,
        "/api/v1/thin_lectures/130123/related": related,
    }
    return {"props": {"pageProps": {"fallback": fallback}}, "page": "/lecture", "isFallback": False}


def test_only_the_lecture_document_of_a_page_is_written_again() -> None:
    # The related lectures' document holds no profile: its text (escapes and all) is kept byte for
    # byte, and so is everything around the documents; the lecture's own is written again, cut.
    tree = _lecture_page_tree(answer())
    original = HEAD + _next_js_script(tree) + TAIL
    stripped = strip_page_personal_data(original)
    related = _next_js_script(tree["props"]["pageProps"]["fallback"]["/api/v1/thin_lectures/130123/related"])
    assert "Q\\u0026A \\u003cb\\u003eafter" in related
    script = _script_of(stripped)
    assert script.startswith('{"props":{"pageProps":{"fallback":{"/api/v1/thin_lectures/130123?include=')
    assert script.endswith(
        ',"/api/v1/thin_lectures/130123/related":' + related + '}}},"page":"/lecture","isFallback":false}'
    )
    no_personal_data(script)
    after = parse_lecture_page(stripped, f"{WEB}/lecture/130123")
    assert after.fields is not None
    assert after.fields.authors == EXPECTED_AUTHORS
    assert after.fields.abstract == "Questions to [email removed], please."
    assert after.fields.related_lecture_ids == ["130124"]


def test_a_page_script_with_a_repeated_key_is_written_again_whole() -> None:
    # The JSON reads the last of two equal documents under one key: cutting the first one found would
    # leave the one read. Such a script is written again whole, with nothing of a profile left.
    key = '"/api/v1/thin_lectures/130123?include=sorted_profiles":'
    document = _next_js_script(answer())
    for script in [
        '{"props":{"pageProps":{"fallback":{' + key + document + "," + key + document + "}}}}",
        '{"props":{"pageProps":{"fallback":{'
        + key
        + document
        + '}},"pageProps":{"fallback":{'
        + key
        + document
        + "}}}}",
    ]:
        stripped = _script_of(strip_page_personal_data(HEAD + script + TAIL))
        no_personal_data(stripped)
        assert stripped.count("sorted_profiles") == 2, f"case {script[:60]}"  # the key and the relationship
        page = HEAD + script + TAIL
        after = parse_lecture_page(strip_page_personal_data(page), f"{WEB}/lecture/130123")
        assert after.fields is not None, f"case {script[:60]}"
        assert after.fields.authors == EXPECTED_AUTHORS, f"case {script[:60]}"


def test_a_script_written_in_place_reads_as_the_script_written_whole() -> None:
    # What is written in place and what the whole rewrite writes read the same, for scripts with and
    # without profiles, with addresses in escaped forms and in keys, and for a script that is a
    # document itself.
    lecture = answer()
    lecture["data"]["attributes"]["title"] = "jane\\u0040example.org"
    lecture["meta"] = {"ada@example.net": ["x (at) y", "jose(\tat)example.es"], "n": [1.5, None]}
    plain_lecture = {"data": api_lecture(), "included": INCLUDED, "meta": {"@type": "pass@1"}}
    trees = [
        _lecture_page_tree(lecture),
        _lecture_page_tree(plain_lecture),
        answer(),
        {"props": [{"x": answer()}, {"y": {"z": plain_lecture}}]},
    ]
    for number, tree in enumerate(trees):
        for script in (json.dumps(tree), _next_js_script(tree), json.dumps(tree, indent=2)):
            script = script.replace("\\\\u0040", "\\u0040")
            in_place, _ = _strip_next_data(script)
            json.loads(script)  # decoded once more, as the whole rewrite reads it
            whole = _rewritten_next_data(script, json.loads(script))
            assert json.loads(in_place) == json.loads(whole), f"case {number} {script[:40]}"
            for gone in [*EMAILS, "avatar", "jane\\u0040example", "jose(\\tat)example"]:
                assert gone not in in_place, f"case {number} {gone}"


def test_an_address_only_the_script_text_shows_is_scrubbed_as_text() -> None:
    # The string holds a line feed before its "@", no address; its JSON text writes the line feed
    # "\n", which reads as a local part before the "@". The stored page holds no address in any form
    # the scrub finds, read as JSON or as text.
    # Written as "\u0040", the "@" shows only once the string is written again for its address.
    for profiles, escaped in [(True, False), (False, False), (True, True), (False, True)]:
        doc = answer() if profiles else {"data": api_lecture()}
        doc["data"]["attributes"]["title"] = "Write to us\n@example.org, not to jane@example.org"
        script = json.dumps(doc).replace("@", "\\u0040" if escaped else "@")
        stripped = strip_page_personal_data(HEAD + script + TAIL)
        assert "n@example.org" not in stripped, f"case {profiles} {escaped}"
        assert scrub_emails(stripped) == (stripped, 0), f"case {profiles} {escaped}"


def test_profiles_under_each_spelling_of_the_relationship_are_cut() -> None:
    # A lecture that spells the relationship both ways, each pointing at a type of its own.
    lecture = api_lecture()
    lecture["relationships"]["sorted_profiles"] = {"data": [{"type": "people", "id": "1"}]}
    lecture["relationships"]["sortedProfiles"] = {"data": {"type": "persons", "id": "2"}}
    others = [
        {"type": t, "id": i, "attributes": {"full_name": "A B", "phone": "1"}}
        for t, i in (("people", "1"), ("persons", "2"), ("people", "3"))
    ]
    for one_way in (False, True):
        if one_way:
            del lecture["relationships"]["sortedProfiles"]
        stripped = strip_personal_data({"data": [lecture], "included": others})
        phones = [resource["id"] for resource in stripped["included"] if "phone" in resource["attributes"]]
        assert phones == (["2", "3"] if one_way else ["3"]), f"case {one_way}"


def test_addresses_against_the_script_tags_leave_the_page_and_the_script_keeps_its_bytes() -> None:
    # The script's text holds no form of "@": the text around it is scrubbed on its own, right up to
    # the tags, and reads as the whole page scrubbed as text would.
    script = json.dumps(_lecture_page_tree({"data": api_lecture(), "included": INCLUDED}))
    head = '<p>jane@example.org</p>ada@example.net<script id="__NEXT_DATA__" type="application/json">'
    for tail in ["</script>jose@example.es", "</script >li.lei@example.cn<p>x</p>"]:
        page = head + script + tail
        stripped = strip_page_personal_data(page)
        assert stripped == scrub_emails(page)[0], f"case {tail}"
        assert _script_of(stripped.replace("</script >", "</script>")) == script, f"case {tail}"
        assert stripped.count(PLACEHOLDER) == 3, f"case {tail}"
