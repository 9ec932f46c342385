"""A try lost to infrastructure shows as lost, with its reason, on the task page and API."""

from __future__ import annotations

from datetime import timedelta

from conftest import START, build_dag  # noqa: I001  (tests/webui/conftest.py)

LEASE = timedelta(seconds=30)


def test_a_lost_try_is_shown_distinctly_on_the_task_page(client, store):
    store.save_dag(build_dag("etl"), START)
    run = store.trigger_run("etl", START)
    store.start_queued_runs(START)
    store.release_ready(START)
    [lost] = store.claim("worker-gone", START, LEASE, limit=5)
    assert store.reap_expired(START + timedelta(minutes=1)) == [
        (run.run_id, "extract", 1, "queued")
    ]
    [again] = store.claim("worker-2", START + timedelta(minutes=1), LEASE, limit=5)
    store.finish_success(again, "1", START + timedelta(minutes=2))

    html = client.get(f"/runs/{run.run_id}/tasks/extract").get_data(as_text=True)
    rows = html.split("<tbody>")[-1]
    assert rows.count('class="try-lost"') == 1
    assert '<tr class="try-lost" data-lost-reason="lease_expired">' in rows
    assert '<span class="pill state-lost">lost</span>' in rows
    assert '<span class="lost-reason">lease expired</span>' in rows
    assert "worker worker-gone stopped heartbeating" in rows
    assert "2 of 2" in html and "(1 lost)" in html

    api = client.get(f"/api/v1/runs/{run.run_id}/tasks/extract").get_json()
    assert api["lost_tries"] == 1 and api["max_tries"] == 2
    assert [(t["state"], t["lost_reason"]) for t in api["tries"]] == [
        ("lost", "lease_expired"),
        ("success", None),
    ]
    assert lost.try_number == 1
