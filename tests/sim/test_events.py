"""The calendar queue pops in exactly the (time, sequence) order of one heap."""

import heapq

from hypothesis import given
from hypothesis import strategies as st

from retrystorm.sim.events import EventQueue

delays = st.lists(st.tuples(st.floats(0, 3, allow_nan=False), st.booleans(), st.integers(0, 3)), max_size=200)


@given(delays, st.floats(0.01, 1.0))
def test_pop_order_matches_one_heap(steps, width):
    """Each popped event schedules new ones (a delay later, or a fixed 0.5 s later in order), as the engine does."""
    queue, reference = EventQueue(width_s=width), []
    sequence = 0
    last_in_order = 0.0

    def push(event, in_order):
        (queue.push_in_order if in_order else queue.push)(event)
        heapq.heappush(reference, event)

    push((0.0, sequence, 0, None, 0), False)
    popped, expected = [], []
    for delay, in_order, count in steps:
        event = queue.pop_before(float("inf"))
        if event is None:
            break
        popped.append(event)
        expected.append(heapq.heappop(reference))
        now = event[0]
        for _ in range(count + 1):
            sequence += 1
            if in_order:
                last_in_order = max(last_in_order, now + 0.5)
                push((last_in_order, sequence, 0, None, 0), True)
            else:
                push((now + delay, sequence, 0, None, 0), False)
    assert popped == expected


def test_pop_before_stops_at_the_end_and_keeps_the_event():
    queue = EventQueue()
    queue.push((5.0, 1, 0, None, 0))
    queue.push_in_order((7.0, 2, 0, None, 0))
    assert queue.pop_before(5.0) is None
    assert queue.pop_before(6.0)[0] == 5.0
    assert queue.pop_before(6.0) is None
    assert len(queue) == 1
    assert queue.pop_before(8.0)[0] == 7.0
    assert queue.pop_before(8.0) is None
