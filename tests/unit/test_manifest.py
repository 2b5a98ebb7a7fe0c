"""Manifest input (CSV and S3 Inventory; Parquet and ORC: test_columnar_manifest.py) on the fake store: rows in, the same engine out, bad rows reported by line."""

from __future__ import annotations

import gzip
import io
import itertools
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote_plus

import pytest

from s3bulk.job import JobError, parse_job
from s3bulk.local.engine import Engine
from s3bulk.local.ledger import BatchEntry, LocalLedger
from s3bulk.local.plan import make_plan
from s3bulk.source.manifest import ManifestError, ManifestReader
from s3bulk.testing.memstore import MemoryStore

# Keys a CSV can only carry URL-encoded: separators, quotes, spaces, pluses, percent signs, newlines, non-ASCII.
SPECIAL = ["in/plain", "in/a b", "in/a+b", "in/100%", "in/comma,key", 'in/"quoted"', "in/line\nbreak", "in/ünï/çødé", "in/日本"]


def job(manifest: dict[str, Any], operation: str = "copy", **fields: Any) -> Any:
    doc: dict[str, Any] = {"operation": operation, "source": {"bucket": "src-b", "manifest": manifest}, **fields}
    if operation in {"copy", "move", "verify"}:
        doc.setdefault("destination", {"bucket": "dst-b", "prefix": "out/"})
    doc["source"].setdefault("prefix", "in/")
    return parse_job(json.dumps(doc))


def csv_rows(keys: list[str], bucket: str = "src-b") -> bytes:
    return "".join(f"{bucket},{quote_plus(k, safe='/')}\n" for k in keys).encode()


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore(page_size=25)
    for b in ("src-b", "dst-b", "man-b"):
        s.create_bucket(b)
    for i, key in enumerate(SPECIAL):
        s.put_object("src-b", key, f"body {i}".encode())
    return s


def run(store: MemoryStore, j: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    out = io.StringIO()
    report = Engine(j, store, concurrency=4, key_log=out).run()
    summary = {**report.summary(), "failures": list(report.tally.failures())}
    return summary, [json.loads(line) for line in out.getvalue().splitlines()]


def test_csv_manifest_copies_url_encoded_special_keys_exactly(store: MemoryStore) -> None:
    store.put_object("man-b", "m.csv", csv_rows(SPECIAL))
    s, lines = run(store, job({"bucket": "man-b", "key": "m.csv"}))
    assert (s["succeeded"], s["failed"]) == (len(SPECIAL), 0)
    assert store.keys("dst-b") == sorted("out/" + k.removeprefix("in/") for k in SPECIAL)
    for key in SPECIAL:
        assert store.get_body("dst-b", "out/" + key.removeprefix("in/")) == store.get_body("src-b", key)
    assert store.calls["ListObjectsV2"] == 1  # the destination probe alone: the manifest replaces the source listing
    assert store.calls["HeadObject"] == len(SPECIAL)  # a CSV row has no size: one HEAD each decides the copy path
    assert {line["size"] for line in lines} == {len(b"body 0")}


def test_gzip_csv_manifest_is_read_by_its_magic_bytes(store: MemoryStore) -> None:
    store.put_object("man-b", "m.csv", gzip.compress(csv_rows(SPECIAL[:3])))
    s, _ = run(store, job({"bucket": "man-b", "key": "m.csv"}))
    assert (s["succeeded"], s["failed"]) == (3, 0)


def test_prefix_still_selects_manifest_rows(store: MemoryStore) -> None:
    store.put_object("src-b", "other/x", b"x")
    store.put_object("man-b", "m.csv", csv_rows(["other/x", "in/plain"]))
    j = parse_job(
        json.dumps(
            {
                "operation": "copy",
                "source": {"bucket": "src-b", "prefix": "in/", "manifest": {"bucket": "man-b", "key": "m.csv"}},
                "destination": {"bucket": "dst-b"},
            }
        )
    )
    s, _ = run(store, j)
    assert (s["scanned"], s["listed"], s["succeeded"]) == (2, 1, 1)
    assert store.keys("dst-b") == ["plain"]


def test_malformed_rows_fail_one_by_one_with_their_line_numbers(store: MemoryStore) -> None:
    body = (
        "src-b,in/plain\n"  # 1 good
        "src-b\n"  # 2 one field
        "src-b,in/a+b,v1,extra\n"  # 3 four fields
        "src-b,%FF%FE\n"  # 4 not UTF-8 once decoded
        "src-b,\n"  # 5 empty key
        "other-b,in/a+b\n"  # 6 another bucket
        "src-b,in/a+b,3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY\n"  # 7 a version id
        "\n"  # 8 blank: not a row
        "src-b,in/100%25\n"  # 9 good
        "src-b,in/missing\n"  # 10 well formed, but no such object
    )
    store.put_object("man-b", "m.csv", body.encode())
    s, lines = run(store, job({"bucket": "man-b", "key": "m.csv"}))
    assert (s["succeeded"], s["failed"]) == (2, 7)
    assert s["status"] == "failed"
    failures = {f["message"].split(": ")[0].rsplit(" ", 1)[-1]: f for f in s["failures"] if "line" in f["message"]}
    assert sorted(int(n) for n in failures) == [2, 3, 4, 5, 6]
    assert failures["6"]["error"] == "ManifestBucketMismatch" and failures["6"]["key"] == "in/a b"
    # A row naming a version copies that version: this bucket has no versions, so S3 (and the fake) answer NoSuchVersion.
    [named] = [f for f in s["failures"] if f["error"] == "NoSuchVersion"]
    assert named["key"] == "in/a b" and named["message"].startswith("version 3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY: ")
    assert failures["2"]["error"] == "InvalidManifestRow" and failures["2"]["key"] == "s3://man-b/m.csv#2"
    assert [f["error"] for f in s["failures"] if f["key"] == "in/missing"] == ["NoSuchKey"]
    assert sorted(store.keys("dst-b")) == ["out/100%", "out/plain"]
    assert sum(1 for line in lines if line["outcome"] == "failed") == 7


def inventory(
    store: MemoryStore, parts: list[list[list[str]]], schema: str, fmt: str = "CSV", sizes: list[int] | None = None
) -> dict[str, Any]:
    files = []
    for n, rows in enumerate(parts):
        text = "".join(",".join(f'"{v}"' for v in row) + "\n" for row in rows)
        key = f"inv/src-b/cfg/data/part-{n}.csv.gz"
        store.put_object("man-b", key, gzip.compress(text.encode()))
        files.append({"key": key, "size": sizes[n] if sizes else 1, "MD5checksum": "unchecked"})
    doc = {
        "sourceBucket": "src-b",
        "destinationBucket": "arn:aws:s3:::man-b",
        "version": "2016-11-30",
        "fileFormat": fmt,
        "fileSchema": schema,
        "files": files,
    }
    store.put_object("man-b", "inv/src-b/cfg/2026-11-20T01-00Z/manifest.json", json.dumps(doc).encode())
    return {"bucket": "man-b", "key": "inv/src-b/cfg/2026-11-20T01-00Z/manifest.json", "format": "inventory"}


SCHEMA = "Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, ETag, StorageClass"


def inv_row(store: MemoryStore, key: str, *, latest: str = "true", marker: str = "false", version: str = "v1") -> list[str]:
    o = store.get("src-b", key)
    stamp = o.last_modified.isoformat().replace("+00:00", "Z")
    return ["src-b", quote_plus(key, safe="/"), version, latest, marker, str(o.size), stamp, o.etag.strip('"'), o.storage_class]


def test_inventory_manifest_with_gzip_parts_needs_no_head_and_skips_delete_markers(store: MemoryStore) -> None:
    store.put_object("src-b", "in/big", b"B" * 5000)
    rows = [inv_row(store, k) for k in [*SPECIAL, "in/big"]]
    marker = ["src-b", "in/gone", "v9", "true", "true", "", "", "", ""]
    noncurrent = inv_row(store, "in/plain", latest="false", version="v0")
    m = inventory(store, [rows[:4], [*rows[4:], marker, noncurrent]], SCHEMA)
    s, _ = run(store, job(m))
    assert (s["scanned"], s["succeeded"], s["failed"]) == (len(SPECIAL) + 3, len(SPECIAL) + 1, 1)
    # A noncurrent row acts on its version (v0), which this unversioned bucket does not have.
    assert (s["failures"][0]["key"], s["failures"][0]["error"]) == ("in/plain", "NoSuchVersion")
    assert s["failures"][0]["message"].startswith("version v0: ")
    assert "HeadObject" not in store.calls and store.calls["ListObjectsV2"] == 1
    assert store.calls["GetObject"] == 3  # manifest.json and two data files, each streamed once
    assert store.get_body("dst-b", "out/big") == b"B" * 5000


def test_inventory_rows_honour_size_filters(store: MemoryStore) -> None:
    store.put_object("src-b", "in/big", b"B" * 5000)
    m = inventory(store, [[inv_row(store, k) for k in ["in/plain", "in/big"]]], SCHEMA)
    j = parse_job(
        json.dumps(
            {"operation": "delete", "source": {"bucket": "src-b", "manifest": m, "min_size": 1000}},
        )
    )
    s, _ = run(store, j)
    assert (s["listed"], s["succeeded"]) == (1, 1)
    assert "in/big" not in store.keys("src-b") and "in/plain" in store.keys("src-b")


def test_inventory_without_size_column_reports_rows_a_size_filter_cannot_judge(store: MemoryStore) -> None:
    m = inventory(store, [[["src-b", "in/plain"]]], "Bucket, Key")
    j = parse_job(json.dumps({"operation": "delete", "source": {"bucket": "src-b", "manifest": m, "max_size": 10}}))
    s, _ = run(store, j)
    assert s["failed"] == 1 and "Size" in s["failures"][0]["message"]
    assert "in/plain" in store.keys("src-b")


def test_bad_inventory_size_is_a_row_failure_not_a_crash(store: MemoryStore) -> None:
    good = inv_row(store, "in/plain")
    bad = [*inv_row(store, "in/a b")[:5], "12x", *inv_row(store, "in/a b")[6:]]
    m = inventory(store, [[good, bad]], SCHEMA)
    s, _ = run(store, job(m))
    assert (s["succeeded"], s["failed"]) == (1, 1)
    assert "line 2" in s["failures"][0]["message"] and "Size" in s["failures"][0]["message"]


def test_an_inventory_format_s3bulk_does_not_read_fails_the_job_in_one_line(store: MemoryStore) -> None:
    m = inventory(store, [], SCHEMA, fmt="Avro")
    s, _ = run(store, job(m))
    assert s["status"] == "failed"
    assert "'Avro'" in s["error"] and "CSV, ORC or Parquet" in s["error"] and "\n" not in s["error"]


def test_missing_manifest_fails_the_job_with_its_location(store: MemoryStore) -> None:
    s, _ = run(store, job({"bucket": "man-b", "key": "nope.csv"}))
    assert s["status"] == "failed" and "s3://man-b/nope.csv" in s["error"] and "NoSuchKey" in s["error"]
    assert store.keys("dst-b") == []


def test_rows_after_a_position_resume_across_data_files(store: MemoryStore) -> None:
    rows = [inv_row(store, k) for k in SPECIAL]
    m = inventory(store, [rows[:4], rows[4:]], SCHEMA)
    reader = ManifestReader(store, job(m).source)
    every = list(reader.rows())
    assert [r.obj.key for r in every if r.obj] == SPECIAL
    assert [r.pos for r in every] == sorted(r.pos for r in every)
    for cut in (1, 4, 6):
        assert [r.obj.key for r in reader.rows(after=every[cut - 1].pos) if r.obj] == SPECIAL[cut:]


def test_skip_unchanged_with_a_manifest_asks_the_destination_and_a_rerun_copies_nothing(store: MemoryStore) -> None:
    store.put_object("man-b", "m.csv", csv_rows(SPECIAL))
    j = job({"bucket": "man-b", "key": "m.csv"}, options={"if_exists": "skip-unchanged"})
    assert run(store, j)[0]["succeeded"] == len(SPECIAL)
    store.put_object("src-b", "in/plain", b"changed")
    copies = store.calls["CopyObject"]
    s, lines = run(store, j)
    assert (s["succeeded"], s["skipped"]) == (1, len(SPECIAL) - 1)
    assert store.calls["CopyObject"] == copies + 1
    assert store.get_body("dst-b", "out/plain") == b"changed"
    assert {line["key"] for line in lines if line["outcome"] == "succeeded"} == {"in/plain"}


def test_move_with_a_manifest_and_skip_keeps_sources_it_did_not_copy(store: MemoryStore) -> None:
    store.put_object("dst-b", "out/plain", b"already there")
    store.put_object("man-b", "m.csv", csv_rows(["in/plain", "in/a b"]))
    s, _ = run(store, job({"bucket": "man-b", "key": "m.csv"}, "move", options={"if_exists": "skip"}))
    assert (s["succeeded"], s["skipped"]) == (1, 1)
    assert "in/plain" in store.keys("src-b") and "in/a b" not in store.keys("src-b")
    assert store.get_body("dst-b", "out/plain") == b"already there"


def test_delete_from_a_csv_manifest_needs_no_head_and_logs_unknown_sizes_as_null(store: MemoryStore) -> None:
    store.put_object("man-b", "m.csv", csv_rows(SPECIAL[:4]))
    s, lines = run(store, job({"bucket": "man-b", "key": "m.csv"}, "delete"))
    assert (s["succeeded"], s["bytes"]) == (4, 0)
    assert "HeadObject" not in store.calls
    assert [k for k in SPECIAL if k in store.keys("src-b")] == SPECIAL[4:]
    assert {line["size"] for line in lines} == {None}


def test_plan_of_a_csv_manifest_counts_the_run_requests(store: MemoryStore) -> None:
    store.put_object("man-b", "m.csv", csv_rows([*SPECIAL, "in/missing"]) + b"src-b\n")
    j = job({"bucket": "man-b", "key": "m.csv"})
    plan = make_plan(j, store)
    assert (plan.objects, plan.invalid_rows) == (len(SPECIAL) + 1, 1)
    assert plan.by_size == {"unknown (CSV manifest)": [len(SPECIAL) + 1, 0]}
    assert plan.requests == {"ListObjectsV2": 1, "GetObject": 1, "HeadObject": len(SPECIAL) + 1, "CopyObject": len(SPECIAL) + 1}
    assert store.keys("dst-b") == []


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"source": {"bucket": "src-b", "manifest": {"bucket": "man-b", "key": "m.csv"}, "min_size": 5}}, "job.source.min_size"),
        (
            {
                "source": {"bucket": "src-b", "manifest": {"bucket": "man-b", "key": "m.csv"}},
                "options": {"delete_extraneous": True},
            },
            "job.options.delete_extraneous",
        ),
        ({"source": {"bucket": "src-b", "manifest": {"bucket": "man-b", "key": ""}}}, "job.source.manifest.key"),
        ({"source": {"bucket": "src-b", "manifest": {"bucket": "man-b", "key": "k", "format": "avro"}}}, "job.source.manifest.format"),
    ],
)
def test_manifest_job_mistakes_name_the_field(fields: dict[str, Any], field: str) -> None:
    doc = {"operation": "copy", "destination": {"bucket": "dst-b"}, **fields}
    with pytest.raises(JobError) as err:
        parse_job(json.dumps(doc))
    assert str(err.value).startswith(field + ":")
    assert "\n" not in str(err.value)


def test_in_place_operations_take_a_manifest_instead_of_a_prefix(store: MemoryStore) -> None:
    store.put_object("man-b", "m.csv", csv_rows(SPECIAL[:2]))
    j = job({"bucket": "man-b", "key": "m.csv"}, "tag", tagging={"tags": {"t": "1"}})
    s, _ = run(store, j)
    assert s["succeeded"] == 2
    assert store.get("src-b", SPECIAL[0]).tags == {"t": "1"} and store.get("src-b", SPECIAL[3]).tags == {}


def test_a_resumed_manifest_job_does_only_the_rows_no_earlier_batch_finished(store: MemoryStore, tmp_path: Path) -> None:
    store.put_object("man-b", "m.csv", csv_rows(SPECIAL))
    j = job({"bucket": "man-b", "key": "m.csv"})
    pos = [r.pos for r in ManifestReader(store, j.source).rows()]
    ledger = LocalLedger.create(tmp_path, "resume-me", j)
    ledger.finish_batch(BatchEntry(None, pos[2], 3, 3, 30, 3, 0, 0, 30, 0), [])  # rows 1-3 finished
    ledger.finish_batch(BatchEntry(pos[4], pos[6], 2, 2, 20, 2, 0, 0, 20, 0), [])  # rows 6-7 finished out of order
    report = Engine(j, store, concurrency=2, ledger=ledger).run()
    ledger.close()
    done = {k.removeprefix("out/") for k in store.keys("dst-b")}
    assert done == {SPECIAL[i].removeprefix("in/") for i in (3, 4, 7, 8)}
    assert (report.tally.succeeded, report.tally.failed) == (len(SPECIAL), 0)  # the ledger's totals: each row once


@pytest.mark.parametrize("target", [1, 2, 3, 4, 5, 8])
def test_inventory_shards_by_data_file_cover_every_row_once_in_order(store: MemoryStore, target: int) -> None:
    rows = [inv_row(store, k) for k in SPECIAL]
    parts = [rows[:1], rows[1:3], [], rows[3:7], rows[7:]]  # five data files, one of them empty
    m = inventory(store, parts, SCHEMA, sizes=[10, 200, 5, 400, 20])
    reader = ManifestReader(store, job(m).source)
    shards = reader.plan_ranges(target)
    assert len(shards) == min(target, len(parts))
    assert shards[0][0] == "" and shards[-1][1] is None
    assert all(a[1] == b[0] for a, b in itertools.pairwise(shards))  # each starts where the last ended
    union = [r for after, upto in shards for r in reader.rows(after=after or None, upto=upto)]
    assert [r.pos for r in union] == [r.pos for r in reader.rows()]
    # A shard resumes from its cursor without leaving it.
    for after, upto in shards:
        mine = list(reader.rows(after=after or None, upto=upto))
        if len(mine) > 1:
            assert list(reader.rows(after=mine[0].pos, upto=upto)) == mine[1:]


def test_inventory_shards_balance_by_the_sizes_manifest_json_lists(store: MemoryStore) -> None:
    rows = [inv_row(store, k) for k in SPECIAL]
    m = inventory(store, [[r] for r in rows[:6]], SCHEMA, sizes=[100, 100, 100, 100, 100, 500])
    assert [s[0] for s in ManifestReader(store, job(m).source).plan_ranges(2)] == ["", "000005:000000000000"]


def test_a_csv_manifest_is_one_shard(store: MemoryStore) -> None:
    store.put_object("man-b", "list.csv", csv_rows(SPECIAL))
    reader = ManifestReader(store, job({"bucket": "man-b", "key": "list.csv", "format": "csv"}).source)
    assert reader.plan_ranges(16) == [("", None)]


def test_a_shard_bound_inside_a_file_keeps_the_rows_up_to_it(store: MemoryStore) -> None:
    rows = [inv_row(store, k) for k in SPECIAL]
    m = inventory(store, [rows[:4], rows[4:]], SCHEMA)
    reader = ManifestReader(store, job(m).source)
    every = list(reader.rows())
    assert list(reader.rows(upto=every[5].pos)) == every[:6]
    assert list(reader.rows(after=every[1].pos, upto=every[2].pos)) == every[2:3]


def _csv_reader(store: MemoryStore, body: bytes) -> ManifestReader:
    store.put_object("man-b", "big.csv", body)
    return ManifestReader(store, job({"bucket": "man-b", "key": "big.csv", "format": "csv"}).source)


@pytest.mark.parametrize("target", [2, 3, 7, 16])
@pytest.mark.parametrize("chunk", [7, 64, 1 << 20])
def test_csv_byte_range_shards_cover_every_row_once_in_order(store: MemoryStore, target: int, chunk: int) -> None:
    """Cuts fall mid-line, on line starts and on CRLF; lines straddle GetObject chunks; a blank line and a bad row sit between."""
    store.read_chunk = chunk
    lines = [f"src-b,{quote_plus(k, safe='/')}" for k in SPECIAL]
    body = ("\r\n".join(lines[:4]) + "\r\n\n" + "\n".join(lines[4:]) + "\nsrc-b\n" + "src-b,in/no-newline-at-end").encode()
    reader = _csv_reader(store, body)
    shards = reader.plan_ranges(target, min_csv_bytes=16)
    assert 2 <= len(shards) <= target and shards[0][0] == "" and shards[-1][1] is None
    union = [r for after, upto in shards for r in reader.rows(after=after or None, upto=upto)]
    assert [r.obj.key if r.obj else r.code for r in union] == [*SPECIAL, "InvalidManifestRow", "in/no-newline-at-end"]
    assert [r.pos for r in union] == sorted(r.pos for r in union)
    [bad] = [r for r in union if r.failed]
    at = body.index(b"\nsrc-b\n") + 1
    assert bad.problem.startswith(f"s3://man-b/big.csv byte {at}: ") and bad.ref == f"s3://man-b/big.csv#byte={at}"
    for after, upto in shards:  # each shard resumes from any of its rows' positions without leaving the shard
        mine = list(reader.rows(after=after or None, upto=upto))
        for k in range(len(mine)):
            assert list(reader.rows(after=mine[k].pos, upto=upto)) == mine[k + 1 :]


def test_a_small_or_gzip_csv_is_one_shard(store: MemoryStore) -> None:
    body = csv_rows(SPECIAL)
    assert _csv_reader(store, body).plan_ranges(16, min_csv_bytes=len(body)) == [("", None)]
    assert _csv_reader(store, gzip.compress(body)).plan_ranges(16, min_csv_bytes=8) == [("", None)]


def test_a_jsonl_manifest_copies_every_key_as_it_is_in_either_casing_and_names_a_bad_line(store: MemoryStore) -> None:
    lines = [
        json.dumps({"bucket": "src-b", "key": k}) if i % 2 else json.dumps({"Bucket": "src-b", "Key": k}) for i, k in enumerate(SPECIAL)
    ]
    lines.insert(3, "not json")
    lines.insert(5, json.dumps({"bucket": "src-b"}))
    store.put_object("man-b", "m.jsonl", gzip.compress(("\n".join(lines) + "\n\n").encode()))
    s, _ = run(store, job({"bucket": "man-b", "key": "m.jsonl", "format": "jsonl"}))
    assert (s["succeeded"], s["failed"]) == (len(SPECIAL), 2)
    assert store.keys("dst-b") == sorted("out/" + k.removeprefix("in/") for k in SPECIAL)
    assert sorted(f["message"].split(": ", 1)[1][:24] for f in s["failures"]) == sorted(
        ["an entry needs string bu", "not JSON (Expecting valu"]
    )


def test_a_csv_with_a_header_in_any_column_order_and_a_tab_delimiter_reads_by_name(store: MemoryStore) -> None:
    rows = "key\tsize\tbucket\n" + "".join(f"{quote_plus(k, safe='/')}\t1\tsrc-b\n" for k in SPECIAL)
    store.put_object("man-b", "m.tsv", rows.encode())
    s, _ = run(store, job({"bucket": "man-b", "key": "m.tsv", "header": True, "delimiter": "\t"}))
    assert (s["succeeded"], s["failed"], s["scanned"]) == (len(SPECIAL), 0, len(SPECIAL))  # the header is no object
    # Cut into byte ranges, the header is still no object and every row is read once.
    reader = ManifestReader(store, job({"bucket": "man-b", "key": "m.tsv", "header": True, "delimiter": "\t"}).source)
    ranges = [(f"b{o}" if o else "", f"b{o + 40}" if o + 40 < len(rows) else None) for o in range(0, len(rows), 40)]
    got = [r.obj.key for a, b in ranges for r in reader.rows(a or None, b) if r.obj is not None]
    assert sorted(got) == sorted(SPECIAL)


@pytest.mark.parametrize(
    ("manifest", "field"),
    [
        ({"bucket": "man-b", "key": "m", "format": "jsonl", "header": True}, "header"),
        ({"bucket": "man-b", "key": "m", "format": "inventory", "delimiter": ";"}, "delimiter"),
        ({"bucket": "man-b", "key": "m", "delimiter": '"'}, "delimiter"),
        ({"bucket": "man-b", "key": "m", "delimiter": ";;"}, "delimiter"),
    ],
)
def test_csv_settings_on_another_format_or_an_unusable_delimiter_are_refused(manifest: dict[str, Any], field: str) -> None:
    with pytest.raises(JobError, match=rf"job\.source\.manifest\.{field}"):
        job(manifest)


def test_a_header_without_bucket_and_key_columns_stops_the_job_naming_it(store: MemoryStore) -> None:
    store.put_object("man-b", "m.csv", b"name,size\nin/plain,1\n")
    reader = ManifestReader(store, job({"bucket": "man-b", "key": "m.csv", "header": True}).source)
    with pytest.raises(ManifestError, match="names no bucket and key columns"):
        list(reader.rows())
