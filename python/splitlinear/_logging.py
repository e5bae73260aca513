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

from torch._logging import _internal as _torch_logging

LOGGER_NAME = "splitlinear"

logger: logging.Logger = logging.getLogger(LOGGER_NAME)

# As torch's own components are (torch/_logging/_registrations.py): the alias
# "splitlinear" then names this logger in TORCH_LOGS and set_logs, and torch's
# log setup (levels, handlers, TORCH_LOGS_OUT) covers it.
_torch_logging.register_log(LOGGER_NAME, LOGGER_NAME)
