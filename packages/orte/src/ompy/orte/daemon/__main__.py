"""``python -m ompy.orte.daemon``: how a launcher starts a daemon on another node."""

import sys

from ompy.orte.daemon.launch import main

sys.exit(main())
