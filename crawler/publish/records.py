"""What a release takes in, checked before it reaches a table: lecture records (scrubbed of e-mail
addresses and phone numbers, validated against the schema, unique by id, their content hashes verified),
subtitle tracks (scrubbed the same way, text and every segment's text) and the session details a caller
gives (checked, timestamps parsed, scrubbed). Every text is scrubbed by
:func:`crawler.privacy.scrub.scrub_text`, as the crawl scrubs it. Bad input raises an error naming every
problem; nothing is written.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TypedDict

from crawler import schema
from crawler.privacy.emails import PLACEHOLDER, URL_PLACEHOLDER
from crawler.privacy.scrub import RECORD_URL_FIELDS, scrub_value, texts_to_scrub
from crawler.schema import Lecture, Transcript
from crawler.schema import check as schema_check


class InvalidRecordsError(ValueError):
    """Records that cannot be published; nothing has been written when this is raised."""

    def __init__(self, problems: Sequence[str], total: int) -> None:
        self.problems = tuple(problems)
        shown = "\n".join(f"  - {p}" for p in self.problems[:20])
        more = f"\n  ... and {len(self.problems) - 20} more" if len(self.problems) > 20 else ""
        super().__init__(f"{len(self.problems)} problem(s) in {total} record(s):\n{shown}{more}")


def _scrubbed(values: Mapping[str, object], url_fields: Container[str]) -> dict[str, object] | None:
    """``values`` with every e-mail address and phone number in their strings replaced (a URL field's by
    the URL placeholder); None when they hold none."""
    strings: list[str] = []
    _strings(values.values(), strings)
    if not texts_to_scrub(strings):
        # One search over all of the record's strings: most records hold no personal data at all.
        return None
    out: dict[str, object] = {}
    found = 0
    for name, value in values.items():
        is_url = name in url_fields
        out[name], count = scrub_value(value, URL_PLACEHOLDER if is_url else PLACEHOLDER, url=is_url)
        found += count
    return out if found else None


def scrubbed_record(record: Mapping[str, object]) -> Mapping[str, object]:
    """``record`` with every e-mail address and phone number in its strings replaced, as the crawl's
    privacy step does (the record itself when it holds none); an edited record gets its content hash
    computed again, a record left as it was keeps its own."""
    out = _scrubbed(record, RECORD_URL_FIELDS)
    if out is None:
        return record
    out["content_sha256"] = schema.content_sha256(out)
    return out


def scrubbed_transcript(transcript: Transcript) -> Transcript:
    """``transcript`` with every e-mail address and phone number in its text, its segments' texts and its
    other strings replaced (the subtitle URL as a URL), as :func:`scrubbed_record` scrubs a lecture:
    whatever the stage or an earlier release holds, no address reaches the ``transcripts`` table. The same
    object when it holds none."""
    out = _scrubbed(transcript.values(), ("subtitle_url",))
    return transcript if out is None else Transcript(**out)  # type: ignore[arg-type]


def _strings(values: Iterable[object], out: list[str]) -> None:
    for value in values:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list | tuple):
            _strings(value, out)
        elif isinstance(value, Mapping):
            _strings(value.values(), out)


def lecture_rows(records: Iterable[Lecture | Mapping[str, object]]) -> list[Lecture]:
    """Validated records (lectures, or mappings such as a caller's or a stage's records) as lectures,
    sorted by lecture id.

    Every record is scrubbed of e-mail addresses and phone numbers first (:func:`scrubbed_record`):
    whatever the stage or an earlier release holds, no address reaches a table. Raises
    :class:`InvalidRecordsError` listing every invalid record, duplicate id and wrong hash.
    """
    problems: list[str] = []
    rows: list[Lecture] = []
    seen: set[str] = set()
    total = 0
    for index, given in enumerate(records):
        total += 1
        record = scrubbed_record(given.values() if isinstance(given, Lecture) else given)
        label = f"record {index} (lecture_id={record.get('lecture_id')!r})"
        found = schema_check.validate_record(record)
        if found:
            problems.extend(f"{label}: {p}" for p in found)
            continue
        row = Lecture.from_json(record)
        if row.lecture_id in seen:
            problems.append(f"{label}: duplicate lecture_id")
            continue
        seen.add(row.lecture_id)
        if row.content_sha256 != schema.content_sha256(row.values()):
            problems.append(f"{label}: content_sha256 does not match the record's content")
            continue
        rows.append(row)
    if problems:
        raise InvalidRecordsError(problems, total)
    rows.sort(key=lambda r: r.lecture_id)
    return rows


SESSION_KEYS = frozenset(["session_id", "event_id", "name", "description", "start", "end"])


class SessionDetail(TypedDict):
    """What a caller knows about a session beyond its lectures (see :func:`session_details`)."""

    session_id: str
    event_id: str | None
    name: str | None
    description: str | None
    start: datetime | None
    end: datetime | None


def _optional_text(entry: Mapping[str, object], key: str, index: int) -> str | None:
    value = entry.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"sessions[{index}]: {key} must be a string or None")
    return None if value is None else str(scrub_value(value)[0])


def session_detail(entry: Mapping[str, object], index: int) -> SessionDetail:
    """One session entry checked, its timestamps parsed and e-mail addresses and phone numbers replaced
    in its strings."""
    unknown = set(entry) - SESSION_KEYS
    if unknown:
        raise ValueError(
            f"sessions[{index}]: unknown keys {sorted(unknown)}; allowed: {sorted(SESSION_KEYS)}"
        )
    session_id = entry.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        raise ValueError(f"sessions[{index}]: session_id must be a non-empty string")
    texts = {key: _optional_text(entry, key, index) for key in ("event_id", "name", "description")}
    try:
        start = schema.parse_timestamp(entry.get("start"))
        end = schema.parse_timestamp(entry.get("end"))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"sessions[{index}]: start/end must be ISO 8601: {exc}") from None
    return SessionDetail(
        session_id=str(scrub_value(session_id)[0]),
        event_id=texts["event_id"],
        name=texts["name"],
        description=texts["description"],
        start=start,
        end=end,
    )


def session_details(sessions: Iterable[Mapping[str, object]] | None) -> dict[str, SessionDetail]:
    """What the caller knows about sessions (``session_id``, ``event_id``, ``name``, ``description``,
    ``start``, ``end``), by session id, timestamps parsed, e-mail addresses and phone numbers replaced in
    every string.
    Raises ValueError naming a bad entry."""
    out: dict[str, SessionDetail] = {}
    for index, entry in enumerate(sessions or ()):
        out[str(entry["session_id"])] = session_detail(entry, index)
    return out
