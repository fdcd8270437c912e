"""docker/test-image.sh: the container image built from this checkout and run as the job."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from tests.procs import missing

DOCKER = Path(__file__).resolve().parent.parent / "docker"


def test_the_image_test_script_parses():
    """Its bash and its embedded Python parse (cheap, everywhere; the run is below)."""
    script = DOCKER / "test-image.sh"
    assert script.stat().st_mode & 0o111, "not executable"
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = script.read_text()
    assert text.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in text
    helpers = re.search(r"<<'PY'\n(.*?)\nPY\n", text, re.S)
    assert helpers is not None
    compile(helpers.group(1), "test-image.sh:checks.py", "exec")


def test_the_image_builds_and_runs_the_job():
    """docker/test-image.sh, end to end: the image built from this checkout with podman and
    run as the nightly job against nginx on 127.0.0.1 (40 s to 2.5 min). It needs root: it
    runs rootful podman and installs podman, runc, debootstrap and nginx when missing."""
    if os.geteuid() != 0:
        missing("root, for rootful podman (docker/test-image.sh)")
    if shutil.which("apt-get") is None and shutil.which("podman") is None:
        missing("podman, or apt-get to install it (docker/test-image.sh)")
    done = subprocess.run(
        [str(DOCKER / "test-image.sh")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-6000:]
    assert "all checks passed" in done.stdout
