from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.pages import LectureItem
from crawler.pipelines.boilerplate import text_of
from crawler.text.blocks import visible_blocks
from crawler.text.boilerplate import (
    TYPE_LOOKAHEAD,
    own_content_blocks,
    own_content_indices,
)
from crawler.text.normalize import normalize_line

FIXTURES = Path(__file__).parent / "fixtures" / "pages"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))

SEED_FIELDS: dict[str, dict[str, Any]] = {
    "seed000": {
        "title": "A Systematic Analysis of Base Model Choice for Reward Modeling",
        "keywords": ["reward models", "reinforcement learning from human feedback", "large language models"],
        "presentation_type": "poster",
    },
    "seed001": {
        "title": "Router-Tuning: A Simple and Effective Approach for Dynamic Depth",
        "keywords": ["layer skip", "computation efficiency", "mixture of depths"],
        "presentation_type": "poster",
    },
    "seed002": {
        "title": "REARANK: Reasoning Re-ranking Agent via Reinforcement Learning",
        "keywords": [],
        "presentation_type": "technical paper",
    },
}
LABELS = [
    "China",
    "Premium content",
    "Downloads",
    "Next from EMNLP 2025",
    "Similar lecture",
    "Stay up to date with the latest Underline news!",
    "PRESENTATIONS",
    "CONFERENCES",
    "COMPANY",
    "RESOURCES",
    "## Welcome!",
    "## Welcome to EMNLP 2024!",
    "*Message from the General Chair, Dirk Hovy*",
    "Celebrate 30 Years of EMNLP!",
    "Please register!",
    "EMNLP 2024",
]


def seed_fields(seed: str) -> dict[str, Any]:
    return {
        **SEED_FIELDS[seed],
        "abstract": EXPECTED[seed]["own_blocks"][0],
        "event_name": "EMNLP 2025",
    }


@pytest.mark.parametrize("variant", ["skeleton", "seed_order"])
@pytest.mark.parametrize("seed", ["seed000", "seed001", "seed002"])
def test_seed_pages_give_exactly_the_lecture_block(seed: str, variant: str) -> None:
    blocks = visible_blocks((FIXTURES / f"{seed}_{variant}.html").read_bytes())
    fields = seed_fields(seed)
    own = own_content_blocks(blocks, fields)
    assert own == [
        fields["abstract"],
        "EMNLP 2025",
        fields["title"],
        *fields["keywords"],
        fields["presentation_type"],
    ]
    assert own == EXPECTED[seed]["own_blocks"]
    for line in [*EXPECTED[seed]["boilerplate"], *LABELS]:
        if normalize_line(line):
            assert normalize_line(line) not in own, f"{line=}"
    assert text_of(own, latex=False) == "\n\n".join(EXPECTED[seed]["own_blocks"])


def test_seed000_exact_text() -> None:
    blocks = visible_blocks((FIXTURES / "seed000_seed_order.html").read_bytes())
    text = text_of(own_content_blocks(blocks, seed_fields("seed000")), latex=False)
    assert text.startswith(
        "Reinforcement learning from human feedback (RLHF) and, at its core, reward modeling"
    )
    assert text.endswith(
        "reduce performance prediction error.\n\nEMNLP 2025\n\n"
        "A Systematic Analysis of Base Model Choice for Reward Modeling\n\nreward models\n\n"
        "reinforcement learning from human feedback\n\nlarge language models\n\nposter"
    )


def test_fields_may_be_an_object() -> None:
    blocks = visible_blocks((FIXTURES / "seed002_skeleton.html").read_bytes())
    fields = LectureItem(lecture_id="131877", **seed_fields("seed002"))
    assert own_content_blocks(blocks, fields) == EXPECTED["seed002"]["own_blocks"]


def test_a_teaser_of_another_page_is_not_the_lecture() -> None:
    # Router-Tuning is a related teaser (abstract + title) on seed 000's page.
    blocks = visible_blocks((FIXTURES / "seed000_skeleton.html").read_bytes())
    assert own_content_blocks(blocks, seed_fields("seed001")) == []


def test_a_teaser_of_the_lecture_itself_is_not_taken() -> None:
    fields = {
        "abstract": "Own abstract.",
        "title": "Own title",
        "event_name": "EMNLP 2025",
        "keywords": ["k"],
    }
    blocks = [
        "Own abstract.",
        "Own title",
        "China",
        "Own abstract.",
        "EMNLP 2025",
        "Own title",
        "k",
        "Downloads",
    ]
    assert own_content_indices(blocks, fields) == [3, 4, 5, 6]
    # Blocks the caller normalized already are read as the blocks themselves.
    normalized = [normalize_line(b) for b in blocks]
    assert own_content_indices(blocks, fields, normalized=normalized) == [3, 4, 5, 6]


def test_nothing_but_abstract_and_title_is_taken_when_the_lecture_has_nothing_else() -> None:
    fields: dict[str, Any] = {"abstract": "A.", "title": "T", "keywords": [], "event_name": None}
    assert own_content_blocks(["x", "A.", "T", "y"], fields) == ["A.", "T"]


def test_keyword_equal_to_event_name_does_not_duplicate() -> None:
    fields = {"abstract": "A.", "title": "T", "event_name": "EMNLP 2025", "keywords": ["EMNLP 2025", "nlp"]}
    blocks = ["China", "A.", "EMNLP 2025", "T", "EMNLP 2025", "nlp", "Next from EMNLP 2025", "EMNLP 2025"]
    assert own_content_indices(blocks, fields) == [1, 2, 3, 4, 5]
    assert own_content_indices(blocks[:4] + blocks[5:], fields) == [1, 2, 3, 4]


def test_ties_go_to_the_run_starting_at_the_abstract() -> None:
    fields = {"abstract": "A.", "title": "T", "event_name": "E"}
    blocks = ["T", "<br>"] * 1000 + ["A.", "E", "T", "x"]
    assert own_content_indices(blocks, fields) == [2000, 2001, 2002]


def test_blocks_are_normalized_before_matching() -> None:
    fields = {"abstract": "An  abstract &amp; more", "title": "Caf\u00e9", "event_name": "EMNLP 2025"}
    blocks = ["An abstract & more", "EMNLP\u00a02025", "Cafe\u0301 ", "<br>", "other"]
    assert own_content_blocks(blocks, fields) == ["An abstract & more", "EMNLP 2025", "Caf\u00e9"]


def test_one_unknown_block_may_sit_inside_the_block_when_the_event_is_unknown() -> None:
    # What a page without usable __NEXT_DATA__ gives: an abstract and a title, no event name.
    html = re.sub(
        r"<script id=.__NEXT_DATA__.*?</script>", "", (FIXTURES / "seed001_skeleton.html").read_text("utf-8")
    )
    fields = {"abstract": EXPECTED["seed001"]["own_blocks"][0], "title": SEED_FIELDS["seed001"]["title"]}
    own = EXPECTED["seed001"]["own_blocks"]
    assert own_content_blocks(visible_blocks(html), fields) == [own[0], own[2]]
    fields = {"abstract": "A.", "title": "T", "keywords": ["k"]}
    assert own_content_blocks(["A.", "E", "T", "x", "k"], fields) == ["A.", "T", "k"]
    assert own_content_blocks(["A.", "E", "x", "T"], {"abstract": "A.", "title": "T"}) == ["A."]
    fields = {"abstract": "A.", "title": "T", "event_name": "E"}
    assert own_content_blocks(["A.", "x", "E", "T"], fields) == ["E", "T"]


def test_title_anchors_when_there_is_no_abstract() -> None:
    fields = {"abstract": "", "title": "T", "event_name": "EMNLP 2025", "presentation_type": "poster"}
    assert own_content_blocks(["China", "EMNLP 2025", "T", "poster", "Downloads"], fields) == [
        "EMNLP 2025",
        "T",
        "poster",
    ]


def test_type_lookahead_is_bounded() -> None:
    fields = {"abstract": "A.", "title": "T", "event_name": "E", "presentation_type": "poster"}
    welcome = [f"welcome line {i}" for i in range(TYPE_LOOKAHEAD)]
    assert own_content_blocks(["A.", "E", "T", *welcome[:-1], "poster"], fields) == ["A.", "E", "T", "poster"]
    assert own_content_blocks(["A.", "E", "T", *welcome, "poster"], fields) == ["A.", "E", "T"]
    # The lookahead stops at another occurrence of the lecture's own abstract or title.
    assert own_content_blocks(["A.", "E", "T", "x", "A.", "poster"], fields) == ["A.", "E", "T"]


def test_missing_values_are_skipped() -> None:
    assert own_content_blocks(["a", "b"], {}) == []
    assert own_content_blocks([], {"title": "T"}) == []
    fields: dict[str, Any] = {"abstract": None, "title": 5, "keywords": "kw", "event_name": "E"}
    assert own_content_blocks(["E", "kw"], fields) == []
    assert text_of(["", " a ", "<br>", "b\n\nc"], latex=False) == "a\n\nb c"


values = st.sampled_from(["A.", "T", "E", "k1", "k2", "poster", "x", "", "<br>", " T ", "E\u00a0"])


@settings(max_examples=300, deadline=None)
@given(
    blocks=st.lists(values, max_size=30),
    abstract=values,
    title=values,
    event=values,
    keywords=st.lists(values, max_size=3),
    ptype=values,
)
def test_only_page_blocks_come_out(
    blocks: list[str], abstract: str, title: str, event: str, keywords: list[str], ptype: str
) -> None:
    fields = {
        "abstract": abstract,
        "title": title,
        "event_name": event,
        "keywords": keywords,
        "presentation_type": ptype,
    }
    indices = own_content_indices(blocks, fields)
    own = own_content_blocks(blocks, fields)
    normalized = [normalize_line(b) for b in blocks]
    assert indices == sorted(set(indices))
    assert own == [normalized[i] for i in indices]
    assert all(own)
    wanted = [normalize_line(v) for v in (abstract, title, event, *keywords, ptype)]
    assert all(own.count(v) <= wanted.count(v) for v in own)
