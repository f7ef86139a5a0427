"""Fuzz the page parser and the text cleaning (not part of CI; a few minutes by hand).

    python bench/fuzz_parser.py --seconds 300            # atheris, coverage guided
    python bench/fuzz_parser.py --engine hypothesis      # without atheris: Hypothesis, many examples

Each input is one of: raw bytes as a page; the real seed page with bytes put in and cut; bytes as the
page's __NEXT_DATA__; bytes as an API answer; text through the cleaning steps. Only
``PageParseError`` may leave the parser, and what comes out must hold: numeric lecture ids, no lone
surrogates, idempotent normalization and scrubbing, no e-mail address after scrubbing, own-content
blocks that are page blocks. A broken rule stops the run and atheris writes the input next to
``--artifacts``. The last line printed is a JSON summary (inputs tried, seconds, findings).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

FIXTURES = REPO / "tests" / "fixtures" / "pages"
URLS = (
    "http://127.0.0.1:8765/lecture/130412-router-tuning-a-simple-and-effective-approach-for-dynamic-depth",
    "http://127.0.0.1:8765/lecture/1",
    "http://127.0.0.1:8765/",
    "not a url",
)
ENCODINGS = (None, "utf-8", "latin-1", "utf-16", "x-unknown", "cp1252")
SCRIPT_OPEN = b'<script id="__NEXT_DATA__" type="application/json">'
SCRIPT_CLOSE = b"</script>"
COUNT = {"inputs": 0}


def seed_pages() -> list[bytes]:
    return [p.read_bytes() for p in sorted(FIXTURES.glob("*.html"))]


def check_page(raw: bytes | str, url: str, encoding: str | None) -> None:
    from crawler.pages import PageParseError, parse_lecture_page
    from crawler.text.boilerplate import own_content_blocks
    from crawler.text.normalize import normalize_line, without_surrogates

    try:
        page = parse_lecture_page(raw, url, encoding=encoding)
    except PageParseError:
        return
    fields = page.fields
    if fields is None:
        return
    assert fields.lecture_id.isdigit(), fields.lecture_id
    assert fields.lecture_id not in fields.related_lecture_ids
    strings = [fields.title, fields.abstract, fields.slug, fields.event_name, *fields.keywords]
    for value in strings:
        assert value is None or without_surrogates(value) == value
    for link in page.lecture_links:
        assert link.startswith(("http://", "https://")), link
    item = fields.parsed_record().values()
    own = own_content_blocks(page.blocks, item)
    normalized = {normalize_line(b) for b in page.blocks}
    assert all(b in normalized for b in own)
    json.dumps(item, default=str, ensure_ascii=False).encode("utf-8")


def check_api(raw: bytes) -> None:
    from crawler.pages import DocumentError, parse_lecture_document, parse_lecture_list

    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        return
    listing = parse_lecture_list(doc)
    assert all(r.lecture_id.isdigit() for r in listing.records)
    with contextlib.suppress(DocumentError):
        parse_lecture_document(doc)


def check_text(text: str) -> None:
    from crawler.privacy.emails import contains_email, scrub_emails, scrub_url
    from crawler.text.normalize import normalize_line, normalize_text

    line = normalize_line(text)
    assert normalize_line(line) == line
    paragraphs = normalize_text(text)
    assert normalize_text(paragraphs) == paragraphs
    clean, _ = scrub_emails(text)
    assert not contains_email(clean), clean[:200]
    assert scrub_emails(clean) == (clean, 0)
    url, _ = scrub_url(text)
    assert not contains_email(url), url[:200]


def one_input(data: bytes, seeds: list[bytes]) -> None:
    COUNT["inputs"] += 1
    if len(data) < 3:
        return
    mode, pick, knob = data[0] % 5, data[1], data[2]
    body = data[3:]
    url = URLS[pick % len(URLS)]
    encoding = ENCODINGS[knob % len(ENCODINGS)]
    if mode == 0:
        check_page(body, url, encoding)
    elif mode == 1:
        seed = seeds[pick % len(seeds)]
        at = int.from_bytes(body[:4].ljust(4, b"\0"), "little") % (len(seed) + 1)
        page = seed[:at] + body[4:] + seed[at:]
        if knob & 0x80:
            page = page[: (knob * len(page)) // 255]
        check_page(page, URLS[0], encoding)
    elif mode == 2:
        seed = seeds[pick % len(seeds)]
        head, _, rest = seed.partition(SCRIPT_OPEN)
        _, _, tail = rest.partition(SCRIPT_CLOSE)
        check_page(head + SCRIPT_OPEN + body + SCRIPT_CLOSE + tail, URLS[0], encoding)
    elif mode == 3:
        check_api(body)
    else:
        check_text(body.decode("utf-8", "surrogateescape" if knob & 1 else "replace"))


def run_atheris(seconds: int, artifacts: Path, corpus: Path | None) -> int:
    import atheris

    with atheris.instrument_imports():
        import crawler.pages
        import crawler.pages.jsonapi
        import crawler.privacy.emails
        import crawler.text.blocks
        import crawler.text.boilerplate
        import crawler.text.normalize  # noqa: F401
    seeds = seed_pages()
    artifacts.mkdir(parents=True, exist_ok=True)
    corpus_dir = corpus or artifacts / "corpus"
    corpus_dir.mkdir(parents=True, exist_ok=True)
    for i, seed in enumerate(seeds):
        for mode in (0, 1, 2):
            (corpus_dir / f"seed-{i}-{mode}").write_bytes(bytes([mode, i, 0, 0, 0, 0, 0]) + seed[:4096])
    started = time.monotonic()

    def report() -> None:
        summary = {
            "engine": "atheris",
            "inputs": COUNT["inputs"],
            "seconds": round(time.monotonic() - started),
        }
        print(json.dumps(summary), flush=True)

    import atexit

    atexit.register(report)
    argv = [
        sys.argv[0],
        str(corpus_dir),
        f"-max_total_time={seconds}",
        f"-artifact_prefix={artifacts}/",
        "-max_len=65536",
        "-rss_limit_mb=4096",
        "-timeout=30",
        "-print_final_stats=1",
    ]
    atheris.Setup(argv, lambda data: one_input(data, seeds))
    atheris.Fuzz()
    return 0


def run_hypothesis(seconds: int) -> int:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    seeds = seed_pages()
    findings: list[str] = []

    @settings(max_examples=2_000, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(st.binary(min_size=3, max_size=4096))
    def fuzz(data: bytes) -> None:
        one_input(data, seeds)

    started = time.monotonic()
    while time.monotonic() - started < seconds and not findings:
        try:
            fuzz()
        except Exception as exc:  # a finding: report it, do not hide it
            findings.append(f"{type(exc).__name__}: {exc}"[:500])
    summary: dict[str, Any] = {
        "engine": "hypothesis",
        "inputs": COUNT["inputs"],
        "seconds": round(time.monotonic() - started),
        "findings": findings,
    }
    print(json.dumps(summary), flush=True)
    return 1 if findings else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=240)
    parser.add_argument("--engine", choices=("atheris", "hypothesis"), default="atheris")
    parser.add_argument("--artifacts", type=Path, default=REPO / "bench" / "results" / "fuzz")
    parser.add_argument("--corpus", type=Path, default=None)
    args = parser.parse_args()
    if args.engine == "atheris":
        try:
            import atheris  # noqa: F401
        except ImportError:
            print("atheris is not installed; running Hypothesis instead", file=sys.stderr)
            return run_hypothesis(args.seconds)
        return run_atheris(args.seconds, args.artifacts, args.corpus)
    return run_hypothesis(args.seconds)


if __name__ == "__main__":
    raise SystemExit(main())
