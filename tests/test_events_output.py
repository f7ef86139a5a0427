"""What `eventcrawl events` prints and keeps of text the site sent: nothing a terminal obeys, no personal
data. The cleaning's rules, on :mod:`crawler.sitetools.safe_text`'s functions.
"""

from __future__ import annotations

import pytest

from crawler.sitetools.safe_text import kept_text, terminal_text

# -- the rules, on the functions themselves ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown", "kept"),
    [
        # C0 and C1 controls but the space; whitespace controls are kept as a space.
        ("a\x00b\x07c\x08d\x7fe", r"a\x00b\x07c\x08d\x7fe", "abcde"),
        ("a\x80b\x90c\x9fd", r"a\x80b\x90c\x9fd", "abcd"),
        ("tab\there\nand\rthere", r"tab\there\nand\rthere", "tab here and there"),
        ("line\u2028para\u2029end", r"line\u2028para\u2029end", "line para end"),
        # Bidirectional embeddings, overrides, isolates and marks.
        ("\u202aa\u202bb\u202cc\u202dd\u202ee", r"\u202aa\u202bb\u202cc\u202dd\u202ee", "abcde"),
        ("\u2066a\u2067b\u2068c\u2069d", r"\u2066a\u2067b\u2068c\u2069d", "abcd"),
        ("a\u200eb\u200fc\u061cd", r"a\u200eb\u200fc\u061cd", "abcd"),
        # Zero-width characters, the byte order mark, the soft hyphen, a tag character.
        ("a\u200bb\u200cc\u200dd\u2060e\ufefff", r"a\u200bb\u200cc\u200dd\u2060e\ufefff", "abcdef"),
        ("soft\u00adhyphen\U000e0041", r"soft\xadhyphen\U000e0041", "softhyphen"),
        # Escape sequences: shown with their ESC escaped, kept out whole.
        ("\x1b[1;31mred\x1b[0m", r"\x1b[1;31mred\x1b[0m", "red"),
        ("\x1b]0;title\x07name", r"\x1b]0;title\x07name", "name"),
        ("\x1b]8;;https://x.example/\x1b\\link", r"\x1b]8;;https://x.example/\x1b\link", "link"),
        ("\x1bcreset \x9b2Jclear", r"\x1bcreset \x9b2Jclear", "reset clear"),
        ("ends\x1b", r"ends\x1b", "ends"),
        # A lone surrogate cannot even be written to a terminal.
        ("a\ud800b", r"a\ud800b", "ab"),
        # Text with none of these is left as it is.
        ("Ångström 2025 — ACL/EMNLP (中国) C\\C++", "Ångström 2025 — ACL/EMNLP (中国) C\\C++", None),
    ],
)
def test_every_unsafe_character_is_escaped_to_show_and_removed_to_keep(
    text: str, shown: str, kept: str | None
) -> None:
    assert (terminal_text(text), kept_text(text)) == (shown, text if kept is None else kept)


@pytest.mark.parametrize(
    ("text", "shown", "kept"),
    [
        ("mail jane.doe@example.com now", "mail [email removed] now", "mail [email removed] now"),
        ("ask jane dot doe at example dot com", "ask [email removed]", "ask [email removed]"),
        ("call +44 20 7946 0958 today", "call [phone removed] today", "call [phone removed] today"),
        # A character hidden inside an address does not keep it; one just before it is still shown.
        (
            "\u202ejane\u200b dot doe at exa\u2060mple dot com\u202c!",
            r"\u202e[email removed]\u202c!",
            "[email removed]!",
        ),
        ("\x1b[31mjane.doe\x1b[0m@example.com", r"\x1b[31m[email removed]", "[email removed]"),
    ],
)
def test_personal_data_is_replaced_in_both(text: str, shown: str, kept: str) -> None:
    assert (terminal_text(text), kept_text(text)) == (shown, kept)
