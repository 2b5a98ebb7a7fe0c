"""S3Store's multipart uploads: create, the parts (uploaded or copied), complete, abort and list."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from s3bulk.s3.params import apply_carry, content_md5, version_param
from s3bulk.s3.storebase import _CHECKSUMS, StoreBase
from s3bulk.store import (
    Body,
    Carried,
    CopiedPart,
    ListedPart,
    ObjectHead,
    crc32_header,
    quoted_etag,
)


class UploadCalls(StoreBase):
    """One API call each, as the port names them."""

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
        kwargs = self._new_object(bucket, key, head, tags, storage_class)
        apply_carry(kwargs, carry)
        if crc32:
            kwargs.update(ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT")
        elif checksum_algorithm:  # CRC64NVME exists only as a full-object checksum; the others combine per part
            kind = "FULL_OBJECT" if checksum_algorithm == "CRC64NVME" else "COMPOSITE"
            kwargs.update(ChecksumAlgorithm=checksum_algorithm, ChecksumType=kind)
        return str(self._call(self._s3(bucket).create_multipart_upload, **kwargs)["UploadId"])

    def upload_part(self, bucket: str, key: str, upload_id: str, part_number: int, body: Body, *, crc32: int | None = None) -> str:
        checksum = {} if crc32 is None else {"ChecksumCRC32": crc32_header(crc32)}
        r = self._call(
            self._s3(bucket).upload_part,
            Bucket=bucket,
            Key=key,
            UploadId=upload_id,
            PartNumber=part_number,
            Body=body,
            ContentMD5=content_md5(body),
            **checksum,
            **self._params(bucket),  # encryption was set when the upload was created
        )
        return quoted_etag(r.get("ETag"))

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
        r = self._call(
            self._s3(dst_bucket).upload_part_copy,
            Bucket=dst_bucket,
            Key=dst_key,
            UploadId=upload_id,
            PartNumber=part_number,
            CopySource={"Bucket": src_bucket, "Key": src_key, **version_param(src_version)},
            CopySourceRange=f"bytes={first_byte}-{last_byte}",
            CopySourceIfMatch=if_match,
            **self._params(dst_bucket, source=src_bucket),
        )
        result = r["CopyPartResult"]
        checksum = next((f"{alg}:{result[f'Checksum{alg}']}" for alg in _CHECKSUMS if result.get(f"Checksum{alg}")), "")
        return CopiedPart(quoted_etag(result["ETag"]), checksum)

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
        parts: list[dict[str, Any]] = [{"PartNumber": n, "ETag": etag} for n, etag in enumerate(part_etags, start=1)]
        for part, crc in zip(parts, part_crc32s, strict=False):
            part["ChecksumCRC32"] = crc32_header(crc)
        for part, part_checksum in zip(parts, part_checksums, strict=False):
            if part_checksum:  # "ALGORITHM:value", as upload_part_copy returned it
                alg, value = part_checksum.split(":", 1)
                part[f"Checksum{alg}"] = value
        checksum = {} if crc32 is None else {"ChecksumCRC32": crc32_header(crc32), "ChecksumType": "FULL_OBJECT"}
        if part_checksums and part_checksums[0].startswith("CRC64NVME:"):
            checksum = {"ChecksumType": "FULL_OBJECT"}  # S3 combines the parts' CRC64NVMEs into the object's
        r = self._call(
            self._s3(bucket).complete_multipart_upload,
            Bucket=bucket,
            Key=key,
            UploadId=upload_id,
            MultipartUpload={"Parts": parts},
            **checksum,
            **self._params(bucket),
        )
        return quoted_etag(r.get("ETag"))

    def abort_multipart_upload(self, bucket: str, key: str, upload_id: str) -> None:
        self._call(self._s3(bucket).abort_multipart_upload, Bucket=bucket, Key=key, UploadId=upload_id, **self._params(bucket))

    def list_parts(self, bucket: str, key: str, upload_id: str) -> list[ListedPart]:
        parts: list[ListedPart] = []
        marker: dict[str, Any] = {}
        while True:
            r = self._call(self._s3(bucket).list_parts, Bucket=bucket, Key=key, UploadId=upload_id, **marker, **self._params(bucket))
            for p in r.get("Parts", ()):
                checksum = next((f"{alg}:{p[f'Checksum{alg}']}" for alg in _CHECKSUMS if p.get(f"Checksum{alg}")), "")
                parts.append(ListedPart(int(p["PartNumber"]), quoted_etag(p.get("ETag")), int(p.get("Size", 0)), checksum))
            if not r.get("IsTruncated"):
                return parts
            marker = {"PartNumberMarker": int(r["NextPartNumberMarker"])}
