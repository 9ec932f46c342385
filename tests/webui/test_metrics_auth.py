"""/metrics behind a login: a configured bearer token lets Prometheus scrape it."""

from __future__ import annotations

from webui import create_app


def test_metrics_needs_a_login_or_the_scraper_token(settings, store, clock):
    app = create_app(
        settings.with_(metrics_token="s3cret-token"), store, clock=clock, login_required=True
    )
    client = app.test_client()
    assert client.get("/metrics").status_code == 302  # to the login page
    wrong = client.get("/metrics", headers={"Authorization": "Bearer nope"})
    # not the scraper's token, so read as an API token: malformed, 401 (issue 17)
    assert wrong.status_code == 401 and "malformed token" in wrong.get_json()["detail"]
    ok = client.get("/metrics", headers={"Authorization": "Bearer s3cret-token"})
    assert ok.status_code == 200 and b"# TYPE" in ok.data
    # the token opens /metrics only
    other = client.get("/api/v1/dags", headers={"Authorization": "Bearer s3cret-token"})
    assert other.status_code == 401


def test_without_a_configured_token_no_bearer_gets_in(settings, store, clock):
    app = create_app(settings, store, clock=clock, login_required=True)
    response = app.test_client().get("/metrics", headers={"Authorization": "Bearer "})
    assert response.status_code == 401  # an empty API token is a malformed one
    assert app.test_client().get("/metrics").status_code == 302
