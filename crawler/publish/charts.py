"""The card's charts: SVG text written by pure functions, one file per chart under ``assets/``.

Each chart is a few horizontal or vertical bars (or a grid of shaded cells), so the SVG is written here
rather than drawn with matplotlib: importing and rendering matplotlib in every publish would add about a
minute of CPU to a test suite that publishes about a hundred releases, and text we write ourselves is
byte-identical from one run to the next, with no font, renderer version or timestamp to pin. The same
figures give the same bytes, so a night that changed nothing uploads nothing for them.

Every chart has a fixed width, a ``viewBox``, a ``<title>`` and a ``<desc>`` (what a screen reader
reads), labels XML-escaped and cut to :data:`LABEL_CHARS` characters, and numbers formatted the same way
every time. A chart holds one bar (or row) per event however many there are; the release history shows
the last :data:`HISTORY_SHOWN` releases.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict
from xml.sax.saxutils import escape

from crawler.coverage import MONITORED
from crawler.publish.card_statistics import EventStatistics, escape_text, number, percent, shorten
from crawler.publish.changes import CHANGE_KINDS, Change
from crawler.publish.tables import EventConfig

if TYPE_CHECKING:
    # Types only: the slides writer imports the manifest, which reads this module.
    from crawler.publish.slides import SlidesStats

ASSETS_DIR = "assets"
WIDTH = 720
LABEL_WIDTH = 210
VALUE_WIDTH = 110
ROW_HEIGHT = 18
BAR_HEIGHT = 12
TOP = 46
LABEL_CHARS = 30
HISTORY_SHOWN = 60
# Where the history's bars start: left of it, each panel's name and its largest value.
HISTORY_LEFT = 76
FONT = 'font-family="sans-serif" font-size="11"'
PAGE_COLOUR = "#2b6ca3"
LISTING_COLOUR = "#a6c8e6"
LINKED_COLOUR = "#3a8f5c"
# Behind a share's bar: the whole span, 100%.
TRACK_COLOUR = "#eeeeee"
CHANGE_COLOURS: dict[Change, str] = {
    "added": "#3a8f5c",
    "changed": "#d99a29",
    "withdrawn": "#b5473a",
    "removed": "#6b6b6b",
}
# XML 1.0 allows no control character but tab, newline and carriage return; labels get none at all.
_NOT_XML = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


@dataclass(frozen=True)
class EventFigures:
    """What the charts show of one event: its name, its lectures by source, its Anthology links among
    the lectures still on the site, and each watched field's coverage (share of those lectures)."""

    name: str
    page: int
    listing_only: int
    linked: int
    live: int
    coverage: Mapping[str, float]
    # Lectures with slide text and with poster text (the ``slides`` table).
    slides: int = 0
    posters: int = 0


class HistoryEntry(TypedDict):
    """One release in the manifest's ``history``: its lectures and its change file's rows by kind."""

    version: str
    lectures: int
    added: int
    changed: int
    withdrawn: int
    removed: int


@dataclass(frozen=True)
class Chart:
    """One chart: its path in the release, its alt text, its numbers in one line, and its SVG."""

    path: str
    alt: str
    summary: str
    svg: str


def label(text: str, limit: int = LABEL_CHARS) -> str:
    """A name as chart text: one line, no control character, cut to ``limit`` characters, XML-escaped."""
    plain = " ".join(_NOT_XML.sub(" ", text).split()) or "(unnamed)"
    return escape(shorten(plain, limit), {'"': "&quot;"})


def svg(height: float, title: str, desc: str, body: Sequence[str]) -> str:
    """A whole SVG document of :data:`WIDTH` by ``height``, titled and described."""
    h = number(height)
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{h}"'
        f' viewBox="0 0 {WIDTH} {h}" role="img" aria-labelledby="title desc">'
    )
    return "\n".join(
        [
            head,
            f'<title id="title">{label(title, 200)}</title>',
            f'<desc id="desc">{label(desc, 1000)}</desc>',
            f'<rect width="{WIDTH}" height="{h}" fill="#ffffff"/>',
            f'<text x="8" y="18" {FONT} font-weight="bold">{label(title, 200)}</text>',
            *(line for line in body if line),
            "</svg>",
            "",
        ]
    )


def _text(x: float, y: float, text: str, anchor: str = "start") -> str:
    return f'<text x="{number(x)}" y="{number(y)}" {FONT} text-anchor="{anchor}">{text}</text>'


def _rect(x: float, y: float, w: float, h: float, colour: str, *, tip: str = "") -> str:
    """A filled rectangle with its tooltip; nothing for one of no area (a zero count)."""
    if w <= 0 or h <= 0:
        return ""
    inner = f"<title>{tip}</title>" if tip else ""
    end = f">{inner}</rect>" if inner else "/>"
    return (
        f'<rect x="{number(x)}" y="{number(y)}" width="{number(w)}" height="{number(h)}" fill="{colour}"{end}'
    )


def _legend(items: Sequence[tuple[str, str]], y: float = 34) -> list[str]:
    out, x = [], 8.0
    for name, colour in items:
        out += [_rect(x, y - 9, 10, 10, colour), _text(x + 14, y, label(name, 60))]
        x += 24 + 7 * len(name)
    return out


def _bar_width(value: float, largest: float) -> float:
    span = WIDTH - LABEL_WIDTH - VALUE_WIDTH
    return round(span * value / largest, 1) if largest else 0.0


# One bar of a row: its value in the chart's unit, its colour and its tooltip.
Bar = tuple[float, str, str]
# An event's row of a bar chart: the event's name, its bars and the numbers written after them.
BarRow = tuple[str, Sequence[Bar], str]


def _row_label(name: str, y: float) -> str:
    """An event's name, right-aligned left of its row."""
    return _text(LABEL_WIDTH - 6, y + BAR_HEIGHT - 2, label(name), "end")


def bar_chart(
    rows: Sequence[BarRow],
    *,
    stacked: bool,
    legend: Sequence[tuple[str, str]],
    title: str,
    desc: str,
    scale: float | None = None,
) -> str:
    """Horizontal bars under a legend, one row per event, its numbers after its bars. A row's bars are
    ``stacked`` end to end, or else each drawn from the start in its own lane (a slice of the row's
    height). The span ends at ``scale``, drawn as a grey track behind each row with the numbers after
    it, or else at the largest row (its bars' sum when stacked, its longest bar when not)."""
    if scale is None:
        values = ([b[0] for b in bars] for _, bars, _ in rows)
        largest = max((sum(v) if stacked else max(v) for v in values), default=0)
    else:
        largest = scale
    body = _legend(legend)
    for i, (name, bars, numbers) in enumerate(rows):
        y = TOP + i * ROW_HEIGHT
        body.append(_row_label(name, y))
        if scale is not None:
            body.append(_rect(LABEL_WIDTH, y, WIDTH - LABEL_WIDTH - VALUE_WIDTH, BAR_HEIGHT, TRACK_COLOUR))
        lane = BAR_HEIGHT if stacked else BAR_HEIGHT / len(bars)
        x: float = LABEL_WIDTH
        end: float = LABEL_WIDTH
        for k, (value, colour, tip) in enumerate(bars):
            width = _bar_width(value, largest)
            if stacked:
                body.append(_rect(x, y, width, lane, colour, tip=tip))
                x = end = x + width
            else:
                body.append(_rect(LABEL_WIDTH, y + k * lane, width, lane, colour, tip=tip))
                end = max(end, LABEL_WIDTH + width)
        numbers_x = WIDTH - VALUE_WIDTH if scale is not None else end
        body.append(_text(numbers_x + 4, y + BAR_HEIGHT - 2, numbers))
    return svg(TOP + len(rows) * ROW_HEIGHT + 8, title, desc, body)


def _paired(
    counts: Sequence[tuple[str, int, int]],
    first: str,
    second: str,
    joiner: str,
    colours: tuple[str, str] = (PAGE_COLOUR, LISTING_COLOUR),
) -> list[BarRow]:
    """Rows of two bars each from (event name, first count, second count), each bar's tooltip its count
    and what it counts, the two counts written after them with ``joiner`` between."""
    return [
        (name, ((a, colours[0], f"{a} {first}"), (b, colours[1], f"{b} {second}")), f"{a}{joiner}{b}")
        for name, a, b in counts
    ]


def lectures_chart(events: Sequence[EventFigures]) -> str:
    """Lectures per event, one horizontal bar each: from their own page, then from the listing only."""
    return bar_chart(
        _paired(
            [(e.name, e.page, e.listing_only) for e in events], "from their own page", "listing only", " + "
        ),
        stacked=True,
        legend=[("from their own page", PAGE_COLOUR), ("from the listing only", LISTING_COLOUR)],
        title="Lectures per event",
        desc="Horizontal bars, one per event: lectures whose fields come from their own page, then lectures"
        " known from the event's listing only. " + lectures_summary(events),
    )


def lectures_summary(events: Sequence[EventFigures]) -> str:
    page = sum(e.page for e in events)
    listing = sum(e.listing_only for e in events)
    return (
        f"{page + listing} lectures in {len(events)} event(s): {page} from their own page,"
        f" {listing} from the listing only."
    )


def _shade(share: float) -> str:
    """A blue from near white (0%) to dark (100%)."""
    low, high = (247, 251, 255), (8, 48, 107)
    s = min(1.0, max(0.0, share))
    return "#" + "".join(f"{round(a + (b - a) * s):02x}" for a, b in zip(low, high, strict=True))


def _scale() -> list[str]:
    """The coverage grid's key: its shades from 0% to 100%, and the grey of a cell not measured."""
    out = [_text(8, 46, "0%")]
    for k in range(5):
        out.append(_rect(30 + 16 * k, 37, 14, 12, _shade(k / 4)))
    out += [_text(112, 46, "100%"), _rect(8, 55, 14, 12, "#dddddd"), _text(26, 64, "not measured")]
    return out


def slides_summary(events: Sequence[EventFigures]) -> str:
    lectures = sum(e.page + e.listing_only for e in events)
    slides, posters = sum(e.slides for e in events), sum(e.posters for e in events)
    return (
        f"Of {lectures} lectures, {slides} have slide text and {posters} have poster text"
        f" in {len(events)} event(s)."
    )


def slides_chart(events: Sequence[EventFigures]) -> str:
    """Lectures with slide text and with poster text per event, one bar of each."""
    return bar_chart(
        _paired(
            [(e.name, e.slides, e.posters) for e in events],
            "with slide text",
            "with poster text",
            " / ",
            colours=(PAGE_COLOUR, LINKED_COLOUR),
        ),
        stacked=False,
        legend=[("slide text", PAGE_COLOUR), ("poster text", LINKED_COLOUR)],
        title="Slide and poster text per event",
        desc="Horizontal bars, two per event: lectures whose slide deck has text, then lectures whose poster"
        " has text. " + slides_summary(events),
    )


def coverage_chart(events: Sequence[EventFigures], fields: Sequence[str] = MONITORED) -> str:
    """Each watched field's coverage per event: a grid, one row per event and one column per field,
    darker for a larger share; an unmeasured cell is grey."""
    cell = (WIDTH - LABEL_WIDTH - 10) / max(1, len(fields))
    header = 130
    body = _scale()
    for j, name in enumerate(fields):
        # Read upwards: the glyphs stand left of x, so x sits a little right of the column's middle.
        x = round(LABEL_WIDTH + j * cell + cell / 2 + 4, 1)
        body.append(
            f'<text x="{number(x)}" y="{header - 4}" {FONT} text-anchor="start"'
            f' transform="rotate(-90 {number(x)} {header - 4})">{label(name)}</text>'
        )
    for i, e in enumerate(events):
        y = header + i * ROW_HEIGHT
        body.append(_row_label(e.name, y))
        for j, name in enumerate(fields):
            share = e.coverage.get(name)
            colour = "#dddddd" if share is None else _shade(share)
            shown = "not measured" if share is None else percent(share)
            tip = f"{label(e.name)}, {label(name)}: {shown}"
            body.append(_rect(LABEL_WIDTH + j * cell, y, cell - 1, ROW_HEIGHT - 2, colour, tip=tip))
    return svg(
        header + len(events) * ROW_HEIGHT + 8,
        "Field coverage per event",
        "A grid with one row per event and one column per field: the darker the cell, the larger the"
        " share of the event's lectures still on the site with a value. " + coverage_summary(events, fields),
        body,
    )


def coverage_summary(events: Sequence[EventFigures], fields: Sequence[str] = MONITORED) -> str:
    cells = [
        (share, name, e.name)
        for e in events
        for name in fields
        if (share := e.coverage.get(name)) is not None
    ]
    if not cells:
        return f"{len(fields)} fields; no coverage measured."
    full = sum(1 for share, _, _ in cells if share >= 1)
    low = min(cells, key=lambda c: (c[0], c[1], c[2]))
    return (
        f"{len(fields)} fields in {len(events)} event(s): {full} of {len(cells)} cells at 100%;"
        f" lowest {low[1]} in {' '.join(low[2].split())[:LABEL_CHARS]} ({percent(low[0])})."
    )


def anthology_chart(events: Sequence[EventFigures]) -> str:
    """The share of each event's lectures still on the site linked to their ACL Anthology paper."""
    rows: list[BarRow] = [
        (
            e.name,
            ((e.linked / e.live if e.live else 0.0, LINKED_COLOUR, f"{e.linked} of {e.live}"),),
            f"{percent(e.linked / e.live) if e.live else 'n/a'} ({e.linked}/{e.live})",
        )
        for e in events
    ]
    return bar_chart(
        rows,
        stacked=True,
        scale=1.0,
        legend=[("linked to their Anthology paper", LINKED_COLOUR)],
        title="Lectures linked to the ACL Anthology, per event",
        desc="Horizontal bars, one per event, from 0% to 100%: the share of the event's lectures still on the"
        " site that are linked to their ACL Anthology paper. " + anthology_summary(events),
    )


def anthology_summary(events: Sequence[EventFigures]) -> str:
    linked = sum(e.linked for e in events)
    live = sum(e.live for e in events)
    shown = percent(linked / live) if live else "n/a"
    return f"{linked} of {live} lectures on the site linked to their Anthology paper ({shown})."


def history_chart(history: Sequence[HistoryEntry]) -> str:
    """Per release (the last :data:`HISTORY_SHOWN`): its lectures as a bar, and under it its change
    file's rows by kind, stacked."""
    shown = list(history[-HISTORY_SHOWN:])
    step = (WIDTH - HISTORY_LEFT - 4) / max(1, len(shown))
    bar = max(1.0, min(40.0, round(step * 0.7, 1)))
    panel = 120
    top, bottom = TOP + 10, TOP + panel + 40
    most = max((h["lectures"] for h in shown), default=0)
    changed = max((sum(h[k] for k in CHANGE_KINDS) for h in shown), default=0)
    body = [
        *_legend([("lectures", PAGE_COLOUR), *((k, CHANGE_COLOURS[k]) for k in CHANGE_KINDS)]),
        _text(8, top + 10, "lectures"),
        _text(8, top + 24, f"up to {most}"),
        _text(8, bottom + 10, "changes"),
        _text(8, bottom + 24, f"up to {changed}"),
    ]
    for i, h in enumerate(shown):
        x = HISTORY_LEFT + i * step
        height = round(panel * h["lectures"] / most, 1) if most else 0.0
        body.append(
            _rect(
                x,
                top + panel - height,
                bar,
                height,
                PAGE_COLOUR,
                tip=f"{label(h['version'])}: {h['lectures']}",
            )
        )
        y = float(bottom + panel)
        for kind in CHANGE_KINDS:
            part = round(panel * h[kind] / changed, 1) if changed else 0.0
            y -= part
            body.append(
                _rect(x, y, bar, part, CHANGE_COLOURS[kind], tip=f"{label(h['version'])}: {h[kind]} {kind}")
            )
    # Version labels (about 70 pixels wide) start at their bar, 80 pixels apart or more; the last one
    # ends at its bar, and the others keep clear of it.
    every, last = max(1, math.ceil(80 / step)), len(shown) - 1
    for i, h in enumerate(shown):
        if i == last:
            x, anchor = HISTORY_LEFT + i * step + bar, "end"
        elif i % every == 0 and (last - i) * step + bar >= 150:
            x, anchor = HISTORY_LEFT + i * step, "start"
        else:
            continue
        body.append(_text(x, bottom + panel + 14, label(h["version"], 12), anchor))
    return svg(
        bottom + panel + 24,
        "Release history",
        "Vertical bars, one per release in order: above, the release's lectures; below, the rows of its"
        " change file, stacked: added, changed, withdrawn, removed. " + history_summary(history),
        body,
    )


def history_summary(history: Sequence[HistoryEntry]) -> str:
    if not history:
        return "No release yet."
    last = history[-1]
    more = f" (the last {HISTORY_SHOWN} shown)" if len(history) > HISTORY_SHOWN else ""
    return (
        f"{len(history)} release(s){more}; this one: {last['lectures']} lectures, {last['added']} added,"
        f" {last['changed']} changed, {last['withdrawn']} withdrawn, {last['removed']} removed."
    )


def event_figures(
    per_event: Sequence[EventStatistics],
    events: Sequence[EventConfig],
    coverage: Mapping[str, Mapping[str, float]],
    slides: SlidesStats,
) -> list[EventFigures]:
    """Each event's figures, in the order of ``events``: its lectures by source and its Anthology links
    as the card counts them (``per_event``, in the same order), the fields' coverage by event and the
    lectures with slide and poster text."""
    return [
        EventFigures(
            name=event.event_name or f"event {event.event_id}",
            page=stats["sources"]["page"],
            listing_only=stats["sources"]["listing_only"],
            linked=stats["anthology"]["linked"],
            live=stats["anthology"]["lectures"],
            coverage=dict(coverage.get(event.event_id, {})),
            slides=slides.slides_by_event[event.event_id],
            posters=slides.posters_by_event[event.event_id],
        )
        for stats, event in zip(per_event, events, strict=True)
    ]


def history_problem(value: object) -> str | None:
    """What makes a manifest's ``history`` not a list of release entries; None when it is one (or when
    the manifest keeps none: one written before the history was kept)."""
    if value is None:
        return None
    keys = set(HistoryEntry.__annotations__)
    if not isinstance(value, list) or not all(isinstance(e, dict) and set(e) == keys for e in value):
        return f"`history` is not a list of entries with {', '.join(sorted(keys))}"
    if not all(isinstance(e["version"], str) for e in value) or not all(
        isinstance(e[k], int) and not isinstance(e[k], bool) and e[k] >= 0
        for e in value
        for k in keys - {"version"}
    ):
        return "`history` holds an entry whose version is not text or whose counts are not counts"
    return None


def history_entry(version: str, lectures: int, counts: Mapping[str, object]) -> HistoryEntry:
    """A release's entry in the history: its lectures and its change file's rows by kind."""

    def count(kind: str) -> int:
        value = counts.get(kind, 0)
        return value if isinstance(value, int) else 0

    return {
        "version": version,
        "lectures": lectures,
        "added": count("added"),
        "changed": count("changed"),
        "withdrawn": count("withdrawn"),
        "removed": count("removed"),
    }


def release_history(
    previous: Mapping[str, Any] | None, version: str, lectures: int, counts: Mapping[Change, int]
) -> list[HistoryEntry]:
    """The manifest's ``history``: the previous manifest's (or, for one written before the history was
    kept, its own release alone) and this release's entry."""
    earlier: list[HistoryEntry] = []
    if previous is not None:
        kept = previous.get("history")
        if isinstance(kept, list):
            earlier = [history_entry(e["version"], e["lectures"], e) for e in kept]
        elif previous.get("version"):
            lectures_then = (previous.get("row_counts") or {}).get("lectures", 0)
            earlier = [
                history_entry(str(previous["version"]), int(lectures_then), previous.get("change_rows") or {})
            ]
    return [*earlier, history_entry(version, lectures, {str(k): v for k, v in counts.items()})]


def charts(
    events: Sequence[EventFigures], history: Sequence[HistoryEntry], *, slides: bool = False
) -> list[Chart]:
    """The release's charts, with their paths, alt texts and one-line summaries (the slides chart last,
    when the release has a ``slides`` config)."""
    drawn = [
        Chart(
            f"{ASSETS_DIR}/lectures-per-event.svg",
            "Lectures per event, from their own page and from the event's listing only",
            lectures_summary(events),
            lectures_chart(events),
        ),
        Chart(
            f"{ASSETS_DIR}/field-coverage.svg",
            "Field coverage per event: share of each event's lectures with a value in each watched field",
            coverage_summary(events),
            coverage_chart(events),
        ),
        Chart(
            f"{ASSETS_DIR}/anthology-share.svg",
            "Share of each event's lectures linked to their ACL Anthology paper",
            anthology_summary(events),
            anthology_chart(events),
        ),
        Chart(
            f"{ASSETS_DIR}/release-history.svg",
            "Lectures and changes (added, changed, withdrawn, removed) per release",
            history_summary(history),
            history_chart(history),
        ),
    ]
    if slides:
        drawn.append(
            Chart(
                f"{ASSETS_DIR}/slides-per-event.svg",
                "Lectures with slide text and with poster text per event",
                slides_summary(events),
                slides_chart(events),
            )
        )
    return drawn


def card_rows(drawn: Sequence[Chart]) -> list[dict[str, str]]:
    """The charts as the card's template shows them: path, alt text and numbers (escaped for markdown)."""
    return [{"path": c.path, "alt": c.alt, "summary": escape_text(c.summary)} for c in drawn]
