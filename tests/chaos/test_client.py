"""The Chaos tab's client, pure parts: the chaos API's address, and targets merged with outages."""

import datetime

import pytest

from retrystorm.chaos.client import check_chaos_url, merge_overview
from retrystorm.errors import SpecError

NOW = datetime.datetime(2026, 1, 1, 12, 0, 30, tzinfo=datetime.UTC)


def outage(outage_id, target, status="active", started="2026-01-01T12:00:00.000+00:00", duration_s=60.0):
    return {
        "id": outage_id,
        "target": target,
        "backend": "process",
        "status": status,
        "started_utc": started,
        "duration_s": duration_s,
    }


def test_targets_get_their_active_outages_and_the_time_left():
    targets = [
        {"backend": "process", "target": "api", "state": "paused"},
        {"backend": "process", "target": "db", "state": "running"},
        {"backend": "docker", "target": "api", "state": "running"},
    ]
    outages = [
        outage("o1", "api", status="resumed"),
        outage("o2", "api"),
        outage("o3", "api", started="2026-01-01T11:00:00.000+00:00"),  # overdue: 0 left
    ]
    rows = merge_overview(targets, outages, NOW)
    assert rows[0]["outages"] == [
        {"id": "o2", "duration_s": 60.0, "remaining_s": 30.0},
        {"id": "o3", "duration_s": 60.0, "remaining_s": 0.0},
    ]
    assert rows[1]["outages"] == []
    assert rows[2]["outages"] == []  # same name, other backend
    assert [(row["target"], row["state"]) for row in rows] == [("api", "paused"), ("db", "running"), ("api", "running")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("none", None),
        ("", None),
        ("http://127.0.0.1:8071", "http://127.0.0.1:8071"),
        ("https://chaos.example/api/", "https://chaos.example/api"),
    ],
)
def test_chaos_url(text, expected):
    assert check_chaos_url(text) == expected


@pytest.mark.parametrize("text", ["127.0.0.1:8071", "ftp://host", "http://", "http://host/?a=1", "http://host:http"])
def test_bad_chaos_url_says_what_is_expected(text):
    with pytest.raises(SpecError, match="chaos API"):
        check_chaos_url(text)
