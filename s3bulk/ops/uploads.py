"""abort-uploads: abort an incomplete multipart upload (rclone's `cleanup`), which frees the storage its parts hold.

The listing (listing.UploadsView) gives each open upload as an ObjectInfo with its upload_id; the object under the
same key, if any, is never touched.
"""

from __future__ import annotations

from s3bulk.store import ObjectInfo, ObjectStore, StoreError

# What the key log says of an upload that was gone when its abort came (completed or aborted since it was listed,
# or aborted by an earlier delivery of the same batch): done, since nothing of it is left to abort.
ALREADY_GONE = "already gone (NoSuchUpload)"


def abort_upload(store: ObjectStore, bucket: str, upload: ObjectInfo) -> bool:
    """AbortMultipartUpload; False when the upload was already gone, which counts as done so a redelivery stays exact."""
    if not upload.upload_id:
        raise StoreError("InvalidArgument", "no upload id: abort-uploads acts on listed uploads only", 400)
    try:
        store.abort_multipart_upload(bucket, upload.key, upload.upload_id)
    except StoreError as exc:
        if exc.code == "NoSuchUpload":
            return False
        raise
    return True
