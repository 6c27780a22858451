"""A second namespace on the same dev server, as another team's: registered, waited for, and a
client on it (the tests and the bench both call the `approvals` service from one)."""

from __future__ import annotations

import uuid

from google.protobuf.duration_pb2 import Duration
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest, RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.converter import DataConverter

from tests.support.helpers import eventually


async def register_namespace(client: Client, prefix: str = "callers") -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    request = RegisterNamespaceRequest(namespace=name, workflow_execution_retention_period=Duration(seconds=86400))
    await client.workflow_service.register_namespace(request)

    async def registered() -> bool:
        await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=name))
        return True

    await eventually(registered)
    return name


def client_on(client: Client, namespace: str, converter: DataConverter) -> Client:
    """The same connection, another namespace and converter."""
    config = client.config()
    config["namespace"], config["data_converter"] = namespace, converter
    return Client(**config)
