"""After the match: its record (JSON and text), replays, the strong policy's analysis, and the
fair shuffles' commitment and verification (docs/records.md, docs/fairness.md).

Import the modules themselves: this package runs nothing on import, so that the games use
cases may use ``fairness`` while this package's use cases use them.
"""
