"""Linking lectures to their papers in the ACL Anthology, as pure functions (no network, no Scrapy).

``reader`` turns the Anthology's XML collection files into :class:`Paper` values, ``comparable`` makes
titles, names and abstracts comparable, ``timing`` judges whether a paper is of a talk's time,
``match`` finds and scores candidates and decides, and ``links`` sets the records' Anthology fields and
writes ``anthology-links.csv``.
"""
