"""The stack harness, in parts; tests import it from tests/integration/stack_harness.py."""
