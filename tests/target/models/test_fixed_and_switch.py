import random

from retrystorm.target.models import ExponentialModel, FixedModel, QueueModel, parse_model, switch_model

RNG = random.Random(0)


def test_fixed_releases_exactly_after_its_delay():
    server = FixedModel(base_delay_s=0.2).start(0.0)
    server.admit(1.0, "a")
    server.admit(1.1, "b")
    assert server.next_wakeup_s(1.1) == 1.2
    assert server.advance(1.19, RNG) == []
    assert [payload for payload, _, _ in server.advance(1.2, RNG)] == ["a"]
    assert server.next_wakeup_s(1.2) == 1.1 + 0.2


def test_fixed_zero_delay_is_due_at_once():
    server = parse_model("fixed:base_delay=0").start(0.0)
    server.admit(5.0, "a")
    assert server.next_wakeup_s(5.0) == 5.0
    assert [payload for payload, _, _ in server.advance(5.0, RNG)] == ["a"]


def test_switch_model_in_place_for_the_same_kind():
    server = ExponentialModel().start(0.0)
    same = switch_model(server, ExponentialModel(limit=5), 1.0)
    assert same is server


def test_switch_model_moves_in_flight_requests_to_a_new_kind():
    server = ExponentialModel().start(0.0)
    server.admit(0.5, "a")
    server.admit(0.6, "b")
    fixed = switch_model(server, FixedModel(base_delay_s=1.0), 0.7)
    assert fixed is not server
    assert fixed.in_flight == 2
    assert server.in_flight == 0
    assert [payload for payload, _, _ in fixed.advance(1.55, RNG)] == ["a"]
    queue = switch_model(fixed, QueueModel(workers=1), 2.0)
    assert queue.in_flight == 1


def test_withdraw_removes_by_identity_from_fifo_models():
    server = ExponentialModel().start(0.0)
    first, second = ["a"], ["a"]  # equal but distinct payloads
    server.admit(0.0, first)
    server.admit(0.01, second)
    assert server.withdraw(second)
    assert not server.withdraw(second)
    assert server.in_flight == 1
    assert [payload for payload, _, _ in server.advance(0.15, RNG)] == [first]
    assert not server.withdraw(first)


def test_withdraw_frees_a_queue_worker():
    server = QueueModel(workers=1, service_time_s=1.0, reject_after_s=0.05, tick_s=0.05).start(0.0)
    server.admit(0.0, "served")
    server.admit(0.0, "rejected")
    assert server.withdraw("served")
    assert server.withdraw("rejected")
    assert server.in_flight == 0
    server.admit(0.01, "next")
    assert server.in_service == 1
