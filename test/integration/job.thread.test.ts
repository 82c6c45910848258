/**
 * Jobs end to end on a MiniCluster with real worker threads: the word count's exact answer, waiting
 * for slots and timing out with the reason, failover after a TaskExecutor dies, a task that always
 * fails, two jobs at once, cancel. Few clusters, generous timeouts, no timing assertions.
 */
import { expect } from 'chai';
import { IllegalStateError } from '../../lib/core/errors.js';
import { MiniCluster } from '../../lib/MiniCluster.js';
import type { JobEvent, JobResult } from '../../lib/jobmaster/JobMaster.js';
import type { JobVertexSpec } from '../../lib/jobmaster/JobGraph.js';
import { countWords, generatedText } from '../../examples/wordcount/text.js';
import { wordCountJob, type WordCountResult } from '../../examples/wordcount/wordCountJob.js';
import { until } from '../support/eventually.js';

const fixture = (name: string) => new URL(`../fixtures/tasks/${name}.ts`, import.meta.url);
const sleepVertex = (
  id: string,
  parallelism: number,
  ms: number,
  extra: Partial<JobVertexSpec> = {},
): JobVertexSpec => ({
  id,
  taskModule: fixture('sleep'),
  parallelism,
  config: { ms },
  ...extra,
});

/** Slots of 1 core and 256 mb heap (the counters of the word count ask 384 mb: dynamic slots). */
const resources = (slots: number) => ({
  cpuCores: slots,
  taskHeapMemory: `${256 * slots}m`,
  managedMemory: `${64 * slots}m`,
  networkMemory: `${32 * slots}m`,
});

describe('jobs on a MiniCluster (worker threads)', function () {
  this.timeout(60_000);

  describe('on a shared cluster of 2 TaskExecutors × 4 slots', () => {
    let cluster: MiniCluster;
    before(async () => {
      cluster = await MiniCluster.start({
        taskExecutors: 2,
        slotsPerTaskExecutor: 4,
        resources: resources(4),
        configuration: { 'restart-strategy.fixed-delay.delay': 0 },
      });
    });
    after(async () => {
      await cluster?.close();
    });

    it('counts the words of a known text exactly', async () => {
      const text = ['The slot and the task.', 'A task, a slot; THE END', '', 'end'];
      const job = await cluster.submitJob(wordCountJob({ input: { text }, parallelism: 3, counters: 2 }));
      const result = await job.result;
      expect(result.status, result.error?.message).to.equal('finished');
      const answer = result.outputs['sink']![0] as WordCountResult;
      expect(answer.counts).to.deep.equal({ the: 3, slot: 2, and: 1, task: 2, a: 2, end: 2 });
      expect(answer.totalWords).to.equal(12);
      expect(answer.top.slice(0, 3)).to.deep.equal([
        ['the', 3],
        ['a', 2],
        ['end', 2],
      ]);
      expect(job.status).to.equal('finished');
    });

    it('runs the demo job and gets what a single loop counts, each subtask in a slot of the cluster', async () => {
      const job = await cluster.submitJob(
        wordCountJob({ input: { lines: 3000, seed: 7 }, parallelism: 2, counters: 2 }),
      );
      const placements = new Map<string, string>();
      job.onEvent((event) => {
        if (event.type === 'task' && event.state === 'running')
          placements.set(`${event.vertexId}#${event.subtaskIndex}`, `${event.resourceId}/${event.allocationId}`);
      });
      const result = await job.result;
      expect(result.status, result.error?.message).to.equal('finished');
      expect((result.outputs['sink']![0] as WordCountResult).counts).to.deep.equal(countWords(generatedText(7, 3000)));
      expect([...placements.keys()].sort()).to.deep.equal([
        'count#0',
        'count#1',
        'sink#0',
        'source#0',
        'source#1',
        'tokenize#0',
        'tokenize#1',
      ]);
      // Slot sharing: tokenize i runs in the slot of its producer source i; the counters (their own group, more heap)
      // elsewhere.
      expect(placements.get('tokenize#0')).to.equal(placements.get('source#0'));
      expect(placements.get('tokenize#1')).to.equal(placements.get('source#1'));
      expect(placements.get('count#0')).not.to.equal(placements.get('source#0'));
      expect(result.restarts).to.equal(0);
    });

    it('runs two jobs at once, each with its own result', async () => {
      const [a, b] = await Promise.all([
        cluster.submitJob(wordCountJob({ name: 'a', input: { text: ['x y x'] } })),
        cluster.submitJob(wordCountJob({ name: 'b', input: { text: ['y z z z'] } })),
      ]);
      expect(a.jobId).not.to.equal(b.jobId);
      expect(cluster.listJobs().filter((j) => j.jobId === a.jobId || j.jobId === b.jobId)).to.have.length(2);
      const [ra, rb] = await Promise.all([a.result, b.result]);
      expect((ra.outputs['sink']![0] as WordCountResult).counts).to.deep.equal({ x: 2, y: 1 });
      expect((rb.outputs['sink']![0] as WordCountResult).counts).to.deep.equal({ y: 1, z: 3 });
      expect(cluster.listJobs().find((j) => j.jobId === a.jobId)?.status).to.equal('finished');
    });

    it('fails a job whose task always throws once its restart attempts are spent, with that task’s error', async () => {
      const job = await cluster.submitJob({
        name: 'always fails',
        vertices: [{ id: 'boom', taskModule: fixture('throws'), parallelism: 1 }],
        restartStrategy: { type: 'fixed-delay', attempts: 2, delay: 0 },
      });
      const attempts: number[] = [];
      job.onEvent((event) => {
        if (event.type === 'task' && event.state === 'failed') attempts.push(event.attemptNumber);
      });
      const result = await job.result;
      expect(result.status).to.equal('failed');
      expect(result.error?.message).to.contain('boom in boom #0');
      expect(result.restarts).to.equal(2);
      expect(attempts).to.deep.equal([0, 1, 2]);
      expect(job.status).to.equal('failed');
    });

    it('cancels a running job: its tasks stop, its slots are freed, the result says canceled', async () => {
      const job = await cluster.submitJob({ name: 'sleepy', vertices: [sleepVertex('sleep', 2, 60_000)] });
      await until(
        'both subtasks running',
        () =>
          cluster
            .overview()
            .taskExecutors.flatMap((te) => te.slots)
            .filter((s) => s.tasks.some((t) => t.includes('(running)'))).length === 2,
      );
      await job.cancel();
      const result = await job.result;
      expect(result.status).to.equal('canceled');
      expect(job.status).to.equal('canceled');
      await until('its slots to be free', () =>
        cluster.overview().taskExecutors.every((te) => te.slots.every((s) => s.jobId !== job.jobId)),
      );
    });

    it(
      'shows the static slots whose resources a dynamic slot ' + 'took as unavailable, and free again once it is gone',
      async () => {
        // 3 of the executor's 4 cores in one dynamic slot: one static slot is still covered, three are not.
        const job = await cluster.submitJob({
          name: 'big',
          vertices: [sleepVertex('big', 1, 60_000, { resources: { cpuCores: 3, taskHeapMemory: '256m' } })],
        });
        const executor = await until('the dynamic slot to run its task', () =>
          cluster
            .overview()
            .taskExecutors.find((te) =>
              te.slots.some((s) => s.slot === 'dynamic' && s.tasks.some((t) => t.includes('(running)'))),
            ),
        );
        expect(executor.slots.filter((s) => s.slot !== 'dynamic').map((s) => s.state)).to.deep.equal([
          'free',
          'unavailable',
          'unavailable',
          'unavailable',
        ]);
        expect(executor.available).to.match(/^ResourceProfile\{cpuCores=1(\.0+)?,/);
        await job.cancel();
        await until('its static slots to be free again', () =>
          cluster
            .overview()
            .taskExecutors.find((te) => te.resourceId === executor.resourceId)!
            .slots.every((s) => s.state === 'free'),
        );
      },
    );
  });

  it('a job that needs more slots than exist waits, saying why, and runs once a TaskExecutor is added', async () => {
    const cluster = await MiniCluster.start({ taskExecutors: 1, slotsPerTaskExecutor: 1, resources: resources(1) });
    try {
      // Two subtasks in different sharing groups: two slots, one TaskExecutor with one.
      const job = await cluster.submitJob({
        name: 'two slots',
        vertices: [sleepVertex('left', 1, 0), sleepVertex('right', 1, 0, { slotSharingGroup: 'other' })],
      });
      const waiting = await until('a pending request', () =>
        cluster.overview().pendingRequests.find((r) => r.jobId === job.jobId),
      );
      expect(waiting.missing).to.equal(1);
      expect(waiting.why).to.be.a('string').and.not.empty;
      await cluster.addTaskExecutor();
      const result = await job.result;
      expect(result.status, result.error?.message).to.equal('finished');
      expect(Object.keys(result.outputs).sort()).to.deep.equal(['left', 'right']);
    } finally {
      await cluster.close();
    }
  });

  it('addTaskExecutor gives up at once when the cluster closes while it waits for the registration', async () => {
    // A start timeout past the test's own: waiting it out would fail the test.
    const cluster = await MiniCluster.start({ taskExecutors: 0, startTimeoutMs: 120_000 });
    const adding = cluster.addTaskExecutor().then(
      () => null,
      (e: unknown) => e,
    );
    await cluster.close();
    expect(await adding)
      .to.be.instanceOf(IllegalStateError)
      .and.to.have.property('message')
      .that.matches(/closed/);
  });

  it('with TaskExecutors on demand: starts the workers a job needs, runs it, and releases them once idle', async () => {
    const cluster = await MiniCluster.start({
      taskExecutors: 'on-demand',
      slotsPerTaskExecutor: 2,
      resources: resources(2),
      configuration: { 'resourcemanager.taskmanager-timeout': '300 ms' },
    });
    try {
      expect(cluster.overview().taskExecutors).to.deep.equal([]);
      // Three sharing groups: three slots, so two workers of two slots.
      const job = await cluster.submitJob({
        name: 'on demand',
        vertices: [
          sleepVertex('a', 1, 0),
          sleepVertex('b', 1, 0, { slotSharingGroup: 'b' }),
          sleepVertex('c', 1, 0, { slotSharingGroup: 'c' }),
        ],
      });
      const executors = new Set<string>();
      job.onEvent((event) => {
        if (event.type === 'task' && event.resourceId !== null) executors.add(event.resourceId);
      });
      const result = await job.result;
      expect(result.status, result.error?.message).to.equal('finished');
      expect(executors.size).to.equal(2);
      await until(
        'the idle workers to be released',
        () => cluster.overview().taskExecutors.length === 0 && cluster.overview().pendingWorkers === 0,
      );
    } finally {
      await cluster.close();
    }
  });

  it('passes the runtime messages of the TaskExecutors on to the cluster’s log, each with its ResourceID', async () => {
    const lines: string[] = [];
    const cluster = await MiniCluster.start({
      taskExecutors: 1,
      slotsPerTaskExecutor: 1,
      resources: resources(1),
      log: (message) => lines.push(message),
    });
    const [executor] = cluster.overview().taskExecutors.map((te) => te.resourceId);
    await cluster.close();
    expect(lines).to.include(`[${executor}] shutting down: the cluster is closing`);
  });

  it('a job asking more than any TaskExecutor can hold fails at once, naming what is short', async () => {
    const cluster = await MiniCluster.start({ taskExecutors: 1, slotsPerTaskExecutor: 1, resources: resources(1) });
    try {
      const job = await cluster.submitJob({
        name: 'too big',
        vertices: [sleepVertex('huge', 1, 0, { resources: { cpuCores: 8 } })],
      });
      const result = await job.result;
      expect(result.status).to.equal('failed');
      expect(result.error).to.include({ _tag: 'SlotRequestError', reason: 'never-satisfiable' });
      expect(result.error?.message).to.match(
        /the registered TaskExecutor falls short \(taskexecutor-\S+: cpuCores has 1, asked 8\); none is started on/,
      );
    } finally {
      await cluster.close();
    }
  });

  it('a job whose slots do not come in slot.request.timeout fails with the SlotManager’s reason', async () => {
    const cluster = await MiniCluster.start({
      taskExecutors: 1,
      slotsPerTaskExecutor: 1,
      resources: resources(1),
      configuration: { 'slot.request.timeout': '1 s' },
    });
    try {
      // 'left' holds the only slot (the whole core) for 10 s; 'right' asks for half a core, which
      // that slot cannot serve (a slot serves its own profile or UNKNOWN) and no executor has free.
      const job = await cluster.submitJob({
        name: 'two slots',
        vertices: [
          sleepVertex('left', 1, 10_000),
          sleepVertex('right', 1, 10_000, {
            slotSharingGroup: 'other',
            resources: { cpuCores: 0.5, taskHeapMemory: '64m' },
          }),
        ],
      });
      const result = await job.result;
      expect(result.status).to.equal('failed');
      expect(result.error?.message).to.match(/1 × ResourceProfile\{cpuCores=0\.5/);
      await until('the slot of the job to be freed', () =>
        cluster.overview().taskExecutors.every((te) => te.slots.every((s) => s.state === 'free')),
      );
    } finally {
      await cluster.close();
    }
  });

  it(
    'a TaskExecutor terminated mid-job: its subtasks restart ' + 'elsewhere and the job finishes with the right result',
    async () => {
      const cluster = await MiniCluster.start({
        taskExecutors: 2,
        slotsPerTaskExecutor: 2,
        resources: resources(2),
        configuration: { 'restart-strategy.fixed-delay.delay': 0 },
      });
      try {
        const job = await cluster.submitJob({
          name: 'failover',
          vertices: [sleepVertex('first', 2, 0), sleepVertex('slow', 2, 1_500), sleepVertex('last', 1, 0)],
          edges: [
            { from: 'first', to: 'slow', pattern: 'pointwise' },
            { from: 'slow', to: 'last', pattern: 'all-to-all' },
          ],
          restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 0 },
        });
        const events: JobEvent[] = [];
        job.onEvent((event) => events.push(event));
        const running = await until('slow#0 running', () =>
          events.find(
            (e): e is Extract<JobEvent, { type: 'task' }> =>
              e.type === 'task' && e.vertexId === 'slow' && e.subtaskIndex === 0 && e.state === 'running',
          ),
        );
        expect(cluster.killTaskExecutor(running.resourceId!)).to.equal(true);
        const result: JobResult = await job.result;
        expect(result.status, result.error?.message).to.equal('finished');
        expect(result.restarts).to.be.greaterThan(0);
        const last = result.outputs['last']![0] as {
          inputs: { slow: Array<{ subtask: number; inputs: { first: Array<{ subtask: number }> } }> };
        };
        expect(last.inputs.slow.map((s) => s.subtask)).to.deep.equal([0, 1]);
        expect(last.inputs.slow.map((s) => s.inputs.first.map((f) => f.subtask))).to.deep.equal([[0], [1]]);
        const retried = events.filter(
          (e) => e.type === 'task' && e.vertexId === 'slow' && e.subtaskIndex === 0 && e.state === 'running',
        );
        expect(retried.length).to.be.greaterThan(1);
        expect((retried.at(-1) as Extract<JobEvent, { type: 'task' }>).resourceId).not.to.equal(running.resourceId);
      } finally {
        await cluster.close();
      }
    },
  );
});
