"""What runs only on the user's machine: the engine, the SQLite job ledger, progress, plan, the demo and its server.

Nothing on the Lambda path imports this package (tests/unit/test_layout.py proves it).
"""
