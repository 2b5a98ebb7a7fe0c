"""Test doubles for the store port (an in-memory store, an S3 fault proxy), used by tests and bench/ only.

Kept out of the wheel and the Lambda asset.
"""
