from __future__ import annotations

from pathlib import Path

import pytest

from crawler.schedule.config import ConfigError, RunConfig, load_config
from crawler.schedule.gate import GateThresholds


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "eventcrawl.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_a_file() -> None:
    assert load_config(None) == RunConfig()


def test_a_full_file_is_read_and_flags_override_it(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            """
[crawl]
event_id = 469
state = "/var/lib/eventcrawl"
[crawl.settings]
DOWNLOAD_DELAY = 2.0
[publish]
out = "exports/emnlp-2024"
push_to_hub = "org/emnlp-2024"
private = true
revision = ""
[gate]
max_drop = 0.2
min_items = 500
""",
        )
    )
    assert config.event_id == "469"
    assert config.state == Path("/var/lib/eventcrawl")
    assert config.settings == {"DOWNLOAD_DELAY": 2.0}
    assert (config.out, config.push_to_hub, config.private, config.revision) == (
        Path("exports/emnlp-2024"),
        "org/emnlp-2024",
        True,
        None,
    )
    assert config.gate == GateThresholds(max_drop=0.2, min_items=500)
    overridden = config.with_overrides(event_ids=["502"], settings={"LOG_LEVEL": "INFO"}, out=None)
    assert overridden.event_id == "502"
    assert overridden.out == Path("exports/emnlp-2024")
    assert overridden.settings == {"DOWNLOAD_DELAY": 2.0, "LOG_LEVEL": "INFO"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[crawler]\n", "unknown section"),
        ("[crawl]\nevent = 1\n", "unknown key [crawl] event"),
        ("[publish]\nprivate = 'yes'\n", "[publish] private has the wrong type"),
        ("[gate]\nmax_drop = true\n", "[gate] max_drop has the wrong type"),
        ("[gate]\nmax_dorp = 0.1\n", "unknown key [gate] max_dorp"),
        ("[crawl\n", "not valid TOML"),
    ],
)
def test_mistakes_are_errors_not_ignored(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_config(write(tmp_path, text))


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml")


def test_retired_events_are_read_as_event_ids_and_cannot_be_crawled_too(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            '[crawl]\nevent_ids = ["502"]\n[publish]\n'
            'retire_events = ["https://underline.io/events/469/sessions", 431]\nremove_lectures = ["1"]\n',
        )
    )
    assert config.retire_events == ("469", "431")
    assert config.with_overrides(retire_events=["400"]).retire_events == ("469", "431", "400")
    with pytest.raises(ConfigError, match=r"event\(s\) 469 are both crawled \(event_ids\) and retired"):
        config.with_overrides(event_ids=["469", "502"])
    with pytest.raises(ConfigError, match=r"event\(s\) 502 are both crawled .* \(in .*eventcrawl.toml\)"):
        load_config(write(tmp_path, '[crawl]\nevent_id = "502"\n[publish]\nretire_events = ["502"]\n'))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[gate]\nmin_items = inf\n", "[gate] min_items must be a finite number, got inf"),
        ("[gate]\nmin_items = nan\n", "[gate] min_items must be a finite number, got nan"),
        ("[gate]\nmax_drop = nan\n", "[gate] max_drop must be a finite number, got nan"),
        ("[gate.min_coverage]\nauthors = nan\n", "[gate] authors must be a finite number, got nan"),
        (
            '[publish]\nredact_authors = [" "]\n',
            "[publish] redact_authors entries must be names or ORCID iDs, got ' '",
        ),
        (
            '[publish]\nredact_authors = ["Jane Doe", ""]\n',
            "redact_authors entries must be names or ORCID iDs",
        ),
        (
            '[publish]\nremove_lectures = [" "]\n',
            "[publish] remove_lectures holds '', which is not a lecture id",
        ),
        (
            '[publish]\nremove_lectures = ["130001-x"]\n',
            "remove_lectures holds '130001-x', which is not a lecture",
        ),
        ("[crawl.settings]\nDOWNLOAD_DELAY = nan\n", "setting DOWNLOAD_DELAY takes a finite number, not nan"),
        ("[crawl.settings]\nDOWNLOAD_DELAY = inf\n", "setting DOWNLOAD_DELAY takes a finite number, not inf"),
        ("[crawl.settings]\nCONCURRENT_ITEMS = 0\n", "setting CONCURRENT_ITEMS must be at least 1, not 0"),
        (
            "[crawl.settings]\nUNDERLINE_REVALIDATE_SHARE = 2.0\n",
            "UNDERLINE_REVALIDATE_SHARE must be at least 0 and",
        ),
        (
            '[crawl]\nweb_base = "https://jane:s3cret@underline.io"\n',
            "[crawl] web_base must not carry a user name or password",
        ),
    ],
)
def test_values_no_run_can_mean_are_refused_before_it_starts(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(write(tmp_path, text))
    assert message in str(raised.value)
    assert "s3cret" not in str(raised.value)


def test_removals_are_read_as_given(tmp_path: Path) -> None:
    config = load_config(
        write(tmp_path, '[publish]\nremove_lectures = [" 130001", 130002]\nredact_authors = ["Jane Doe"]\n')
    )
    assert (config.remove_lectures, config.redact_authors) == (("130001", "130002"), ("Jane Doe",))


def test_a_file_that_is_not_utf8_text_or_not_a_file_says_so(tmp_path: Path) -> None:
    path = tmp_path / "eventcrawl.toml"
    path.write_bytes(b'[crawl]\nstate = "/var/lib/\xff"\n')
    with pytest.raises(
        ConfigError, match=r"eventcrawl.toml is not UTF-8 text \(invalid start byte at byte 26\)"
    ):
        load_config(path)
    with pytest.raises(ConfigError, match=r"cannot be read: Is a directory"):
        load_config(tmp_path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("crawl = 1\n", "[crawl] must be a table"),
        ("gate = 'strict'\n", "[gate] must be a table"),
        ("[gate]\nmin_coverage = 0.5\n", "[gate.min_coverage] must be a table of field = share"),
    ],
)
def test_a_section_that_is_not_a_table_is_an_error(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(write(tmp_path, text))
    assert message in str(raised.value)


def test_every_key_of_both_sections_and_the_gate_is_read(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            """
[crawl]
event_ids = ["502", "https://underline.io/events/469/x"]
web_base = ""
api_base = "https://app.example.org/api/v1"
page_budget = 40
[publish]
out = "exports/x"
name = ""
push_to_hub = "org/x"
private = true
revision = "nightly"
remove_lectures = [" 130001 "]
redact_authors = ["Jane Doe"]
retire_events = ["431"]
anthology = ""
[gate]
min_items = 3.0
max_drop = 0.2
[gate.min_coverage]
authors = 0.9
""",
        )
    )
    assert config == RunConfig(
        event_ids=("502", "469"),
        web_base=None,
        api_base="https://app.example.org",
        settings={"UNDERLINE_PAGE_BUDGET": 40},
        out=Path("exports/x"),
        name=None,
        push_to_hub="org/x",
        private=True,
        revision="nightly",
        remove_lectures=("130001",),
        redact_authors=("Jane Doe",),
        retire_events=("431",),
        anthology=None,
        gate=GateThresholds(min_items=3, max_drop=0.2, min_coverage={"authors": 0.9}),
    )
    assert isinstance(config.gate.min_items, int)
