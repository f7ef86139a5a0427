"""MkDocs hook (``hooks:`` in ``mkdocs.yml``): every page's ``<!-- columns: NAME -->`` markers become the
tables the schema declares (:mod:`docsgen.columns`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # MkDocs loads this file by its path

from docsgen.columns import render_page


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return render_page(markdown)
