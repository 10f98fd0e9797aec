"""Reporting: tables and figures to results/, plots, the reports' own numbers, and the paper (``paper``).

Wall: needs no torch; imports only ``countdown_study.runs`` provenance helpers and ``paths``.
"""
