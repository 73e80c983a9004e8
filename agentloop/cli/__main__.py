"""``python -m agentloop.cli``: the `agentloop` command."""

import sys

from agentloop.cli.main import main

sys.exit(main())
