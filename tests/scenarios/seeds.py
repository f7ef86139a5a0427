"""The boilerplate of the real lecture pages in the seed texts: what no record's ``text`` may hold."""

from __future__ import annotations

from pathlib import Path

INTERFACE_LABELS = ("Premium content", "Downloads", "Similar lecture")
FOOTER_LINES = (
    "Stay up to date with the latest Underline news!",
    "PRESENTATIONS",
    "CONFERENCES",
    "COMPANY",
    "RESOURCES",
)
# Lines of the lecture block that a seed shows among its welcome texts.
_PRESENTATION_TYPES = frozenset({"poster", "technical paper"})


def seed_boilerplate_lines(seed_dir: Path) -> list[str]:
    """Parts 3 to 6 of the seed pages: welcome markdown, interface labels and footer lines."""
    lines: set[str] = set()
    for seed in sorted(Path(seed_dir).glob("*.txt")):
        text = seed.read_text(encoding="utf-8").splitlines()
        start = next(i for i, line in enumerate(text) if line.startswith("## Welcome"))
        for line in text[start:]:
            stripped = line.strip()
            # The first related lecture's abstract ends the welcome part; the welcome's own long
            # paragraph is the chair's quote.
            if len(stripped) > 250 and not stripped.startswith('"'):
                break
            if stripped and stripped not in _PRESENTATION_TYPES:
                lines.add(stripped)
        known = (*INTERFACE_LABELS, *FOOTER_LINES)
        lines.update(line.strip() for line in text if line.strip() in known or line.startswith("Next from"))
    return sorted(lines)
