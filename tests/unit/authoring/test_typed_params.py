"""Typed params (issue 25, item 6): Param's JSON Schema checked by jsonschema, at import
for defaults and on every conf through validate_conf, naming the param and the rule."""

from __future__ import annotations

import pytest

from orchestrator import DAG, Param, task
from orchestrator.authoring.spec import DagSpec, serialize_dag, spec_hash, validate_conf
from orchestrator.errors import ConfigError, DagDefinitionError

PARAMS = {
    "day": Param("2026-01-01", type="string", format="date", description="the day to load"),
    "limit": Param(100, type="integer", minimum=1, maximum=1000, title="Row limit"),
    "mode": Param("delta", enum=["delta", "full"]),
    "ratio": Param(0.5, type="number", exclusiveMaximum=1),
    "email": Param(type="string", format="email"),  # required: no default
    "opts": Param({"a": 1}, type="object", properties={"a": {"type": "integer"}}),
    "tags": Param([], type="array", items={"type": "string"}, maxItems=2),
    "maybe": Param(None, type=["null", "integer"]),
    "dry_run": False,  # a plain param: typed like its default
}


def _spec(params=PARAMS, **kw) -> DagSpec:
    with DAG("typed", schedule=None, params=params, **kw) as dag:

        @task
        def t():
            return 1

    return DagSpec.from_dict(serialize_dag(dag))


def test_param_is_public_with_airflows_shape():
    p = Param(3, type="integer", minimum=1, description="how many")
    assert (p.value, p.description, p.schema) == (3, "how many", {"type": "integer", "minimum": 1})
    assert p.has_value and not Param(type="string").has_value


def test_the_spec_stores_defaults_schemas_and_required_params():
    spec = _spec()
    assert spec.params["limit"] == 100 and spec.params["email"] is None
    assert spec.required_params == ("email",)
    assert spec.param_schema("limit") == {
        "type": "integer", "minimum": 1, "maximum": 1000, "title": "Row limit"
    }  # fmt: skip
    assert spec.param_schema("day")["description"] == "the day to load"
    assert spec.param_schema("dry_run") == {"type": "boolean"}  # plain: its default's type


def test_a_dag_of_plain_params_keeps_its_version_hash():
    data = serialize_dag(_dag_plain())
    assert "param_schemas" not in data and "required_params" not in data
    assert spec_hash(data) == spec_hash(serialize_dag(_dag_plain()))


def _dag_plain() -> DAG:
    with DAG("plain", schedule=None, params={"n": 1}) as dag:

        @task
        def t():
            return 1

    return dag


GOOD = {"email": "a@example.com"}


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"limit": 5000}, "param 'limit': 5000 is greater than the maximum of 1000 (rule maximum: 1000)"),
        ({"limit": 0}, "param 'limit': 0 is less than the minimum of 1 (rule minimum: 1)"),
        ({"limit": "7"}, "param 'limit': '7' is not of type 'integer' (rule type: \"integer\")"),
        ({"mode": "all"}, "param 'mode': 'all' is not one of ['delta', 'full'] (rule enum: "),
        ({"day": "2026-02-30"}, "param 'day': '2026-02-30' is not a 'date' (rule format: \"date\")"),
        ({"email": "nobody"}, "param 'email': 'nobody' is not a 'email' (rule format: \"email\")"),
        ({"ratio": 1}, "param 'ratio': 1 is greater than or equal to the maximum of 1 (rule exclusiveMaximum: 1)"),
        ({"opts": {"a": "x"}}, "param 'opts'['a']: 'x' is not of type 'integer'"),
        ({"tags": ["a", "b", "c"]}, "param 'tags': ['a', 'b', 'c'] is too long (rule maxItems: 2)"),
        ({"maybe": "x"}, "param 'maybe': 'x' is not of type 'null', 'integer'"),
        ({"dry_run": "yes"}, "param 'dry_run' must be a boolean (like its default false), got a string \"yes\""),
    ],
)  # fmt: skip
def test_a_conf_breaking_a_rule_names_the_param_and_the_rule(conf, message):
    with pytest.raises(ConfigError) as err:
        validate_conf(_spec(), {**GOOD, **conf})
    assert str(err.value).startswith("DAG 'typed': ") and message in str(err.value)


def test_a_required_param_must_be_given():
    with pytest.raises(ConfigError, match="param 'email' is required .* \\(rule required\\)"):
        validate_conf(_spec(), {"limit": 3})


def test_a_valid_conf_is_merged_over_the_defaults():
    merged = validate_conf(_spec(), {**GOOD, "limit": 1000, "maybe": 4, "mode": "full"})
    assert merged["limit"] == 1000 and merged["maybe"] == 4 and merged["mode"] == "full"
    assert merged["day"] == "2026-01-01" and merged["dry_run"] is False


def test_undeclared_conf_keys_are_kept_unless_strict_conf():
    merged = validate_conf(_spec(), {**GOOD, "nope": 1})  # Airflow's rule (issue 26)
    assert merged["nope"] == 1 and merged["limit"] == 100
    with pytest.raises(ConfigError, match="unknown param 'nope' \\(declared params: day, "):
        validate_conf(_spec(strict_conf=True), {**GOOD, "nope": 1})
    with pytest.raises(ConfigError, match="param 'limit': 0 is less"):  # declared: checked
        validate_conf(_spec(), {**GOOD, "nope": 1, "limit": 0})


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"n": Param(20, type="integer", maximum=10)},
         "DAG 'bad': param 'n': its default 20 fails its own schema: 20 is greater than the "
         "maximum of 10 (rule maximum: 10)"),
        ({"d": Param("soon", type="string", format="date")},
         "param 'd': its default \"soon\" fails its own schema: 'soon' is not a 'date'"),
        ({"m": Param("c", enum=["a", "b"])}, "param 'm': its default \"c\" fails its own schema"),
        ({"n": Param(1, type="int")},
         "param 'n': not a valid JSON Schema: 'int' is not valid under any of the given schemas"),
        ({"n": Param(1, minimum="one")}, "param 'n': not a valid JSON Schema: 'one' is not of type"),
        ({"o": Param(object())}, "params must be JSON-serialisable: param 'o'"),
    ],
)  # fmt: skip
def test_a_param_whose_default_fails_its_own_schema_is_an_import_error(params, message):
    with pytest.raises(DagDefinitionError) as err:
        DAG("bad", schedule=None, params=params)
    assert message in str(err.value)
    assert "test_typed_params.py:" in str(err.value)  # file:line of the DAG


def test_a_required_param_needs_a_dag_without_schedule():
    with pytest.raises(DagDefinitionError, match="param 'to' has no default.*schedule=None"):
        DAG("sched", schedule="@daily", params={"to": Param(type="string")})
    DAG("manual", schedule=None, params={"to": Param(type="string")})  # fine
