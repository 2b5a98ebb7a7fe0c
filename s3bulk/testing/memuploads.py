"""The in-memory store's multipart uploads, as S3 rules them: parts, copied ranges, checksums, complete, abort."""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Sequence

from s3bulk.store import (
    Body,
    Carried,
    CopiedPart,
    ListedPart,
    ObjectHead,
    StoreError,
    crc32_header,
)
from s3bulk.testing.membase import MemoryBase, _check_crc32, _check_retention, _checksum, _composite, _md5, _Obj, _Upload


class MemoryUploads(MemoryBase):
    """UploadPart, Create/Complete/AbortMultipartUpload, UploadPartCopy and ListParts."""

    def upload_part(self, bucket: str, key: str, upload_id: str, part_number: int, body: Body, *, crc32: int | None = None) -> str:
        self._count("UploadPart")
        self._fault("UploadPart", bucket, key)
        _check_crc32(body, crc32)
        with self._lock:
            upload = self._uploads.get(upload_id)
            if upload is None:
                raise StoreError("NoSuchUpload", "The specified upload does not exist", 404)
            etag = _md5(body)
            upload.parts[part_number] = (bytes(body), len(body), etag)
            return etag

    def create_multipart_upload(
        self,
        bucket: str,
        key: str,
        head: ObjectHead,
        tags: dict[str, str],
        *,
        storage_class: str | None = None,
        crc32: bool = False,
        checksum_algorithm: str = "",
        carry: Carried | None = None,
    ) -> str:
        self._count("CreateMultipartUpload")
        self._fault("PutObject", bucket, key)
        self._check_key(key)
        with self._lock:
            self._bucket(bucket)
            upload_id = f"upload-{next(self._ids)}"
            carry = carry or Carried()
            _check_retention(carry)
            sse = carry.encryption or self.bucket_encryption.get(bucket)
            # crc32: the writer's FULL_OBJECT CRC32 upload (as S3Store asks for it), whose parts ListParts lists with theirs.
            alg = checksum_algorithm or ("CRC32" if crc32 else "")
            self._uploads[upload_id] = _Upload(
                bucket, key, head, dict(tags), storage_class or "STANDARD", alg, sse, self._new_acl(carry.grants), carry
            )
            return upload_id

    def upload_part_copy(
        self,
        src_bucket: str,
        src_key: str,
        dst_bucket: str,
        dst_key: str,
        upload_id: str,
        part_number: int,
        first_byte: int,
        last_byte: int,
        if_match: str,
        *,
        src_version: str = "",
    ) -> CopiedPart:
        self._count("UploadPartCopy")
        self._fault("UploadPartCopy", src_bucket, src_key)
        self._fault("UploadPart", dst_bucket, dst_key)
        src = self._get(src_bucket, src_key, src_version)
        if src.etag != if_match:
            raise StoreError("PreconditionFailed", "At least one of the pre-conditions you specified did not hold", 412)
        with self._lock:
            upload = self._uploads.get(upload_id)
            if upload is None:
                raise StoreError("NoSuchUpload", "The specified upload does not exist", 404)
            chunk = None if src.body is None else src.body[first_byte : last_byte + 1]
            etag = _md5(chunk if chunk is not None else f"{src_key}:{first_byte}".encode())
            upload.parts[part_number] = (chunk, last_byte - first_byte + 1, etag)
            alg = upload.checksum_algorithm
            return CopiedPart(etag, _checksum(alg, chunk if chunk is not None else etag.encode()) if alg else "")

    def complete_multipart_upload(
        self,
        bucket: str,
        key: str,
        upload_id: str,
        part_etags: Sequence[str],
        *,
        part_crc32s: Sequence[int] = (),
        crc32: int | None = None,
        part_checksums: Sequence[str] = (),
    ) -> str:
        self._count("CompleteMultipartUpload")
        self._fault("CompleteMultipartUpload", bucket, key)
        with self._lock:
            upload = self._uploads[upload_id]
            parts = [upload.parts[n] for n in range(1, len(part_etags) + 1)]
            if [p[2] for p in parts] != list(part_etags):
                raise StoreError("InvalidPart", "One or more of the specified parts could not be found", 400)
            alg = upload.checksum_algorithm
            if alg == "CRC32" and part_crc32s and not part_checksums:  # the writer gives its parts' CRC-32s as numbers
                part_checksums = [
                    f"CRC32:{crc32_header(crc)}" if p[0] is None or crc == zlib.crc32(p[0]) else ""
                    for p, crc in zip(parts, part_crc32s, strict=False)
                ]
            if alg and (len(part_checksums) != len(parts) or not all(c.startswith(f"{alg}:") for c in part_checksums)):
                raise StoreError("InvalidRequest", f"The upload was created using a {alg} checksum; give each part's", 400)
            synthetic = any(p[0] is None for p in parts)
            body = None if synthetic else b"".join(p[0] or b"" for p in parts)
            if body is not None:
                _check_crc32(body, crc32)  # FULL_OBJECT: the server checks the whole object's CRC32; the upload stays open
            del self._uploads[upload_id]
            digest = hashlib.md5(b"".join(bytes.fromhex(e.strip('"')) for e in part_etags), usedforsecurity=False)
            etag = f'"{digest.hexdigest()}-{len(parts)}"'
            head = upload.head
            self._set(
                bucket,
                key,
                _Obj(
                    body,
                    sum(p[1] for p in parts),
                    etag,
                    self.now(),
                    head.content_type or "binary/octet-stream",
                    dict(head.metadata),
                    upload.tags,
                    upload.storage_class,
                    checksum=f"CRC32:{crc32_header(crc32)}" if crc32 is not None else _composite(alg, part_checksums) if alg else "",
                    encryption=upload.encryption,
                    acl=upload.acl,
                    retention=upload.carry.retention if upload.carry else None,
                    legal_hold="ON" if upload.carry and upload.carry.legal_hold else "OFF",
                ),
            )
            return etag

    def list_parts(self, bucket: str, key: str, upload_id: str) -> list[ListedPart]:
        self._count("ListParts")
        with self._lock:
            upload = self._uploads.get(upload_id)
            if upload is None:
                raise StoreError("NoSuchUpload", "The specified upload does not exist", 404)
            alg = upload.checksum_algorithm
            return [
                ListedPart(n, etag, size, _checksum(alg, chunk if chunk is not None else etag.encode()) if alg else "")
                for n, (chunk, size, etag) in sorted(upload.parts.items())
            ]

    def abort_multipart_upload(self, bucket: str, key: str, upload_id: str) -> None:
        self._count("AbortMultipartUpload")
        self._fault("AbortMultipartUpload", bucket, key)
        with self._lock:
            upload = self._uploads.get(upload_id)
            if upload is None or (upload.bucket, upload.key) != (bucket, key):  # as S3 answers an upload already gone
                raise StoreError("NoSuchUpload", "The specified upload does not exist", 404)
            del self._uploads[upload_id]

    @property
    def open_uploads(self) -> int:
        with self._lock:
            return len(self._uploads)
