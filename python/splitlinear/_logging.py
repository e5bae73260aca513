"""The package logger, registered with ``torch._logging``.

Everything in :mod:`splitlinear` logs through :data:`logger`
(``logging.getLogger("splitlinear")``): ``DEBUG`` for each matched or rejected
candidate (with the reason), ``INFO`` for one summary line per compiled graph.
Enable it like any other PyTorch log::

    TORCH_LOGS=+splitlinear python train.py           # DEBUG
    TORCH_LOGS=splitlinear python train.py            # INFO
    torch._logging.set_logs(modules={"splitlinear": logging.DEBUG})

or with the standard library alone::

    logging.getLogger("splitlinear").setLevel(logging.DEBUG)
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import torch
from torch._logging import _internal as _torch_logging

LOGGER_NAME = "splitlinear"

logger: logging.Logger = logging.getLogger(LOGGER_NAME)

# As torch's own components are (torch/_logging/_registrations.py): the alias
# "splitlinear" then names this logger in TORCH_LOGS and set_logs, and torch's
# log setup (levels, handlers, TORCH_LOGS_OUT) covers it.
_torch_logging.register_log(LOGGER_NAME, LOGGER_NAME)

#: Frames in these folders are not the user's: a warning raised while the backend compiles
#: (inside Dynamo, inside the compiled function's first call) names the user's line instead.
_LIBRARY_DIRS = tuple(str(Path(m.__file__).resolve().parent) + os.sep for m in (sys.modules[__package__], torch))


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn``, called by the function that warns, that names the
    first frame outside splitlinear and torch: the user's ``model(x)`` when the backend warns while
    Dynamo compiles it. 1 (the warning's own line) when no such frame exists."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None:
        name = frame.f_code.co_filename
        # "<frozen importlib...>" is the import machinery; "<string>" and "<stdin>" are the user's.
        if not name.startswith("<frozen") and (name.startswith("<") or
                                               not str(Path(name).resolve()).startswith(_LIBRARY_DIRS)):
            return level
        frame = frame.f_back
        level += 1
    return 1
