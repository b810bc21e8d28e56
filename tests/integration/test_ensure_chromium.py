"""``.ci/ensure-chromium`` (run by ``make e2e``): silent when the browser is there, one clear command when not."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "ensure-chromium"


def ensure(chromium: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FLOWDECK_E2E_CHROMIUM": chromium}
    return subprocess.run([str(SCRIPT)], env=env, capture_output=True, text=True, timeout=30, check=False)


def test_a_browser_that_is_there_needs_nothing(tmp_path: Path) -> None:
    browser = tmp_path / "chromium"
    browser.write_text("#!/bin/sh\n")
    browser.chmod(0o755)
    result = ensure(str(browser))
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""


def test_a_missing_browser_elsewhere_names_the_command_to_run(tmp_path: Path) -> None:
    result = ensure(str(tmp_path / "no-chromium"))
    assert result.returncode == 1
    assert "sudo apt-get install -y chromium" in result.stderr and "FLOWDECK_E2E_CHROMIUM" in result.stderr
