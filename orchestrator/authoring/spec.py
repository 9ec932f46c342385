"""Serialized DAGs: what the store keeps, and what the scheduler and UI work from.

A :class:`DagSpec` is built from a DAG object by :func:`serialize_dag` (in the
process that imported the DAG file) and rebuilt from its JSON by
:meth:`DagSpec.from_json`, so nothing but the DAG processor and the task runner ever
imports user code.

>>> spec = DagSpec.from_json(serialize_dag(dag))    # doctest: +SKIP
>>> spec.tasks["load"].upstream                     # doctest: +SKIP
('extract',)
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

import networkx as nx

from orchestrator.authoring.alerts import serialized
from orchestrator.authoring.assets import assets_data
from orchestrator.authoring.dag import DAG
from orchestrator.authoring.params import plain_schema
from orchestrator.authoring.params import resolve as resolve_params
from orchestrator.authoring.setup_teardown import spec_fields as setup_teardown_fields
from orchestrator.authoring.task_controls import SKIP_EXIT_CODE
from orchestrator.authoring.taskflow import spec_fields as taskflow_fields
from orchestrator.scheduling.asset_conditions import AssetCondition, condition_from_data
from orchestrator.scheduling.mapping import group_of
from orchestrator.scheduling.retry import RetryPolicy
from orchestrator.scheduling.schedule import Schedule, parse_schedule
from orchestrator.scheduling.setup_teardown import SetupTeardown


def _seconds(value: timedelta | None) -> float | None:
    return None if value is None else value.total_seconds()


def _td(value: float | None) -> timedelta | None:
    return None if value is None else timedelta(seconds=value)


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def serialize_dag(dag: DAG) -> dict[str, Any]:
    sched = dag.schedule
    if sched.kind == "interval":
        raw: Any = {"interval": sched.interval.total_seconds()}
    elif sched.kind == "cron":
        raw = sched.expr
    elif sched.kind == "once":
        raw = "@once"
    else:
        raw = None
    tasks = []
    for t in dag.tasks.values():
        tasks.append(
            {
                "task_id": t.task_id,
                "kind": t.kind,
                "command": t.command,
                "upstream": sorted(t.upstream_ids),
                "retries": t.retries,
                "retry_delay": _seconds(t.retry_delay),
                "retry_exponential": t.retry_exponential,
                "max_retry_delay": _seconds(t.max_retry_delay),
                "timeout": _seconds(t.timeout),
                "trigger_rule": t.trigger_rule,
                "queue": t.queue,
                "description": t.description,
                "env": t.env,
                "lineno": t.lineno,
                "branch": t.branch,
                **({"pool": t.pool, "pool_slots": t.pool_slots} if t.pool else {}),
                **({"http": t.http} if t.http is not None else {}),
                # only when set, so a DAG that does not use it keeps its version hash
                **({"max_lost_tries": t.max_lost_tries} if t.max_lost_tries is not None else {}),
                **({"python_env": t.python_env} if getattr(t, "python_env", None) else {}),
                **({"outlets": [o.uri for o in t.outlets]} if t.outlets else {}),  # issue 15
                **({"mapping": t.mapping} if t.mapping is not None else {}),
                **(
                    {"map_index_template": t.map_index_template}
                    if getattr(t, "map_index_template", None)
                    else {}
                ),
                **({"doc_md": t.doc_md} if getattr(t, "doc_md", None) else {}),
                **({"sensor": t.sensor} if t.sensor is not None else {}),  # issue 15
                **({"check": t.check} if t.check is not None else {}),
                **serialized(t.alerts, t.callbacks),
                **controls_of_task(t),
                **setup_teardown_fields(t),  # issue 25
                **templates_of_task(t),
                **taskflow_fields(t),  # issue 25: the TaskFlow call, multiple_outputs
            }
        )
    return {
        "dag_id": dag.dag_id,
        "fileloc": dag.fileloc,
        "lineno": dag.lineno,
        "description": dag.description,
        "schedule": raw,
        "timezone": dag.timezone,
        "start_date": _iso(dag.start_date),
        "end_date": _iso(dag.end_date),
        "tags": dag.tags,
        "params": dag.params,
        "misfire": dag.misfire,
        "misfire_grace": _seconds(dag.misfire_grace),
        "catchup_window": _seconds(dag.catchup_window),
        "max_active_runs": dag.max_active_runs,
        "overlap": dag.overlap,
        "paused_at_creation": dag.paused,
        "tasks": tasks,
        **serialized(dag.alerts, dag.callbacks),
        **({"deadline": _seconds(dag.deadline)} if dag.deadline else {}),
        **_asset_fields(dag),
        **controls_of_dag(dag),
        **_param_fields(dag),
        **({"doc_md": dag.doc_md} if dag.doc_md else {}),  # issue 25
        # issue 26: only when set, so a DAG without it keeps its version hash
        **({"strict_conf": True} if dag.strict_conf else {}),
        # issue 27: the tasks' owners, for the DAG list; only when set (version hashes kept)
        **({"owners": dag.owners} if dag.owners else {}),
    }


def _param_fields(dag: DAG) -> dict[str, Any]:
    """Issue 25: the JSON Schemas of the DAG's typed Params and which have no default;
    only when used, so a DAG of plain params keeps its version hash."""
    out: dict[str, Any] = {}
    if dag.param_schemas:
        out["param_schemas"] = dag.param_schemas
    if dag.required_params:
        out["required_params"] = list(dag.required_params)
    return out


def _asset_fields(dag: DAG) -> dict[str, Any]:
    """Issue 15: the DAG's asset condition and every asset it names; only when used,
    so a DAG without assets keeps its version hash."""
    named = assets_data(dag.asset_condition, dag.tasks.values())
    out: dict[str, Any] = {"assets": named} if named else {}
    if dag.asset_condition is not None:
        out["asset_schedule"] = dag.asset_condition.to_data()
    return out


def controls_of_task(t: Any) -> dict[str, Any]:
    """A task's group and controls, each only when not the default (issue 14), so a DAG
    that uses none of them keeps its version hash."""
    out: dict[str, Any] = {}
    if t.group is not None:
        out["group"] = t.group
    if t.priority_weight != 1:
        out["priority_weight"] = t.priority_weight
    if t.depends_on_past:
        out["depends_on_past"] = True
    if t.max_active_tis_per_dag is not None:
        out["max_active_tis_per_dag"] = t.max_active_tis_per_dag
    if t.kind == "shell" and t.skip_on_exit_code != SKIP_EXIT_CODE:
        out["skip_on_exit_code"] = t.skip_on_exit_code
    if getattr(t, "run_as_user", None):  # issue 24
        out["run_as_user"] = t.run_as_user
    if getattr(t, "cwd", None):  # issue 26: BashOperator's cwd and output
        out["cwd"] = t.cwd
    if getattr(t, "output_last_line", False):
        out["output_last_line"] = True
    if getattr(t, "bash", False):
        out["bash"] = True
    return out


def templates_of_task(t: Any) -> dict[str, Any]:
    """Issue 25: the template files a task's command and env came from, and whether its
    templates use the DAG's user-defined macros or filters; only when so, so a DAG that
    uses none keeps its version hash."""
    out: dict[str, Any] = {}
    if t.command_file:
        out["command_file"] = t.command_file
    if t.env_files:
        out["env_files"] = dict(t.env_files)
    if t.user_templates:
        out["user_templates"] = True
    return out


def task_controls_from(t: dict[str, Any]) -> dict[str, Any]:
    return {
        "group": t.get("group"),
        "priority_weight": t.get("priority_weight", 1),
        "depends_on_past": t.get("depends_on_past", False),
        "max_active_tis_per_dag": t.get("max_active_tis_per_dag"),
        "skip_on_exit_code": t.get("skip_on_exit_code", SKIP_EXIT_CODE),
        "run_as_user": t.get("run_as_user"),
        "cwd": t.get("cwd"),
        "output_last_line": t.get("output_last_line", False),
        "bash": t.get("bash", False),
    }


def controls_of_dag(dag: DAG) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if dag.max_active_tasks is not None:
        out["max_active_tasks"] = dag.max_active_tasks
    if dag.dagrun_timeout is not None:
        out["dagrun_timeout"] = dag.dagrun_timeout.total_seconds()
    return out


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def spec_hash(data: dict[str, Any]) -> str:
    return hashlib.sha256(dumps(data).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class TaskSpec:
    task_id: str
    kind: str
    command: str | None
    upstream: tuple[str, ...]
    retries: int
    retry_delay: timedelta
    retry_exponential: bool
    max_retry_delay: timedelta
    timeout: timedelta | None
    trigger_rule: str
    queue: str
    description: str | None
    env: dict[str, str]
    lineno: int | None
    branch: bool = False
    pool: str | None = None
    pool_slots: int = 1
    alerts: tuple[dict[str, Any], ...] = ()
    callbacks: tuple[str, ...] = ()
    http: dict[str, Any] | None = None  # the request of an HTTP task
    # tries lost to infrastructure not held against retries; None: the setting
    max_lost_tries: int | None = None
    # a sensor's options (seconds) and a built-in sensor's declarative check (issue 15)
    sensor: dict[str, Any] | None = None
    check: dict[str, Any] | None = None
    # a mapped task's sources and fixed arguments (scheduling/mapping.py); None: not mapped
    mapping: dict[str, Any] | None = None

    outlets: tuple[str, ...] = ()  # asset URIs a successful try records events for
    # issue 14: task groups and task controls (authoring/task_controls.py)
    group: str | None = None  # the task group path ("outer.inner"), None outside groups
    priority_weight: int = 1
    depends_on_past: bool = False
    max_active_tis_per_dag: int | None = None
    skip_on_exit_code: int | None = SKIP_EXIT_CODE
    run_as_user: str | None = None  # issue 24: the OS user its try runs as (else task_user)
    # issue 26: a shell task's working directory (None: the DAG file's folder), and its
    # last line of output as its result
    cwd: str | None = None
    output_last_line: bool = False
    bash: bool = False  # run with bash -c (BashOperator), not /bin/sh -c
    # issue 25: setup and teardown tasks (authoring/setup_teardown.py)
    is_setup: bool = False
    is_teardown: bool = False
    on_failure_fail_dagrun: bool = False
    # issue 25: template files (shown on the task page) and whether its templates use
    # the DAG's user_defined_macros / user_defined_filters (rendered with the DAG file)
    command_file: str | None = None
    env_files: dict[str, str] = field(default_factory=dict)
    user_templates: bool = False
    # issue 25: upstream tasks this task reads only some keys of (authoring/taskflow.py)
    result_keys: dict[str, list[str]] = field(default_factory=dict)
    # issue 25 item 7: the name of each instance of a mapped task (map_index_template.py)
    map_index_template: str | None = None
    doc_md: str | None = None  # issue 25: the task's Markdown documentation

    @property
    def mapped(self) -> bool:
        return self.mapping is not None

    @property
    def max_tries(self) -> int:
        return self.retries + 1

    @property
    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy.of(self)


@dataclass(frozen=True)
class DagSpec:
    dag_id: str
    fileloc: str
    description: str | None
    schedule_raw: Any
    timezone: str
    start_date: datetime | None
    end_date: datetime | None
    tags: tuple[str, ...]
    params: dict[str, Any]
    misfire: str
    misfire_grace: timedelta
    catchup_window: timedelta | None
    max_active_runs: int
    overlap: str
    paused_at_creation: bool
    tasks: dict[str, TaskSpec]
    alerts: tuple[dict[str, Any], ...] = ()
    callbacks: tuple[str, ...] = ()
    deadline: timedelta | None = None
    asset_schedule: Any = None  # the stored asset condition (issue 15), None if not used
    assets: tuple[dict[str, Any], ...] = ()  # every asset the DAG names: uri, name, group

    @cached_property
    def asset_condition(self) -> AssetCondition | None:
        return None if self.asset_schedule is None else condition_from_data(self.asset_schedule)

    def schedule_description(self) -> str:
        """The schedule in words, asset condition included (``assets: a & b``)."""
        cond = self.asset_condition
        if cond is None:
            return self.schedule.describe()
        if self.schedule.kind == "none":
            return f"assets: {cond.describe()}"
        return f"{self.schedule.describe()} or assets: {cond.describe()}"

    # issue 14: task controls
    max_active_tasks: int | None = None
    dagrun_timeout: timedelta | None = None
    # issue 25: the JSON Schema of each typed Param (a plain param's is its default's
    # JSON type), and the params without a default, which every trigger must give
    param_schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    required_params: tuple[str, ...] = ()
    doc_md: str | None = None  # issue 25: the DAG's Markdown documentation
    strict_conf: bool = False  # issue 26: conf keys that are not params are refused

    def param_schema(self, name: str) -> dict[str, Any]:
        """The JSON Schema of param ``name`` (a plain param's: its default's type)."""
        if name in self.param_schemas:
            return self.param_schemas[name]
        return plain_schema(self.params.get(name))

    @cached_property
    def schedule(self) -> Schedule:
        raw = self.schedule_raw
        if isinstance(raw, dict):
            raw = timedelta(seconds=raw["interval"])
        return parse_schedule(raw, timezone=self.timezone, start=self.start_date, end=self.end_date)

    @cached_property
    def downstream(self) -> dict[str, tuple[str, ...]]:
        down: dict[str, list[str]] = {t: [] for t in self.tasks}
        for t in self.tasks.values():
            for up in t.upstream:
                down[up].append(t.task_id)
        return {k: tuple(v) for k, v in down.items()}

    @cached_property
    def graph(self) -> nx.DiGraph:
        g = nx.DiGraph()
        g.add_nodes_from(self.tasks)
        for t in self.tasks.values():
            g.add_edges_from((u, t.task_id) for u in t.upstream)
        return g

    @cached_property
    def topological_order(self) -> tuple[str, ...]:
        return tuple(nx.lexicographical_topological_sort(self.graph))

    @cached_property
    def leaves(self) -> tuple[str, ...]:
        return tuple(t for t, d in self.downstream.items() if not d)

    @cached_property
    def setup_teardown(self) -> SetupTeardown:
        """The DAG's setups and teardowns on its graph (scheduling/setup_teardown.py)."""
        tasks = self.tasks.values()
        return SetupTeardown(
            {t.task_id: t.upstream for t in tasks},
            setups=[t.task_id for t in tasks if t.is_setup],
            teardowns=[t.task_id for t in tasks if t.is_teardown],
            fail_dagrun=[t.task_id for t in tasks if t.is_teardown and t.on_failure_fail_dagrun],
        )

    @cached_property
    def run_leaves(self) -> tuple[str, ...]:
        """The tasks whose states decide the run's: the leaves, teardowns ignored unless
        ``on_failure_fail_dagrun`` (issue 25)."""
        if not any(t.is_teardown for t in self.tasks.values()):
            return self.leaves
        return self.setup_teardown.run_leaves()

    @cached_property
    def mapped_tasks(self) -> frozenset[str]:
        """The ids of the DAG's mapped tasks (one instance per map item)."""
        return frozenset(t.task_id for t in self.tasks.values() if t.mapping is not None)

    @cached_property
    def mapped_groups(self) -> dict[str, tuple[str, ...]]:
        """Each mapped task group (issue 25 item 7) and its tasks' ids."""
        out: dict[str, list[str]] = {}
        for t in self.tasks.values():
            group = group_of(t.mapping)
            if group is not None:
                out.setdefault(group, []).append(t.task_id)
        return {g: tuple(sorted(ids)) for g, ids in out.items()}

    def group_members(self, group: str) -> tuple[str, ...]:
        return self.mapped_groups.get(group, ())

    def mapped_group_of(self, task_id: str) -> str | None:
        """The mapped task group ``task_id`` is in (None: not in one)."""
        return group_of(self.tasks[task_id].mapping)

    def same_instance_upstream(self, task_id: str) -> frozenset[str]:
        """The upstream tasks of ``task_id`` in its own mapped task group: instance i
        waits for their instance i only (empty outside a mapped group)."""
        return self._same_instance.get(task_id, frozenset())

    @cached_property
    def _same_instance(self) -> dict[str, frozenset[str]]:
        out = {}
        for ids in self.mapped_groups.values():
            members = set(ids)
            for t in ids:
                out[t] = frozenset(u for u in self.tasks[t].upstream if u in members)
        return out

    def has_mapped_upstream(self, task_id: str) -> bool:
        return any(u in self.mapped_tasks for u in self.tasks[task_id].upstream)

    @cached_property
    def _complements(self) -> dict[str, tuple[str, ...]]:
        return {}

    def upstream_complement(self, task_id: str) -> tuple[str, ...]:
        """Every task of the DAG that is not an upstream task of ``task_id`` (cached)."""
        others = self._complements.get(task_id)
        if others is None:
            ups = set(self.tasks[task_id].upstream)
            others = self._complements[task_id] = tuple(x for x in self.tasks if x not in ups)
        return others

    def branch_targets(self, task_id: str, result: str | None) -> tuple[str, ...]:
        """The direct downstream tasks a branch task chose, from its JSON result.

        The result must be a task id, a list of ids, or null/[] (follow none), each a
        direct downstream task of ``task_id``; otherwise ValueError says what is wrong.
        """
        value = None if result is None else json.loads(result)
        chosen = [value] if isinstance(value, str) else value
        if chosen is None:
            chosen = []
        down = self.downstream[task_id]
        if not isinstance(chosen, list) or not all(isinstance(c, str) for c in chosen):
            raise ValueError(
                f"branch task {task_id!r} must return a task id or a list of task ids, got {result}"
            )
        unknown = [c for c in chosen if c not in down]
        if unknown:
            raise ValueError(
                f"branch task {task_id!r} returned {', '.join(map(repr, unknown))}, not a "
                f"direct downstream task (one of: {', '.join(down) or 'none'})"
            )
        return tuple(dict.fromkeys(chosen))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DagSpec:
        tasks = {}
        for t in data["tasks"]:
            tasks[t["task_id"]] = TaskSpec(
                task_id=t["task_id"],
                kind=t["kind"],
                command=t["command"],
                upstream=tuple(t["upstream"]),
                retries=t["retries"],
                retry_delay=_td(t["retry_delay"]),
                retry_exponential=t["retry_exponential"],
                max_retry_delay=_td(t["max_retry_delay"]),
                timeout=_td(t["timeout"]),
                trigger_rule=t["trigger_rule"],
                queue=t["queue"],
                description=t["description"],
                env=t.get("env") or {},
                lineno=t["lineno"],
                branch=t.get("branch", False),
                pool=t.get("pool"),
                pool_slots=t.get("pool_slots", 1),
                alerts=tuple(t.get("alerts") or ()),
                callbacks=tuple(t.get("callbacks") or ()),
                http=t.get("http"),
                max_lost_tries=t.get("max_lost_tries"),
                outlets=tuple(t.get("outlets") or ()),
                **task_controls_from(t),
                mapping=t.get("mapping"),
                sensor=t.get("sensor"),
                check=t.get("check"),
                is_setup=t.get("is_setup", False),
                is_teardown=t.get("is_teardown", False),
                on_failure_fail_dagrun=t.get("on_failure_fail_dagrun", False),
                command_file=t.get("command_file"),
                env_files=t.get("env_files") or {},
                user_templates=t.get("user_templates", False),
                result_keys=t.get("result_keys") or {},
                map_index_template=t.get("map_index_template"),
                doc_md=t.get("doc_md"),
            )
        return cls(
            dag_id=data["dag_id"],
            fileloc=data["fileloc"],
            description=data["description"],
            schedule_raw=data["schedule"],
            timezone=data["timezone"],
            start_date=datetime.fromisoformat(data["start_date"]) if data["start_date"] else None,
            end_date=datetime.fromisoformat(data["end_date"]) if data["end_date"] else None,
            tags=tuple(data["tags"]),
            params=data["params"],
            misfire=data["misfire"],
            misfire_grace=_td(data["misfire_grace"]) or timedelta(0),
            catchup_window=_td(data["catchup_window"]),
            max_active_runs=data["max_active_runs"],
            overlap=data["overlap"],
            paused_at_creation=data["paused_at_creation"],
            tasks=tasks,
            alerts=tuple(data.get("alerts") or ()),
            callbacks=tuple(data.get("callbacks") or ()),
            deadline=_td(data.get("deadline")),
            asset_schedule=data.get("asset_schedule"),
            assets=tuple(data.get("assets") or ()),
            max_active_tasks=data.get("max_active_tasks"),
            dagrun_timeout=_td(data.get("dagrun_timeout")),
            param_schemas=data.get("param_schemas") or {},
            required_params=tuple(data.get("required_params") or ()),
            doc_md=data.get("doc_md"),
            strict_conf=data.get("strict_conf", False),
        )

    @classmethod
    def from_json(cls, text: str) -> DagSpec:
        return cls.from_dict(json.loads(text))


MAX_CONF_BYTES = 65536  # the default of the max_conf_bytes setting
MAX_CONF_DEPTH = 32  # lists and objects nested deeper than this are refused


def json_value_problem(value: Any, depth: int = 0) -> str | None:
    """What makes a JSON value unfit to store and show, or None: nested deeper than
    :data:`MAX_CONF_DEPTH`, a NUL character or a lone surrogate in a string (or a key),
    NaN or Infinity. The one rule for a run's conf, an asset event's extra and every
    JSON body the API accepts (issue 24 item 12)."""
    if depth > MAX_CONF_DEPTH:
        return f"nested deeper than {MAX_CONF_DEPTH} levels"
    if isinstance(value, str):
        if "\x00" in value:
            return "a NUL character"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "a lone surrogate (not valid Unicode text)"
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN or Infinity (not JSON)"
    items: Any = ()
    if isinstance(value, dict):
        items = [*value.keys(), *value.values()]
    elif isinstance(value, list | tuple):
        items = value
    for item in items:
        problem = json_value_problem(item, depth + 1)
        if problem:
            return problem
    return None


def validate_conf(spec: DagSpec, conf: Any, *, max_bytes: int = MAX_CONF_BYTES) -> dict[str, Any]:
    """Check a run's ``conf`` against the DAG's declared params; return the merged params.

    Keys that are not declared params are kept (Airflow's rule; issue 26), unless the
    DAG has ``strict_conf=True``, which refuses them. Each declared param's value must
    pass its JSON Schema
    (a typed :class:`~orchestrator.authoring.params.Param`'s, checked by ``jsonschema``)
    or have the JSON type of a plain param's default (an integer is accepted for a
    number; a param whose default is None accepts anything); every required param
    (a Param without a default) must be given. The conf as JSON may take at most
    ``max_bytes`` bytes, nest at most :data:`MAX_CONF_DEPTH` levels, and hold no NUL
    character, lone surrogate, NaN or Infinity. Errors name the DAG, the param and the
    rule.

    >>> spec = DagSpec.from_dict({**_EXAMPLE, "params": {"n": 1}})  # doctest: +SKIP
    >>> validate_conf(spec, {"n": "x"})                                  # doctest: +SKIP
    ConfigError: DAG 'd': param 'n' must be an integer (like its default 1), got a string "x"
    """
    from orchestrator.errors import ConfigError, ParamValidationError

    if not isinstance(conf, dict):
        raise ConfigError(
            f"DAG {spec.dag_id!r}: conf must be a JSON object, got {type(conf).__name__}"
        )
    problem = json_value_problem(conf)
    if problem:
        raise ConfigError(f"DAG {spec.dag_id!r}: conf holds {problem}")
    size = len(json.dumps(conf).encode())
    if size > max_bytes:
        raise ConfigError(
            f"DAG {spec.dag_id!r}: conf is {size} bytes as JSON, more than the "
            f"{max_bytes}-byte limit (max_conf_bytes)"
        )
    try:
        return resolve_params(
            spec.params, spec.param_schemas, spec.required_params, conf, strict=spec.strict_conf
        )
    except ValueError as exc:
        raise ParamValidationError(f"DAG {spec.dag_id!r}: {exc}") from None
