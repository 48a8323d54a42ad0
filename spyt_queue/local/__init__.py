"""A local YTsaurus-compatible queue server speaking the HTTP proxy API v4 (see README.md in this package).

``LocalYtServer(data_dir).start()`` runs it as a separate process; ``serve(...)`` runs it in the foreground.
"""

from __future__ import annotations

from spyt_queue.local.server import LocalYtServer, serve

__all__ = ["LocalYtServer", "serve"]
