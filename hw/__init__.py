"""Amaranth hardware components, one per file."""
