"""The CDK app: the AWS deployment of s3bulk."""
