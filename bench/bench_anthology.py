"""Linking synthetic lectures to synthetic Anthology papers, measured in one process.

``python -m bench.bench_anthology --papers 30000 --out result.json`` builds ``--papers`` papers from the
real EMNLP 2025 ones (``tests/fixtures/anthology`` and the replica's other records): each title made of
parts of two or three real titles, authors drawn from the real names, the abstract from sentences of
three real abstracts, written as an Anthology collection file. Talks are made of three quarters of the
papers with the perturbations of ``tests/scenarios/anthology.py`` (titles, names and abstracts changed
as talks change them), plus talks without a paper, so there are about as many talks as papers.

It reports, as JSON: the seconds (wall and CPU) to read the XML, to normalise every title, abstract and
name once (the baseline: work any linker must do), to link (index and match), precision and recall,
and the peak resident memory of the process that does it (the data is made in another) before it reads
the XML and at the end.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from crawler.anthology.comparable import content_words, name_family_keys, title_tokens
from crawler.anthology.match import LectureText, PaperIndex, match_lectures
from crawler.anthology.reader import Author, Paper, read_papers
from crawler.replica.layout import load_records
from tests.scenarios.anthology import change_authors, change_title, rewrite_abstract

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "anthology"


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _sources() -> tuple[list[str], list[Author], list[str]]:
    """Real title parts, author names and abstract sentences."""
    papers, _ = read_papers(FIXTURES)
    records = load_records()
    titles = [p.title for p in papers] + [str(r["title"]) for r in records]
    parts: list[str] = []
    for title in titles:
        parts.extend(p.strip() for p in title.replace(" - ", ": ").split(": ") if len(p.split()) >= 2)
    people = [a for p in papers for a in p.authors]
    for record in records:
        for name in record["authors"]:
            first, _, last = str(name).rpartition(" ")
            people.append(Author(first, last))
    abstracts = [p.abstract for p in papers] + [str(r["abstract"]) for r in records]
    sentences = [s.strip() + "." for a in abstracts for s in a.split(". ") if len(s.split()) > 5]
    return sorted(set(parts)), people, sentences


def synthetic_papers(count: int, seed: int) -> list[Paper]:
    rng = random.Random(seed)
    parts, people, sentences = _sources()
    seen: set[str] = set()
    papers: list[Paper] = []
    while len(papers) < count:
        head, tail = rng.sample(parts, 2)
        words = rng.choice(parts).split()
        title = f"{head}: {tail} {' '.join(words[: rng.randint(1, 3)])}"
        if title in seen:
            continue
        seen.add(title)
        authors = tuple(rng.sample(people, rng.randint(1, 7)))
        abstract = " ".join(rng.sample(sentences, 4))
        papers.append(Paper(f"2025.synth-main.{len(papers) + 1}", title, authors, abstract))
    return papers


def write_collection(papers: list[Paper], path: Path) -> None:
    """The papers as one Anthology collection file (some acronyms in ``<fixed-case>``)."""
    with path.open("w", encoding="utf-8") as out:
        out.write('<?xml version="1.0" encoding="UTF-8"?>\n<collection id="2025.synth">\n')
        out.write('  <volume id="main" type="proceedings">\n')
        for paper in papers:
            number = paper.anthology_id.rsplit(".", 1)[1]
            title = " ".join(
                f"<fixed-case>{escape(w)}</fixed-case>" if w.isupper() and len(w) > 1 else escape(w)
                for w in paper.title.split()
            )
            out.write(f'    <paper id="{number}">\n      <title>{title}</title>\n')
            for a in paper.authors:
                first, last = escape(a.first), escape(a.last)
                out.write(f"      <author><first>{first}</first><last>{last}</last></author>\n")
            out.write(f"      <abstract>{escape(paper.abstract)}</abstract>\n    </paper>\n")
        out.write("  </volume>\n</collection>\n")


def talks(papers: list[Paper], seed: int) -> tuple[list[LectureText], dict[str, str | None]]:
    """Talks of three quarters of the papers, perturbed, and a third as many without a paper."""
    rng = random.Random(seed + 1)
    out: list[LectureText] = []
    truth: dict[str, str | None] = {}
    with_paper = [p for p in papers if rng.random() < 0.75]
    for paper in with_paper:
        key = f"L{len(out)}"
        title, _ = change_title(rng, paper.title)
        authors, _ = change_authors(rng, paper.authors)
        abstract, _ = rewrite_abstract(rng, paper.abstract)
        out.append(LectureText(key, title, authors, abstract))
        truth[key] = paper.anthology_id
    # Talks without a paper: papers made the same way that are not in the Anthology.
    for paper in synthetic_papers(len(with_paper) // 3, seed + 7):
        key = f"L{len(out)}"
        names = tuple(a.name for a in paper.authors)
        out.append(LectureText(key, paper.title, names, paper.abstract))
        truth[key] = None
    rng.shuffle(out)
    return out, truth


LECTURES_FILE = "lectures.jsonl"


def prepare(count: int, seed: int, folder: Path) -> None:
    """The synthetic collection file and talks (with their true paper ids) in ``folder``."""
    papers = synthetic_papers(count, seed)
    lectures, truth = talks(papers, seed)
    (folder / "xml").mkdir(parents=True)
    write_collection(papers, folder / "xml" / "2025.synth.xml")
    with (folder / LECTURES_FILE).open("w", encoding="utf-8") as out:
        for lecture in lectures:
            row = {"key": lecture.key, "title": lecture.title, "authors": list(lecture.authors)}
            row |= {"abstract": lecture.abstract, "paper": truth[lecture.key]}
            out.write(json.dumps(row) + "\n")


def measure(folder: Path) -> dict[str, Any]:
    """Read, normalise and link what :func:`prepare` wrote; this process holds nothing else."""
    lectures: list[LectureText] = []
    truth: dict[str, str | None] = {}
    with (folder / LECTURES_FILE).open(encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            lectures.append(LectureText(row["key"], row["title"], tuple(row["authors"]), row["abstract"]))
            truth[row["key"]] = row["paper"]
    peak_before = _peak_mib()
    started, cpu = time.perf_counter(), time.process_time()
    read, _ = read_papers(folder / "xml")
    read_s, read_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    started, cpu = time.perf_counter(), time.process_time()
    for paper in read:
        title_tokens(paper.title)
        content_words(paper.abstract)
        for author in paper.authors:
            name_family_keys(author.last)
    for lecture in lectures:
        title_tokens(lecture.title)
        content_words(lecture.abstract)
        for name in lecture.authors:
            name_family_keys(name)
    normalise_s, normalise_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    started, cpu = time.perf_counter(), time.process_time()
    matches = match_lectures(PaperIndex(read), lectures)
    link_s, link_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    given = sum(1 for m in matches if m.anthology_id)
    right = sum(1 for m in matches if m.anthology_id and m.anthology_id == truth[m.key])
    positives = sum(1 for v in truth.values() if v)
    return {
        "papers": len(read),
        "lectures": len(lectures),
        "read_s": round(read_s, 3),
        "read_cpu_s": round(read_cpu_s, 3),
        "normalise_s": round(normalise_s, 3),
        "normalise_cpu_s": round(normalise_cpu_s, 3),
        "link_s": round(link_s, 3),
        "link_cpu_s": round(link_cpu_s, 3),
        "link_cpu_ms_per_lecture": round(link_cpu_s * 1000 / len(lectures), 4),
        "precision": round(right / given, 4) if given else None,
        "recall": round(right / positives, 4) if positives else None,
        "ambiguous": sum(1 for m in matches if m.status == "ambiguous"),
        "conflicts": sum(1 for m in matches if m.status == "conflict"),
        "peak_rss_before_read_mib": round(peak_before, 1),  # the talks read, nothing else
        "peak_rss_mib": round(_peak_mib(), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--papers", type=int, default=30_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure is not None:
        result = measure(args.measure)
    else:
        # The data is made here and measured in a process of its own, so its peak memory is linking's.
        with tempfile.TemporaryDirectory(prefix="eventcrawl-anthology-") as folder:
            prepare(args.papers, args.seed, Path(folder))
            cmd = [sys.executable, "-m", "bench.bench_anthology", "--measure", folder, "--out", str(args.out)]
            subprocess.run(cmd, check=True)
        return 0
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
