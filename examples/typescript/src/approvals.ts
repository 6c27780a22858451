// The JSON of the service's `ApprovalRequest` workflow (docs/requests.md): its input and its result.
// Field names are the service's own (snake_case): the default JSON converter sends these objects as
// they are, and the service reads them as its pydantic models.

export const APPROVAL_REQUEST_WORKFLOW = 'ApprovalRequest';
export const DEFAULT_APPROVALS_TASK_QUEUE = 'durable-approvals';

export interface Requester {
  workflow_id?: string;
  run_id?: string;
  agent?: string;
  namespace?: string;
}

export interface ApprovalRequestInput {
  tool: string;
  arguments?: Record<string, unknown>;
  key?: string;
  title?: string;
  context?: string;
  requester?: Requester;
  timeout_seconds?: number;
  rules?: Record<string, unknown>;
  notify?: string[];
  editable?: boolean;
}

export type Decision = 'allow' | 'deny' | 'edit' | 'expired' | 'canceled';

export interface ApprovalResult {
  request_id: string;
  decision: Decision;
  arguments: Record<string, unknown>;
  args_hash: string;
  decided_by: string | null;
  door: string | null;
  reason: string | null;
  decided_at: string | null; // ISO 8601
}

/** allow, or edit (then the result's `arguments` are what may run). */
export function approved(result: ApprovalResult): boolean {
  return result.decision === 'allow' || result.decision === 'edit';
}

/** A request id (1 to 128 letters, digits, `-` or `.`) from the caller's workflow id and its key:
 *  the same caller run again under its id names the same request, which is never asked twice. */
export function requestIdFor(workflowId: string, key: string): string {
  const safe = (text: string) => text.replace(/[^A-Za-z0-9.-]/g, '-');
  return `${safe(workflowId)}.${safe(key)}`.slice(0, 128);
}
