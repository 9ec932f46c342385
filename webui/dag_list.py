"""The DAG list's query (issue 27 item 7): its parameters read strictly, one page of
DAGs read from the store, and what the template needs for each row.

Every parameter outside its documented values is a 400 naming it (``ConfigError``),
before anything is read:

=============  ==================================================  ===========
parameter      values                                              default
=============  ==================================================  ===========
``state``      ``failed``, ``running``, ``paused``, ``active``      (all)
``tag``        a tag, 1-100 characters                             (all)
``owner``      an owner of its tasks, 1-100 characters             (all)
``q``          part of a DAG id, 1-250 characters                  (all)
``sort``       ``dag_id``, ``last_run``, ``next_run``, ``owner``   ``dag_id``
``order``      ``asc``, ``desc``                                   ``asc``
``page``       1 ...                                               1
``per_page``   1-200                                               50
=============  ==================================================  ===========
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from flask import request

from orchestrator.store import Store
from orchestrator.store.reads.dag_pages import LIST_SORTS, LIST_STATES

from .data import words
from .inputs import MAX_INT, choice_arg, int_arg, text_arg

RECENT_RUNS = 10
PER_PAGE = 50
MAX_PER_PAGE = 200
MAX_BULK = 500  # DAG ids one bulk pause/unpause may name


@dataclass(frozen=True)
class ListQuery:
    state: str = ""
    tag: str = ""
    owner: str = ""
    search: str = ""
    sort: str = "dag_id"
    order: str = "asc"
    page: int = 1
    per_page: int = PER_PAGE

    def args(self, **changes: Any) -> dict[str, Any]:
        """The query string of this list (with ``changes``), defaults left out."""
        q = replace(self, **changes)
        out = {
            "state": q.state,
            "tag": q.tag,
            "owner": q.owner,
            "q": q.search,
            "sort": q.sort if q.sort != "dag_id" else "",
            "order": q.order if q.order != "asc" else "",
            "page": q.page if q.page != 1 else "",
            "per_page": q.per_page if q.per_page != PER_PAGE else "",
        }
        return {k: v for k, v in out.items() if v != ""}

    def sorted_by(self, key: str) -> dict[str, Any]:
        """The query of a column header's link: sort by ``key``, flipping the order if
        the list is sorted by it already; back to the first page."""
        flip = "desc" if self.sort == key and self.order == "asc" else "asc"
        return self.args(sort=key, order=flip, page=1)


def _text(name: str, max_length: int) -> str:
    """A text parameter; empty (as a form's blank search box sends it) is no filter."""
    if request.args.get(name, "") == "":
        return ""
    return (text_arg(name, max_length) or "").strip()


def read_query() -> ListQuery:
    """The request's list parameters; a ConfigError (400) names the first bad one."""
    return ListQuery(
        state=choice_arg("state", LIST_STATES, ""),
        tag=_text("tag", 100),
        owner=_text("owner", 100),
        search=_text("q", 250),
        sort=choice_arg("sort", LIST_SORTS, "dag_id"),
        order=choice_arg("order", ("asc", "desc"), "asc"),
        page=int_arg("page", 1, lo=1, hi=MAX_INT // MAX_PER_PAGE) or 1,
        per_page=int_arg("per_page", PER_PAGE, lo=1, hi=MAX_PER_PAGE) or PER_PAGE,
    )


def dag_list(store: Store, query: ListQuery) -> dict[str, Any]:
    """One page of the list: its rows (DAG, schedule in words, recent runs), how many
    DAGs match, the pages, every tag and the import errors."""
    dags, total = store.dag_list_page(
        state=query.state,
        tag=query.tag,
        owner=query.owner,
        search=query.search,
        sort=query.sort,
        descending=query.order == "desc",
        offset=(query.page - 1) * query.per_page,
        limit=query.per_page,
    )
    ids = [d.dag_id for d in dags]
    specs = store.current_specs(ids) if ids else {}
    marks = store.recent_runs(per_dag=RECENT_RUNS, dag_ids=ids) if ids else {}
    rows = [
        {
            "dag": d,
            "words": words(specs[d.dag_id]),
            "marks": marks.get(d.dag_id, []),
        }
        for d in dags
    ]
    pages = max(1, -(-total // query.per_page))
    tags, owners = store.dag_labels()
    return {
        "dags": rows,
        "total": total,
        "pages": pages,
        "query": query,
        "tags": tags,
        "owners": owners,
        "import_errors": store.import_errors(),
    }
