"""Every --json document validates against the published schema, docs/schema/rung-3.schema.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from rung.judge import gpu_facts
from rung.spec import SCHEMA, dumps
from tests.conftest import FIXTURES, ROOT

TINY = FIXTURES / "tiny"
SOL = TINY / "solutions"
PUBLISHED = json.loads((ROOT / "docs" / "schema" / "rung-3.schema.json").read_text())


def validator(document: str) -> jsonschema.Draft202012Validator:
    return definition(f"doc_{document}")


def definition(name: str) -> jsonschema.Draft202012Validator:
    root = {k: v for k, v in PUBLISHED.items() if k != "anyOf"}
    return jsonschema.Draft202012Validator({**root, "$ref": f"#/$defs/{name}"})


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Each command's --json document, from one workspace with two checked solutions."""
    ws = tmp_path_factory.mktemp("schema")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNG_")}
    env["RUNG_CACHE_DIR"] = str(ws / "cache")  # cache clear below must not touch the user's

    def rung(*args: str) -> Any:
        done = subprocess.run(
            [sys.executable, "-m", "rung", *args, "--json"],
            capture_output=True,
            text=True,
            cwd=ws,
            env=env,
            timeout=300,
        )
        assert done.returncode in (0, 1), done.stderr
        return json.loads(done.stdout)

    return {
        "check": rung("check", str(TINY), str(SOL / "good.py"), str(SOL / "wrong_shape.py")),
        "history": rung("history", str(TINY)),
        "show": rung("show", "1"),
        "show_rung": rung("show", "1", "--rung", "correct"),
        "diff": rung("diff", "1", "2"),
        "problem": rung("problem", str(TINY)),
        "device": rung("device"),
        "optimize": rung(
            "optimize", str(TINY), "--agent", "replay", "--replay", str(SOL / "good.py"), "--rounds", "1"
        ),
        "config": rung("config"),
        "cache_info": rung("cache", "info"),
        "cache_clear": rung("cache", "clear"),
        "report": rung("report", str(TINY)),
    }


def test_the_published_schema_is_a_valid_json_schema_for_this_version():
    jsonschema.Draft202012Validator.check_schema(PUBLISHED)
    assert PUBLISHED["$defs"]["schema_version"] == {
        "const": SCHEMA,
        "description": PUBLISHED["$defs"]["schema_version"]["description"],
    }


@pytest.mark.parametrize(
    "document",
    [
        "check",
        "history",
        "show",
        "show_rung",
        "diff",
        "problem",
        "device",
        "optimize",
        "config",
        "cache_info",
        "cache_clear",
        "report",
    ],
)
def test_every_document_validates(printed, document):
    errors = [
        f"{list(e.absolute_path)}: {e.message}" for e in validator(document).iter_errors(printed[document])
    ]
    assert errors == []


def test_a_perfect_match_has_null_psnr_with_its_reason_not_the_string_inf(printed):
    correct = printed["show_rung"]["rung"]["metrics"]
    assert correct["psnr_db"] is None and correct["null_reasons"] == {"psnr_db": "infinite"}


def test_documents_that_break_the_schema_are_refused(printed):
    with_string_inf = json.loads(json.dumps(printed["show_rung"]))
    with_string_inf["rung"]["metrics"]["psnr_db"] = "inf"  # what rung printed before
    assert not validator("show_rung").is_valid(with_string_inf)
    renamed = {k: v for k, v in printed["check"].items() if k != "solutions"} | {"results": []}
    assert not validator("check").is_valid(renamed)
    bad_status = json.loads(json.dumps(printed["show"]))
    bad_status["rungs"][0]["status"] = "PASSED"
    assert not validator("show").is_valid(bad_status)
    assert not validator("config").is_valid({**printed["config"], "schema": "rung/0"})
    assert json.loads(dumps({"x": float("nan")})) == {"x": None, "null_reasons": {"x": "not a number"}}


def _keys(doc: Any) -> set[str]:
    if isinstance(doc, dict):
        return set(doc).union(*(_keys(v) for v in doc.values()))
    if isinstance(doc, list):
        return set().union(*(_keys(v) for v in doc))
    return set()


def test_a_run_is_named_run_in_every_document(printed):
    assert printed["check"]["solutions"][0]["run"] == printed["history"]["runs"][0]["run"] == 1
    assert printed["show"]["run"] == printed["show_rung"]["run"] == printed["diff"]["a"]["run"] == 1
    for document in ("check", "history", "show", "show_rung", "diff", "optimize"):
        assert "id" not in _keys(printed[document]), document
    with_id = {k: v for k, v in printed["show"].items() if k != "run"} | {"id": 1}  # rung/1's show
    assert not validator("show").is_valid(with_id)


def test_nvml_records_validate_and_a_malformed_one_is_refused():
    from tests.test_gpu_facts import fake_nvml

    nvml = definition("nvml")
    read = gpu_facts.read("abc", fake_nvml())
    for record in (read, gpu_facts.read("abc", fake_nvml(ecc=None)), gpu_facts.unavailable("no driver"), {}):
        assert nvml.is_valid(record), record
    assert not nvml.is_valid({**read, "power_w": "612 W"})
    assert not nvml.is_valid({"available": False})
    assert not nvml.is_valid({**read, "clock_reasons": 5})


def test_the_schema_sits_where_the_docs_say():
    assert (ROOT / "docs" / "schema" / "README.md").is_file()
    assert Path(PUBLISHED["$id"]).name == "rung-3.schema.json"
