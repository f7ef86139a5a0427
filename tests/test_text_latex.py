from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from crawler.text.latex import clean_latex, dehyphenate, split_words
from crawler.text.normalize import normalize_line

SEED_002 = Path(__file__).resolve().parent / "fixtures" / "seeds" / "002_5b976539fca03faf.txt"


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        (r"we introduce \textbf{OpenRLHF}, a framework", "we introduce OpenRLHF, a framework"),
        (
            r"\textbf{H}armful \textbf{P}rompt \textbf{La}undering (HaPLa)",
            "Harmful Prompt Laundering (HaPLa)",
        ),
        (r"triggering a \textit{buy-now} in web shopping", "triggering a buy-now in web shopping"),
        (r"available at \url{https://github.com/a/b}.", "available at https://github.com/a/b."),
        (r"here: \href{https://x.org/d}{DIWALI}, and", "here: DIWALI, and"),
        (
            r"webpage\footnote{\href{https://n.io/p/}{https://n.io/p/}}, and",
            "webpage (https://n.io/p/), and",
        ),
        (r"alignment \citep{ryan-2024, k-2024} and \cite{n}.", "alignment and."),
        (r"LLM$\times$MapReduce-V3 and 2.68$\times$ faster", "LLM×MapReduce-V3 and 2.68× faster"),
        (r"Spearman $\rho = 0.161$, Kendall $\tau = 0.123$", "Spearman ρ = 0.161, Kendall τ = 0.123"),
        (r"$\geq 90\%$ purity, $\sim$8k concepts", "≥ 90% purity, ~8k concepts"),
        (r"named Icon$^{2}$. The $F_1$ score", "named Icon^2. The F_1 score"),
        (r"J\text{I}^2S selects", "JI^2S selects"),
        (
            r"our \method~consistently beats \method{} and \Ours{}",
            "our method consistently beats method and Ours",
        ),
        (r"translation (\eg, from use by actors)", "translation (e.g., from use by actors)"),
        (r"Code\ \&\ Data available", "Code & Data available"),
        (r"De--En and Ja$\leftrightarrow$En", "De–En and Ja↔En"),
        (r"\textcolor{red}{Disclaimer: sensitive.}", "Disclaimer: sensitive."),
        (r"\textbf{\textit{nested}} words", "nested words"),
        ("available at~https://github.com/x", "available at https://github.com/x"),
    ],
)
def test_latex_markup(raw: str, clean: str) -> None:
    assert clean_latex(raw) == clean


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("a listwise reasoning rerank- ing agent", "a listwise reasoning reranking agent"),
        ("REARANK explicitly reasons be- fore reranking", "REARANK explicitly reasons before reranking"),
        ("on both in- domain and out-of-domain data", "on both in-domain and out-of-domain data"),
        ("both open- and closed-source models", "both open- and closed-source models"),
        ("single- or multi-turn", "single- or multi-turn"),
        ("US- and EU-based", "US- and EU-based"),
        ("an LLM- based judge", "an LLM-based judge"),
        ("out- of-domain and out-of- distribution", "out-of-domain and out-of-distribution"),
        ("self- attention and open- ing", "self-attention and opening"),
        ("a range 3 - 5 and x - y", "a range 3 - 5 and x - y"),
        ("GPT- 4o", "GPT- 4o"),
    ],
)
def test_pdf_hyphenation(raw: str, clean: str) -> None:
    assert clean_latex(raw) == clean
    assert dehyphenate(raw) == clean


def test_a_split_word_with_more_than_one_space_is_joined_at_once() -> None:
    # Whitespace is collapsed first; a second cleaning of the result finds nothing left to do.
    assert clean_latex("reasoning rerank-  ing\n agent") == "reasoning reranking agent"


def test_split_words_reports_each_decision() -> None:
    text = "rerank- ing in- domain open- and"
    assert split_words(text) == [
        ("rerank- ing", "reranking", "join"),
        ("in- domain", "in-domain", "hyphen"),
        ("open- and", "open- and", "kept"),
    ]


def test_seed_002_abstract() -> None:
    lines = SEED_002.read_text(encoding="utf-8").splitlines()
    abstract = normalize_line(lines[2])
    assert abstract.startswith("We present REARANK")
    clean = clean_latex(abstract)
    for fragment in ("rerank- ing", "be- fore", "informa- tion", "in- domain", "under- score", "en- hance"):
        assert fragment not in clean, f"{fragment=}"
    assert "reranking agent. REARANK explicitly reasons before reranking" in clean
    assert "popular information retrieval benchmarks" in clean
    assert "on both in-domain and out-of-domain benchmarks" in clean
    assert "These results underscore the effectiveness" in clean
    assert "reinforcement learning can enhance LLM reasoning" in clean


def test_text_without_markup_is_only_collapsed() -> None:
    text = "Plain  text, with a price of $5 and $10 (~8k items), a 3-way split -- and {braces}."
    assert clean_latex(text) == " ".join(text.split())
    assert clean_latex("") == ""


markup = st.sampled_from(
    [
        "\\textbf{",
        "\\url{",
        "\\href{a}{",
        "}",
        "{",
        "$",
        "~",
        "--",
        "\\",
        "\\times",
        "\\method",
        "- ",
        "ing",
        "and",
        " ",
        "a",
        "X",
        "%",
        "\\%",
        "^{2}",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(markup, st.text(max_size=4)), max_size=20).map("".join))
@example("ing-  a")
def test_clean_latex_is_idempotent_and_collapsed(text: str) -> None:
    once = clean_latex(text)
    assert clean_latex(once) == once
    assert once == " ".join(once.split())


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="\\$~-{}"), max_size=60))
def test_text_without_special_characters_is_unchanged(text: str) -> None:
    assert clean_latex(text) == " ".join(text.split())


@pytest.mark.parametrize(
    ("text", "clean"),
    [
        ("a \\textbf{b} c", "a b c"),  # a backslash
        ("costs $x$ here", "costs x here"),  # a dollar
        ("a~b", "a b"),  # a tie
        ("pages 3--5", "pages 3–5"),  # two hyphens
        ("rerank- ing", "reranking"),  # a hyphen and a space
        ("rerank-\t\ting", "reranking"),  # the same once collapsed
        ("a - b and c- D", "a - b and c- D"),  # a hyphen and a space that split no word
    ],
)
def test_each_mark_of_markup_sends_the_text_to_the_rules(text: str, clean: str) -> None:
    # Text holding none of these marks is only collapsed, without trying the rules' expressions.
    assert clean_latex(text) == clean, f"case {text!r}"


@pytest.mark.parametrize(
    "text",
    ["plain words", "rerank- ing and \\textbf{bold}", "a~b costs $x$", "pages 3--5 and \\url{x}", ""],
)
def test_a_collapsed_line_is_cleaned_as_any_other(text: str) -> None:
    assert clean_latex(text, collapsed=True) == clean_latex(text), f"case {text!r}"


def test_a_line_said_to_be_collapsed_is_not_collapsed_again() -> None:
    assert clean_latex("  two  spaces ", collapsed=True) == "  two  spaces "
    assert clean_latex("  two  spaces ") == "two spaces"
