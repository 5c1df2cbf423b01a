"""The figures of an outage's aftermath: what the users offered after the resume and what the server held."""

from retrystorm.experiment.analysis import Samples, recoveries
from retrystorm.experiment.analysis.mechanism import after_resumes
from retrystorm.experiment.scenario import OutageWindow


def storm(resume_s: float, *, stuck: bool) -> tuple[Samples, list]:
    """60 s: steady 100 attempts/s and 10 in flight, paused [20, resume_s), then a storm or a quick drain."""
    attempts, goodput, in_flight = [], [], []
    for second in range(60):
        if second < 20:
            attempts.append(100.0), goodput.append(100.0), in_flight.append(10.0)
        elif second + 1 <= resume_s:
            attempts.append(300.0), goodput.append(0.0), in_flight.append(None)
        elif stuck:
            attempts.append(400.0), goodput.append(0.0), in_flight.append(3000.0 + 50 * second)
        else:
            attempts.append(100.0), goodput.append(100.0), in_flight.append(10.0)
    samples = Samples(step_s=1.0, goodput=goodput, in_flight=in_flight, delay_s=[0.1] * 60, attempts=attempts)
    return samples, recoveries(samples, [OutageWindow(20.0, resume_s)])


def test_a_storm_offers_four_times_the_steady_attempts_and_holds_ever_more():
    samples, found = storm(30.0, stuck=True)
    [figures] = after_resumes(samples, found)
    assert found[0].server_s is None
    assert figures.steady_attempts_per_s == 100.0 and figures.attempts_ratio == 4.0
    assert figures.in_flight_at_resume == 3000.0 + 50 * 30 and figures.in_flight_end == 3000.0 + 50 * 59
    assert figures.peak_in_flight == figures.in_flight_end
    assert figures.goodput_per_s == 0.0 and figures.window_s == 30.0


def test_a_resume_off_the_grid_still_has_a_whole_second_of_figures():
    samples, found = storm(30.4, stuck=False)  # a live resume: 0.4 s into a second
    [figures] = after_resumes(samples, found)
    assert found[0].server_s is not None and found[0].server_s < 1.0
    assert figures.attempts_per_s == 100.0 and figures.attempts_ratio == 1.0
    assert figures.in_flight_at_resume == 10.0 and figures.goodput_per_s == 100.0
