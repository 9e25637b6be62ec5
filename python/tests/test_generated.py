"""The sync client is generated from the async one (scripts/generate_sync_client.py): the checked-in
files must be what the script writes, or the two clients have drifted apart."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "generate_sync_client.py"


def test_the_checked_in_sync_client_is_the_generated_one() -> None:
    r = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, f"run python python/scripts/generate_sync_client.py\n{r.stdout}{r.stderr}"
