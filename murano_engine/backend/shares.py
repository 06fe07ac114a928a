"""Each project's share of what a process runs of one kind (static actions, UI forms).

One project's slow or runaway requests must not take every slot: a
:class:`ProjectShares` admits at most ``total`` at once, and at most
``per_project`` of one project.
"""

from __future__ import annotations

import threading

#: why :meth:`ProjectShares.take` refused: every slot is taken, or the project's share
ALL_TAKEN = "all taken"
SHARE_TAKEN = "share taken"


class ProjectShares:
    """Slots counted per project (``total`` None: no limit but the projects' shares)."""

    def __init__(self, total: int | None, per_project: int) -> None:
        self.total = total
        self.per_project = per_project if total is None else min(per_project, total)
        self._lock = threading.Lock()
        self._running = 0
        self._by_project: dict[str, int] = {}

    def take(self, project_id: str) -> str | None:
        """Take a slot for ``project_id``: None, or why not (:data:`ALL_TAKEN`,
        :data:`SHARE_TAKEN`)."""
        with self._lock:
            if self.total is not None and self._running >= self.total:
                return ALL_TAKEN
            mine = self._by_project.get(project_id, 0)
            if mine >= self.per_project:
                return SHARE_TAKEN
            self._running += 1
            self._by_project[project_id] = mine + 1
            return None

    def free(self, project_id: str) -> None:
        """Give back a slot :meth:`take` gave ``project_id``."""
        with self._lock:
            self._running -= 1
            left = self._by_project[project_id] - 1
            if left:
                self._by_project[project_id] = left
            else:
                del self._by_project[project_id]
