"""The S3 side of the store port: the client factory, the boto3 store, the fast request path, rate control.

Only this package builds S3 clients or speaks S3's wire protocol; the rest of s3bulk
sees `s3bulk.store.ObjectStore`.
"""
