"""Spark reads the Parquet export (docs/TABLES.md) and gets the numbers sessiontree
reports. Needs pyspark and a Java runtime: ``make spark-test`` installs pyspark from
PyPI (Java 17: ``apt-get install openjdk-17-jre-headless``); skipped otherwise."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from sessiontree.generate import generate_session

from _shared import open_quiet

pytest.importorskip("pyarrow", reason="the arrow extra (pyarrow) is not installed")
pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed: run `make spark-test`")
if shutil.which("java") is None:
    pytest.skip("no Java runtime on PATH (pyspark needs one: apt-get install openjdk-17-jre-headless)",
                allow_module_level=True)  # fmt: skip

from pyspark.sql import SparkSession  # noqa: E402

from sessiontree.cli.info import collect  # noqa: E402
from sessiontree.tables import export_parquet, session_paths  # noqa: E402


@pytest.fixture(scope="module")
def spark() -> Any:
    s = (SparkSession.builder.master("local[2]").appName("sessiontree-test")
         .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC").getOrCreate())  # fmt: skip
    yield s
    s.stop()


def test_spark_reads_the_export(spark: Any, tmp_path: Path) -> None:
    folder = tmp_path / "--home-u-spark--"
    folder.mkdir()
    for i in range(3):
        generate_session(folder / f"s{i}.jsonl", size_bytes=60_000, seed=40 + i, cwd="/home/u/spark")
    out = tmp_path / "out"
    export_parquet(session_paths([str(folder)]), str(out))
    spark.read.parquet(str(out / "entries")).createOrReplaceTempView("entries")
    spark.read.parquet(str(out / "sessions")).createOrReplaceTempView("sessions")
    counts = {r["path"]: r["n"] for r in spark.sql(
        "select s.path, count(*) as n from entries e join sessions s using (session_id) group by s.path").collect()}
    costs = {r["path"]: r["cost"] for r in spark.sql(
        "select s.path, sum(e.cost) as cost from entries e join sessions s using (session_id) "
        "where e.role = 'assistant' group by s.path").collect()}  # fmt: skip
    for f in sorted(folder.glob("*.jsonl")):
        with open_quiet(f, "native" if _native() else "python") as sm:
            assert counts[str(f)] == len(sm)
            assert costs[str(f)] == pytest.approx(collect(sm, str(f), 0.0)["cost"], abs=1e-6)
            path = [r["entry_id"] for r in spark.sql(
                f"select entry_id from entries where session_id = '{sm.session_id}' and on_current_path "
                "order by depth").collect()]  # fmt: skip
            assert path == [e["id"] for e in sm.get_branch()]
    # The README's queries run as written.
    per_day = spark.sql("""
        select model, to_date(timestamp) as day, sum(cost) as cost
        from entries where role = 'assistant' group by model, to_date(timestamp) order by day, cost desc""").collect()
    assert sum(r["cost"] for r in per_day) == pytest.approx(sum(costs.values()))
    assert {r["project"] for r in spark.sql("select distinct project from entries").collect()} == {"--home-u-spark--"}
    spark.sql("""
        select distinct session_id from entries
        where on_current_path and (is_error or stop_reason = 'error')""").collect()


def _native() -> bool:
    try:
        import sessiontree._sessiontree  # noqa: F401
    except ImportError:
        return False
    return True
