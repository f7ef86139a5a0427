"""The next release as every command builds it: the staged crawl read back (:func:`read_staged`), laid
on top of the previous release with the removals in force, retired events and kept-back events, and linked
to the ACL Anthology (:func:`next_release`). Nothing here writes a release.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, cast

from crawler import __version__
from crawler.app.crawling import read_crawl_report
from crawler.json_types import JsonObject, JsonValue
from crawler.publish.removals import RemovalRequests
from crawler.schema import Lecture, Slides, Transcript, lecture_order
from crawler.state.layout import StateDir
from crawler.state.withdrawals import Withdrawals
from crawler.urls import without_credentials

if TYPE_CHECKING:
    from crawler.anthology.links import LinkSummary
    from crawler.dedup.records import DedupReport
    from crawler.publish.events import EventRows
    from crawler.publish.previous import CarriedRelease, PreviousRelease
    from crawler.publish.records import SessionDetail
    from crawler.publish.removals import Redactions
    from crawler.publish.summaries import SpilledEvents
    from crawler.state.stage_index import StageIndex
    from crawler.state.stage_rows import RowLines


class NothingToPublish(Exception):
    """The stage holds nothing that may be published (unfinished or empty); the message says why."""


@dataclass(frozen=True)
class StagedCrawl:
    """The staged crawl, one record per lecture (duplicate talks merged) read one event at a time, with
    the provenance of the crawl and what the listings said of the events' sessions."""

    lectures: EventRows
    provenance: JsonObject
    sessions: list[SessionDetail] = field(default_factory=list)
    # The events the crawl covered (those whose listing named nothing included), and whether it finished.
    event_ids: tuple[str, ...] = ()
    complete: bool = True
    # What the site said of the lectures that left the listings, and the events kept back.
    withdrawals: Withdrawals = field(default_factory=Withdrawals)
    # The staged subtitle tracks, read back when their event is published.
    transcripts: RowLines[Transcript] | None = None
    # The staged documents (slide decks, posters), the same way.
    slides: RowLines[Slides] | None = None

    @property
    def kept_back(self) -> dict[str, str]:
        """The events whose listing could not be read whole, with why: published as they were."""
        return dict(self.withdrawals.kept_back)

    @property
    def stage_info(self) -> dict[str, int]:
        return {k: int(cast(int, self.provenance[k])) for k in ("staged_lines", "bad_lines")}


@dataclass(frozen=True)
class NextRelease:
    """The next release as every command builds it from the staged crawl and the previous release.

    ``events`` holds every row it will hold (withdrawn ones included), the removals in force applied,
    kept on disk one event per file; ``previous`` reads the previous release; ``carried_events`` are
    events of the previous release the crawl did not cover, kept as they were (event id -> rows);
    ``retired_events`` events taken out (event id -> rows); ``sessions`` the staged session details,
    completed by the previous release's."""

    events: SpilledEvents
    previous: PreviousRelease
    removals: RemovalRequests
    # The author redactions in force, with the names their ORCID iDs carried before they were applied.
    redactions: Redactions
    sessions: list[SessionDetail]
    carried_events: dict[str, int] = field(default_factory=dict)
    retired_events: dict[str, int] = field(default_factory=dict)
    # What linking to the ACL Anthology did; None when the release was built without its files.
    links: LinkSummary | None = None
    # Events crawled whose listing could not be read whole, with why: their rows are kept as they were.
    kept_back: dict[str, str] = field(default_factory=dict)
    # The staged subtitle tracks the ``transcripts`` table takes before the previous release's.
    transcripts: RowLines[Transcript] | None = None
    # The staged documents the ``slides`` table takes before the previous release's.
    slides: RowLines[Slides] | None = None

    @property
    def records(self) -> list[Lecture]:
        """Every row of the release at once (for callers that need the whole release)."""
        return list(self.events)

    @property
    def unchanged(self) -> bool:
        """True when the release would hold exactly the previous one's rows (content, withdrawal and the
        volatile values a listing refreshes) and the previous one's files are as published (one edited in
        place is written again), and the ``transcripts`` and ``slides`` rows would be the previous
        release's (a track or a document staged anew is a change)."""
        from crawler.publish.slides import SlidesTable
        from crawler.publish.transcripts import TranscriptsTable

        before = {i: (s.content_sha256, s.withdrawn, s.volatile) for i, s in self.previous.states().items()}
        return (
            bool(before)
            and before == self.events.states
            and not self.previous.edited_files()
            and not TranscriptsTable(self.transcripts, self.previous, self.redactions).changed(self.events)
            and not SlidesTable(self.slides, self.previous, self.redactions).changed(self.events)
        )

    def notes(self) -> list[str]:
        """One line per event not crawled but kept, and per event retired, for the operator."""
        lines = [
            f"event {event} is in the release but was not crawled: its {count} lectures are kept as they "
            "were (neither withdrawn nor dropped); retire it with retire_events / --retire-event to take "
            "it out"
            for event, count in self.carried_events.items()
        ]
        lines += [
            f"event {event} retired: its {count} lectures leave the release"
            for event, count in self.retired_events.items()
        ]
        lines += [
            f"event {event} kept back: {why}; its lectures stay as last published, the other events publish"
            for event, why in self.kept_back.items()
        ]
        return lines


def read_staged(state_dir: Path, *, allow_partial: bool = False) -> StagedCrawl:
    """The staged crawl, one record per lecture (duplicate talks merged), ready to publish. The stage is
    indexed, not loaded: a lecture is read back when its event is published."""
    from crawler.dedup.index import load_index
    from crawler.dedup.near import load_signatures
    from crawler.publish.records import session_detail
    from crawler.publish.summaries import StagedEvents, plan_dedup
    from crawler.state.stage_index import index_stage

    staged = index_stage(state_dir)
    if not staged.complete and not allow_partial:
        raise NothingToPublish(
            f"the crawl staged in {state_dir} did not finish; resume it with `eventcrawl crawl --state "
            f"{state_dir}` or publish it anyway with --allow-partial"
        )
    if not staged.entries:
        raise NothingToPublish(f"the crawl staged in {state_dir} holds no lectures; nothing to publish")
    # Ids already published keep their place when a talk turns up under a second id.
    published = load_index(state_dir).record_ids()
    plan = plan_dedup(
        staged.lecture_ids(), staged.lecture, signatures=load_signatures(state_dir), published=published
    )
    summary = staged.summary
    crawled = {str(e) for e in cast(list[object], summary.get("event_ids") or []) if e is not None}
    crawled |= set(staged.event_ids())
    ordered = sorted(staged.sessions, key=lecture_order)
    sessions = [session_detail(staged.sessions[k], i) for i, k in enumerate(ordered)]
    return StagedCrawl(
        StagedEvents(staged, plan),
        _provenance(state_dir, staged, plan.report),
        sessions,
        tuple(sorted(crawled, key=lecture_order)),
        staged.complete,
        Withdrawals.from_summary(summary) if staged.complete else Withdrawals(),
        staged.transcripts,
        staged.slides,
    )


def _provenance(state_dir: Path, staged: StageIndex, dedup: DedupReport) -> JsonObject:
    """What the release records of the crawl it was made from."""
    found = read_crawl_report(state_dir).get("settings")
    crawl_used = found if isinstance(found, dict) else {}
    summary = staged.summary
    names = {f"{e.event_id} {e.event_name or ''}".strip() for e in staged.entries.values()}
    # Every event the crawl covered, as "<id> <name>", in id order.
    shown = sorted(names, key=lambda text: lecture_order(text.split(" ", 1)[0]))
    events: list[JsonValue] = list(shown)
    return {
        "crawl_date": str(summary.get("finished_at") or datetime.now(UTC).isoformat())[:10],
        "crawler_version": __version__,
        "events": events,
        "web_base": without_credentials(
            str(crawl_used.get("UNDERLINE_WEB_BASE") or summary.get("web_base") or "")
        ),
        "settings": {
            key: without_credentials(value) if isinstance(value, str) and "://" in value else value
            for key, value in crawl_used.items()
        },
        "staged_lines": staged.lines,
        "bad_lines": staged.bad_lines,
        "dedup": cast(JsonObject, dedup.summary()),
    }


def removals_in_force(out_dir: Path, state_dir: Path, removals: RemovalRequests | None) -> RemovalRequests:
    """The removals the next release of ``out_dir`` applies: those ``state_dir`` recorded, ``removals``
    and those the release's ledger keeps (lecture ids, redactions as digests), so that a state directory
    lost and restored, or another one, brings nothing back. :class:`DamagedFile` when the release's
    manifest lists a ledger that neither the release nor ``state_dir`` holds, or when a release made
    before ledgers were published redacted more authors than these removals name."""
    from crawler.publish.removals import RELEASE_LEDGER, ReleaseRemovals, load_removals, redaction_count
    from crawler.state.fsutil import DamagedFile

    kept = ReleaseRemovals.load(out_dir)
    ledger = StateDir.of(state_dir).removals
    if kept.missing and not ledger.is_file():
        raise DamagedFile(
            Path(out_dir) / RELEASE_LEDGER,
            f"the release's manifest lists it but it is missing, and {ledger} does not exist either: the "
            "removals the release applied are known nowhere",
            f"restore the release from the Hub (hf download --repo-type dataset <repo> --local-dir "
            f"{out_dir}), or {ledger} from a backup",
        )
    asked = load_removals(state_dir).merged(removals or RemovalRequests())
    in_force = asked.merged(kept.requests(asked))
    named = redaction_count(in_force.authors)
    if named < kept.authors:
        raise DamagedFile(
            ledger,
            f"the release in {out_dir} redacted {kept.authors} author(s), this state directory and the "
            f"configuration name {named}",
            "publish with the state directory that published the release, or list every redaction in the "
            "configuration's redact_authors (--config)",
        )
    return in_force


def _carried_rows(
    staged: StagedCrawl, previous: PreviousRelease, retired: frozenset[str]
) -> Iterator[Lecture]:
    """Every row the release carries, before removals: read only to find the names a redacted ORCID iD
    carries."""
    staged_events = staged.lectures.event_of()
    for event_id in staged.lectures.event_ids():
        if event_id not in retired:
            yield from staged.lectures.lectures_of(event_id)
    for lecture in previous.iter_lectures():
        if lecture.lecture_id not in staged_events and str(lecture.event_id) not in retired:
            yield lecture


def _carry_events(
    staged: StagedCrawl,
    previous: PreviousRelease,
    retired: frozenset[str],
    *,
    removals: RemovalRequests,
    redactions: Redactions,
    keep_links: Callable[[list[Lecture]], list[Lecture]],
) -> tuple[SpilledEvents, CarriedRelease]:
    """Every event of the next release built one at a time and spilled to disk: the staged rows on top of
    the previous release's, the removals applied, the links kept or made by ``keep_links``."""
    from crawler.publish.previous import CarriedRelease, carry_forward
    from crawler.publish.removals import remove_from
    from crawler.publish.summaries import SpilledEvents

    spill = SpilledEvents()
    # An event kept back is published as it was: its staged rows neither replace nor withdraw any.
    kept_back = staged.kept_back
    staged_ids = {i for i, event in staged.lectures.event_of().items() if event not in kept_back}
    crawled = [e for e in staged.event_ids if e not in kept_back]
    carried: dict[str, int] = {}
    retired_rows: dict[str, int] = {}
    for event_id in sorted({*staged.lectures.event_ids(), *previous.event_ids()}, key=lecture_order):
        part = carry_forward(
            previous.lectures_of([event_id]),
            [] if event_id in kept_back else staged.lectures.lectures_of(event_id),
            crawled_events=crawled,
            withdrawals=staged.withdrawals,
            retire_events=retired,
            staged_ids=staged_ids,
        )
        carried.update({e: n for e, n in part.carried_events.items() if e not in kept_back})
        retired_rows.update(part.retired_events)
        kept = remove_from(part.records, remove_lectures=removals.lectures, redactions=redactions)
        lectures = keep_links(kept)
        if lectures:
            spill.add(event_id, sorted(lectures, key=lambda lec: lecture_order(lec.lecture_id)))
    return spill, CarriedRelease([], dict(sorted(carried.items())), dict(sorted(retired_rows.items())), [])


def next_release(
    staged: StagedCrawl,
    *,
    out_dir: Path,
    state_dir: Path,
    removals: RemovalRequests | None = None,
    retire_events: Sequence[str] = (),
    anthology: Path | None = None,
) -> NextRelease:
    """The next release of ``out_dir``: the staged crawl on top of the previous release, with every
    removal in force (those ``state_dir`` recorded, ``removals`` and the lecture ids the release
    removed) applied, and every row linked to its paper in the ACL Anthology's files under ``anthology``
    (without them, a lecture keeps the link it last had). Every command that writes a release goes
    through here, so none drops history or brings back what was removed; :class:`DamagedFile` when the
    release redacted more authors than this state directory and ``removals`` name. The release is built
    one event at a time and kept on disk until it is published."""
    from crawler.publish.previous import read_previous_release
    from crawler.publish.removals import Redactions

    in_force = removals_in_force(out_dir, state_dir, removals)
    previous = read_previous_release(out_dir)
    retiring = frozenset(retire_events)
    redactions = Redactions.parse(in_force.authors)
    if redactions.orcids:
        # The names an ORCID iD carries are read before it is redacted: they go with it, in the earlier
        # change files too.
        redactions = redactions.with_names_of(
            lec.values() for lec in _carried_rows(staged, previous, retiring)
        )
    keep_links = (lambda lectures: lectures) if anthology is not None else _links_kept(previous)
    spill, carried = _carry_events(
        staged, previous, retiring, removals=in_force, redactions=redactions, keep_links=keep_links
    )
    links = None
    if anthology is not None:
        spill, links = link_anthology(spill, anthology)
    retired = set(carried.retired_events)
    known = {s["session_id"] for s in staged.sessions}
    sessions = [
        *staged.sessions,
        *(
            s
            for s in previous.sessions()
            if s["session_id"] not in known and s.get("event_id") not in retired
        ),
    ]
    return NextRelease(
        spill,
        previous,
        in_force,
        redactions,
        sessions,
        carried.carried_events,
        carried.retired_events,
        links,
        staged.kept_back,
        staged.transcripts,
        staged.slides,
    )


def _links_kept(previous: PreviousRelease) -> Callable[[list[Lecture]], list[Lecture]]:
    """Each lecture with the link it had in ``previous``: a publish not asked to link changes no link."""
    from crawler.anthology.links import keep_links

    before = previous.links()

    def kept(lectures: list[Lecture]) -> list[Lecture]:
        # keep_links takes the previous release's records: only the linked ones of these lectures are given.
        ids = (lec.lecture_id for lec in lectures)
        linked = [Lecture.from_json({"lecture_id": i, **before[i]}) for i in ids if i in before]
        return keep_links(lectures, linked)

    return kept


def link_anthology(events: SpilledEvents, anthology: Path) -> tuple[SpilledEvents, LinkSummary]:
    """``events`` linked to their papers in the ACL Anthology's collection files under ``anthology``
    (``anthology_id``, ``anthology_url``, ``anthology_match`` set or cleared; content hashes
    recomputed), and what linking did. The papers are matched against every lecture's title, authors and
    abstract (conflicts between lectures are settled over the whole release), then each event's rows are
    linked. Raises ``AnthologyError`` for a broken or missing file."""
    from crawler.anthology.links import LinkSummary, lecture_text, with_link
    from crawler.anthology.match import PaperIndex, match_lectures
    from crawler.anthology.reader import AnthologyError, read_papers
    from crawler.publish.summaries import SpilledEvents

    papers, read = read_papers(Path(anthology))
    if not read.files:
        raise AnthologyError(f"{anthology}: holds no Anthology collection file (data/xml/<collection>.xml)")
    index = PaperIndex(papers)
    matches = match_lectures(index, (lecture_text(lec) for lec in events))
    by_id = {m.key: m for m in matches}
    linked = SpilledEvents()
    by_event: dict[str, dict[str, int]] = {}
    for event_id in events.event_ids():
        rows = [with_link(lec, by_id[lec.lecture_id]) for lec in events.lectures_of(event_id)]
        counts = by_event.setdefault(event_id, {"lectures": 0, "linked": 0})
        counts["lectures"] += len(rows)
        counts["linked"] += sum(1 for lec in rows if lec.anthology_id)
        linked.add(event_id, rows)
    events.close()
    return linked, LinkSummary.of(matches, papers=len(index), by_event=by_event, read=read)
