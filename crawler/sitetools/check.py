"""Look at a copy of Underline before crawling it: a site check, and recorded responses for the tests.

``check_site`` asks for robots.txt, one page of an event's lecture listing and two lecture pages, one
request at a time at the crawl's pace, and says for every field where it came from (the API, the page
JSON, the visible page, or nowhere), which attributes the site sent that the crawler does not map, and
what robots.txt allows. ``record_site`` saves the same answers, with personal data removed, in a folder
the test suite serves from a local server (``tests/recordings/``).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from protego import Protego

from crawler import settings as defaults
from crawler.json_types import JsonObject, JsonValue
from crawler.pages import (
    LectureItem,
    LectureListPage,
    PageParseError,
    field_sources,
    lecture_resources,
    parse_lecture_list,
    parse_lecture_page,
    unknown_attributes,
)
from crawler.pages.fields import ITEM_FIELD_NAMES
from crawler.pages.jsonapi import is_document
from crawler.privacy.emails import contains_email, scrub_emails, scrub_url
from crawler.privacy.stored import strip_page_personal_data, strip_personal_data
from crawler.schema import FIELDS, has_value
from crawler.sitetools.fetcher import (
    DEFAULT_TIMEOUT,
    Answer,
    Fetch,
    PoliteFetcher,
    fetch_url,
    origin,
)
from crawler.state.fsutil import write_json_atomic
from crawler.urls import API_ACCEPT, canonical_lecture_url, listing_url, without_credentials

# Fields a crawl cannot do without: when none of the sampled lectures has one, the site has changed.
REQUIRED_FIELDS = tuple(f.name for f in FIELDS if f.site_required)
SAMPLE_LECTURES = 2
SAMPLE_PAGE_SIZE = 5
RECORDING_FILE = "recording.json"
# Lecture pages a recording holds unless told another.
RECORDED_LECTURES = 3


class RecordError(RuntimeError):
    """The site's answers cannot make a recording; the message says why. Nothing was written."""


@dataclass
class RobotsVerdict:
    url: str
    status: int
    crawl_delay: float | None
    # What this robots.txt was asked about ("listing", "lecture pages") and whether it allows it.
    allowed: dict[str, bool]
    # Why it could not be read (None: it was read, or is absent and allows everything).
    error: str | None = None
    # Why it counts as absent although the site answered (a redirect off the site).
    note: str | None = None
    rules: Protego | None = field(default=None, repr=False, compare=False)

    def can_fetch(self, url: str) -> bool:
        return self.rules is None or bool(self.rules.can_fetch(url, defaults.USER_AGENT))


@dataclass
class LectureSample:
    lecture_id: str
    url: str
    status: int
    extraction: str | None
    sources: dict[str, str]
    # The fields read from the page, under the record's names.
    values: Mapping[str, object]
    problems: list[str] = field(default_factory=list)


@dataclass
class SiteReport:
    event_id: str
    listing_url: str
    robots: list[RobotsVerdict] = field(default_factory=list)
    listing_status: int = 0
    listed: int = 0
    total_pages: int | None = None
    lectures: list[LectureSample] = field(default_factory=list)
    unknown: dict[str, tuple[int, str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    # How many of the listing page's lectures carry each field.
    listing_coverage: dict[str, int] = field(default_factory=dict)
    # Why the check asked the site nothing more (robots.txt unreadable or disallowing, no usable listing).
    stopped: str | None = None
    # Redirects off the site's origins, not followed: what was asked, and the origin it pointed to.
    off_origin: list[tuple[str, str]] = field(default_factory=list)

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
        return bool(self.lectures) and not self.missing() and not self.problems and self.stopped is None

    def render(self) -> str:
        lines = []
        for robots in self.robots:
            if robots.error:
                lines.append(f"robots.txt {robots.url}: {robots.error}")
                continue
            delay = f"Crawl-delay {robots.crawl_delay:g} s" if robots.crawl_delay else "no Crawl-delay"
            if robots.note:
                delay = robots.note
            verdicts = ", ".join(
                f"{what} {'allowed' if ok else 'DISALLOWED'}" for what, ok in robots.allowed.items()
            )
            lines.append(f"robots.txt {robots.url}: HTTP {robots.status}, {delay}; {verdicts}")
        if self.listing_status or self.listed:
            pages = f" of {self.total_pages}" if self.total_pages is not None else ""
            lines.append(
                f"listing {self.listing_url}: HTTP {self.listing_status}, {self.listed} lectures on "
                f"page 1{pages}"
            )
        for sample in self.lectures:
            lines.append(
                f"lecture {sample.lecture_id} {scrub_url(sample.url)[0]}: HTTP {sample.status}, read from "
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
        elif self.listed:
            lines.append("no attributes the crawler does not know")
        if self.off_origin:
            where = ", ".join(f"{asked} -> {to}" for asked, to in self.off_origin)
            lines.append(f"redirects off the site, not followed: {len(self.off_origin)} ({where})")
        lines.extend(f"problem: {p}" for p in self.problems)
        missing = self.missing()
        if self.passed:
            lines.append("verdict: OK, every required field was found")
        elif self.stopped is not None:
            lines.append(f"verdict: FAIL, {self.stopped}")
        else:
            why = [f"missing {', '.join(missing)}"] if missing and self.lectures else []
            why += ["no lecture could be read"] if not self.lectures else []
            why += [f"{len(self.problems)} problem(s)"] if self.problems else []
            lines.append(f"verdict: FAIL, {'; '.join(why)}")
        return "\n".join(lines)


def _robots(fetcher: PoliteFetcher, base: str, asks: Mapping[str, str]) -> RobotsVerdict:
    """robots.txt of ``base``'s origin, and whether it allows each of ``asks`` (what -> a URL).

    As RFC 9309 says: an answer in the 400s means there is none (everything allowed); one that could
    not be had (no connection, a time-out, a 500) means nothing may be fetched. A redirect off the
    site is not followed, and counts as none.
    """
    parts = urlsplit(base)
    url = f"{parts.scheme}://{parts.netloc}/robots.txt"
    answer = fetcher.get(url)
    if answer.off_origin is not None:
        note = f"redirected off the site to {answer.off_origin}, not followed: taken as none"
        return RobotsVerdict(url, answer.status, None, dict.fromkeys(asks, True), note=note)
    if answer.error or answer.status == 0 or answer.status >= 500:
        why = answer.error or f"HTTP {answer.status}"
        return RobotsVerdict(
            url, answer.status, None, dict.fromkeys(asks, False), error=f"could not be read ({why})"
        )
    if not 200 <= answer.status < 300:
        return RobotsVerdict(url, answer.status, None, dict.fromkeys(asks, True))
    rules = Protego.parse(answer.body.decode("utf-8", "replace"))
    agent = defaults.USER_AGENT
    delay = _crawl_delay(rules.crawl_delay(agent))
    allowed = {what: bool(rules.can_fetch(target, agent)) for what, target in asks.items()}
    return RobotsVerdict(url, answer.status, delay, allowed, rules=rules)


def _crawl_delay(value: float | None) -> float | None:
    """A Crawl-delay capped as the crawl caps it (``ROBOTSTXT_CRAWLDELAY_MAX``); None when there is
    none or it is no number of seconds."""
    if value is None or not math.isfinite(float(value)) or float(value) < 0:
        return None
    return min(float(value), float(defaults.ROBOTSTXT_CRAWLDELAY_MAX))


def check_site(
    *,
    event_id: str,
    web_base: str,
    api_base: str,
    delay: float = defaults.DOWNLOAD_DELAY,
    timeout: float = DEFAULT_TIMEOUT,
    fetch: Fetch | None = None,
    sample: int = SAMPLE_LECTURES,
) -> tuple[SiteReport, PoliteFetcher]:
    """Ask the site for robots.txt, one listing page and ``sample`` lecture pages, and report.

    robots.txt is obeyed: when it cannot be read, or disallows the listing, nothing more is asked;
    a lecture page it disallows is not asked for. No redirect is followed off the site's origins
    (those of ``web_base`` and ``api_base``); each one is counted in the report.
    """
    site = frozenset({origin(web_base), origin(api_base)})
    fetcher = PoliteFetcher(delay, fetch or functools.partial(fetch_url, timeout=timeout, origins=site))
    report = SiteReport(event_id, listing_url(api_base, event_id, 1, SAMPLE_PAGE_SIZE))
    robots_of = _read_robots(fetcher, report, web_base, api_base)
    if robots_of is None:
        return report, fetcher
    if not robots_of[origin(api_base)].can_fetch(report.listing_url):
        report.stopped = "robots.txt disallows the lecture listing for this crawler; nothing else was asked"
        return report, fetcher
    page = _read_listing(fetcher, report, api_base)
    if page is None:
        return report, fetcher
    for lecture in page.records[:sample]:
        # Each page robots.txt allows is read.
        url = canonical_lecture_url(web_base, lecture.lecture_id, lecture.slug)
        if robots_of[origin(web_base)].can_fetch(url):
            report.lectures.append(_sample_lecture(fetcher, report, url, lecture))
        else:
            report.problems.append(
                f"robots.txt disallows lecture {lecture.lecture_id}'s page "
                f"({scrub_url(urlsplit(url).path)[0]}); not asked for"
            )
    if not page.records and not report.problems:
        report.problems.append(
            f"event {report.event_id} lists no lectures (the API answered HTTP {report.listing_status})"
        )
    return report, fetcher


def _asked(report: SiteReport, answer: Answer, what: str) -> Answer:
    """``answer``, a redirect off the site it met counted as a problem."""
    if answer.off_origin is not None:
        report.off_origin.append((what, answer.off_origin))
        report.problems.append(f"{what} redirected off the site to {answer.off_origin}; not followed")
    return answer


def _read_robots(
    fetcher: PoliteFetcher, report: SiteReport, web_base: str, api_base: str
) -> dict[str, RobotsVerdict] | None:
    """robots.txt of each origin, which judges that origin's URLs: the listing's and the lecture
    pages'; None (the check stopped) when one cannot be read. The fetcher then keeps to the largest
    Crawl-delay."""
    robots_of: dict[str, RobotsVerdict] = {}
    for base in dict.fromkeys([web_base, api_base]):
        if origin(base) in robots_of:
            continue
        asks = {}
        if origin(base) == origin(api_base):
            asks["listing"] = report.listing_url
        if origin(base) == origin(web_base):
            asks["lecture pages"] = f"{web_base}/lecture/1"
        verdict = _robots(fetcher, base, asks)
        _asked(report, fetcher.log[-1], "robots.txt")
        robots_of[origin(base)] = verdict
        report.robots.append(verdict)
        if verdict.error:
            report.stopped = f"robots.txt {verdict.url} {verdict.error}; nothing else was asked of the site"
            return None
    fetcher.delay = max([fetcher.delay, *(r.crawl_delay or 0.0 for r in report.robots)])
    return robots_of


def _read_listing(fetcher: PoliteFetcher, report: SiteReport, api_base: str) -> LectureListPage | None:
    """The first listing page, what it says counted in the report; None (the check stopped) when it
    could not be fetched or is no JSON:API document."""
    answer = _asked(report, fetcher.get(report.listing_url, {"Accept": API_ACCEPT}), "the listing")
    report.listing_status = answer.status
    document: JsonValue
    try:
        document = json.loads(answer.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        document = None
    if answer.error:
        report.stopped = f"the listing could not be fetched: {answer.error}"
        return None
    if not is_document(document):
        kind = "JSON, but not a JSON:API document" if document is not None else "not JSON"
        content_type = scrub_emails(answer.content_type or "no type")[0]
        report.stopped = f"the listing is {kind} (HTTP {answer.status}, {content_type})"
        return None
    page = parse_lecture_list(document, base_url=api_base)
    report.problems.extend(f"listing: {p}" for p in page.problems)
    report.listed = len(page.records)
    report.total_pages = page.total_pages
    report.unknown = {
        n: (u.count, u.example) for n, u in unknown_attributes(lecture_resources([document])).items()
    }
    records = [r.parsed_record() for r in page.records]
    report.listing_coverage = (
        {name: sum(1 for r in records if has_value(getattr(r, name))) for name in ITEM_FIELD_NAMES}
        if records
        else {}
    )
    return page


def _sample_lecture(
    fetcher: PoliteFetcher, report: SiteReport, url: str, listed: LectureItem
) -> LectureSample:
    answer = _asked(report, fetcher.get(url), f"lecture {listed.lecture_id}")
    from_listing = listed.parsed_record()
    listing_sources = {
        name: ("api" if getattr(from_listing, name) not in (None, "", [], {}) else "none")
        for name in ITEM_FIELD_NAMES
    }
    if answer.error:
        return LectureSample(listed.lecture_id, url, answer.status, None, listing_sources, {}, [answer.error])
    try:
        parsed = parse_lecture_page(answer.body, answer.url)
    except PageParseError as exc:
        return LectureSample(listed.lecture_id, url, answer.status, None, listing_sources, {}, [str(exc)])
    sources = {name: str(source) for name, source in field_sources(parsed, listed).items()}
    shown = parsed.fields.parsed_record() if parsed.fields is not None else None
    values = {name: getattr(shown, name) for name in ITEM_FIELD_NAMES} if shown is not None else {}
    return LectureSample(
        listed.lecture_id, url, answer.status, parsed.extraction, sources, values, parsed.problems
    )


def record_site(
    out_dir: Path,
    *,
    event_id: str,
    web_base: str,
    api_base: str,
    delay: float = defaults.DOWNLOAD_DELAY,
    timeout: float = DEFAULT_TIMEOUT,
    fetch: Fetch | None = None,
    lectures: int = RECORDED_LECTURES,
) -> dict[str, Any]:
    """Save robots.txt, a listing page and ``lectures`` lecture pages under ``out_dir``, personal data
    removed from everything written; returns the recording's index (also written to ``recording.json``).

    The listing is trimmed to the recorded lectures and says it has one page, so that a crawl of the
    recording asks for nothing that was not recorded. A lecture is recorded when its page answered
    HTTP 200. :class:`RecordError` (and nothing written) when the check had to stop (robots.txt, the
    listing) or no lecture page could be recorded.
    """
    report, fetcher = check_site(
        event_id=event_id,
        web_base=web_base,
        api_base=api_base,
        delay=delay,
        timeout=timeout,
        fetch=fetch,
        sample=lectures,
    )
    if report.stopped is not None:
        raise RecordError(report.stopped)
    recorded_ids = {s.lecture_id for s in report.lectures if s.status == 200}
    if not recorded_ids:
        why = "; ".join(report.problems) or f"event {event_id} lists no lectures"
        raise RecordError(f"no lecture page could be recorded: {why}")
    files, entries = _recorded_answers(fetcher.log, recorded_ids)
    index = dict(
        event_id=event_id,
        recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
        web_base=without_credentials(web_base),
        api_base=without_credentials(api_base),
        lecture_ids=sorted(recorded_ids),
        responses=entries,
        off_origin_redirects=len(report.off_origin),
        note="personal data removed; the listing is trimmed to the recorded lectures",
    )
    if contains_email(json.dumps(index, ensure_ascii=False)):
        raise RecordError("the recording's index would hold an e-mail address; nothing written")
    (out_dir / "bodies").mkdir(parents=True, exist_ok=True)
    for name, body in files.items():
        (out_dir / name).write_bytes(body)
    write_json_atomic(out_dir / RECORDING_FILE, index, sort_keys=True)
    return index


def _recorded_answers(
    log: Sequence[Answer], recorded_ids: set[str]
) -> tuple[dict[str, bytes], list[dict[str, Any]]]:
    """The bodies to write (file name -> bytes, personal data removed) and the index's entries for every
    answer a recording keeps: all that arrived whole, lecture pages only when they answered HTTP 200."""
    files: dict[str, bytes] = {}
    entries: list[dict[str, Any]] = []
    for number, answer in enumerate(log):
        if answer.error:
            continue
        parts = urlsplit(answer.url)
        kind = _kind(parts.path)
        if kind == "lecture" and answer.status != 200:
            continue
        name = (
            f"{number:02d}-{kind}{'.json' if kind == 'listing' else '.html' if kind == 'lecture' else '.txt'}"
        )
        files[f"bodies/{name}"] = _without_personal_data(kind, answer.body, recorded_ids)
        # What was asked (path and query), what came back, and the body's file (relative to the
        # recording's folder).
        entries.append(
            dict(
                kind=kind,
                path=scrub_url(parts.path)[0],
                query=scrub_url(parts.query)[0],
                status=answer.status,
                content_type=scrub_emails(answer.content_type)[0],
                body=f"bodies/{name}",
            )
        )
    return files, entries


def _without_personal_data(kind: str, body: bytes, recorded_ids: set[str]) -> bytes:
    """``body`` as a recording keeps it: author profiles cut to what the parser reads and every e-mail
    address replaced, whatever kind of answer it is."""
    if kind == "listing":
        document = json.loads(body.decode("utf-8"))
        return _trimmed_listing(strip_personal_data(document), recorded_ids)
    if kind == "lecture":
        return strip_page_personal_data(body)
    text = body.decode("utf-8", "surrogateescape")
    return scrub_emails(text)[0].encode("utf-8", "surrogateescape")


def _kind(path: str) -> str:
    if path.endswith("/robots.txt"):
        return "robots"
    if "/api/" in path:
        return "listing"
    return "lecture"


def _trimmed_listing(document: JsonObject, keep: set[str]) -> bytes:
    listed = document.get("data")
    resources = listed if isinstance(listed, list) else []
    data: list[JsonValue] = [d for d in resources if isinstance(d, dict) and str(d.get("id")) in keep]
    given = document.get("meta")
    meta: JsonObject = dict(given) if isinstance(given, dict) else {}
    meta.update({"total_pages": 1, "total_count": len(data)})
    trimmed: JsonObject = {**document, "data": data, "meta": meta}
    return json.dumps(trimmed, ensure_ascii=False, indent=1).encode("utf-8")
