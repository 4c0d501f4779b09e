"""Java's String.hashCode, as stored in consume queues (tag hash) and index files."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.common import java_hash, java_string_hash, java_string_hash_with_prefix


def reference_hash(text: str) -> int:
    """s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, wrapped to a signed int32."""
    data = text.encode("utf-16-le")
    units = [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]
    h = 0
    for unit in units:
        h = (h * 31 + unit + 2**31) % 2**32 - 2**31
    return h


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("Aa", 2112),  # 65*31 + 97: Java's classic collision with "BB"
        ("BB", 2112),  # 66*31 + 66
        ("TagA", 2598919),  # ((84*31 + 97)*31 + 103)*31 + 65
        ("hello", 99162322),
        ("Hello World", -862545276),  # overflows
        ("polygenelubricants", -(2**31)),  # hashes to Integer.MIN_VALUE
        ("中文", 646394),  # 0x4E2D*31 + 0x6587 = 20013*31 + 25991
        ("😀", 1772899),  # U+1F600 is two UTF-16 units: 0xD83D*31 + 0xDE00
        ("a😀", 1866116),  # 97*31^2 + 0xD83D*31 + 0xDE00
        ("é", 233),  # one UTF-16 unit outside ASCII
    ],
)
def test_known_java_hash_codes(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected
    assert reference_hash(text) == expected


@settings(max_examples=300)
@given(st.text(max_size=60))
def test_matches_reference_and_fits_int32(text: str) -> None:
    h = java_string_hash(text)
    assert -(2**31) <= h < 2**31
    assert h == reference_hash(text)


@settings(max_examples=300)
@given(st.text(max_size=40), st.text(max_size=40))
def test_hash_with_prefix_equals_hash_of_concatenation(prefix: str, text: str) -> None:
    assert java_string_hash_with_prefix(prefix, text) == java_string_hash(prefix + text)
    # second call comes from the prefix cache
    assert java_string_hash_with_prefix(prefix, text) == java_string_hash(prefix + text)


def test_index_key_example() -> None:
    assert java_string_hash_with_prefix("TopicTest#", "order-1") == java_string_hash(
        "TopicTest#order-1"
    )
    assert java_string_hash_with_prefix("主题#", "键😀") == reference_hash("主题#键😀")


def test_prefix_cache_overflow_keeps_results_right() -> None:
    for i in range(5000):
        prefix = f"Topic{i}#"
        assert java_string_hash_with_prefix(prefix, "k") == reference_hash(prefix + "k")
    assert java_string_hash_with_prefix("Topic0#", "key") == reference_hash("Topic0#key")


@settings(max_examples=100)
@given(
    st.lists(
        st.text(alphabet=st.characters(max_codepoint=127), max_size=12) | st.text(max_size=6),
        max_size=30,
    )
)
def test_vectorized_hashes_match_one_by_one(texts: list[str]) -> None:
    java_string_hashes = getattr(java_hash, "java_string_hashes", None)
    if java_string_hashes is None:
        pytest.skip("orbitmq.common.java_hash has no java_string_hashes")
    hashes = java_string_hashes(texts)
    assert [int(h) for h in hashes] == [reference_hash(t) for t in texts]


def test_vectorized_hashes_known_values() -> None:
    java_string_hashes = getattr(java_hash, "java_string_hashes", None)
    if java_string_hashes is None:
        pytest.skip("orbitmq.common.java_hash has no java_string_hashes")
    texts = ["", "TagA", "hello", "Hello World", "polygenelubricants", "中文", "😀", "TagA"]
    expected = [0, 2598919, 99162322, -862545276, -(2**31), 646394, 1772899, 2598919]
    assert [int(h) for h in java_string_hashes(texts)] == expected
    assert len(java_string_hashes([])) == 0
