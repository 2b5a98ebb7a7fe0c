"""From text to a Job, with the first problem as one line naming the field; the schema; the job id."""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import types
import typing
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from s3bulk.job.base import _BASE_DIR, _NOW, _STORED, JobError, _FieldProblem, _Strict
from s3bulk.job.model import Job
from s3bulk.job.operations import _JOB_ID_PATTERN, _PATTERN_FIXES
from s3bulk.store import RequestOptions


def _describe(err: dict[str, Any]) -> str:
    """Turn one pydantic error into 'job.field.path: problem; fix'."""
    loc = [str(p) for p in err.get("loc", ())]
    kind = err.get("type", "")
    msg = str(err.get("msg", ""))
    if kind == "value_error":
        cause = err.get("ctx", {}).get("error")
        msg = str(cause) if cause is not None else msg.removeprefix("Value error, ")
        if isinstance(cause, _FieldProblem):
            loc = [*loc, *cause.field.split(".")]
    elif kind == "extra_forbidden":
        near = _near(loc[-1], _fields_at(loc[:-1])) if loc else None
        home = _home(loc[-1], loc[:-1]) if loc and not near else None
        if near:
            msg = f'unknown field; did you mean "{near}"?'
        elif home:
            msg = f"unknown field here; it belongs in {home} (job.{home}.{loc[-1]})"
        else:
            msg = "unknown field; remove it or fix its spelling (see docs/job.schema.json)"
    elif kind == "literal_error" and err.get("input") == "sync" and loc in (["operation"], ["options", "if_exists"]):
        said = "sync is not an operation of its own" if loc == ["operation"] else 'got "sync"'
        msg = f"{said}; {_SYNC}"
    elif kind == "literal_error":
        allowed = re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected", "")))
        near = _near(str(err.get("input")), allowed) if isinstance(err.get("input"), str) else None
        msg = f"{msg.rstrip('.')}; got {json.dumps(err.get('input'), default=str)[:60]}" + (f'; did you mean "{near}"?' if near else "")
    elif kind == "missing":
        msg = "required field is missing; add it"
    elif kind in {"int_type", "string_type", "bool_type", "list_type", "model_type", "datetime_type", "dict_type"}:
        msg = f"{msg.rstrip('.')}; got {json.dumps(err.get('input'), default=str)[:60]}"
    elif kind == "string_pattern_mismatch":
        fix = _PATTERN_FIXES.get(str(err.get("ctx", {}).get("pattern")), "see docs/job.schema.json for the form it takes")
        msg = f"got {json.dumps(err.get('input'))[:60]}; {fix}"
    elif kind.startswith("datetime"):
        msg = f"{msg.rstrip('.')}; write it like 2024-01-01T00:00:00Z"
    path = ".".join(["job", *loc])
    return f"{path}: {msg}"


# What a user who asks for a sync means, said where the job names one (an operation, an if_exists).
_SYNC = 'a sync is a copy with options.if_exists "skip-unchanged" and options.delete_extraneous true (see events/sync-prefix.json)'


def _near(word: str, choices: list[str]) -> str | None:
    """The one choice a misspelling most likely meant ("prefx" for "prefix"), or None where none is close."""
    found = difflib.get_close_matches(word, choices, n=1, cutoff=0.7)
    return found[0] if found else None


def _models_in(annotation: object) -> list[type[BaseModel]]:
    """The job-file models a field's type holds: itself, or the members of an Optional, a union or a list."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if typing.get_origin(annotation) in {typing.Union, types.UnionType, list}:
        return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
    return []


def _fields_at(loc: list[str]) -> list[str]:
    """The field names the job file takes at a path (job.source: bucket, prefix, ...), for a misspelt one's suggestion."""
    models: list[type[BaseModel]] = [Job]
    for part in loc:
        if part.isdigit() or _branch(part):  # a list's index, a union's branch: the same models
            continue
        models = [m for model in models if part in model.model_fields for m in _models_in(model.model_fields[part].annotation)]
    return sorted({name for model in models for name in model.model_fields})


def _home(name: str, loc: list[str]) -> str | None:
    """The part of the job a field put at the wrong level belongs in ("if_exists" at the top: options), if just one."""
    homes = [part for part in _fields_at([]) if [part] != loc and name in _fields_at([part])]
    return homes[0] if len(homes) == 1 else None


def _misspelt_first(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A field said missing beside an unknown one that is its misspelling ("operaton" for "operation"): the misspelling
    is the cause, so it is said first."""
    missing = {tuple(e.get("loc", ())) for e in errors if e.get("type") == "missing"}

    def misspells_a_missing_one(e: dict[str, Any]) -> bool:
        loc = tuple(e.get("loc", ()))
        if e.get("type") != "extra_forbidden" or not loc:
            return False
        siblings = [str(m[-1]) for m in missing if m[:-1] == loc[:-1]]
        return _near(str(loc[-1]), siblings) is not None

    return sorted(errors, key=lambda e: not misspells_a_missing_one(e))


# Text that fails as JSON and reads as YAML: a first line (past comments and a document marker) of `key:` or `- item`.
_YAML_LINE = re.compile(r"""^\s*(?:-\s|[A-Za-z_"'][\w"' .-]*:(?:\s|$))""")
YAML_HINT = (
    "job: this reads as YAML, and job files are JSON; convert it, e.g. "
    """python3 -c 'import json, sys, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout, indent=2)' < JOB.yaml > JOB.json"""
)


def _looks_like_yaml(text: str) -> bool:
    for line in text.lstrip("\ufeff").splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped == "---":
            continue
        return not stripped.startswith(("{", "[")) and bool(_YAML_LINE.match(line))
    return False


def parse_job(text: str | bytes, *, now: datetime | None = None, stored: bool = False, base_dir: str | Path | None = None) -> Job:
    """Validate a job document; raise JobError with a one-line message naming the field.

    `now` also applies the rules only a new job can break (a retention date already past). Leave it
    out to re-read a stored job (a resume's ledger, the stack's items): it must still parse after
    its dates have passed. `stored` says it is one: it runs as it was checked when it started, so
    a rule added since (a source.prefix must end in /) does not refuse it. `base_dir` is the job file's directory: a
    relative source.manifest.path is read from there (without it, from the current directory).
    """
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        decoded = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        if _looks_like_yaml(decoded):
            raise JobError(YAML_HINT) from None
        raise JobError(f"job: not valid JSON at line {exc.lineno} column {exc.colno} ({exc.msg}); fix the syntax") from None
    if not isinstance(raw, dict):
        raise JobError('job: the file must hold a JSON object like {"operation": ..., "source": ...}')
    try:
        context: dict[str, object] = {_STORED: stored}
        if now is not None:
            context[_NOW] = now
        if base_dir is not None:
            context[_BASE_DIR] = os.path.abspath(base_dir)
        return Job.model_validate_json(text, context=context)
    except ValidationError as exc:
        errors = _misspelt_first([dict(e) for e in exc.errors()])
        first, rest = _first_problem(errors)
        more = f" (and {rest} more problem{'s' if rest > 1 else ''})" if rest else ""
        raise JobError(first + more) from None


def _models(cls: type[BaseModel] = _Strict) -> set[str]:
    """The job file's models by name (every one derives from _Strict): pydantic names a union's model branch so."""
    return {cls.__name__} | {name for sub in cls.__subclasses__() for name in _models(sub)}


def _branch(part: object) -> bool:
    """A union's branch in an error's location (pydantic names it by type: str, list[str], literal[...], or a model of
    the job file, AsOf), not a field or a map's key (a tag key such as "Env" is one)."""
    if not isinstance(part, str):
        return False
    return "[" in part or part in {"str", "int", "bool", "float", "dict", "list"} or part in _models()


def _first_problem(errors: list[dict[str, Any]]) -> tuple[str, int]:
    """The first problem as one line, and how many others there are. A field that takes one of several forms (a union)
    fails once per form: said once, as the form the input was meant to be when it went into one (an object with a bad
    field), else as the forms it may take."""
    loc = list(errors[0].get("loc", ()))
    cut = next((n for n, part in enumerate(loc) if _branch(part)), None)
    if cut is None:
        return _describe(errors[0]), len(errors) - 1
    field = loc[:cut]
    same = [e for e in errors if list(e.get("loc", ()))[:cut] == field and len(e.get("loc", ())) > cut and _branch(e["loc"][cut])]
    others = len(errors) - len(same)
    # A misspelt field of an object is the likelier cause of its "missing" one: said first.
    deeper = sorted((e for e in same if len(e["loc"]) > cut + 1), key=lambda e: e.get("type") != "extra_forbidden")
    if deeper:  # it went into a form (an object) and a field of it is wrong: say that one, at its real path
        e = deeper[0]
        return _describe({**e, "loc": [p for p in e["loc"] if not _branch(p)]}), others + len(deeper) - 1
    forms = []
    for e in same:
        msg = str(e.get("msg", "")).removeprefix("Input should be ").rstrip(".")
        forms.append("an object (see docs/job.schema.json)" if e.get("type") in {"model_type", "dict_type"} else msg)
    path = ".".join(["job", *(str(p) for p in field)])
    got = json.dumps(same[0].get("input"), default=str)[:60]
    return f"{path}: should be {', or '.join(forms)}; got {got}", others


def load_job(path: str | Path, *, now: datetime | None = None) -> Job:
    """Read and validate a job file: a new job, so checked against `now` (default: the clock) as well. A relative
    source.manifest.path is the job file's neighbour, wherever the command runs from; the job carries it absolute, so
    a resume (whose job file must hash the same) finds it from any directory too."""
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise JobError(f"job file {str(path)!r}: {exc.strerror}; check the path") from None
    return parse_job(text, now=now or datetime.now(UTC), base_dir=Path(path).parent)


def check_local_files(job: Job) -> None:
    """The files on this machine a job reads (a local manifest) can be read: `validate` says so before a run finds out."""
    manifest = job.source.manifest
    if manifest is None or manifest.path is None:
        return
    try:
        with open(manifest.path, "rb") as fh:
            fh.read(1)
    except OSError as exc:
        raise JobError(
            f"job.source.manifest.path: {manifest.path!r}: {exc.strerror}; check the path (a relative one is read from the job file's directory)"
        ) from None


def json_schema() -> dict[str, Any]:
    """The published schema (docs/job.schema.json) for editors and other tools."""
    schema = Job.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "s3bulk job"
    return schema


def request_options(job: Job) -> RequestOptions:
    """The options every S3 request of this job carries."""
    owners = {}
    if job.source.expected_owner:
        owners[job.source.bucket] = job.source.expected_owner
    dst = job.destination
    if dst is not None and dst.expected_owner:
        owners[dst.bucket] = dst.expected_owner
    return RequestOptions(
        owners=owners,
        requester_pays=job.options.requester_pays,
        sse=dst.sse if dst else None,
        kms_key_id=dst.kms_key_id if dst else None,
        acl=dst.acl if dst else None,
    )


_JOB_ID = re.compile(_JOB_ID_PATTERN)


def new_job_id(job: Job, execution: str | None = None) -> str:
    """The job's own id; else one derived from the execution that runs it; else one that sorts by start time.

    On the stack the id follows from the execution's name, so whoever sees only the
    execution (the handler of its status-change event) finds the job's ledger entry.
    """
    if job.job_id:
        return job.job_id
    if execution:
        derived = f"{job.operation}-{execution}"
        if _JOB_ID.match(derived):
            return derived
        return f"{job.operation}-{hashlib.sha256(execution.encode()).hexdigest()[:32]}"
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{job.operation}-{stamp}-{uuid.uuid4().hex[:8]}"
