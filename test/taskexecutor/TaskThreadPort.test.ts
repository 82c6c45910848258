/**
 * A slot's batches go to its thread on the thread's own port (TaskThreadPort.ts), not through
 * piscina's `run`: what piscina would have told the call a thread held — its uncaught error, its
 * destruction as the pool closed — reaches the run on that thread, and a thread keeps its port
 * from one slot to the next. Real threads (SlotTaskPool.test.ts has the rest of a pool's behaviour).
 */
import { expect } from 'chai';
import { fileURLToPath } from 'node:url';
import type { Piscina } from 'piscina';
import { TaskExecutionError } from '../../lib/core/errors.js';
import { AllocationID, ExecutionAttemptID, JobID } from '../../lib/core/ids.js';
import { SlotTaskPool, type SlotTaskPoolLogEntry, type TaskInvocation } from '../../lib/taskexecutor/SlotTaskPool.js';
import { createTaskThreads, threadsReady } from '../../lib/taskexecutor/taskThreads.js';
import { attachThread, threadPortOf } from '../../lib/taskexecutor/TaskThreadPort.js';
import type { ThreadAfterJobs } from '../../lib/taskexecutor/taskThreadProtocol.js';
import { eventually } from '../support/eventually.js';

const jobId = JobID.generate();

function invocation(module: string, config?: unknown): TaskInvocation {
  return {
    taskModule: fileURLToPath(new URL(`../fixtures/tasks/${module}.ts`, import.meta.url)),
    context: {
      jobId,
      jobName: 'task-thread-port-test',
      vertexId: `v-${module}`,
      vertexName: module,
      subtaskIndex: 0,
      parallelism: 1,
      attemptNumber: 0,
      executionAttemptId: ExecutionAttemptID.generate({ vertex: module, subtask: 0, attempt: 0 }),
      allocationId: AllocationID.generate().toString(),
    },
    inputs: [1],
    config,
    memory: null,
  };
}

async function rejection(promise: Promise<unknown>): Promise<TaskExecutionError> {
  try {
    await promise;
  } catch (error) {
    expect(error, String(error)).to.be.instanceOf(TaskExecutionError);
    return error as TaskExecutionError;
  }
  throw new Error('expected the run to fail');
}

describe('TaskThreadPort (real threads)', function () {
  this.timeout(30_000);

  it('fails the run whose thread an uncaught error ended (no pool error); the next gets a new thread', async () => {
    const logs: SlotTaskPoolLogEntry[] = [];
    const pool = new SlotTaskPool({ name: 'slot-stray', log: (entry) => logs.push(entry) });
    try {
      await pool.run(invocation('ok'));
      const [before] = pool.threadIds();
      const error = await rejection(pool.run(invocation('strayThrow', { throwAfterMs: 10, returnAfterMs: 2_000 })));
      expect(error.reason).to.equal('thread-exited');
      expect(error.message).to.contain('lost its thread to an uncaught TypeError: a stray timer of the task threw');
      expect((await pool.run(invocation('ok'))).output).to.have.property('sum', 1);
      expect(pool.threadIds()).to.have.length(1).and.not.include(before);
      expect(pool.stats).to.include({ poolErrors: 0, failed: 1, completed: 2 });
      expect(logs.filter((entry) => entry.source === 'pool')).to.deep.equal([]);
    } finally {
      await pool.close();
    }
  });

  it('counts and logs an uncaught error that comes while no run is out on the thread, and runs the next', async () => {
    const logs: SlotTaskPoolLogEntry[] = [];
    const pool = new SlotTaskPool({ name: 'slot-idle-stray', log: (entry) => logs.push(entry) });
    try {
      const result = await pool.run(invocation('strayThrow', { throwAfterMs: 50, returnAfterMs: 0 }));
      expect(result.output).to.equal('returned');
      await eventually(() => pool.stats.poolErrors === 1, 'the stray error as a pool error');
      const [entry] = logs.filter((e) => e.source === 'pool');
      expect(entry?.message).to.contain(
        'pool error (no task to receive it): TypeError: a stray timer of the task threw',
      );
      expect((await pool.run(invocation('ok'))).output).to.have.property('sum', 1);
    } finally {
      await pool.close();
    }
  });

  it('gives the next pool on a thread none of the log lines a run of the pool before left behind', async () => {
    const threads = createTaskThreads({ onError: () => {} }) as Piscina;
    await threadsReady(threads);
    const firstLogs: SlotTaskPoolLogEntry[] = [];
    const first = new SlotTaskPool({
      name: 'slot-late-first',
      log: (entry) => firstLogs.push(entry),
      threads,
      returnThreads: () => {},
    });
    expect((await first.run(invocation('logsLate', { afterMs: 100 }))).output).to.equal('returned');
    await first.close();
    const logs: SlotTaskPoolLogEntry[] = [];
    const second = new SlotTaskPool({ name: 'slot-late-second', log: (entry) => logs.push(entry), threads });
    try {
      // Its first run has the number the late line names (run numbers are per pool), and runs while it comes.
      expect((await second.run(invocation('sleep', { ms: 300 }))).output).to.have.property('subtask', 0);
      expect(logs.map((entry) => entry.message)).to.deep.equal([]);
      expect(firstLogs.map((entry) => entry.message)).to.deep.equal([]);
    } finally {
      await second.close();
    }
  });

  it('cancels a run whose pool is closed under it (pool-closed), not as a thread that exited', async () => {
    const pool = new SlotTaskPool({ name: 'slot-closed' });
    const running = rejection(pool.run(invocation('sleep', { ms: 5_000 })));
    await eventually(() => pool.stats.running === 1, 'the run to start');
    await pool.close();
    const error = await running;
    expect(error.reason).to.equal('canceled');
    expect(error.details).to.include({ stoppedBy: 'pool-closed' });
  });

  it('attaches a booting thread once for everyone who asks meanwhile (a spare taken before it was ready)', async () => {
    const threads = createTaskThreads({ onError: () => {} }) as Piscina;
    const pool = new SlotTaskPool({ name: 'slot-booting', log: () => {}, threads });
    try {
      // The reserve's readiness call and the pool's first run both need the thread's port.
      const [ready, run] = await Promise.all([attachThread(threads), pool.run(invocation('ok'))]);
      expect(run.output).to.have.property('sum', 1);
      // One port: a second attach would have closed the first on the thread's side.
      expect(threadPortOf(threads)).to.equal(ready);
    } finally {
      await pool.close();
    }
  });

  it('keeps a thread’s port from one slot to the next: given back, it serves the next pool on that port', async () => {
    const errors: unknown[] = [];
    const threads = createTaskThreads({ onError: (error) => errors.push(error) }) as Piscina;
    await threadsReady(threads);
    const port = threadPortOf(threads);
    expect(port, 'attached as it became ready').to.not.equal(undefined);
    let given: { threads: Piscina; after: ThreadAfterJobs | null } | undefined;
    const first = new SlotTaskPool({
      name: 'slot-first',
      log: () => {},
      threads,
      returnThreads: (back, after) => (given = { threads: back, after }),
    });
    expect((await first.run(invocation('ok'))).output).to.have.property('sum', 1);
    expect((await first.run(invocation('leavesTimer'))).output).to.equal('left a timer');
    const [thread] = first.threadIds();
    await first.close();
    // What the thread held as it went idle after its last batch (no message for the give-back).
    expect(given?.threads).to.equal(threads);
    expect(given?.after?.leftRunning).to.deep.equal(['Timeout']);
    expect(given?.after?.heapUsedBytes).to.be.greaterThan(0);
    const second = new SlotTaskPool({ name: 'slot-second', log: () => {}, threads });
    try {
      expect((await second.run(invocation('ok'))).output).to.have.property('sum', 1);
      expect(second.threadIds()).to.deep.equal([thread]);
      expect(threadPortOf(threads)).to.equal(port);
      expect(errors).to.deep.equal([]);
    } finally {
      await second.close();
    }
  });
});
