"""The memory and the time a publish with transcripts takes, at two catalogue sizes: the ``transcripts``
figures; and the same with slide decks and posters in their place: the ``slides_publish`` figures.

    python bench/bench_transcripts.py                      # 3,740 and 30,740 lectures
    python bench/bench_transcripts.py --sizes 740,3740     # a quicker look
    python bench/bench_transcripts.py --slides             # slides and posters instead of transcripts
    bench/run --only transcripts                           # as a section of the suite (section())
    bench/run --only slides_publish                        # the slides variant (slides_section())

For each size a stage is written with ``StageWriter`` (lectures of 740 per event, 1.2 subtitle tracks per
lecture of 5 to 30 KB of text each, in timed segments), then published as ``eventcrawl publish`` does
(:func:`crawler.app.runner.publish_staged`: the stage indexed, the next release built, every file
written and checked, ``datasets`` round trip included) in a process of its own. The figure is that
process's peak resident memory above what it held once its imports were done; the ratio of the larger
size's growth to the smaller's must stay under 1.5 (transcripts are written a few lectures at a time,
never the release's at once). The publish's wall time per lecture at the larger size must stay under 1.2
times that at the smaller (nothing in a publish costs more per lecture as the catalogue grows; the stage
is flushed to disk before the child starts, as a crawl's stage is long before its publish). The same
stage is then published again over that release, as a second night with nothing new does (the tables'
gate judged against it, every transcripts file kept), and timed the same way; its memory figure is the
peak of either publish (the second one compares every event's rows with the release's before it keeps
them), held to the same ratio.

With ``--slides`` the stage holds no subtitle tracks but documents: a slide deck for half the lectures (10
to 40 pages of 300 to 1,500 characters each) and a poster for a tenth (one page of 1,500 to 6,000), each
lecture's record naming its documents (``slides_url``, ``poster_url``: a release takes a staged row only
for a document its lecture names), each row staged as a crawl stages it, with the privacy rules it was
redacted under. The same figures and targets hold: an event's rows are made at once
(:class:`crawler.publish.slides.SlidesTable`), so the memory is bounded by an event's size (740 lectures
here), not the catalogue's.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_publish import synthetic_records
from bench.memory_growth import rss_mib
from crawler import schema
from crawler.privacy.spoken import TRANSCRIPT_PRIVACY_RULE
from crawler.schema import Int32, Segment, Slides, Transcript
from crawler.state.stage import StageWriter
from crawler.state.stage_rows import PRIVACY_RULE_KEY, SLIDES_ROWS, TRANSCRIPT_ROWS

LECTURES_PER_EVENT = 740
TRACKS_PER_LECTURE = 1.2
TRACK_BYTES = (5_000, 30_000)
SEGMENT_CHARS = 120
MAX_RATIO = 1.5
# The publish time per lecture at the larger size against the smaller: at most this.
MAX_TIME_RATIO = 1.2
SUBTITLES = "https://assets.underline.io/lecture/{}/subtitles/{}.vtt"
# The slides variant: a deck for half the lectures, a poster for a tenth; pages and characters a page.
SLIDES_SHARE, POSTER_SHARE = 0.5, 0.1
DECK_PAGES = (10, 40)
PAGE_CHARS = (300, 1_500)
POSTER_CHARS = (1_500, 6_000)
# A PDF's bytes per character of its text, about: what the rows say was downloaded.
PDF_BYTES_PER_CHAR = 4
DOCUMENT_URLS = {
    "slides": "https://assets.underline.io/lecture/{}/slideshow/{}.pdf",
    "poster": "https://assets.underline.io/lecture/{}/poster_document/{}.pdf",
}
WORDS = ("we", "show", "that", "the", "model", "language", "results", "attention", "data", "task")
FETCHED_AT = datetime(2025, 11, 20, 3, 0, tzinfo=UTC)


def _track(lecture_id: str, event_id: str, locale: str, rng: random.Random) -> Transcript:
    size = rng.randint(*TRACK_BYTES)
    texts: list[str] = []
    length = 0
    while length < size:
        text = " ".join(rng.choices(WORDS, k=SEGMENT_CHARS // 6))
        texts.append(text)
        length += len(text) + 1
    segments: list[Segment] = [
        {"start_ms": Int32(3000 * i), "end_ms": Int32(3000 * (i + 1)), "text": t} for i, t in enumerate(texts)
    ]
    return Transcript(
        lecture_id=lecture_id,
        event_id=event_id,
        locale=locale,
        language={"en": "English", "de": "Deutsch"}[locale],
        auto_generated=locale == "en",
        subtitle_url=SUBTITLES.format(lecture_id, locale),
        text=" ".join(texts),
        segments=segments,
    )


def _page(chars: int, rng: random.Random) -> str:
    """A page of about ``chars`` characters of words."""
    return " ".join(rng.choices(WORDS, k=max(1, chars // 6)))


def _document(lecture_id: str, event_id: str, document: str, rng: random.Random) -> Slides:
    """A slide deck (10 to 40 pages) or a poster (one page) as a crawl stages what it read of it."""
    if document == "poster":
        pages = [_page(rng.randint(*POSTER_CHARS), rng)]
    else:
        pages = [_page(rng.randint(*PAGE_CHARS), rng) for _ in range(rng.randint(*DECK_PAGES))]
    text = "\n\n".join(pages)
    return Slides(
        lecture_id=lecture_id,
        event_id=event_id,
        document=document,
        url=DOCUMENT_URLS[document].format(lecture_id, document),
        pages=pages,
        page_count=Int32(len(pages)),
        text=text,
        bytes=PDF_BYTES_PER_CHAR * len(text),
        sha256=f"{rng.getrandbits(256):064x}",
        fetched_at=FETCHED_AT,
    )


def write_stage(state: Path, lectures: int, *, slides: bool = False) -> int:
    """A finished stage of ``lectures`` lectures and their subtitle tracks, or with ``slides`` their slide
    decks and posters instead; returns the rows written (tracks or documents)."""
    rng = random.Random(lectures)
    writer = StageWriter(state, fsync_every=10_000)
    writer.open()
    rows = 0
    for index, record in enumerate(synthetic_records(lectures)):
        event = str(1000 + index // LECTURES_PER_EVENT)
        record["event_id"], record["event_name"] = event, f"Event {event}"
        if slides:
            documents = [
                d for d, share in (("slides", SLIDES_SHARE), ("poster", POSTER_SHARE)) if rng.random() < share
            ]
            for document in documents:
                record[f"{document}_url"] = DOCUMENT_URLS[document].format(record["lecture_id"], document)
            locales = []
        else:
            documents = []
            locales = ["en", "de"] if index % 5 == 0 else ["en"]  # 1.2 a lecture
            record["subtitles"] = [
                {
                    "locale": loc,
                    "name": loc,
                    "auto_generated": loc == "en",
                    "url": SUBTITLES.format(record["lecture_id"], loc),
                }
                for loc in locales
            ]
        record["content_sha256"] = schema.content_sha256(record)
        writer.write_lecture(schema.Lecture.from_json(record))
        for locale in locales:
            writer.write_row(
                TRANSCRIPT_ROWS, _track(record["lecture_id"], event, locale, rng), {"etag": f'"{index}"'}
            )
        for document in documents:
            validators = {"etag": f'"{index}-{document}"', PRIVACY_RULE_KEY: TRANSCRIPT_PRIVACY_RULE}
            writer.write_row(SLIDES_ROWS, _document(record["lecture_id"], event, document, rng), validators)
        rows += len(locales) + len(documents)
    writer.close(complete=True, summary={"event_ids": []})
    return rows


def publish_child(state: Path, out: Path) -> None:
    """Publish the stage and print the memory it took as JSON (run in a process of its own)."""
    import datasets

    from crawler.app.runner import PublishRequest, publish_staged

    datasets.disable_progress_bars()
    gc.collect()
    base = rss_mib()
    began = time.perf_counter()
    published = publish_staged(PublishRequest(state, out, "bench", force=True))
    seconds = time.perf_counter() - began
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    counts = published.result.row_counts
    # The same stage published again over the release just made: the tables' gate judges it against
    # that release, and every event's transcripts (or slides) file is kept (its rows made again to be
    # compared).
    began = time.perf_counter()
    again = publish_staged(PublishRequest(state, out, "bench", force=True))
    republish_seconds = time.perf_counter() - began
    # The peak of either publish: the second one compares every event's rows with the release's.
    republish_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "base_mib": base,
                "peak_mib": peak,
                "growth_mib": peak - base,
                "seconds": seconds,
                "ms_per_lecture": 1000 * seconds / max(counts["lectures"], 1),
                "republish_seconds": republish_seconds,
                "republish_ms_per_lecture": 1000 * republish_seconds / max(counts["lectures"], 1),
                "republish_peak_mib": republish_peak,
                "republish_growth_mib": republish_peak - base,
                "republish_gate_checks": len(again.verdict.checks) if again.verdict is not None else 0,
                "lectures": counts["lectures"],
                "transcripts": counts.get("transcripts", 0),
                "slides": counts.get("slides", 0),
            }
        )
    )


@dataclass(frozen=True)
class Variant:
    """What a stage holds beside its lectures: subtitle tracks, or slide decks and posters."""

    table: str  # the release's table of those rows
    rows: str  # what they are called in the details and the printout
    what: str  # how the figures name them
    slides: bool = False


TRANSCRIPTS = Variant(
    "transcripts", "tracks", f"transcripts ({TRACKS_PER_LECTURE} tracks of 5-30 KB a lecture)"
)
SLIDES = Variant(
    "slides",
    "documents",
    f"slides (a deck of {DECK_PAGES[0]}-{DECK_PAGES[1]} pages of {PAGE_CHARS[0]:,}-{PAGE_CHARS[1]:,} "
    f"characters for {SLIDES_SHARE:.0%} of the lectures, a poster for {POSTER_SHARE:.0%})",
    slides=True,
)


def measure(lectures: int, root: Path, variant: Variant = TRANSCRIPTS) -> dict[str, float]:
    state, out = root / f"state-{variant.table}-{lectures}", root / f"out-{variant.table}-{lectures}"
    began = time.perf_counter()
    rows = write_stage(state, lectures, slides=variant.slides)
    staged_s = time.perf_counter() - began
    stage_bytes = sum(p.stat().st_size for p in (state / "stage").glob("*.jsonl"))
    os.sync()
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(state), str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"publishing {lectures} lectures failed:\n{done.stderr[-3000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return {**figures, variant.rows: rows, "stage_mib": stage_bytes / 2**20, "staging_s": staged_s}


def measure_sizes(
    sizes: tuple[int, int], root: Path, variant: Variant = TRANSCRIPTS
) -> tuple[list[dict[str, float]], float]:
    """Both sizes measured, smaller first, and the ratio of their memory growths."""
    results = [measure(n, root, variant) for n in sizes]
    return results, results[1]["growth_mib"] / max(results[0]["growth_mib"], 1.0)


def time_ratio(results: list[dict[str, float]], key: str = "ms_per_lecture") -> float:
    """The publish time per lecture at the larger size over that at the smaller."""
    return results[1][key] / max(results[0][key], 1e-9)


def section(work: Path, quick: bool, variant: Variant = TRANSCRIPTS) -> Any:
    """The ``transcripts`` section of ``bench/run`` (``slides_publish`` with :data:`SLIDES`): the growth
    at the larger size against the smaller."""
    from bench.suite import Figure, Section

    small, large = (740, 3740) if quick else (3740, 30740)
    results, ratio = measure_sizes((small, large), work, variant)
    per_lecture, again = time_ratio(results), time_ratio(results, "republish_ms_per_lecture")
    again_memory = results[1]["republish_growth_mib"] / max(results[0]["republish_growth_mib"], 1.0)
    return Section(
        figures=[
            Figure(
                f"publish with {variant.what}, wall time per lecture at {large:,} lectures (vs {small:,})",
                round(results[1]["ms_per_lecture"], 2),
                "ms/lecture",
                round(results[0]["ms_per_lecture"], 2),
                f"at {small:,}",
                round(per_lecture, 3),
                f"<= {MAX_TIME_RATIO}",
                per_lecture <= MAX_TIME_RATIO,
            ),
            Figure(
                f"the same stage published again over that release (tables' gate, every {variant.table} file "
                f"kept), wall time per lecture at {large:,} lectures (vs {small:,})",
                round(results[1]["republish_ms_per_lecture"], 2),
                "ms/lecture",
                round(results[0]["republish_ms_per_lecture"], 2),
                f"at {small:,}",
                round(again, 3),
            ),
            Figure(
                f"publish with {variant.what}, peak RSS growth at {large:,} lectures (vs {small:,})",
                round(results[1]["growth_mib"]),
                "MiB",
                round(results[0]["growth_mib"]),
                f"at {small:,}",
                round(ratio, 3),
                f"<= {MAX_RATIO}",
                ratio <= MAX_RATIO,
            ),
            Figure(
                f"publish with {variant.what}, then the same stage again over that release: peak RSS growth "
                f"of either at {large:,} lectures (vs {small:,})",
                round(results[1]["republish_growth_mib"]),
                "MiB",
                round(results[0]["republish_growth_mib"]),
                f"at {small:,}",
                round(again_memory, 3),
                f"<= {MAX_RATIO}",
                again_memory <= MAX_RATIO,
            ),
        ],
        details={str(n): r for n, r in zip((small, large), results, strict=True)},
    )


def slides_section(work: Path, quick: bool) -> Any:
    """The ``slides_publish`` section of ``bench/run``: :func:`section` with slides and posters."""
    return section(work, quick, SLIDES)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="3740,30740", help="two lecture counts, smaller first")
    parser.add_argument(
        "--slides", action="store_true", help="slide decks and posters instead of transcripts"
    )
    parser.add_argument("--child", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        publish_child(*args.child)
        return 0
    variant = SLIDES if args.slides else TRANSCRIPTS
    small, large = (int(n) for n in args.sizes.split(","))
    with tempfile.TemporaryDirectory(prefix=f"bench-{variant.table}-") as tmp:
        results, ratio = measure_sizes((small, large), Path(tmp), variant)
    for n, r in zip((small, large), results, strict=True):
        print(
            f"{n:>7} lectures, {int(r[variant.rows]):>6} {variant.rows} ({r['stage_mib']:.0f} MiB staged): "
            f"publish {r['seconds']:.1f}s ({r['ms_per_lecture']:.2f} ms a lecture), "
            f"again {r['republish_seconds']:.1f}s, "
            f"RSS {r['base_mib']:.0f} -> {r['peak_mib']:.0f} MiB, growth {r['growth_mib']:.0f} MiB"
        )
    per_lecture = time_ratio(results)
    print(f"{variant.table} publish memory growth ratio {large}/{small}: {ratio:.2f} (at most {MAX_RATIO})")
    print(
        f"{variant.table} publish time per lecture ratio {large}/{small}: {per_lecture:.2f}"
        f" (at most {MAX_TIME_RATIO})"
    )
    return 0 if ratio <= MAX_RATIO and per_lecture <= MAX_TIME_RATIO else 1


if __name__ == "__main__":
    raise SystemExit(main())
