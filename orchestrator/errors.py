"""The one small exception hierarchy. Messages say what is wrong and where."""


class OrchestratorError(Exception):
    """Base class of every error the orchestrator raises on purpose."""


class DagDefinitionError(OrchestratorError):
    """A DAG file declares something invalid.

    The message starts with ``file:line:`` when the place is known, e.g.
    ``dags/etl.py:14: task 'load' depends on unknown task 'extrct'``.
    """

    def __init__(self, message: str, *, fileloc: str | None = None, lineno: int | None = None):
        self.bare_message = message
        self.fileloc = fileloc
        self.lineno = lineno
        where = ""
        if fileloc:
            where = f"{fileloc}:{lineno}: " if lineno else f"{fileloc}: "
        super().__init__(where + message)


class ConfigError(OrchestratorError):
    """A setting or a command-line argument is invalid."""


class ParamValidationError(ConfigError):
    """A run's conf breaks a DAG param's rule (issue 25; Airflow's name): an unknown param
    of a ``strict_conf=True`` DAG (issue 26), a required one missing, or a value its JSON Schema refuses. The message names the
    param and the rule. The CLI exits 2 for it (a wrong argument), the API answers 400."""


class UsageError(ConfigError):
    """A command-line argument the parser let through but the command refuses (issue 26):
    two forms of a command mixed, a regex that matches nothing, no terminal to confirm
    on. The CLI exits 2 for it, as for any usage error."""


class NotFoundError(OrchestratorError):
    """A DAG, run or task instance asked for does not exist."""


class StateError(OrchestratorError):
    """A transition was asked for that the current state does not allow."""


# issue 14: task controls. Raised by task code, not by the orchestrator, so they are not
# OrchestratorErrors; the task runner turns them into a skip or a failure without retry.
class Skip(Exception):  # noqa: N818 - the name users write (Airflow: AirflowSkipException)
    """Raise in a task to mark this try, and the task, skipped (``raise Skip("why")``)."""


class Fail(Exception):  # noqa: N818 - the name users write (Airflow: AirflowFailException)
    """Raise in a task to fail it now, with no retry whatever retries are left."""


class ResultLookupError(OrchestratorError, LookupError):
    """A try's ``ti.xcom_pull`` / ``xcom_push`` could not be answered (a task not
    finished yet, a value over ``max_result_bytes``, no worker to ask)."""
