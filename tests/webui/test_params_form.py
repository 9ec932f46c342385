"""The typed trigger form (issue 25): one widget per param schema, read back typed."""

from __future__ import annotations

import pytest

from orchestrator import DAG, Param
from orchestrator.authoring.spec import DagSpec, serialize_dag
from orchestrator.errors import ConfigError
from webui.params_form import fields_for, parse_params

PARAMS = {
    "mode": Param("delta", enum=["delta", "full"], values_display={"full": "Full reload"}),
    "limit": Param(100, type="integer", minimum=1, maximum=1000, title="Row limit"),
    "ratio": Param(0.5, type="number", minimum=0),
    "day": Param("2026-01-01", type="string", format="date", description="the day to load"),
    "at": Param("2026-01-01T10:30:00+00:00", type="string", format="date-time"),
    "full": Param(False, type="boolean"),
    "opts": Param({"a": 1}, type="object"),
    "tags": Param(["x"], type="array"),
    "name": Param("x", type="string", minLength=1, maxLength=8),
    "maybe": Param(None, type=["null", "integer"]),
    "to": Param(type="string", format="email"),
    "plain": 3,
}


def _spec() -> DagSpec:
    with DAG("form", schedule=None, params=PARAMS) as dag:
        pass
    return DagSpec.from_dict(serialize_dag(dag))


def test_each_schema_gets_its_widget():
    spec = _spec()
    fields = {f.name: f for f in fields_for(spec.params, spec.param_schemas, spec.required_params)}
    kinds = {name: f.kind for name, f in fields.items()}
    assert kinds == {
        "mode": "select", "limit": "number", "ratio": "number", "day": "date",
        "at": "datetime-local", "full": "checkbox", "opts": "json", "tags": "json",
        "name": "text", "maybe": "number", "to": "text", "plain": "number",
    }  # fmt: skip
    mode = fields["mode"]
    assert [(o.value, o.label, o.selected) for o in mode.options] == [
        ('"delta"', "delta", True),
        ('"full"', "Full reload", False),
    ]
    limit = fields["limit"]
    assert (limit.minimum, limit.maximum, limit.step, limit.label) == (
        "1",
        "1000",
        "1",
        "Row limit",
    )
    assert fields["ratio"].step == "any" and fields["ratio"].maximum is None
    assert fields["day"].description == "the day to load" and fields["day"].value == "2026-01-01"
    assert fields["at"].value == "2026-01-01T10:30"
    assert (fields["name"].min_length, fields["name"].max_length) == (1, 8)
    assert fields["to"].required and not fields["day"].required
    assert fields["opts"].value == '{\n "a": 1\n}'


def test_the_form_reads_back_typed_values():
    spec = _spec()
    form = {
        "param.mode": '"full"',
        "param.limit": "7",
        "param.ratio": "2",
        "param.day": "2026-02-01",
        "param.at": "2026-02-01T08:15",
        "param.opts": '{"b": [1]}',
        "param.tags": "[]",
        "param.name": "y",
        "param.maybe": "",
        "param.to": "a@b.example",
        "param.plain": "9",
    }
    assert parse_params(spec.params, form, spec.param_schemas) == {
        "mode": "full", "limit": 7, "ratio": 2, "day": "2026-02-01",
        "at": "2026-02-01T08:15:00+00:00", "full": False, "opts": {"b": [1]}, "tags": [],
        "name": "y", "maybe": None, "to": "a@b.example", "plain": 9,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("field", "raw", "message"),
    [
        ("limit", "1.5", "param 'limit': expected int, got '1.5'"),
        ("mode", '"other"', "param 'mode': \"other\" is not one of its choices"),
        ("mode", "{oops", "param 'mode': expected one of its choices"),
        ("opts", "{oops", "param 'opts': expected JSON, got '{oops'"),
        ("at", "tomorrow", "param 'at': expected a date and time"),
    ],
)
def test_a_value_of_the_wrong_type_names_the_field(field, raw, message):
    spec = _spec()
    with pytest.raises(ConfigError) as err:
        parse_params(spec.params, {f"param.{field}": raw}, spec.param_schemas)
    assert message in str(err.value)
