"""The built-in target's controls for the live triggers, through its admin API (both backends use them).

* ``slow``: ``PUT /admin/capacity {"capacity": C}``: the model runs on a clock of its
  own at C times real time (:mod:`retrystorm.target.models.capacity`, the knob per model there);
* ``errors``: ``PUT /admin/faults {"status": S, "probability": P}``: each attempt fails
  at once with S at probability P, without entering the model (:mod:`retrystorm.target.faults`);
  ``None`` puts back the rule found before the first burst (``DELETE`` when there was none).

Before its first change of each kind, :class:`AdminControls` reads what the target has
(``GET /admin/capacity``, ``GET /admin/faults``); :meth:`AdminControls.restore` puts
exactly that back. A call that fails is a :class:`~retrystorm.runner.errors.RunFailedError`.
"""

from __future__ import annotations

from typing import Any

from retrystorm.runner.webapi import WebApi


class AdminControls:
    """The slow and errors triggers on a target with the admin API at ``api`` (a :class:`TargetControls`)."""

    def __init__(self, api: WebApi) -> None:
        self.api = api
        self._capacity: float | None = None  # the capacity before the first cut (None: not read yet)
        self._rule: dict[str, Any] | None = None  # the fault rule before the first burst
        self._rule_read = False

    async def set_capacity(self, capacity: float, hold_s: float) -> None:
        if self._capacity is None:
            self._capacity = float((await self.api.call_json("GET", "/admin/capacity"))["capacity"])
        await self.api.call_json("PUT", "/admin/capacity", json_body={"capacity": capacity})

    async def set_errors(self, status: int | None, probability: float) -> None:
        if not self._rule_read:
            self._rule = (await self.api.call_json("GET", "/admin/faults"))["rule"]
            self._rule_read = True
        if status is None:
            await self._put_back_rule()
        else:
            await self.api.call_json("PUT", "/admin/faults", json_body={"status": status, "probability": probability})

    async def _put_back_rule(self) -> None:
        if self._rule is None:
            await self.api.call_json("DELETE", "/admin/faults")
        else:
            await self.api.call_json("PUT", "/admin/faults", json_body=self._rule)

    async def restore(self) -> None:
        """The capacity and the fault rule the target had (only what was changed); errors first."""
        problems: list[Exception] = []
        if self._rule_read:
            try:
                await self._put_back_rule()
            except Exception as error:
                problems.append(error)
        if self._capacity is not None:
            await self.api.call_json("PUT", "/admin/capacity", json_body={"capacity": self._capacity})
        if problems:
            raise problems[0]
