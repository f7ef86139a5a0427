from __future__ import annotations

import json
import random
import urllib.request
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.pages import parse_lecture_page
from crawler.replica.layout import MAIN_EVENT_ID, ReplicaSite, build_site, ground_truth, load_records
from crawler.replica.pages import (
    NEXT_DATA_MISSING,
    NEXT_DATA_NOT_JSON,
    NEXT_DATA_TRUNCATED,
    PageVariant,
    Renderer,
    next_data_script,
)
from crawler.replica.server import ReplicaServer
from tests.scenarios.planted import (
    BANNERS,
    PlantedSite,
    PlantedTruth,
    plant_cases,
    revise,
    word_edit_distance,
)

BASE = "http://replica.test"


@pytest.fixture(scope="module")
def site() -> ReplicaSite:
    return build_site(load_records())


@pytest.fixture(scope="module")
def planted(site: ReplicaSite) -> tuple[PlantedSite, PlantedTruth]:
    return plant_cases(site, 0)


def test_planting_is_deterministic(site: ReplicaSite, planted: tuple[PlantedSite, PlantedTruth]) -> None:
    again_site, again_truth = plant_cases(site, 0)
    assert again_truth == planted[1]
    assert again_site.lectures == planted[0].lectures
    assert plant_cases(site, 1)[1] != planted[1]


def test_shares_of_the_planted_cases(site: ReplicaSite, planted: tuple[PlantedSite, PlantedTruth]) -> None:
    new_site, truth = planted
    main = len(site.event_lectures(MAIN_EVENT_ID))
    assert main == 726
    assert len(truth.duplicates) == round(0.02 * main) == 15
    assert len(truth.near_duplicates) == round(0.03 * main) == 22
    assert sorted(truth.fallback.values()).count(NEXT_DATA_MISSING) == 18
    assert sorted(truth.fallback.values()).count(NEXT_DATA_TRUNCATED) == 7
    assert sorted(truth.fallback.values()).count(NEXT_DATA_NOT_JSON) == 4
    assert len(truth.banners) == 38 and set(truth.banners.values()) <= set(BANNERS)
    assert len(new_site.lectures) == len(site.lectures) + 15 + 22
    # The site's own lectures are unchanged; the planted ones are new ids of the main event.
    for lecture_id, lecture in site.lectures.items():
        assert new_site.lectures[lecture_id] == lecture, f"{lecture_id=}, {lecture=}"
    ids = [n for pair in truth.duplicates for n in pair] + [
        i for n in truth.near_duplicates for i in (n.original, n.copy)
    ]
    assert len(ids) == len(set(ids)) == 74
    assert not set(ids) & set(truth.fallback)


def test_duplicates_are_the_same_talk_in_another_session(planted: tuple[PlantedSite, PlantedTruth]) -> None:
    new_site, truth = planted
    for original_id, copy_id in truth.duplicates:
        original, copy = new_site.lectures[original_id], new_site.lectures[copy_id]
        assert (copy.title, copy.abstract, copy.keywords, copy.event_id) == (
            original.title,
            original.abstract,
            original.keywords,
            MAIN_EVENT_ID,
        ), f"{original_id=}, {copy_id=}"
        assert copy.session_id != original.session_id, f"{original_id=}, {copy_id=}"
        assert copy.underline_doi != original.underline_doi, f"{original_id=}, {copy_id=}"


def test_near_duplicates_have_their_recorded_edit_distance(planted: tuple[PlantedSite, PlantedTruth]) -> None:
    new_site, truth = planted
    distances = []
    for item in truth.near_duplicates:
        original, copy = new_site.lectures[item.original], new_site.lectures[item.copy]
        assert copy.title == original.title and copy.abstract != original.abstract, f"{item=}"
        assert word_edit_distance(original.abstract.split(), copy.abstract.split()) == item.edit_distance, (
            f"{item=}"
        )
        assert 1 <= item.edit_distance <= 4 and len(item.edits) >= item.edit_distance, f"{item=}"
        distances.append(item.edit_distance)
    assert sorted(distances) == [1] * 3 + [2] * 10 + [3] * 4 + [4] * 5


def test_pages_of_the_variants(planted: tuple[PlantedSite, PlantedTruth]) -> None:
    new_site, truth = planted
    renderer = Renderer(new_site, BASE)
    by_kind = {
        kind: next(i for i, k in truth.fallback.items() if k == kind) for kind in set(truth.fallback.values())
    }
    for kind, lecture_id in by_kind.items():
        lecture = new_site.lectures[lecture_id]
        html = renderer.lecture_page(lecture)
        assert (b'id="__NEXT_DATA__"' in html) == (kind != NEXT_DATA_MISSING), f"{kind=}, {lecture_id=}"
        page = parse_lecture_page(html, BASE + lecture.path)
        assert page.extraction == "visible_text", kind
        assert page.fields is not None and page.fields.title == lecture.title, f"{kind=}, {lecture_id=}"
    plain = next(i for i in new_site.lectures if i not in truth.fallback and i not in truth.banners)
    assert parse_lecture_page(renderer.lecture_page(new_site.lectures[plain]), BASE).extraction == "next_data"
    for lecture_id, banner in truth.banners.items():
        variant = new_site.page_variants[lecture_id]
        html = renderer.lecture_page(new_site.lectures[lecture_id]).decode("utf-8")
        assert html.count(banner) == 1, f"{lecture_id=}, {banner=}"
        own_section = html.index("<section>")
        assert (html.index(banner) < own_section) == (variant.banner_position == "top"), (
            f"{lecture_id=}, {banner=}"
        )


def test_next_data_script_variants() -> None:
    data = {"props": {"a": "<b>"}}
    assert (
        next_data_script(data)
        == '<script id="__NEXT_DATA__" type="application/json">{"props":{"a":"\\u003cb\\u003e"}}</script>'
    )
    assert next_data_script(data, NEXT_DATA_MISSING) == ""
    assert (
        next_data_script(data, NEXT_DATA_TRUNCATED)
        == '<script id="__NEXT_DATA__" type="application/json">{"props":{"a":"</script>'
    )
    with pytest.raises(ValueError):
        json.loads(next_data_script(data, NEXT_DATA_NOT_JSON).split(">", 1)[1].rsplit("<", 1)[0])
    with pytest.raises(ValueError):
        PageVariant(next_data="broken")


def test_expected_records(planted: tuple[PlantedSite, PlantedTruth]) -> None:
    new_site, truth = planted
    records = ground_truth(new_site, BASE)
    expected = {r["lecture_id"]: r for r in truth.expected_records(records)}
    assert len(records) == 726 + 37 and len(expected) == 726 + 37 - 15
    for original_id, copy_id in truth.duplicates:
        keep, drop = sorted((original_id, copy_id), key=lambda i: (len(i), i))
        assert drop not in expected and expected[keep]["alternate_ids"] == [drop], (
            f"{original_id=}, {copy_id=}"
        )
    clustered = {i: r["near_duplicate_cluster"] for i, r in expected.items() if r["near_duplicate_cluster"]}
    assert len(clustered) == 44
    for lecture_id in truth.fallback:
        assert expected[lecture_id]["extraction"] == "visible_text", f"{lecture_id=}"
        assert expected[lecture_id]["related_lecture_ids"] == [], f"{lecture_id=}"


def test_the_server_serves_a_planted_site(planted: tuple[PlantedSite, PlantedTruth]) -> None:
    new_site, truth = planted
    lecture_id = next(i for i, kind in truth.fallback.items() if kind == NEXT_DATA_MISSING)
    copy_id = truth.duplicates[0][1]
    with ReplicaServer(new_site) as server:
        for wanted in (lecture_id, copy_id):
            lecture = new_site.lectures[wanted]
            with urllib.request.urlopen(server.base_url + lecture.path, timeout=10) as response:
                body = response.read()
            page = parse_lecture_page(body, server.base_url + lecture.path)
            assert page.fields is not None and page.fields.lecture_id == wanted, f"{wanted=}"
        assert page.extraction == "next_data"
        url = f"{server.base_url}/api/v1/thin_lectures?filter[event_id]=502&page[size]=500&page[number]=2"
        with urllib.request.urlopen(url.replace("[", "%5B").replace("]", "%5D"), timeout=10) as response:
            listing: dict[str, Any] = json.loads(response.read())
        assert listing["meta"]["total_count"] == 726 + 37


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 4))
def test_revise_changes_a_few_words(seed: int, edits: int) -> None:
    text = " ".join(f"word{i} alpha beta gamma" for i in range(20))
    revised, done = revise(random.Random(seed), text, edits)
    assert len(done) == edits
    assert 1 <= word_edit_distance(text.split(), revised.split()) <= edits


def test_word_edit_distance() -> None:
    assert word_edit_distance(["a", "b", "c"], ["a", "x", "c", "d"]) == 2
    assert word_edit_distance([], ["a"]) == 1
    assert word_edit_distance(["a"], ["a"]) == 0
