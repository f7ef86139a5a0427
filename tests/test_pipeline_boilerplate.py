from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from crawler.items import LectureItem
from crawler.pipelines.boilerplate import MODEL_NAME, BoilerplatePipeline, text_rebuilt_from_fields
from tests.support.settings import project_crawler

WELCOME = ["## Welcome!", "Welcome text of the event.", "Celebrate!"]
FOOTER = ["Downloads", "Stay up to date!", "COMPANY"]


def fields(i: int, extraction: str = "next_data", **extra: Any) -> dict[str, Any]:
    return {
        "lecture_id": str(i),
        "url": f"http://site.test/lecture/{i}-t",
        "title": f"Title {i}",
        "abstract": f"Abstract {i} with \\textbf{{bold}} words and a rerank- ing step.",
        "event_name": "EVENT",
        "keywords": ["kw"] if i % 2 else [],
        "presentation_type": "poster",
        "extraction": extraction,
        **extra,
    }


def item(i: int, extraction: str = "next_data", **extra: Any) -> Any:
    """A lecture as the spider yields it; ``extra`` changes its fields, never what its page shows."""
    shown = fields(i)
    blocks = ["Country", shown["abstract"], "EVENT", shown["title"], *shown["keywords"], "poster"]
    blocks += [*WELCOME, f"Abstract {i + 1} teaser.", f"Title {i + 1}", *FOOTER]
    lecture = LectureItem(**fields(i, extraction, **extra))
    lecture.page_blocks = blocks
    return lecture


def pipeline(tmp_path: Path | None = None, **settings: Any) -> BoilerplatePipeline:
    values = {"STAGE_STATE_DIR": str(tmp_path) if tmp_path is not None else ""}
    crawler = project_crawler(settings_dict={**values, **settings})
    step = BoilerplatePipeline.from_crawler(crawler)
    step.open_spider()
    return step


EXPECTED_1 = "Abstract 1 with bold words and a reranking step.\n\nEVENT\n\nTitle 1\n\nkw\n\nposter"


def test_pages_with_json_use_the_structural_layer() -> None:
    step = pipeline()
    out = step.process_item(item(1))
    assert out.text == EXPECTED_1
    assert out.page_blocks == []
    assert out.abstract == fields(1)["abstract"]
    assert step.stats.get_value("boilerplate/layer/structural") == 1
    assert step.stats.get_value("boilerplate/latex_cleaned") == 1
    assert step.stats.get_value("boilerplate/blocks_kept") == 5


def test_pages_without_json_use_the_general_layer_once_it_is_ready() -> None:
    step = pipeline()
    first = step.process_item(item(1, "visible_text"))
    assert first.text == EXPECTED_1
    assert step.stats.get_value("boilerplate/general_not_ready") == 1
    for i in range(2, 14):
        step.process_item(item(i))
    # Fields the general layer does not use: it reads the page's blocks, anchored on title and abstract.
    late = step.process_item(item(15, "visible_text", event_name=None, keywords=[], presentation_type=None))
    assert late.text == (
        "Abstract 15 with bold words and a reranking step.\n\nEVENT\n\nTitle 15\n\nkw\n\nposter"
    )
    assert step.stats.get_value("boilerplate/layer/general") == 1


def test_latex_cleaning_can_be_turned_off() -> None:
    step = pipeline(NORMALIZE_LATEX=False)
    assert step.process_item(item(1)).text.startswith(
        "Abstract 1 with \\textbf{bold} words and a rerank- ing"
    )


def test_the_model_is_saved_at_close_and_loaded_at_open(tmp_path: Path) -> None:
    step = pipeline(tmp_path)
    for i in range(1, 13):
        step.process_item(item(i))
    step.close_spider()
    saved = json.loads((tmp_path / MODEL_NAME).read_text(encoding="utf-8"))
    assert saved["sites"]["site.test"]["pages"] == 12
    again = pipeline(tmp_path)
    assert again.stats.get_value("boilerplate/model_pages_loaded") == 12
    out = again.process_item(item(21, "visible_text", keywords=[], presentation_type=None))
    assert (
        out.text == "Abstract 21 with bold words and a reranking step.\n\nEVENT\n\nTitle 21\n\nkw\n\nposter"
    )
    assert again.stats.get_value("boilerplate/layer/general") == 1


def test_a_page_without_its_fields_falls_back_to_them_and_says_so() -> None:
    step = pipeline()
    lecture = item(3)
    lecture.page_blocks = ["Country", *FOOTER]
    out = step.process_item(lecture)
    assert out.text == EXPECTED_1.replace("1", "3")
    assert out.extraction == "next_data+text_from_fields"
    assert step.stats.get_value("boilerplate/text_from_fields") == 1
    # A page read without JSON that shows nothing of its lecture is marked the same way, once.
    bare = item(5, "visible_text")
    bare.page_blocks = []
    assert step.process_item(bare).extraction == "visible_text+text_from_fields"
    assert step.stats.get_value("boilerplate/text_from_fields") == 2
    assert text_rebuilt_from_fields("visible_text+text_from_fields") == "visible_text+text_from_fields"
    assert step.process_item({"not": "a lecture"}) == {"not": "a lecture"}


def test_text_read_off_the_page_is_not_marked() -> None:
    step = pipeline()
    for i in range(1, 14):
        out = step.process_item(item(i, "visible_text" if i > 11 else "next_data"))
        assert out.extraction == ("visible_text" if i > 11 else "next_data"), f"{i=}"
    assert step.stats.get_value("boilerplate/text_from_fields") is None
    assert step.stats.get_value("boilerplate/layer/general") == 2


def test_the_page_not_the_fields_decides_what_text_holds() -> None:
    # The page shows a shortened record (no keywords, no type): ``text`` is what the page shows, not the
    # fields rebuilt, so a stripper that stopped reading the page would be caught here.
    step = pipeline()
    lecture = item(1)
    shown = fields(1)
    lecture.page_blocks = ["Country", shown["abstract"], "EVENT", shown["title"], *WELCOME, *FOOTER]
    out = step.process_item(lecture)
    assert out.text == "Abstract 1 with bold words and a reranking step.\n\nEVENT\n\nTitle 1"
    assert out.extraction == "next_data"
