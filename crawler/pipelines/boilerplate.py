"""Keep only the lecture's own content in ``text``: the rest of the page is the site's template
(welcome text, labels, footer) or other lectures' teasers.

Two layers. A page read from its ``__NEXT_DATA__`` (``extraction`` ``next_data``) knows the lecture's
fields, and the structural layer (:mod:`crawler.text.boilerplate`) finds exactly those values among
the page's blocks. A page without usable JSON (``visible_text``) goes to the general layer
(:mod:`crawler.text.template`), which needs no JSON: it judges blocks by a template model learned from
every page of the site, anchored on the page's own title and description. Every page updates the
model, which is loaded from and saved to the state directory so a later crawl starts with it. While
the model has seen too few pages of a site, the structural layer stands in.

On pages with JSON the structural layer's answer also teaches the model which recurring blocks belong
to the record (event name, keywords, type), so a first crawl's model is right from its first pages.

When neither layer finds any of the lecture's blocks on the page (an empty page read with the API's
fields, say), ``text`` is rebuilt from the extracted fields so the record keeps its content. Such a
``text`` was not read off the page, and it says so: ``extraction`` gets :data:`TEXT_FROM_FIELDS`
appended (``next_data+text_from_fields``) and the crawl counts it in ``boilerplate/text_from_fields``.
A crawl whose pages show their lectures never needs it, which is what the end-to-end tests check.

``text`` is then cleaned of LaTeX markup and PDF hyphenation (:func:`crawler.text.latex.clean_latex`)
unless ``NORMALIZE_LATEX`` is off; ``abstract`` is never touched.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from scrapy.crawler import Crawler
from scrapy.statscollectors import StatsCollector

from crawler import stats_keys as keys
from crawler.items import LectureItem, to_clean
from crawler.schema import TEXT_BLOCK_FIELDS
from crawler.text.boilerplate import own_content_indices
from crawler.text.latex import clean_latex
from crawler.text.normalize import normalize_line
from crawler.text.template import TemplateModel, TemplateParams, prepare_blocks

MODEL_NAME = "boilerplate-model.json"
# Appended to ``extraction`` when ``text`` was rebuilt from the fields rather than found on the page.
TEXT_FROM_FIELDS = "+text_from_fields"
STAT_TEXT_FROM_FIELDS = keys.BOILERPLATE_TEXT_FROM_FIELDS  # the name bench/quality.py reads
logger = logging.getLogger(__name__)


def fields_as_blocks(item: Mapping[str, Any]) -> list[str]:
    """The lecture block as the page should show it, built from the extracted fields alone."""
    parts: list[Any] = []
    for name in TEXT_BLOCK_FIELDS:
        value = item.get(name)
        parts.extend(value or [] if isinstance(value, list | tuple) else [value])
    blocks = [normalize_line(p) for p in parts if isinstance(p, str)]
    return [b for b in blocks if b]


def text_rebuilt_from_fields(extraction: Any) -> str:
    """The ``extraction`` of a record whose ``text`` was rebuilt from its fields."""
    base = str(extraction or "")
    return base if base.endswith(TEXT_FROM_FIELDS) else base + TEXT_FROM_FIELDS


def text_of(blocks: list[str], *, latex: bool) -> str:
    """``text`` from the own blocks: each normalized (and LaTeX-cleaned), joined by a blank line."""
    lines = (normalize_line(b) for b in blocks)
    if latex:
        lines = (clean_latex(line) for line in lines)
    return "\n\n".join(line for line in lines if line)


class BoilerplatePipeline:
    def __init__(
        self,
        stats: StatsCollector,
        *,
        model_path: Path | None = None,
        params: TemplateParams | None = None,
        latex: bool = True,
    ) -> None:
        self.stats = stats
        self.model_path = model_path
        self.params = params or TemplateParams()
        self.model = TemplateModel(self.params)
        self.latex = latex

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BoilerplatePipeline:
        assert crawler.stats is not None
        settings = crawler.settings
        path = settings.get("BOILERPLATE_MODEL_PATH")
        if not path and settings.get("STAGE_STATE_DIR"):
            path = str(Path(settings.get("STAGE_STATE_DIR")) / MODEL_NAME)
        params = TemplateParams(
            min_pages=settings.getint("BOILERPLATE_MIN_PAGES"),
            max_hashes=settings.getint("BOILERPLATE_MAX_HASHES"),
            max_records=settings.getint("BOILERPLATE_MAX_RECORDS"),
        )
        return cls(
            crawler.stats,
            model_path=Path(path) if path else None,
            params=params,
            latex=settings.getbool("NORMALIZE_LATEX"),
        )

    def open_spider(self) -> None:
        if self.model_path is not None:
            self.model = TemplateModel.load(self.model_path, self.params)
            pages = sum(m.pages for m in self.model.sites.values())
            self.stats.set_value(keys.BOILERPLATE_MODEL_PAGES_LOADED, pages)

    def close_spider(self) -> None:
        sizes = self.model.sizes()
        self.stats.set_value(keys.BOILERPLATE_MODEL_PAGES, sum(m.pages for m in self.model.sites.values()))
        self.stats.set_value(keys.BOILERPLATE_MODEL_HASHES, sizes["hashes"])
        if self.model_path is not None:
            try:
                self.model.save(self.model_path)
            except OSError as exc:
                logger.warning("The boilerplate model could not be saved to %s: %s", self.model_path, exc)

    def process_item(self, item: Any) -> Any:
        if not to_clean(item):
            return item
        return self.lecture(item)

    def lecture(self, item: LectureItem) -> LectureItem:
        # The blocks only feed ``text``: they never reach the stage.
        blocks, item.page_blocks = item.page_blocks, []
        site = urlsplit(str(item.url or "")).netloc.lower()
        title, description = item.title, item.abstract
        own: list[str] | None = None
        taught: list[int] | None = None
        # Normalized and hashed once for both layers and the model's learning.
        prepared = prepare_blocks(blocks)
        if item.extraction != "next_data":
            own = self.model.own_blocks(site, blocks, title=title, description=description, prepared=prepared)
            if own is None:
                self.stats.inc_value(keys.BOILERPLATE_GENERAL_NOT_READY)
            else:
                self.stats.inc_value(keys.BOILERPLATE_LAYER_GENERAL)
        record = item.record()
        if own is None:
            indices = own_content_indices(blocks, record, normalized=prepared[0])
            own = [prepared[0][i] for i in indices]
            self.stats.inc_value(keys.BOILERPLATE_LAYER_STRUCTURAL)
            if indices and item.extraction == "next_data":
                # The page's JSON named its own blocks: the model learns them as the record's.
                taught = indices
        self.model.observe(site, blocks, title=title, description=description, own=taught, prepared=prepared)
        if not own:
            # The page showed none of the lecture's fields: fall back to the fields themselves so the
            # record still carries its content, and mark the record and the crawl so that a ``text``
            # not read off the page can never pass for one that was.
            own = fields_as_blocks(record)
            item.extraction = text_rebuilt_from_fields(item.extraction)
            self.stats.inc_value(STAT_TEXT_FROM_FIELDS)
        # Every own block is normalized already (normalizing is idempotent): the LaTeX-cleaned text is
        # compared with the plain one.
        plain = [line for line in own if line]
        cleaned = plain
        if self.latex:
            cleaned = [line for b in plain if (line := clean_latex(b, collapsed=True))]
        item.text = "\n\n".join(cleaned)
        if cleaned != plain:
            self.stats.inc_value(keys.BOILERPLATE_LATEX_CLEANED)
        self.stats.inc_value(keys.BOILERPLATE_BLOCKS_KEPT, len(own))
        self.stats.inc_value(keys.BOILERPLATE_BLOCKS_REMOVED, max(0, len(blocks) - len(own)))
        return item
