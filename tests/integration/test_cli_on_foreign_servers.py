"""`s3bulk run` against S3 servers nobody here wrote (versitygw 1.8.0, moto 5.2.5 unpatched), on both request paths.

Key names are the point: `+`, spaces, `%XX`, and pairs that URL-decode to each other (`a+b`/`a b`, `%41`/`A`,
`sub+dir`/`sub dir`/`sub%20dir`). A client that decodes a raw key, or encodes one twice, acts on the other key of
the pair: every test checks, with plain boto3 listing, HEAD and GET, that exactly the intended keys changed.
versitygw ignores encoding-type=url and lists keys raw (test_server_quirks.py::
test_versitygw_ignores_encoding_type_url_and_lists_raw_keys), which the fast path must cope with.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import run_job_cli
from tests.integration.helpers import md5, plain_client, put_all

SERVERS = ["versitygw", "moto_plain"]
PATHS = ["fast", "botocore"]

# key (relative to the prefix) -> size. Lookalikes get sizes on either side of MIN_SIZE. None of these keys hits a
# versitygw limit (test_server_quirks.py: no `//`, no trailing `/`, no key that is also a folder, no long segment).
ODD: dict[str, int] = {
    "a+b.bin": 300,
    "a b.bin": 10,
    "a%2Bb.bin": 200,
    "%41.bin": 250,
    "A.bin": 20,
    "x~y=z.bin": 400,
    "ü/ñ.bin": 30,
    "sub+dir/k1": 500,
    "sub%20dir/k2": 40,
    "sub dir/k3": 600,
    "sub%2Bdir/k4": 50,
}
MIN_SIZE = 100


@pytest.fixture(params=[(s, p) for s in SERVERS for p in PATHS], ids=lambda sp: f"{sp[0]}-{sp[1]}")
def target(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(endpoint, request path)."""
    server, path = request.param
    return str(request.getfixturevalue(server)), str(path)


@pytest.fixture
def client(target: tuple[str, str]) -> Any:
    return plain_client(target[0])


def new_bucket(client: Any, role: str) -> str:
    name = f"{role}-{uuid.uuid4().hex[:10]}"
    client.create_bucket(Bucket=name)
    return name


def body(key: str, size: int) -> bytes:
    seed = key.encode()
    return (seed * (size // max(len(seed), 1) + 1))[:size]


def listed(client: Any, bucket: str, prefix: str = "") -> dict[str, dict[str, Any]]:
    """key -> listing entry, every page (plain boto3: it decodes only what the server says it encoded)."""
    out: dict[str, dict[str, Any]] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        out.update({o["Key"]: o for o in page.get("Contents", ())})
    return out


def bodies(client: Any, bucket: str, keys: Iterable[str]) -> dict[str, str]:
    def get(key: str) -> tuple[str, str]:
        return key, md5(client.get_object(Bucket=bucket, Key=key)["Body"].read())

    with ThreadPoolExecutor(16) as pool:
        return dict(pool.map(get, keys))


def run(target: tuple[str, str], tmp_path: Path, name: str, doc: dict[str, Any]) -> tuple[int, dict[str, Any], list[dict[str, Any]], str]:
    endpoint, path = target
    return run_job_cli(endpoint, tmp_path, name, doc, "--request-path", path, "--yes")


def failures(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f.get("key", ""), f.get("error", "")) for f in report.get("failures", ())]


def test_delete_by_min_size_deletes_exactly_the_selected_keys(target: tuple[str, str], client: Any, tmp_path: Path) -> None:
    bucket = new_bucket(client, "del")
    seeded = put_all(client, bucket, {"in/" + k: body(k, n) for k, n in ODD.items()})
    put_all(client, bucket, {"out/a+b.bin": b"outside the prefix, big enough" * 10})
    selected = {"in/" + k for k, n in ODD.items() if n >= MIN_SIZE}
    code, report, _, err = run(
        target, tmp_path, "del", {"operation": "delete", "source": {"bucket": bucket, "prefix": "in/", "min_size": MIN_SIZE}}
    )
    left = listed(client, bucket)
    assert sorted(set(seeded) - set(left)) == sorted(selected), err  # gone: exactly the selected keys
    assert sorted(left) == sorted((set(seeded) - selected) | {"out/a+b.bin"})
    assert bodies(client, bucket, set(seeded) - selected) == {k: v for k, v in seeded.items() if k not in selected}
    assert (code, report["succeeded"], failures(report)) == (0, len(selected), [])


def test_delete_modified_before_a_cut_deletes_exactly_the_first_wave(target: tuple[str, str], client: Any, tmp_path: Path) -> None:
    """Both servers list LastModified in whole seconds: the cut is a whole second at least a second after the first wave
    ended and the second wave starts half a second after it, so first-wave times are < cut and second-wave ones >= cut
    whether a server truncates or rounds."""
    bucket = new_bucket(client, "age")
    first = {"a+b.bin", "%41.bin", "sub+dir/k1", "x~y=z.bin", "sub%2Bdir/k4"}
    seeded = put_all(client, bucket, {"in/" + k: body(k, ODD[k]) for k in first})
    cut = int(time.time()) + 2
    time.sleep(cut - time.time() + 0.5)
    seeded |= put_all(client, bucket, {"in/" + k: body(k, ODD[k]) for k in ODD if k not in first})
    old = {k for k, o in listed(client, bucket).items() if o["LastModified"].timestamp() < cut}
    assert old == {"in/" + k for k in first}  # the waves are apart as the test needs
    before = datetime.fromtimestamp(cut, UTC).isoformat()
    code, report, _, err = run(
        target, tmp_path, "age", {"operation": "delete", "source": {"bucket": bucket, "prefix": "in/", "modified_before": before}}
    )
    left = listed(client, bucket)
    assert sorted(set(seeded) - set(left)) == sorted(old), err
    assert sorted(left) == sorted(set(seeded) - old)
    assert bodies(client, bucket, left) == {k: seeded[k] for k in left}
    assert (code, report["succeeded"], failures(report)) == (0, len(old), [])


def test_copy_of_the_prefix_copies_every_key_byte_exact(target: tuple[str, str], client: Any, tmp_path: Path) -> None:
    src, dst = new_bucket(client, "src"), new_bucket(client, "dst")
    seeded = put_all(client, src, {"in/" + k: body(k, n) for k, n in ODD.items()})
    code, report, _, err = run(
        target,
        tmp_path,
        "copy",
        {"operation": "copy", "source": {"bucket": src, "prefix": "in/"}, "destination": {"bucket": dst, "prefix": "out/"}},
    )
    src_list, dst_list = listed(client, src), listed(client, dst)
    assert sorted(dst_list) == sorted("out/" + k[3:] for k in seeded), err
    assert {k: o["ETag"] for k, o in dst_list.items()} == {"out/" + k[3:]: o["ETag"] for k, o in src_list.items()}
    assert bodies(client, dst, dst_list) == {"out/" + k[3:]: v for k, v in seeded.items()}
    assert sorted(src_list) == sorted(seeded)  # the source is untouched
    assert (code, report["succeeded"], failures(report)) == (0, len(ODD), [])


def flat_keys() -> list[str]:
    """1,500 keys under flat/, sorted; #1000 (the last of a 1,000-key page) holds `+` and #1001 `%2B`."""
    keys = [f"flat/{i:05d}" for i in range(1500)]
    keys[999] = "flat/00999+plus"
    keys[1000] = "flat/01000%2Bpct"
    assert sorted(keys) == keys
    return keys


def test_copy_lists_and_copies_all_1500_keys_across_a_page_ending_in_a_plus(target: tuple[str, str], client: Any, tmp_path: Path) -> None:
    src, dst = new_bucket(client, "src"), new_bucket(client, "dst")
    keys = flat_keys()
    seeded = put_all(client, src, {k: k.encode() for k in keys})
    code, report, _, err = run(
        target,
        tmp_path,
        "flat",
        {"operation": "copy", "source": {"bucket": src, "prefix": "flat/"}, "destination": {"bucket": dst, "prefix": "flat/"}},
    )
    dst_list = listed(client, dst)
    assert sorted(dst_list) == keys, err
    assert {k: o["ETag"].strip('"') for k, o in dst_list.items()} == seeded  # single-part bodies: the ETag is the MD5
    assert client.get_object(Bucket=dst, Key="flat/00999+plus")["Body"].read() == b"flat/00999+plus"
    assert (code, report["listed"], report["succeeded"], failures(report)) == (0, 1500, 1500, [])


def test_sync_deletes_exactly_the_extraneous_destination_keys(target: tuple[str, str], client: Any, tmp_path: Path) -> None:
    src, dst = new_bucket(client, "src"), new_bucket(client, "dst")
    source = ["a+b.bin", "%41.bin", "sub+dir/k1", "ü/ñ.bin", "x~y=z.bin"]
    seeded = put_all(client, src, {"in/" + k: body(k, ODD[k]) for k in source})
    # the lookalikes of source keys (and one plain stranger) have no source: extraneous
    extraneous = {"out/a b.bin", "out/a%2Bb.bin", "out/A.bin", "out/sub dir/k1", "out/sub%2Bdir/k1", "out/stranger"}
    put_all(client, dst, {k: b"extraneous " + k.encode() for k in extraneous})
    put_all(client, dst, {"out/a+b.bin": body("a+b.bin", ODD["a+b.bin"]), "out/%41.bin": b"stale"})  # unchanged, changed
    put_all(client, dst, {"elsewhere/a b.bin": b"outside destination.prefix"})
    before = set(listed(client, dst))
    doc = {
        "operation": "copy",
        "source": {"bucket": src, "prefix": "in/"},
        "destination": {"bucket": dst, "prefix": "out/"},
        "options": {"if_exists": "skip-unchanged", "delete_extraneous": True},
    }
    code, report, _, err = run(target, tmp_path, "sync", doc)
    after = listed(client, dst)
    gone = before - set(after)
    assert sorted(gone) == sorted(extraneous), err
    assert sorted(after) == sorted({"out/" + k for k in source} | {"elsewhere/a b.bin"})
    assert bodies(client, dst, ["out/" + k for k in source]) == {"out/" + k[3:]: v for k, v in seeded.items()}
    assert report.get("deleted_extraneous", 0) == len(gone)
    assert (code, report["succeeded"], report["skipped"], failures(report)) == (0, len(source) - 1, 1, [])


def test_move_of_the_prefix_moves_every_key_exactly_once(target: tuple[str, str], client: Any, tmp_path: Path) -> None:
    src, dst = new_bucket(client, "src"), new_bucket(client, "dst")
    seeded = put_all(client, src, {"in/" + k: body(k, n) for k, n in ODD.items()})
    put_all(client, src, {"keep/a b.bin": b"not under the prefix"})
    code, report, lines, err = run(
        target,
        tmp_path,
        "move",
        {"operation": "move", "source": {"bucket": src, "prefix": "in/"}, "destination": {"bucket": dst, "prefix": "out/"}},
    )
    assert sorted(listed(client, dst)) == sorted("out/" + k[3:] for k in seeded), err
    assert sorted(listed(client, src)) == ["keep/a b.bin"]
    assert bodies(client, dst, ["out/" + k[3:] for k in seeded]) == {"out/" + k[3:]: v for k, v in seeded.items()}
    moved = sorted((line["key"], line["dst_key"], line["outcome"]) for line in lines)
    assert moved == sorted((k, "out/" + k[3:], "succeeded") for k in seeded)  # one line per key: each moved once
    assert (code, report["succeeded"], failures(report)) == (0, len(ODD), [])


def test_keys_with_control_characters_are_deleted_exactly_or_the_listing_is_refused(
    target: tuple[str, str], client: Any, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """XML cannot carry `\\x0b`; S3 url-encodes it when asked. versitygw ignores the ask and lists U+FFFD in its place, a
    name that does not exist: deleting it would succeed, count one, and leave the real object. There s3bulk stops before
    deleting anything (UnreadableKey); where the server encodes (moto), the selected keys go and no other."""
    bucket = new_bucket(client, "ctl")
    # The control character is in the last key, where the stand-in U+FFFD keeps the listing in order: no order check saves it.
    sizes = {"c/a.bin": 200, "c/b.bin": 20, "c/z\x0b.bin": 300}
    seeded = put_all(client, bucket, {k: body(k, n) for k, n in sizes.items()})
    code, report, _, err = run(
        target, tmp_path, "ctl", {"operation": "delete", "source": {"bucket": bucket, "prefix": "c/", "min_size": MIN_SIZE}}
    )

    def there(key: str) -> bool:
        try:
            client.head_object(Bucket=bucket, Key=key)
        except client.exceptions.ClientError:
            return False
        return True

    left = {k for k in seeded if there(k)}
    if "versitygw" in request.node.callspec.id:
        assert code != 0 and "UnreadableKey" in err and left == set(seeded), (code, err)
        assert report.get("succeeded", 0) == 0
    else:
        assert left == {k for k, n in sizes.items() if n < MIN_SIZE}, err
        assert (code, report["succeeded"], failures(report)) == (0, 2, [])
