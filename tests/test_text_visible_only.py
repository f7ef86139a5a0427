"""The boilerplate step where it must do the work: the visible page alone, its JSON removed.

With the page's ``__NEXT_DATA__`` gone, nothing tells the step which blocks are the lecture's but the
page itself (its ``<title>`` and meta description, and the template learned from the pages before
it), and the fields it is given are those the visible page shows: title and abstract, no event name,
keywords or type. The expected ``text`` is written here from the replica's lecture data with a
normalizer of its own, not with the crawler's code, and LaTeX cleaning is off so that the comparison
is of block selection alone.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from crawler.items import LectureItem
from crawler.pages import parse_lecture_page
from crawler.pipelines.boilerplate import BoilerplatePipeline
from crawler.replica.layout import MAIN_EVENT_ID, build_site, load_records
from crawler.replica.pages import Renderer
from crawler.text.template import TemplateModel
from tests.scenarios.seeds import seed_boilerplate_lines
from tests.support.settings import project_crawler

BASE = "http://replica.test"
PAGES = 200
# Every page from this one on is judged by a model that has seen enough of the site to know the
# lecture's type from the template (measured: earlier misses are a trailing type or keyword).
SETTLED_FROM = 25
MIN_PAGES = 10
FIXTURES = Path(__file__).parent / "fixtures"
EXPECTED = json.loads((FIXTURES / "pages" / "expected.json").read_text(encoding="utf-8"))
_NEXT_DATA = re.compile(rb'<script id="__NEXT_DATA__".*?</script>', re.DOTALL)


def plain(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split())


def without_json(html: bytes) -> bytes:
    stripped = _NEXT_DATA.sub(b"", html)
    assert b"__NEXT_DATA__" not in stripped
    return stripped


@pytest.fixture(scope="module")
def first_crawl() -> dict[str, Any]:
    """Pages of event 502 in crawl order through the boilerplate step, as a first crawl meets them."""
    site = build_site(load_records())
    renderer = Renderer(site, BASE)
    step = BoilerplatePipeline.from_crawler(
        project_crawler(settings_dict={"STAGE_STATE_DIR": "", "NORMALIZE_LATEX": False})
    )
    step.open_spider()
    got, want = [], []
    for lecture in site.event_lectures(MAIN_EVENT_ID)[:PAGES]:
        url = BASE + lecture.path
        page = parse_lecture_page(without_json(renderer.lecture_page(lecture)), url)
        assert page.extraction == "visible_text" and page.fields is not None, f"{lecture=}"
        item = LectureItem(
            lecture_id=lecture.id,
            url=url,
            title=page.fields.title,
            abstract=page.fields.abstract,
            extraction=page.extraction,
        )
        item.page_blocks = page.blocks
        got.append(step.process_item(item).record())
        own = [plain(lecture.abstract), site.events[lecture.event_id].name, plain(lecture.title)]
        want.append([*own, *lecture.keywords, site.tags[lecture.tag_id].name])
    return {"got": got, "want": want, "stats": step.stats.get_stats()}


def test_a_first_crawl_without_json_gives_each_lecture_its_own_text(first_crawl: dict[str, Any]) -> None:
    got, want = first_crawl["got"], first_crawl["want"]
    texts = [g["text"] for g in got]
    settled = [i for i in range(SETTLED_FROM, PAGES) if texts[i] != "\n\n".join(want[i])]
    assert settled == []
    exact = sum(text == "\n\n".join(w) for text, w in zip(texts, want, strict=True))
    assert exact >= PAGES - SETTLED_FROM
    stats = first_crawl["stats"]
    assert stats["boilerplate/general_not_ready"] == MIN_PAGES
    assert stats["boilerplate/layer/general"] == PAGES - MIN_PAGES
    assert "boilerplate/text_from_fields" not in stats
    assert all(g["extraction"] == "visible_text" for g in got)


def test_before_the_model_is_ready_only_the_shown_fields_are_taken(first_crawl: dict[str, Any]) -> None:
    # The structural layer stands in, knowing the visible title and abstract alone.
    for g, w in zip(first_crawl["got"][:MIN_PAGES], first_crawl["want"][:MIN_PAGES], strict=True):
        assert g["text"] == f"{w[0]}\n\n{w[2]}", f"{g=}, {w=}"


def test_no_boilerplate_and_no_other_lecture_reaches_the_text(first_crawl: dict[str, Any]) -> None:
    boilerplate = seed_boilerplate_lines(FIXTURES / "seeds")
    abstracts = {i: w[0] for i, w in enumerate(first_crawl["want"])}
    for i, g in enumerate(first_crawl["got"]):
        blocks = g["text"].split("\n\n")
        assert not [line for line in boilerplate if line in blocks], i
        assert blocks[:1] == [abstracts[i]], f"{i=}, {g=}"
        assert not [j for j, a in abstracts.items() if j != i and a in blocks], i
        # Whatever is kept is the lecture's own: no block the expected text does not hold.
        assert set(blocks) <= set(first_crawl["want"][i]), i


@pytest.fixture(scope="module")
def replica_model() -> TemplateModel:
    """The template learned from the replica's pages without their JSON (as a later crawl has it)."""
    site = build_site(load_records())
    renderer = Renderer(site, BASE)
    model = TemplateModel()
    for lecture in site.event_lectures(MAIN_EVENT_ID)[:PAGES]:
        page = parse_lecture_page(without_json(renderer.lecture_page(lecture)), BASE + lecture.path)
        assert page.fields is not None, f"{lecture=}"
        model.observe("site", page.blocks, title=page.fields.title, description=page.fields.abstract)
    return model


@pytest.mark.parametrize("seed", ["seed000", "seed001", "seed002"])
def test_real_seed_pages_without_json(replica_model: TemplateModel, seed: str) -> None:
    """The three real pages, as the replica lays them out and in their own order, JSON removed."""
    own = EXPECTED[seed]["own_blocks"]
    results = {}
    for variant in ("skeleton", "seed_order"):
        html = without_json((FIXTURES / "pages" / f"{seed}_{variant}.html").read_bytes())
        page = parse_lecture_page(html, EXPECTED[seed][f"{variant}_url"])
        assert page.extraction == "visible_text" and page.fields is not None, f"{variant=}"
        results[variant] = replica_model.own_blocks(
            "site", page.blocks, title=page.fields.title, description=page.fields.abstract
        )
    assert results["skeleton"] == own
    # In the seeds' own order the type follows one or two events' welcome texts, out of the run after
    # the title: the general layer misses it there (the structural layer, with the JSON, does not).
    type_after_welcome = seed in ("seed000", "seed001")
    assert results["seed_order"] == (own[:-1] if type_after_welcome else own)
