"""The name of the rules personal data is found with, in every text the project keeps.

:data:`PRIVACY_RULE` is a digest of the source of the modules that decide what is removed from a text
(written addresses, spoken and spelled ones, phone numbers, and how a text is scrubbed with them). What
was redacted under other rules is redacted again: a staged track's line and a release's manifest name
the rules their transcripts were redacted under, and later texts can keep it beside theirs too.

The sources are read as files, not imported: every module of the package may name the rules.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

# The modules whose rules decide what a text keeps, in the order they are read into the digest.
RULE_MODULES = ("emails.py", "phones.py", "spoken.py", "shape.py", "scrub.py")


def rule_digest(modules: tuple[str, ...] = RULE_MODULES) -> str:
    """The digest of the rules: the source of ``modules`` (files of this package), in order."""
    digest = hashlib.sha256()
    here = Path(__file__).parent
    for name in modules:
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:16]


PRIVACY_RULE = rule_digest()
