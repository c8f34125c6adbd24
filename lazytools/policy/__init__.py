"""Per-user tool policy as data: the file's format and its decisions (rules.py), the file kept current without a
restart (file.py), and per-principal rate limits (limits.py)."""
