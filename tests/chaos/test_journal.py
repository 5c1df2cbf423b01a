from chaos.backends import TargetRef
from chaos.journal import Journal, controller_alive, this_controller

REF = TargetRef("process", "target", "123@456")


def test_pause_without_resume_is_pending(tmp_path):
    journal = Journal(tmp_path / "j.jsonl")
    journal.append("pause", REF, "o1")
    (pending,) = journal.pending()
    assert pending.ref == REF
    assert pending.outage == "o1"
    journal.append("resume", REF, "o1")
    assert journal.pending() == []


def test_records_carry_time_controller_and_status(tmp_path):
    journal = Journal(tmp_path / "j.jsonl")
    journal.append("resume", REF, "o1", status="failed", error="boom")
    (record,) = journal.records()
    assert record["utc"].endswith("+00:00")
    assert record["controller"] == this_controller()
    assert (record["status"], record["error"]) == ("failed", "boom")


def test_a_torn_last_line_is_skipped(tmp_path):
    path = tmp_path / "j.jsonl"
    journal = Journal(path)
    journal.append("pause", REF, "o1")
    with path.open("a") as handle:
        handle.write('{"op": "resume", "backe')
    assert len(journal.pending()) == 1


def test_orphaned_means_the_controller_is_dead(tmp_path):
    journal = Journal(tmp_path / "j.jsonl")
    journal.append("pause", REF, "o1")
    assert journal.orphaned() == []  # this process is alive
    journal.controller = "999999999@1"
    journal.append("pause", TargetRef("process", "t2", "9@9"), "o2")
    assert [p.outage for p in journal.orphaned()] == ["o2"]
    assert not controller_alive("999999999@1")


def test_compact_only_when_nothing_is_pending(tmp_path):
    journal = Journal(tmp_path / "j.jsonl")
    journal.append("pause", REF, "o1")
    journal.compact()
    assert len(journal.records()) == 1
    journal.append("resume", REF, "o1")
    journal.compact()
    assert journal.records() == []
