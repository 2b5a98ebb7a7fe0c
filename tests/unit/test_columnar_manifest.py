"""Parquet and ORC manifests on the fake store: inventories and Parquet object lists, resumed by row group, bad files named."""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from s3bulk.job import JobError, parse_job
from s3bulk.source import columnar
from s3bulk.source.manifest import ManifestError, ManifestReader
from s3bulk.store import StoreError
from s3bulk.testing.memstore import MemoryStore
from tests.unit.test_manifest import SPECIAL, job, run

ROOT = Path(__file__).resolve().parents[2]
MANIFEST_JSON = "inv/src-b/cfg/2026-11-20T01-00Z/manifest.json"


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore(page_size=25)
    for b in ("src-b", "dst-b", "man-b"):
        s.create_bucket(b)
    for i, key in enumerate(SPECIAL):
        s.put_object("src-b", key, f"body {i}".encode())
    return s


def inventory_table(store: MemoryStore, keys: list[str], **overrides: list[Any]) -> pa.Table:
    """Rows as S3 Inventory writes a columnar report: snake_case names, typed values, keys not URL-encoded."""
    objs = [store.get("src-b", k) for k in keys]
    cols: dict[str, Any] = {
        "bucket": ["src-b"] * len(keys),
        "key": keys,
        "version_id": pa.array(["v1"] * len(keys), pa.string()),
        "is_latest": [True] * len(keys),
        "is_delete_marker": [False] * len(keys),
        "size": pa.array([o.size for o in objs], pa.int64()),
        "last_modified_date": pa.array([o.last_modified for o in objs], pa.timestamp("ms", tz="UTC")),
        "e_tag": [o.etag.strip('"') for o in objs],
        "storage_class": [o.storage_class for o in objs],
    }
    cols.update(overrides)
    return pa.table(cols)


def encode(table: pa.Table, fmt: str, group_rows: int = 3) -> bytes:
    out = io.BytesIO()
    if fmt == "ORC":
        with orc.ORCWriter(out, stripe_size=1) as writer:  # a stripe as soon as one is written: one per write
            for batch in table.to_batches(max_chunksize=group_rows):
                writer.write(pa.Table.from_batches([batch]))
    else:
        pq.write_table(table, out, row_group_size=group_rows)
    return out.getvalue()


def columnar_inventory(store: MemoryStore, fmt: str, parts: list[pa.Table], group_rows: int = 3) -> dict[str, Any]:
    files = []
    for n, table in enumerate(parts):
        key = f"inv/src-b/cfg/data/part-{n}.{fmt.lower()}"
        body = encode(table, fmt, group_rows)
        store.put_object("man-b", key, body)
        files.append({"key": key, "size": len(body), "MD5checksum": "unchecked"})
    schema = "message s3.inventory { required binary bucket (STRING); required binary key (STRING); ... }"
    doc = {"sourceBucket": "src-b", "destinationBucket": "arn:aws:s3:::man-b", "fileFormat": fmt, "fileSchema": schema, "files": files}
    store.put_object("man-b", MANIFEST_JSON, json.dumps(doc).encode())
    return {"bucket": "man-b", "key": MANIFEST_JSON, "format": "inventory"}


@pytest.mark.parametrize("fmt", ["Parquet", "ORC"])
def test_a_columnar_inventory_copies_its_keys_exactly_skips_delete_markers_and_needs_no_head(store: MemoryStore, fmt: str) -> None:
    store.put_object("src-b", "in/big", b"B" * 5000)
    keys = [*SPECIAL, "in/big"]
    marker = inventory_table(store, ["in/plain"], key=["in/gone"], is_delete_marker=[True], size=pa.array([None], pa.int64()))
    noncurrent = inventory_table(store, ["in/plain"], version_id=["v0"], is_latest=[False])
    m = columnar_inventory(
        store, fmt, [inventory_table(store, keys[:4]), pa.concat_tables([inventory_table(store, keys[4:]), marker, noncurrent])]
    )
    s, lines = run(store, job(m))
    assert (s["scanned"], s["succeeded"], s["failed"]) == (len(keys) + 2, len(keys), 1)
    # As with a CSV inventory: a noncurrent row acts on its version, which this unversioned bucket does not have.
    assert (s["failures"][0]["key"], s["failures"][0]["error"]) == ("in/plain", "NoSuchVersion")
    assert store.keys("dst-b") == sorted("out/" + k.removeprefix("in/") for k in keys)
    assert store.get_body("dst-b", "out/big") == b"B" * 5000
    assert store.calls["HeadObject"] == 2  # each data file's size, for its footer; no object needed one
    assert {line["key"]: line["size"] for line in lines if line["outcome"] == "succeeded"}["in/big"] == 5000  # the size came from the row


@pytest.mark.parametrize("fmt", ["Parquet", "ORC"])
def test_rows_after_any_position_resume_there_and_skip_whole_groups_unread(store: MemoryStore, fmt: str) -> None:
    keys = [f"in/k{i:04d}" for i in range(1000)]
    for k in keys:
        store.put_object("src-b", k, b"x")
    noise = random.Random(31)
    big = inventory_table(store, keys, e_tag=[noise.randbytes(256).hex() for _ in keys])  # groups of some size
    m = columnar_inventory(store, fmt, [inventory_table(store, keys[:7]), big], group_rows=100)
    reader = ManifestReader(store, job(m).source)
    every = list(reader.rows())
    assert [r.obj.key for r in every if r.obj] == keys[:7] + keys
    assert [r.pos for r in every] == sorted(r.pos for r in every) and len({r.pos for r in every}) == len(every)
    for cut in (1, 7, 8, 106, 107, 108, 500, 1006):
        assert list(reader.rows(after=every[cut - 1].pos)) == every[cut:]
    assert list(reader.rows(after=every[2].pos, upto=every[120].pos)) == every[3:121]
    # Resuming in the last group of the big file reads its footer (Parquet: its last 64 KiB) and that group, not the ones before.
    store.read_chunk = 512  # so a GET stopped early is counted near what it took
    counted = ByteCounting(store)
    tail = list(ManifestReader(counted, job(m).source).rows(after=every[-3].pos))
    assert tail == every[-2:]
    size = len(store.get_body("man-b", f"inv/src-b/cfg/data/part-1.{fmt.lower()}"))
    assert counted.read["inv/src-b/cfg/data/part-1." + fmt.lower()] < size / 2


class ByteCounting:
    """The store, counting the bytes each object's reads took (a ranged read stopped early counts what it took)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.read: dict[str, int] = {}

    def head_object(self, bucket: str, key: str, *, version_id: str = "") -> Any:
        return self.store.head_object(bucket, key, version_id=version_id)

    def read_object(self, bucket: str, key: str, start: int = 0, *, version_id: str = "") -> Iterator[bytes]:
        for chunk in self.store.read_object(bucket, key, start, version_id=version_id):
            self.read[key] = self.read.get(key, 0) + len(chunk)
            yield chunk

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


@pytest.mark.parametrize("names", [("bucket", "key", "version_id"), ("Bucket", "Key", "VersionId")])
def test_a_parquet_object_list_acts_on_its_keys_as_they_are_and_on_the_versions_it_names(
    store: MemoryStore, names: tuple[str, ...]
) -> None:
    keys = [*SPECIAL, "in/%41+%2B"]  # a list's keys are not URL-encoded: this one is itself, percent signs and plus
    store.put_object("src-b", keys[-1], b"literal")
    table = pa.table({names[0]: ["src-b"] * len(keys), names[1]: keys, names[2]: pa.array([None] * len(keys), pa.string())})
    store.put_object("man-b", "list.parquet", encode(table, "Parquet", 4))
    s, _ = run(store, job({"bucket": "man-b", "key": "list.parquet", "format": "parquet"}))
    assert (s["succeeded"], s["failed"]) == (len(keys), 0)
    assert store.get_body("dst-b", "out/%41+%2B") == b"literal"
    versioned = pa.table({names[0]: ["src-b"], names[1]: ["in/plain"], names[2]: ["v-nope"]})
    store.put_object("man-b", "v.parquet", encode(versioned, "Parquet"))
    s, _ = run(store, job({"bucket": "man-b", "key": "v.parquet", "format": "parquet"}))
    assert (s["failures"][0]["key"], s["failures"][0]["error"]) == ("in/plain", "NoSuchVersion")


def test_a_parquet_object_list_on_this_machines_disk_is_read_from_its_path(store: MemoryStore, tmp_path: Path) -> None:
    path = tmp_path / "list.parquet"
    path.write_bytes(encode(pa.table({"bucket": ["src-b"] * 2, "key": SPECIAL[:2]}), "Parquet", 1))
    reader = ManifestReader(store, job({"path": str(path), "format": "parquet"}).source)
    assert [r.obj.key for r in reader.rows() if r.obj] == SPECIAL[:2]


def test_bad_rows_of_a_parquet_file_fail_one_by_one_naming_their_row_group_and_row(store: MemoryStore) -> None:
    table = pa.table({"bucket": ["src-b", "other-b", "src-b"], "key": ["in/plain", "in/a b", ""]})
    store.put_object("man-b", "list.parquet", encode(table, "Parquet", 2))
    s, _ = run(store, job({"bucket": "man-b", "key": "list.parquet", "format": "parquet"}))
    assert (s["succeeded"], s["failed"]) == (1, 2)
    messages = sorted(f["message"] for f in s["failures"])
    assert "row group 0 row 2: row is for bucket 'other-b'" in messages[0]
    assert messages[1] == "s3://man-b/list.parquet row group 1 row 1: the key is empty; every row needs bucket,key"


def _error(store: MemoryStore, manifest: dict[str, Any]) -> str:
    with pytest.raises(ManifestError) as caught:
        list(ManifestReader(store, job(manifest).source).rows())
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("fmt", ["Parquet", "ORC"])
def test_a_file_that_is_not_what_manifest_json_says_stops_the_job_in_one_line_naming_it_and_the_fix(store: MemoryStore, fmt: str) -> None:
    m = columnar_inventory(store, fmt, [inventory_table(store, SPECIAL[:2])])
    store.put_object("man-b", f"inv/src-b/cfg/data/part-0.{fmt.lower()}", b"bucket,key\nsrc-b,in/plain\n" * 50)
    message = _error(store, m)
    assert message.startswith(f"s3://man-b/inv/src-b/cfg/data/part-0.{fmt.lower()}: not a readable {fmt} file (")
    assert message.endswith("replace it, or give the format it is in (fileFormat)")
    s, _ = run(store, job(m))
    assert s["status"] == "failed" and s["error"] == message


def test_a_parquet_file_without_bucket_and_key_columns_is_refused_naming_them(store: MemoryStore) -> None:
    store.put_object("man-b", "list.parquet", encode(pa.table({"path": ["in/plain"]}), "Parquet"))
    message = _error(store, {"bucket": "man-b", "key": "list.parquet", "format": "parquet"})
    assert message == "s3://man-b/list.parquet: its columns ['path'] include no bucket and key; name them bucket, key (and version_id)"


def test_an_inventory_file_format_s3bulk_does_not_read_is_refused_in_one_line(store: MemoryStore) -> None:
    m = columnar_inventory(store, "Parquet", [])
    doc = json.loads(store.get_body("man-b", MANIFEST_JSON))
    store.put_object("man-b", MANIFEST_JSON, json.dumps({**doc, "fileFormat": "Avro"}).encode())
    assert _error(store, m).endswith("inventory fileFormat 'Avro' is not one s3bulk reads; configure the report as CSV, ORC or Parquet")


def test_a_data_file_that_cannot_be_fetched_mid_read_stops_the_job_naming_it(store: MemoryStore) -> None:
    m = columnar_inventory(store, "Parquet", [inventory_table(store, SPECIAL)])

    class Failing(ByteCounting):
        def read_object(self, bucket: str, key: str, start: int = 0, *, version_id: str = "") -> Iterator[bytes]:
            if key.endswith(".parquet") and start < 4:  # the footer's reads are at the end; the first row group's at the start
                raise StoreError("AccessDenied", "Access Denied", 403)
            yield from super().read_object(bucket, key, start, version_id=version_id)

    with pytest.raises(ManifestError) as caught:
        list(ManifestReader(Failing(store), job(m).source).rows())
    assert str(caught.value) == "manifest s3://man-b/inv/src-b/cfg/data/part-0.parquet could not be read: AccessDenied: Access Denied"


def test_without_pyarrow_a_columnar_manifest_is_a_one_line_error_not_an_import_error(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.put_object("man-b", "list.parquet", encode(pa.table({"bucket": ["src-b"], "key": ["in/plain"]}), "Parquet"))
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # an import of it raises ImportError, as where it is not installed
    message = _error(store, {"bucket": "man-b", "key": "list.parquet", "format": "parquet"})
    assert message == (
        "s3://man-b/list.parquet: reading a Parquet manifest needs pyarrow, which this runtime does not carry; "
        "install s3bulk's requirements.txt (on the stack only the Lister function carries it)"
    )


def test_inventory_times_and_sizes_from_columnar_rows_drive_the_filters(store: MemoryStore) -> None:
    old, new = "in/plain", "in/a b"
    table = inventory_table(store, [old, new])
    stamps = pa.array([1_600_000_000_000_000_000, 1_900_000_000_000_000_000], pa.timestamp("ns"))  # ORC's kind: no zone, nanoseconds
    m = columnar_inventory(store, "ORC", [table.set_column(6, "last_modified_date", stamps)])
    doc = {"operation": "delete", "source": {"bucket": "src-b", "manifest": m, "modified_after": "2025-01-01T00:00:00Z", "min_size": 1}}
    s, _ = run(store, parse_job(json.dumps(doc)))
    assert (s["listed"], s["succeeded"]) == (1, 1)
    assert new not in store.keys("src-b") and old in store.keys("src-b")


def test_a_parquet_object_list_refuses_filters_that_need_sizes_naming_the_field() -> None:
    manifest = {"bucket": "man-b", "key": "l.parquet", "format": "parquet"}
    with pytest.raises(JobError) as caught:
        parse_job(json.dumps({"operation": "delete", "source": {"bucket": "src-b", "manifest": manifest, "min_size": 1}}))
    assert "min_size" in str(caught.value) and "Parquet object list" in str(caught.value)


def test_a_ranged_file_reads_on_through_the_open_get_and_opens_another_only_on_a_jump() -> None:
    body = bytes(range(256)) * 40_000  # ~10 MB
    opened: list[int] = []

    def opener(start: int) -> Iterator[bytes]:
        opened.append(start)
        for at in range(start, len(body), 64 * 1024):
            yield body[at : at + 64 * 1024]

    f = columnar.RangedFile(opener, len(body))  # type: ignore[arg-type]
    f.seek(-100, io.SEEK_END)
    assert f.read(100) == body[-100:]
    f.seek(1000)
    assert f.read(10) == body[1000:1010]
    assert f.read(5000) == body[1010:6010]
    f.seek(6010 + 500_000)  # a small gap: read through
    assert f.read(3) == body[506_010:506_013]
    f.seek(9_000_000)  # a jump: another GET
    assert f.read(200_000) == body[9_000_000:9_200_000]
    assert opened == [len(body) - 100, 1000, 9_000_000]


def test_the_worker_handler_never_imports_pyarrow_and_the_lister_only_when_it_reads_a_columnar_file() -> None:
    code = (
        "import json, sys; import functions.worker.handler, functions.lister.handler; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'pyarrow')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(out.stdout) == []
