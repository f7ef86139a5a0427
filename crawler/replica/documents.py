"""The lectures' slide decks and posters as the replica's assets origin serves them: PDFs written here.

A lecture whose listing names ``slideshow_url`` has a deck (3 to 12 pages: a title slide, content slides, a
closing slide), one that names ``poster_document_url`` a poster (one large page with more text). Their
words are the lecture's own: its title, authors, affiliations, abstract and keywords, so the text
differs from lecture to lecture. The PDFs are written by :func:`pdf_file`, with no library: the objects,
the cross-reference table and the trailer. Text is set in the standard font Helvetica with
``/WinAnsiEncoding``, so a character that encoding lacks (``Ł``, ``č``, Greek, CJK) is not written at
all; a content stream is plain or ``/FlateDecode``; a scanned page is one image and no text operators.

Each document is of a *kind* (:data:`KINDS`), handed out over a site as subtitle kinds are (see
:func:`assign_document_kinds`): most are good text documents; a share are scanned (one page without a text
layer), carry an e-mail address and a phone number on the title slide, are cut short in a content stream,
are encrypted with a user password, are no PDF at all though served as one, or are not found (404). Every
other choice (pages, words, compression, a hyphen that ends a line, an acknowledgement with accented
names) comes from a ``random.Random`` of the site's seed, the lecture's id and the document, so a seed
names the same files on every machine. What a reader must find in each is in
:func:`crawler.replica.gold.documents_truth`.
"""

from __future__ import annotations

import hashlib
import random
import re
import unicodedata
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from crawler.replica.subtitles import sentences_of, speakable_words

if TYPE_CHECKING:
    from crawler.replica.layout import Lecture, ReplicaSite

DOCUMENT_SLIDES = "slides"
DOCUMENT_POSTER = "poster"
DOCUMENTS: tuple[str, ...] = (DOCUMENT_SLIDES, DOCUMENT_POSTER)

KIND_TEXT = "text"  # every page a text page
KIND_SCANNED = "scanned"  # one page an image only, no text layer (a poster: its only page)
KIND_PERSONAL = "personal_data"  # the title slide (the poster's head) gives an e-mail address and a phone
KIND_CUT_SHORT = "cut_short"  # the file ends in a content stream: no cross-reference table, no trailer
KIND_ENCRYPTED = "encrypted"  # an /Encrypt dictionary whose user password is not empty
KIND_NOT_A_PDF = "not_a_pdf"  # an HTML page or a zip archive, served as application/pdf
KIND_NOT_FOUND = "not_found"  # 404, S3's NoSuchKey
# The kinds handed out by share, each at least once while documents are left (the rest are text).
SPECIAL_KINDS: tuple[str, ...] = (
    KIND_SCANNED,
    KIND_PERSONAL,
    KIND_CUT_SHORT,
    KIND_ENCRYPTED,
    KIND_NOT_A_PDF,
    KIND_NOT_FOUND,
)
KINDS: tuple[str, ...] = (KIND_TEXT, *SPECIAL_KINDS)
KIND_SHARES: Mapping[str, float] = {
    KIND_SCANNED: 0.06,
    KIND_PERSONAL: 0.03,
    KIND_CUT_SHORT: 0.015,
    KIND_ENCRYPTED: 0.015,
    KIND_NOT_A_PDF: 0.015,
    KIND_NOT_FOUND: 0.015,
}
# An event with this many documents has every kind among its own.
OWN_KINDS_DOCUMENTS = 2 * len(SPECIAL_KINDS)
# What a reader must say of a document it could not read. PDFium cannot open a file cut short before its
# trailer (it rebuilds the cross-reference table by scanning the objects, but only a trailer names the
# catalogue; a linearised file, which has one at its start, would open), nor bytes that are no PDF.
PROBLEM_UNREADABLE = "unreadable"
PROBLEM_ENCRYPTED = "encrypted"
PROBLEM_NOT_FOUND = "not_found"
EXPECTED_PROBLEMS: Mapping[str, str] = {
    KIND_CUT_SHORT: PROBLEM_UNREADABLE,
    KIND_ENCRYPTED: PROBLEM_ENCRYPTED,
    KIND_NOT_A_PDF: PROBLEM_UNREADABLE,
    KIND_NOT_FOUND: PROBLEM_NOT_FOUND,
}
NO_TEXT_KINDS = frozenset(EXPECTED_PROBLEMS)

# Shares of the good documents: a hyphen ending a line in a word that goes on, an acknowledgement with
# accented names; and how the content streams are written.
HYPHEN_SHARE = 0.5
ACCENTED_SHARE = 0.3
COMPRESSION = ("plain", "flate", "mixed")
# Phone numbers of the personal-data documents (each one the project's phone rule takes).
PLANTED_PHONES = ("+44 20 7946 0958", "+1 415 555 0199", "+49 30 901820", "+33 1 23 45 67 89")
# Names of the acknowledgements: accented Latin, one with a letter WinAnsi lacks (written without it).
THANKED = (
    "Zoë Müller",
    "José Peña",
    "François Dubois",
    "Łukasz Nowak",
    "Søren Ørsted",
    "Ana Pérez-Gómez",
    "Jürgen Weiß",
    "Chloé Lefèvre",
)
THANKS = "Thanks to"
HEADINGS = ("Motivation", "Background", "Our approach", "Method", "Experiments", "Results", "Analysis")

SLIDE_SIZE = (720, 540)
POSTER_SIZE = (1684, 2384)
MARGIN = {DOCUMENT_SLIDES: 40, DOCUMENT_POSTER: 100}
# Font sizes and the characters a line of each holds (Helvetica averages about half an em a character).
TITLE, AUTHORS, BODY, SMALL = "title", "authors", "body", "small"
STYLES: Mapping[str, Mapping[str, tuple[int, int]]] = {
    DOCUMENT_SLIDES: {TITLE: (28, 40), AUTHORS: (16, 70), BODY: (18, 55), SMALL: (14, 80)},
    DOCUMENT_POSTER: {TITLE: (60, 48), AUTHORS: (36, 80), BODY: (28, 95), SMALL: (24, 110)},
}
SLIDE_BODY_LINES = 12
# Lines of the title, the authors and the affiliations at most: the head always fits, contact and all.
HEAD_LINES = {TITLE: 4, AUTHORS: 3, SMALL: 2}
IMAGE_SIZE = (96, 72)

# Every character the writer writes: printable ASCII and what WinAnsiEncoding adds, but a no-break space
# (written as a space) and a soft hyphen (a reader takes it for a hyphen).
_WINANSI = frozenset(chr(c) for c in range(0x20, 0x7F)) | frozenset(
    c for c in bytes(range(0x80, 0x100)).decode("cp1252", errors="ignore") if c not in "\xa0\xad"
)
_WORD_HYPHEN = re.compile(r"(?<=[^\W\d_])-(?=[^\W_])")


@dataclass(frozen=True)
class Line:
    """One line of a page: its font size and the text written, every character one WinAnsi has."""

    size: int
    text: str


@dataclass(frozen=True)
class PagePlan:
    """A page: its lines top down (none for a scanned page) and whether its content stream is compressed."""

    lines: tuple[Line, ...]
    scanned: bool = False
    compressed: bool = False


@dataclass(frozen=True)
class DocumentPlan:
    """Everything one document's bytes and truth come from."""

    seed: int
    lecture_id: str
    document: str
    kind: str
    size: tuple[int, int]
    pages: tuple[PagePlan, ...]
    # (e-mail address, phone number) as the title slide gives them, for the personal-data kind.
    personal: tuple[str, str] | None = None
    hyphenated: bool = False
    accented: bool = False


@dataclass(frozen=True)
class SiteDocument:
    """A document a lecture's listing names: which, where it is served (path) and how it is broken.
    ``lecture`` is the lecture its file is made from, ``listed_by`` the one whose listing names it (the
    same but for a copy of a lecture, which shares its documents)."""

    lecture: Lecture
    listed_by: Lecture
    document: str
    url: str
    path: str
    kind: str


# -- the documents of a site -------------------------------------------------------------------------


def listed_documents(lecture: Lecture) -> list[tuple[str, str]]:
    """``(document, url)`` of each document the lecture's listing names, slides first."""
    urls = ((DOCUMENT_SLIDES, lecture.slideshow_url), (DOCUMENT_POSTER, lecture.poster_document_url))
    return [(document, url) for document, url in urls if url]


def _owner(site: ReplicaSite, lecture: Lecture, path: str) -> Lecture:
    """The lecture a document's path names when that lecture lists the same path (a copy of a lecture
    shares its documents), else ``lecture``."""
    named = re.match(r"/lecture/(\d+)/", path)
    owner = site.lectures.get(named.group(1)) if named else None
    if owner is not None and any(urlsplit(u).path == path for _, u in listed_documents(owner)):
        return owner
    return lecture


def site_documents(site: ReplicaSite) -> list[SiteDocument]:
    """Every document the site's lectures list, by lecture id (numerically), slides before poster; each
    of the lecture that owns its file, with its kind."""
    found: list[tuple[Lecture, Lecture, str, str, str]] = []
    for lecture in sorted(site.lectures.values(), key=lambda lec: int(lec.id)):
        for document, url in listed_documents(lecture):
            path = urlsplit(url).path
            found.append((_owner(site, lecture, path), lecture, document, url, path))
    events = sorted({owner.event_id for owner, *_ in found}, key=int)
    by_event = [sorted({f[-1] for f in found if f[0].event_id == e}) for e in events]
    kinds = assign_document_kinds(site.seed, by_event)
    return [SiteDocument(*f, kind=kinds[f[-1]]) for f in found]


def assign_document_kinds(seed: int, events: Sequence[Sequence[str]]) -> dict[str, str]:
    """Document path -> kind, for the paths of every document of a site, one sequence an event.

    An event with at least :data:`OWN_KINDS_DOCUMENTS` documents has every kind among its own; the
    documents of the smaller events share one set. In a seeded order of a set, round after round, each
    special kind takes the next document left until it has its share (:data:`KIND_SHARES`, at least
    one); the rest are text documents."""
    large = [list(paths) for paths in events if len(paths) >= OWN_KINDS_DOCUMENTS]
    pooled = [p for paths in events if len(paths) < OWN_KINDS_DOCUMENTS for p in paths]
    kinds: dict[str, str] = {}
    for paths in [*large, pooled]:
        order = sorted(paths, key=lambda p: hashlib.sha256(f"{seed}:document-kind:{p}".encode()).hexdigest())
        quota = {kind: max(1, round(len(order) * KIND_SHARES[kind])) for kind in SPECIAL_KINDS}
        free = iter(order)
        for round_ in range(max(quota.values(), default=0)):
            for kind in SPECIAL_KINDS:
                path = next(free, None) if round_ < quota[kind] else None
                if path is not None:
                    kinds[path] = kind
        kinds.update((p, KIND_TEXT) for p in free)
    return kinds


# -- a document's plan ---------------------------------------------------------------------------------


def written(text: str) -> str:
    """``text`` as the writer writes it: NFC, only characters WinAnsi has (others left out, whitespace a
    space)."""
    text = unicodedata.normalize("NFC", text)
    return "".join(c if c in _WINANSI else " " if c.isspace() else "" for c in text)


def wrap(text: str, width: int) -> list[str]:
    """``text``'s words (as written) in lines of at most ``width`` characters (a longer word alone on
    its line). A word that ends with a hyphen never ends a line while a word follows it: a reader would
    join it to the next line's first word."""
    units: list[str] = []
    for word in written(text).split():
        if units and units[-1].endswith("-"):
            units[-1] += " " + word
        else:
            units.append(word)
    lines: list[str] = []
    for unit in units:
        if lines and len(lines[-1]) + 1 + len(unit) <= width:
            lines[-1] += " " + unit
        else:
            lines.append(unit)
    return lines


def _lines(document: str, style: str, text: str, most: int | None = None) -> list[Line]:
    size, width = STYLES[document][style]
    return [Line(size, line) for line in wrap(text, width)[:most]]


def _author_names(lecture: Lecture) -> list[str]:
    names = []
    for p in lecture.profiles:
        name = p.full_name if p.full_name and p.full_name.strip() else f"{p.first_name} {p.last_name}"
        names.append(" ".join(unicodedata.normalize("NFC", name).split()))
    return names


def _affiliations(lecture: Lecture) -> list[str]:
    return list(dict.fromkeys(p.affiliation.strip() for p in lecture.profiles if p.affiliation))


def _head(document: str, lecture: Lecture, event_name: str, personal: tuple[str, str] | None) -> list[Line]:
    """The title slide's lines (the poster's head): title, authors, affiliations, event, a contact."""
    title = " ".join(speakable_words(lecture.title)) or lecture.title
    lines = _lines(document, TITLE, title, HEAD_LINES[TITLE])
    lines += _lines(document, AUTHORS, ", ".join(_author_names(lecture)), HEAD_LINES[AUTHORS])
    lines += _lines(document, SMALL, "; ".join(_affiliations(lecture)), HEAD_LINES[SMALL])
    lines += _lines(document, SMALL, event_name)
    if personal is not None:
        lines += _lines(document, SMALL, f"Contact: {personal[0]}")
        lines += _lines(document, SMALL, f"Phone: {personal[1]}")
    return lines


def _sentences(lecture: Lecture) -> list[str]:
    said = [" ".join(words) for words in sentences_of(lecture.abstract)]
    return said or [" ".join(speakable_words(lecture.title)) or "Overview."]


def hyphenate(lines: list[Line], rng: random.Random) -> bool:
    """Break one word across two body lines with a hyphen, as a typesetter does: the first word of a
    line that follows another is split, after a hyphen it holds or halfway through it. False when no
    line's first word lends itself to it."""
    for k in range(1, len(lines)):
        if lines[k].size != lines[k - 1].size:
            continue
        first, _, rest = lines[k].text.partition(" ")
        inner = _WORD_HYPHEN.search(first)
        if inner is not None:
            cut = inner.end()
        elif first.isalpha() and len(first) >= 6:
            cut = rng.randint(3, len(first) - 3)
            first = first[:cut] + "-" + first[cut:]
            cut += 1
        else:
            continue
        lines[k - 1] = Line(lines[k - 1].size, f"{lines[k - 1].text} {first[:cut]}")
        lines[k] = Line(lines[k].size, f"{first[cut:]} {rest}".strip())
        return True
    return False


def _thanks(rng: random.Random) -> str:
    names = rng.sample(THANKED, 4)
    return f"{THANKS} {', '.join(names[:-1])} and {names[-1]} for their feedback."


def _content_pages(document: str, count: int, sentences: list[str]) -> list[list[Line]]:
    """``count`` content slides: a heading and bullets, the abstract's sentences in turn."""
    pages: list[list[Line]] = []
    at = 0
    for k in range(count):
        heading = HEADINGS[k % len(HEADINGS)] + (f" ({k // len(HEADINGS) + 1})" if k >= len(HEADINGS) else "")
        lines = _lines(document, TITLE, heading)
        body: list[Line] = []
        for _ in range(3):
            bullet = _lines(document, BODY, "\u2022 " + sentences[at % len(sentences)])
            at += 1
            if body and len(body) + len(bullet) > SLIDE_BODY_LINES:
                break
            body += bullet[:SLIDE_BODY_LINES]
        pages.append(lines + body)
    return pages


def _deck(
    rng: random.Random, lecture: Lecture, head: list[Line], features: tuple[bool, bool]
) -> tuple[list[list[Line]], bool]:
    """The deck's pages, and whether a word is hyphenated across two lines."""
    hyphen, accented = features
    count = rng.randint(3, 12)
    pages = [head, *_content_pages(DOCUMENT_SLIDES, count - 2, _sentences(lecture))]
    closing = _lines(DOCUMENT_SLIDES, TITLE, "Thank you! Questions?")
    closing += _lines(DOCUMENT_SLIDES, BODY, " ".join(speakable_words(lecture.title)))
    if accented:
        closing += _lines(DOCUMENT_SLIDES, SMALL, _thanks(rng))
    pages.append(closing)
    return pages, hyphen and hyphenate(pages[1], rng)


def _poster(
    rng: random.Random, lecture: Lecture, head: list[Line], features: tuple[bool, bool]
) -> tuple[list[Line], bool]:
    """The poster's lines, and whether a word is hyphenated across two lines."""
    hyphen, accented = features
    body = _lines(DOCUMENT_POSTER, TITLE, "Abstract")
    body += _lines(DOCUMENT_POSTER, BODY, " ".join(_sentences(lecture)))
    hyphenated = hyphen and hyphenate(body, rng)
    if lecture.keywords:
        body += _lines(DOCUMENT_POSTER, BODY, "Keywords: " + ", ".join(lecture.keywords))
    body += _lines(DOCUMENT_POSTER, TITLE, "Main findings")
    for sentence in _sentences(lecture)[:4]:
        body += _lines(DOCUMENT_POSTER, BODY, "\u2022 " + sentence)
    if accented:
        body += _lines(DOCUMENT_POSTER, TITLE, "Acknowledgements")
        body += _lines(DOCUMENT_POSTER, SMALL, _thanks(rng))
    return head + body, hyphenated


def document_rng(seed: int, lecture_id: str, document: str) -> random.Random:
    return random.Random(f"{seed}:document:{lecture_id}:{document}")


def plan_document(seed: int, lecture: Lecture, document: str, kind: str, event_name: str) -> DocumentPlan:
    """The document's pages and what is planted in them (the same for the same arguments, everywhere)."""
    rng = document_rng(seed, lecture.id, document)
    personal = None
    if kind == KIND_PERSONAL:
        emails = [p.email for p in lecture.profiles if p.email]
        personal = (emails[0] if emails else f"author{lecture.id}@example.org", rng.choice(PLANTED_PHONES))
    features = (rng.random() < HYPHEN_SHARE, rng.random() < ACCENTED_SHARE)
    compression = rng.choice(COMPRESSION)
    head = _head(document, lecture, event_name, personal)
    if document == DOCUMENT_SLIDES:
        texts, hyphenated = _deck(rng, lecture, head, features)
    else:
        poster, hyphenated = _poster(rng, lecture, head, features)
        texts = [poster]
    size = SLIDE_SIZE if document == DOCUMENT_SLIDES else POSTER_SIZE
    scanned = rng.randrange(1, len(texts)) if len(texts) > 1 else 0
    pages = []
    for index, lines in enumerate(texts):
        compressed = compression == "flate" or (compression == "mixed" and rng.random() < 0.5)
        if kind == KIND_SCANNED and index == scanned:
            pages.append(PagePlan((), scanned=True, compressed=compressed))
        else:
            pages.append(PagePlan(tuple(fitted(lines, size[1], MARGIN[document])), compressed=compressed))
    # The hyphen is planted near the top of the first content slide (the poster's abstract), where it
    # always fits; the acknowledgement at the end, which a full poster may not fit.
    planted_on = pages[1 if document == DOCUMENT_SLIDES else 0]
    return DocumentPlan(
        seed=seed,
        lecture_id=lecture.id,
        document=document,
        kind=kind,
        size=size,
        pages=tuple(pages),
        personal=personal,
        hyphenated=hyphenated and not planted_on.scanned,
        accented=any(line.text.startswith(THANKS) for page in pages for line in page.lines),
    )


def line_positions(lines: Sequence[Line], height: int, margin: int) -> list[float]:
    """The baseline of each line, top down: 1.4 times the font size apart, more where the size changes."""
    positions = []
    y = float(height - margin)
    previous = None
    for line in lines:
        y -= line.size * 1.4 + (line.size * 0.6 if previous is not None and previous != line.size else 0)
        positions.append(y)
        previous = line.size
    return positions


def fitted(lines: Sequence[Line], height: int, margin: int) -> list[Line]:
    """The lines that fit on the page above its bottom margin."""
    return [line for line, y in zip(lines, line_positions(lines, height, margin), strict=True) if y >= margin]


# -- the bytes -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PdfFile:
    """A written PDF and where each page's content stream data sits in it (start, end)."""

    data: bytes
    streams: tuple[tuple[int, int], ...]


def _pdf_string(text: str) -> bytes:
    raw = text.encode("cp1252")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _text_stream(page: PagePlan, size: tuple[int, int], margin: int) -> bytes:
    out = [b"BT"]
    font = None
    for line, y in zip(page.lines, line_positions(page.lines, size[1], margin), strict=True):
        if line.size != font:
            out.append(b"/F1 %d Tf" % line.size)
            font = line.size
        out.append(b"1 0 0 1 %d %.1f Tm %s Tj" % (margin, y, _pdf_string(line.text)))
    out.append(b"ET")
    return b"\n".join(out) + b"\n"


def _image(rng_seed: str) -> bytes:
    """A grey scan: a few bands of text-like strokes on paper."""
    rng = random.Random(rng_seed)
    width, height = IMAGE_SIZE
    rows = bytearray()
    for y in range(height):
        ink = y % 12 in (4, 5, 6) and 8 < y < height - 8
        rows += bytes(40 if ink and rng.random() < 0.6 else 235 for _ in range(width))
    return zlib.compress(bytes(rows), 9)


def _stream(data: bytes, compressed: bool, extra: bytes = b"") -> tuple[bytes, bytes]:
    """The dictionary and data of a stream object."""
    if compressed:
        data = zlib.compress(data, 6)
        extra += b" /Filter /FlateDecode"
    return b"<< /Length %d%s >>" % (len(data), extra), data


def pdf_file(plan: DocumentPlan, encrypted: bool = False) -> PdfFile:
    """The plan's pages as a PDF: catalogue, page tree and font first, then each page, its content stream
    (and image), then the cross-reference table and the trailer (with an ``/Encrypt`` dictionary whose
    user password is not empty when ``encrypted``)."""
    margin = MARGIN[plan.document]
    objects: list[tuple[bytes, bytes | None]] = [
        (b"<< /Type /Catalog /Pages 2 0 R >>", None),
        (b"", None),  # the page tree, once the pages' numbers are known
        (b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>", None),
    ]
    kids = []
    for index, page in enumerate(plan.pages):
        number = len(objects) + 1
        kids.append(number)
        if page.scanned:
            width, height = IMAGE_SIZE
            image = _image(f"{plan.seed}:{plan.lecture_id}:{plan.document}:{index}")
            extra = b" /Type /XObject /Subtype /Image /Width %d /Height %d" % (width, height)
            extra += b" /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode"
            resources = b"/XObject << /Im1 %d 0 R >>" % (number + 2)
            content = b"q %d 0 0 %d 0 0 cm /Im1 Do Q\n" % plan.size
        else:
            resources = b"/Font << /F1 3 0 R >>"
            content = _text_stream(page, plan.size, margin)
        page_dict = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Resources << %s >> /Contents %d 0 R >>"
        )
        objects.append((page_dict % (*plan.size, resources, number + 1), None))
        objects.append(_stream(content, page.compressed))
        if page.scanned:
            objects.append((b"<< /Length %d%s >>" % (len(image), extra), image))
    refs = b" ".join(b"%d 0 R" % k for k in kids)
    objects[1] = (b"<< /Type /Pages /Kids [%s] /Count %d >>" % (refs, len(kids)), None)
    trailer = b""
    if encrypted:
        digest = hashlib.sha256(f"{plan.lecture_id}:{plan.document}".encode()).digest()
        owner, user = hashlib.sha256(digest + b"O").hexdigest(), hashlib.sha256(digest + b"U").hexdigest()
        objects.append(
            (f"<< /Filter /Standard /V 1 /R 2 /O <{owner}> /U <{user}> /P -3904 >>".encode(), None)
        )
        file_id = digest[:16].hex().encode()
        trailer = b" /Encrypt %d 0 R /ID [<%s> <%s>]" % (len(objects), file_id, file_id)
    return _assembled(objects, trailer)


def _assembled(objects: Sequence[tuple[bytes, bytes | None]], trailer: bytes) -> PdfFile:
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets, streams = [], []
    for number, (head, data) in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\n" % (number, head)
        if data is not None:
            out += b"stream\n"
            if b"/Image" not in head:
                streams.append((len(out), len(out) + len(data)))
            out += data + b"\nendstream\n"
        out += b"endobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        trailer,
        xref,
    )
    return PdfFile(bytes(out), tuple(streams))


def _not_a_pdf(plan: DocumentPlan) -> bytes:
    """What a misconfigured store answers in a PDF's place: a sign-in page, or the deck as PowerPoint."""
    rng = document_rng(plan.seed, plan.lecture_id, plan.document + ":not-a-pdf")
    if rng.random() < 0.5:
        return (
            b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>"
            b'<form action="/log-in"><input name="email"></form></body></html>\n'
        )
    body = bytes(rng.getrandbits(8) for _ in range(2048))
    return b"PK\x03\x04\x14\x00\x06\x00\x08\x00" + b"[Content_Types].xml" + body


def document_bytes(plan: DocumentPlan) -> bytes | None:
    """The bytes the assets origin serves for the document (None: it answers 404)."""
    if plan.kind == KIND_NOT_FOUND:
        return None
    if plan.kind == KIND_NOT_A_PDF:
        return _not_a_pdf(plan)
    written_file = pdf_file(plan, encrypted=plan.kind == KIND_ENCRYPTED)
    if plan.kind == KIND_CUT_SHORT:
        start, end = written_file.streams[len(written_file.streams) // 2]
        return written_file.data[: (start + end) // 2]
    return written_file.data


def plan_of(site: ReplicaSite, found: SiteDocument) -> DocumentPlan:
    """The plan of a document of the site."""
    event = site.events.get(found.lecture.event_id)
    return plan_document(site.seed, found.lecture, found.document, found.kind, event.name if event else "")
