// The pipeline's worker, on its own task queue. Stops on SIGINT or SIGTERM.
import { NativeConnection, Worker } from '@temporalio/worker';
import * as activities from './activities';
import { address, namespace, pipelineTaskQueue } from './env';

async function main(): Promise<void> {
  const connection = await NativeConnection.connect({ address });
  try {
    const worker = await Worker.create({
      connection,
      namespace,
      taskQueue: pipelineTaskQueue,
      workflowsPath: require.resolve('./workflows'),
      activities,
    });
    console.log(`worker ready: ${address} ${namespace} ${pipelineTaskQueue}`);
    await worker.run();
  } finally {
    await connection.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
