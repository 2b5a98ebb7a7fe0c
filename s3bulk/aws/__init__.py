"""The distributed job on AWS: its steps (validation, lister, worker, completion, finish), the DynamoDB job ledger, SQS, messages, the report bucket, the allow-list.

`env` builds these from the Lambda's environment; `remote` is the CLI's view of a
deployed stack (submit, status, report).
"""

DEFAULT_STACK = "S3Bulk"  # the CloudFormation stack `cdk deploy` creates unless deploy.json names another
