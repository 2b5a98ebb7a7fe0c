"""`s3bulk run` through the quirk proxy (s3bulk/testing/quirkproxy.py) in front of moto server, on both request paths.

Each test seeds the server directly, runs the CLI through a proxy with one quirk on, and judges the result with plain
boto3 against the server behind the proxy, never through it: either the job did exactly its selection and exited 0,
or it exited non-zero having touched nothing outside it (every object is as it was, or as the job should have left
it). Exit 0 over a wrong result is the failure each test exists to catch (issue 50). Each test also asserts that the
proxy really applied its quirk, so a test cannot pass because the quirk never came into play.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from s3bulk.local.demo import body_md5s
from s3bulk.testing.quirkproxy import QuirkProxy, Quirks
from tests.integration.conftest import run_job_cli
from tests.integration.helpers import list_keys, md5, plain_client, put_all

pytestmark = pytest.mark.moto

State = dict[str, dict[str, str]]  # bucket -> key -> MD5 of its body


@pytest.fixture(params=["fast", "botocore"])
def path(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def direct(moto_endpoint: str) -> Any:
    """boto3 straight to the server: the ground truth."""
    return plain_client(moto_endpoint)


@contextmanager
def quirky(moto_endpoint: str, quirks: Quirks) -> Iterator[QuirkProxy]:
    with QuirkProxy(int(urlsplit(moto_endpoint).port or 0), quirks) as proxy:
        yield proxy


def new_bucket(client: Any, role: str) -> str:
    name = f"{role}-{uuid.uuid4().hex[:10]}"
    client.create_bucket(Bucket=name)
    return name


def state(client: Any, *buckets: str) -> State:
    return {b: body_md5s(client, b, list_keys(client, b, "")) for b in buckets}


def run(proxy: QuirkProxy, path: str, tmp_path: Path, doc: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    code, report, _, err = run_job_cli(proxy.endpoint_url, tmp_path, doc["operation"], doc, "--request-path", path, "--yes")
    return code, report, err


def failed_keys(report: Mapping[str, Any]) -> set[str]:
    return {f.get("key", "") for f in report.get("failures", ())}


def judge(
    code: int, report: Mapping[str, Any], err: str, before: State, after: State, expected: State, free: Mapping[str, set[str]] | None = None
) -> None:
    """Exit 0 with exactly `expected`, or non-zero with every object as it was or as expected. `free`: keys (by bucket)
    whose content a refused job may have left anything in (the destination of a copy the server got wrong and the job
    reported failed)."""
    assert "Traceback" not in err, err
    if code == 0:
        assert after == expected, (report, err)
        assert report.get("failed", 0) == 0, report
        return
    for bucket, now in after.items():
        for key in before[bucket].keys() | now.keys():
            if key in (free or {}).get(bucket, set()):
                continue
            assert now.get(key) in {before[bucket].get(key), expected[bucket].get(key)}, (bucket, key, code, err)


def test_min_size_delete_under_a_false_url_claim_deletes_only_the_big_key(
    moto_endpoint: str, direct: Any, path: str, tmp_path: Path
) -> None:
    bucket = new_bucket(direct, "claim")
    put_all(direct, bucket, {"fx/x%2Fy.bin": b"2" * (2 << 20), "fx/x/y.bin": b"1" * 1024, "fx/a b.bin": b"s" * 10})
    before = state(direct, bucket)
    expected = {bucket: {k: v for k, v in before[bucket].items() if k != "fx/x%2Fy.bin"}}
    doc = {"operation": "delete", "source": {"bucket": bucket, "prefix": "fx/", "min_size": 1 << 20}}
    with quirky(moto_endpoint, Quirks(raw_keys_claim_url=True)) as proxy:
        code, report, err = run(proxy, path, tmp_path, doc)
    judge(code, report, err, before, state(direct, bucket), expected)
    assert proxy.stats.applied["raw_keys_claim_url"] >= 1


# "dp/2024/01/01/x.log and four siblings" (issue 50, case 5). Two keys a page (page_keys) make the first page
# truncated, which is when a parallel listing cuts the rest into ranges; the level's delimiter answer then names no
# sub-prefix, since none holds an object directly.
DATED = [f"dp/{day}/x.log" for day in ("2024/01/01", "2024/01/02", "2024/02/01", "2025/01/01")] + ["dp/top.log"]


def seed_dated(direct: Any, bucket: str) -> None:
    put_all(direct, bucket, {k: k.encode() for k in DATED} | {"dq/2024/01/01/x.log": b"outside the prefix"})


def test_parallel_copy_under_omitted_common_prefixes_copies_every_key(moto_endpoint: str, direct: Any, path: str, tmp_path: Path) -> None:
    src, dst = new_bucket(direct, "src"), new_bucket(direct, "dst")
    seed_dated(direct, src)
    before = state(direct, src, dst)
    expected = {src: before[src], dst: {"out/" + k[3:]: before[src][k] for k in DATED}}
    doc = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "dp/"},
        "destination": {"bucket": dst, "prefix": "out/"},
        "options": {"list_workers": 4},
    }
    with quirky(moto_endpoint, Quirks(omit_prefixes=True, page_keys=2)) as proxy:
        code, report, err = run(proxy, path, tmp_path, doc)
    judge(code, report, err, before, state(direct, src, dst), expected)
    assert proxy.stats.applied["omit_prefixes"] >= 1


def test_parallel_delete_under_omitted_common_prefixes_deletes_every_key(
    moto_endpoint: str, direct: Any, path: str, tmp_path: Path
) -> None:
    bucket = new_bucket(direct, "del")
    seed_dated(direct, bucket)
    before = state(direct, bucket)
    expected = {bucket: {k: v for k, v in before[bucket].items() if k not in DATED}}
    doc = {"operation": "delete", "source": {"bucket": bucket, "prefix": "dp/"}, "options": {"list_workers": 4}}
    with quirky(moto_endpoint, Quirks(omit_prefixes=True, page_keys=2)) as proxy:
        code, report, err = run(proxy, path, tmp_path, doc)
    judge(code, report, err, before, state(direct, bucket), expected)
    assert proxy.stats.applied["omit_prefixes"] >= 1


def test_move_whose_copy_took_a_neighbours_bytes_keeps_the_source(moto_endpoint: str, direct: Any, path: str, tmp_path: Path) -> None:
    src, dst = new_bucket(direct, "src"), new_bucket(direct, "dst")
    put_all(direct, src, {"dc/a+b.bin": b"A" * 4096, "dc/a%2Bb.bin": b"N" * 4096, "dc/z.bin": b"z" * 100})
    before = state(direct, src, dst)
    expected: State = {src: {}, dst: {"out/" + k[3:]: v for k, v in before[src].items()}}
    doc = {"operation": "move", "source": {"bucket": src, "prefix": "dc/"}, "destination": {"bucket": dst, "prefix": "out/"}}
    with quirky(moto_endpoint, Quirks(copy_neighbour={"dc/a+b.bin": "dc/a%2Bb.bin"})) as proxy:
        code, report, err = run(proxy, path, tmp_path, doc)
    after = state(direct, src, dst)
    assert proxy.stats.applied["copy_neighbour"] >= 1
    assert code != 0, (report, err)  # the server copied the wrong bytes: no run can end right
    assert "dc/a+b.bin" in failed_keys(report), report
    judge(code, report, err, before, after, expected, free={dst: {"out/a+b.bin"}})
    for key in set(before[src]) - set(after[src]):  # a source is gone only where its bytes arrived
        assert after[dst].get("out/" + key[3:]) == before[src][key], (key, err)
    assert after[src].get("dc/a+b.bin") == md5(b"A" * 4096)


def test_sync_without_listing_etags_copies_a_changed_object_of_the_same_size(
    moto_endpoint: str, direct: Any, path: str, tmp_path: Path
) -> None:
    src, dst = new_bucket(direct, "src"), new_bucket(direct, "dst")
    put_all(direct, src, {"in/a": b"a" * 50, "in/b": b"new bytes!", "in/c": b"c" * 70})
    # the destination is written after the source changed: by modification time alone it would look up to date
    put_all(direct, dst, {"out/a": b"a" * 50, "out/b": b"old bytes!", "out/c": b"c" * 70})
    before = state(direct, src, dst)
    expected = {src: before[src], dst: {"out/" + k[3:]: v for k, v in before[src].items()}}
    doc = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "in/"},
        "destination": {"bucket": dst, "prefix": "out/"},
        "options": {"if_exists": "skip-unchanged"},
    }
    with quirky(moto_endpoint, Quirks(no_etags=True)) as proxy:
        code, report, err = run(proxy, path, tmp_path, doc)
    judge(code, report, err, before, state(direct, src, dst), expected)
    assert proxy.stats.applied["no_etags"] >= 2
    if code == 0:
        assert (report["succeeded"], report["skipped"]) == (1, 2), report  # the HEADs decided a and c


def namespaced_copy(moto_endpoint: str, direct: Any, path: str, tmp_path: Path, if_exists: str) -> None:
    src, dst = new_bucket(direct, "src"), new_bucket(direct, "dst")
    put_all(direct, src, {f"n/{i:02d} +%.bin": f"body {i}".encode() for i in range(12)})
    put_all(direct, dst, {"out/00 +%.bin": b"kept: already there"})
    before = state(direct, src, dst)
    copied = {"out/" + k[2:]: v for k, v in before[src].items()}
    if if_exists == "skip":
        copied |= before[dst]
    expected = {src: before[src], dst: copied}
    doc = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "n/"},
        "destination": {"bucket": dst, "prefix": "out/"},
        "options": {"if_exists": if_exists},
    }
    with quirky(moto_endpoint, Quirks(namespace=True)) as proxy:
        code, report, err = run(proxy, path, tmp_path, doc)
    judge(code, report, err, before, state(direct, src, dst), expected)
    assert proxy.stats.applied["namespace"] >= 1


def test_copy_from_a_server_in_another_xml_namespace_copies_every_key(moto_endpoint: str, direct: Any, path: str, tmp_path: Path) -> None:
    namespaced_copy(moto_endpoint, direct, path, tmp_path, "overwrite")


def test_copy_with_skip_on_a_server_in_another_xml_namespace_keeps_what_is_there(
    moto_endpoint: str, direct: Any, path: str, tmp_path: Path
) -> None:
    namespaced_copy(moto_endpoint, direct, path, tmp_path, "skip")


def test_delete_on_a_server_in_another_xml_namespace_deletes_the_selection(
    moto_endpoint: str, direct: Any, path: str, tmp_path: Path
) -> None:
    bucket = new_bucket(direct, "ns")
    put_all(direct, bucket, {f"n/{i:02d}": b"x" * i for i in range(12)} | {"o/keep": b"outside"})
    before = state(direct, bucket)
    expected = {bucket: {k: v for k, v in before[bucket].items() if not k.startswith("n/")}}
    with quirky(moto_endpoint, Quirks(namespace=True)) as proxy:
        code, report, err = run(proxy, path, tmp_path, {"operation": "delete", "source": {"bucket": bucket, "prefix": "n/"}})
    judge(code, report, err, before, state(direct, bucket), expected)
    assert proxy.stats.applied["namespace"] >= 1


def test_sync_over_unsorted_pages_deletes_no_key_the_source_holds(moto_endpoint: str, direct: Any, path: str, tmp_path: Path) -> None:
    src, dst = new_bucket(direct, "src"), new_bucket(direct, "dst")
    names = [f"{i:02d}.bin" for i in range(30)]
    put_all(direct, src, {"in/" + n: n.encode() * 3 for n in names})
    put_all(direct, dst, {"out/" + n: n.encode() * 3 for n in names[::3]} | {"out/zz-extra": b"extraneous", "out/05a": b"extra"})
    before = state(direct, src, dst)
    expected = {src: before[src], dst: {"out/" + k[3:]: v for k, v in before[src].items()}}
    doc = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "in/"},
        "destination": {"bucket": dst, "prefix": "out/"},
        "options": {"if_exists": "skip-unchanged", "delete_extraneous": True},
    }
    with quirky(moto_endpoint, Quirks(unsorted=True, seed=5)) as proxy:
        code, report, err = run(proxy, path, tmp_path, doc)
    judge(code, report, err, before, state(direct, src, dst), expected)
    assert proxy.stats.applied["unsorted"] >= 1


def test_tag_where_tagging_is_not_implemented_fails_saying_so_and_changes_nothing(
    moto_endpoint: str, direct: Any, path: str, tmp_path: Path
) -> None:
    bucket = new_bucket(direct, "tag")
    put_all(direct, bucket, {f"t/{i}": b"t" for i in range(3)})
    doc = {"operation": "tag", "source": {"bucket": bucket, "prefix": "t/"}, "tagging": {"mode": "replace", "tags": {"k": "v"}}}
    quirks = Quirks(not_implemented=frozenset({"GetObjectTagging", "PutObjectTagging"}))
    with quirky(moto_endpoint, quirks) as proxy:
        code, report, err = run(proxy, path, tmp_path, doc)
    assert proxy.stats.applied["not_implemented"] >= 1
    assert code != 0 and "Traceback" not in err, (report, err)
    assert all(direct.get_object_tagging(Bucket=bucket, Key=f"t/{i}")["TagSet"] == [] for i in range(3))
    said = str(report.get("failures", "")) + str(report.get("error", "")) + err
    assert "NotImplemented" in said and "rerun later" not in said, said  # permanent, and named as such
    assert proxy.stats.requests["PutObjectTagging"] + proxy.stats.requests["GetObjectTagging"] <= 6, proxy.stats.requests  # no retries


def test_delete_by_tag_where_tags_cannot_be_read_deletes_nothing(moto_endpoint: str, direct: Any, path: str, tmp_path: Path) -> None:
    bucket = new_bucket(direct, "tagdel")
    for i in range(4):
        direct.put_object(Bucket=bucket, Key=f"d/{i}", Body=b"d", Tagging="team=data" if i % 2 else "team=other")
    before = state(direct, bucket)
    expected = {bucket: {k: v for k, v in before[bucket].items() if int(k[2:]) % 2 == 0}}
    doc = {"operation": "delete", "source": {"bucket": bucket, "prefix": "d/", "tags": {"team": "data"}}}
    with quirky(moto_endpoint, Quirks(not_implemented=frozenset({"GetObjectTagging"}))) as proxy:
        code, report, err = run(proxy, path, tmp_path, doc)
    assert proxy.stats.applied["not_implemented"] >= 1
    assert code != 0, (report, err)  # no tag could be read: no selection could be made
    judge(code, report, err, before, state(direct, bucket), expected)
