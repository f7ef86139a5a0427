from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.dedup import near
from crawler.dedup.near import NearPair, SearchStats, Talk
from crawler.schema import lecture_order
from crawler.text.normalize import normalize_line
from tests.support.dedup import near_duplicate_pairs
from tests.support.polite_server import REPO_ROOT

ABSTRACT = (
    "We present a simple method for aligning large language models with human preferences using a small"
    " set of annotated comparisons and show that it improves helpfulness and harmlessness on three"
    " benchmarks while keeping the cost of training low compared with reinforcement learning from human"
    " feedback and direct preference optimization baselines that need far more data"
)
OTHER = (
    "Speech translation systems struggle with long audio. We segment recordings with a voice activity"
    " detector and translate each segment with a cascade of recognition and translation models, then"
    " merge the outputs; on two test sets the approach improves BLEU by four points over a direct model"
)


def revised(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def test_shingles_and_keys_see_normalized_words() -> None:
    assert near.shingles("A Title", "one two  three") == {"a title one", "title one two", "one two three"}
    assert near.shingles("", "x") == {"x"}
    assert near.shingles(None, None) == set()
    assert near.text_key("Caf\u00e9 &amp; Co", "X") == near.text_key("cafe\u0301 & co", "x")
    assert near.text_key("T", "a b") != near.text_key("T", "a c")


@pytest.mark.parametrize(("title", "abstract"), [(None, None), ("", "one"), ("T", ABSTRACT)])
def test_keyed_signature_is_the_key_and_the_signature(title: str | None, abstract: str | None) -> None:
    key, values = near.keyed_signature(title, abstract)
    assert key == near.text_key(title, abstract)
    assert np.array_equal(values, near.signature(title, abstract))


@pytest.mark.parametrize(
    ("title", "abstract"),
    [
        ("A title", None),  # three words: one shingle
        ("One", "two three four"),  # four words: two shingles
        (
            "Caf\u00e9 na\u00efve \u65e5\u672c\u8a9e",
            "r\u00e9sum\u00e9 of \U0001d4b3 words",
        ),  # several bytes a char
        ("Ascii title", "then \u00e9 once, among ascii words"),
        ("x", "y y y y y y y y"),  # one shingle many times
        ("T", ABSTRACT + " " + ABSTRACT),
    ],
)
def test_keyed_signature_reads_shingles_off_the_joined_words(title: str, abstract: str | None) -> None:
    # The signature takes each shingle as a slice of the words' joined bytes and hashes repeats again; it
    # must be the signature of the set of shingles, bytes for bytes.
    key, values = near.keyed_signature(title, abstract)
    grams = near.shingles(title, abstract)
    assert key == near.text_key(title, abstract), f"case {title!r}"
    assert np.array_equal(values, near.signature_of_hashes(near.shingle_hashes(sorted(grams)))), (
        f"case {title!r}"
    )


def test_signature_is_deterministic_and_round_trips() -> None:
    first = near.signature("T", ABSTRACT)
    assert first.dtype == np.uint32 and first.shape == (near.NUM_PERM,)
    assert np.array_equal(first, near.signature("T", ABSTRACT))
    assert np.array_equal(near.decode_signature(near.encode_signature(first)), first)
    assert len(near.encode_signature(first)) == 684


def test_pairs_are_verified_with_the_exact_similarity() -> None:
    talks = [
        Talk("10", "Preference alignment", ABSTRACT),
        Talk("2", "Preference alignment", revised(ABSTRACT, "simple", "robust")),
        Talk("3", "Speech", OTHER),
        Talk("4", "Preference alignment", revised(revised(ABSTRACT, "three", "four"), "low", "small")),
    ]
    stats = SearchStats()
    pairs = near_duplicate_pairs(talks, stats=stats)
    assert pairs == [NearPair("2", "4", 0.7188), NearPair("2", "10", 0.8966), NearPair("4", "10", 0.8033)]
    assert (stats.signatures_computed, stats.signatures_cached, stats.candidate_pairs) == (4, 0, 3)
    assert set(near.all_pairs(talks)) == set(pairs)
    assert near.clusters(pairs) == {"2": "2", "4": "2", "10": "2"}


def test_cached_signatures_are_used() -> None:
    talks = [Talk("1", "T", ABSTRACT), Talk("2", "T", ABSTRACT + " Extra words here.")]
    cache = {near.text_key("T", ABSTRACT): near.signature("T", ABSTRACT)}
    stats = SearchStats()
    assert [(p.first, p.second) for p in near_duplicate_pairs(talks, cache, stats=stats)] == [("1", "2")]
    assert (stats.signatures_cached, stats.signatures_computed) == (1, 1)


def test_a_crowded_bucket_is_capped() -> None:
    talks = [Talk(str(i), "Same", "same words for everyone") for i in range(near.MAX_CANDIDATES + 5)]
    stats = SearchStats()
    pairs = near_duplicate_pairs(talks, stats=stats)
    # Each row is offered the bucket's lowest MAX_CANDIDATES + 1 rows: only the rows past those have
    # more candidates than the cap.
    assert stats.capped_queries == 4
    assert len(pairs) < len(talks) * (len(talks) - 1) // 2
    assert set(near.clusters(pairs).values()) == {"0"}


def test_clusters_join_chains_under_the_lowest_id() -> None:
    pairs = [
        NearPair("5", "9", 0.9),
        NearPair("9", "12", 0.8),
        NearPair("3", "4", 0.75),
        NearPair("12", "100", 1),
    ]
    assert near.clusters(pairs) == {"5": "5", "9": "5", "12": "5", "100": "5", "3": "3", "4": "3"}
    assert near.clusters([]) == {}


def test_signature_cache_in_the_state_directory(tmp_path: Path) -> None:
    cache = near.SignatureCache(tmp_path, "w1")
    values = near.signature("T", ABSTRACT)
    assert cache.add("k1", values)
    assert not cache.add("k1", values)
    assert cache.add("k2", near.signature("U", OTHER))
    cache.close()
    path = tmp_path / "minhash" / "w1.jsonl"
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"key": "bad", "sig": "AAAA"}\n{"key": "torn", "si')
    loaded = near.load_signatures(tmp_path)
    assert sorted(loaded) == ["k1", "k2"]
    assert np.array_equal(loaded["k1"], values)
    assert near.load_signatures(tmp_path / "nothing") == {}
    memory_only = near.SignatureCache(None)
    assert memory_only.add("k", values) and memory_only.path is None
    memory_only.close()
    assert json.loads(path.read_text(encoding="utf-8").splitlines()[0])["key"] == "k1"


words = st.sampled_from(["model", "data", "we", "show", "language", "results", "task", "new", "method"])


def word_shingle_jaccard(a: str, b: str) -> float:
    """Word 3-shingle Jaccard of two lower-case, space-separated texts, written apart from ``near``."""

    def grams(text: str) -> set[tuple[str, ...]]:
        w = text.split()
        return {tuple(w)} if len(w) <= 3 else {tuple(w[i : i + 3]) for i in range(len(w) - 2)}

    x, y = grams(a), grams(b)
    return len(x & y) / len(x | y) if x | y else 1.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(words, min_size=1, max_size=30).map(" ".join), min_size=1, max_size=12))
def test_lsh_finds_what_all_pairs_finds_at_high_similarity(abstracts: list[str]) -> None:
    talks = [Talk(str(i), "t", a) for i, a in enumerate(abstracts)]
    found = {(p.first, p.second) for p in near_duplicate_pairs(talks, threshold=0.95)}
    # What the pairs must be, from an independent Jaccard of the same texts (title "t" + abstract).
    texts = {t.lecture_id: f"t {t.abstract}" for t in talks}
    wanted = {
        tuple(sorted((i, j), key=lecture_order))
        for i in texts
        for j in texts
        if lecture_order(i) < lecture_order(j) and word_shingle_jaccard(texts[i], texts[j]) >= 0.95
    }
    # At 0.95 the LSH (tuned for 0.5) misses a pair with a chance far below one in a million.
    assert found == wanted
    assert {(p.first, p.second) for p in near.all_pairs(talks, threshold=0.95)} == wanted
    cluster = near.clusters(near_duplicate_pairs(talks, threshold=0.95))
    assert set(cluster) == {i for pair in wanted for i in pair}
    for member, cluster_id in cluster.items():
        assert lecture_order(cluster_id) <= lecture_order(member), f"{member=}, {cluster_id=}"


def test_similarity_is_the_exact_shingle_jaccard() -> None:
    one = "we show new results on the task with a new method and data from three languages and two domains"
    two = "we show new results on the task with a new model and data from three languages and two domains"
    talks = [Talk("1", "t", one), Talk("2", "t", two), Talk("3", "t", "speech data from many languages")]
    expected = round(word_shingle_jaccard(f"t {one}", f"t {two}"), 4)
    assert expected == 0.7143
    assert list(near.all_pairs(talks, threshold=0.7)) == [NearPair("1", "2", expected)]
    assert near_duplicate_pairs(talks, threshold=0.7) == [NearPair("1", "2", expected)]
    assert near_duplicate_pairs(talks, threshold=0.72) == []


def datasketch_signature(grams: set[str]) -> np.ndarray:
    """The signature datasketch itself gives the shingles, with its default scheme."""
    from datasketch import MinHash

    minhash = MinHash(num_perm=near.NUM_PERM, seed=near.SEED)
    minhash.update_batch([g.encode("utf-8") for g in grams])
    return np.asarray(minhash.hashvalues)


@pytest.mark.parametrize(
    ("title", "abstract", "count"),
    [
        (None, None, 0),
        ("", "one", 1),
        ("Two words", "", 1),
        ("Caf\u00e9 \u00fcber na\u00efve", "\u65e5\u672c\u8a9e \u3068 English words together", 6),
        ("T", ABSTRACT, 54),
        ("Speech", OTHER, 45),
    ],
)
def test_signatures_are_datasketchs(title: str | None, abstract: str | None, count: int) -> None:
    grams = near.shingles(title, abstract)
    assert len(grams) == count
    got = near.signature(title, abstract)
    assert got.dtype == np.uint32 and got.shape == (near.NUM_PERM,)
    assert np.array_equal(got, datasketch_signature(grams))


def test_a_text_longer_than_one_slice_of_hashes_has_datasketchs_signature() -> None:
    abstract = " ".join(f"w{i}" for i in range(2 * near._HASHES_AT_ONCE + 7))
    grams = near.shingles("Long", abstract)
    assert len(grams) > 2 * near._HASHES_AT_ONCE
    assert np.array_equal(near.signature("Long", abstract), datasketch_signature(grams))


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.61, 0.7, 0.9])
def test_lsh_bands_are_what_datasketch_picks(threshold: float) -> None:
    from datasketch import MinHashLSH

    lsh = MinHashLSH(threshold=threshold, num_perm=near.NUM_PERM)
    assert near.lsh_bands(threshold) == (lsh.b, lsh.r)


def test_the_stored_permutations_are_datasketchs_draw() -> None:
    """The permutations written into the module are those ``RandomState(SEED)`` draws (datasketch's)."""
    from datasketch import MinHash

    a, b = MinHash(num_perm=near.NUM_PERM, seed=near.SEED).permutations
    assert near._PERM_A.dtype == near._PERM_B.dtype == np.uint32
    assert near._PERM_A.tolist() == a.tolist()
    assert near._PERM_B.tolist() == b.tolist()


def test_importing_the_module_draws_nothing() -> None:
    """The crawl and every worker process import this module: it must not import numpy.random (a tenth
    of its import) to draw constants."""
    code = "import sys, crawler.dedup.near; print('numpy.random' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def words_as_one_text(title: str | None, abstract: str | None) -> list[str]:
    return near._WORD.findall(normalize_line(f"{title or ''} {abstract or ''}").casefold())


pieces = st.sampled_from(
    [
        "<",
        ">",
        "br",
        "/",
        " ",
        "&lt;",
        "&gt;",
        "&amp;",
        "&lt",
        "amp;",
        "&",
        ";",
        "\u200b",
        "\u0301",
        "e",
        "\xa0",
        "B",
    ]
)
texts = st.lists(st.one_of(pieces, st.text(max_size=3)), max_size=12).map("".join)


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.none(), texts), st.one_of(st.none(), texts))
def test_talk_words_are_the_words_of_title_and_abstract_as_one_text(
    title: str | None, abstract: str | None
) -> None:
    assert near.talk_words(title, abstract) == words_as_one_text(title, abstract)


@pytest.mark.parametrize(
    ("title", "abstract"),
    [("Why &lt;br", "matters> here"), ("A <br", "x> y"), ("Title &lt;", "br> words"), ("A &amp; B", "C")],
)
def test_a_tag_across_title_and_abstract_is_read_as_one_text(title: str, abstract: str) -> None:
    assert near.talk_words(title, abstract) == words_as_one_text(title, abstract), f"case {title!r}"
