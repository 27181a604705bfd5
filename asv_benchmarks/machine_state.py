"""What the measuring scripts beside this file print about the machine they ran on."""

from __future__ import annotations

import os


def load_average() -> str:
    """The 1, 5 and 15 minute load averages (``"?"`` where the system has none).

    Every script prints it at its start and end: on a shared machine it tells
    whether other jobs ran during the measurement.
    """
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"
