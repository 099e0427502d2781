"""The README's Python snippet, run against the live stack."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
MARKER = "<!-- snippet: python -->"


def snippet():
    readme = (REPO / "README.md").read_text()
    assert MARKER in readme, f"README.md has no {MARKER}"
    start = readme.index("```python\n", readme.index(MARKER)) + len("```python\n")
    return readme[start : readme.index("```\n", start)]


def test_readme_python_snippet_runs(stack, bind):
    task = bind("C-1001")
    env = dict(os.environ, AMBIT_STACK=stack["_file"], AMBIT_TASK=task, PYTHONPATH=str(REPO / "clients" / "python"))
    run = subprocess.run([sys.executable, "-c", snippet()], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines == [
        "['ALL_APERTURES_SATISFIED']",
        "True True",
        "VERIFIED",
        "['COMMITMENT_STATUS_VERIFIED'] 0",
        "True",
        "ERROR_REASON_FIELDS_OUTSIDE_GRANT",
    ], run.stdout
