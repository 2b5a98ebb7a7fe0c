"""The relay on in-memory stores: two stores that share nothing, bytes and attributes carried, bad jobs refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from s3bulk.job import JobError, parse_job, relays
from s3bulk.local.engine import Engine
from s3bulk.local.plan import make_plan
from s3bulk.testing.memstore import MemoryStore

MiB = 1024 * 1024
OTHER = "https://minio.example:9000"


def _job(op: str = "copy", **extra: Any) -> Any:
    doc: dict[str, Any] = {
        "operation": op,
        "source": {"bucket": "data", "prefix": "in/", "endpoint_url": OTHER},
        "destination": {"bucket": "data", "prefix": "in/"},
        **extra,
    }
    return parse_job(json.dumps(doc))


def _stores() -> tuple[MemoryStore, MemoryStore]:
    src, dst = MemoryStore(), MemoryStore()
    src.create_bucket("data")
    dst.create_bucket("data")
    for i in range(30):
        src.put_object("data", f"in/{i:02d}", bytes([i]) * (i * 1000), metadata={"n": str(i)}, content_type="text/x-n", tags={"i": str(i)})
    src.put_object("data", "in/big", bytes(range(256)) * (80 * 1024))  # 20 MiB: a multipart write
    return src, dst


def test_a_relay_between_two_stores_carries_bytes_type_metadata_and_tags() -> None:
    src, dst = _stores()
    report = Engine(_job(), src, dst_store=dst, concurrency=4).run()
    assert (report.summary()["succeeded"], report.summary()["failed"]) == (31, 0)
    for key in src.keys("data"):
        a, b = src.get("data", key), dst.get("data", key)
        assert (b.body, b.content_type, b.metadata, b.tags) == (a.body, a.content_type, a.metadata, a.tags)
    assert "CopyObject" not in src.calls and "CopyObject" not in dst.calls  # nothing asked either server to copy
    assert dst.calls["UploadPart"] == 3 and dst.open_uploads == 0


def test_a_relayed_move_deletes_the_source_only_after_the_copy() -> None:
    src, dst = _stores()
    assert Engine(_job("move"), src, dst_store=dst, concurrency=4).run().exit_code == 0
    assert src.keys("data") == [] and len(dst.keys("data")) == 31


def test_a_rerun_sync_across_stores_copies_nothing() -> None:
    src, dst = _stores()
    job = _job(options={"if_exists": "skip-unchanged"})
    Engine(job, src, dst_store=dst, concurrency=4).run()
    puts = dst.calls.get("PutObject", 0)
    again = Engine(job, src, dst_store=dst, concurrency=4).run()
    assert (again.summary()["succeeded"], again.summary()["skipped"]) == (0, 31)
    assert dst.calls.get("PutObject", 0) == puts


def test_the_plan_of_a_relay_counts_reads_on_one_side_and_writes_on_the_other() -> None:
    src, dst = _stores()
    plan = make_plan(_job(), src, dst)
    plan.requests.pop("ListObjectsV2")
    assert plan.requests == {
        "HeadObject": 31,
        "GetObjectTagging": 31,
        "GetObject": 29 + 3,  # one range per non-empty small object (in/00 is empty: no GET), three for the 20 MiB one
        "PutObject": 30,
        "CreateMultipartUpload": 1,
        "UploadPart": 3,
        "CompleteMultipartUpload": 1,
    }


def test_relay_is_chosen_when_the_sides_differ_or_when_asked() -> None:
    assert relays(_job())
    same = parse_job(json.dumps({"operation": "copy", "source": {"bucket": "a-b"}, "destination": {"bucket": "c-d"}}))
    assert not relays(same)
    forced = parse_job(
        json.dumps({"operation": "copy", "source": {"bucket": "a-b"}, "destination": {"bucket": "c-d"}, "options": {"transfer": "relay"}})
    )
    assert relays(forced)


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        (
            {
                "operation": "copy",
                "source": {"bucket": "a-b", "endpoint_url": OTHER},
                "destination": {"bucket": "c-d"},
                "options": {"transfer": "server-side"},
            },
            "job.options.transfer",
        ),
        ({"operation": "delete", "source": {"bucket": "a-b", "prefix": "x/"}, "options": {"transfer": "relay"}}, "job.options.transfer"),
        (
            {"operation": "copy", "source": {"bucket": "a-b", "endpoint_url": "minio:9000"}, "destination": {"bucket": "c-d"}},
            "job.source.endpoint_url",
        ),
    ],
)
def test_a_bad_transfer_setting_is_refused_naming_the_field(doc: dict[str, Any], field: str) -> None:
    with pytest.raises(JobError) as info:
        parse_job(json.dumps(doc))
    assert str(info.value).startswith(field)


SECRET = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:legacy-keys"


def test_the_stack_refuses_another_endpoint_without_a_secret_and_a_secret_it_has_not_allow_listed() -> None:
    from s3bulk.aws.allowlist import AllowList, paired, sides
    from s3bulk.aws.validation import validate

    allow = AllowList(
        frozenset({"a-b"}),
        frozenset({"c-d"}),
        frozenset(),
        secrets=frozenset({SECRET}),
        endpoints=paired([f"{SECRET}={OTHER}"]),
        sides=sides([f"{SECRET}=source"]),
    )
    doc: dict[str, Any] = {"operation": "copy", "source": {"bucket": "a-b", "endpoint_url": OTHER}, "destination": {"bucket": "c-d"}}
    with pytest.raises(JobError, match=r"^job\.source\.endpoint_url: another endpoint needs its own keys.*credentials_secret$"):
        validate(doc, allow)
    doc["source"]["credentials_secret"] = SECRET
    assert validate(doc, allow)["job_id"]
    other = SECRET.replace("legacy-keys", "someone-elses")
    doc["source"]["credentials_secret"] = other
    with pytest.raises(JobError, match=r"^job\.source\.credentials_secret: .*someone-elses@source added to -c credentials_secrets$"):
        validate(doc, allow)
    doc["source"] = {"bucket": "a-b", "profile": "legacy"}
    with pytest.raises(JobError, match=r"^job\.source\.profile: functions have no AWS profiles"):
        validate(doc, allow)


def test_a_side_with_a_secret_relays_and_a_secret_with_a_profile_is_refused() -> None:
    same = {"operation": "copy", "source": {"bucket": "a-b"}, "destination": {"bucket": "c-d"}}
    assert not relays(parse_job(json.dumps(same)))
    keyed = {**same, "source": {"bucket": "a-b", "credentials_secret": SECRET}}
    assert relays(parse_job(json.dumps(keyed)))  # same endpoint, another account's keys: no server-side copy can cross that
    with pytest.raises(JobError, match=r"^job\.source\.credentials_secret: .*profile or a secret, not both"):
        parse_job(json.dumps({**same, "source": {"bucket": "a-b", "credentials_secret": SECRET, "profile": "x"}}))
    with pytest.raises(JobError, match=r"^job\.destination\.credentials_secret"):
        parse_job(json.dumps({**same, "destination": {"bucket": "c-d", "credentials_secret": "legacy-keys"}}))


def test_the_stack_lets_a_side_name_only_the_endpoint_its_deployer_paired_with_the_secret() -> None:
    """A job may not point an allow-listed bucket and secret at a host of its own choosing: not to fetch from it, and
    not to stream a read bucket's objects to it (a write bucket's name there). The deployer pairs each secret with the
    endpoint its keys are for (-c credentials_secrets=ARN=URL)."""
    from s3bulk.aws.allowlist import AllowList, paired, sides
    from s3bulk.aws.validation import validate

    mine = SECRET.replace("legacy-keys", "minio-keys")
    allow = AllowList(
        frozenset({"a-b"}),
        frozenset({"c-d"}),
        frozenset(),
        secrets=frozenset({SECRET, mine}),
        endpoints=paired([f"{SECRET}=https://S3.Legacy.example:9000/", f"{mine}=https://minio.example"]),
        sides=sides([f"{SECRET}=both", f"{mine}=both"]),
    )
    listed = {"bucket": "a-b", "endpoint_url": "https://s3.legacy.example:9000", "credentials_secret": SECRET}
    assert validate({"operation": "copy", "source": listed, "destination": {"bucket": "c-d"}}, allow)["job_id"]
    theirs = {"bucket": "c-d", "endpoint_url": "http://attacker.example", "credentials_secret": SECRET}
    with pytest.raises(
        JobError,
        match=r"^job\.destination\.endpoint_url: 'http://attacker\.example' is not the endpoint this deployment pairs with "
        r".*legacy-keys' \(https://s3\.legacy\.example:9000\); redeploy with -c credentials_secrets=.*legacy-keys=http://attacker",
    ):
        validate({"operation": "copy", "source": {"bucket": "a-b"}, "destination": theirs}, allow)
    plain = {**listed, "endpoint_url": "http://s3.legacy.example:9000"}  # the same host over plain HTTP is another endpoint
    with pytest.raises(JobError, match=r"^job\.source\.endpoint_url: 'http://s3\.legacy\.example:9000' is not the endpoint"):
        validate({"operation": "copy", "source": plain, "destination": {"bucket": "c-d"}}, allow)
    crossed = {**listed, "endpoint_url": "https://minio.example"}  # another listed endpoint, but not these keys'
    with pytest.raises(JobError, match=r"^job\.source\.endpoint_url: 'https://minio\.example' is not the endpoint"):
        validate({"operation": "copy", "source": crossed, "destination": {"bucket": "c-d"}}, allow)
    bare = AllowList(frozenset({"a-b"}), frozenset({"c-d"}), frozenset(), secrets=frozenset({SECRET}), sides=sides([f"{SECRET}=both"]))
    with pytest.raises(JobError, match=r"^job\.source\.endpoint_url: .*legacy-keys' \(none\)"):
        validate({"operation": "copy", "source": listed, "destination": {"bucket": "c-d"}}, bare)


def test_the_stack_lets_a_secret_serve_only_the_side_of_a_job_its_deployer_named() -> None:
    """Keys paired to pull from a partner (@source) cannot push this account's readable buckets to that partner, and
    keys to deliver to one (@destination) cannot fetch from it; @both allows either."""
    from s3bulk.aws.allowlist import AllowList, paired, sides
    from s3bulk.aws.validation import validate

    url = "https://s3.legacy.example:9000"

    def allowed(side: str) -> AllowList:
        return AllowList(
            frozenset({"a-b", "c-d"}),
            frozenset({"c-d"}),
            frozenset(),
            secrets=frozenset({SECRET}),
            endpoints=paired([f"{SECRET}={url}"]),
            sides=sides([f"{SECRET}={side}"]),
        )

    far = {"bucket": "c-d", "endpoint_url": url, "credentials_secret": SECRET}
    pull = {"operation": "copy", "source": far, "destination": {"bucket": "c-d"}}
    push = {"operation": "copy", "source": {"bucket": "a-b"}, "destination": far}
    assert validate(pull, allowed("source"))["job_id"]
    with pytest.raises(
        JobError,
        match=r"^job\.destination\.credentials_secret: this deployment lets .*legacy-keys' serve the source side of a job, not the "
        r"destination: its keys may not write to that endpoint here; if they may, redeploy with -c credentials_secrets=.*@both$",
    ):
        validate(push, allowed("source"))
    assert validate(push, allowed("destination"))["job_id"]
    with pytest.raises(JobError, match=r"^job\.source\.credentials_secret: .* serve the destination side .* may not read from"):
        validate(pull, allowed("destination"))
    assert validate(pull, allowed("both"))["job_id"] and validate(push, allowed("both"))["job_id"]
    unsaid = AllowList(frozenset({"a-b", "c-d"}), frozenset({"c-d"}), frozenset(), secrets=frozenset({SECRET}))
    with pytest.raises(JobError, match=r"^job\.source\.credentials_secret: this deployment names no side .*\[=URL\]@source$"):
        validate(pull, unsaid)


def test_a_copy_to_a_kms_key_the_workers_were_not_granted_is_refused_at_validate_naming_the_field() -> None:
    """Every object would fail AccessDenied (caught only by the breaker after 1,000): one line at Validate instead."""
    from s3bulk.aws.allowlist import AllowList
    from s3bulk.aws.validation import validate

    key = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    allow = AllowList(frozenset({"a-b"}), frozenset({"c-d"}), frozenset(), kms_keys=frozenset({key}))
    dst: dict[str, Any] = {"bucket": "c-d", "sse": "aws:kms", "kms_key_id": key}
    assert validate({"operation": "copy", "source": {"bucket": "a-b"}, "destination": dst}, allow)["job_id"]
    assert validate({"operation": "copy", "source": {"bucket": "a-b"}, "destination": {**dst, "kms_key_id": key.split("/")[-1]}}, allow)
    other = {**dst, "kms_key_id": key.replace("1234abcd", "99999999")}
    with pytest.raises(JobError, match=r"^job\.destination\.kms_key_id: 'arn:aws:kms:.*99999999.*' is not among the keys .* -c kms_keys"):
        validate({"operation": "copy", "source": {"bucket": "a-b"}, "destination": other}, allow)
    aliased = {**dst, "kms_key_id": "alias/copies"}  # KMS resolves an alias; nothing to compare it with here
    assert validate({"operation": "copy", "source": {"bucket": "a-b"}, "destination": aliased}, allow)["job_id"]
