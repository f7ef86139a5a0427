"""The general boilerplate layer: a site's template learned from the pages crawled, no JSON needed.

In the spirit of CCNet's paragraph deduplication, every visible block of a page is normalized and
hashed, and the model counts per site on how many pages each hash was seen. A block seen on at least
``common_pages`` pages or on ``common_share`` of them is common. Common is not yet template: a
lecture's own event name, keywords and presentation type recur on many pages as well. What tells
them apart is where they sit. Each page is anchored on its own record, its title and abstract
(``<title>``/``og:title`` and the meta description, which a page states about itself), and the model
also counts how often a block sat *attached* to that record: between the page's own abstract and
title, or in the run of blocks right after its title, before the first block found on nearly every
page (``strong_share``). Template is then a common block that is mostly seen elsewhere. Where that
run ends is only known from counts over several pages, so a site's first ``min_pages`` pages are
counted again once the site has that many (a second pass, as CCNet hashes a shard before filtering
it). When the structural layer knows a page's own blocks (the page had JSON), the crawl passes them
in and the model counts those as attached instead.

A page's own blocks are its anchored record (abstract ... title), the attached run after the title up
to the first template block or another record's content, and, when the page shows no abstract, the
attached blocks just before the title. Another record's content is recognized by the hashes of every
page's own abstract and title the model has seen: a related lecture's teaser is the own content of
another page. The page's own abstract recurs as a teaser on other pages too, but as an anchor it is
always kept.

Memory is bounded: the hash tables keep the ``max_hashes`` most frequent entries (pruned to half when
full, so the cost is amortized constant per page) and the record hashes are a FIFO of ``max_records``.
The model persists as JSON, written atomically.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crawler.state.fsutil import write_json_atomic
from crawler.text.normalize import normalize_line

MODEL_VERSION = 1
_ELLIPSIS = ("...", "…")


def block_hash(text: str) -> int:
    """64-bit hash of a block's normalized, case-folded text."""
    return _normalized(text)[1]


@functools.lru_cache(maxsize=1 << 16)
def _normalized(text: str) -> tuple[str, int]:
    # Template lines and teasers repeat on many pages: most blocks are seen before.
    norm = normalize_line(text)
    digest = hashlib.blake2b(norm.casefold().encode("utf-8"), digest_size=8).digest()
    return norm, int.from_bytes(digest, "big")


# A page's blocks normalized, and each one's block hash (0 for an empty block).
Prepared = tuple[list[str], list[int]]


def prepare_blocks(blocks: Sequence[str]) -> Prepared:
    """The blocks as the model reads them: normalized (``""`` for what is not text), and hashed. A
    caller that reads a page's blocks in more than one way prepares them once and passes them on."""
    pairs = [_normalized(b) if isinstance(b, str) else ("", 0) for b in blocks]
    return [p[0] for p in pairs], [p[1] if p[0] else 0 for p in pairs]


@dataclass(frozen=True)
class TemplateParams:
    """Thresholds of the model; the defaults are the ones measured in ``bench/quality.py``."""

    min_pages: int = 10  # pages of a site seen before the model judges that site
    common_pages: int = 5  # K: a block on this many pages is common ...
    common_share: float = 0.5  # X: ... and so is one on this share of the pages
    strong_share: float = 0.8  # a block on this share of the pages ends the run after a title
    attached_share: float = 0.5  # a common block attached this often is the record's, not template
    max_gap: int = 3  # blocks allowed between a page's own abstract and its title
    max_tail: int = 12  # blocks after the title that may belong to the record
    max_lead: int = 2  # attached blocks before the title taken when there is no abstract
    max_hashes: int = 200_000  # per site and table
    max_records: int = 400_000  # record hashes per site


@dataclass
class SiteModel:
    pages: int = 0
    df: dict[int, int] = field(default_factory=dict)
    attached: dict[int, int] = field(default_factory=dict)
    records: dict[int, None] = field(default_factory=dict)
    # Pages learned before the site had ``min_pages`` pages: block hashes (0 for an empty block) and
    # where their own record sits.
    pending: list[tuple[tuple[int, ...], Anchors]] = field(default_factory=list)


@dataclass(frozen=True)
class Anchors:
    """Where a page's own record sits among its blocks (indices into the page's blocks). Both are set
    only when they form a pair (at most ``max_gap`` blocks apart)."""

    abstract: int | None
    title: int | None

    @property
    def start(self) -> int | None:
        return min((i for i in (self.abstract, self.title) if i is not None), default=None)

    @property
    def end(self) -> int | None:
        return max((i for i in (self.abstract, self.title) if i is not None), default=None)


def _description_head(description: str) -> str | None:
    """The words a block must start with to be a meta description the site cut short ("First words of
    the abstract ..."); None when the description is not cut short, or too little of it is left."""
    for mark in _ELLIPSIS:
        if description.endswith(mark):
            head = description[: -len(mark)].rstrip()
            return head if len(head) >= 40 else None
    return None


def find_anchors(blocks: Sequence[str], title: str | None, description: str | None, max_gap: int) -> Anchors:
    """The page's own abstract and title among its normalized ``blocks``.

    A pair at most ``max_gap`` blocks apart is looked for: abstract first (a page shows its own record
    as abstract, a few short lines, title), then the closest; without a pair, the first abstract alone,
    else the first title alone.
    """
    want_title = normalize_line(title) if isinstance(title, str) else ""
    want_abstract = normalize_line(description) if isinstance(description, str) else ""
    titles = [i for i, b in enumerate(blocks) if b == want_title] if want_title else []
    # A block is the description whole, or (``head``, found once per page) one the site cut short.
    head = _description_head(want_abstract)
    if not want_abstract:
        abstracts = []
    elif head is None:
        abstracts = [i for i, b in enumerate(blocks) if b == want_abstract]
    else:
        abstracts = [i for i, b in enumerate(blocks) if b == want_abstract or b.startswith(head)]
    title_at = set(titles)
    best: tuple[tuple[int, int, int], int, int] | None = None
    for a in abstracts:
        for t in range(a - max_gap - 1, a + max_gap + 2):
            if t == a or t not in title_at:
                continue
            # Abstract first (as Underline shows it), then the closest pair, then the earliest.
            rank = (0 if a < t else 1, abs(t - a), min(a, t))
            if best is None or rank < best[0]:
                best = (rank, a, t)
    if best is not None:
        return Anchors(best[1], best[2])
    if abstracts:
        return Anchors(abstracts[0], None)
    return Anchors(None, titles[0] if titles else None)


class TemplateModel:
    """Per-site block statistics; :meth:`observe` learns a page, :meth:`own_blocks` judges one."""

    def __init__(self, params: TemplateParams | None = None) -> None:
        self.params = params or TemplateParams()
        self.sites: dict[str, SiteModel] = {}

    # -- judging ------------------------------------------------------------------------------

    def ready(self, site: str) -> bool:
        model = self.sites.get(site)
        return model is not None and model.pages >= self.params.min_pages

    def _common(self, model: SiteModel, h: int) -> bool:
        count = model.df.get(h, 0)
        return count >= self.params.common_pages or count >= self.params.common_share * model.pages

    def _attached(self, model: SiteModel, h: int) -> bool:
        count = model.df.get(h, 0)
        return count > 0 and model.attached.get(h, 0) >= self.params.attached_share * count

    def _strong(self, model: SiteModel, h: int) -> bool:
        return model.df.get(h, 0) >= self.params.strong_share * model.pages

    def is_template(self, site: str, block: str) -> bool:
        """Whether ``block`` is part of the site's template (common and not a record's value)."""
        model = self.sites.get(site)
        if model is None:
            return False
        return self._templated(model, block_hash(block))

    def _templated(self, model: SiteModel, h: int) -> bool:
        """Whether the block hashed ``h`` is the template's: common on the site, and not a record's value."""
        return self._common(model, h) and not self._attached(model, h)

    def own_indices(
        self,
        site: str,
        blocks: Sequence[str],
        *,
        title: str | None,
        description: str | None,
        prepared: Prepared | None = None,
    ) -> list[int] | None:
        """Indices (ascending) of the page's own blocks; None when the model cannot judge the page:
        too few pages of the site seen yet, or neither the title nor the description is shown.
        ``prepared``: the blocks' :func:`prepare_blocks`, when the caller has them."""
        model = self.sites.get(site)
        if model is None or model.pages < self.params.min_pages:
            return None
        norm, hashes = prepared if prepared is not None else prepare_blocks(blocks)
        anchors = find_anchors(norm, title, description, self.params.max_gap)
        start, end = anchors.start, anchors.end
        if start is None or end is None:
            return None
        own = {hashes[i] for i in (anchors.abstract, anchors.title) if i is not None}

        def other_record(i: int) -> bool:
            return hashes[i] in model.records and hashes[i] not in own

        kept = [i for i in range(start, end + 1) if norm[i] and not other_record(i)]
        if anchors.abstract is None:
            lead: list[int] = []
            i = start - 1
            while i >= 0 and len(lead) < self.params.max_lead:
                if norm[i]:
                    if other_record(i) or not self._attached(model, hashes[i]):
                        break
                    lead.append(i)
                i -= 1
            kept = sorted(lead) + kept
        return kept + self._run_after(model, hashes, anchors, self._templated)

    def own_blocks(
        self,
        site: str,
        blocks: Sequence[str],
        *,
        title: str | None,
        description: str | None,
        prepared: Prepared | None = None,
    ) -> list[str] | None:
        """The page's own blocks in page order, each normalized; None when it cannot judge."""
        prepared = prepared if prepared is not None else prepare_blocks(blocks)
        indices = self.own_indices(site, blocks, title=title, description=description, prepared=prepared)
        if indices is None:
            return None
        return [prepared[0][i] for i in indices]

    # -- learning ------------------------------------------------------------------------------

    def observe(
        self,
        site: str,
        blocks: Sequence[str],
        *,
        title: str | None,
        description: str | None,
        own: Sequence[int] | None = None,
        prepared: Prepared | None = None,
    ) -> None:
        """Learn one page: count its blocks, remember its own record, count attached blocks.

        ``own`` (indices into ``blocks``), when another layer knows the page's own blocks, says which
        blocks are attached. Otherwise they are found around the page's anchors; as which blocks end
        the run after a title is only known from page counts over several pages, the first
        ``min_pages`` pages of a site are kept (as hashes) and counted in a second pass once the site
        has that many, every later page at once. ``prepared``: the blocks' :func:`prepare_blocks`, when
        the caller has them.
        """
        model = self.sites.get(site)
        if model is None:  # not setdefault: that would build a model for every page
            model = self.sites[site] = SiteModel()
        norm, hashes = prepared if prepared is not None else prepare_blocks(blocks)
        anchors = find_anchors(norm, title, description, self.params.max_gap)
        for i in (anchors.abstract, anchors.title):
            if i is not None:
                self._remember_record(model, hashes[i])
        model.pages += 1
        for h in {h for h in hashes if h}:
            model.df[h] = model.df.get(h, 0) + 1
        if own is not None:
            anchor_hashes = {hashes[i] for i in (anchors.abstract, anchors.title) if i is not None}
            taught = {hashes[i] for i in own if 0 <= i < len(hashes) and hashes[i]} - anchor_hashes
            self._count_attached(model, taught)
        else:
            model.pending.append((tuple(hashes), anchors))
        if model.pages >= self.params.min_pages and model.pending:
            for earlier, earlier_anchors in model.pending:
                self._count_attached(model, self._attached_on(model, earlier, earlier_anchors))
            model.pending.clear()
        if len(model.df) > self.params.max_hashes:
            self._prune(model)

    @staticmethod
    def _count_attached(model: SiteModel, hashes: Iterable[int]) -> None:
        for h in hashes:
            model.attached[h] = model.attached.get(h, 0) + 1

    def _attached_on(self, model: SiteModel, hashes: Sequence[int], anchors: Anchors) -> set[int]:
        """Blocks of a page that sat with its record: between its abstract and title, and the run
        after its title up to a block on nearly every page, another record, or ``max_tail`` blocks."""
        a, t = anchors.abstract, anchors.title
        attached: set[int] = set()
        if a is not None and t is not None:
            attached.update(h for h in hashes[min(a, t) + 1 : max(a, t)] if h)
        if t is None:
            return attached
        # The bound of the run is decided by page counts alone, never by the attachment being learned
        # here, so that what is learned cannot feed on itself.
        return attached | {hashes[i] for i in self._run_after(model, hashes, anchors, self._strong)}

    def _run_after(
        self,
        model: SiteModel,
        hashes: Sequence[int],
        anchors: Anchors,
        ends: Callable[[SiteModel, int], bool],
    ) -> list[int]:
        """Indices of the run of blocks after a page's record: at most ``max_tail`` non-empty blocks, up
        to one ``ends`` says ends it or another record's own."""
        own = {hashes[i] for i in (anchors.abstract, anchors.title) if i is not None}
        run: list[int] = []
        for i in range(anchors.end + 1 if anchors.end is not None else len(hashes), len(hashes)):
            h = hashes[i]
            if not h:
                continue
            if len(run) >= self.params.max_tail or ends(model, h) or (h in model.records and h not in own):
                break
            run.append(i)
        return run

    def _remember_record(self, model: SiteModel, h: int) -> None:
        model.records.pop(h, None)
        model.records[h] = None
        while len(model.records) > self.params.max_records:
            model.records.pop(next(iter(model.records)))

    def _prune(self, model: SiteModel) -> None:
        keep = self.params.max_hashes // 2
        top = sorted(model.df.items(), key=lambda kv: kv[1], reverse=True)[:keep]
        model.df = dict(top)
        model.attached = {h: c for h, c in model.attached.items() if h in model.df}

    # -- persistence ---------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The model as ``boilerplate-model.json`` holds it: block hashes as 16 hex digits."""
        return {
            "version": MODEL_VERSION,
            "sites": {
                site: {
                    "pages": m.pages,
                    "df": {f"{h:016x}": c for h, c in m.df.items()},
                    "attached": {f"{h:016x}": c for h, c in m.attached.items()},
                    "records": [f"{h:016x}" for h in m.records],
                    "pending": [
                        {"hashes": [f"{h:016x}" for h in hashes], "abstract": a.abstract, "title": a.title}
                        for hashes, a in m.pending
                    ],
                }
                for site, m in sorted(self.sites.items())
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], params: TemplateParams | None = None) -> TemplateModel:
        """The model :meth:`to_json` wrote; raises ValueError for anything else."""
        if not isinstance(data, Mapping) or data.get("version") != MODEL_VERSION:
            raise ValueError("not a boilerplate model of this version")
        model = cls(params)
        sites = data.get("sites")
        if not isinstance(sites, Mapping):
            raise ValueError("the model has no sites")
        try:
            for site, raw in sites.items():
                model.sites[str(site)] = SiteModel(
                    pages=int(raw["pages"]),
                    df={int(h, 16): int(c) for h, c in raw["df"].items()},
                    attached={int(h, 16): int(c) for h, c in raw["attached"].items()},
                    records=dict.fromkeys(int(h, 16) for h in raw["records"]),
                    pending=[
                        (
                            tuple(int(h, 16) for h in p["hashes"]),
                            Anchors(_index(p.get("abstract")), _index(p.get("title"))),
                        )
                        for p in raw.get("pending", [])
                    ],
                )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"malformed boilerplate model: {exc}") from exc
        for site_model in model.sites.values():
            if len(site_model.df) > model.params.max_hashes:
                model._prune(site_model)
            while len(site_model.records) > model.params.max_records:
                site_model.records.pop(next(iter(site_model.records)))
        return model

    def save(self, path: Path) -> Path:
        """Write the model to ``path`` atomically (a temporary file beside it, then a rename)."""
        return write_json_atomic(Path(path), self.to_json(), indent=None)

    @classmethod
    def load(cls, path: Path, params: TemplateParams | None = None) -> TemplateModel:
        """The model saved at ``path``; a new, empty one when there is none or it is unreadable."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            return cls.from_json(data, params)
        except (OSError, ValueError):
            return cls(params)

    def sizes(self) -> dict[str, int]:
        """Entries held, for the crawl's statistics."""
        return {
            "sites": len(self.sites),
            "hashes": sum(len(m.df) + len(m.attached) for m in self.sites.values()),
            "records": sum(len(m.records) for m in self.sites.values()),
        }


def _index(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ValueError(f"not a block position: {value!r}")
