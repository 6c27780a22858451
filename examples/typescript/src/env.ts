// Where things are, from the same environment variables the service reads.
import { DEFAULT_APPROVALS_TASK_QUEUE } from './approvals';

export const address = process.env.TEMPORAL_ADDRESS || 'localhost:7233';
export const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
/** The service's task queue, where its worker runs `ApprovalRequest`. */
export const approvalsTaskQueue = process.env.TASK_QUEUE || DEFAULT_APPROVALS_TASK_QUEUE;
/** This example's own task queue. */
export const pipelineTaskQueue = process.env.PIPELINE_TASK_QUEUE || 'ts-release-pipeline';
