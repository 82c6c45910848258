/**
 * Speculative execution on a real MiniCluster (thread mode): a subtask whose first attempt sleeps 25× longer than
 * its siblings is overtaken by a speculative attempt on the other TaskExecutor; the job's result is the one it has
 * without speculation, every output counted once, and the attempt that lost stops and gives its slot back.
 */
import { expect } from 'chai';
import { describeJobs } from '../../lib/dashboard/jobDetails.js';
import type { JobEvent } from '../../lib/jobmaster/JobMaster.js';
import type { JobGraphSpec } from '../../lib/jobmaster/JobGraph.js';
import { MiniCluster } from '../../lib/MiniCluster.js';

type TaskEvent = Extract<JobEvent, { type: 'task' }>;

const straggler = new URL('../fixtures/tasks/straggler.ts', import.meta.url);

/**
 * `work` (8 subtasks of 200 ms, subtask 3's first attempt 5 s: room for the speculative attempt to be detected,
 * placed and run on a loaded machine) read whole by one `sink`.
 */
const job = (scheduler: 'default' | 'adaptive'): JobGraphSpec => ({
  name: `stragglers (${scheduler})`,
  scheduler,
  vertices: [
    { id: 'work', taskModule: straggler, parallelism: 8, config: { ms: 200, stragglers: [3], slowdown: 25 } },
    { id: 'sink', taskModule: straggler, parallelism: 1, config: { ms: 0 } },
  ],
  edges: [{ from: 'work', to: 'sink', pattern: 'all-to-all' }],
});

describe('speculative execution (thread mode)', function () {
  this.timeout(60_000);
  let cluster: MiniCluster;

  before(async () => {
    cluster = await MiniCluster.start({
      taskExecutors: 2,
      slotsPerTaskExecutor: 4,
      mode: 'thread',
      configuration: {
        'jobmanager.scheduler': 'adaptive',
        'execution.batch.speculative.enabled': true,
        'slow-task-detector.check-interval': '50 ms',
        'slow-task-detector.execution-time.baseline-lower-bound': 0,
        // Slow is 5× the median (1 s for these 200 ms subtasks), not Flink's 1.5×: on a loaded machine a sibling
        // delayed by 100 ms (a cold thread, a collection) was speculated on too.
        'slow-task-detector.execution-time.baseline-multiplier': 5,
        'execution.batch.speculative.block-slow-node-duration': '1 s',
      },
    });
  });
  after(async () => {
    await cluster?.close();
  });

  it('overtakes the straggler on the other TaskExecutor; the result is the one without speculation', async () => {
    // Without speculation (a job of the default scheduler): the straggler runs its 5 s.
    const plain = await cluster.submitJob(job('default'));
    const plainEvents: TaskEvent[] = [];
    plain.onEvent((e) => e.type === 'task' && plainEvents.push(e));
    const expected = await plain.result;
    expect(expected.status, expected.error?.message).to.equal('finished');
    expect(plainEvents.some((e) => e.speculative)).to.equal(false);

    const speculative = await cluster.submitJob(job('adaptive'));
    const events: TaskEvent[] = [];
    speculative.onEvent((e) => e.type === 'task' && events.push(e));
    const result = await speculative.result;
    expect(result.status, result.error?.message).to.equal('finished');
    expect(result.outputs).to.deep.equal(expected.outputs);
    // Every work subtask's output reached the sink once.
    const [sink] = result.outputs['sink'] as Array<{ read: Array<{ subtask: number }> }>;
    expect(sink!.read.map((r) => r.subtask)).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7]);

    const of3 = events.filter((e) => e.vertexId === 'work' && e.subtaskIndex === 3);
    const original = of3.filter((e) => e.attemptNumber === 0);
    const extra = of3.filter((e) => e.speculative);
    expect(extra.map((e) => e.state)).to.include.members(['scheduled', 'deploying', 'running']);
    const slowExecutor = original.find((e) => e.resourceId !== null)!.resourceId;
    const otherExecutor = extra.find((e) => e.resourceId !== null)!.resourceId;
    expect(otherExecutor).to.not.equal(slowExecutor);
    // The speculative attempt finished first: it is the subtask's; the original was canceled.
    expect(of3.find((e) => e.state === 'finished')).to.include({ attemptNumber: 1, resourceId: otherExecutor });
    expect(original.at(-1)!.state).to.equal('canceled');
    expect(events.filter((e) => e.state === 'finished' && e.vertexId === 'work')).to.have.length(8);
    const page = describeJobs(cluster.dispatcher).find((j) => j.jobId === speculative.jobId)!;
    const subtask3 = page.vertices[0]!.subtasks[3]!;
    expect(subtask3).to.include({ attempt: 1, state: 'finished', resourceId: otherExecutor });
    expect(subtask3.priorAttempts.map((a) => [a.attempt, a.state, a.resourceId])).to.deep.equal([
      [0, 'canceled', slowExecutor],
    ]);
    // Flink's metrics of it: one speculative attempt that won, no subtask speculating any more.
    const jobs = (await cluster.metrics()).jobs;
    expect(jobs.find((j) => j.jobId === speculative.jobId)).to.include({
      numEffectiveSpeculativeExecutions: 1,
      numSlowExecutionVertices: 0,
    });
    expect(jobs.find((j) => j.jobId === plain.jobId)).to.include({ numEffectiveSpeculativeExecutions: 0 });

    // The canceled attempt stops and nothing of the job is left on the TaskExecutors.
    for (;;) {
      const metrics = await cluster.taskExecutorMetrics();
      if (metrics.every((m) => m.runningTasks === 0 && m.slots.active + m.slots.allocated === 0)) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  });
});
