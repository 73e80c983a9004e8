"""What goes wrong before a service serves: a setting it cannot use, or a world it cannot start in.

Apart from agentloop.kernel.settings so that what reads a setting's file (the models file of
agentloop.kernel.named_models) can raise them without importing the settings it is part of.
"""

from __future__ import annotations


class SettingError(ValueError):
    """An environment variable holds a value of the wrong type or range."""


class StartupError(RuntimeError):
    """A service cannot start for a reason outside its own settings, such as a database it cannot reach.

    The command line prints its message as one line and exits non-zero: the
    message, not a traceback, is what an operator needs.
    """
