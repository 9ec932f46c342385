"""Airflow's mapped task group examples (the "Mapping over a task group" section of its
dynamic task mapping docs, and example_task_group_mapping), with their Airflow imports
(``from airflow.sdk import DAG, task, task_group``)."""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG, task, task_group

with DAG(
    dag_id="example_task_group_mapping", schedule=None, start_date=datetime(2022, 3, 4)
) as dag:

    @task_group
    def op(num):
        @task
        def add_one(num):
            return num + 1

        @task
        def mul_two(num):
            return num * 2

        return mul_two(add_one(num))

    @task
    def add_all(nums):
        return sum(nums)

    add_all(op.expand(num=[1, 2, 3]))


with DAG(
    dag_id="example_task_group_mapping_files", schedule=None, start_date=datetime(2022, 3, 4)
) as files_dag:

    @task
    def list_files():
        return ["data/input.csv", "data/input2.csv", "data/bad.csv"]

    @task(map_index_template="{{ filename }}")
    def convert(filename: str, suffix: str):
        if "bad" in filename:
            raise ValueError(f"cannot read {filename}")
        return filename.replace(".csv", suffix)

    @task(trigger_rule="all_done")
    def report(filename: str, ti=None):
        return f"{filename} done in instance {ti.map_index}"

    @task_group
    def file_transforms(filename, suffix):
        converted = convert(filename, suffix)
        converted >> report(filename)
        return converted

    @task(trigger_rule="all_done")
    def summary(converted):
        return sorted(converted)

    summary(file_transforms.partial(suffix=".yaml").expand(filename=list_files()))
