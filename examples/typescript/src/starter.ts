// Starts one pipeline run and prints its outcome as JSON:
//   node lib/starter.js --service api --version 1.4.2 [--workflow-id ID] [--timeout-seconds N]
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { requestIdFor } from './approvals';
import { address, approvalsTaskQueue, namespace, pipelineTaskQueue } from './env';
import { deployWithApproval } from './workflows';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      service: { type: 'string', default: 'api' },
      version: { type: 'string', default: '1.0.0' },
      'workflow-id': { type: 'string' },
      'timeout-seconds': { type: 'string' },
    },
  });
  const workflowId = values['workflow-id'] ?? `release-${Date.now()}`;
  const connection = await Connection.connect({ address });
  try {
    const client = new Client({ connection, namespace });
    const handle = await client.workflow.start(deployWithApproval, {
      args: [
        {
          service: values.service!,
          version: values.version!,
          approvalsTaskQueue,
          timeoutSeconds: values['timeout-seconds'] ? Number(values['timeout-seconds']) : undefined,
        },
      ],
      taskQueue: pipelineTaskQueue,
      workflowId,
    });
    console.error(`started ${handle.workflowId}; approval request ${requestIdFor(workflowId, 'deploy')}`);
    console.log(JSON.stringify(await handle.result()));
  } finally {
    await connection.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
