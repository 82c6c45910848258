// Starts a cluster of 2 TaskExecutors (worker threads) × 2 slots, runs a job of 4 + 1 subtasks,
// prints its result and closes the cluster (the process then exits by itself).
import { MiniCluster } from '../../lib/index.js';

const cluster = await MiniCluster.start({ taskExecutors: 2, slotsPerTaskExecutor: 2 });
try {
  const job = await cluster.submitJob({
    name: 'sum of squares',
    vertices: [
      {
        id: 'square',
        taskModule: new URL('./square.ts', import.meta.url),
        parallelism: 4,
        config: { from: 1, to: 100 },
      },
      {
        id: 'sum',
        taskModule: new URL('./sum.ts', import.meta.url),
        parallelism: 1,
        resources: { cpuCores: 0.5, taskHeapMemory: '64m' },
      },
    ],
    edges: [{ from: 'square', to: 'sum', pattern: 'all-to-all' }],
    restartStrategy: { type: 'fixed-delay', attempts: 2, delay: '1 s' },
  });
  job.onEvent((event) => {
    if (event.type === 'task' && event.state === 'running')
      console.log(`${event.vertexId}#${event.subtaskIndex} runs on ${event.resourceId}`);
  });
  const result = await job.result;
  console.log(result.status, result.outputs['sum']); // finished [ 338350 ]
} finally {
  await cluster.close();
}
