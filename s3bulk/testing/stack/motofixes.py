"""moto's own deviations from AWS, put right while a stack runs on it (each patch says what AWS does)."""

from __future__ import annotations

import base64
import threading
import zlib
from collections.abc import Callable
from typing import Any, cast

from botocore.exceptions import ClientError
from moto.core.botocore_stubber import BotocoreStubber
from moto.core.responses import ActionResult
from moto.s3.responses import S3Response
from moto.stepfunctions.parser.api import HistoryEventType
from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import FailureEvent
from moto.stepfunctions.parser.asl.component.state.exec.state_task.state_task_lambda import StateTaskLambda
from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails


def parts_with_checksums(serialized: Callable[..., Any]) -> Callable[..., Any]:
    """S3's ListParts gives each part's checksum (ChecksumCRC32) when its upload was created with a checksum algorithm;
    moto's leaves it out. Added here from the part's bytes, as S3 computes it, so a paused relay can take its upload up
    again as it would on AWS (its CRC-32s make the object's whole one)."""

    def serialize(self: S3Response, result: Any) -> Any:
        if self.data.get("Action") == "ListParts" and isinstance(result, ActionResult) and isinstance(result.result, dict):
            upload = self.backend.get_bucket(self.bucket_name).multiparts.get(self._get_param("uploadId"))
            if upload is not None and upload.metadata.get("x-amz-checksum-algorithm") == "CRC32":
                for part in result.result.get("Parts", []):
                    value = upload.parts[int(part["PartNumber"])].value
                    part["ChecksumCRC32"] = base64.b64encode(zlib.crc32(value).to_bytes(4, "big")).decode()
        return serialized(self, result)

    return serialize


def bytes_bodies(stub: Callable[..., Any]) -> Callable[..., Any]:
    """botocore sends a bytearray body (the writer's parts) as is over HTTP; in-process moto hands the body to werkzeug,
    which takes bytes only. The copy is made here, in the harness, not in the code under test.

    In-process moto's DynamoDB and S3 backends are not thread-safe: two concurrent ADDs to one counter item can lose
    one (a batch's marker written, its count not), and an object overwritten while another thread reads it fails
    with "I/O operation on closed file". DynamoDB and S3 apply each request atomically, so their requests are
    answered one at a time, as the handler tests do. Neither service's requests call back into a Lambda, so this
    lock is never held across an invocation.
    """
    atomic = threading.Lock()

    def call(self: BotocoreStubber, event_name: str, request: Any, **kwargs: Any) -> Any:
        if isinstance(request.body, bytearray | memoryview):
            request.body = bytes(request.body)
        if ".dynamodb." in event_name or ".s3." in event_name:
            with atomic:
                return stub(self, event_name, request, **kwargs)
        return stub(self, event_name, request, **kwargs)

    return call


def sfn_api_names(original: Callable[..., None]) -> Callable[..., None]:
    """Step Functions' own integration (arn:aws:states:::states:startExecution) takes the API's parameters in
    PascalCase (StateMachineArn, Input, Name) and calls the API with them; moto 5.2 hands them to boto3 as they are,
    so StartExecution is sent without its stateMachineArn. The API's names, as AWS maps them."""

    def normalise(self: Any, parameters: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        original(self, parameters, *args, **kwargs)
        for key in [k for k in parameters if k[:1].isupper()]:
            parameters[key[0].lower() + key[1:]] = parameters.pop(key)

    return normalise


def lambda_service_error(real: Callable[..., FailureEvent]) -> Callable[..., FailureEvent]:
    """A task whose Invoke itself is refused fails as `Lambda.<code>` (Lambda.TooManyRequestsException when throttled),
    as on AWS and as the stack's retriers expect; moto's interpreter (5.2) names every such error "Exception"."""

    def from_error(self: StateTaskLambda, env: Any, ex: Exception) -> FailureEvent:
        if not isinstance(ex, ClientError):
            return real(self, env, ex)
        error = f"Lambda.{ex.response['Error']['Code']}"
        details = {"error": error, "cause": str(ex.response["Error"].get("Message", ""))}
        return FailureEvent(
            env=env,
            error_name=CustomErrorName(error),
            event_type=HistoryEventType.LambdaFunctionFailed,
            event_details=cast(EventDetails, {"lambdaFunctionFailedEventDetails": details}),
        )

    return from_error
