from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.text.template import TemplateModel, TemplateParams, block_hash, find_anchors, prepare_blocks

SITE = "site.test"
WELCOME = ["## Welcome!", "A long welcome paragraph of the event.", "*Message from the chair*", "Celebrate!"]
FOOTER = ["Downloads", "Next from EVENT", "Stay up to date!", "COMPANY"]
KEYWORDS = ["large language models", "evaluation", "reasoning", "agents", "speech"]
TYPES = ["poster", "technical paper"]


def record(i: int) -> dict[str, Any]:
    rng = random.Random(i)
    return {
        "abstract": f"Abstract number {i}: we study problem {i} in depth and report results.",
        "title": f"Title {i}",
        "keywords": rng.sample(KEYWORDS, rng.randint(0, 3)),
        "type": TYPES[i % 2],
    }


def page(i: int, n: int, *, banner: str | None = None, teasers: int = 4) -> list[str]:
    """A lecture page: header, own section, welcome, teasers of other lectures, labels, footer."""
    own = record(i)
    blocks = ["Country"]
    if banner:
        blocks.append(banner)
    blocks += [own["abstract"], "EVENT", own["title"], *own["keywords"], own["type"], *WELCOME]
    for k in range(1, teasers + 1):
        other = record((i + 7 * k) % n)
        blocks += [other["abstract"], other["title"]]
    return blocks + FOOTER


def expected(i: int) -> list[str]:
    own = record(i)
    return [own["abstract"], "EVENT", own["title"], *own["keywords"], own["type"]]


def learned(n: int = 40, **params: Any) -> TemplateModel:
    model = TemplateModel(TemplateParams(**params))
    for i in range(n):
        model.observe(SITE, page(i, n), title=record(i)["title"], description=record(i)["abstract"])
    return model


def judge(model: TemplateModel, blocks: list[str], i: int) -> list[str] | None:
    return model.own_blocks(SITE, blocks, title=record(i)["title"], description=record(i)["abstract"])


def test_a_learned_model_gives_exactly_the_own_blocks() -> None:
    model = learned()
    for i in range(40):
        assert judge(model, page(i, 40), i) == expected(i), f"{i=}"
    assert judge(model, page(3, 40), 3) == [
        "Abstract number 3: we study problem 3 in depth and report results.",
        "EVENT",
        "Title 3",
        "speech",
        "technical paper",
    ]


def test_template_and_record_values_are_told_apart() -> None:
    model = learned()
    for line in [*WELCOME, *FOOTER, "Country"]:
        assert model.is_template(SITE, line), line
    for value in ["EVENT", "poster", "technical paper", "large language models"]:
        assert not model.is_template(SITE, value), value
    assert not model.is_template("other.test", "Downloads")


def test_not_ready_and_unanchored_pages_are_not_judged() -> None:
    model = learned(n=9)
    assert not model.ready(SITE)
    assert judge(model, page(1, 9), 1) is None
    model = learned()
    assert model.own_blocks(SITE, page(1, 40), title="Unknown", description="Unknown") is None
    assert model.own_blocks("other.test", page(1, 40), title="Title 1", description=None) is None


def test_a_banner_and_a_teaser_of_the_own_lecture_are_left_out() -> None:
    model = learned()
    for i in range(40, 50):
        model.observe(
            SITE,
            page(i, 40, banner="Register now!"),
            title=record(i)["title"],
            description=record(i)["abstract"],
        )
    # Lecture 5's abstract and title are teasers on other pages; on its own page they are its record.
    assert judge(model, page(5, 40, banner="Register now!"), 5) == expected(5)
    assert model.is_template(SITE, "Register now!")


def test_the_run_after_the_title_stops_at_another_record() -> None:
    model = learned()
    own = record(2)
    other = record(11)
    blocks = ["Country", own["abstract"], "EVENT", own["title"], other["title"], "poster"]
    assert judge(model, blocks, 2) == [own["abstract"], "EVENT", own["title"]]


def test_without_an_abstract_the_attached_block_before_the_title_is_taken() -> None:
    model = learned()
    own = record(4)
    blocks = ["Country", "EVENT", own["title"], *own["keywords"], own["type"], *WELCOME]
    assert model.own_blocks(SITE, blocks, title=own["title"], description=None) == [
        "EVENT",
        own["title"],
        *own["keywords"],
        own["type"],
    ]


def test_a_description_cut_short_still_anchors() -> None:
    model = learned()
    own = record(6)
    cut = own["abstract"][:45] + "..."
    assert model.own_blocks(SITE, page(6, 40), title=own["title"], description=cut) == expected(6)
    anchors = find_anchors(["x", own["abstract"], "EVENT", own["title"]], own["title"], cut, 3)
    assert (anchors.abstract, anchors.title) == (1, 3)


ABSTRACT_40 = "Forty characters of an abstract, at last"  # 40 characters


@pytest.mark.parametrize(
    ("description", "anchored"),
    [
        (ABSTRACT_40 + "...", True),
        (ABSTRACT_40 + " \u2026", True),  # the ellipsis character, after a space
        (ABSTRACT_40[:-1] + "...", False),  # too little left to tell
        (ABSTRACT_40 + "..", False),  # not an ellipsis
        (ABSTRACT_40 + ", and more.", False),  # neither cut nor the whole abstract
        (ABSTRACT_40 + " of it all.", True),  # the whole abstract
    ],
)
def test_only_a_description_cut_short_at_an_ellipsis_anchors_a_longer_block(
    description: str, anchored: bool
) -> None:
    blocks = ["x", ABSTRACT_40 + " of it all.", "EVENT", "Title"]
    anchors = find_anchors(blocks, "Title", description, 3)
    expected = (1, 3) if anchored else (None, 3)
    assert (anchors.abstract, anchors.title) == expected, f"case {description!r}"


def test_anchors_prefer_the_closest_abstract_title_pair() -> None:
    blocks = ["T", "A", "x", "A", "E", "T", "A"]
    anchors = find_anchors(blocks, "T", "A", 3)
    assert (anchors.abstract, anchors.title, anchors.start, anchors.end) == (3, 5, 3, 5)
    anchors = find_anchors(["x", "T", "E", "A", "y"], "T", "A", 3)
    assert (anchors.abstract, anchors.title, anchors.start, anchors.end) == (3, 1, 1, 3)
    anchors = find_anchors(["A", "x", "x", "x", "x", "T"], "T", "A", 3)
    assert (anchors.abstract, anchors.title) == (0, None)
    assert find_anchors(["x", "T"], "T", "A", 3).start == 1
    assert find_anchors([], "T", "A", 3).start is None


def test_the_first_pages_are_learned_again_once_the_site_has_enough() -> None:
    # The first six pages all show "technical paper": counted as they come, it would end the run after
    # the title on each of them; a second pass over them once the site has ten pages tells better.
    model = TemplateModel(TemplateParams(min_pages=10))
    pages = [i for i in range(60) if i % 2 == 1][:6] + [i for i in range(60) if i % 2 == 0][:30]
    for i in pages:
        model.observe(SITE, page(i, 60), title=record(i)["title"], description=record(i)["abstract"])
    assert model.sites[SITE].pending == []
    assert not model.is_template(SITE, "technical paper")
    assert judge(model, page(1, 60), 1) == expected(1)


def test_pages_with_known_own_blocks_teach_the_model() -> None:
    model = TemplateModel(TemplateParams(min_pages=5))
    for i in range(1, 12, 2):  # technical papers only: "technical paper" is on every page
        blocks = page(i, 40)
        own = list(range(1, 4 + len(record(i)["keywords"]) + 1))
        model.observe(SITE, blocks, title=record(i)["title"], description=record(i)["abstract"], own=own)
    assert not model.is_template(SITE, "technical paper")
    assert model.is_template(SITE, "## Welcome!")
    assert judge(model, page(13, 40), 13) == expected(13)


def test_save_and_load(tmp_path: Path) -> None:
    model = learned(n=12)
    model.observe("b.test", ["x", "A", "E", "T"], title="T", description="A")
    path = model.save(tmp_path / "state" / "boilerplate-model.json")
    assert [p.name for p in path.parent.iterdir()] == ["boilerplate-model.json"]
    again = TemplateModel.load(path)
    assert again.to_json() == model.to_json()
    assert again.sites["b.test"].pending[0][1].title == 3
    assert judge(again, page(3, 12), 3) == judge(model, page(3, 12), 3) == expected(3)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["version"] == 1 and data["sites"][SITE]["pages"] == 12


def test_a_missing_or_broken_model_loads_empty(tmp_path: Path) -> None:
    assert TemplateModel.load(tmp_path / "none.json").sites == {}
    broken = tmp_path / "broken.json"
    broken.write_text('{"version": 1, "sites": {"a": {"pages": "x"}}}', encoding="utf-8")
    assert TemplateModel.load(broken).sites == {}
    broken.write_text("not json", encoding="utf-8")
    assert TemplateModel.load(broken).sites == {}


def test_memory_is_bounded() -> None:
    model = TemplateModel(TemplateParams(max_hashes=100, max_records=30, min_pages=2))
    for i in range(500):
        model.observe(
            SITE, [f"unique {i}", f"A{i}", "EVENT", f"T{i}", "Footer"], title=f"T{i}", description=f"A{i}"
        )
    site = model.sites[SITE]
    assert len(site.df) <= 100
    assert len(site.attached) <= 100
    assert len(site.records) == 30
    assert site.df[block_hash("Footer")] == 500
    assert block_hash("T499") in site.records and block_hash("T1") not in site.records


def test_block_hash_normalizes() -> None:
    assert block_hash("Caf\u00e9  &amp; <br> x") == block_hash("cafe\u0301 & x")


values = st.sampled_from(["A", "T", "E", "k", "poster", "x", "## Welcome!", "", "Downloads", "A2", "T2"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(values, max_size=12), min_size=10, max_size=25), st.lists(values, max_size=15))
def test_only_page_blocks_come_out_in_order(training: list[list[str]], blocks: list[str]) -> None:
    model = TemplateModel()
    for trained in training:
        model.observe(SITE, trained, title="T", description="A")
    indices = model.own_indices(SITE, blocks, title="T", description="A")
    if indices is None:
        assert "T" not in blocks and "A" not in blocks
        return
    assert indices == sorted(set(indices))
    assert all(0 <= i < len(blocks) and blocks[i] for i in indices)
    anchors = find_anchors(blocks, "T", "A", model.params.max_gap)
    assert {i for i in (anchors.abstract, anchors.title) if i is not None} <= set(indices)


def test_prepared_blocks_are_read_as_the_blocks_themselves() -> None:
    # The pipeline prepares a page's blocks once and passes them to each reading: the model learns and
    # judges them exactly as it would the raw blocks.
    raw, prepared = TemplateModel(), TemplateModel()
    for i in range(40):
        blocks = [" Downloads ", "&lt;br&gt;", *page(i, 40)]
        fields = {"title": record(i)["title"], "description": record(i)["abstract"]}
        raw.observe(SITE, blocks, **fields)
        prepared.observe(SITE, blocks, **fields, prepared=prepare_blocks(blocks))
        assert raw.to_json() == prepared.to_json(), f"case page {i}"
        judged = prepared.own_blocks(SITE, blocks, **fields, prepared=prepare_blocks(blocks))
        assert raw.own_blocks(SITE, blocks, **fields) == judged, f"case page {i}"
    assert prepare_blocks([" a  b ", "", "&amp;"])[0] == ["a b", "", "&"]
