"""Quality of boilerplate removal, text normalization and duplicate detection, against known answers.

    python bench/quality.py [--seed 0] [--lectures N] [--json results.json]

On the full replica with planted cases (``tests.scenarios.planted``), every page of event 502 is
rendered in process and read as the crawler reads it. Figures:

- ``text`` against the ground truth, per block (micro-averaged precision, recall, F1 of the multiset
  of blocks) and per word, for the structural layer (the page's JSON, or the API's fields when the
  page has none), for the general layer run on every page with its JSON removed (model learned from
  all pages first, as a later crawl has it; and streaming, as a first crawl sees it), and for
  trafilatura and jusText on the same HTML (their lines LaTeX-cleaned like ours, for fairness);
- time per page of each, from the HTML;
- whether any seed boilerplate line or planted banner reaches a ``text``;
- duplicate finding: same-talk merges and near-duplicate pairs against the planted pairs, with
  MinHash LSH and with the exact all-pairs comparison it replaces;
- the dehyphenation rule's precision on the real EMNLP 2025 records: a joined word is right when it
  appears unhyphenated elsewhere in the corpus or in an English word list, a kept hyphen when the
  hyphenated compound appears elsewhere in the corpus.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crawler.dedup import near
from crawler.dedup.records import merge_duplicates
from crawler.pages import parse_lecture_document, parse_lecture_page
from crawler.pipelines.boilerplate import text_of
from crawler.replica.layout import MAIN_EVENT_ID, build_site, ground_truth, load_records
from crawler.replica.pages import Renderer
from crawler.text.blocks import visible_blocks
from crawler.text.boilerplate import own_content_blocks, own_content_indices
from crawler.text.latex import clean_latex, split_words
from crawler.text.normalize import normalize_line
from crawler.text.template import TemplateModel
from tests.scenarios.planted import BANNERS, plant_cases
from tests.scenarios.seeds import seed_boilerplate_lines as replica_seed_lines

ROOT = Path(__file__).resolve().parents[1]
BASE = "http://replica.test"
SITE = "replica.test"
_NEXT_DATA = re.compile(rb'<script id="__NEXT_DATA__".*?</script>', re.DOTALL)
_WORDS = re.compile(r"\w+")


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    word_tp: int = 0
    word_fp: int = 0
    word_fn: int = 0
    exact_pages: int = 0
    pages: int = 0
    seconds: float = 0.0
    leaks: list[str] = field(default_factory=list)

    def add(self, got: Sequence[str], want: Sequence[str]) -> None:
        g, w = Counter(got), Counter(want)
        hit = sum((g & w).values())
        self.tp += hit
        self.fp += sum(g.values()) - hit
        self.fn += sum(w.values()) - hit
        gw, ww = (
            Counter(_WORDS.findall(" ".join(got).casefold())),
            Counter(_WORDS.findall(" ".join(want).casefold())),
        )
        hit = sum((gw & ww).values())
        self.word_tp += hit
        self.word_fp += sum(gw.values()) - hit
        self.word_fn += sum(ww.values()) - hit
        self.exact_pages += g == w
        self.pages += 1

    def figures(self) -> dict[str, Any]:
        p, r, f = prf(self.tp, self.fp, self.fn)
        wp, wr, wf = prf(self.word_tp, self.word_fp, self.word_fn)
        return {
            "block_precision": p,
            "block_recall": r,
            "block_f1": f,
            "word_precision": wp,
            "word_recall": wr,
            "word_f1": wf,
            "exact_pages": self.exact_pages,
            "pages": self.pages,
            "ms_per_page": 1000 * self.seconds / max(1, self.pages),
            "boilerplate_leaks": len(self.leaks),
        }


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def seed_boilerplate_lines() -> list[str]:
    """Welcome markdown, labels and footer of the real seed pages (as the end-to-end test reads them)."""
    return replica_seed_lines(ROOT / "tests" / "fixtures" / "seeds")


def blocks_of(text: str) -> list[str]:
    return [b for b in text.split("\n\n") if b]


def lines_as_blocks(text: str | None) -> list[str]:
    lines = (clean_latex(normalize_line(line)) for line in (text or "").splitlines())
    return [line for line in lines if line]


@dataclass
class Page:
    lecture_id: str
    html: bytes
    truth: list[str]
    blocks: list[str]  # the page's visible blocks, as the parser hands them to the pipeline
    bare_blocks: list[str]  # the same without the page's JSON (the general layer's input)
    json_fields: Any  # fields from the page's JSON, or the API's when the page has none
    visible_title: str | None
    visible_description: str | None
    json_missing: bool


def read_pages(site: Any, truth: dict[str, dict[str, Any]]) -> list[Page]:
    renderer = Renderer(site, BASE)
    pages = []
    for lecture in site.event_lectures(MAIN_EVENT_ID):
        html = renderer.lecture_page(lecture)
        url = BASE + lecture.path
        parsed = parse_lecture_page(html, url)
        blocks = [b for b in (normalize_line(x) for x in parsed.blocks) if b]
        fields = parsed.fields
        if parsed.extraction != "next_data":
            fields = parse_lecture_document(renderer.lecture_doc(lecture))
        bare = parse_lecture_page(_NEXT_DATA.sub(b"", html), url)
        assert bare.fields is not None
        pages.append(
            Page(
                lecture.id,
                html,
                blocks_of(truth[lecture.id]["text"]),
                blocks,
                [b for b in (normalize_line(x) for x in bare.blocks) if b],
                fields,
                bare.fields.title,
                bare.fields.abstract,
                parsed.extraction != "next_data",
            )
        )
    return pages


def leaks(text_blocks: Sequence[str], needles: Sequence[str]) -> list[str]:
    text = "\n\n".join(text_blocks)
    return [n for n in needles if n in text]


def run_layer(pages: Sequence[Page], judge: Callable[[Page], list[str]], needles: Sequence[str]) -> Score:
    score = Score()
    for page in pages:
        started = time.perf_counter()
        got = judge(page)
        score.seconds += time.perf_counter() - started
        score.add(got, page.truth)
        score.leaks += leaks(got, needles)
    return score


def structural(page: Page) -> list[str]:
    return blocks_of(text_of(own_content_blocks(page.blocks, page.json_fields), latex=True))


def general_with(model: TemplateModel) -> Callable[[Page], list[str]]:
    def judge(page: Page) -> list[str]:
        own = model.own_blocks(
            SITE, page.bare_blocks, title=page.visible_title, description=page.visible_description
        )
        return blocks_of(text_of(own or [], latex=True))

    return judge


def html_to_blocks_ms(pages: Sequence[Page]) -> float:
    """What the page parser spends per page on the visible blocks our layers start from."""
    started = time.perf_counter()
    for page in pages:
        [b for b in (normalize_line(x) for x in visible_blocks(page.html)) if b]
    return 1000 * (time.perf_counter() - started) / max(1, len(pages))


def general_streaming(pages: Sequence[Page], needles: Sequence[str], *, taught: bool) -> tuple[Score, int]:
    """The general layer as a first crawl sees it: each page judged by the pages before it. With
    ``taught``, pages with JSON teach the model their own blocks, as the crawl's pipeline does."""
    model = TemplateModel()
    judge = general_with(model)
    score = Score()
    not_ready = 0
    fallback = {p.lecture_id for p in pages if p.json_missing}
    for page in pages:
        started = time.perf_counter()
        if not model.ready(SITE):
            not_ready += 1
            got: list[str] = []
        else:
            got = judge(page)
        own = None
        if taught and page.lecture_id not in fallback:
            own = own_content_indices(page.bare_blocks, page.json_fields) or None
        model.observe(
            SITE, page.bare_blocks, title=page.visible_title, description=page.visible_description, own=own
        )
        score.seconds += time.perf_counter() - started
        score.add(got, page.truth)
        score.leaks += leaks(got, needles)
    return score, not_ready


def baselines(pages: Sequence[Page], needles: Sequence[str]) -> dict[str, Score]:
    out: dict[str, Score] = {}
    try:
        import trafilatura

        out["trafilatura"] = run_layer(
            pages, lambda p: lines_as_blocks(trafilatura.extract(p.html, include_comments=False)), needles
        )
    except ImportError:
        print("trafilatura is not installed: pip install '.[bench]'", file=sys.stderr)
    try:
        import justext

        stoplist = justext.get_stoplist("English")

        def jt(page: Page) -> list[str]:
            paragraphs = justext.justext(page.html, stoplist)
            return lines_as_blocks("\n".join(p.text for p in paragraphs if not p.is_boilerplate))

        out["justext"] = run_layer(pages, jt, needles)
    except ImportError:
        print("jusText is not installed: pip install '.[bench]'", file=sys.stderr)
    return out


def duplicate_figures(records: list[dict[str, Any]], truth: Any) -> dict[str, Any]:
    started = time.perf_counter()
    _, report = merge_duplicates(records)
    seconds = time.perf_counter() - started
    found_same = {frozenset((m.kept, *m.merged)) for m in report.merges}
    found_near = {frozenset((p.first, p.second)) for c in report.clusters for p in c.pairs}
    planted_same, planted_near = truth.duplicate_pairs(), truth.near_duplicate_pairs()
    hits = len(found_same & planted_same) + len(found_near & planted_near)
    found = len(found_same) + len(found_near)
    planted = len(planted_same) + len(planted_near)
    talks = [near.Talk(r["lecture_id"], r["title"], r["abstract"]) for r in records]
    started = time.perf_counter()
    exact = {frozenset((p.first, p.second)) for p in near.all_pairs(talks)} - planted_same
    all_pairs_seconds = time.perf_counter() - started
    return {
        "precision": hits / found if found else 1.0,
        "recall": hits / planted if planted else 1.0,
        "same_talk": {
            "found": len(found_same),
            "planted": len(planted_same),
            "right": len(found_same & planted_same),
        },
        "near": {
            "found": len(found_near),
            "planted": len(planted_near),
            "right": len(found_near & planted_near),
        },
        "near_edit_distances": dict(sorted(Counter(n.edit_distance for n in truth.near_duplicates).items())),
        "lowest_planted_similarity": min(p.similarity for c in report.clusters for p in c.pairs),
        "lsh_seconds": seconds,
        "lsh_candidate_pairs": report.search.candidate_pairs,
        "all_pairs": {
            "seconds": all_pairs_seconds,
            "pairs_compared": len(talks) * (len(talks) - 1) // 2,
            "near_found": len(exact),
            "near_right": len(exact & planted_near),
        },
    }


def closest_distinct_pair(records: Iterable[dict[str, Any]]) -> float:
    talks = [near.Talk(str(i), r["title"], r["abstract"]) for i, r in enumerate(records)]
    return max((p.similarity for p in near.all_pairs(talks, threshold=0.3)), default=0.0)


def dehyphenation_figures() -> dict[str, Any]:
    records = load_records()
    texts = [f"{r['title']}\n{r['abstract']}" for r in records]
    words = Counter(w for t in texts for w in re.findall(r"[a-z]+", t.casefold()))
    compounds = Counter(c for t in texts for c in re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)+", t.casefold()))
    try:
        from english_words import get_english_words_set

        wordlist: set[str] = get_english_words_set(["web2", "gcide"], lower=True)
        wordlist_name = "english-words (web2 + gcide)"
    except ImportError:
        wordlist, wordlist_name = set(), "none (pip install '.[bench]')"
    decisions = []
    for text in texts:
        for found, rewritten, kind in split_words(normalize_line(text)):
            if kind == "kept":
                decisions.append((found, rewritten, kind, True))
                continue
            joined = rewritten.casefold()
            if kind == "join":
                right = words[joined] > 0 or joined in wordlist
            else:
                right = compounds[joined] > 0 or joined.replace("-", "") in wordlist
            decisions.append((found, rewritten, kind, right))
    acted = [d for d in decisions if d[2] != "kept"]
    right = sum(d[3] for d in acted)
    latex_records = [r for r in records if "\\" in r["abstract"]]
    cleaned = [clean_latex(normalize_line(r["abstract"])) for r in latex_records]
    return {
        "word_list": wordlist_name,
        "rewrites": len(acted),
        "right": right,
        "precision": right / len(acted) if acted else 1.0,
        "suspended_hyphens_kept": sum(1 for d in decisions if d[2] == "kept"),
        "decisions": [{"found": d[0], "rewritten": d[1], "kind": d[2], "right": d[3]} for d in decisions],
        "latex_records": len(latex_records),
        "latex_commands_left": sum(len(re.findall(r"\\[A-Za-z]+", c)) for c in cleaned),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=0, help="planting seed (default 0)")
    parser.add_argument("--lectures", type=int, default=None, help="replica size (default: all records)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)

    records = load_records()
    site, planted = plant_cases(build_site(records, lectures=args.lectures), args.seed)
    truth_records = ground_truth(site, BASE)
    truth = {r["lecture_id"]: r for r in truth_records}
    pages = read_pages(site, truth)
    needles = [*seed_boilerplate_lines(), *BANNERS]
    print(
        f"{len(pages)} pages of event {MAIN_EVENT_ID}, planted seed {args.seed}: "
        f"{len(planted.duplicates)} duplicates, {len(planted.near_duplicates)} near-duplicates, "
        f"{len(planted.fallback)} pages without usable JSON, {len(planted.banners)} banners"
    )

    figures: dict[str, Any] = {"pages": len(pages)}
    scores: dict[str, Score] = {"structural": run_layer(pages, structural, needles)}
    warm = TemplateModel()
    for page in pages:
        warm.observe(SITE, page.bare_blocks, title=page.visible_title, description=page.visible_description)
    scores["general (learned model)"] = run_layer(pages, general_with(warm), needles)
    streaming, not_ready = general_streaming(pages, needles, taught=False)
    scores["general (1st crawl, alone)"] = streaming
    scores["general (1st crawl, taught)"], _ = general_streaming(pages, needles, taught=True)
    scores.update(baselines(pages, needles))
    figures["text"] = {name: s.figures() for name, s in scores.items()}
    for name in ("general (1st crawl, alone)", "general (1st crawl, taught)"):
        figures["text"][name]["pages_before_model_ready"] = not_ready
    figures["model_size"] = warm.sizes()

    print("\ntext against the ground truth (micro-averaged over pages)")
    print(
        f"{'method':28} {'block P':>8} {'block R':>8} {'block F1':>8} {'word F1':>8} {'exact':>9} "
        f"{'ms/page':>8} {'leaks':>6}"
    )
    for name, s in scores.items():
        f = s.figures()
        print(
            f"{name:28} {f['block_precision']:8.4f} {f['block_recall']:8.4f} {f['block_f1']:8.4f} "
            f"{f['word_f1']:8.4f} {f['exact_pages']:4}/{f['pages']:<4} {f['ms_per_page']:8.3f} "
            f"{f['boilerplate_leaks']:6}"
        )
    parse_ms = html_to_blocks_ms(pages)
    figures["html_to_blocks_ms_per_page"] = parse_ms
    print(
        "(ours: ms/page of the cleaning step, from the page's blocks; the parser spends "
        f"{parse_ms:.3f} ms/page "
        "on those blocks, which it reads anyway for the fields and links; trafilatura and jusText: from HTML)"
    )
    if "trafilatura" in scores:
        traf = scores["trafilatura"].figures()["ms_per_page"]
        for name in ("structural", "general (learned model)"):
            ours = scores[name].figures()["ms_per_page"]
            figures["text"][name]["speedup_vs_trafilatura"] = traf / max(ours, 1e-9)
            figures["text"][name]["speedup_vs_trafilatura_from_html"] = traf / (ours + parse_ms)
            print(
                f"{name}: cleaning {traf / max(ours, 1e-9):.1f}x faster than trafilatura per page; "
                f"{traf / (ours + parse_ms):.1f}x counting the HTML to blocks as well"
            )
    print(
        f"general (1st crawl, ...): each page judged by the pages before it; {not_ready} pages came before "
        "the model was ready and are scored as empty (the crawl gives those to the structural layer); "
        "'taught': "
        "pages with JSON teach the model their own blocks, as the crawl's pipeline does"
    )

    dup = duplicate_figures(truth_records, planted)
    dup["closest_distinct_real_pair"] = closest_distinct_pair(records)
    figures["duplicates"] = dup
    print("\nduplicates (same talk merged + near-duplicate pairs) against the planted pairs")
    print(
        f"  precision {dup['precision']:.4f}  recall {dup['recall']:.4f}  "
        f"same talk {dup['same_talk']}  near {dup['near']}"
    )
    print(
        f"  planted edit distances (words: pairs) {dup['near_edit_distances']}; lowest planted similarity "
        f"{dup['lowest_planted_similarity']:.3f}; closest distinct real pair "
        f"{dup['closest_distinct_real_pair']:.3f}; "
        f"threshold {near.MATCH_THRESHOLD}"
    )
    ap = dup["all_pairs"]
    print(
        f"  MinHash LSH {1000 * dup['lsh_seconds']:.0f} ms ({dup['lsh_candidate_pairs']} candidate pairs "
        "checked) vs "
        f"all pairs {1000 * ap['seconds']:.0f} ms ({ap['pairs_compared']} pairs): same near pairs found: "
        f"{ap['near_right']}/{ap['near_found']}"
    )

    hyph = dehyphenation_figures()
    figures["dehyphenation"] = {k: v for k, v in hyph.items()}
    print(
        f"\ndehyphenation on the real records: {hyph['right']}/{hyph['rewrites']} rewrites right "
        f"(precision {hyph['precision']:.3f}; word list {hyph['word_list']}); "
        f"{hyph['suspended_hyphens_kept']} suspended hyphens left as they are"
    )
    for d in hyph["decisions"]:
        if d["kind"] != "kept":
            print(f"  {d['found']!r:22} -> {d['rewritten']!r:18} {'right' if d['right'] else 'WRONG'}")
    print(
        f"LaTeX: {hyph['latex_records']} abstracts with commands; commands left after cleaning: "
        f"{hyph['latex_commands_left']}"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2, default=str) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
