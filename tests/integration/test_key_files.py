"""The keys can live outside the state folder (issue 24, item 1): secrets_key_file and
web_secret_file are made (0600) and used where they say, and the state folder holds
neither."""

from __future__ import annotations

import os
import stat

from orchestrator.settings import Settings
from orchestrator.store.credentials.secret_box import box_of
from webui import create_app


def test_the_key_files_are_made_and_used_where_the_settings_say(store, settings, tmp_path):
    keys = tmp_path / "etc" / "orchestrator"
    s = settings.with_(
        secrets_key=None,
        secrets_key_file=str(keys / "secrets_key"),
        web_secret_file=str(keys / "webui_secret"),
    )
    box = box_of(s)
    app = create_app(s, store)
    for name in ("secrets_key", "webui_secret"):
        assert stat.S_IMODE(os.stat(keys / name).st_mode) == 0o600
        assert not os.path.exists(os.path.join(s.state_dir, name))
    assert app.config["SECRET_KEY"] == (keys / "webui_secret").read_text().strip()
    assert box.decrypt(box_of(s).encrypt("x"), "a test value") == "x"  # the same key again
    assert box.source == str(keys / "secrets_key")


def test_relative_key_files_are_relative_to_the_current_folder(tmp_path):
    s = Settings.load(
        {"ORCHESTRATOR_SECRETS_KEY_FILE": "k/secrets", "ORCHESTRATOR_WEB_SECRET_FILE": "w"},
        cwd=str(tmp_path),
    )
    assert s.secrets_key_file == str(tmp_path / "k" / "secrets")
    assert s.web_secret_file == str(tmp_path / "w")
