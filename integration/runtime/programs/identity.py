"""Prints this rank's launch environment as one JSON line; rank 0 also echoes its stdin."""

import json
import os
import sys
from pathlib import Path

keys = [k for k in os.environ if k.startswith("OMPY_") or k.startswith("EXPORTED_")]
report = {k: os.environ[k] for k in keys}
report["session_dir_exists"] = Path(os.environ["OMPY_SESSION_DIR"]).is_dir()
report["stdin"] = sys.stdin.read()
report["cwd"] = os.getcwd()

from ompy.opal.mca.params import ParamType, registry  # noqa: E402

registry().register("orte_abort_timeout", ParamType.FLOAT, 3.0, "as in ompy.orte.layer")
resolved = registry().resolve("orte_abort_timeout")
report["abort_timeout"] = [resolved.value, str(resolved.source)]
print(json.dumps(report, sort_keys=True))
print(f"to stderr from {os.environ['OMPY_RANK']}", file=sys.stderr)
sys.stdout.write(f"partial from {os.environ['OMPY_RANK']}")
