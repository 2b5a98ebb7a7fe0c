"""Object bodies: read an object as a seekable file (reader.py) and stream bytes into a new one (writer.py).

Shared by both runtimes; they talk only to the ObjectStore port, so any store serves them.
"""
