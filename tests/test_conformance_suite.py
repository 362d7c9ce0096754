"""The Array API standard's own conformance suite (data-apis/array-api-tests, pinned in
../shared/array-api-tests) run against lazytensor, so conformance cannot regress unseen: a few
hypothesis examples per test, derandomized, deadlines off (they time the machine, not the
library), every dtype (complex too). Skipped where the suite is not beside the project."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SUITE = Path(__file__).resolve().parents[1].parent / "shared" / "array-api-tests" / "run"
PASS_RATE = 0.99


@pytest.mark.skipif(not SUITE.exists(), reason=f"the conformance suite is not at {SUITE}")
def test_array_api_conformance_suite(tmp_path):
    report = tmp_path / "report.json"
    env = dict(os.environ, AAT_EXAMPLES=os.environ.get("AAT_EXAMPLES", "5"), PYTHON=sys.executable)
    env.pop("ARRAY_API_TESTS_SKIP_DTYPES", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    out = subprocess.run(["bash", str(SUITE), "-p", "no:xdist", "-q", "--hypothesis-disable-deadline",
                          "--hypothesis-derandomize", "--json-report", f"--json-report-file={report}"],
                         env=env, capture_output=True, text=True, timeout=1200)
    assert report.exists(), f"the suite did not run:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    outcomes = {}
    failed = []
    for test in json.loads(report.read_text())["tests"]:
        outcomes[test["outcome"]] = outcomes.get(test["outcome"], 0) + 1
        if test["outcome"] in ("failed", "error"):
            failed.append(test["nodeid"])
    counted = outcomes.get("passed", 0) + outcomes.get("failed", 0) + outcomes.get("error", 0)
    rate = outcomes.get("passed", 0) / max(counted, 1)
    assert rate >= PASS_RATE and counted > 1000, (f"{outcomes}: pass rate {rate:.2%}; failing:\n" + "\n".join(failed))
