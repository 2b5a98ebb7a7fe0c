"""What the CLI checks before any object is touched, and where a run points.

Each problem is one line naming the flag or field and the fix (exit 2). A run's ledger
remembers where it pointed (endpoint, Region, profile; never keys), so `--resume ID`
goes back there and a resume pointed elsewhere is refused: run exactly as printed,
a resume of a local-endpoint job must not land on AWS buckets of the same names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import boto3
from botocore.exceptions import BotoCoreError, ConfigParseError, InvalidConfigError, PartialCredentialsError, ProfileNotFound

from s3bulk.s3.clients import ClientSettings, has_credentials

NO_CREDENTIALS = "no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or pass --profile"


class UsageError(Exception):
    """Bad arguments or environment: one line, exit 2."""


@dataclass(frozen=True, slots=True)
class _Where:
    field: str  # ClientSettings' name, and the ledger's
    flag: str
    env: tuple[str, ...]  # what boto3 reads when the flag is not given, in its order


# The settings boto3 would otherwise take from the environment: a resume must see the same ones. The endpoint is S3's
# only (--endpoint-url, $AWS_ENDPOINT_URL_S3, then $AWS_ENDPOINT_URL as botocore takes it for S3): every other client
# (DynamoDB, Step Functions, CloudFormation, Lambda, Secrets Manager) leaves its endpoint to botocore (clients.make_client).
WHERE = (
    _Where("endpoint_url", "--endpoint-url", ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")),
    _Where("region", "--region", ("AWS_REGION", "AWS_DEFAULT_REGION")),
    _Where("profile", "--profile", ("AWS_PROFILE", "AWS_DEFAULT_PROFILE")),
)


def endpoint_problem(url: str) -> str | None:
    """Why an endpoint URL cannot be an S3 endpoint (http(s), a host, no path), or None."""
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"}:
        return f"{url!r} has no http:// or https:// scheme; write it like http://127.0.0.1:8333"
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return f"{url!r} has a port that is not a number; write it like http://127.0.0.1:8333"
    if not parts.hostname:
        return f"{url!r} names no host; write it like http://127.0.0.1:8333"
    if parts.path not in {"", "/"} or parts.query or parts.fragment:
        return f"{url!r} has a path; an S3 endpoint is scheme, host and port only (bucket and key go in the job)"
    return None


def profile_problem(profile: str) -> str | None:
    """Why a named profile cannot be used (not in the AWS config files), or None."""
    try:
        boto3.session.Session(profile_name=profile)
    except ProfileNotFound:
        return f"no profile {profile!r} in the AWS config files; create it (aws configure --profile {profile}) or pass another"
    except BotoCoreError as exc:
        return setup_problem(exc) or f"profile {profile!r} cannot be read: {exc}"
    return None


def setup_problem(exc: BaseException) -> str | None:
    """One line for an AWS setup botocore cannot read (half a key pair, a config file that does not parse), naming
    the problem and the fix; None for any other error. botocore raises these wherever a session first reads them,
    which is why the CLI also maps them at the top."""
    if isinstance(exc, PartialCredentialsError):
        where = {"env": "the environment", "shared-credentials-file": "the AWS credentials file", "config-file": "the AWS config file"}
        provider = str(exc.kwargs.get("provider", ""))
        missing = str(exc.kwargs.get("cred_var", "a key"))
        return (
            f"incomplete AWS credentials in {where.get(provider, provider or 'the credential chain')}: {missing} is missing; "
            "set it too, or remove the half that is there (then --profile or the config files are used)"
        )
    if isinstance(exc, ConfigParseError):
        path = str(exc.kwargs.get("path", "an AWS config file"))
        named = next((f" (${v})" for v in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE") if os.environ.get(v) == path), "")
        return (
            f"the AWS config file {path}{named} cannot be parsed; fix it (INI: [profile NAME] or [default] sections of "
            "key = value lines), or point AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE at another file"
        )
    if isinstance(exc, InvalidConfigError):
        return f"the AWS configuration is invalid: {' '.join(str(exc).split())}; fix the config file or the variable it names"
    return None


def require_credentials(settings: ClientSettings, missing: str = NO_CREDENTIALS) -> None:
    """Credentials for these settings, or one line (exit 2): `missing` when there are none, what is wrong when botocore
    cannot read them."""
    try:
        found = has_credentials(settings)
    except BotoCoreError as exc:
        if (problem := setup_problem(exc)) is None:
            raise
        raise UsageError(problem) from None
    if not found:
        raise UsageError(missing)


def ignores_configured_endpoints() -> bool:
    """$AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true: botocore takes no endpoint from the environment or the config files,
    and neither does the CLI's reading of S3's (an --endpoint-url still counts)."""
    return os.environ.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "").strip().lower() == "true"


def given(args: object) -> dict[str, tuple[str | None, str]]:
    """Each setting's value for this invocation, and where it came from (the flag, or the environment variable)."""
    out: dict[str, tuple[str | None, str]] = {}
    for w in WHERE:
        flag = getattr(args, w.field, None)
        if flag:
            out[w.field] = (flag, w.flag)
            continue
        if w.field == "endpoint_url" and ignores_configured_endpoints():
            out[w.field] = (None, w.flag)
            continue
        env = next((name for name in w.env if os.environ.get(name)), None)
        out[w.field] = (os.environ[env], f"${env}") if env else (None, w.flag)
    return out


def settings(args: object, origin: dict[str, str | None] | None = None, resume: str | None = None) -> ClientSettings:
    """The client settings of a run: this invocation's, or (resuming) the ones the run started with.

    A resume that points anywhere else is refused, naming what the run used.
    """
    now = given(args)
    values: dict[str, str | None] = {w.field: now[w.field][0] for w in WHERE}
    if origin is not None:
        for w in WHERE:
            value, source = now[w.field]
            used = origin.get(w.field)
            if value is not None and value != used:
                was = f"{w.flag} {used}" if used else f"no {w.flag}" + (" (AWS itself)" if w.field == "endpoint_url" else "")
                raise UsageError(
                    f"--resume {resume}: the run used {was}, and {source} says {value}; "
                    f"a resume goes where the run went: drop {source}" + (f" or unset {source[1:]}" if source.startswith("$") else "")
                )
            values[w.field] = used
    check(values, {w.field: now[w.field][1] for w in WHERE})
    return ClientSettings(endpoint_url=values["endpoint_url"], region=values["region"], profile=values["profile"])


def check(values: dict[str, str | None], names: dict[str, str]) -> None:
    """The endpoint URL and profile, checked before anything runs."""
    endpoint, profile = values.get("endpoint_url"), values.get("profile")
    if endpoint is not None and (problem := endpoint_problem(endpoint)):
        raise UsageError(f"{names.get('endpoint_url', '--endpoint-url')}: {problem}")
    if profile is not None and (problem := profile_problem(profile)):
        raise UsageError(f"{names.get('profile', '--profile')}: {problem}")


def origin_of(s: ClientSettings) -> dict[str, str | None]:
    """What the ledger keeps of a run's settings (no keys)."""
    return {"endpoint_url": s.endpoint_url, "region": s.region, "profile": s.profile}


def check_report_path(path: str | None, flag: str = "--report") -> None:
    """The report is written at the end of a run: a path it cannot be written to fails now, not after the job.

    `-` is standard output. A device (/dev/stdout), a FIFO or a symlink is written through, so only it
    must take writes; a regular file is written beside itself and renamed over, so its directory must.
    """
    if not path or path == "-":
        return
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{flag} {path}: is a directory; give a file path, like {target / 'report.json'}")
    if target.exists() and (target.is_symlink() or not target.is_file()):
        if not os.access(target, os.W_OK):
            raise UsageError(f"{flag} {path}: not writable; give a path you can write")
        return
    if target.is_symlink():  # a link to a file not there yet: it is made where the link points
        target = Path(os.path.realpath(target))
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{flag} {path}: the directory {parent} does not exist; create it or give another path")
    if not os.access(parent, os.W_OK | os.X_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UsageError(f"{flag} {path}: not writable; give a path you can write")


def check_state_dir(path: Path, name: str) -> None:
    """The directory that keeps job ledgers (created when missing) must be one, and writable: one line naming where
    it came from (`name`: --state-dir, $S3BULK_STATE_DIR, or the default) and the fix, before anything runs."""
    fix = "give a directory you can write (--state-dir DIR), or pass --no-ledger"
    if path.exists() and not path.is_dir():
        raise UsageError(f"{name} {path}: is a file, not a directory; {fix}")
    existing = path
    while not existing.exists():  # the nearest ancestor that exists: the directories below it are made there
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise UsageError(f"{name} {path}: {existing} is a file, not a directory; {fix}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{name} {path}: {existing} is not writable; {fix}")
