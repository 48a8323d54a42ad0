"""The Kudu and HBase sinks, whose code lives in the repository's top-level ``sinks/`` folder.

This file exists for a checkout only (the repository root on ``sys.path``: pytest, ``pip install -e .``): it makes
that folder the package's path, so ``spyt_queue.sinks.kudu`` is ``sinks/kudu``. Wheels and sdists install the folder
itself as ``spyt_queue/sinks`` (``setup.py``), with ``sinks/__init__.py`` in place of this file.
"""

from pathlib import Path

__path__ = [str(Path(__file__).resolve().parents[2] / "sinks")]
