""" "Did you mean" on a mistyped command or flag (issue 26): argparse in Python 3.11
has no ``suggest_on_error``, so the suggestions are ``difflib``'s closest match.

>>> suggestion("--confg", ["--conf", "--logical-date", "--json"])
" (did you mean '--conf'?)"
>>> suggestion("zzz", ["list", "show"])
''
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Iterable

# what an Airflow user types where our command has another name (the closest match by
# spelling would not find these): the prog of the parser and the word -> what to write
AIRFLOW_WORDS = {
    ("orchestrator dags", "backfill"): (
        "'orchestrator backfill create --dag-id DAG --from-date A --to-date B'"
    ),
    ("orchestrator db", "migrate"): "'orchestrator db upgrade'",
    ("orchestrator tasks", "run"): "'orchestrator tasks test DAG TASK [DATE]'",
    ("orchestrator tasks", "states-for-dag-run"): "'orchestrator tasks list RUN'",
}


def suggestion(word: str, choices: Iterable[str], *, where: str = "") -> str:
    """`` (did you mean 'X'?)`` for the choice closest to ``word``, or ''."""
    known = AIRFLOW_WORDS.get((where, word))
    if known:
        return f" (did you mean {known}?)"
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def chosen_parser(
    parser: argparse.ArgumentParser, ns: argparse.Namespace
) -> argparse.ArgumentParser:
    """The innermost sub-command parser ``ns`` was parsed with (``orchestrator dags
    trigger``'s for ``dags trigger ...``), so an unknown flag is judged by its options."""
    for action in parser._actions:  # noqa: SLF001 - argparse keeps no public list
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            name = getattr(ns, action.dest, None)
            if name in action.choices:
                return chosen_parser(action.choices[name], ns)
    return parser


def unrecognized(parser: argparse.ArgumentParser, extras: list[str]) -> str:
    """The usage error for arguments no parser took, with the flag closest to the first
    unknown one: ``unrecognized arguments: --confg {} (did you mean '--conf'?)``."""
    text = f"unrecognized arguments: {' '.join(extras)}"
    flags = [e.split("=", 1)[0] for e in extras if e.startswith("-") and len(e) > 1]
    if flags:
        options = [o for a in parser._actions for o in a.option_strings]  # noqa: SLF001
        text += suggestion(flags[0], options)
    return text


def invalid_choice(action: argparse.Action, value: object, where: str) -> argparse.ArgumentError:
    """argparse's ``invalid choice`` error with the closest choice suggested."""
    choices = [str(c) for c in action.choices or ()]
    return argparse.ArgumentError(
        action,
        f"invalid choice: {value!r}{suggestion(str(value), choices, where=where)} "
        f"(choose from {', '.join(repr(c) for c in choices)})",
    )
