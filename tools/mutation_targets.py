"""Which tests `python -m tools.mutate` runs against the mutants of each module.

Each module is mapped to the tests that exercise it, fastest and most pointed first
(the run stops at the first failing test), so a module takes minutes, not the whole
suite's ten. When code moves, move its entry; when a test that covers a module is
added elsewhere, add it here. A module that is not listed cannot be mutated (pass
``--tests`` to try one).
"""

from __future__ import annotations

INTEGRATION = "tests/integration"

TARGETS: dict[str, list[str]] = {
    # -- the pure rules ------------------------------------------------------------------
    "orchestrator/scheduling/trigger_rules.py": [
        "tests/unit/scheduling/test_trigger_rules.py",
        "tests/unit/scheduling/test_setup_teardown_rules.py",
    ],
    "orchestrator/scheduling/misfire.py": [
        "tests/unit/scheduling/test_misfire.py",
        "tests/unit/scheduling/test_misfire_properties.py",
    ],
    "orchestrator/scheduling/retry.py": ["tests/unit/scheduling/test_retry.py"],
    "orchestrator/scheduling/schedule.py": [
        "tests/unit/scheduling/test_schedule.py",
        "tests/unit/scheduling/test_dst_golden.py",
    ],
    "orchestrator/scheduling/asset_conditions.py": [
        "tests/unit/scheduling/test_asset_conditions.py"
    ],
    "orchestrator/scheduling/mapping.py": [
        "tests/unit/scheduling/test_mapping_rules.py",
        "tests/unit/authoring/test_mapped.py",
        # UNMAPPED (the placeholder's map index) is only exercised by the store
        f"{INTEGRATION}/test_mapping.py::test_mapped_task_runs_one_instance_per_item_and_reducer_gets_list",
    ],
    # -- the fenced store writes ---------------------------------------------------------
    "orchestrator/store/tasks/finish.py": [
        f"{INTEGRATION}/test_lost_tries.py",
        f"{INTEGRATION}/test_finish_batch.py",
        f"{INTEGRATION}/test_store.py",
        f"{INTEGRATION}/test_run_progress.py",
    ],
    "orchestrator/store/tasks/task_store.py": [
        f"{INTEGRATION}/test_store.py",
        f"{INTEGRATION}/test_lost_tries.py",
        f"{INTEGRATION}/test_task_outcomes.py",
        f"{INTEGRATION}/test_mapping.py",
    ],
    "orchestrator/store/tasks/task_outcomes.py": [
        f"{INTEGRATION}/test_task_outcomes.py",
        f"{INTEGRATION}/test_task_controls.py",
    ],
    "orchestrator/store/tasks/sensor_store.py": [f"{INTEGRATION}/test_sensors.py"],
    # -- claims, release, run progress, expansion ----------------------------------------
    "orchestrator/store/tasks/claims.py": [
        f"{INTEGRATION}/test_store.py",
        f"{INTEGRATION}/test_claim_plans.py",
        f"{INTEGRATION}/test_pools.py",
        f"{INTEGRATION}/test_prefetch.py",
        f"{INTEGRATION}/test_sensors.py",
        # a claim's upstream results (the worker claims with results=True)
        f"{INTEGRATION}/test_finish_batch.py",
        f"{INTEGRATION}/test_mapping.py::test_mapped_task_runs_one_instance_per_item_and_reducer_gets_list",
        f"{INTEGRATION}/test_mapped_groups.py::test_a_pull_inside_a_mapped_group_reads_the_same_instance",
    ],
    "orchestrator/store/tasks/release.py": [
        f"{INTEGRATION}/test_finish_batch.py",
        f"{INTEGRATION}/test_one_done.py",
        f"{INTEGRATION}/test_run_progress.py",
        f"{INTEGRATION}/test_mapping.py",
    ],
    "orchestrator/store/runs/run_progress.py": [f"{INTEGRATION}/test_run_progress.py"],
    "orchestrator/store/tasks/expansion.py": [f"{INTEGRATION}/test_mapping.py"],
    # -- the web security checks ---------------------------------------------------------
    "webui/security.py": [
        "tests/webui/test_hostile.py",
        "tests/webui/test_sessions.py",
        "tests/webui/test_tokens.py",
        "tests/webui/test_metrics_auth.py",
        "tests/webui/test_check_order.py",
        # is_loopback (what turns the login on) is tested with the server's bind check
        "tests/webui/test_server.py::test_loopback_hosts_need_no_login",
        "tests/webui/test_server.py::test_other_hosts_are_refused_without_login",
        "tests/webui/test_server.py::test_a_public_host_turns_the_login_on",
    ],
    # -- masking, shell quoting, the task environment ------------------------------------
    "orchestrator/engine/masking.py": ["tests/unit/test_masking.py"],
    "orchestrator/authoring/shell_contexts.py": [
        "tests/unit/authoring/test_templating.py",
        f"{INTEGRATION}/test_shell_values.py",
    ],
    "orchestrator/authoring/templating.py": [
        "tests/unit/authoring/test_templating.py",
        f"{INTEGRATION}/test_shell_values.py",
    ],
    "orchestrator/engine/taskenv.py": ["tests/unit/test_taskenv.py"],
}

# Modules that write no SQL of their own: their tests run on SQLite alone (the store
# calls they make are mutated, on both backends, as the store's own modules).
SQLITE_ONLY = frozenset(
    {
        "webui/security.py",
        "orchestrator/authoring/shell_contexts.py",
        "orchestrator/authoring/templating.py",
    }
)
