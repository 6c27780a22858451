"""The Nexus endpoint other namespaces call the `approvals` service through.

An endpoint is a name the cluster routes to a namespace and task queue: callers name only the
endpoint, so the service can move without their code changing. `ensure_endpoint` makes the
endpoint point at this deployment (creating it, or retargeting one left by an earlier run);
`make run` calls it against the dev server, and a real cluster's operator runs the CLI line
`endpoint_command` prints.
"""

from __future__ import annotations

import shlex

from temporalio.api.nexus.v1 import EndpointSpec, EndpointTarget
from temporalio.api.operatorservice.v1 import (
    CreateNexusEndpointRequest,
    ListNexusEndpointsRequest,
    UpdateNexusEndpointRequest,
)
from temporalio.client import Client

DEFAULT_ENDPOINT = "approvals"


def _spec(name: str, namespace: str, task_queue: str) -> EndpointSpec:
    target = EndpointTarget(worker=EndpointTarget.Worker(namespace=namespace, task_queue=task_queue))
    return EndpointSpec(name=name, target=target)


async def ensure_endpoint(client: Client, namespace: str, task_queue: str, name: str = DEFAULT_ENDPOINT) -> str:
    """The endpoint `name` targets `namespace`/`task_queue` afterwards; says what it did."""
    wanted = _spec(name, namespace, task_queue)
    found = await client.operator_service.list_nexus_endpoints(ListNexusEndpointsRequest(name=name))
    if not found.endpoints:
        await client.operator_service.create_nexus_endpoint(CreateNexusEndpointRequest(spec=wanted))
        return "created"
    [endpoint] = found.endpoints
    if endpoint.spec.target == wanted.target:
        return "unchanged"
    await client.operator_service.update_nexus_endpoint(
        UpdateNexusEndpointRequest(id=endpoint.id, version=endpoint.version, spec=wanted)
    )
    return "retargeted"


def endpoint_command(namespace: str, task_queue: str, name: str = DEFAULT_ENDPOINT) -> str:
    """The `temporal` CLI line that creates the same endpoint on any cluster."""
    words = ["temporal", "operator", "nexus", "endpoint", "create", "--name", name]
    words += ["--target-namespace", namespace, "--target-task-queue", task_queue]
    return shlex.join(words)
