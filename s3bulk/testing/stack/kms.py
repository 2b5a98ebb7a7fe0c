"""The KMS permissions S3 asks of the caller, in the whole-stack harness.

S3 calls KMS on the caller's behalf (kms:ViaService s3.REGION.amazonaws.com), so a role that may read an object
may still be refused it: reading an SSE-KMS object's data needs kms:Decrypt on its key, writing one needs
kms:GenerateDataKey on the key it is written under (the request's, else the bucket's default), and a multipart
upload needs both (S3 decrypts the upload's data key for each part and to complete it). moto authorizes none of
it; these needs join the IAM gate's (stack/iam.py `IamGate.extra_needs`), read from moto's own state of the
objects, uploads and bucket defaults, so a deployment whose `kms_keys` miss a key is refused as on AWS.

A key S3 manages (no key id, or alias/aws/s3) is left out: its key policy allows every principal of the account
through S3, which the harness's one account always is.
"""

from __future__ import annotations

from typing import Any

from moto.s3.models import s3_backends

from s3bulk.testing.stack.iam import Need, copy_source

READS = {"GetObject"}  # HeadObject returns metadata only: no data key is decrypted
WRITES = {"PutObject", "CopyObject"}
PART_OPS = {"UploadPart", "UploadPartCopy", "CompleteMultipartUpload"}


class MotoKms:
    """What S3 would ask KMS for one call, from moto's state in `account`."""

    def __init__(self, account: str, region: str) -> None:
        self.account = account
        self.region = region

    @property
    def _backend(self) -> Any:
        return s3_backends[self.account]["global"]

    def _arn(self, key_id: str | None) -> str | None:
        if not key_id or key_id.startswith("alias/aws/") or key_id == "aws/s3":
            return None
        if key_id.startswith("arn:"):
            return key_id
        return f"arn:aws:kms:{self.region}:{self.account}:{key_id if key_id.startswith('alias/') else f'key/{key_id}'}"

    def _bucket_default(self, bucket: str) -> str | None:
        try:
            rule = (self._backend.get_bucket(bucket).encryption or {}).get("Rule", {})
        except Exception:  # noqa: BLE001 - a missing bucket: S3 answers the call itself
            return None
        default = rule.get("ApplyServerSideEncryptionByDefault", {})
        return self._arn(default.get("KMSMasterKeyID")) if default.get("SSEAlgorithm", "").startswith("aws:kms") else None

    def _object_key(self, bucket: str, key: str, version: str | None) -> str | None:
        try:
            obj = self._backend.get_object(bucket, key, version_id=version or None)
        except Exception:  # noqa: BLE001 - missing: S3 answers 404 before any KMS call
            return None
        if obj is None or not str(getattr(obj, "encryption", "") or "").startswith("aws:kms"):
            return None
        return self._arn(obj.kms_key_id)

    def _written(self, bucket: str, params: dict[str, Any]) -> str | None:
        sse = str(params.get("ServerSideEncryption") or "")
        if sse.startswith("aws:kms"):
            return self._arn(str(params.get("SSEKMSKeyId") or "")) or None
        return None if sse else self._bucket_default(bucket)

    def _upload_key(self, bucket: str, upload_id: str) -> str | None:
        try:
            upload = self._backend.get_bucket(bucket).multiparts.get(upload_id)
        except Exception:  # noqa: BLE001
            return None
        if upload is None:
            return None
        if str(upload.sse_encryption or "").startswith("aws:kms"):
            return self._arn(upload.kms_key_id)
        return None if upload.sse_encryption else self._bucket_default(bucket)

    def needs(self, op: str, params: dict[str, Any]) -> list[Need]:
        via = (("kms:ViaService", f"s3.{self.region}.amazonaws.com"),)
        bucket = str(params.get("Bucket", ""))
        keys: list[tuple[str, str]] = []  # (action, key ARN)
        if op in READS:
            keys.append(("kms:Decrypt", self._object_key(bucket, str(params["Key"]), params.get("VersionId")) or ""))
        if op in {"CopyObject", "UploadPartCopy"}:
            sb, sk, sv = copy_source(params["CopySource"])
            keys.append(("kms:Decrypt", self._object_key(sb, sk, sv) or ""))
        if op in WRITES:
            keys.append(("kms:GenerateDataKey", self._written(bucket, params) or ""))
        if op == "CreateMultipartUpload":
            written = self._written(bucket, params) or ""
            keys += [("kms:GenerateDataKey", written), ("kms:Decrypt", written)]
        if op in PART_OPS:
            keys.append(("kms:Decrypt", self._upload_key(bucket, str(params.get("UploadId", ""))) or ""))
        return [Need(action, arn, via) for action, arn in keys if arn]
