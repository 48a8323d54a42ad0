"""Kudu sink of spyt-queue: per-key planners (``planners``), their mutations (``mutations``) and the Kudu writer."""
