"""The package logger.

Everything in :mod:`splitlinear` logs through ``logging.getLogger("splitlinear")``:
``DEBUG`` for each matched or rejected candidate (with the reason), ``INFO`` for
one summary line per compiled graph.  Enable with, for example::

    logging.getLogger("splitlinear").setLevel(logging.DEBUG)
"""

from __future__ import annotations

import logging

LOGGER_NAME = "splitlinear"

logger: logging.Logger = logging.getLogger(LOGGER_NAME)
