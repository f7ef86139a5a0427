"""Linking lectures to their papers in the ACL Anthology, as pure functions (no network, no Scrapy).

``reader`` turns the Anthology's XML collection files into :class:`Paper` values, ``normalize`` makes
titles, names and abstracts comparable, ``timing`` judges whether a paper is of a talk's time,
``match`` finds and scores candidates and decides, and ``links`` sets the records' Anthology fields and
writes ``anthology-links.csv``.
"""

from __future__ import annotations

from crawler.anthology.links import LINKS_FILE, LinkSummary, link_records, link_rows, links_csv
from crawler.anthology.match import LectureText, Match, PaperIndex, link, match_lectures
from crawler.anthology.reader import AnthologyError, Author, Paper, anthology_url, read_papers
from crawler.anthology.timing import EventTime, PaperTime, Verdict, event_time, paper_in_time

__all__ = [
    "LINKS_FILE",
    "AnthologyError",
    "Author",
    "EventTime",
    "LectureText",
    "LinkSummary",
    "Match",
    "Paper",
    "PaperIndex",
    "PaperTime",
    "Verdict",
    "anthology_url",
    "event_time",
    "link",
    "link_records",
    "link_rows",
    "links_csv",
    "match_lectures",
    "paper_in_time",
    "read_papers",
]
