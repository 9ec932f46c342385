"""The package tree is the architecture (docs/architecture.md): imports read one way,
cli -> engine/observability -> store -> authoring -> scheduling -> ground floor, and no
module of orchestrator/ or webui/ takes part in an import circle, lazy imports included.

A new module is checked without an entry here; only an exception to the rule needs one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[2]

# the order of the layers: a module may import its own layer and any layer below it
RANK = {
    "ground": 0,  # settings, clock, states, errors
    "scheduling": 1,
    "authoring": 2,
    "store": 3,
    "engine": 4,
    "observability": 4,  # a peer of engine: the alert loop runs hooks in task processes
    "webui": 5,
    "cli": 6,
}

# exceptions, each with its reason (docs/architecture.md lists them too)
ALLOWED = {
    # the public names DAG files import: `from orchestrator import DAG, task`
    ("orchestrator", "orchestrator.authoring.dag"),
    # issue 16: `from orchestrator import Connection` (secrets backends, type hints)
    ("orchestrator", "orchestrator.authoring.credentials"),
    # issue 14: `from orchestrator import TaskGroup, task_group` (lazy, like DAG)
    ("orchestrator", "orchestrator.authoring.task_group"),
    # issue 30: `from orchestrator import BaseTrigger, TriggerEvent` (lazy, like DAG)
    ("orchestrator", "orchestrator.authoring.triggers"),
    # `python -m orchestrator` is the CLI
    ("orchestrator.__main__", "orchestrator.cli"),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(p): p for top in ("orchestrator", "webui") for p in (ROOT / top).rglob("*.py")
    }


def _layer(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "webui":
        return "webui"
    if len(parts) > 1 and parts[1] in RANK:
        return parts[1]
    if module == "orchestrator.alerts":  # the public alert helpers for DAG files
        return "authoring"
    if module == "orchestrator.sensors":  # the public sensors for DAG files (issue 15)
        return "authoring"
    if module in ("orchestrator.triggers", "orchestrator.watchers"):  # for DAG files (issue 30)
        return "authoring"
    if module.startswith("orchestrator.airflow"):  # Airflow's names for DAG files (issue 26)
        return "authoring"
    return "ground"


def _absolute(name: str, path: Path, module: str | None, level: int) -> str:
    """The absolute module of ``from <level dots><module> import ...`` in ``name``
    (webui/ imports its own modules relatively: it is also ``orchestrator.webui``)."""
    if level == 0:
        return module or ""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    base = package[: len(package) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def import_graph() -> nx.DiGraph:
    """Every import between project modules, at module level or inside a function."""
    modules = _modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or node.level):
                module = _absolute(name, path, node.module, node.level)
                subs = [f"{module}.{a.name}" for a in node.names]
                subs = [s for s in subs if s in modules]
                targets = subs if len(subs) == len(node.names) else [module, *subs]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                # importing a submodule runs its parent package's __init__ first; that is
                # not a dependency of the importer on the package's other modules
                if target in modules and target != name and not name.startswith(target + "."):
                    graph.add_edge(name, target, line=node.lineno)
    return graph


def test_no_module_takes_part_in_an_import_circle():
    cycles = list(nx.simple_cycles(import_graph()))
    assert cycles == [], f"import circles: {cycles}"


def upward_imports(graph: nx.DiGraph) -> list[str]:
    """The imports of ``graph`` that go up the layers and are not in ALLOWED."""
    return [
        f"{a} ({_layer(a)}) imports {b} ({_layer(b)}) at line {data['line']}"
        for a, b, data in graph.edges(data=True)
        if RANK[_layer(b)] > RANK[_layer(a)] and (a, b) not in ALLOWED
    ]


def test_imports_only_go_down_the_layers():
    assert upward_imports(import_graph()) == []


def test_scheduling_imports_no_database_and_no_processes():
    forbidden = ("sqlalchemy", "flask", "multiprocessing", "subprocess", "threading")
    for path in (ROOT / "orchestrator" / "scheduling").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                assert not name.startswith(forbidden), f"{path.name} imports {name}"


# store/ by aggregate (docs/architecture.md): a subpackage imports core/ and only the
# aggregates ranked below it; the package itself (the one Store) imports them all
STORE_RANK = {
    "core": 0,  # engines, schema, records, identity, transaction helpers
    "observe": 1,  # events, alerts, shipped logs: written by everyone above
    "credentials": 1,
    "access": 1,
    "cluster": 1,
    "dags": 2,  # DAG rows and versions (every transition reads a version's spec)
    "runs": 3,  # inserting, starting and finishing runs
    "assets": 4,  # an asset event's run is inserted through runs/
    "tasks": 5,  # a success records outlet events (assets/), finishes runs (runs/)
    "backfills": 6,  # a backfill's rerun clears task instances (tasks/)
    "triggers": 6,  # a trigger's event resumes its task (tasks/); watchers emit (assets/)
    "reads": 7,  # pages, grids, metrics and the explainer read across the aggregates
}
STORE_ALLOWED: set[tuple[str, str]] = set()  # exceptions, each with its reason


def _aggregate(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] == ["orchestrator", "store"] and len(parts) > 2:
        return parts[2]
    return None


def store_upward_imports(graph: nx.DiGraph) -> list[str]:
    """Imports between store subpackages that do not go strictly down STORE_RANK."""
    bad = []
    for a, b, data in graph.edges(data=True):
        sa, sb = _aggregate(a), _aggregate(b)
        if sa is None or sb is None or sa == sb or (a, b) in STORE_ALLOWED:
            continue
        if STORE_RANK[sb] >= STORE_RANK[sa]:
            bad.append(f"{a} ({sa}) imports {b} ({sb}) at line {data['line']}")
    return bad


def test_every_store_module_sits_in_a_ranked_aggregate():
    stray = [
        name
        for name in _modules()
        if name.startswith("orchestrator.store.") and _aggregate(name) not in STORE_RANK
    ]
    assert stray == []


def test_imports_inside_the_store_only_go_down_its_aggregates():
    graph = import_graph()
    assert store_upward_imports(graph) == []
    bad = graph.copy()
    bad.add_edge("orchestrator.store.runs.run_store", "orchestrator.store.tasks.claims", line=3)
    assert store_upward_imports(bad) == [
        "orchestrator.store.runs.run_store (runs) imports orchestrator.store.tasks.claims "
        "(tasks) at line 3"
    ]


def _store_methods() -> dict[str, str]:
    """Every method of a store class (``...Store``), by name: its aggregate."""
    owner = {}
    for path in (ROOT / "orchestrator" / "store").rglob("*.py"):
        agg = _aggregate(_module_name(path))
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and node.name.endswith("Store"):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        owner[item.name] = agg
    return owner


def store_upward_calls(paths: list[Path], owner: dict[str, str]) -> list[str]:
    """Calls of ``self.<method>`` / ``store.<method>`` from one aggregate to a method of an
    aggregate not ranked below it: the Store's one face hides them from the import graph."""
    bad = []
    for path in paths:
        here = _aggregate(_module_name(path)) if path.is_relative_to(ROOT) else path.parent.name
        for node in ast.walk(ast.parse(path.read_text())):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in ("self", "store")
            ):
                continue
            there = owner.get(node.func.attr)
            if there and there != here and STORE_RANK[there] >= STORE_RANK[here]:
                bad.append(
                    f"{_shown(path)}:{node.lineno} ({here}) calls {there}'s {node.func.attr}"
                )
    return bad


def test_store_methods_called_through_self_only_go_down_the_aggregates(tmp_path: Path):
    owner = _store_methods()
    inner = [p for p in (ROOT / "orchestrator" / "store").rglob("*.py") if p.parent.name != "store"]
    assert store_upward_calls(inner, owner) == []
    probe = tmp_path / "runs" / "probe.py"
    probe.parent.mkdir()
    probe.write_text("def f(self):\n    return self.claim(1)\n")
    assert store_upward_calls([probe], owner) == ["probe.py:2 (runs) calls tasks's claim"]


def shadowed_methods(cls: type) -> list[str]:
    """Names defined by more than one of the classes ``cls`` is composed of: all but the
    first in its MRO are silently hidden."""
    owners: dict[str, list[str]] = {}
    for base in cls.__mro__[1:]:
        if base is object or base.__name__.endswith("Aggregate"):
            continue
        for name in vars(base):
            if not (name.startswith("__") and name.endswith("__")):
                owners.setdefault(name, []).append(f"{base.__module__}.{base.__name__}")
    return [f"{name}: {', '.join(by)}" for name, by in sorted(owners.items()) if len(by) > 1]


def test_no_store_method_hides_another():
    """Store is one namespace made of every aggregate's classes: a read named like a
    transition (``task_instances``) would replace it for every caller, unnoticed."""
    from orchestrator.store import Store
    from orchestrator.store.reads.run_pages import RunPagesStore
    from orchestrator.store.tasks.task_store import TaskStore

    assert shadowed_methods(Store) == []

    class Clash(RunPagesStore):
        def task_instances(self) -> None: ...

    class Both(Clash, TaskStore): ...

    assert shadowed_methods(Both) == [
        f"task_instances: {__name__}.Clash, orchestrator.store.tasks.task_store.TaskStore"
    ]


def _imported_names(path: Path) -> list[tuple[str, int]]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names += [(f"{node.module}.{a.name}", node.lineno) for a in node.names]
        elif isinstance(node, ast.Import):
            names += [(a.name, node.lineno) for a in node.names]
    return names


# outside the store, SQLAlchemy only for its exception types and for parsing URLs
SQLALCHEMY_OUTSIDE = ("sqlalchemy.exc", "sqlalchemy.engine.make_url", "sqlalchemy.engine.url")


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def outside_store_sql(paths: list[Path]) -> list[str]:
    bad = []
    for path in paths:
        for name, line in _imported_names(path):
            models = name.startswith("orchestrator.store.core.models")
            sql = name.split(".")[0] == "sqlalchemy" and not name.startswith(SQLALCHEMY_OUTSIDE)
            if models or sql:
                bad.append(f"{_shown(path)}:{line} imports {name}")
    return sorted(set(bad))


def _outside_store() -> list[Path]:
    return [
        p
        for top in ("orchestrator", "webui")
        for p in (ROOT / top).rglob("*.py")
        if "store" not in p.relative_to(ROOT).parts[:2]
    ]


def test_only_the_store_reads_the_tables():
    assert outside_store_sql(_outside_store()) == []


def test_the_table_check_sees_a_query_outside_the_store(tmp_path: Path):
    page = tmp_path / "page.py"
    page.write_text(
        "from sqlalchemy import select\n"
        "from sqlalchemy.exc import OperationalError\n"
        "from sqlalchemy.engine import make_url\n"
        "import sqlalchemy\n"
        "from orchestrator.store.core import models as m\n"
    )
    assert outside_store_sql([page]) == [
        "page.py:1 imports sqlalchemy.select",
        "page.py:4 imports sqlalchemy",
        "page.py:5 imports orchestrator.store.core.models",
    ]


def test_the_checker_sees_an_upward_import():
    """The rule above is live: the real tree's graph is read, and an upward import
    added to it is listed."""
    graph = import_graph()
    bad = graph.copy()
    bad.add_edge("orchestrator.scheduling.retry", "orchestrator.store.tasks.claims", line=7)
    assert upward_imports(bad) == [
        "orchestrator.scheduling.retry (scheduling) imports orchestrator.store.tasks.claims (store) "
        "at line 7"
    ]
    assert graph.has_edge(
        "orchestrator.store.tasks.release", "orchestrator.scheduling.trigger_rules"
    )
    assert (
        RANK[_layer("orchestrator.engine.worker")] > RANK[_layer("orchestrator.store.tasks.claims")]
    )
    assert _layer("webui.views.api") == "webui" and _layer("orchestrator.settings") == "ground"
    assert graph.has_edge("webui.views.api", "webui.current")  # a relative import
