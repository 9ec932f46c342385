"""Login and logout (needed only when the UI is bound beyond loopback)."""

from __future__ import annotations

from flask import Blueprint, flash, redirect, render_template, request, session, url_for
from werkzeug.wrappers import Response

from ..current import get_store

bp = Blueprint("auth", __name__)


def _safe_next(target: str | None) -> str:
    """Only same-site paths: never redirect to another host after login."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return url_for("pages.dag_list")


@bp.route("/login", methods=["GET", "POST"])
def login() -> Response | tuple[str, int] | str:
    if request.method == "GET":
        return render_template("login.html", next=request.args.get("next", ""))
    username = request.form.get("username", "")
    if get_store().check_password(username, request.form.get("password", "")):
        session.clear()  # a fresh session (and CSRF token) for the signed-in user
        session["user"] = username
        return redirect(_safe_next(request.form.get("next")))
    flash("Wrong user name or password.", "error")
    return render_template("login.html", next=request.form.get("next", "")), 401


@bp.post("/logout")
def logout() -> Response:
    session.clear()
    return redirect(url_for("auth.login"))
