"""rung report: the page is opened in a real headless browser (Debian's chromium driven by
Selenium through Debian's chromedriver) and read as a person would see it: the charts render
with one mark per version, a failed version is marked and never dropped, the runs table lists
every run with its rungs and links, the best version's intra-kernel trace is drawn. Runs are
written through the store's own API, so no GPU and no climb are needed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rung import report
from rung.errors import UsageError
from rung.spec import Device, Run, RungResult, Solution, Status
from rung.store import Store
from tests.conftest import FIXTURES

H200 = Device(
    "cuda",
    "NVIDIA H200",
    "sm_90",
    ceilings={
        "dram_gbps": 4380.0,
        "fp32_vector_tflops": 50.0,
        "bf16_tensor_tflops": 704.7,
        "matmul_clock": {"sm_mhz": 1980.0, "throttled": False},  # as rung device records it
    },
)
CASES = [{"n": 1024}, {"n": 1048576}]
PROTON = FIXTURES / "proton"  # proton's trace and tree of a matmul, captured on an H200
# The launch flags that work in a container with no display, no GPU and no network.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def _timed(
    store: Store, path: str, sha: str, parent: str | None, medians: list[float], scopes: bool = True
) -> Run:
    """A passing version with bench and roofline figures as those rungs write them, and the
    scopes rung's copy of proton's intra-kernel trace (the real one in tests/fixtures/proton)."""
    run = store.begin("add", "problems/add", Solution(path, sha, "triton", parent), H200, 7, {}, source="x")
    for name in ("run", "guard", "correct", "scale"):  # verified: every rung that decides correctness
        store.add_rung(run, RungResult(name, Status.OK, "all match"))
    bench = [
        {
            "case": c,
            "median_ms": m,
            "p20_ms": m,
            "p80_ms": m,
            "rel_sem": 0.01,
            "speedup_vs_reference": 0.1 / m,
        }
        for c, m in zip(CASES, medians, strict=True)
    ]
    store.add_rung(run, RungResult("bench", Status.OK, "timed", {"cases": bench}))
    roof = [
        {
            "case": c,
            "flops": c["n"],
            "bytes": 12 * c["n"],
            "measured_ms": m,
            "pct_of_roofline": 0.5,
            "bound": "memory",
        }
        for c, m in zip(CASES, medians, strict=True)
    ]
    store.add_rung(run, RungResult("roofline", Status.OK, "", {"cases": roof, "target": 0.9}))
    if not scopes:
        store.finish(run)
        return run
    folder = store.run_dir(run.id) / "scopes"
    folder.mkdir()
    shutil.copy(PROTON / "matmul_trace.chrome_trace", folder / "trace.chrome_trace.json")
    (folder / "summary.json").write_text("{}")
    store.add_rung(
        run,
        RungResult(
            "scopes",
            Status.OK,
            "",
            {},
            [str(folder / "trace.chrome_trace.json"), str(folder / "summary.json")],
        ),
    )
    store.finish(run)
    return run


def _failed(store: Store, path: str, sha: str, parent: str | None) -> Run:
    run = store.begin("add", "problems/add", Solution(path, sha, "triton", parent), H200, 7, {}, "x")
    store.add_rung(run, RungResult("correct", Status.FAILED, "12 of 1024 elements differ\nat [3]"))
    store.finish(run)
    return run


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """v1, v2 from v1 (faster), v3 from v2 (wrong), v4 from v2 (fastest)."""
    with_runs = tmp_path / "ws"
    store = Store(with_runs)
    _timed(store, "v1.py", "a" * 64, None, [0.008, 0.200])
    _timed(store, "v2.py", "b" * 64, "a" * 64, [0.004, 0.100])
    _failed(store, "v3.py", "c" * 64, "b" * 64)
    _timed(store, "v4.py", "d" * 64, "b" * 64, [0.002, 0.080])
    store.close()
    return with_runs


def _executable(*names: str) -> str | None:
    return next(
        (found for n in names if (found := shutil.which(n) or shutil.which(n, path="/usr/bin"))), None
    )


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the dev extra")
    chromium = _executable("chromium", "chromium-browser")
    driver_path = _executable("chromedriver")
    if chromium is None or driver_path is None:
        pytest.skip(
            "no headless browser: Debian's chromium and chromium-driver are not installed "
            "(.ci/run installs them: apt-get install chromium chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in [*FLAGS, f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=driver_path), options=options)
    driver.set_window_size(1300, 1000)
    try:
        yield driver
    finally:
        driver.quit()


def _open(browser: Any, page: Path) -> None:
    browser.get(page.as_uri())
    assert browser.execute_script("return document.readyState") == "complete"


def _boxes(browser: Any, selector: str) -> list[dict[str, float]]:
    """The rendered size of every element `selector` finds (an SVG group: its marks' extent)."""
    return browser.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]))"
        ".map(e => { const r = e.getBoundingClientRect(); return {id: e.id, w: r.width, h: r.height}; })",
        selector,
    )


def test_the_page_draws_every_version_and_lists_every_run(workspace, browser):
    doc = report.write(workspace, "add")
    page = Path(doc["out"])
    assert page == workspace / ".rung" / "report" / "add.html"
    assert (doc["best_run"], [r["run"] for r in doc["runs"]]) == (4, [1, 2, 3, 4])
    _open(browser, page)
    charts = _boxes(browser, "figure svg")
    assert len(charts) == 3 and all(c["w"] > 300 and c["h"] > 150 for c in charts)
    marks = _boxes(browser, 'figure[data-chart="versions"] g[id^="version-"]')
    assert [m["id"] for m in marks] == ["version-1", "version-2", "version-3", "version-4"]
    assert all(m["w"] > 0 and m["h"] > 0 for m in marks)
    points = _boxes(browser, 'figure[data-chart="roofline NVIDIA H200"] g[id^="point-"]')
    assert [p["id"] for p in points] == ["point-1", "point-2", "point-4"]
    assert all(p["w"] > 0 for p in points)
    rows = browser.find_elements("css selector", "table.runs tr.run")
    assert [r.get_attribute("data-run") for r in rows] == ["1", "2", "3", "4"]
    assert "v4.py" in rows[3].text and "PASS" in rows[3].text
    assert [c.text for c in browser.find_elements("css selector", "table.best tr td:first-child")] == [
        "n=1024",
        "n=1048576",
    ]
    # Links are relative to the page and reach the run's files.
    result = browser.find_element("css selector", "#run-4 a[href$='result.json']").get_attribute("href")
    assert Path(result.removeprefix("file://")) == workspace / ".rung" / "runs" / "4" / "result.json"
    assert (
        browser.execute_script("return document.querySelectorAll('[src^=\"http\"], link[href]').length") == 0
    )


def test_a_failed_version_is_marked_never_dropped(workspace, browser):
    doc = report.write(workspace, "add")
    _open(browser, Path(doc["out"]))
    failed = browser.find_elements("css selector", "table.runs tr.failed")
    assert [r.get_attribute("data-run") for r in failed] == ["3"]
    assert "FAIL at correct" in failed[0].text and "12 of 1024 elements differ" in failed[0].text
    assert failed[0].find_element("css selector", ".rung.FAILED").text == "correct"
    assert _boxes(browser, 'figure[data-chart="versions"] #version-3')[0]["w"] > 0
    caption = browser.find_element(
        "css selector", 'figure[data-chart="roofline NVIDIA H200"] figcaption'
    ).text
    assert "run 3 (FAIL at correct" in caption


def test_the_best_versions_intra_kernel_trace_is_drawn_or_said_to_be_none(workspace, browser):
    doc = report.write(workspace, "add")
    assert doc["intra_kernel"]["path"].endswith("runs/4/scopes/trace.chrome_trace.json")
    _open(browser, Path(doc["out"]))
    assert _boxes(browser, '#intra figure[data-chart="intra-kernel"] svg')[0]["h"] > 100
    bars = _boxes(browser, "#intra svg #scopes path")
    assert len(bars) == 2 and all(b["w"] > 0 and b["h"] > 0 for b in bars)  # a bar per scope
    rows = [r.text for r in browser.find_elements("css selector", "table.scopes tr")[1:]]
    assert [r.split()[:4] for r in rows] == [
        ["matmul", "main_loop", "98%", "78,658"],
        ["matmul", "epilogue", "1%", "1,170"],
    ]
    assert "wg0 1,229, wg1 1,111" in rows[1]  # cycles per warp in each warp group
    store = Store(workspace)
    late = _timed(store, "v5.py", "e" * 64, "d" * 64, [0.001, 0.040])
    trace = store.run_dir(late.id) / "scopes" / "trace.chrome_trace.json"
    shutil.copy(PROTON / "matmul_tree.hatchet", trace)  # proton's tree, not a trace
    store.close()
    _open(browser, Path(report.write(workspace, "add")["out"]))
    said = browser.find_element("css selector", "#intra").text
    assert "trace.chrome_trace.json: not drawn" in said and "not a proton trace" in said
    store = Store(workspace)
    _timed(store, "v6.py", "f" * 64, "e" * 64, [0.0005, 0.020], scopes=False)  # the scopes rung not asked
    store.close()
    _open(browser, Path(report.write(workspace, "add")["out"]))
    assert (
        "none: run 6 kept no intra-kernel (proton) trace"
        in browser.find_element("css selector", "#intra").text
    )


def test_only_failed_versions_have_no_best_and_still_show(tmp_path, browser):
    store = Store(tmp_path)
    _failed(store, "v1.py", "a" * 64, None)
    store.close()
    doc = report.write(tmp_path, "add", tmp_path / "elsewhere" / "r.html")
    assert doc["best_run"] is None and doc["intra_kernel"] is None
    _open(browser, tmp_path / "elsewhere" / "r.html")
    assert [m["id"] for m in _boxes(browser, 'g[id^="version-"]')] == ["version-1"]
    assert "none: no version passed" in browser.find_element("css selector", "#best").text
    assert browser.find_element("css selector", "#run-1").get_attribute("class") == "run failed"


def test_an_empty_workspace_gives_a_page_that_says_so(tmp_path, browser):
    Store(tmp_path).close()
    doc = report.write(tmp_path, "add")
    assert (doc["runs"], doc["charts"]) == ([], [])
    _open(browser, Path(doc["out"]))
    assert browser.find_elements("css selector", "svg") == []
    assert f"no runs of add in {tmp_path}" in browser.find_element("css selector", "#runs").text
    with pytest.raises(UsageError, match="no runs in"):
        report.write(tmp_path, None)


def test_no_workspace_is_an_error_that_says_where_it_looked_and_makes_none(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNG_")}
    done = subprocess.run(
        [sys.executable, "-m", "rung", "report", "add"], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert done.returncode == 2
    assert f"no .rung/ in {tmp_path.resolve()}" in done.stderr
    assert not (tmp_path / ".rung").exists()


def test_json_says_where_it_wrote_and_what_the_page_holds(workspace, tmp_path):
    out = tmp_path / "page.html"
    done = subprocess.run(
        [sys.executable, "-m", "rung", "report", "add", "--json", "--out", str(out), "-w", str(workspace)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["out"] == str(out) and doc["bytes"] == out.stat().st_size
    assert [(c["name"], c["runs"]) for c in doc["charts"]] == [
        ("versions", [1, 2, 3, 4]),
        ("roofline NVIDIA H200", [1, 2, 4]),
        ("intra-kernel", []),
    ]


def test_each_device_gets_its_own_roofline_and_times_across_devices_are_flagged(workspace):
    h100 = Device("cuda", "NVIDIA H100", "sm_90", ceilings={"dram_gbps": 3350.0, "fp32_vector_tflops": 51.0})
    store = Store(workspace)
    run = store.begin(
        "add", "problems/add", Solution("v5.py", "e" * 64, "triton", "d" * 64), h100, 7, {}, "x"
    )
    roof = [{"case": c, "flops": c["n"], "bytes": 12 * c["n"], "measured_ms": 0.01} for c in CASES]
    for name in ("run", "guard", "correct", "scale"):
        store.add_rung(run, RungResult(name, Status.OK, "all match"))
    store.add_rung(run, RungResult("roofline", Status.OK, "", {"cases": roof}))
    store.finish(run)
    store.close()
    charts = {c["name"]: c for c in report.write(workspace, "add")["charts"]}
    assert charts["roofline NVIDIA H100"]["runs"] == [5]
    assert charts["roofline NVIDIA H200"]["runs"] == [1, 2, 4]
    assert "run 5 (PASS: timed on NVIDIA H100)" in charts["roofline NVIDIA H200"]["note"]
    assert "NVIDIA H100: runs 5; NVIDIA H200: runs 1, 2, 3, 4" in charts["versions"]["note"]
