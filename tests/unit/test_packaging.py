"""The wheel holds one top-level package: webui/ and migrations/ travel inside it.

pyproject.toml lists the packages by hand (a package-dir mapping can't be found
automatically); these checks keep the list and the folders in step, and keep the web
UI importable under both of its names (``webui`` in a checkout, ``orchestrator.webui``
in a wheel). tests/system/test_wheel.py builds and installs the real wheel.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAPPED = {"webui": "orchestrator.webui", "migrations": "orchestrator._migrations"}


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _folders_with_python(top: str) -> set[str]:
    folders = {p.parent for p in (ROOT / top).rglob("*.py") if "__pycache__" not in p.parts}
    names = set()
    for folder in folders:
        parts = folder.relative_to(ROOT).parts
        head = MAPPED.get(parts[0], parts[0])
        names.add(".".join((head, *parts[1:])))
    return names


def test_every_package_folder_is_in_the_wheel_and_nothing_generic_at_the_top():
    config = _setuptools()
    packages = set(config["packages"])
    expected = set().union(*(_folders_with_python(t) for t in ("orchestrator", *MAPPED)))
    assert packages == expected
    assert {p.split(".")[0] for p in packages} == {"orchestrator"}
    assert config["package-dir"] == {v: k for k, v in MAPPED.items()}
    data = config["package-data"]
    assert set(data) == {"orchestrator.webui", "orchestrator._migrations"}
    for folder in ("templates", "static"):
        assert any(pattern.startswith(f"{folder}/") for pattern in data["orchestrator.webui"])


def test_the_web_ui_imports_itself_relatively():
    """An absolute ``webui...`` import inside webui/ breaks the installed package,
    where the web UI is ``orchestrator.webui`` and no ``webui`` exists."""
    wrong = []
    for path in (ROOT / "webui").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            wrong += [f"{path.relative_to(ROOT)}:{node.lineno} imports {n}" for n in names
                      if n == "webui" or n.startswith("webui.")]  # fmt: skip
    assert wrong == []


def test_the_engine_finds_the_web_ui_beside_its_own_package():
    from orchestrator.engine.services import web_ui

    module = web_ui("server")
    assert Path(module.__file__).resolve().parent == ROOT / "webui"
    assert callable(web_ui().create_app)


def test_the_migrations_are_found_without_alembic_ini():
    from alembic.script import ScriptDirectory

    from orchestrator.store.core.db import alembic_config, migrations_dir

    assert Path(migrations_dir()) == ROOT / "migrations"
    config = alembic_config("sqlite://")
    assert config.config_file_name is None
    assert ScriptDirectory.from_config(config).get_current_head() is not None
