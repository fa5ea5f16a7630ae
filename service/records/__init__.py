"""After the match: its record (JSON and text), replays, the strong policy's analysis, what the
record reveals of the fair shuffles and their verification (docs/records.md, docs/fairness.md).

This room stands on the games use cases (their stored record and context) and on the engine,
whose ``deals.py`` derives every deck and the commitment; nothing below imports it.
"""
