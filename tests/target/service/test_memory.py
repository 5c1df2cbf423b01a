"""Memory returned after a drained peak: when, and when not (the collection pauses the loop)."""

from retrystorm.target.service.memory import MAX_CONNECTIONS_OPEN, TRIM_AFTER_PEAK, MemoryReturn, malloc_trim


class Service:
    def __init__(self):
        self.in_flight = 0
        self.connections = 0
        self.calls = []

    def memory(self):
        return MemoryReturn(
            lambda: self.in_flight,
            lambda: self.connections,
            collect=lambda: self.calls.append("collect"),
            trim=lambda pad: self.calls.append(f"trim({pad})") or 1,
        )


def test_memory_is_returned_once_when_a_peak_has_drained():
    service = Service()
    memory = service.memory()
    for in_flight in (10, TRIM_AFTER_PEAK, 3 * TRIM_AFTER_PEAK, 50, 0, 0, 0):
        service.in_flight = in_flight
        memory.check()
    assert service.calls == ["collect", "trim(0)"]
    assert memory.returns == 1


def test_not_after_a_small_peak_nor_while_anything_is_in_flight():
    service = Service()
    memory = service.memory()
    for in_flight in (TRIM_AFTER_PEAK - 1, 0, TRIM_AFTER_PEAK, 1, 1):
        service.in_flight = in_flight
        memory.check()
    assert service.calls == []


def test_it_waits_while_many_connections_are_open():
    service = Service()
    memory = service.memory()
    service.in_flight = TRIM_AFTER_PEAK
    memory.check()
    service.in_flight, service.connections = 0, MAX_CONNECTIONS_OPEN + 1
    memory.check()
    assert service.calls == []
    service.connections = MAX_CONNECTIONS_OPEN
    memory.check()
    assert service.calls == ["collect", "trim(0)"]


def test_glibc_malloc_trim_is_found_and_runs():
    trim = malloc_trim()
    assert trim is not None  # Debian's glibc
    assert trim(0) in (0, 1)
