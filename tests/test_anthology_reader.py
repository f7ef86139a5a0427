"""Reading the Anthology's XML collection files, and the normalisation titles and names are compared in."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawler.anthology.comparable import (
    family_overlap,
    fold,
    name_family_keys,
    paper_family_keys,
    title_key,
)
from crawler.anthology.reader import (
    MAX_TEXT,
    AnthologyError,
    Author,
    build_id,
    is_anthology_id,
    read_papers,
)

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
    papers, _ = read_papers(EMNLP)
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


@pytest.mark.parametrize("given", ["emnlp2025", "2025.EMNLP", "2025.emnlp-main", "P19x", "p19", "=1+1"])
def test_a_collection_id_not_of_the_anthologys_pattern_is_refused(tmp_path: Path, given: str) -> None:
    wrong = tmp_path / "wrong.xml"
    wrong.write_text(f'<collection id="{given}"><volume id="1"/></collection>', encoding="utf-8")
    with pytest.raises(
        AnthologyError, match=rf"wrong\.xml: '{re.escape(given)}' is not an Anthology collection id"
    ):
        read_papers(wrong)


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


def collection(collection_id: str, volumes: dict[str, str]) -> str:
    """A collection file's text: volume id -> the volume's papers, as XML."""
    body = "".join(f'<volume id="{v}">{papers}</volume>' for v, papers in volumes.items())
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<collection id="{collection_id}">{body}</collection>'


def paper(paper_id: str, title: str = "A Title", abstract: str = "", authors: str = "") -> str:
    return f'<paper id="{paper_id}"><title>{title}</title>{authors}<abstract>{abstract}</abstract></paper>'


def test_a_text_is_kept_up_to_the_cap_and_dropped_past_it_markup_and_all(tmp_path: Path) -> None:
    # Exactly MAX_TEXT characters of text, the last ten inside markup: kept.
    full = "x" * (MAX_TEXT - 10) + "<i>" + "y" * 10 + "</i>"
    over = "x" * (MAX_TEXT - 10) + "<b>" + "y" * 11 + "</b>"
    papers = "".join(
        [
            paper("1", title=full, abstract=full),
            paper("2", abstract=over, authors=f"<author><first>Ann</first><last>{over}</last></author>"),
            paper("3", title=over, abstract="Short."),
        ]
    )
    (tmp_path / "2025.x.xml").write_text(collection("2025.x", {"main": papers}), encoding="utf-8")
    read, summary = read_papers(tmp_path)
    assert [p.anthology_id for p in read] == ["2025.x-main.1", "2025.x-main.2"]
    assert read[0].title == read[0].abstract == "x" * (MAX_TEXT - 10) + "y" * 10
    assert read[1].abstract == ""
    assert read[1].authors == (Author("Ann", ""),)
    assert summary.capped == 3 and summary.invalid_ids == 0 and summary.papers == 2
    where = f"{tmp_path / '2025.x.xml'}: paper"
    assert summary.notes == [
        f"{where} '2' of volume 'main': its abstract is longer than {MAX_TEXT} characters, left out",
        f"{where} '2' of volume 'main': an author's last name is longer than {MAX_TEXT} characters, left out",
        f"{where} '3' of volume 'main': its title is longer than {MAX_TEXT} characters, left out",
    ]


# Reads a directory in a process of its own and tells how far reading raised the peak resident size.
MEMORY_PROBE = """
import json, resource, sys
from pathlib import Path
from crawler.anthology.reader import read_papers

def peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

before = peak()
papers, summary = read_papers(Path(sys.argv[1]))
print(json.dumps({
    "grew": peak() - before,
    "papers": [[p.anthology_id, p.title, p.abstract, [[a.first, a.last] for a in p.authors]] for p in papers],
    "capped": summary.capped,
    "notes": list(summary.notes),
}))
"""
MIB = 1 << 20


def write_big_collection(path: Path) -> None:
    """A collection of five papers: a 40 MiB abstract in the second, a 12 MiB title in the third (past
    the parser's own 10 MB limit for one text node), a 2 MiB family name in the fourth."""
    words = "lorem ipsum dolor sit amet " * 4096

    def long(size: int) -> Iterator[str]:
        for _ in range(size // len(words)):
            yield words

    with path.open("w", encoding="utf-8") as out:
        out.write('<?xml version="1.0" encoding="UTF-8"?>\n<collection id="2025.big"><volume id="main">')
        out.write(paper("1", "First Paper", "Short.", "<author><first>A</first><last>One</last></author>"))
        out.write('<paper id="2"><title>Second Paper</title><abstract>')
        out.writelines(long(40 * MIB))
        out.write('</abstract></paper><paper id="3"><title>')
        out.writelines(long(12 * MIB))
        out.write("</title><abstract>Third.</abstract></paper>")
        out.write('<paper id="4"><title>Fourth Paper</title><author><first>Bo</first><last>')
        out.writelines(long(2 * MIB))
        out.write("</last></author><author><first>Cy</first><last>Ng</last></author></paper>")
        out.write(paper("5", "Fifth Paper", "The <i>last</i> one."))
        out.write("</volume></collection>\n")


def test_a_huge_element_is_dropped_and_counted_and_reading_stays_small(tmp_path: Path) -> None:
    path = tmp_path / "xml" / "2025.big.xml"
    path.parent.mkdir()
    write_big_collection(path)
    assert path.stat().st_size > 50 * MIB
    done = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, str(path.parent)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    # Reading 54 MiB raised the peak by a few MiB at most: no element was held whole.
    assert found["grew"] < 16 * MIB, f"peak grew by {found['grew'] / MIB:.1f} MiB"
    assert found["papers"] == [
        ["2025.big-main.1", "First Paper", "Short.", [["A", "One"]]],
        ["2025.big-main.2", "Second Paper", "", []],
        ["2025.big-main.4", "Fourth Paper", "", [["Bo", ""], ["Cy", "Ng"]]],
        ["2025.big-main.5", "Fifth Paper", "The last one.", []],
    ]
    assert found["capped"] == 3
    assert [note.split(": ", 1)[1] for note in found["notes"]] == [
        f"paper '2' of volume 'main': its abstract is longer than {MAX_TEXT} characters, left out",
        f"paper '3' of volume 'main': its title is longer than {MAX_TEXT} characters, left out",
        f"paper '4' of volume 'main': an author's last name is longer than {MAX_TEXT} characters, left out",
    ]


def test_a_cdata_section_past_the_parsers_limit_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "2025.cdata.xml"
    body = paper("1", abstract="<![CDATA[" + "x" * (11 * 1000 * 1000) + "]]>")
    path.write_text(collection("2025.cdata", {"main": body}), encoding="utf-8")
    with pytest.raises(AnthologyError, match=r"2025\.cdata\.xml: not well-formed XML: CData section too big"):
        read_papers(tmp_path)


# Papers whose parts do not make an Anthology id: title -> (collection, volume, paper).
INVALID_IDS = {
    "formula paper id": ("2025.x", "main", "=1+1"),
    "upper-case volume": ("2025.x", "Main", "1"),
    "hyphen in the volume": ("2025.x", "ma-in", "2"),
    "space in the paper id": ("2025.x", "main", "3 4"),
    "old style, volume not a number": ("P19", "x", "1"),
    "old style, five digits": ("P19", "10", "1"),
    "old style, paper past 999": ("P19", "1", "1000"),
    "old style workshop, paper past 99": ("W19", "63", "100"),
}


def test_papers_whose_id_is_not_the_anthologys_are_counted_and_left_out(tmp_path: Path) -> None:
    by_collection: dict[str, dict[str, str]] = {}
    for title, (collection_id, volume, number) in INVALID_IDS.items():
        volumes = by_collection.setdefault(collection_id, {})
        volumes[volume] = volumes.get(volume, "") + paper(number, title)
    by_collection["2025.x"]["main"] += paper("2a", "New style, letters and digits")
    by_collection["P19"]["1"] = by_collection["P19"].get("1", "") + paper("999", "Old style, paper 999")
    by_collection["W19"]["63"] += paper("99", "Workshop, paper 99")
    for collection_id, volumes in by_collection.items():
        (tmp_path / f"{collection_id}.xml").write_text(collection(collection_id, volumes), encoding="utf-8")
    papers, summary = read_papers(tmp_path)
    assert sorted(p.anthology_id for p in papers) == ["2025.x-main.2a", "P19-1999", "W19-6399"]
    assert summary.invalid_ids == len(INVALID_IDS) and summary.capped == 0
    assert len(summary.notes) == len(INVALID_IDS)
    for note in summary.notes:
        assert note.endswith(": not an Anthology id, left out"), f"case {note}"


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("2025.emnlp-main.123", True),
        ("2020.findings-emnlp.1", True),
        ("P19-1001", True),
        ("W18-6310", True),
        ("2025.emnlp-main", False),
        ("2025.emnlp-main.1 ", False),
        ("2025.Emnlp-main.1", False),
        ("P19-100", False),
        ("P19-10001", False),
        ("p19-1001", False),
        ("=HYPERLINK(1)", False),
        ("", False),
    ],
)
def test_is_anthology_id(text: str, valid: bool) -> None:
    assert is_anthology_id(text) is valid


def test_a_collection_given_twice_is_refused_naming_both_files(tmp_path: Path) -> None:
    text = collection("2025.x", {"main": paper("1")})
    (tmp_path / "2025.x.xml").write_text(text, encoding="utf-8")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "copy.xml").write_text(text.replace("A Title", "Another"), encoding="utf-8")
    first, copy = tmp_path / "2025.x.xml", tmp_path / "old" / "copy.xml"
    with pytest.raises(AnthologyError) as refused:
        read_papers(tmp_path)
    assert str(refused.value) == (
        f"{copy}: collection 2025.x is also in {first}; give each collection once (remove the copy)"
    )
    # Each file alone reads.
    assert [p.title for p in read_papers(copy)[0]] == ["Another"]


def test_a_collection_inside_a_collection_and_a_paper_given_twice_are_refused(tmp_path: Path) -> None:
    nested = tmp_path / "nested" / "2025.x.xml"
    nested.parent.mkdir()
    inner = '<collection id="2025.x"><volume id="main">' + paper("2") + "</volume></collection>"
    nested.write_text(collection("2025.x", {"main": paper("1") + inner}), encoding="utf-8")
    with pytest.raises(AnthologyError, match=r"2025\.x\.xml: a <collection> inside collection 2025\.x"):
        read_papers(nested.parent)
    twice = tmp_path / "twice" / "2025.x.xml"
    twice.parent.mkdir()
    twice.write_text(collection("2025.x", {"main": paper("1") + paper("1", "Again")}), encoding="utf-8")
    with pytest.raises(AnthologyError, match=r"2025\.x\.xml: paper 2025\.x-main\.1 is given twice"):
        read_papers(twice.parent)
