"""The PDF reader on the replica's slide decks and posters (real PDFs, written by the replica): every page
reads as the ground truth says (plain and compressed streams, accented names, a scanned page, a word
hyphenated across two lines), a file that cannot be read says why, nothing raises on garbage, pages past
the bound are not read, and a bounded read of a PDF that balloons does not take the process that asked."""

from __future__ import annotations

import faulthandler
import multiprocessing
import random
import resource
import signal
import unicodedata
import zlib
from collections.abc import Callable
from typing import Any

import pypdfium2 as pdfium
import pytest

from crawler.replica.documents import (
    KIND_CUT_SHORT,
    KIND_ENCRYPTED,
    KIND_NOT_A_PDF,
    KIND_SCANNED,
    NO_TEXT_KINDS,
    SiteDocument,
    document_bytes,
    pdf_file,
    plan_of,
    site_documents,
)
from crawler.replica.gold import documents_truth
from crawler.replica.layout import ReplicaSite, build_site, load_records
from crawler.slides import read as reader
from crawler.slides.read import (
    PROBLEM_ENCRYPTED,
    PROBLEM_TOO_LARGE,
    PROBLEM_UNREADABLE,
    DocumentText,
    address_space_used,
    normalized_page,
    read_pdf,
    read_pdf_bounded,
)

MIB = 1024 * 1024
PROBLEMS = {None, PROBLEM_UNREADABLE, PROBLEM_ENCRYPTED, PROBLEM_TOO_LARGE}


@pytest.fixture(scope="module")
def site() -> ReplicaSite:
    # The demo's size: the site serve-replica, the demo and the replica's tests build.
    return build_site(load_records(), seed=0, lectures=120)


@pytest.fixture(scope="module")
def documents(site: ReplicaSite) -> list[tuple[SiteDocument, dict[str, Any], bytes | None]]:
    """Every document of the site: where it is, its truth and its bytes."""
    truth = documents_truth(site, event_ids=list(site.events))
    found = site_documents(site)
    assert [t["url"] for t in truth] == [d.url for d in found]
    return [(d, t, document_bytes(plan_of(site, d))) for d, t in zip(found, truth, strict=True)]


def readable(documents: list[tuple[SiteDocument, dict[str, Any], bytes | None]]) -> list[tuple[Any, ...]]:
    return [(d, t, body) for d, t, body in documents if d.kind not in NO_TEXT_KINDS]


def first(
    documents: list[tuple[SiteDocument, dict[str, Any], bytes | None]], test: Callable[..., bool]
) -> tuple[SiteDocument, dict[str, Any], bytes]:
    found = next((d, t, body) for d, t, body in documents if test(d, t, body))
    assert found[2] is not None
    return found[0], found[1], found[2]


def raw_texts(body: bytes) -> list[str]:
    """Each page's text as PDFium alone gives it."""
    document = pdfium.PdfDocument(body)
    try:
        texts = []
        for index in range(len(document)):
            page = document[index]
            textpage = page.get_textpage()
            texts.append(textpage.get_text_range())
            textpage.close()
            page.close()
        return texts
    finally:
        document.close()


# -- good documents read as the truth says -------------------------------------------------------------


def test_every_readable_document_reads_as_the_truth_says(
    documents: list[tuple[SiteDocument, dict[str, Any], bytes | None]],
) -> None:
    good = readable(documents)
    assert len(good) > 60
    for found, truth, body in good:
        assert body is not None, found.url
        assert read_pdf(body) == DocumentText(tuple(truth["pages"]), None), found.url


def test_plain_and_compressed_content_streams_read_alike(
    site: ReplicaSite, documents: list[tuple[SiteDocument, dict[str, Any], bytes | None]]
) -> None:
    def streams(found: SiteDocument) -> set[bool]:
        return {page.compressed for page in plan_of(site, found).pages if not page.scanned}

    plain = first(documents, lambda d, t, b: d.kind == "text" and streams(d) == {False})
    packed = first(documents, lambda d, t, b: d.kind == "text" and streams(d) == {True})
    assert b"/FlateDecode" not in plain[2] and b"BT\n/F1" in plain[2]
    assert packed[2].count(b"/FlateDecode") == len(packed[1]["pages"]) and b"BT\n/F1" not in packed[2]
    for found, truth, body in (plain, packed):
        assert read_pdf(body).pages == tuple(truth["pages"]), found.url
        assert all(truth["pages"]), found.url


def test_a_scanned_page_reads_empty_and_the_others_as_written(
    site: ReplicaSite, documents: list[tuple[SiteDocument, dict[str, Any], bytes | None]]
) -> None:
    found, truth, body = first(documents, lambda d, t, b: d.kind == KIND_SCANNED and d.document == "slides")
    scanned = [page.scanned for page in plan_of(site, found).pages]
    assert scanned.count(True) == 1 and b"/Subtype /Image" in body
    pages = read_pdf(body).pages
    assert pages is not None
    assert [text == "" for text in pages] == scanned
    assert list(pages) == truth["pages"]


def test_a_word_hyphenated_across_two_lines_reads_joined_by_a_plain_hyphen(
    documents: list[tuple[SiteDocument, dict[str, Any], bytes | None]],
) -> None:
    hyphenated = [(d, t, b) for d, t, b in readable(documents) if t["hyphenated"]]
    assert len(hyphenated) >= 5
    for found, truth, body in hyphenated:
        raw = raw_texts(body)
        # PDFium marks the hyphen U+FFFE and joins the lines; the reader makes it a hyphen, nothing after.
        marked = [k for k, text in enumerate(raw) if "\ufffe" in text]
        assert marked, found.url
        for k in marked:
            word = raw[k].split("\ufffe")[0].split()[-1] + "-" + raw[k].split("\ufffe")[1].split()[0]
            assert word in truth["pages"][k].split(), (found.url, word)
        assert read_pdf(body).pages == tuple(truth["pages"]), found.url


def test_the_line_end_hyphen_mark_and_what_else_pdfium_may_leave() -> None:
    assert normalized_page("Rank\ufffe1 results") == "Rank-1 results"
    assert normalized_page("represen\ufffetation\r\nlearning") == "represen-tation learning"
    # A compound broken after its hyphen: PDFium's mark stands for that hyphen.
    assert normalized_page("state-of\ufffethe-art") == "state-of-the-art"
    # A mark that joins no word is dropped, as are noncharacters, NULs and other control characters.
    assert normalized_page("3\ufffe4 \ufffe a\x00b\uffff \U0001fffe c\x07d") == "34 ab cd"
    assert (
        normalized_page("  Zo\u0065\u0308  M\u00fcller\r\n\tJos\u00e9 ") == "Zo\u00eb M\u00fcller Jos\u00e9"
    )
    assert normalized_page("a\xa0b\u2028c") == "a b c"


def test_accented_names_read_composed_and_letters_winansi_lacks_are_not_there(
    documents: list[tuple[SiteDocument, dict[str, Any], bytes | None]],
) -> None:
    accented = [(d, t, b) for d, t, b in readable(documents) if t["accented"]]
    assert accented
    for found, truth, body in accented:
        pages = read_pdf(body).pages
        assert pages is not None and pages == tuple(truth["pages"]), found.url
        thanks = next(p for p in pages if "Thanks to" in p)
        assert thanks == unicodedata.normalize("NFC", thanks), found.url
        assert not any(c in thanks for c in "\u0141\u010d"), found.url
        assert any(
            name in thanks for name in ("Zo\u00eb", "M\u00fcller", "Jos\u00e9", "\u00d8rsted", "Wei\u00df")
        ), found.url
    # Łukasz is written without the letter WinAnsi lacks.
    assert any("ukasz Nowak" in p and "\u0141ukasz" not in p for _, t, _ in accented for p in t["pages"])


# -- what cannot be read says why ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "problem"),
    [
        (KIND_ENCRYPTED, PROBLEM_ENCRYPTED),
        (KIND_NOT_A_PDF, PROBLEM_UNREADABLE),
        (KIND_CUT_SHORT, PROBLEM_UNREADABLE),
    ],
)
def test_a_broken_document_gives_no_text_and_its_problem(
    documents: list[tuple[SiteDocument, dict[str, Any], bytes | None]], kind: str, problem: str
) -> None:
    broken = [(d, t, b) for d, t, b in documents if d.kind == kind]
    assert broken
    for found, truth, body in broken:
        assert body is not None, found.url
        assert read_pdf(body) == DocumentText(None, problem), found.url
        assert truth["pages"] is None and truth["problem"] == problem, found.url


def test_an_encrypted_file_is_one_pdfium_asks_a_password_for(
    documents: list[tuple[SiteDocument, dict[str, Any], bytes | None]],
) -> None:
    _, _, body = first(documents, lambda d, t, b: d.kind == KIND_ENCRYPTED)
    assert b"/Encrypt" in body and b"/Filter /Standard" in body
    with pytest.raises(pdfium.PdfiumError) as refused:
        pdfium.PdfDocument(body)
    assert refused.value.err_code == pdfium.raw.FPDF_ERR_PASSWORD


def test_empty_bytes_and_other_files_are_unreadable() -> None:
    for data in (b"", b"%PDF-", b"%PDF-1.7\n%%EOF\n", b"\x89PNG\r\n\x1a\n" + bytes(64), b"<html></html>"):
        assert read_pdf(data) == DocumentText(None, PROBLEM_UNREADABLE), data


def with_an_early_trailer(site: ReplicaSite, found: SiteDocument) -> tuple[bytes, int]:
    """The document written with a trailer right after its header (as a linearised file has one) and
    cut in the middle of its third page's content stream; and the number of that page."""
    written = pdf_file(plan_of(site, found))
    data = written.data
    trailer = data[data.rindex(b"trailer") : data.rindex(b"startxref")]
    header = data.index(b"1 0 obj")
    moved = data[:header] + trailer + data[header:]
    start, end = written.streams[2]
    return moved[: len(trailer) + (start + end) // 2], 2


def test_a_file_cut_short_that_pdfium_still_opens_gives_the_pages_it_can_read_and_no_part_of_a_page(
    site: ReplicaSite, documents: list[tuple[SiteDocument, dict[str, Any], bytes | None]]
) -> None:
    found, truth, _ = first(documents, lambda d, t, b: d.kind == "text" and len(t["pages"]) >= 5)
    cut, page = with_an_early_trailer(site, found)
    read = read_pdf(cut)
    assert read.problem is None and read.pages is not None
    # The pages before the cut as written; the cut page and those after it (which PDFium cannot load)
    # empty: never a part of a page's text.
    assert list(read.pages) == truth["pages"][:page] + [""] * (len(truth["pages"]) - page)


def test_garbage_never_raises(documents: list[tuple[SiteDocument, dict[str, Any], bytes | None]]) -> None:
    rng = random.Random(0)
    bodies = [b for _, _, b in readable(documents)[:8] if b is not None]
    cases: list[bytes] = [bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 4096))) for _ in range(10)]
    for body in bodies:
        flipped = bytearray(body)
        for _ in range(rng.randint(1, 40)):
            flipped[rng.randrange(len(flipped))] = rng.getrandbits(8)
        cases += [
            bytes(flipped),
            body[: rng.randrange(len(body))],
            body * 2,
            body.replace(b"/Count", b"/Count 9"),
        ]
    cases += [b"%PDF-1.4\n" + bytes(rng.getrandbits(8) for _ in range(2048)), b"\x00" * 1024]
    for case in cases:
        result = read_pdf(case)
        assert result.problem in PROBLEMS, case[:40]
        assert (result.pages is None) == (result.problem is not None), case[:40]
        assert result.pages is None or all(isinstance(p, str) for p in result.pages), case[:40]


@pytest.mark.parametrize(
    ("raised", "problem"), [(RuntimeError("boom"), PROBLEM_UNREADABLE), (MemoryError(), PROBLEM_TOO_LARGE)]
)
def test_whatever_pdfium_raises_is_a_problem_not_an_exception(
    monkeypatch: pytest.MonkeyPatch,
    documents: list[tuple[SiteDocument, dict[str, Any], bytes | None]],
    raised: BaseException,
    problem: str,
) -> None:
    _, _, body = first(documents, lambda d, t, b: d.kind == "text")

    def failing(*_: object) -> None:
        raise raised

    monkeypatch.setattr(pdfium.raw, "FPDFText_LoadPage", failing)
    assert read_pdf(body) == DocumentText(None, problem)


OPEN_AND_CLOSE = (
    "FPDF_LoadMemDocument64",
    "FPDF_LoadPage",
    "FPDFText_LoadPage",
    "FPDFText_ClosePage",
    "FPDF_ClosePage",
    "FPDF_CloseDocument",
)


def test_every_pdfium_object_is_closed_each_page_before_the_next(
    monkeypatch: pytest.MonkeyPatch, documents: list[tuple[SiteDocument, dict[str, Any], bytes | None]]
) -> None:
    """Each page and its text page closed before the next page is loaded, the document at the end: a
    deck of many pages holds one page at a time, and nothing is left for a collector to close."""
    calls: list[str] = []
    for name in OPEN_AND_CLOSE:
        function = getattr(pdfium.raw, name)

        def recording(*args: Any, _name: str = name, _function: Any = function) -> Any:
            calls.append(_name)
            return _function(*args)

        monkeypatch.setattr(pdfium.raw, name, recording)
    _, truth, body = first(documents, lambda d, t, b: d.kind == "text" and len(t["pages"]) >= 3)
    assert read_pdf(body).pages == tuple(truth["pages"])
    each_page = ["FPDF_LoadPage", "FPDFText_LoadPage", "FPDFText_ClosePage", "FPDF_ClosePage"]
    assert calls == ["FPDF_LoadMemDocument64", *each_page * len(truth["pages"]), "FPDF_CloseDocument"]


# -- bounds ---------------------------------------------------------------------------------------------


def test_pages_past_the_bound_are_not_read(
    documents: list[tuple[SiteDocument, dict[str, Any], bytes | None]],
) -> None:
    _, truth, body = first(documents, lambda d, t, b: d.kind == "text" and len(t["pages"]) >= 5)
    assert read_pdf(body, max_pages=2) == DocumentText(tuple(truth["pages"][:2]), None)
    assert read_pdf(body, max_pages=0) == DocumentText((), None)
    assert read_pdf(body, max_pages=100) == DocumentText(tuple(truth["pages"]), None)


def one_page_pdf(content: bytes) -> bytes:
    """A one-page PDF whose content stream is ``content``, compressed."""
    data = zlib.compress(content, 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >>"
        b" /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(data), data),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 6\n0000000000 65535 f \n" + b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size 6 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


# A content stream of 64 MiB once inflated (about 64 KiB in the file).
BALLOON = one_page_pdf(b"BT /F1 12 Tf 72 700 Td (Hello) Tj ET\n" + b" " * (64 * MIB))


def _in_child(target: Callable[..., Any], *args: Any, start: str = "fork") -> tuple[int | None, Any]:
    """Run ``target(queue, *args)`` in a child process (forked, or ``start="spawn"``: a fresh interpreter,
    whose heap holds no free room a memory bound would not see): its exit code and what it put on the
    queue."""
    context = multiprocessing.get_context(start)
    queue = context.Queue()
    child = context.Process(target=target, args=(queue, *args))
    child.start()
    child.join(120)
    if child.is_alive():
        child.kill()
        child.join()
    return child.exitcode, queue.get(timeout=5) if child.exitcode == 0 else None


def _bounded_read(queue: Any, data: bytes, memory_bytes: int) -> None:
    before = resource.getrlimit(resource.RLIMIT_AS)
    seen: list[tuple[int, int]] = []
    read = reader.read_pdf

    def watched(*args: Any, **kwargs: Any) -> DocumentText:
        seen.append(resource.getrlimit(resource.RLIMIT_AS))
        return read(*args, **kwargs)

    reader.read_pdf = watched  # type: ignore[assignment]
    used = address_space_used()
    result = read_pdf_bounded(data, memory_bytes=memory_bytes)
    queue.put((result, before, seen, resource.getrlimit(resource.RLIMIT_AS), used))


def test_a_bounded_read_reads_under_the_bound_and_puts_the_limit_back(
    documents: list[tuple[SiteDocument, dict[str, Any], bytes | None]],
) -> None:
    _, truth, body = first(documents, lambda d, t, b: d.kind == "text")
    code, outcome = _in_child(_bounded_read, body, 256 * MIB)
    assert code == 0
    result, before, seen, after, used = outcome
    assert result == DocumentText(tuple(truth["pages"]), None)
    assert after == before
    # During the read the soft limit was what the process used then, and 256 MiB more.
    ((soft, hard),) = seen
    assert hard == before[1] and used + 256 * MIB <= soft <= used + 256 * MIB + 64 * MIB


def _already_bounded(queue: Any, data: bytes) -> None:
    used = address_space_used()
    assert used is not None
    tight = used + 512 * MIB
    resource.setrlimit(resource.RLIMIT_AS, (tight, resource.getrlimit(resource.RLIMIT_AS)[1]))
    _bounded_read(queue, data, 4096 * MIB)


def test_a_bounded_read_never_raises_a_tighter_limit_the_process_has(
    documents: list[tuple[SiteDocument, dict[str, Any], bytes | None]],
) -> None:
    _, truth, body = first(documents, lambda d, t, b: d.kind == "text")
    code, outcome = _in_child(_already_bounded, body)
    assert code == 0
    result, before, seen, after, _ = outcome
    assert result.pages == tuple(truth["pages"])
    assert seen == [before] and after == before


def _read_balloon(queue: Any, memory_bytes: int | None) -> None:
    # PDFium may abort this process: no traceback dump of it in the test's output.
    faulthandler.disable()
    if memory_bytes is None:
        result = read_pdf(BALLOON)
    else:
        result = read_pdf_bounded(BALLOON, memory_bytes=memory_bytes)
    queue.put((result, resource.getrlimit(resource.RLIMIT_AS)))


def test_a_pdf_that_balloons_fails_under_a_tiny_bound_without_taking_the_process_that_asked() -> None:
    # Unbounded, the 64 MiB stream is read (its text is one word).
    code, outcome = _in_child(_read_balloon, None)
    assert code == 0 and outcome[0] == DocumentText(("Hello",), None)
    # Bounded to 1 MiB more than it uses, the reading process gets too_large, or PDFium ends it (it aborts
    # on some failed allocations): either way this process goes on.
    # In a fresh interpreter: a forked one may hold tens of free MiB of its parent's heap already mapped,
    # which an address-space bound does not count.
    code, outcome = _in_child(_read_balloon, MIB, start="spawn")
    if code == 0:
        assert outcome[0] == DocumentText(None, PROBLEM_TOO_LARGE)
    else:
        assert (
            code is not None
            and code < 0
            and -code in (signal.SIGABRT, signal.SIGSEGV, signal.SIGTRAP, signal.SIGKILL)
        )
    assert read_pdf(BALLOON[:200]).problem == PROBLEM_UNREADABLE
