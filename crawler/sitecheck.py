"""Look at a copy of Underline before crawling it: a site check, and recorded responses for the tests.

``check_site`` asks for robots.txt, one page of an event's lecture listing and two lecture pages, one
request at a time at the crawl's pace, and says for every field where it came from (the API, the page
JSON, the visible page, or nowhere), which attributes the site sent that the crawler does not map, and
what robots.txt allows. ``record_site`` saves the same answers, with personal data removed, in a folder
the test suite serves from a local server (``tests/recordings/``).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from protego import Protego

from crawler import settings as defaults
from crawler.coverage import has_value
from crawler.fsutil import write_json_atomic
from crawler.pages import (
    LectureFields,
    PageParseError,
    field_sources,
    lecture_resources,
    parse_lecture_list,
    parse_lecture_page,
    strip_page_personal_data,
    strip_personal_data,
    unknown_attributes,
)
from crawler.urls import API_ACCEPT, canonical_lecture_url, listing_url, without_credentials

# Fields a crawl cannot do without: when none of the sampled lectures has one, the site has changed.
REQUIRED_FIELDS = (
    "title",
    "abstract",
    "keywords",
    "presentation_type",
    "event_name",
    "session_name",
    "held_at",
    "authors",
)
SAMPLE_LECTURES = 2
SAMPLE_PAGE_SIZE = 5
MAX_BODY = 16 * 1024 * 1024
RECORDING_FILE = "recording.json"


@dataclass
class Answer:
    url: str
    status: int
    content_type: str
    body: bytes
    error: str | None = None


Fetch = Callable[[str, Mapping[str, str]], Answer]


def fetch_url(url: str, headers: Mapping[str, str], timeout: float = 30.0) -> Answer:
    """One GET, redirects followed (same as a browser would), never raising for an HTTP status."""
    request = urllib.request.Request(url, headers={"User-Agent": defaults.USER_AGENT, **headers})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return Answer(
                reply.geturl(), reply.status, reply.headers.get("Content-Type", ""), reply.read(MAX_BODY)
            )
    except urllib.error.HTTPError as exc:
        return Answer(
            url, exc.code, exc.headers.get("Content-Type", "") if exc.headers else "", exc.read(MAX_BODY)
        )
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return Answer(url, 0, "", b"", error=str(getattr(exc, "reason", exc)))


class PoliteFetcher:
    """Fetches one URL at a time, at least ``delay`` seconds apart (the larger of it and Crawl-delay)."""

    def __init__(self, delay: float, fetch: Fetch = fetch_url) -> None:
        self.delay = delay
        self.fetch = fetch
        self.last = 0.0
        self.log: list[Answer] = []

    def get(self, url: str, headers: Mapping[str, str] | None = None) -> Answer:
        wait = self.last + self.delay - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        answer = self.fetch(url, headers or {})
        self.last = time.monotonic()
        self.log.append(answer)
        return answer


@dataclass
class RobotsVerdict:
    url: str
    status: int
    crawl_delay: float | None
    listing_allowed: bool
    pages_allowed: bool


@dataclass
class LectureSample:
    lecture_id: str
    url: str
    status: int
    extraction: str | None
    sources: dict[str, str]
    values: dict[str, Any]
    problems: list[str] = field(default_factory=list)


@dataclass
class SiteReport:
    event_id: str
    robots: list[RobotsVerdict]
    listing_url: str
    listing_status: int
    listed: int
    total_pages: int | None
    lectures: list[LectureSample]
    unknown: dict[str, tuple[int, str]]
    problems: list[str]
    # How many of the listing page's lectures carry each field.
    listing_coverage: dict[str, int] = field(default_factory=dict)

    def field_sources(self) -> dict[str, list[str]]:
        """Each field's source on each sampled lecture."""
        names: dict[str, list[str]] = {}
        for sample in self.lectures:
            for name, source in sample.sources.items():
                names.setdefault(name, []).append(source)
        return names

    def missing(self) -> list[str]:
        """Required fields that no sampled lecture had (all of them when no lecture could be read)."""
        sources = self.field_sources()
        return [
            n
            for n in REQUIRED_FIELDS
            if not self.listing_coverage.get(n) and all(s == "none" for s in sources.get(n, ["none"]))
        ]

    @property
    def passed(self) -> bool:
        return bool(self.lectures) and not self.missing() and not self.problems

    def render(self) -> str:
        lines = []
        for robots in self.robots:
            delay = f"Crawl-delay {robots.crawl_delay:g} s" if robots.crawl_delay else "no Crawl-delay"
            lines.append(
                f"robots.txt {robots.url}: HTTP {robots.status}, {delay}; listing "
                f"{'allowed' if robots.listing_allowed else 'DISALLOWED'}, lecture pages "
                f"{'allowed' if robots.pages_allowed else 'DISALLOWED'}"
            )
        pages = f" of {self.total_pages}" if self.total_pages is not None else ""
        lines.append(
            f"listing {self.listing_url}: HTTP {self.listing_status}, {self.listed} lectures on page 1{pages}"
        )
        for sample in self.lectures:
            lines.append(
                f"lecture {sample.lecture_id} {sample.url}: HTTP {sample.status}, read from "
                f"{sample.extraction or 'nothing'}"
            )
        if self.lectures:
            ids = [s.lecture_id for s in self.lectures]
            lines.append("")
            head = f"{'field':<22} " + " ".join(f"{i:<14}" for i in ids)
            lines.append(f"{head}listing ({self.listed} lectures)")
            for name, sources in self.field_sources().items():
                mark = "  (required)" if name in REQUIRED_FIELDS else ""
                row = f"{name:<22} " + " ".join(f"{s:<14}" for s in sources)
                lines.append(f"{row}{self.listing_coverage.get(name, 0):>3} with a value{mark}")
        lines.append("")
        if self.unknown:
            for name, (count, example) in self.unknown.items():
                lines.append(
                    f"new attribute `{name}`: {count} of {self.listed} listed lectures, e.g. {example}"
                )
        else:
            lines.append("no attributes the crawler does not know")
        lines.extend(f"problem: {p}" for p in self.problems)
        missing = self.missing()
        if self.passed:
            lines.append("verdict: OK, every required field was found")
        else:
            why = [f"missing {', '.join(missing)}"] if missing and self.lectures else []
            why += ["no lecture could be read"] if not self.lectures else []
            why += [f"{len(self.problems)} problem(s)"] if self.problems else []
            lines.append(f"verdict: FAIL, {'; '.join(why)}")
        return "\n".join(lines)


def _robots(fetcher: PoliteFetcher, base: str, listing: str, page: str) -> RobotsVerdict:
    url = f"{base}/robots.txt"
    answer = fetcher.get(url)
    text = answer.body.decode("utf-8", "replace") if answer.status == 200 else ""
    rules = Protego.parse(text)
    agent = defaults.USER_AGENT
    delay = rules.crawl_delay(agent)
    return RobotsVerdict(
        url,
        answer.status,
        float(delay) if delay is not None else None,
        rules.can_fetch(listing, agent),
        rules.can_fetch(page, agent),
    )


def _json(answer: Answer) -> Any:
    try:
        return json.loads(answer.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def check_site(
    *,
    event_id: str,
    web_base: str,
    api_base: str,
    delay: float = defaults.DOWNLOAD_DELAY,
    fetch: Fetch = fetch_url,
    sample: int = SAMPLE_LECTURES,
) -> tuple[SiteReport, PoliteFetcher]:
    """Ask the site for robots.txt, one listing page and ``sample`` lecture pages, and report."""
    fetcher = PoliteFetcher(delay, fetch)
    listing = listing_url(api_base, event_id, 1, SAMPLE_PAGE_SIZE)
    probe_page = f"{web_base}/lecture/1"
    robots = [_robots(fetcher, web_base, listing, probe_page)]
    if urlsplit(api_base).netloc != urlsplit(web_base).netloc:
        robots.append(_robots(fetcher, api_base, listing, probe_page))
    fetcher.delay = max([delay, *(r.crawl_delay or 0.0 for r in robots)])
    problems: list[str] = []
    if not all(r.listing_allowed for r in robots):
        problems.append("robots.txt disallows the lecture listing for this crawler")
    answer = fetcher.get(listing, {"Accept": API_ACCEPT})
    document = _json(answer)
    if answer.error:
        problems.append(f"the listing could not be fetched: {answer.error}")
    elif document is None:
        problems.append(f"the listing is not JSON (HTTP {answer.status}, {answer.content_type or 'no type'})")
    page = parse_lecture_list(document, base_url=api_base)
    problems.extend(f"listing: {p}" for p in page.problems)
    resources = lecture_resources([document]) if document is not None else []
    unknown = {n: (u.count, u.example) for n, u in unknown_attributes(resources).items()}
    lectures: list[LectureSample] = []
    for listed in page.records[:sample]:
        lectures.append(_sample_lecture(fetcher, web_base, listed))
    if not page.records and not problems:
        problems.append(f"event {event_id} lists no lectures (the API answered HTTP {answer.status})")
    report = SiteReport(
        event_id=event_id,
        robots=robots,
        listing_url=listing,
        listing_status=answer.status,
        listed=len(page.records),
        total_pages=page.total_pages,
        lectures=lectures,
        unknown=unknown,
        problems=problems,
        listing_coverage={
            name: sum(1 for r in page.records if has_value(r.to_item_fields().get(name)))
            for name in (page.records[0].to_item_fields() if page.records else {})
        },
    )
    return report, fetcher


def _sample_lecture(fetcher: PoliteFetcher, web_base: str, listed: LectureFields) -> LectureSample:
    url = canonical_lecture_url(web_base, listed.lecture_id, listed.slug)
    answer = fetcher.get(url)
    try:
        parsed = parse_lecture_page(answer.body, answer.url)
    except PageParseError as exc:
        sources = {
            name: ("api" if value not in (None, "", [], {}) else "none")
            for name, value in listed.to_item_fields().items()
        }
        return LectureSample(listed.lecture_id, url, answer.status, None, sources, {}, [str(exc)])
    sources = {name: str(source) for name, source in field_sources(parsed, listed).items()}
    shown = parsed.fields.to_item_fields() if parsed.fields is not None else {}
    return LectureSample(
        listed.lecture_id, url, answer.status, parsed.extraction, sources, shown, parsed.problems
    )


def record_site(
    out_dir: Path,
    *,
    event_id: str,
    web_base: str,
    api_base: str,
    delay: float = defaults.DOWNLOAD_DELAY,
    fetch: Fetch = fetch_url,
    lectures: int = 3,
) -> dict[str, Any]:
    """Save robots.txt, a listing page and ``lectures`` lecture pages under ``out_dir``, personal data
    removed; returns the recording's index (also written to ``recording.json``).

    The listing is trimmed to the recorded lectures and says it has one page, so that a crawl of the
    recording asks for nothing that was not recorded.
    """
    report, fetcher = check_site(
        event_id=event_id, web_base=web_base, api_base=api_base, delay=delay, fetch=fetch, sample=lectures
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    bodies = out_dir / "bodies"
    bodies.mkdir(exist_ok=True)
    entries: list[dict[str, Any]] = []
    recorded_ids = {s.lecture_id for s in report.lectures}
    for number, answer in enumerate(fetcher.log):
        if answer.error:
            continue
        parts = urlsplit(answer.url)
        kind = _kind(parts.path)
        body = answer.body
        if kind == "listing":
            document = _json(answer)
            if isinstance(document, dict):
                body = _trimmed_listing(strip_personal_data(document), recorded_ids)
        elif kind == "lecture":
            body = strip_page_personal_data(body)
        name = (
            f"{number:02d}-{kind}{'.json' if kind == 'listing' else '.html' if kind == 'lecture' else '.txt'}"
        )
        (bodies / name).write_bytes(body)
        entries.append(
            {
                "kind": kind,
                "path": parts.path,
                "query": parts.query,
                "status": answer.status,
                "content_type": answer.content_type,
                "body": f"bodies/{name}",
            }
        )
    index = {
        "event_id": event_id,
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "web_base": without_credentials(web_base),
        "api_base": without_credentials(api_base),
        "lecture_ids": sorted(recorded_ids),
        "responses": entries,
        "note": "personal data removed; the listing is trimmed to the recorded lectures",
    }
    write_json_atomic(out_dir / RECORDING_FILE, index, sort_keys=True)
    return index


def _kind(path: str) -> str:
    if path.endswith("/robots.txt"):
        return "robots"
    if "/api/" in path:
        return "listing"
    return "lecture"


def _trimmed_listing(document: Mapping[str, Any], keep: set[str]) -> bytes:
    data = [d for d in document.get("data", []) if isinstance(d, dict) and str(d.get("id")) in keep]
    meta = dict(document.get("meta") or {})
    meta.update({"total_pages": 1, "total_count": len(data)})
    trimmed = {**document, "data": data, "meta": meta}
    return json.dumps(trimmed, ensure_ascii=False, indent=1).encode("utf-8")
