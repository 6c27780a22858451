"""The sandbox the workflows run in: the workers' and the replayers' alike.

The SDK's sandbox enters a workflow's sandbox by executing a short source string, with its import
restrictions applied, for every activation and again, up to five times, for every payload of an
activation or its completion: to ask the workflow's state which serialization context and which
external-storage target the payload belongs to. Executing a string compiles it each time. In a
profile of the latency bench those lookups were 12% of the worker's busy CPU, more than the
conversation's own code, half of it compiling. The runner here:

- hands the sandbox each entry string compiled once;
- asks the two lookups of the sandboxed instance directly. They read the instance's pending
  commands and build plain values (no import, no I/O, nothing the restrictions guard), so applying
  the restrictions around them protects nothing.

Activations still run inside the restrictions, exactly as the SDK runs them. This leans on the
sandbox's internals of the temporalio release pinned in pyproject.toml;
tests/durability/test_workflow_sandbox.py checks the contexts against the SDK's own runner.

The workflows' own package is passed through rather than loaded again for every workflow run: its
modules hold constants and classes only (their state lives in each workflow's instance), and the
reload was 8% of a restarted worker's CPU while it took over 1,000 waiting conversations (bench
recovery, profiled).
"""

from __future__ import annotations

import functools
from types import CodeType
from typing import Any

from temporalio.converter import SerializationContext, StorageDriverStoreContext
from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails
from temporalio.worker._command_aware_visitor import CommandInfo
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions
from temporalio.worker.workflow_sandbox._runner import _Instance


@functools.lru_cache(maxsize=64)
def compiled(source: str) -> CodeType:
    """The sandbox's few entry strings (one per workflow class, activation, context lookup)."""
    return compile(source, "<string>", "exec")


class _CompiledOnceInstance(_Instance):
    def _run_code(self, code: str, **extra_globals: Any) -> None:
        super()._run_code(compiled(code), **extra_globals)  # type: ignore[arg-type]  # exec takes either

    def get_serialization_context(self, command_info: CommandInfo | None) -> SerializationContext | None:
        context: SerializationContext | None = self._sandboxed.get_serialization_context(command_info)
        return context

    def get_external_store_context(self, command_info: CommandInfo | None) -> StorageDriverStoreContext:
        context: StorageDriverStoreContext = self._sandboxed.get_external_store_context(command_info)
        return context

    @property
    def _sandboxed(self) -> Any:
        """The SDK's in-sandbox instance (temporalio.worker.workflow_sandbox._in_sandbox.InSandbox)."""
        return self.globals_and_locals["__temporal_in_sandbox"]


class CompiledOnceSandboxRunner(SandboxedWorkflowRunner):
    """SandboxedWorkflowRunner whose instances compile each entry string once per process and look
    up a payload's contexts without entering the sandbox."""

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        return _CompiledOnceInstance(det, self.runner_class, self.restrictions)


def runner_passing_through(*packages: str) -> CompiledOnceSandboxRunner:
    """The runner, with these packages of workflow code passed through as `workflows` is."""
    return CompiledOnceSandboxRunner(restrictions=SandboxRestrictions.default.with_passthrough_modules(*packages))


WORKFLOW_RUNNER = runner_passing_through("workflows")
