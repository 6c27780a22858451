// Workflow code: runs in the worker's sandbox, bundled at worker start from `workflowsPath`.
import { executeChild, ParentClosePolicy, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type * as activities from './activities';
import {
  APPROVAL_REQUEST_WORKFLOW,
  approved,
  type ApprovalRequestInput,
  type ApprovalResult,
  requestIdFor,
} from './approvals';

const { deploy } = proxyActivities<typeof activities>({ startToCloseTimeout: '1 minute' });

export interface DeployJob {
  service: string;
  version: string;
  approvalsTaskQueue: string; // the service's TASK_QUEUE: workflow code reads no environment
  timeoutSeconds?: number;
}

export interface DeployOutcome {
  decision: ApprovalResult['decision'];
  reason: string | null;
  decided_by: string | null;
  request_id: string;
  ran: boolean;
  summary: string; // "ran: ..." or "not run: deny (reason)"
}

/** Asks a person before deploying; deploys only on allow or edit, with the approved arguments. */
export async function deployWithApproval(job: DeployJob): Promise<DeployOutcome> {
  const info = workflowInfo();
  const key = 'deploy';
  const input: ApprovalRequestInput = {
    tool: 'deploy',
    arguments: { service: job.service, version: job.version },
    key,
    title: `Deploy ${job.service} ${job.version}`,
    context: 'the release pipeline reached its deploy step',
    requester: {
      workflow_id: info.workflowId,
      run_id: info.runId,
      agent: 'ts-release-pipeline',
      namespace: info.namespace,
    },
    ...(job.timeoutSeconds ? { timeout_seconds: job.timeoutSeconds } : {}),
  };
  const approval = await executeChild<(input: ApprovalRequestInput) => Promise<ApprovalResult>>(
    APPROVAL_REQUEST_WORKFLOW,
    {
      args: [input],
      taskQueue: job.approvalsTaskQueue,
      workflowId: requestIdFor(info.workflowId, key),
      // This workflow cancelled or gone: its request is cancelled too (it reads `canceled` in the inbox).
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    },
  );
  const outcome = {
    decision: approval.decision,
    reason: approval.reason,
    decided_by: approval.decided_by,
    request_id: approval.request_id,
  };
  if (!approved(approval)) {
    const why = approval.reason ? ` (${approval.reason})` : '';
    return { ...outcome, ran: false, summary: `not run: ${approval.decision}${why}` };
  }
  const done = await deploy(approval.arguments);
  return { ...outcome, ran: true, summary: `ran: ${done}` };
}
