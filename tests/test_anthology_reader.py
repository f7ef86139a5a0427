"""Reading the Anthology's XML collection files, and the normalisation titles and names are compared in."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from crawler.anthology.normalize import (
    family_overlap,
    fold,
    name_family_keys,
    paper_family_keys,
    title_key,
)
from crawler.anthology.reader import AnthologyError, Author, build_id, read_collection, read_papers

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "anthology"
EMNLP = FIXTURES / "2025.emnlp.xml"

OLD_STYLE = """<?xml version="1.0" encoding="UTF-8"?>
<collection id="{collection}">
  <volume id="{volume}" ingest-date="2018-07-01">
    <meta><booktitle>Proceedings</booktitle><year>2018</year></meta>
    <frontmatter><url>{collection}-{volume}000</url></frontmatter>
    <paper id="7">
      <title><fixed-case>BERT</fixed-case> is <i>not</i> all you need: <tex-math>x^2</tex-math>
        and <b>more</b> at <url>github.com/x</url></title>
      <author id="a-b"><first>Zoë</first><last>Ångström</last><affiliation>KTH</affiliation></author>
      <author><first></first><last>Mononym</last></author>
      <abstract>We <i>show</i> that &amp; more.</abstract>
    </paper>
    <paper id="8"><title>Taken down</title><removed date="2019-01-01">on request</removed></paper>
    <paper id="9"><title></title></paper>
  </volume>
</collection>
"""


def test_the_emnlp_2025_collection_reads_whole() -> None:
    papers = list(read_collection(EMNLP))
    assert len(papers) == 179
    assert Counter(p.volume_id for p in papers) == {"2025.emnlp-main": 172, "2025.emnlp-tutorials": 7}
    assert len({p.anthology_id for p in papers}) == 179
    first = papers[0]
    assert first.anthology_id == "2025.emnlp-main.1"
    assert first.url == "https://aclanthology.org/2025.emnlp-main.1/"
    # <fixed-case>AI</fixed-case> and <i>errors</i> keep their text, lose their tags.
    assert first.title == "Towards Automated Error Discovery: A Study in Conversational AI"
    assert first.authors == (
        Author("Dominic", "Petrak"),
        Author("Thy Thy", "Tran"),
        Author("Iryna", "Gurevych"),
    )
    assert first.abstract.startswith("Although LLM-based conversational agents")
    assert "undesirable behaviors (errors) that" in first.abstract
    by_id = {p.anthology_id: p for p in papers}
    # <tex-math>I^2</tex-math> inside a word: the TeX stays, without spaces around it.
    assert by_id["2025.emnlp-main.26"].title.startswith("JI^2S: Joint Influence")
    assert by_id["2025.emnlp-tutorials.7"].title == "Continual Learning of Large Language Models"


def test_old_style_ids_markup_frontmatter_and_removed_papers(tmp_path: Path) -> None:
    (tmp_path / "P18.xml").write_text(OLD_STYLE.format(collection="P18", volume="1"), encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "W18.xml").write_text(OLD_STYLE.format(collection="W18", volume="63"), "utf-8")
    (tmp_path / "sub" / "people.xml").write_text("<people><person id='x'/></people>", "utf-8")
    papers, summary = read_papers(tmp_path)
    assert [p.anthology_id for p in papers] == ["P18-1007", "W18-6307"]
    assert summary.files == 2 and summary.papers == 2
    assert summary.skipped == (str(tmp_path / "sub" / "people.xml"),)
    paper = papers[0]
    assert paper.title == "BERT is not all you need: x^2 and more at github.com/x"
    assert paper.authors == (Author("Zoë", "Ångström"), Author("", "Mononym"))
    assert paper.authors[1].name == "Mononym"
    assert paper.abstract == "We show that & more."


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        (("2025.emnlp", "main", "1"), "2025.emnlp-main.1"),
        (("2020.acl", "demos", "12"), "2020.acl-demos.12"),
        (("P18", "1", "7"), "P18-1007"),
        (("P18", "2", "118"), "P18-2118"),
        (("W18", "63", "10"), "W18-6310"),
        (("C69", "1", "2"), "C69-0102"),
        (("D19", "5", "3"), "D19-0503"),
        (("D19", "1", "3"), "D19-1003"),
    ],
)
def test_build_id(parts: tuple[str, str, str], expected: str) -> None:
    assert build_id(*parts) == expected


def test_a_broken_file_is_named_and_a_missing_folder_too(tmp_path: Path) -> None:
    (tmp_path / "good.xml").write_text(OLD_STYLE.format(collection="P18", volume="1"), encoding="utf-8")
    broken = tmp_path / "zz-broken.xml"
    broken.write_text('<collection id="P19"><volume id="1"><paper id="1"><title>x</title>', "utf-8")
    with pytest.raises(AnthologyError, match=r"zz-broken\.xml: not well-formed XML"):
        read_papers(tmp_path)
    with pytest.raises(AnthologyError, match="no such file or directory"):
        read_papers(tmp_path / "absent")
    wrong = tmp_path / "wrong.xml"
    wrong.write_text(
        '<collection id="P19"><volume id="x"><paper id="1"><title>t</title></paper></volume></collection>'
    )
    with pytest.raises(AnthologyError, match=r"wrong\.xml: not Anthology ids"):
        list(read_collection(wrong))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Zoë Ångström’s “LLMs”", "zoe angstrom s llms"),
        ("Łódź — Straße – Ærø", "lodz strasse aero"),
        ("Retrieval‐Augmented Q&A", "retrieval augmented q and a"),
        ("  MIXED\tcase\n", "mixed case"),
    ],
)
def test_fold(a: str, b: str) -> None:
    assert fold(a) == b


def test_titles_equal_once_markup_case_punctuation_and_accents_are_gone() -> None:
    assert title_key("Towards Automated Error Discovery: A Study in Conversational AI") == title_key(
        "towards automated error discovery — a study in conversational ai"
    )
    assert title_key("Large Language Models") == title_key("Large-Language Model")
    assert title_key("Naïve “Bayes”") == title_key("naive bayes")
    assert title_key("Topic A: Part B") != title_key("Topic A: Part C")


def test_family_names_whatever_the_order_initials_and_particles() -> None:
    assert "smith" in name_family_keys("Smith, J.")
    assert "smith" in name_family_keys("J. Q. Smith")
    assert "smith" in name_family_keys("John Quincy Smith")
    assert {"souza", "desouza"} <= name_family_keys("Maria de Souza")
    assert "zhang" in name_family_keys("Zhang Wei")
    assert "angstrom" in name_family_keys("Zoe Angstrom")
    assert paper_family_keys("de Souza") == {"desouza", "souza"}
    families = [paper_family_keys(last) for last in ("Ångström", "de Souza", "Smith")]
    names = [name_family_keys(n) for n in ("Smith, John", "Z. Angstrom", "Maria Souza", "Extra Person")]
    assert family_overlap(families, names) == (3, 3, 4)
    # One name stands for one author: two Smiths on the paper, one on the talk.
    twice = [paper_family_keys("Smith"), paper_family_keys("Smith")]
    assert family_overlap(twice, [name_family_keys("A. Smith")]) == (1, 2, 1)
