"""The baseline of the overhead benchmark: a plain FastHttpUser making the same call."""

from locust import FastHttpUser, constant, task


class PlainUser(FastHttpUser):
    """GET /api back to back, no retries, no think time."""

    wait_time = constant(0)

    @task
    def api(self) -> None:
        self.client.get("/api")
