"""The replica's site: events, sessions, tags and lectures built deterministically from real paper metadata.

Everything random comes from one ``random.Random(seed)`` consumed in a fixed order, so a seed names one
site on every machine and in every process. ``ground_truth`` gives, for each lecture, exactly the record
a correct crawl of the event must produce.
"""

from __future__ import annotations

import dataclasses
import gzip
import html
import json
import math
import random
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from crawler.replica.attributes import served_attributes
from crawler.replica.gold import (
    UnknownText,
    clean_text,
    collapse,
    content_hash,
    lecture_url,
    published_affiliation,
    published_attribute,
    published_name,
    timestamp,
)
from crawler.replica.subtitles import KIND_CLEAN, KIND_NO_URL, assign_kinds, file_path
from crawler.schema import FIELD_NAMES, FIELDS

DATA_FILE = "emnlp2025_papers.jsonl.gz"
MAIN_EVENT_ID = "502"
SIDE_EVENT_ID = "469"
# The share of records that go to EMNLP 2024: its lectures appear among the related lectures of some pages.
SIDE_EVENT_EVERY = 50
# Beyond the real records, lectures are copies of them with this suffix on the title (n = 2, 3, ...).
COPY_SUFFIX = " (replica copy {n})"
# A site larger than this would run the two events' session ids into each other.
MAX_LECTURES = 500_000
# Lecture ids are drawn from at least this many times as many numbers as the event has lectures; a bigger
# site widens the event's range away from the other event's (EMNLP 2025 upwards, EMNLP 2024 downwards).
ID_SPREAD = 3

_WELCOME_502 = (
    "## Welcome!\n"
    '"I am excited to welcome you to this year\u2019s edition of the Conference on Empirical Methods in'
    " Natural Language Processing! Importantly, it marks the 30th edition of EMNLP. With over 8,000"
    " submissions, more than 3,000 accepted papers, and thousands of attendees, we have come a long way from"
    " that first\n"
    "workshop, which had 14 accepted papers. As the field looks ahead, Suzhou is the fitting location for"
    " celebrating this milestone: rooted in a long literary tradition, yet modern and forward-looking, and"
    ' home to a large share of the NLP community."<br>\n'
    "\n"
    "*Message from the General Chair, Dirk Hovy*\n"
    "\n"
    "[**Link to Conference Handbook**](https://drive.google.com/file/d/1johU5QqVVYO4RfH7QcIORr7qrVBdzdwC/view"
    "?usp=sharing)\n"
    "\n\n\n\n\n"
    "<br>\n"
    "\n"
    "Celebrate 30 Years of EMNLP! \n"
    "EMNLP 2025 will be held in Suzhou, China from November 5th to November 9th, 2025."
)

_WELCOME_469 = (
    "## Welcome to EMNLP 2024! \n"
    "We are excited to welcome you to one of the most prominent conferences in the field of Natural Language"
    " Processing. This year, EMNLP 2024 is being held in a hybrid format,\n"
    "offering both virtual and in-person participation in beautiful Miami. Due to a record-breaking number of"
    " submissions, we've expanded the total number of accepted papers to accommodate more cutting-edge"
    " research from around the globe.\n"
    "### [Conference Handbook](https://drive.google.com/file/d/1WPROgxjLAC96AJL7Ugy0tEnYm7dkrbHt/view"
    "?usp=sharing)\n"
    "\n"
    "You are required to register for this event. **Please register"
    " [here](https://2024.emnlp.org/registration/).** The EMNLP 2024 event page on Underline will be open to"
    " public one week prior to the event.\n"
    "\n"
    "Please register!\n"
    "\n"
    "EMNLP 2024\n"
    "\n"
    "EMNLP 2024 will take place in Miami, Florida from Nov 12th to Nov 16th, 2024, at the Hyatt Regency Miami"
    " Hote and on Underline for remote participants."
)

# Phrases a keyword may be; a lecture only gets those that occur in its own title or abstract.
KEYWORD_VOCABULARY: tuple[str, ...] = (
    "large language models",
    "machine translation",
    "reward models",
    "reinforcement learning",
    "reinforcement learning from human feedback",
    "question answering",
    "retrieval-augmented generation",
    "in-context learning",
    "chain-of-thought",
    "instruction tuning",
    "knowledge distillation",
    "named entity recognition",
    "sentiment analysis",
    "summarization",
    "dialogue",
    "low-resource languages",
    "hallucination",
    "benchmark",
    "evaluation",
    "fine-tuning",
    "parameter-efficient fine-tuning",
    "prompting",
    "reasoning",
    "mathematical reasoning",
    "code generation",
    "information retrieval",
    "knowledge graphs",
    "multimodal",
    "vision-language models",
    "speech",
    "interpretability",
    "bias",
    "fairness",
    "safety",
    "jailbreak",
    "alignment",
    "text classification",
    "data augmentation",
    "agents",
    "embeddings",
    "cross-lingual",
    "preference optimization",
    "misinformation",
    "uncertainty",
)
_KEYWORD_PATTERNS = tuple(
    re.compile(r"(?<![a-z0-9])" + re.escape(k) + r"(?![a-z0-9])") for k in KEYWORD_VOCABULARY
)

_SESSION_TOPICS = (
    "Dialogue",
    "Summarization",
    "Translation",
    "Reasoning",
    "Multimodality",
    "Interpretability",
    "Efficiency",
    "Retrieval",
    "Ethics",
    "Resources",
    "Generation",
    "Semantics",
    "Multilinguality",
    "Evaluation",
    "Agents",
    "Safety",
)

TAG_IDS: dict[str, str] = {"technical paper": "7", "poster": "12", "demo": "15", "tutorial": "21"}
SESSION_KIND_ORAL = "sessions"
SESSION_KIND_POSTER = "posters"
LECTURE_SPACING = timedelta(minutes=15)


@dataclass(frozen=True)
class Event:
    id: str
    name: str
    description: str
    location: str
    country: str
    start_date: date
    end_date: date
    lecture_id_range: tuple[int, int]
    session_id_base: int


EVENTS: dict[str, Event] = {
    MAIN_EVENT_ID: Event(
        id=MAIN_EVENT_ID,
        name="EMNLP 2025",
        description=_WELCOME_502,
        location="Suzhou, China",
        country="China",
        start_date=date(2025, 11, 5),
        end_date=date(2025, 11, 9),
        lecture_id_range=(129800, 132400),
        session_id_base=7000,
    ),
    SIDE_EVENT_ID: Event(
        id=SIDE_EVENT_ID,
        name="EMNLP 2024",
        description=_WELCOME_469,
        location="Miami, Florida",
        country="United States",
        start_date=date(2024, 11, 12),
        end_date=date(2024, 11, 16),
        lecture_id_range=(118000, 119999),
        session_id_base=6000,
    ),
}


@dataclass(frozen=True)
class Tag:
    id: str
    name: str


@dataclass(frozen=True)
class Session:
    id: str
    event_id: str
    name: str
    description: str
    kind: str
    starts_at: datetime
    ends_at: datetime | None = None


@dataclass(frozen=True)
class Profile:
    """One author of one lecture as the site serves it (the ``profiles`` documents of ``included``).

    ``orcid`` is the value served (bare iD, its URL form, or None); ``orcid_id`` the bare iD behind it
    and ``orcid_valid`` whether its check digit is right (a wrong one must not be published).
    """

    id: str
    full_name: str | None
    first_name: str
    last_name: str
    email: str
    affiliation: str | None
    orcid: str | None
    orcid_id: str | None
    orcid_valid: bool
    avatar_url: str | None


@dataclass(frozen=True)
class Subtitle:
    """One transcript of a lecture with subtitles in one language.

    ``path`` is where its file sits on the assets origin (None: listed without a subtitle URL, still
    processing); ``kind`` how the file is broken, if it is (see :mod:`crawler.replica.subtitles`).
    """

    id: str
    locale: str
    name: str
    auto_generated: bool
    path: str | None
    pdf_url: str | None
    kind: str = KIND_CLEAN
    token: str = ""

    def url(self, assets_base: str | None = None) -> str | None:
        """The subtitle URL under ``assets_base`` (default: the real assets host), None without one."""
        if self.path is None:
            return None
        return (assets_base or ASSETS).rstrip("/") + self.path


@dataclass(frozen=True)
class Link:
    """A link on a lecture page to another lecture: the target's id and the href exactly as written."""

    lecture_id: str
    href: str


@dataclass(frozen=True)
class Lecture:
    id: str
    event_id: str
    session_id: str
    tag_id: str
    title: str
    abstract: str
    slug: str
    track: str
    held_at: datetime
    published_at: datetime
    package: str
    underline_doi: str | None
    video_doi: str | None
    playlist: str | None
    has_paper: bool
    poster_lecture: bool
    keywords: tuple[str, ...]
    related: tuple[Link, ...]
    next: Link
    similar: Link | None
    # The authors in order (the ``sorted_profiles`` relationship) and the order ``included`` lists
    # them in (indexes into ``profiles``).
    profiles: tuple[Profile, ...] = ()
    included_order: tuple[int, ...] = ()
    slideshow_url: str | None = None
    poster_document_url: str | None = None
    subtitles: tuple[Subtitle, ...] = ()

    @property
    def path(self) -> str:
        return f"/lecture/{self.id}-{self.slug}"


@dataclass(frozen=True)
class ReplicaSite:
    seed: int
    events: Mapping[str, Event]
    tags: Mapping[str, Tag]
    sessions: Mapping[str, Session]
    lectures: Mapping[str, Lecture]

    def event_lectures(self, event_id: str) -> list[Lecture]:
        """The event's lectures in the API's order: by (held_at, id)."""
        found = [lec for lec in self.lectures.values() if lec.event_id == event_id]
        return sorted(found, key=lambda lec: (lec.held_at, int(lec.id)))

    def last_modified(self) -> datetime:
        """One modification time for every document: the replica's content never changes while it runs."""
        latest = max((lec.published_at for lec in self.lectures.values()), default=None)
        return latest if latest is not None else datetime(2025, 1, 1, tzinfo=UTC)


def load_records() -> list[dict[str, Any]]:
    """The bundled real EMNLP 2025 paper metadata (740 records)."""
    ref = resources.files("crawler.replica").joinpath("data").joinpath(DATA_FILE)
    with ref.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as text:
        return [json.loads(line) for line in text if line.strip()]


def slugify(title: str) -> str:
    """Underline-like slug: the ASCII of the NFKD form (anything else dropped), lowercase, runs of other
    characters as one '-', at most 80 characters and no '-' at either end."""
    ascii_text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii").lower()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text).strip("-")
    slug = slug[:80].rstrip("-")
    return slug or "lecture"


def copy_title(title: str, copy: int) -> str:
    """The title of the ``copy``-th appearance of a record (1 is the record itself)."""
    return title if copy <= 1 else title + COPY_SUFFIX.format(n=copy)


def copy_slug(title: str, copy: int) -> str:
    """The slug of :func:`copy_title`: ``slugify`` of it, except that a long title keeps the copy
    number at the end instead of losing it to the 80-character cut, so every copy's slug differs."""
    if copy <= 1:
        return slugify(title)
    tail = f"-replica-copy-{copy}"
    return slugify(title)[: 80 - len(tail)].rstrip("-") + tail


def synthesize_records(records: Sequence[Mapping[str, Any]], count: int) -> list[Mapping[str, Any]]:
    """``count`` records: the real ones, then copies of them in the same order, round after round.

    Copy ``n`` of a record has ``COPY_SUFFIX`` on its title and ``replica_copy`` = n; nothing else
    changes, so copies keep the real abstracts, tracks and keyword matches.
    """
    if count <= len(records):
        return list(records[:count])
    if not records:
        raise ValueError("cannot synthesize lectures from no records")
    out: list[Mapping[str, Any]] = list(records)
    for index in range(len(records), count):
        copy, position = divmod(index, len(records))
        record = records[position]
        out.append({**record, "title": copy_title(str(record["title"]), copy + 1), "replica_copy": copy + 1})
    return out


def pick_keywords(rng: random.Random, title: str, abstract: str) -> tuple[str, ...]:
    """0 to 4 vocabulary phrases that occur in the title or abstract, in vocabulary order."""
    haystack = f"{title}\n{abstract}".lower()
    present = [
        i
        for i, (phrase, pattern) in enumerate(zip(KEYWORD_VOCABULARY, _KEYWORD_PATTERNS, strict=True))
        if phrase in haystack and pattern.search(haystack)
    ]
    wanted = rng.randint(0, 4)
    chosen = sorted(rng.sample(present, min(wanted, len(present))))
    return tuple(KEYWORD_VOCABULARY[i] for i in chosen)


def _doi(rng: random.Random, used: set[str]) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    while True:
        left = "".join(rng.choice(alphabet) for _ in range(4))
        right = "".join(rng.choice(alphabet) for _ in range(4))
        doi = f"10.48448/{left}-{right}"
        if doi not in used:
            used.add(doi)
            return doi


def _chunks(items: Sequence[int], parts: int) -> list[list[int]]:
    size, extra = divmod(len(items), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        out.append(list(items[start:end]))
        start = end
    return out


@dataclass
class _Draft:
    record: Mapping[str, Any]
    id: str
    event_id: str
    session_id: str = ""
    held_at: datetime = datetime(1970, 1, 1, tzinfo=UTC)


def _plan_sessions(rng: random.Random, event: Event, drafts: list[_Draft]) -> list[Session]:
    """Sessions of the event, alternating oral and poster, filled in order; sets each draft's time."""
    count = len(drafts)
    n_sessions = max(min(2, count), round(count / 25))
    days = (event.end_date - event.start_date).days + 1
    per_day = math.ceil(n_sessions / days)
    sessions: list[Session] = []
    orals = posters = 0
    for i, chunk in enumerate(_chunks(range(count), n_sessions)):
        day, slot = divmod(i, per_day)
        starts_at = datetime.combine(event.start_date, datetime.min.time(), tzinfo=UTC) + timedelta(
            days=day, hours=1, minutes=slot * (12 * 60 // per_day)
        )
        session_id = str(event.session_id_base + 1 + i)
        if i % 2 == 0:
            orals += 1
            topic = rng.choice(_SESSION_TOPICS)
            name = f"Oral Session {orals}: {topic}"
            description = f"Oral presentations on {topic.lower()}."
            kind = SESSION_KIND_ORAL
        else:
            posters += 1
            name = f"Poster Session {posters}"
            description = "Posters, in person and online."
            kind = SESSION_KIND_POSTER
        ends_at = starts_at + len(chunk) * LECTURE_SPACING
        sessions.append(Session(session_id, event.id, name, description, kind, starts_at, ends_at))
        for k, index in enumerate(chunk):
            drafts[index].session_id = session_id
            drafts[index].held_at = starts_at + k * LECTURE_SPACING
    return sessions


def lecture_id_range(event: Event, count: int) -> tuple[int, int]:
    """The numbers the event's ``count`` lecture ids are drawn from: its own range while that is at least
    ``ID_SPREAD`` times ``count`` wide, else widened away from the other event's range."""
    low, high = event.lecture_id_range
    needed = ID_SPREAD * count
    if needed <= high - low + 1:
        return low, high
    if event.id == SIDE_EVENT_ID:
        low = high - needed + 1
    else:
        high = low + needed - 1
    if low < 1:
        raise ValueError(f"too many lectures for event {event.id}: {count}")
    return low, high


class _AllBut(Sequence[str]):
    """``items`` without the one at ``skip``, as a view: ``random.sample`` and ``random.choice`` draw from
    it exactly as from the list with that item removed, without building that list for every lecture."""

    def __init__(self, items: Sequence[str], skip: int) -> None:
        self.items = items
        self.skip = skip

    def __len__(self) -> int:
        return len(self.items) - 1

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self.items[index if index < self.skip else index + 1]


def _link(lecture_id: str, event_id: str, session: Session, slug: str, tab: bool) -> Link:
    if session.kind == SESSION_KIND_POSTER:
        href = f"/events/{event_id}/posters/{session.id}/poster/{lecture_id}-{slug}"
        return Link(lecture_id, href + ("?tab=abstract" if tab else ""))
    return Link(lecture_id, f"/events/{event_id}/sessions/{session.id}/lecture/{lecture_id}-{slug}")


def build_site(
    records: Sequence[Mapping[str, Any]],
    *,
    seed: int = 0,
    lectures: int | None = None,
    side_event_every: int = SIDE_EVENT_EVERY,
) -> ReplicaSite:
    """A deterministic replica site: the same records, seed and size always give the same site.

    ``lectures`` larger than ``len(records)`` synthesizes the extra lectures from copies of the records
    (see :func:`synthesize_records`): new ids, titles and slugs, more sessions, same shape of site.
    One record in ``side_event_every`` goes to EMNLP 2024 (469), the rest to EMNLP 2025 (502); both
    are whole events with their own sessions, dates and welcome texts.

    Authors, media links and transcripts come from random streams of their own (per person and per
    lecture), so adding them left every other attribute of a seed's site as it was.
    """
    if lectures is not None and lectures > MAX_LECTURES:
        raise ValueError(f"at most {MAX_LECTURES} lectures, not {lectures}")
    if lectures is not None and lectures > len(records):
        records = synthesize_records(records, lectures)
    rng = random.Random(seed)
    order = list(range(len(records)))
    rng.shuffle(order)
    if lectures is not None:
        order = order[: max(0, lectures)]
    n_side = len(order) // side_event_every
    if n_side == 0 and len(order) >= 10:
        n_side = 1
    side_positions = set(rng.sample(range(len(order)), n_side))

    drafts_by_event: dict[str, list[_Draft]] = {MAIN_EVENT_ID: [], SIDE_EVENT_ID: []}
    members: dict[str, list[Mapping[str, Any]]] = {MAIN_EVENT_ID: [], SIDE_EVENT_ID: []}
    for pos, index in enumerate(order):
        event_id = SIDE_EVENT_ID if pos in side_positions else MAIN_EVENT_ID
        members[event_id].append(records[index])
    for event_id, recs in members.items():
        low, high = lecture_id_range(EVENTS[event_id], len(recs))
        numbers = rng.sample(range(low, high + 1), len(recs))
        drafts_by_event[event_id] = [
            _Draft(rec, str(n), event_id) for rec, n in zip(recs, numbers, strict=True)
        ]

    return _assemble(rng, seed, EVENTS, drafts_by_event, side_event=SIDE_EVENT_ID)


# A catalogue (``build_catalogue``): events of these series, one a year each, in this order.
CATALOGUE_SERIES: tuple[tuple[str, str, str], ...] = (
    ("ACL", "Vienna, Austria", "Austria"),
    ("NAACL", "Albuquerque, New Mexico", "United States"),
    ("EACL", "St. Julian\u2019s, Malta", "Malta"),
    ("COLING", "Abu Dhabi, UAE", "United Arab Emirates"),
    ("CoNLL", "Montr\u00e9al, Canada", "Canada"),
    ("AACL", "Bali, Indonesia", "Indonesia"),
    ("LREC", "Torino, Italy", "Italy"),
    ("SIGDIAL", "S\u00e3o Paulo, Brazil", "Brazil"),
)
CATALOGUE_FIRST_YEAR = 2025
# Catalogue events' ids: spaced, and apart from the default site's 469 and 502.
CATALOGUE_EVENT_ID_BASE = 611
CATALOGUE_EVENT_ID_STEP = 17
# Catalogue lecture ids start here, each event's range after the one before (with a gap), and session
# ids at CATALOGUE_SESSION_BASE, each event a block of its own.
CATALOGUE_LECTURE_ID_BASE = 140_000
CATALOGUE_LECTURE_ID_GAP = 997
CATALOGUE_SESSION_BASE = 20_000


def catalogue_events(count: int, per_event: int) -> dict[str, Event]:
    """``count`` events of a catalogue, each with its own id, name, place, dates and a range of lecture ids
    (``ID_SPREAD`` times ``per_event`` wide, disjoint from every other's) and of session ids."""
    if count < 1:
        raise ValueError(f"a catalogue has at least one event, not {count}")
    width = ID_SPREAD * max(1, per_event)
    session_block = 1000 * (1 + per_event // 20_000)
    events: dict[str, Event] = {}
    for k in range(count):
        series, location, country = CATALOGUE_SERIES[k % len(CATALOGUE_SERIES)]
        year = CATALOGUE_FIRST_YEAR - k // len(CATALOGUE_SERIES)
        name = f"{series} {year}"
        start = date(year, 3 + k % len(CATALOGUE_SERIES), 4 + k % 20)
        low = CATALOGUE_LECTURE_ID_BASE + k * (width + CATALOGUE_LECTURE_ID_GAP)
        event_id = str(CATALOGUE_EVENT_ID_BASE + k * CATALOGUE_EVENT_ID_STEP)
        events[event_id] = Event(
            id=event_id,
            name=name,
            description=(
                f"## Welcome to {name}!\n"
                f"We are glad to welcome you to {name}, held in {location} and on Underline.<br>\n\n"
                f"*Message from the {name} organizers*"
            ),
            location=location,
            country=country,
            start_date=start,
            end_date=start + timedelta(days=3),
            lecture_id_range=(low, low + width - 1),
            session_id_base=CATALOGUE_SESSION_BASE + k * session_block,
        )
    return events


def build_catalogue(
    records: Sequence[Mapping[str, Any]], *, events: int, lectures: int, seed: int = 0
) -> ReplicaSite:
    """A deterministic catalogue of ``events`` events sharing ``lectures`` lectures about equally (in the
    order of a seeded shuffle of the records, copies of them past the real ones: see
    :func:`synthesize_records`). Each event has its own id, name, dates, sessions and lecture id range
    (:func:`catalogue_events`); a lecture's related lectures are of its own event."""
    if lectures < 0 or lectures > MAX_LECTURES:
        raise ValueError(f"a catalogue holds 0 to {MAX_LECTURES} lectures, not {lectures}")
    pool = synthesize_records(records, lectures) if lectures > len(records) else list(records)
    rng = random.Random(seed)
    order = list(range(len(pool)))
    rng.shuffle(order)
    shares = _chunks(order[:lectures], events)
    catalogue = catalogue_events(events, max((len(s) for s in shares), default=0))
    drafts_by_event: dict[str, list[_Draft]] = {}
    for event, share in zip(catalogue.values(), shares, strict=True):
        low, high = event.lecture_id_range
        numbers = rng.sample(range(low, high + 1), len(share))
        drafts_by_event[event.id] = [
            _Draft(pool[index], str(n), event.id) for index, n in zip(share, numbers, strict=True)
        ]
    return _assemble(rng, seed, catalogue, drafts_by_event, side_event=None)


def _assemble(
    rng: random.Random,
    seed: int,
    events: Mapping[str, Event],
    drafts_by_event: dict[str, list[_Draft]],
    *,
    side_event: str | None,
) -> ReplicaSite:
    """The site of events whose lectures have their ids: sessions, per-lecture attributes and links, drawn
    from ``rng`` in a fixed order. Lectures of the other events link to ``side_event``'s now and then."""
    sessions: dict[str, Session] = {}
    for event_id, drafts in drafts_by_event.items():
        if drafts:
            planned = _plan_sessions(rng, events[event_id], drafts)
            sessions.update((s.id, s) for s in planned)
    # Per-lecture attributes, drawn in a fixed order (event, then the event's shuffled order).
    base: dict[str, dict[str, Any]] = {}
    used_dois: set[str] = set()
    for event_id, drafts in drafts_by_event.items():
        event = events[event_id]
        event_start = datetime.combine(event.start_date, datetime.min.time(), tzinfo=UTC)
        for d in drafts:
            title = str(d.record["title"])
            abstract = str(d.record["abstract"])
            track = str(d.record.get("track") or "main")
            session = sessions[d.session_id]
            if track in ("tutorial", "demo"):
                tag_name = track
            else:
                tag_name = "poster" if session.kind == SESSION_KIND_POSTER else "technical paper"
            published_at = event_start - timedelta(days=rng.randint(14, 42), seconds=rng.randint(0, 86399))
            package = "free" if rng.random() < 0.75 else "premium"
            underline_doi = None if rng.random() < 0.10 else _doi(rng, used_dois)
            video_doi = _doi(rng, used_dois) if rng.random() < 0.5 else None
            has_video = rng.random() < 0.7
            playlist = (
                f"https://assets.underline.io/lecture/{d.id}/playlist/{d.id}.m3u8" if has_video else None
            )
            base[d.id] = {
                "id": d.id,
                "event_id": event_id,
                "session_id": d.session_id,
                "tag_id": TAG_IDS[tag_name],
                "title": title,
                "abstract": abstract,
                "slug": _record_slug(d.record),
                "track": track,
                "held_at": d.held_at,
                "published_at": published_at,
                "package": package,
                "underline_doi": underline_doi,
                "video_doi": video_doi,
                "playlist": playlist,
                "has_paper": bool(d.record.get("pdf_url")),
                "poster_lecture": session.kind == SESSION_KIND_POSTER,
                "keywords": pick_keywords(rng, title, abstract),
                **lecture_extras(seed, d.id, d.record, session.kind == SESSION_KIND_POSTER),
            }

    side_ids = sorted((d.id for d in drafts_by_event.get(side_event or "", [])), key=int)
    for event_id in drafts_by_event:
        ids = sorted((d.id for d in drafts_by_event[event_id]), key=int)
        schedule = sorted(ids, key=lambda i: (base[i]["held_at"], int(i)))
        index_of = {lecture_id: k for k, lecture_id in enumerate(ids)}
        for pos, lecture_id in enumerate(schedule):
            others = _AllBut(ids, index_of[lecture_id])
            related_ids = rng.sample(others, min(10, len(others)))
            if event_id != side_event and side_ids and related_ids and rng.random() < 0.15:
                related_ids[rng.randrange(len(related_ids))] = rng.choice(side_ids)
            related = tuple(
                _link(
                    rid,
                    base[rid]["event_id"],
                    sessions[base[rid]["session_id"]],
                    base[rid]["slug"],
                    rng.random() < 1 / 3,
                )
                for rid in related_ids
            )
            nxt = schedule[(pos + 1) % len(schedule)]
            similar_id = rng.choice(others) if others else None
            base[lecture_id]["related"] = related
            base[lecture_id]["next"] = Link(nxt, f"/lecture/{nxt}-{base[nxt]['slug']}")
            base[lecture_id]["similar"] = Link(similar_id, f"/lecture/{similar_id}") if similar_id else None

    for lecture_id, subtitles in with_subtitle_kinds(seed, base).items():
        base[lecture_id]["subtitles"] = subtitles
    built = {i: Lecture(**fields) for i, fields in sorted(base.items(), key=lambda kv: int(kv[0]))}
    tags = {tag_id: Tag(tag_id, name) for name, tag_id in TAG_IDS.items()}
    return ReplicaSite(seed=seed, events=dict(events), tags=tags, sessions=sessions, lectures=built)


# Made-up affiliations for authors the data gives none for (real institutions, some non-ASCII).
AFFILIATIONS: tuple[str, ...] = (
    "Tsinghua University",
    "Carnegie Mellon University",
    "University of Edinburgh",
    "Technische Universität Darmstadt",
    "Peking University",
    "Stanford University",
    "University of Washington",
    "Université Paris-Saclay",
    "Universidad de Buenos Aires",
    "National University of Singapore",
    "The University of Tokyo",
    "Allen Institute for AI",
    "ETH Zürich",
    "Mohamed bin Zayed University of Artificial Intelligence",
    "Korea Advanced Institute of Science and Technology",
    "Indian Institute of Technology Bombay",
)
EMAIL_DOMAINS = ("example.org", "mail.example.org", "univ.example")
# Shares of persons (drawn per name) and of lectures (drawn per lecture id).
ORCID_SHARE = 0.4
ORCID_URL_SHARE = 0.15  # of the ORCID iDs: served as https://orcid.org/<iD>
ORCID_WRONG_SHARE = 0.04  # of the ORCID iDs: served with a wrong check digit
NAMES_ONLY_SHARE = 0.15  # profiles with first and last name but no full_name
MESSY_NAME_SHARE = 0.06  # full_name served with doubled or trailing spaces
DECOMPOSED_SHARE = 0.5  # non-ASCII full names served in NFD
NO_AFFILIATION_SHARE = 0.2
AVATAR_SHARE = 0.6
SLIDES_SHARE = 0.35
POSTER_DOCUMENT_SHARE = 0.85  # of poster lectures
SUBTITLE_LANGUAGES: tuple[tuple[str, str], ...] = (
    ("en", "English"),
    ("zh", "Chinese"),
    ("es", "Spanish"),
    ("de", "German"),
    ("fr", "French"),
    ("ja", "Japanese"),
)
ONE_SUBTITLE_SHARE = 0.25
TWO_SUBTITLES_SHARE = 0.1
ORCID_URL_PREFIX = "https://orcid.org/"
ASSETS = "https://assets.underline.io"


def orcid_check_digit(base_digits: str) -> str:
    """ISO 7064 MOD 11-2 check character of the first 15 digits of an ORCID iD."""
    total = 0
    for digit in base_digits:
        total = (total + int(digit)) * 2
    result = (12 - total % 11) % 11
    return "X" if result == 10 else str(result)


def _orcid(rng: random.Random) -> str:
    digits = "0000000" + str(rng.randint(1, 3)) + "".join(str(rng.randint(0, 9)) for _ in range(7))
    full = digits + orcid_check_digit(digits)
    return "-".join(full[i : i + 4] for i in range(0, 16, 4))


def _wrong_check(orcid_id: str) -> str:
    right = orcid_id[-1]
    wrong = "0" if right == "X" else str((int(right) + 1) % 10)
    return orcid_id[:-1] + wrong


def _email_part(text: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    return re.sub(r"[^a-z0-9]+", "", ascii_text)


def _split_name(record: Mapping[str, Any], position: int, name: str) -> tuple[str, str]:
    structured = record.get("authors_structured")
    if isinstance(structured, list) and position < len(structured):
        part = structured[position]
        return str(part.get("first") or ""), str(part.get("last") or "")
    first, _, last = name.rpartition(" ")
    return first, last


def _data_affiliation(record: Mapping[str, Any], position: int) -> tuple[bool, str | None]:
    """(whether the data says, the affiliation): demo records list one per author, some unknown."""
    listed = record.get("authors_affiliations")
    if not isinstance(listed, list):
        return False, None
    value = listed[position] if position < len(listed) else None
    if value is None or str(value).strip() in ("", "None"):
        return True, None
    return True, str(value)


def _profile(seed: int, record: Mapping[str, Any], lecture_id: str, position: int, name: str) -> Profile:
    # A person's own attributes are drawn from their name, so every lecture shows the same person alike.
    person = random.Random(f"{seed}:person:{name}")
    has_orcid = person.random() < ORCID_SHARE
    orcid_id = _orcid(person)
    url_form = person.random() < ORCID_URL_SHARE
    wrong = person.random() < ORCID_WRONG_SHARE
    names_only = person.random() < NAMES_ONLY_SHARE
    messy = person.random() < MESSY_NAME_SHARE
    decomposed = person.random() < DECOMPOSED_SHARE
    no_affiliation = person.random() < NO_AFFILIATION_SHARE
    made_up = person.choice(AFFILIATIONS)
    has_avatar = person.random() < AVATAR_SHARE
    domain = person.choice(EMAIL_DOMAINS)
    first, last = _split_name(record, position, name)
    full_name: str | None = None
    if not names_only:
        full_name = name
        if messy:
            full_name = " " + full_name.replace(" ", "  ", 1) + " "
        if decomposed and not full_name.isascii():
            full_name = unicodedata.normalize("NFD", full_name)
    known, affiliation = _data_affiliation(record, position)
    if not known:
        affiliation = None if no_affiliation else made_up
    served_orcid = None
    if has_orcid:
        served_orcid = _wrong_check(orcid_id) if wrong else orcid_id
        if url_form:
            served_orcid = ORCID_URL_PREFIX + served_orcid
    profile_id = str(int(lecture_id) * 100 + position)
    local = ".".join(p for p in (_email_part(first), _email_part(last)) if p) or f"author{profile_id}"
    return Profile(
        id=profile_id,
        full_name=full_name,
        first_name=first,
        last_name=last,
        email=f"{local}@{domain}",
        affiliation=affiliation,
        orcid=served_orcid,
        orcid_id=orcid_id if has_orcid else None,
        orcid_valid=has_orcid and not wrong,
        avatar_url=f"{ASSETS}/profiles/{profile_id}/avatar.jpg" if has_avatar else None,
    )


def _included_order(rng: random.Random, count: int) -> tuple[int, ...]:
    """A shuffle of ``range(count)`` that differs from it whenever it can (two or more authors)."""
    order = list(range(count))
    rng.shuffle(order)
    if count > 1 and order == sorted(order):
        order = order[1:] + order[:1]
    return tuple(order)


def lecture_extras(seed: int, lecture_id: str, record: Mapping[str, Any], poster: bool) -> dict[str, Any]:
    """Authors, media links and transcripts of one lecture, drawn from streams of their own."""
    rng = random.Random(f"{seed}:lecture:{lecture_id}")
    names = [str(n) for n in record.get("authors") or []]
    profiles = tuple(_profile(seed, record, lecture_id, i, n) for i, n in enumerate(names))
    included_order = _included_order(rng, len(profiles))
    token = f"{rng.getrandbits(48):012x}"
    slides = f"{ASSETS}/lecture/{lecture_id}/slideshow/{token}.pdf" if rng.random() < SLIDES_SHARE else None
    poster_document = None
    if poster and rng.random() < POSTER_DOCUMENT_SHARE:
        poster_document = f"{ASSETS}/lecture/{lecture_id}/poster_document/{token}.pdf"
    roll = rng.random()
    count = 1 if roll < ONE_SUBTITLE_SHARE else 2 if roll < ONE_SUBTITLE_SHARE + TWO_SUBTITLES_SHARE else 0
    languages = [SUBTITLE_LANGUAGES[0], *rng.sample(SUBTITLE_LANGUAGES[1:], max(0, count - 1))][:count]
    subtitles = []
    for k, (locale, name) in enumerate(sorted(languages)):
        transcript_id = str(int(lecture_id) * 10 + k)
        pdf = f"{ASSETS}/lecture/{lecture_id}/transcripts/{locale}-{token}.pdf"
        auto = rng.random() < 0.6
        path = file_path(lecture_id, locale, token, KIND_CLEAN)
        subtitles.append(Subtitle(transcript_id, locale, name, auto, path, pdf, KIND_CLEAN, token))
    return {
        "profiles": profiles,
        "included_order": included_order,
        "slideshow_url": slides,
        "poster_document_url": poster_document,
        "subtitles": tuple(subtitles),
    }


def _record_slug(record: Mapping[str, Any]) -> str:
    copy = int(record.get("replica_copy") or 1)
    title = str(record["title"])
    if copy > 1:
        title = title.removesuffix(COPY_SUFFIX.format(n=copy))
    return copy_slug(title, copy)


def normalize_block(text: str) -> str:
    """A visible text block as the crawler normalizes it: NFC, entities unescaped, no ``<br>``, one space."""
    text = unicodedata.normalize("NFC", text)
    text = html.unescape(text)
    text = re.sub(r"<br\s*/?>", "", text, flags=re.IGNORECASE)
    return re.sub(r"\s+", " ", text).strip()


def _cleaned(site: ReplicaSite, block: str) -> str:
    try:
        return clean_text(block)
    except UnknownText:
        # A site that changes text (planted revisions) says what its new text reads as.
        known = getattr(site, "clean_text_overrides", None)
        if isinstance(known, Mapping) and block in known:
            return str(known[block])
        raise


def lecture_text(site: ReplicaSite, lecture: Lecture) -> str:
    """The lecture's own visible blocks in page order, normalized and joined by a blank line."""
    blocks = [
        lecture.abstract,
        site.events[lecture.event_id].name,
        lecture.title,
        *lecture.keywords,
        site.tags[lecture.tag_id].name,
    ]
    # ``text`` is read as the typeset paper shows it: LaTeX markup and PDF hyphenation cleaned.
    normalized = (_cleaned(site, normalize_block(b)) for b in blocks)
    return "\n\n".join(b for b in normalized if b)


def page_links(lecture: Lecture) -> list[Link]:
    """Every lecture link on the lecture's page: related lectures, then next, then similar."""
    links = [*lecture.related, lecture.next]
    if lecture.similar is not None:
        links.append(lecture.similar)
    return links


def paper_path(lecture: Lecture) -> str | None:
    """Where the lecture's paper is downloaded (on the API host), None when it has none."""
    return f"/downloadable_materials/lectures/{lecture.id}/paper" if lecture.has_paper else None


def expected_authors(lecture: Lecture) -> list[dict[str, Any]]:
    """The authors as a crawl must publish them: in order, names normalized, valid ORCID iDs only."""
    return [
        {
            "name": published_name(p.full_name, p.first_name, p.last_name),
            "affiliations": published_affiliation(p.affiliation),
            "orcid": p.orcid_id if p.orcid_valid else None,
        }
        for p in lecture.profiles
    ]


def asset_url(url: str | None, assets_base: str | None = None) -> str | None:
    """A file on the real assets host (a slide deck, a poster) as the replica serves it: under
    ``assets_base`` when there is one (the assets origin of a running replica), else as it is."""
    if url is None or not assets_base or not url.startswith(ASSETS + "/"):
        return url
    return assets_base.rstrip("/") + url[len(ASSETS) :]


def expected_subtitles(lecture: Lecture, assets_base: str | None = None) -> list[dict[str, Any]]:
    """The tracks a crawl lists (``subtitles``): those with a subtitle URL, under ``assets_base``."""
    return [
        {"locale": s.locale, "name": s.name, "auto_generated": s.auto_generated, "url": s.url(assets_base)}
        for s in lecture.subtitles
        if s.path is not None
    ]


def with_subtitle_kinds(
    seed: int, lectures: Mapping[str, Mapping[str, Any]]
) -> dict[str, tuple[Subtitle, ...]]:
    """Lecture id -> its subtitles with their kinds handed out over each event (see
    :func:`crawler.replica.subtitles.assign_kinds`) and their files' paths to match."""
    events = sorted({str(fields["event_id"]) for fields in lectures.values()}, key=int)
    tracks = [
        [(s.id, s.auto_generated) for f in lectures.values() if f["event_id"] == e for s in f["subtitles"]]
        for e in events
    ]
    kinds = assign_kinds(seed, tracks)
    out = {}
    for lecture_id, fields in lectures.items():
        out[lecture_id] = tuple(
            dataclasses.replace(
                s,
                kind=kinds[s.id],
                path=file_path(lecture_id, s.locale, s.token, kinds[s.id]),
                pdf_url=None if kinds[s.id] == KIND_NO_URL else s.pdf_url,
            )
            for s in fields["subtitles"]
        )
    return out


# The ground truth's fields beyond the first published schema's (those hashed even when empty), in the
# schema's order after them: every field declared since. A crawl links no lecture to the ACL Anthology (a
# publish given its files does): the truth of a crawl holds no link.
EXTRA_TRUTH_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS if not f.hashed_when_empty)
# A truth record's fields, in order: every field of the schema but when the page was fetched.
TRUTH_FIELDS: tuple[str, ...] = (
    *(n for n in FIELD_NAMES if n not in EXTRA_TRUTH_FIELDS and n != "fetched_at"),
    *EXTRA_TRUTH_FIELDS,
)


def ground_truth(
    site: ReplicaSite,
    web_base: str,
    event_id: str = MAIN_EVENT_ID,
    *,
    event_ids: Sequence[str] | None = None,
    api_base: str | None = None,
    assets_base: str | None = None,
    documents_base: str | None = None,
    night: int = 0,
) -> list[dict[str, Any]]:
    """The records a complete crawl of ``event_id`` (or of all ``event_ids``) on ``night`` must yield,
    sorted by lecture id (no ``fetched_at``).

    Timestamps are ISO 8601 strings with ``Z``, as in the staging format. Each record has the
    published fields (lecture id to ``content_sha256``) and then :data:`EXTRA_TRUTH_FIELDS`: authors,
    media links and subtitles as a crawl that reads them must publish them (subtitle URLs under
    ``assets_base``; by default the real assets host, as a site rendered without an assets origin shows
    them). A crawl of several events sees every crawled page's links, so a lecture's ``source_urls`` may
    grow with the events. A field the layout does not give (a listing attribute added to the schema
    since) is the value :mod:`crawler.replica.attributes` serves on ``night``, or empty when it serves none.
    """
    base = web_base.rstrip("/")
    api = (api_base or web_base).rstrip("/")
    wanted = set(event_ids) if event_ids is not None else {event_id}
    lectures = sorted(
        (lec for lec in site.lectures.values() if lec.event_id in wanted), key=lambda lec: int(lec.id)
    )
    seen_at: dict[str, set[str]] = {lec.id: set() for lec in lectures}
    for lec in lectures:
        for link in page_links(lec):
            if link.lecture_id in seen_at:
                seen_at[link.lecture_id].add(base + link.href)
    out = []
    for lec in lectures:
        url = lecture_url(base, lec.id, lec.slug)
        session = site.sessions[lec.session_id]
        record: dict[str, Any] = {
            "lecture_id": lec.id,
            "url": url,
            "source_urls": sorted(seen_at[lec.id] | {url}),
            "title": collapse(lec.title),
            "abstract": lec.abstract,
            "keywords": list(lec.keywords),
            "presentation_type": site.tags[lec.tag_id].name,
            "event_id": lec.event_id,
            "event_name": site.events[lec.event_id].name,
            "session_id": session.id,
            "session_name": session.name,
            "held_at": timestamp(lec.held_at),
            "published_at": timestamp(lec.published_at),
            "doi": lec.underline_doi,
            "is_premium": lec.package != "free",
            "related_lecture_ids": [link.lecture_id for link in lec.related],
            "text": lecture_text(site, lec),
            "withdrawn": False,
            "alternate_ids": [],
            "near_duplicate_cluster": None,
            "extraction": "next_data",
        }
        record["content_sha256"] = None  # computed below, once the record is whole
        paper = paper_path(lec)
        record.update(
            {
                "authors": expected_authors(lec),
                "video_url": lec.playlist,
                "video_doi": lec.video_doi,
                "paper_url": api + paper if paper else None,
                "slides_url": asset_url(lec.slideshow_url, documents_base),
                "poster_url": asset_url(lec.poster_document_url, documents_base),
                "is_poster": lec.poster_lecture,
                "anthology_id": None,
                "anthology_url": None,
                "anthology_match": None,
                "subtitles": expected_subtitles(lec, assets_base),
            }
        )
        record.update(served_truth(lec, night, api, given=record.keys()))
        record = {name: record[name] for name in TRUTH_FIELDS}
        record["content_sha256"] = content_hash(record)
        out.append(record)
    return out


def served_truth(lecture: Lecture, night: int, api_base: str, given: Iterable[str]) -> dict[str, Any]:
    """Every schema field but ``given`` ones and ``fetched_at``: the listing attribute's value as
    :mod:`crawler.replica.attributes` serves it on ``night`` (the first of its spellings with a value),
    in its published form; empty when none is served."""
    served = served_attributes(lecture, night)
    skip = {*given, "fetched_at"}
    out = {}
    for f in FIELDS:
        if f.name in skip:
            continue
        value = next((served[s] for s in f.attribute if served.get(s) is not None), None)
        out[f.name] = published_attribute(f, value, api_base)
    return out


def sessions_truth(site: ReplicaSite, event_ids: Sequence[str] = (MAIN_EVENT_ID,)) -> list[dict[str, Any]]:
    """Every session of the events as a crawl that reads sessions must publish it, by id."""
    wanted = set(event_ids)
    sessions = sorted((s for s in site.sessions.values() if s.event_id in wanted), key=lambda s: int(s.id))
    return [
        {
            "session_id": s.id,
            "event_id": s.event_id,
            "name": s.name,
            "description": s.description,
            "start_at": timestamp(s.starts_at),
            "end_at": timestamp(s.ends_at) if s.ends_at is not None else None,
            "poster_session": s.kind == SESSION_KIND_POSTER,
        }
        for s in sessions
    ]


def write_ground_truth(records: Iterable[Mapping[str, Any]], path: str | Path) -> Path:
    """Ground-truth records as JSON Lines (UTF-8, one record a line, keys in schema order)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    return target
