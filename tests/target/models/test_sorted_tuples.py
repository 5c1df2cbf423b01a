"""The sorted collection behind the overflowing model's phase index, against a plain sorted list."""

import bisect

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrystorm.target.models.sorted_tuples import LOAD, SortedTuples

operations = st.lists(
    st.tuples(st.sampled_from(["add", "remove", "find"]), st.integers(min_value=0, max_value=60)), max_size=400
)


@given(ops=operations)
def test_behaves_as_a_sorted_list(ops):
    found, expected = SortedTuples(), []
    for op, value in ops:
        item = (value % 7 / 7, value)  # repeated first fields, as phases shared by requests
        if op == "add" and item not in expected:
            found.add(item)
            bisect.insort(expected, item)
        elif op == "remove" and item in expected:
            found.remove(item)
            expected.remove(item)
        key = (value % 5 / 5, -1)
        index = bisect.bisect_left(expected, key)
        assert found.at_or_after(key) == (expected[index] if index < len(expected) else None)
        assert found.first() == (expected[0] if expected else None)
        assert len(found) == len(expected)
    assert list(found) == expected


def test_many_items_split_into_short_lists_and_merge_back():
    found = SortedTuples()
    items = [(i * 7919 % 10_007, i) for i in range(10 * LOAD)]
    for item in items:
        found.add(item)
    assert list(found) == sorted(items)
    assert max(len(chunk) for chunk in found._lists) <= 2 * LOAD
    for item in items[::2]:
        found.remove(item)
    assert list(found) == sorted(items[1::2])
    assert found.at_or_after((10_008, -1)) is None


def test_removing_a_missing_item_is_an_error():
    found = SortedTuples()
    found.add((1.0, 1))
    with pytest.raises(KeyError):
        found.remove((1.0, 2))
