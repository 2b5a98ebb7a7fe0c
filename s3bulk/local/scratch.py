"""The doctor's scratch keys: written under one unique prefix of the user's bucket, and every one deleted at the end.

A server may store a key under another name than it was sent (`a//b` as `a/b`, `/lead` as `lead`), so the cleanup
deletes each name written and each key listed under the prefix (and under `/` + the prefix), every version of them
in a versioned bucket, then lists again: whatever is still there is returned, for the doctor to print.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from s3bulk.s3.keytext import REPLACEMENT, unencoded

ROOT = ".s3bulk-doctor/"
# What DeleteObjects' XML body cannot carry: such keys are deleted one request each.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


class Scratch:
    """Scratch objects under `.s3bulk-doctor/<uuid>/` of one bucket, written through `put` and removed by `clean`."""

    def __init__(self, client: Any, bucket: str) -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = f"{ROOT}{uuid.uuid4().hex}/"
        self.written: list[str] = []
        self.versioned = False

    def key(self, name: str) -> str:
        return self.prefix + name

    def put(self, name: str, body: bytes, **kwargs: Any) -> dict[str, Any]:
        """PutObject of prefix + name; the name is remembered first, so a put whose answer was lost is cleaned too."""
        return self.put_key(self.key(name), body, **kwargs)

    def put_key(self, key: str, body: bytes, **kwargs: Any) -> dict[str, Any]:
        self.written.append(key)
        r: dict[str, Any] = self.client.put_object(Bucket=self.bucket, Key=key, Body=body, **kwargs)
        return r

    def listed(self, prefix: str) -> list[str]:
        """Every key under `prefix` as the server stores it: asked without encoding-type, so nothing is decoded. A key
        such an answer cannot carry comes with U+FFFD for the character (keytext.legible): it is named as written."""
        written = {_NOT_XML.sub(REPLACEMENT, k): k for k in self.written}
        return [written.get(k, k) if REPLACEMENT in k else k for k in self._listed(prefix)]

    def _listed(self, prefix: str) -> list[str]:
        keys: list[str] = []
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
        with unencoded():
            while True:
                r = self.client.list_objects_v2(**kwargs)
                keys += [o["Key"] for o in r.get("Contents", ())]
                if not r.get("IsTruncated") or not r.get("NextContinuationToken"):
                    return keys
                kwargs["ContinuationToken"] = r["NextContinuationToken"]

    def _versions(self, prefix: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
        with unencoded():
            while True:
                r = self.client.list_object_versions(**kwargs)
                out += [(v["Key"], str(v.get("VersionId") or "null")) for v in (*r.get("Versions", ()), *r.get("DeleteMarkers", ()))]
                if not r.get("IsTruncated") or not r.get("NextKeyMarker"):
                    return out
                kwargs.update(KeyMarker=r["NextKeyMarker"], VersionIdMarker=r.get("NextVersionIdMarker") or "")

    def _delete(self, targets: list[tuple[str, str | None]]) -> None:
        """Delete each (key, version): DeleteObjects for what its XML can carry, DeleteObject for the rest."""
        batch = [t for t in targets if not _NOT_XML.search(t[0])]
        for at in range(0, len(batch), 1000):
            objects = [{"Key": k, **({"VersionId": v} if v else {})} for k, v in batch[at : at + 1000]]
            try:
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": objects, "Quiet": True})
            except (ClientError, BotoCoreError):
                for k, v in batch[at : at + 1000]:
                    self._delete_one(k, v)
        for k, v in targets:
            if _NOT_XML.search(k):
                self._delete_one(k, v)

    def _delete_one(self, key: str, version: str | None) -> None:
        with contextlib.suppress(ClientError, BotoCoreError):  # what is left is listed again by clean, and named
            self.client.delete_object(Bucket=self.bucket, Key=key, **({"VersionId": version} if version else {}))

    def clean(self) -> list[str]:
        """Delete everything the probe wrote; return what is still there (keys, or `key@version` in a versioned bucket)."""
        prefixes = (self.prefix, "/" + self.prefix)
        try:
            names = set(self.written) | {k for p in prefixes for k in self.listed(p)}
            self._delete([(k, None) for k in sorted(names)])
            if self.versioned:
                self._delete([(k, v) for p in prefixes for k, v in self._versions(p)])
                return sorted(f"{k}@{v}" for p in prefixes for k, v in self._versions(p))
            return sorted({k for p in prefixes for k in self.listed(p)})
        except (ClientError, BotoCoreError) as exc:  # could not even list: name what was written
            return [*sorted(set(self.written)), f"(could not list {self.prefix} to check: {exc})"]
