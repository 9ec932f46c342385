"""Connection URIs with Airflow's rules, sensitive names, and var/conn in templates."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.authoring.credentials import (
    Connection,
    CredentialNotFoundError,
    CredentialSource,
    VariableValue,
    is_sensitive_name,
    template_credentials,
)
from orchestrator.authoring.templating import render_shell
from orchestrator.errors import ConfigError


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        (
            "postgresql://etl:s3cret@db.internal:5432/sales",
            ("postgresql", "db.internal", "etl", "s3cret", 5432, "sales", {}),
        ),
        (  # percent-encoding in every part
            "mysql://us%40er:p%3Ass%2Fw%23d@h%2Dst:3306/sch%20ema",
            ("mysql", "h-st", "us@er", "p:ss/w#d", 3306, "sch ema", {}),
        ),
        (  # query parameters are the extra
            "http://h/?timeout=5&verify=false",
            ("http", "h", None, None, None, None, {"timeout": "5", "verify": "false"}),
        ),
        (  # __extra__ holds JSON
            "aws://?__extra__=%7B%22region%22%3A+%22eu%22%2C+%22n%22%3A+1%7D",
            ("aws", None, None, None, None, None, {"region": "eu", "n": 1}),
        ),
        (  # a host with its own protocol
            "http://user:pw@https%3A%2F%2Fexample.com:443/p",
            ("http", "https://example.com", "user", "pw", 443, "p", {}),
        ),
        ("google-cloud-platform://", ("google_cloud_platform", None, None, None, None, None, {})),
    ],
)
def test_from_uri_follows_airflow(uri, expected):
    c = Connection.from_uri("c", uri)
    assert (c.conn_type, c.host, c.login, c.password, c.port, c.schema, c.extra) == expected
    again = Connection.from_uri("c", c.uri)
    assert again == c  # the URI it writes reads back the same


@pytest.mark.parametrize(
    ("uri", "reason"),
    [
        ("db.internal:5432", "must look like type://"),
        ("pg://h:99999/x", "Port out of range"),
        ("pg://h:port/x", "Port could not"),
        ("a://b://c://d", "at most two"),
        ("pg://u:p@h://x", "cannot hold"),
        ("1pg://h", "not a connection type"),
        ("pg://h/?__extra__=[1]", "must be a JSON object"),
        ("pg://h/a b", "whitespace"),
    ],
)
def test_malformed_uris_are_refused_with_the_reason(uri, reason):
    with pytest.raises(ConfigError, match=reason):
        Connection.from_uri("c", uri)


text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20
)


@given(login=text, password=text, host=st.from_regex(r"[a-z][a-z0-9.-]{0,15}", fullmatch=True),
       schema=text, port=st.none() | st.integers(1, 65535),
       extra=st.dictionaries(st.text(min_size=1, max_size=5), text | st.integers(), max_size=3))  # fmt: skip
def test_any_fields_survive_the_uri_round_trip(login, password, host, schema, port, extra):
    c = Connection("c", "postgresql", host, login or None, password or None, port,
                   schema or None, extra)  # fmt: skip
    assert Connection.from_uri("c", c.uri) == c


def test_sensitive_names_are_airflows():
    for name in ("db_password", "API_KEY", "my_secret", "slack_token", "passwd", "keyfile"):
        assert is_sensitive_name(name), name
    for name in ("region", "limits", "host"):
        assert not is_sensitive_name(name), name


def _source(variables=None, connections=None) -> CredentialSource:
    return CredentialSource(
        variable=lambda n: (variables or {}).get(n),
        connection=lambda n: (connections or {}).get(n),
    )


def test_templates_read_var_value_var_json_and_conn_lazily():
    asked = []
    source = CredentialSource(
        variable=lambda n: asked.append(n) or {
            "region": VariableValue("emea"), "limits": VariableValue('{"max": 5}', True)
        }.get(n),
        connection=lambda n: Connection.from_uri(n, "pg://etl:pw@db.internal:5432/s"),
    )  # fmt: skip
    values = template_credentials(source)
    cmd = render_shell(
        "x {{ var.value.region }} {{ var.json.limits.max }} {{ conn.wh.host }} "
        "{{ conn.wh.port }} {{ var.value['region'] }}",
        values,
    )
    assert cmd.display == "x emea 5 db.internal 5432 emea"
    assert asked == ["region", "limits", "region"]  # only what the template used
    with pytest.raises(CredentialNotFoundError, match="unknown variable 'nope'"):
        render_shell("x {{ var.value.nope }}", values)
    with pytest.raises(CredentialNotFoundError, match="unknown connection 'nope'"):
        render_shell("x {{ conn['nope'].host }}", template_credentials(_source()))
    assert render_shell("{{ var.value.get('nope', 'dflt') }}", values).display == "dflt"


def test_the_sandbox_still_holds_through_var_and_conn():
    values = template_credentials(_source({"x": VariableValue("v")}))
    with pytest.raises(Exception, match="unsafe|_read"):
        render_shell("{{ var.value._read }}", values)


def test_the_masked_values_of_a_connection_are_password_and_sensitive_extras():
    c = Connection("c", "http", password="pw-1", extra={
        "sslmode": "require", "api_key": "k-1", "auth": {"token": ["t-1"], "user": "u"}
    })  # fmt: skip
    values = c.secret_values()
    assert "pw-1" in values and "k-1" in values and "t-1" in values
    assert "require" not in values and "u" not in values
