"""CPU of the target at the seed's steady load, and in the seed's retry storm.

1,000 seed-style users (``bench/users.py``: think time 10 s on average, so about
100 requests/s; 2 s timeout; retry after a fixed 100 ms) drive ``retrystorm target``
with the seed model. After a steady phase the target is frozen with SIGSTOP for 10 s
and resumed: the connections queued meanwhile flood in, the modelled delay jumps past
the clients' timeout and every retry adds to the pile, as in the seed's fixed-retry
run. The script prints the target's CPU share in each phase and how many requests it
held. Run: ``.venv/bin/python bench/cpu.py``.
"""

import argparse
import os
import signal
import subprocess
import sys
import time

from benchlib import HERE, cpu_seconds, cpu_share, raise_open_files_limit, scrape, target

IN_FLIGHT = "retrystorm_target_in_flight_requests"
OK = 'retrystorm_target_requests_total{outcome="ok"}'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--steady", type=float, default=15.0, help="seconds measured in the steady phase")
    parser.add_argument("--freeze", type=float, default=10.0)
    parser.add_argument("--storm", type=float, default=10.0, help="seconds measured in the storm")
    args = parser.parse_args()
    raise_open_files_limit()
    total_s = 10 + args.steady + args.freeze + 3 + args.storm + 5
    with target() as service:
        users = ["--port", str(service.port), "--users", str(args.users), "--seconds", str(total_s)]
        load = subprocess.Popen([sys.executable, str(HERE / "users.py"), *users], stdout=subprocess.PIPE, text=True)
        time.sleep(10)  # users spread out over their first think times
        before = scrape(service.port)
        load_cpu = cpu_seconds(load.pid)
        steady_cpu = cpu_share(service.pid, args.steady)
        after = scrape(service.port)
        load_cpu = (cpu_seconds(load.pid) - load_cpu) / args.steady
        rate = (after[OK] - before[OK]) / args.steady
        delay_ms = after["retrystorm_target_delay_seconds"] * 1000
        print(f"steady: {rate:.0f} req/s answered, {after[IN_FLIGHT]:.0f} in flight, delay {delay_ms:.0f} ms")
        print(f"steady: target CPU {steady_cpu:.1%} of one core (load client {load_cpu:.0%})")
        os.kill(service.pid, signal.SIGSTOP)
        time.sleep(args.freeze)
        os.kill(service.pid, signal.SIGCONT)
        time.sleep(3)
        start = scrape(service.port)
        storm_cpu = cpu_share(service.pid, args.storm)
        end = scrape(service.port)
        print(
            f"storm: {start[IN_FLIGHT]:.0f} -> {end[IN_FLIGHT]:.0f} in flight over {args.storm:g} s, "
            f"{end['retrystorm_target_abandoned_in_flight_requests']:.0f} of them abandoned, "
            f"delay {end['retrystorm_target_delay_seconds']:.0f} s"
        )
        print(f"storm: target CPU {storm_cpu:.1%} of one core")
        out, _ = load.communicate(timeout=total_s + 30)
        print(f"load client: {out.strip()}")


if __name__ == "__main__":
    main()
