"""Broken and hostile answers the replica gives on purpose (``python -m tests.support.serve --hostile``).

A few lectures of the main event each get one broken variant of their page (bad or huge JSON, an empty
200, invalid UTF-8, a wrong charset, a gzip bomb, a redirect loop, e-mail addresses in the fields...),
and the lecture list lies about ``meta.total_pages``; every other answer stays exactly as without
``--hostile``. Which lecture gets which variant is a pure function of the site (:func:`plan`), so a test
can compute it from the same seed.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from crawler.replica.layout import MAIN_EVENT_ID, Lecture, ReplicaSite
from crawler.replica.pages import Renderer, api_json, script_json
from crawler.replica.server import API, DRIP_BYTES

HTML_UTF8 = "text/html; charset=utf-8"

# Fetching fails on purpose: the crawler must give up on these with a clear error.
FAILING = ("oversize", "gzip_bomb", "redirect_loop", "endless_redirect")
# Served only when asked for by name (it holds a server thread and slows a crawl by its timeout):
# the page trickles out a few bytes at a time, slower than any download timeout allows.
SLOW = ("slow_drip",)
# The page carries no usable __NEXT_DATA__: the crawler falls back to the visible page and the API.
FALLBACK = ("bad_json", "deep_json", "huge_json", "truncated", "empty")
# Encodings: the page must still read exactly right. These go to lectures with non-ASCII text.
CHARSET = ("bad_utf8", "no_charset_bad_utf8", "bom_wrong_charset", "latin1", "unknown_charset")
# Broken or odd but complete: the record must come out right (or scrubbed, for e-mail addresses).
INTACT = ("wrong_types", "malformed", "huge_page", "foreign_links", "emails", "invisible_chars", "huge_title")
VARIANTS: tuple[str, ...] = (*FAILING, *FALLBACK, *CHARSET, *INTACT)
KNOWN_VARIANTS: tuple[str, ...] = (*VARIANTS, *SLOW)
# Variants whose page yields none of its links to other lectures (cut before them, or never read).
LINKLESS = (*FAILING, *SLOW, "truncated", "empty")

# Sizes: the huge page sits between Scrapy's default warning size and our DOWNLOAD_MAXSIZE (16 MiB),
# the oversize page above it; the bomb is about 1 MiB on the wire and 1 GiB inflated.
HUGE_PAGE_BYTES = 6 * 1024 * 1024
OVERSIZE_BYTES = 17 * 1024 * 1024
HUGE_JSON_BYTES = 6 * 1024 * 1024
BOMB_MEMBER_BYTES = 64 * 1024 * 1024
BOMB_MEMBERS = 16
HUGE_TITLE_CHARS = 1024 * 1024
DEEP_JSON_LEVELS = 100_000
DRIP_SECONDS = 0.5
__all__ = ["DRIP_BYTES"]

# What the e-mail variant adds to the page's fields.
EMAIL_TITLE_SUFFIX = " (contact: jane.doe@example.org)"
EMAIL_ABSTRACT_PREFIX = "Correspondence: first.author+nlp@univ.example.edu. "
EMAIL_ABSTRACT_SUFFIX = " Questions to j.smith [at] example [dot] com or ｊｓ＠ｅｘａｍｐｌｅ．ｃｏｍ."
EMAIL_KEYWORD = "keywords@example.org"
EMAIL_SESSION_SUFFIX = " (chair: chair@conference.example.org)"
# What the invisible-characters variant does to the title and keywords (all of it normalizes away),
# and the lone surrogates it puts around the abstract inside __NEXT_DATA__ (they cannot be UTF-8).
INVISIBLE_TITLE_PREFIX = "\u202e\u2066\u200b"
INVISIBLE_TITLE_INFIX = "\u200d\x07\u00ad"
INVISIBLE_TITLE_SUFFIX = "\u2069\ufeff\x1b"
INVISIBLE_KEYWORD_INFIX = "\u200b\u202a"
SURROGATE_PREFIX = "\ud800"
SURROGATE_SUFFIX = "\udfff"
# What the foreign-links variant adds: links that must never become a lecture's source URL.
FOREIGN_HOST = "evil.example"
# The lie ``meta.total_pages`` tells for a page number; pages past the end repeat the last page.
TOTAL_PAGES_CLAIMS: dict[int, Any] = {1: 1, 2: 10**15, 3: "many", 4: -1}
ABSURD_TOTAL_PAGES = 10**15

_SCRIPT_OPEN = '<script id="__NEXT_DATA__" type="application/json">'
_SCRIPT_CLOSE = "</script>"


@dataclass(frozen=True)
class Answer:
    """A hostile answer: what the server sends instead of the normal one."""

    status: int
    body: bytes = b""
    content_type: str | None = HTML_UTF8
    headers: list[tuple[str, str]] = field(default_factory=list)
    # Send the body ``DRIP_BYTES`` at a time, this many seconds apart (0: all at once).
    drip_seconds: float = 0.0


def plan(
    site: ReplicaSite, event_id: str = MAIN_EVENT_ID, variants: tuple[str, ...] = VARIANTS
) -> dict[str, str]:
    """``{lecture id: variant}``: one lecture per variant, spread over the event's lectures by id.

    Charset variants go to lectures whose title or abstract is not plain ASCII (a wrong decoding would
    show); the e-mail and invisible-characters variants to lectures with keywords. A site with fewer
    lectures than variants gets the first variants only.
    """
    unknown = set(variants) - set(KNOWN_VARIANTS)
    if unknown:
        raise ValueError(f"unknown hostile variants: {', '.join(sorted(unknown))}")
    lectures = sorted(site.event_lectures(event_id), key=lambda lec: int(lec.id))
    free = list(lectures)
    chosen: dict[str, str] = {}

    def take(variant: str, prefer: Callable[[Lecture], bool]) -> None:
        if not free:
            return
        picks = [lec for lec in free if prefer(lec)] or free
        # Spread: the pick in the middle of what is left, so neighbours in id order stay normal.
        lecture = picks[len(picks) // 2]
        free.remove(lecture)
        chosen[lecture.id] = variant

    for variant in variants:
        if variant in CHARSET:
            take(variant, lambda lec: not (lec.title + lec.abstract).isascii())
        elif variant in ("emails", "invisible_chars"):
            take(variant, lambda lec: bool(lec.keywords))
        else:
            take(variant, lambda lec: True)
    return chosen


def claimed_total_pages(number: int) -> Any:
    """What ``meta.total_pages`` says on page ``number`` of a hostile lecture list."""
    return TOTAL_PAGES_CLAIMS.get(number, ABSURD_TOTAL_PAGES)


def huge_title(title: str) -> str:
    """The 1 MiB title of the ``huge_title`` variant."""
    filler = " lorem ipsum dolor sit amet"
    repeat = HUGE_TITLE_CHARS // len(filler) + 1
    return (title + filler * repeat)[:HUGE_TITLE_CHARS]


def email_lecture(lecture: Lecture) -> Lecture:
    return dataclasses.replace(
        lecture,
        title=lecture.title + EMAIL_TITLE_SUFFIX,
        abstract=EMAIL_ABSTRACT_PREFIX + lecture.abstract + EMAIL_ABSTRACT_SUFFIX,
        keywords=(*lecture.keywords, EMAIL_KEYWORD),
    )


def invisible_lecture(lecture: Lecture) -> Lecture:
    middle = len(lecture.title) // 2
    title = (
        INVISIBLE_TITLE_PREFIX
        + lecture.title[:middle]
        + INVISIBLE_TITLE_INFIX
        + lecture.title[middle:]
        + INVISIBLE_TITLE_SUFFIX
    )
    keywords = tuple(k[:1] + INVISIBLE_KEYWORD_INFIX + k[1:] for k in lecture.keywords)
    return dataclasses.replace(lecture, title=title, keywords=keywords)


# -- pieces of a rendered page -------------------------------------------------------------------


def split_page(page: str) -> tuple[str, str, str]:
    """(before the __NEXT_DATA__ JSON, the JSON text, after it) of a replica lecture page."""
    start = page.index(_SCRIPT_OPEN) + len(_SCRIPT_OPEN)
    end = page.index(_SCRIPT_CLOSE, start)
    return page[:start], page[start:end], page[end:]


def with_json(page: str, json_text: str) -> str:
    head, _, tail = split_page(page)
    return head + json_text + tail


def _ascii_script_json(value: Any) -> str:
    """JSON for a ``<script>``, every non-ASCII character (lone surrogates too) as a ``\\u`` escape."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    for char, code in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
        text = text.replace(char, code)
    return text


def _own_document(tree: Any, lecture_id: str) -> dict[str, Any]:
    for doc in tree["props"]["pageProps"]["fallback"].values():
        data = doc.get("data")
        if isinstance(data, dict) and data.get("type") == "thin_lectures" and data.get("id") == lecture_id:
            return doc
    raise KeyError(lecture_id)


def _wrong(value: Any) -> Any:
    """A value of another JSON type than ``value``."""
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, str):
        return [value]
    if isinstance(value, int | float):
        return {"value": value}
    if isinstance(value, list):
        return ",".join(map(str, value))
    if value is None:
        return 12
    return True


def _wrong_types(tree: Any, lecture_id: str) -> Any:
    doc = _own_document(tree, lecture_id)
    lecture = doc["data"]
    lecture["id"] = int(lecture["id"])
    lecture["attributes"] = {k: _wrong(v) for k, v in lecture["attributes"].items()}
    lecture["relationships"] = {k: "broken" for k in lecture["relationships"]}
    for resource in doc.get("included", []):
        resource["attributes"] = {k: _wrong(v) for k, v in resource["attributes"].items()}
    tree["query"]["lectureSlug"] = int(lecture_id)
    return tree


def _surrogates(tree: Any, lecture_id: str) -> Any:
    attributes = _own_document(tree, lecture_id)["data"]["attributes"]
    attributes["abstract"] = SURROGATE_PREFIX + attributes["abstract"] + SURROGATE_SUFFIX
    return tree


_WELCOME_SECTION = re.compile(r"<section><div><p>")
_CLOSING = re.compile(r"</(?:p|li|div|h3)>")


def _truncated(page: str) -> str:
    match = _WELCOME_SECTION.search(page)
    assert match is not None
    return page[: match.end() + 12]


def _malformed(page: str) -> str:
    """Closing tags dropped, stray ones added, inline tags left open, attributes unquoted."""
    head, json_text, tail = split_page(page)
    body_start = head.index("<main>")
    main = _CLOSING.sub("", head[body_start:])
    main = main.replace("<main>", "<main></section></span></ul><b><i>", 1)
    main = main.replace("<ul>", "<ul class=a b=c =d>", 1)
    main = main.replace("</main>", "</td></tr></table></b></main></main>", 1)
    return head[:body_start] + main + json_text + tail


def _foreign_links(page: str, targets: list[str]) -> str:
    links = []
    for target in targets:
        links += [
            f'<a href="https://{FOREIGN_HOST}/lecture/{target}-stolen">elsewhere</a>',
            f'<a href="//{FOREIGN_HOST}/events/502/sessions/1/lecture/{target}">protocol-relative</a>',
            f'<a href="javascript:alert(document.cookie)//lecture/{target}">script</a>',
            f'<a href=" JaVaScRiPt:void(0)/lecture/{target}-x">script</a>',
            f'<a href="data:text/html,&lt;a href=/lecture/{target}&gt;x&lt;/a&gt;">data</a>',
            f'<a href="mailto:someone@{FOREIGN_HOST}?body=/lecture/{target}">mail</a>',
            f'<a href="ftp://{FOREIGN_HOST}/lecture/{target}-x">ftp</a>',
            f'<a href="http://127.0.0.1:1/lecture/{target}-other-port">other port</a>',
        ]
    return page.replace("</main>", " <div>" + "".join(links) + "</div>\n</main>", 1)


def _huge_page(page: str) -> str:
    """Padding nobody sees: a long comment and a hidden block of many small elements."""
    half = HUGE_PAGE_BYTES // 2
    hidden_item = "<p>hidden padding text</p>"
    hidden = "<div hidden>" + hidden_item * (half // len(hidden_item)) + "</div>"
    comment = "<!-- " + "padding " * (half // 8) + "-->"
    return page.replace("</main>", comment + hidden + "</main>", 1)


def _bad_bytes(body: bytes) -> bytes:
    """Invalid UTF-8 in the header line and the footer, where no field of the lecture is."""
    body = body.replace(b"<header><div>", b"<header><div>\xff\xfe", 1)
    return body.replace(b"Stay up to date", b"Stay \xc3\x28up to\x80 date", 1)


def _gzip_bomb() -> bytes:
    member = gzip.compress(b"\0" * BOMB_MEMBER_BYTES, compresslevel=9, mtime=0)
    # Concatenated members are one valid gzip stream; inflating it yields all of them.
    return member * BOMB_MEMBERS


class HostileSite:
    """Answers for the hostile lectures of one site and base URL; None means "answer normally".

    Plugs into the replica as its page overrides: ``ReplicaServer(site, overrides=hostile_overrides())``.
    """

    def __init__(self, site: ReplicaSite, base_url: str, variants: Mapping[str, str] | None = None) -> None:
        self.site = site
        self.base_url = base_url.rstrip("/")
        self.variants = dict(plan(site) if variants is None else variants)
        unknown = set(self.variants.values()) - set(KNOWN_VARIANTS)
        if unknown:
            raise ValueError(f"unknown hostile variants: {', '.join(sorted(unknown))}")
        self.renderer = Renderer(site, self.base_url)
        self._cache: dict[str, Answer] = {}
        self._lock = threading.Lock()

    def variant(self, lecture_id: str) -> str | None:
        return self.variants.get(lecture_id)

    def listing(self, lectures: list[Lecture], size: int, number: int) -> Answer:
        """A list page whose ``meta.total_pages`` lies, and that never runs out: a page past the end
        repeats the last one."""
        last = max(1, (len(lectures) + size - 1) // size)
        doc = self.renderer.list_doc(lectures, size, min(number, last), profiles=True)
        doc["meta"]["total_pages"] = claimed_total_pages(number)
        return Answer(200, api_json(doc), API)

    def lecture_page(self, lecture: Lecture, query: Mapping[str, list[str]]) -> Answer | None:
        variant = self.variants.get(lecture.id)
        if variant is None:
            return None
        canonical = self.renderer.canonical_url(lecture)
        if variant == "redirect_loop":
            target = canonical if query.get("loop") else canonical + "?loop=1"
            return _redirect(target)
        if variant == "endless_redirect":
            hop = _int(query.get("hop"))
            return _redirect(f"{canonical}?hop={hop + 1}")
        with self._lock:
            answer = self._cache.get(lecture.id)
            if answer is None:
                answer = self._cache[lecture.id] = self._build(lecture, variant)
        return answer

    def _page(self, lecture: Lecture, renderer: Renderer | None = None) -> str:
        return (renderer or self.renderer).lecture_page(lecture).decode("utf-8")

    def _site_with(self, lecture: Lecture, session_name_suffix: str = "") -> Renderer:
        """A renderer of a copy of the site in which ``lecture`` (and its session) are changed."""
        sessions = dict(self.site.sessions)
        if session_name_suffix:
            session = sessions[lecture.session_id]
            sessions[session.id] = dataclasses.replace(session, name=session.name + session_name_suffix)
        copy = dataclasses.replace(
            self.site, lectures={**self.site.lectures, lecture.id: lecture}, sessions=sessions
        )
        return Renderer(copy, self.base_url)

    def _build(self, lecture: Lecture, variant: str) -> Answer:
        page = self._page(lecture)
        if variant == "bad_json":
            _, json_text, _ = split_page(page)
            return _html(with_json(page, json_text[: len(json_text) // 2]))
        if variant == "deep_json":
            deep = '{"props": ' + "[" * DEEP_JSON_LEVELS + "]" * DEEP_JSON_LEVELS + "}"
            return _html(with_json(page, deep))
        if variant == "huge_json":
            tree = json.loads(split_page(page)[1])
            tree["padding"] = "x" * HUGE_JSON_BYTES
            return _html(with_json(page, script_json(tree)))
        if variant == "wrong_types":
            tree = _wrong_types(json.loads(split_page(page)[1]), lecture.id)
            return _html(with_json(page, script_json(tree)))
        if variant == "truncated":
            return _html(_truncated(page))
        if variant == "malformed":
            return _html(_malformed(page))
        if variant == "empty":
            return Answer(200, b"")
        if variant == "bad_utf8":
            return Answer(200, _bad_bytes(page.encode("utf-8")))
        if variant == "no_charset_bad_utf8":
            bare = page.replace('<meta charset="utf-8">', "", 1)
            return Answer(200, _bad_bytes(bare.encode("utf-8")), "text/html")
        if variant == "bom_wrong_charset":
            marked = page.replace('<meta charset="utf-8">', '<meta charset="iso-8859-1">', 1)
            return Answer(200, b"\xef\xbb\xbf" + marked.encode("utf-8"), "text/html; charset=iso-8859-1")
        if variant == "latin1":
            tree = json.loads(split_page(page)[1])
            ascii_json = with_json(page, _ascii_script_json(tree))
            latin = ascii_json.replace('<meta charset="utf-8">', '<meta charset="windows-1252">', 1)
            return Answer(200, latin.encode("cp1252", "xmlcharrefreplace"), "text/html; charset=windows-1252")
        if variant == "unknown_charset":
            return Answer(200, page.encode("utf-8"), "text/html; charset=x-unknown-charset-42")
        if variant == "huge_page":
            return _html(_huge_page(page))
        if variant == "oversize":
            padding = "<!-- " + "x" * OVERSIZE_BYTES + " -->"
            return _html(page.replace("</main>", padding + "</main>", 1))
        if variant == "gzip_bomb":
            return Answer(200, _gzip_bomb(), headers=[("Content-Encoding", "gzip")])
        if variant == "foreign_links":
            targets = [link.lecture_id for link in lecture.related[:3]]
            return _html(_foreign_links(page, targets))
        if variant == "emails":
            changed = email_lecture(lecture)
            return _html(self._page(changed, self._site_with(changed, EMAIL_SESSION_SUFFIX)))
        if variant == "invisible_chars":
            changed = invisible_lecture(lecture)
            page = self._page(changed, self._site_with(changed))
            tree = _surrogates(json.loads(split_page(page)[1]), lecture.id)
            return _html(with_json(page, _ascii_script_json(tree)))
        if variant == "slow_drip":
            return Answer(200, page.encode("utf-8"), drip_seconds=DRIP_SECONDS)
        if variant == "huge_title":
            changed = dataclasses.replace(lecture, title=huge_title(lecture.title))
            return _html(self._page(changed, self._site_with(changed)))
        raise ValueError(f"unknown hostile variant {variant!r}")


def _html(page: str) -> Answer:
    return Answer(200, page.encode("utf-8"))


def _redirect(location: str) -> Answer:
    body = f'<!DOCTYPE html><html><body><a href="{location}">Found</a></body></html>\n'.encode()
    return Answer(302, body, headers=[("Location", location)])


def _int(values: list[str] | None) -> int:
    try:
        return max(0, int(values[0])) if values else 0
    except ValueError:
        return 0


def hostile_overrides(variants: Mapping[str, str] | None = None) -> Callable[[ReplicaSite, str], HostileSite]:
    """The replica's ``overrides`` factory for the hostile site (``variants`` None: :func:`plan`)."""
    return lambda site, base_url: HostileSite(site, base_url, variants)
