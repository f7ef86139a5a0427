"""The dataset card: derived metadata, escaping of scraped text, statistics, snippets, maintainer sections."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from datasets.utils.metadata import _split_yaml_from_readme
from huggingface_hub import DatasetCard

from crawler import schema
from crawler.publish import card as cards
from crawler.publish import changes as change_files
from crawler.publish.card_metadata import size_category
from crawler.publish.card_statistics import escape_text
from crawler.publish.diff import diff_releases
from crawler.publish.lint import split_front_matter
from crawler.publish.release import publish_release
from crawler.publish.tables import LECTURES, SPECS
from tests.test_publish_parquet import NASTY_TITLES, PROVENANCE, SESSIONS_BY_ID, make_record, make_records


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("card") / "release"
    publish_release(
        make_records(), out, name="emnlp-2025", provenance={**PROVENANCE, "repo_id": "acl-archive/emnlp-2025"}
    )
    return out


@pytest.fixture(scope="module")
def text(release: Path) -> str:
    return (release / "README.md").read_text(encoding="utf-8")


def meta_and_body(text: str) -> tuple[dict[str, Any], str]:
    parts = split_front_matter(text)
    assert parts is not None
    return yaml.safe_load(parts[0]), parts[1]


def test_metadata_is_derived_from_schema_and_files(text: str) -> None:
    from datasets import Features

    meta, _ = meta_and_body(text)
    assert list(meta) == [
        "annotations_creators",
        "language_creators",
        "language",
        "license",
        "multilinguality",
        "size_categories",
        "source_datasets",
        "task_categories",
        "task_ids",
        "pretty_name",
        "license_name",
        "license_details",
        "tags",
        "configs",
        "dataset_info",
    ]
    assert meta["language"] == ["en"]
    assert meta["license"] == "other"
    assert meta["license_name"] == "mixed-rights-compilation"
    assert "remain the copyright of their authors and publishers" in meta["license_details"]
    assert meta["size_categories"] == ["n<1K"]
    assert meta["task_categories"] == ["text-retrieval", "text-classification"]
    assert meta["pretty_name"] == "EMNLP 2024, EMNLP 2025 lectures on Underline"
    assert meta["configs"] == [
        {"config_name": "changes", "data_files": [{"split": "train", "path": "changes/*.parquet"}]},
        {
            "config_name": "emnlp-2024",
            "data_files": [
                {"split": "train", "path": ["data/lectures/event-469/train-00000-of-00001.parquet"]}
            ],
        },
        {
            "config_name": "emnlp-2025",
            "data_files": [
                {"split": "train", "path": ["data/lectures/event-502/train-00000-of-00001.parquet"]}
            ],
        },
        {"config_name": "events", "data_files": [{"split": "train", "path": "data/events/train-*.parquet"}]},
        {
            "config_name": "lectures",
            "data_files": [{"split": "train", "path": "data/lectures/*/train-*.parquet"}],
            "default": True,
        },
        {
            "config_name": "sessions",
            "data_files": [{"split": "train", "path": "data/sessions/train-*.parquet"}],
        },
    ]
    infos = {info["config_name"]: info for info in meta["dataset_info"]}
    # No record of this release lists authors: the empty `authors` table is not a config.
    assert sorted(infos) == ["changes", "emnlp-2024", "emnlp-2025", "events", "lectures", "sessions"]
    # A first release's change file lists every lecture as added.
    assert infos["changes"]["splits"][0]["num_examples"] == 12
    assert Features._from_yaml_list(infos["changes"]["features"]) == Features.from_arrow_schema(
        change_files.arrow_schema()
    )
    for spec in SPECS:
        if spec.name != "authors":
            assert Features._from_yaml_list(infos[spec.name]["features"]) == spec.features(), f"{spec=}"
    for event_config in ("emnlp-2024", "emnlp-2025"):
        assert Features._from_yaml_list(infos[event_config]["features"]) == LECTURES.features(), (
            f"{event_config=}"
        )
    assert infos["lectures"]["splits"][0]["num_examples"] == 12
    assert infos["emnlp-2024"]["splits"][0]["num_examples"] == 1
    assert infos["emnlp-2025"]["splits"][0]["num_examples"] == 11
    assert infos["events"]["splits"][0]["num_examples"] == 2
    assert infos["sessions"]["splits"][0]["num_examples"] == 3


def test_front_matter_is_read_the_same_by_every_parser(text: str) -> None:
    parts = split_front_matter(text)
    assert parts is not None
    assert _split_yaml_from_readme(text)[0] == parts[0].rstrip("\n")
    assert DatasetCard(text).data.get("license") == "other"
    assert text.startswith("---\nannotations_creators:\n")


def test_scraped_text_stays_out_of_the_yaml(text: str) -> None:
    parts = split_front_matter(text)
    assert parts is not None
    front = parts[0]
    for scraped in [*NASTY_TITLES, *SESSIONS_BY_ID.values(), "LLM|agents", "<b>evaluation</b>"]:
        assert scraped not in front, f"{scraped=}"


def test_nasty_titles_render_as_text(text: str) -> None:
    _, body = meta_and_body(text)
    assert "<script>" not in body and "&lt;script&gt;alert('x')&lt;/script&gt; \\| A \\| B \\|" in body
    assert "\\{\\{ card\\_data \\}\\} \\{% raw %\\} Templating in a Title" in body
    assert "&lt;\\!-- maintainer:start notes --&gt; Forged Marker" in body
    assert (
        "\\*Bold\\* \\_claims\\_ \\[link\\](javascript:alert(1)) \\# not a heading \\`code\\` \\$x^2\\$"
        in body
    )
    assert "| --- license: mit --- |" in body
    assert set(cards.maintainer_sections(text)) == {"intro", "notes"}
    assert "<b>" not in body


def table_blocks(body: str) -> list[list[str]]:
    blocks: list[list[str]] = []
    current: list[str] = []
    in_code = False
    for line in body.splitlines():
        in_code ^= line.startswith("```")
        if line.startswith("|") and not in_code:
            current.append(line)
        elif current:
            blocks.append(current)
            current = []
    return blocks + ([current] if current else [])


def test_every_table_row_has_its_header_s_cells(text: str) -> None:
    _, body = meta_and_body(text)
    blocks = table_blocks(body)
    # 13 tables before the per-event sections: + the event configs table, two per-event tables.
    assert len(blocks) == 16
    for block in blocks:
        widths = {len(re.findall(r"(?<!\\)\|", line)) for line in block}
        assert len(widths) == 1, block


def test_statistics_sections(text: str) -> None:
    _, body = meta_and_body(text)
    assert "| poster | 7 | 58.3% |\n| oral | 3 | 25.0% |\n| (none) | 2 | 16.7% |" in body
    assert (
        "| Oral: Dialogue \\| Interactive Systems | 9001 | 3 |\n"
        "| Poster Session 3 --- Machine Translation | 9002 | 3 |\n"
        "| &lt;b&gt;Industry&lt;/b&gt; Track | 9003 | 3 |"
    ) in body
    assert "Lectures without a session: 3." in body
    assert (
        "| dialogue | 6 |\n| &lt;b&gt;evaluation&lt;/b&gt; | 3 |\n"
        "| LLM\\|agents | 3 |\n| machine translation | 3 |"
    ) in body
    lengths = sorted(len(make_record(i)["abstract"]) for i in range(12))
    median = (lengths[5] + lengths[6]) / 2
    shown = str(int(median)) if median.is_integer() else f"{median:.1f}"
    assert f"| {lengths[0]} | {shown} | {lengths[-1]} |" in body
    assert "| 502 | EMNLP 2025 | 11 | 11 | 0 | 2025-11-05 | 2025-11-07 |" in body
    assert "| Lectures | 12 |" in body and "| Premium lectures | 3 |" in body
    assert "authors, transcripts) that look like an e-mail address in this release:\n0." in body


def test_field_tables_list_every_schema_field(text: str) -> None:
    _, body = meta_and_body(text)
    for f in schema.FIELDS:
        assert f"| `{f.name}` | " in body, f"{f=}"
    assert "| `source_urls` | `list<string>` | no | Every URL" in body
    assert "| `held_at` | `timestamp[us, tz=UTC]` | yes | When the lecture is held (UTC). |" in body
    assert "| `presentation_types` | `list<string>` | no | Distinct presentation types" in body


def test_provenance_and_citation(text: str) -> None:
    _, body = meta_and_body(text)
    assert "Crawled on 2025-11-12 from https://underline.io by eventcrawl 0.1.0." in body
    assert "| DOWNLOAD\\_DELAY | 1.0 |" in body
    assert "| USER\\_AGENT | eventcrawl/0.1.0 |" in body
    assert "This is the first release." in body
    assert "@misc{emnlp-2025_2025-11-12," in body
    assert "howpublished = {\\url{https://huggingface.co/datasets/acl-archive/emnlp-2025}}," in body


def code_blocks(body: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", body, re.DOTALL)


def local(snippet: str, release: Path) -> str:
    return snippet.replace("hf://datasets/acl-archive/emnlp-2025/", f"{release}/")


def test_pandas_snippet_paths_are_the_files(release: Path, text: str) -> None:
    _, body = meta_and_body(text)
    pandas_block = next(b for b in code_blocks(body, "python") if "import pandas" in b)
    namespace: dict[str, Any] = {}
    exec(local(pandas_block, release), namespace)
    assert len(namespace["lectures"]) == 12
    assert sorted(namespace["lectures"]["lecture_id"]) == [str(130100 + i) for i in range(12)]


def test_duckdb_snippet_runs(release: Path, text: str) -> None:
    duckdb = pytest.importorskip("duckdb")
    _, body = meta_and_body(text)
    (sql,) = code_blocks(body, "sql")
    rows = duckdb.sql(local(sql, release)).fetchall()
    assert rows == [("poster", 7), ("oral", 3), (None, 2)]


def test_polars_snippet_runs(release: Path, text: str) -> None:
    pytest.importorskip("polars")
    _, body = meta_and_body(text)
    block = next(b for b in code_blocks(body, "python") if "import polars" in b)
    namespace: dict[str, Any] = {}
    exec(local(block, release), namespace)
    assert namespace["lectures"].height == 12
    assert namespace["sessions"]["session_id"].to_list() == ["9001", "9002", "9003"]


def test_datasets_snippet_names_the_configs(text: str) -> None:
    _, body = meta_and_body(text)
    block = code_blocks(body, "python")[0]
    assert 'load_dataset("acl-archive/emnlp-2025", split="train")' in block
    assert 'load_dataset("acl-archive/emnlp-2025", "events", split="train")' in block


def test_escape_text() -> None:
    assert escape_text("a | b <i>x</i>\n---\n`c` & d") == "a \\| b &lt;i&gt;x&lt;/i&gt; --- \\`c\\` &amp; d"
    assert escape_text("  two\u2028lines\x00 ") == "two lines"
    assert escape_text("Ünïcödé — 日本語") == "Ünïcödé — 日本語"
    assert escape_text(None) == "(none)"
    assert escape_text("   ", empty="-") == "-"
    assert escape_text("abcdefghij", limit=5) == "abcd…"
    assert escape_text("{{ x }} $y$ #z") == "\\{\\{ x \\}\\} \\$y\\$ \\#z"


@pytest.mark.parametrize(
    ("rows", "label"),
    [(0, "n<1K"), (999, "n<1K"), (1_000, "1K<n<10K"), (9_999, "1K<n<10K"), (10_000, "10K<n<100K"),
     (250_000, "100K<n<1M"), (1_000_000, "1M<n<10M"), (10**13, "n>1T")],
)  # fmt: skip
def test_size_category(rows: int, label: str) -> None:
    assert size_category(rows) == label


def lectures_with_hashes(hashes: dict[str, str]) -> list[schema.Lecture]:
    return [schema.Lecture.from_json({"lecture_id": i, "content_sha256": sha}) for i, sha in hashes.items()]


def test_diff_lectures() -> None:
    previous = lectures_with_hashes({"1": "a", "2": "b", "3": "c"})
    current = lectures_with_hashes({"2": "b", "3": "x", "4": "d", "5": "e"})
    assert cards.release_changes(diff_releases(previous, current).summary(), "2025-11-01") == {
        "previous_version": "2025-11-01",
        "added": 2,
        "changed": 1,
        "removed": 1,
    }
    assert cards.release_changes(diff_releases([], current).summary(), None) == {
        "previous_version": None,
        "added": 4,
        "changed": 0,
        "removed": 0,
    }


def test_merge_maintainer_sections() -> None:
    new = "# T\n<!-- maintainer:start intro -->\n<!-- maintainer:end intro -->\nbody\n"
    old = (
        "<!-- maintainer:start intro -->\nHand-written $1 \\g<0> intro.\n<!-- maintainer:end intro -->\n"
        "<!-- maintainer:start gone -->\nKept.\n<!-- maintainer:end gone -->\n"
    )
    merged = cards.merge_maintainer_sections(new, cards.maintainer_sections(old))
    assert merged == (
        "# T\n<!-- maintainer:start intro -->\nHand-written $1 \\g<0> intro.\n"
        "<!-- maintainer:end intro -->\nbody"
        "\n\n<!-- maintainer:start gone -->\nKept.\n<!-- maintainer:end gone -->\n"
    )
    assert cards.merge_maintainer_sections(new, {}) == new


def test_card_counts_match_the_parquet(release: Path, text: str) -> None:
    meta, _ = meta_and_body(text)
    infos = {info["config_name"]: info for info in meta["dataset_info"]}
    layout = {"lectures": "data/lectures/*/*.parquet", "emnlp-2024": "data/lectures/event-469/*.parquet"}
    layout["emnlp-2025"] = "data/lectures/event-502/*.parquet"
    layout["changes"] = "changes/*.parquet"
    for name, info in infos.items():
        paths = sorted(release.glob(layout.get(name, f"data/{name}/*.parquet")))
        assert paths, f"case {name}"
        assert info["download_size"] == sum(p.stat().st_size for p in paths), f"case {name}"
        rows = sum(pq.read_metadata(p).num_rows for p in paths)
        assert info["splits"][0]["num_examples"] == rows, f"case {name}"


def test_every_name_the_card_defines_renders_and_no_other_does(tmp_path: Path) -> None:
    from crawler.publish.card import CardTemplateError, template_names

    defined = sorted(template_names() - {"range", "dict", "lipsum", "cycler", "joiner", "namespace"})
    template = tmp_path / "every.md"
    template.write_text(
        "---\n{{ card_data }}\n---\n" + "".join(f"- {name} = {{{{ {name} }}}}\n" for name in defined),
        encoding="utf-8",
    )
    publish_release(
        make_records(), tmp_path / "release", name="emnlp-2025", provenance=PROVENANCE, template=template
    )
    card = (tmp_path / "release" / "README.md").read_text(encoding="utf-8")
    assert "\n- email_like = 0\n" in card
    # Names a maintainer's template may have used since the first release keep rendering.
    assert "\n- name = emnlp-2025\n" in card and "\n- change_files = ['changes/" in card
    assert "'download_size': " in card.split("\n- configs = ", 1)[1].split("\n", 1)[0]
    assert "\n- license_name = " in card and "\n- task_ids = ['document-retrieval'" in card
    for body, says in [
        ("{{ stats.no_such_field }}", "'dict object' has no attribute 'no_such_field' (line 4)"),
        ("{% for e in events %}{{ e.nope }}{% endfor %}", "'dict object' has no attribute 'nope' (line 4)"),
    ]:
        bad = tmp_path / "bad.md"
        bad.write_text(f"---\n{{{{ card_data }}}}\n---\n{body}\n", encoding="utf-8")
        with pytest.raises(CardTemplateError) as raised:
            publish_release(
                make_records(), tmp_path / "other", name="emnlp-2025", provenance=PROVENANCE, template=bad
            )
        assert (
            str(raised.value) == f"card template {str(bad)!r} uses what the card does not define: {says}"
        ), f"case {body}"
        assert not (tmp_path / "other").exists(), f"case {body}"


def test_a_table_left_out_while_empty_is_counted_as_0(tmp_path: Path) -> None:
    records = [make_record(i, session_id=None, session_name=None) for i in range(1, 4)]
    publish_release(records, tmp_path / "release", name="emnlp-2025", provenance=PROVENANCE)
    card = (tmp_path / "release" / "README.md").read_text(encoding="utf-8")
    # The release's summary table: before, an empty cell.
    assert "| Lectures | 3 |\n| Events | 1 |\n| Sessions | 0 |\n" in card
