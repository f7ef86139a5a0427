"""The replica's listing with attributes the replica does not know: each lecture resource of a listing
page as the replica renders it, with more attributes a function of the lecture's id gives. Its pages stay
the replica's own (their JSON has none of the extra attributes), as a site does while a new attribute
reaches its API before its pages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from crawler.replica.layout import Lecture, ReplicaSite
from crawler.replica.pages import Renderer, api_json
from crawler.replica.server import API
from tests.support.sites import Override

# The extra attributes of one lecture, by its id: name -> value as the API sends it.
Attributes = Callable[[str], Mapping[str, Any]]


class ExtraAttributes:
    """The replica's page overrides (see ``crawler.replica.server.PageOverrides``): listing pages with
    the lectures' extra attributes, everything else as the replica answers it."""

    def __init__(self, site: ReplicaSite, base_url: str, attributes: Attributes) -> None:
        self.renderer = Renderer(site, base_url.rstrip("/"))
        self.attributes = attributes

    def lecture_page(self, lecture: Lecture, query: Mapping[str, list[str]]) -> None:
        return None

    def listing(self, lectures: list[Lecture], size: int, number: int) -> Override:
        # The crawler's listing asks for the authors' profiles (``include=...sorted_profiles``).
        doc = self.renderer.list_doc(lectures, size, number, profiles=True)
        for resource in doc["data"]:
            resource["attributes"].update(self.attributes(str(resource["id"])))
        return Override(200, api_json(doc), API)


def with_extra_attributes(attributes: Attributes) -> Callable[[ReplicaSite, str], ExtraAttributes]:
    """The overrides factory a ``ReplicaServer`` takes (``overrides=``)."""
    return lambda site, base_url: ExtraAttributes(site, base_url, attributes)
