"""Sinks that reuse the spyt-queue offset contract (Kudu, HBase); filled in by later work."""
