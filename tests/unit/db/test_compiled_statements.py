"""Every store runs the SQL that its Core statements compile to (``saber.db.statements``): a
generated ``queries_sql.py`` that is stale (its Core statement changed, or the file was edited by
hand) fails here, naming the command that rewrites it."""

from __future__ import annotations

import importlib

import pytest

from saber.db.compile import QUERY_MODULES, compile_sql, generated_path, main, render, statements


@pytest.mark.parametrize("module_name", QUERY_MODULES)
def test_each_generated_module_is_what_its_core_statements_compile_to(module_name: str) -> None:
    path = generated_path(module_name)
    assert path.read_text("utf-8") == render(module_name), \
        f"{path} is stale: run python -m saber.db.compile"


def test_the_check_command_names_a_stale_file(tmp_path: object, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    import saber.db.compile as compile_module

    name = QUERY_MODULES[0]
    monkeypatch.setattr(compile_module, "render", lambda module: render(module) + "# edited by hand\n")
    assert main(["--check"]) == 1
    assert str(generated_path(name)) in capsys.readouterr().err
    monkeypatch.undo()
    assert main(["--check"]) == 0


@pytest.mark.parametrize("module_name", QUERY_MODULES)
def test_each_statement_has_its_sql_for_both_dialects_or_says_it_has_none(module_name: str) -> None:
    generated = importlib.import_module(generated_path(module_name).stem.join(module_name.rsplit("queries", 1)))
    compiled = statements(module_name)
    assert compiled, f"{module_name} has no statements"
    for name in compiled:
        statement = getattr(generated, name)
        for dialect in ("sqlite", "postgresql"):
            sql = getattr(statement, dialect)
            if sql is None:
                with pytest.raises(NotImplementedError, match=f"{statement.name} is not written for {dialect}"):
                    statement.sql(dialect)
            else:
                assert statement.sql(dialect) == sql


def test_constants_are_written_into_the_sql_and_parameters_stay_named() -> None:
    import sqlalchemy as sa

    t = sa.table("t", sa.column("a"), sa.column("b"))
    statement = sa.select(t.c.a).where(t.c.b == "pending", t.c.a == sa.bindparam("a")).limit(1)
    assert "WHERE t.b = 'pending' AND t.a = :a\n LIMIT 1" in compile_sql(statement, "sqlite")
    assert "WHERE t.b = 'pending' AND t.a = %(a)s" in compile_sql(statement, "postgresql")
