"""LaTeX markup and PDF hyphenation in visible text, as authors paste them into abstracts.

Abstracts copied from a paper's source or its PDF carry ``\\textbf{...}``, ``\\url{...}``, inline math
``$\\times$``, user macros such as ``\\method~`` and words split at a line end (``rerank- ing``,
``be- fore``). :func:`clean_latex` rewrites one normalized line into what a reader of the rendered
paper sees. It is applied to a record's ``text`` only; ``abstract`` keeps what the site publishes.

The rules, each written to change nothing in text without such markup:

- a formatting command keeps its argument (``\\textbf{X}`` -> ``X``), ``\\href{url}{X}`` keeps
  ``X``, ``\\url{X}`` keeps ``X``, ``\\footnote{X}`` becomes `` (X)``; citations and labels go;
- symbol commands become their character (``\\times`` -> ``×``, ``\\rho`` -> ``ρ``), escaped
  characters lose their backslash (``\\%`` -> ``%``), abbreviation macros are spelled out
  (``\\eg`` -> ``e.g.``); any other macro keeps its name without the backslash (``\\method`` ->
  ``method``), because that name is the best reading of it there is;
- inline math loses its ``$`` delimiters when the pair encloses no outer space, so prices such as
  ``$5 and $10`` stay; a tie ``~`` between two non-spaces becomes a space, ``--`` between two word
  characters an en dash;
- a word split at a line end (lowercase fragment, ``-``, one space, lowercase fragment) is joined,
  except where the hyphen is real: before ``and``/``or``/... (``open- and closed-source``), before a
  further hyphen (``out- of-domain``), after an acronym or a number (``LLM- based``) and after a
  small set of words that head hyphenated compounds (``in- domain`` -> ``in-domain``).
"""

from __future__ import annotations

import re

# Every round removes at least one command; nesting deeper than this is not written by hand.
_MAX_ROUNDS = 12

DROP = frozenset({"cite", "citep", "citet", "citealp", "citeauthor", "ref", "eqref", "label", "color"})
SYMBOLS: dict[str, str] = {
    "times": "×", "cdot": "·", "pm": "±", "mp": "∓", "div": "÷", "neq": "≠", "ne": "≠",
    "geq": "≥", "ge": "≥", "leq": "≤", "le": "≤", "approx": "≈", "sim": "~", "simeq": "≃",
    "equiv": "≡", "propto": "∝", "infty": "∞", "in": "∈", "notin": "∉", "subset": "⊂",
    "rightarrow": "→", "to": "→", "leftarrow": "←", "leftrightarrow": "↔", "Rightarrow": "⇒",
    "Leftarrow": "⇐", "Leftrightarrow": "⇔", "uparrow": "↑", "downarrow": "↓", "mapsto": "↦",
    "ldots": "…", "dots": "…", "cdots": "⋯", "textasciitilde": "~", "textbackslash": "\\",
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ϵ", "varepsilon": "ε",
    "zeta": "ζ", "eta": "η", "theta": "θ", "iota": "ι", "kappa": "κ", "lambda": "λ", "mu": "μ",
    "nu": "ν", "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "upsilon": "υ",
    "phi": "ϕ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ",
    "Theta": "Θ", "Lambda": "Λ", "Pi": "Π", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
    "checkmark": "✓", "dagger": "†", "ddagger": "‡", "S": "§", "textendash": "–",
    "textemdash": "—", "textquoteright": "’", "textquoteleft": "‘",
}  # fmt: skip
ABBREVIATIONS: dict[str, str] = {
    "eg": "e.g.", "ie": "i.e.", "etal": "et al.", "etc": "etc.", "cf": "cf.", "wrt": "w.r.t.",
    "vs": "vs.", "aka": "a.k.a.", "iid": "i.i.d.",
}  # fmt: skip
# Words after which ``X- Y`` is a suspended hyphen ("open- and closed-source"), never a split word.
SUSPENDED_BEFORE = frozenset({"and", "or", "nor", "to", "vs", "versus", "but", "as", "than", "with", "via"})
# First parts that head hyphenated compounds: a line end after them is most often at the hyphen.
COMPOUND_HEADS = frozenset(
    {
        "in", "out", "self", "non", "cross", "well", "state", "end", "real", "long", "short", "high",
        "low", "fine", "coarse", "open", "closed", "zero", "few", "one", "two", "three", "task",
        "domain", "human", "user", "model", "language", "token", "sentence", "word",
    }
)  # fmt: skip
# Second parts that are word endings: the split is inside a word whatever the first part is.
SUFFIXES = frozenset(
    {
        "ing", "ings", "ed", "er", "ers", "est", "ly", "tion", "tions", "sion", "sions", "ion", "ions",
        "ment", "ments", "ness", "ity", "ities", "ive", "ives", "able", "ible", "al", "ally", "ance",
        "ence", "ous", "ful", "less", "ise", "ize", "ized", "izes", "ization", "es", "s", "ic", "ics",
        "ism", "ist", "ists", "ure", "ures", "age", "ant", "ent", "ents", "ants", "ary", "ory",
    }
)  # fmt: skip

# A command whose brace arguments hold no braces: the innermost ones go first, round after round.
_DROPPED = re.compile(r"[ ~]*\\(?:cite[a-z]*|ref|eqref|autoref|label)\*?(?:\[[^\]]*\])*\{[^{}]*\}")
_COMMAND_WITH_ARGS = re.compile(r"\\([A-Za-z]+)\*?((?:\s*\{[^{}]*\})+)")
_GROUP = re.compile(r"\{([^{}]*)\}")
_COMMAND = re.compile(r"\\([A-Za-z]+)\*?(?:\{\})?")
_ESCAPED = re.compile(r"\\([%&_#${}])")
_SPACING = re.compile(r"\\(?:\\|[ ,;:!])")
_EMPTY_GROUP = re.compile(r"\{\}")
_MATH = re.compile(r"\$(?=\S)([^$\n]{1,300}?)(?<=\S)\$")
_TIE = re.compile(r"(?<=[\w.,;:)}])~(?=\w)")
_EN_DASH = re.compile(r"(?<=\w)--(?=\w)")
_EM_DASH = re.compile(r"(?<=\w)---(?=\w)")
_SPLIT_WORD = re.compile(r"(?<![\w-])((?:[A-Za-z0-9]+-)*[A-Za-z][A-Za-z0-9]*)- ([a-z]+)(?!\w)(-?)")
_LATEX_COMMAND = re.compile(r"\\[A-Za-z]")
_HAS_MARKUP = re.compile(r"[\\$~]|--|\w- [a-z]")


def _may_have_markup(text: str) -> bool:
    """False when :data:`_HAS_MARKUP` cannot match: none of its characters or pairs is in the text.
    Each is one scan of the text, cheaper than the expression's try at every character."""
    return "\\" in text or "$" in text or "~" in text or "--" in text or "- " in text


def _with_args(match: re.Match[str]) -> str:
    name = match[1]
    args = _GROUP.findall(match[2])
    if name in DROP:
        return ""
    if not any(a.strip() for a in args):
        # ``\\Ours{}``: a macro without arguments, the braces only end its name.
        return _bare(match)
    if name == "footnote":
        return f" ({args[-1].strip()})" if args and args[-1].strip() else ""
    if name in SYMBOLS:
        return SYMBOLS[name] + "".join(args)
    # Formatting commands and any unknown command: the last argument is what the reader sees.
    return args[-1] if args else ""


def _bare(match: re.Match[str]) -> str:
    name = match[1]
    if name in SYMBOLS:
        return SYMBOLS[name]
    if name in ABBREVIATIONS:
        return ABBREVIATIONS[name]
    if name in DROP or name in ("footnote", "noindent", "newline", "par", "quad", "qquad", "centering"):
        return " "
    return name


def _split_word(match: re.Match[str]) -> str:
    head, tail, hyphen_after = match[1], match[2], match[3]
    if tail in SUSPENDED_BEFORE:
        return match[0]
    if hyphen_after or not head.isalpha() or any(c.isupper() for c in head[1:]):
        # ``out- of-domain``, ``out-of- domain``, ``LLM- based``: the line ended at a real hyphen.
        return f"{head}-{tail}{hyphen_after}"
    if tail not in SUFFIXES and head.lower() in COMPOUND_HEADS:
        return f"{head}-{tail}"
    return head + tail


def dehyphenate(text: str) -> str:
    """Words split at a line end joined again (see the module's rules); nothing else changes."""
    if "- " not in text:
        return text
    return _SPLIT_WORD.sub(_split_word, text)


def split_words(text: str) -> list[tuple[str, str, str]]:
    """Every split word :func:`dehyphenate` acts on, as (found, rewritten, kind) with kind ``join``
    (one word), ``hyphen`` (a compound, hyphen kept) or ``kept`` (a suspended hyphen, unchanged)."""
    out = []
    for match in _SPLIT_WORD.finditer(text):
        rewritten = _split_word(match)
        if rewritten == match[0]:
            kind = "kept"
        elif "-" in rewritten:
            kind = "hyphen"
        else:
            kind = "join"
        out.append((match[0], rewritten, kind))
    return out


def _one_round(text: str, markup: bool) -> str:
    if "\\" in text:
        text = _DROPPED.sub("", text)
        # Innermost first, until no command with arguments is left: an outer command's argument
        # must not be taken for plain braces by the pass over bare macros below.
        for _ in range(_MAX_ROUNDS):
            reduced = _COMMAND_WITH_ARGS.sub(_with_args, text)
            if reduced == text:
                break
            text = reduced
        text = _SPACING.sub(" ", text)
        text = _ESCAPED.sub(r"\1", text)
        # ``\\method~x`` and ``\\Ours{}`` are macros without arguments.
        text = _COMMAND.sub(_bare, text)
    if "{}" in text:
        text = _EMPTY_GROUP.sub("", text)
    if "$" in text:
        text = _MATH.sub(r"\1", text)
    if markup and "{" in text:
        # Grouping braces (``Icon$^{2}$``); only in text that is LaTeX, braces elsewhere are content.
        text = _GROUP.sub(r"\1", text)
    if "~" in text:
        text = _TIE.sub(" ", text)
    if "--" in text:
        text = _EN_DASH.sub("–", _EM_DASH.sub("—", text))
    return dehyphenate(text)


def clean_latex(text: str, *, collapsed: bool = False) -> str:
    """One line of text as a reader of the typeset paper sees it, whitespace collapsed and stripped.

    Pure and idempotent: ``clean_latex(clean_latex(x)) == clean_latex(x)``. Text without a
    backslash, ``$``, ``~``, ``--`` or a split word is only whitespace-collapsed. ``collapsed``: the
    caller's text is collapsed and stripped already (what :func:`~crawler.text.normalize.normalize_line`
    gives), so it is not collapsed again.
    """
    # Collapsed before anything is looked for: ``rerank-  ing`` is a split word as much as
    # ``rerank- ing``, which the collapsed text (and so a second cleaning) would show.
    if not collapsed:
        text = " ".join(text.split())
    if not _may_have_markup(text) or not _HAS_MARKUP.search(text):
        return text
    markup = bool(_LATEX_COMMAND.search(text) or _MATH.search(text))
    for _ in range(_MAX_ROUNDS):
        cleaned = " ".join(_one_round(text, markup).split())
        if cleaned == text:
            break
        text = cleaned
    return text
