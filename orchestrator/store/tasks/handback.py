"""Handing a claimed task back: a worker shutting down returns what it cannot finish,
and a worker gives back prefetched claims it never started."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, tuple_, update

from orchestrator.states import TaskState
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase
from orchestrator.store.core.records import Claim
from orchestrator.store.tasks.task_store import HANDED_BACK, LOST

ti = m.task_instances
tries = m.task_tries


class HandbackStore(StoreBase):
    def hand_back(self, claim: Claim, now: datetime) -> bool:
        """Queue a claimed task again at once; the interrupted try is not held against it.

        The try is recorded ``lost`` (reason ``handed_back``), like a try whose lease
        expired: it does not spend the task's retries, up to its ``max_lost_tries``
        (then it counts as a failed try). Fenced like every write after a claim: False
        if the lease was already lost.
        """
        message = f"worker {claim.owner} shut down before the try finished; handed back"
        state = self._fail_attempt(  # type: ignore[attr-defined]
            claim.ti_id,
            claim.try_number,
            claim.owner,
            message,
            None,
            now,
            try_state=LOST,
            quiet=True,
            lost=HANDED_BACK,
        )
        return state is not None

    def unclaim(self, claims: list[Claim], now: datetime) -> int:
        """Give back claims whose try never started (a worker's prefetched claims, see
        ``Worker``): each is claimable again exactly as before it was claimed, with its
        try number, its place in the claim order (``ready_at`` is untouched) and, for a
        sensor's next poke, its poke count and first poke; the try's row is removed (a
        fresh try) or rescheduled again (a poke). No try is spent and none is recorded
        lost. Fenced on (owner, try): a claim whose lease was lost already is left
        alone. Returns how many were given back."""
        if not claims:
            return 0
        given = 0
        with self.write() as conn:
            # a fresh try, a sensor's next poke, a deferred try resumed (issue 30)
            kinds = (("fresh", TaskState.QUEUED), ("poke", TaskState.UP_FOR_RESCHEDULE),
                     ("resume", TaskState.QUEUED))  # fmt: skip
            for kind, state in kinds:
                mine = [c for c in claims if _kind(c) == kind]
                pokes = kind != "fresh"  # the try number stays, its row is reopened
                if not mine:
                    continue
                back = conn.execute(
                    update(ti)
                    .where(
                        ti.c.id.in_([c.ti_id for c in mine]),
                        tuple_(ti.c.id, ti.c.try_number, ti.c.owner).in_(
                            [(c.ti_id, c.try_number, c.owner) for c in mine]
                        ),
                        ti.c.state == TaskState.RUNNING,
                    )
                    .values(
                        state=state,
                        owner=None,
                        lease_expires_at=None,
                        # a fresh try was not started: the try number goes back
                        try_number=ti.c.try_number if pokes else ti.c.try_number - 1,
                        start_date=ti.c.first_poke_at if kind == "poke" else None,
                        end_date=now if pokes else None,
                    )
                    .returning(ti.c.id, ti.c.try_number)
                ).all()
                if not back:
                    continue
                given += len(back)
                # the try rows: (ti_id, the claimed try number)
                pairs = [(r.id, r.try_number if pokes else r.try_number + 1) for r in back]
                which = (
                    tries.c.ti_id.in_([p[0] for p in pairs]),
                    tuple_(tries.c.ti_id, tries.c.try_number).in_(pairs),
                    tries.c.state == "running",
                )
                if pokes:
                    was = TaskState.DEFERRED if kind == "resume" else TaskState.UP_FOR_RESCHEDULE
                    conn.execute(update(tries).where(*which).values(state=was, end_date=now))
                else:
                    conn.execute(delete(tries).where(*which))
        return given


def _kind(claim: Claim) -> str:
    if claim.next_method:
        return "resume"
    return "poke" if claim.poke_count else "fresh"
