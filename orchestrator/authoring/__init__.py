"""What users write, and what is stored from it.

The DAG and task API (:mod:`.dag`), the task context (:mod:`.context`), shell
templating (:mod:`.templating`), alert declarations (:mod:`.alerts`), the loader that
imports DAG files (:mod:`.loader`) and the serialized DAG version the scheduler works
from without importing user code (:mod:`.spec`). DAG files import it through
``from orchestrator import DAG, task``.
"""
