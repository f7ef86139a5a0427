"""The subtitle tracks of a site: each track's plan, and the ground truth of what a crawl must read in it.

The truth of a track (``transcripts_truth``), one record a track of the events' lectures, by lecture id
and locale:

- ``lecture_id``, ``event_id``, ``locale``, ``language``, ``auto_generated``, ``subtitle_url`` (None
  when the track is listed without one), ``kind`` (see :mod:`crawler.replica.subtitles`) and ``style``
  (how its file is written: ``plain``, or the tool it is written like, see
  :mod:`crawler.replica.subtitle_files`);
- ``row``: whether a crawl publishes a ``transcripts`` row for it (not for a track without a URL);
- ``text``: what was said, the words of the readable cues joined by single spaces (NFC, whitespace
  collapsed, markup, voice names, notes and inline times left out, entities decoded); None when the
  file cannot be had (404, larger than 2 MiB, a redirect off the allowed hosts, disallowed by robots.txt).
  The words of a malformed cue are not said (``cues_skipped`` is 1). A cp1252 file's text is read as
  a reader that replaces bytes which are not UTF-8 reads it: each non-ASCII character one U+FFFD;
- ``segment_starts_ms``: when each segment starts (every readable cue of a human track, every cue with
  new words of an auto track); None when there is no text, and for the plain auto tracks with inline
  word times, whose segmentation is not exact by design. A styled track's text and starts are those of
  the cues its style writes (a subrip_tags file says one more sentence);
- ``cues_skipped``, and ``problem``: what ``transcripts.problem`` must say (None when nothing);
- ``personal_data``: for the track whose speaker says an e-mail address and a phone number, both as
  said (``text`` holds them as said: a crawl publishes them redacted); None for every other track.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from crawler.replica.layout import MAIN_EVENT_ID, Lecture, ReplicaSite, Subtitle
from crawler.replica.subtitle_files import STYLE_PLAIN, file_style, written_cues
from crawler.replica.subtitles import (
    EXPECTED_PROBLEMS,
    KIND_CP1252,
    KIND_INLINE_TIMESTAMPS,
    KIND_MALFORMED_CUE,
    KIND_NO_URL,
    KIND_PERSONAL,
    NO_TEXT_KINDS,
    SPOKEN_EMAIL,
    SPOKEN_PHONE,
    TrackPlan,
    normalized,
    plan_track,
    replaced_non_ascii,
    said_text,
    segment_starts,
)

_PATH_LECTURE = re.compile(r"/lecture/(\d+)/")


def file_owner(site: ReplicaSite, lecture: Lecture, subtitle: Subtitle) -> Lecture:
    """The lecture a track's file is made from: the one its path names when that lecture has the track
    (a copy of a lecture, as the planted duplicates are, shares its files), else ``lecture`` itself."""
    named = _PATH_LECTURE.search(subtitle.path or "")
    owner = site.lectures.get(named.group(1)) if named is not None else None
    return owner if owner is not None and subtitle in owner.subtitles else lecture


def plan_for(seed: int, lecture: Lecture, subtitle: Subtitle) -> TrackPlan:
    """The plan of ``lecture``'s track ``subtitle`` on a site of ``seed``."""
    return plan_track(
        seed=seed,
        transcript_id=subtitle.id,
        title=lecture.title,
        abstract=lecture.abstract,
        auto=subtitle.auto_generated,
        kind=subtitle.kind,
    )


def track_truth(
    site: ReplicaSite, lecture: Lecture, subtitle: Subtitle, assets_base: str | None
) -> dict[str, Any]:
    """The truth of one track (see the module's description)."""
    kind = subtitle.kind
    text: str | None = None
    starts: list[int] | None = None
    style = STYLE_PLAIN
    if kind not in NO_TEXT_KINDS:
        plan = plan_for(site.seed, file_owner(site, lecture, subtitle), subtitle)
        style = file_style(plan)
        if style != STYLE_PLAIN:
            said = [c for c in written_cues(plan) if c.new]
            text, starts = normalized(" ".join(c.new for c in said)), [c.start_ms for c in said]
        else:
            text = said_text(plan)
            if kind != KIND_INLINE_TIMESTAMPS:
                starts = segment_starts(plan)
        if kind == KIND_CP1252:
            text = replaced_non_ascii(text)
    return {
        "lecture_id": lecture.id,
        "event_id": lecture.event_id,
        "locale": subtitle.locale,
        "language": subtitle.name,
        "auto_generated": subtitle.auto_generated,
        "subtitle_url": subtitle.url(assets_base),
        "kind": kind,
        "style": style,
        "row": kind != KIND_NO_URL,
        "text": text,
        "segment_starts_ms": starts,
        "cues_skipped": 1 if kind == KIND_MALFORMED_CUE else 0,
        "problem": EXPECTED_PROBLEMS.get(kind),
        "personal_data": {"email": SPOKEN_EMAIL, "phone": SPOKEN_PHONE} if kind == KIND_PERSONAL else None,
    }


def transcripts_truth(
    site: ReplicaSite,
    assets_base: str | None = None,
    event_ids: Sequence[str] = (MAIN_EVENT_ID,),
) -> list[dict[str, Any]]:
    """The truth of every track of the events' lectures, by lecture id (numerically) and locale."""
    wanted = set(event_ids)
    lectures = sorted(
        (lec for lec in site.lectures.values() if lec.event_id in wanted), key=lambda lec: int(lec.id)
    )
    return [
        track_truth(site, lec, s, assets_base)
        for lec in lectures
        for s in sorted(lec.subtitles, key=lambda s: s.locale)
    ]
