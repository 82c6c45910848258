/**
 * SlotTaskPool on real worker threads. One pool (64 MB task heap) serves every failure mode in
 * turn, which also shows that a failed attempt leaves the pool working; a second, unlimited pool
 * checks the no-limit probe. A `.ts` thread costs ~200 ms to start under tsx, so pools are reused.
 */
import { expect } from 'chai';
import { fileURLToPath } from 'node:url';
import {
  IllegalArgumentError,
  IllegalStateError,
  isSlotwiseError,
  reviveError,
  TaskExecutionError,
  type SerializedSlotwiseError,
} from '../../lib/core/errors.js';
import { AllocationID, ExecutionAttemptID, JobID } from '../../lib/core/ids.js';
import { MemoryManager } from '../../lib/taskexecutor/MemoryManager.js';
import { SlotTaskPool, type SlotTaskPoolLogEntry, type TaskInvocation } from '../../lib/taskexecutor/SlotTaskPool.js';
import { eventually } from '../support/eventually.js';

const task = (name: string) => fileURLToPath(new URL(`../fixtures/tasks/${name}.ts`, import.meta.url));

const jobId = JobID.generate();
const allocationId = AllocationID.generate();

function invocation(
  module: string,
  options: {
    inputs?: unknown;
    config?: unknown;
    memory?: TaskInvocation['memory'];
    vertexName?: string;
    subtaskIndex?: number;
  } = {},
): TaskInvocation {
  const vertexName = options.vertexName ?? module;
  const subtaskIndex = options.subtaskIndex ?? 0;
  return {
    taskModule: task(module),
    context: {
      jobId,
      jobName: 'slot-task-pool-test',
      vertexId: `v-${vertexName}`,
      vertexName,
      subtaskIndex,
      parallelism: 2,
      attemptNumber: 0,
      executionAttemptId: ExecutionAttemptID.generate({ vertex: vertexName, subtask: subtaskIndex, attempt: 0 }),
      allocationId,
    },
    inputs: options.inputs ?? null,
    config: options.config,
    memory: options.memory ?? null,
  };
}

/** Awaits `promise`, expects a TaskExecutionError with `reason`, and returns it. */
async function failsWith(promise: Promise<unknown>, reason: string): Promise<TaskExecutionError> {
  try {
    await promise;
  } catch (error) {
    expect(error, String(error)).to.be.instanceOf(TaskExecutionError);
    expect((error as TaskExecutionError).reason, (error as Error).message).to.equal(reason);
    return error as TaskExecutionError;
  }
  return expect.fail(`expected TaskExecutionError '${reason}', but the run resolved`);
}

/** Resolves once a task log line matching `pattern` arrives. */
function logged(entries: SlotTaskPoolLogEntry[], pattern: RegExp, timeoutMs = 10_000): Promise<SlotTaskPoolLogEntry> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const poll = () => {
      const hit = entries.find((e) => e.source === 'task' && pattern.test(e.message));
      if (hit !== undefined) resolve(hit);
      else if (Date.now() > deadline) reject(new Error(`no task log matching ${pattern} within ${timeoutMs} ms`));
      else setTimeout(poll, 5);
    };
    poll();
  });
}

// A process-wide --max-old-space-size (command line or NODE_OPTIONS) silently replaces every
// thread's maxOldGenerationSizeMb: the heap-limit tests would then see the process's limit (the
// hog takes far longer to die, checkHeapLimit reports enforced: false). They skip in that case.
const processWideHeapFlag = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((arg) =>
  arg.startsWith('--max-old-space-size'),
);

describe('SlotTaskPool (real threads)', function () {
  this.timeout(30_000);

  const logs: SlotTaskPoolLogEntry[] = [];
  let pool: SlotTaskPool;

  before(() => {
    pool = new SlotTaskPool({ name: 'slot-0', heapLimitMb: 64, cancelGraceMs: 300, log: (entry) => logs.push(entry) });
  });

  after(async () => {
    await pool.close();
  });

  it('runs a task with its context, inputs and config, and returns its output and its logs', async () => {
    const inv = invocation('ok', { inputs: [1, 2, 3, 4], config: { factor: 3 }, subtaskIndex: 1 });
    const result = await pool.run(inv);
    expect(result.leakedPagesReleased).to.equal(0);
    expect(result.output).to.deep.equal({
      sum: 10,
      config: { factor: 3 },
      seen: inv.context,
      hasMemoryManager: false,
      signalAborted: false,
    });
    const line = logs.find((e) => e.source === 'task' && e.executionAttemptId === inv.context.executionAttemptId);
    expect(line).to.include({
      level: 'info',
      pool: 'slot-0',
      message: 'summing 4 inputs',
      vertexName: 'ok',
      subtaskIndex: 1,
    });
    expect(pool.stats).to.include({ running: 0, queued: 0, poolErrors: 0 });
  });

  it('fails a task that throws with "threw", its message, code and stack; the pool runs the next task', async () => {
    const inv = invocation('throws', { vertexName: 'mapper', subtaskIndex: 1 });
    const error = await failsWith(pool.run(inv), 'threw');
    expect(error.message).to.contain('mapper (2/2) attempt 0').and.contain('threw: RangeError: boom in mapper #1');
    expect(error.details).to.include({
      executionAttemptId: inv.context.executionAttemptId,
      vertexName: 'mapper',
      cause: 'boom in mapper #1',
      causeName: 'RangeError',
      code: 'E_BOOM',
    });
    expect(error.details.stack).to.be.a('string').and.contain('throws.ts');
    // It crosses to the JobMaster as its wire form.
    const revived = reviveError(structuredClone(error.toJSON()) as SerializedSlotwiseError);
    expect(revived).to.be.instanceOf(TaskExecutionError);
    expect((await pool.run(invocation('ok', { inputs: [5] }))).output).to.have.property('sum', 5);
  });

  it(
    'fails a task over its heap limit with "out-of-memory"; ' +
      'the thread is replaced and the pool runs the next task',
    async function () {
      if (processWideHeapFlag) this.skip();
      const error = await failsWith(pool.run(invocation('heapHog')), 'out-of-memory');
      expect(error.details).to.include({ code: 'ERR_WORKER_OUT_OF_MEMORY', heapLimitMb: 64 });
      expect(error.message).to.contain("thread's limit is 64 MB");
      expect((await pool.run(invocation('ok', { inputs: [7] }))).output).to.have.property('sum', 7);
      expect(pool.stats.threads).to.equal(1);
    },
  );

  it('fails a task that calls process.exit with "thread-exited"; the pool runs the next task', async () => {
    const error = await failsWith(pool.run(invocation('exits')), 'thread-exited');
    expect(error.details).to.include({ exitCode: 1, cause: 'worker exited with code: 1' });
    expect((await pool.run(invocation('ok', { inputs: [1] }))).output).to.have.property('sum', 1);
  });

  describe('cancel', () => {
    it('stops a cooperative task through its context.signal, well before the grace period', async () => {
      const controller = new AbortController();
      const inv = invocation('spin', { config: { cooperative: true, checkEvery: 10_000 } });
      const run = pool.run(inv, { signal: controller.signal });
      await logged(logs, /spinning cooperatively/);
      expect(pool.stats.running).to.equal(1);
      const threadsBefore = pool.threadIds();
      controller.abort('job canceled');
      const error = await failsWith(run, 'canceled');
      // The task stopped itself (no forced stop after the 300 ms grace).
      expect(error.details).to.include({ stoppedBy: 'cooperative' });
      expect(error.message).to.contain('canceled (job canceled)').and.contain('AbortError: job canceled');
      expect(pool.threadIds()).to.deep.equal(threadsBefore); // same thread: nothing was terminated
    });

    it('terminates a task that ignores its signal after the grace period', async () => {
      const controller = new AbortController();
      const run = pool.run(invocation('spin', { config: { cooperative: false } }), { signal: controller.signal });
      await logged(logs, /spinning forever/);
      const t0 = Date.now();
      controller.abort('slot freed');
      const error = await failsWith(run, 'canceled');
      const took = Date.now() - t0;
      // Never before the grace period (a lower bound holds however loaded the machine is).
      expect(took).to.be.at.least(290);
      expect(error.details).to.include({ stoppedBy: 'forced', graceMs: 300 });
      expect(
        logs.some((e) => e.source === 'pool' && e.level === 'warn' && /did not stop within 300 ms/.test(e.message)),
      ).to.equal(true);
      expect((await pool.run(invocation('ok', { inputs: [2] }))).output).to.have.property('sum', 2);
    });

    it('cancels a queued task without running it, and one whose signal had already fired', async () => {
      const blocker = new AbortController();
      const running = pool.run(invocation('spin', { config: { cooperative: true } }), { signal: blocker.signal });
      const queuedController = new AbortController();
      const queued = pool.run(invocation('ok'), { signal: queuedController.signal });
      expect(pool.stats.queued).to.be.at.least(1);
      queuedController.abort();
      expect((await failsWith(queued, 'canceled')).details).to.include({ stoppedBy: 'before-start' });
      expect(
        (await failsWith(pool.run(invocation('ok'), { signal: AbortSignal.abort('too late') }), 'canceled')).message,
      ).to.contain('too late');
      blocker.abort();
      await failsWith(running, 'canceled');
    });

    it(
      'cancels by ExecutionAttemptID as its signal would: a running run ' +
        'stops cooperatively, a queued one never runs, an unknown one is refused',
      async () => {
        const spinning = invocation('spin', { config: { cooperative: true, checkEvery: 10_000 } });
        const running = pool.run(spinning);
        const queuedInvocation = invocation('ok');
        const queued = pool.run(queuedInvocation);
        // Its own log line (earlier tests logged the same words).
        const id = spinning.context.executionAttemptId;
        await eventually(
          () => logs.some((e) => e.executionAttemptId === id && /spinning cooperatively/.test(e.message)),
          'the spinning run to start',
        );
        expect(pool.cancel(queuedInvocation.context.executionAttemptId, 'job canceled')).to.equal(true);
        expect((await failsWith(queued, 'canceled')).details).to.include({ stoppedBy: 'before-start' });
        expect(pool.cancel(spinning.context.executionAttemptId, 'slot freed')).to.equal(true);
        const error = await failsWith(running, 'canceled');
        expect(error.details).to.include({ stoppedBy: 'cooperative' });
        expect(error.message).to.contain('canceled (slot freed)');
        // Settled: nothing left to cancel.
        expect(pool.cancel(spinning.context.executionAttemptId, 'again')).to.equal(false);
        expect(pool.stats.running + pool.stats.queued).to.equal(0);
      },
    );
  });

  it('fails a missing module, or one without a default export function, with "bad-module"', async () => {
    const missing = await failsWith(pool.run({ ...invocation('ok'), taskModule: task('doesNotExist') }), 'bad-module');
    expect(missing.details).to.include({ code: 'ERR_MODULE_NOT_FOUND' });
    const noDefault = await failsWith(pool.run(invocation('noDefault')), 'bad-module');
    expect(noDefault.message).to.contain('has no default export function');
    const relative = await failsWith(
      pool.run({ ...invocation('ok'), taskModule: 'fixtures/tasks/ok.ts' }),
      'bad-module',
    );
    expect(relative.message).to.contain('absolute path or a file: URL');
  });

  it('fails a task whose output cannot cross threads with "bad-output"; the thread lives on', async () => {
    const threadsBefore = pool.threadIds();
    const error = await failsWith(pool.run(invocation('badOutput')), 'bad-output');
    expect(error.message).to.contain('output that cannot cross threads').and.contain('a function');
    expect(error.details).to.include({ causeName: 'DataCloneError' });
    expect(pool.threadIds()).to.deep.equal(threadsBefore);
  });

  it('refuses an invocation that cannot be sent to a thread (IllegalArgumentError)', async () => {
    try {
      await pool.run(invocation('ok', { inputs: [() => 1] }));
      expect.fail('expected a refusal');
    } catch (error) {
      expect(error).to.be.instanceOf(IllegalArgumentError);
      expect((error as IllegalArgumentError).details).to.include({ argument: 'invocation' });
    }
    expect((await pool.run(invocation('ok', { inputs: [3] }))).output).to.have.property('sum', 3);
  });

  describe('managed memory', () => {
    const PAGE = 4096;

    it(
      "shares the slot's pages: taken pages show in the slot's view " +
        'while the task holds them; leftovers are released and counted',
      async () => {
        const slotMemory = MemoryManager.create(16 * PAGE, PAGE);
        const inv = invocation('memory', { memory: slotMemory.share(), config: { pages: 3, keep: true, holdMs: 200 } });
        const run = pool.run(inv);
        await logged(logs, /holding 3 pages/);
        expect(slotMemory.freePages).to.equal(13);
        // Another view's owner: the slot's view knows only its token.
        expect(slotMemory.owners()).to.have.lengthOf(1);
        expect(slotMemory.owners()[0]!.pages).to.equal(3);
        expect(slotMemory.owners()[0]!.owner).to.match(/^#\d+$/);

        const { output, leakedPagesReleased } = await run;
        expect(leakedPagesReleased).to.equal(3);
        expect(output).to.include({ freeWhileHeld: 13 });
        expect((output as { checksum: number }).checksum).to.be.above(0);
        expect(slotMemory.freePages).to.equal(16);
        expect(slotMemory.shutdown().leakedPages).to.equal(0);
      },
    );

    it(
      'reports nothing left by a task that released its pages, ' +
        'and leaves the pages of a task that threw to the slot report',
      async () => {
        const slotMemory = MemoryManager.create(8 * PAGE, PAGE);
        const clean = await pool.run(invocation('memory', { memory: slotMemory.share(), config: { pages: 2 } }));
        expect(clean.leakedPagesReleased).to.equal(0);
        expect(slotMemory.freePages).to.equal(8);

        const error = await failsWith(
          pool.run(invocation('memory', { memory: slotMemory.share(), config: { pages: 2, throwAfter: true } })),
          'threw',
        );
        expect(error.details).to.include({ pagesLeft: 2 });
        expect(slotMemory.freePages).to.equal(6);
        const report = slotMemory.shutdown();
        expect(report.leakedPages).to.equal(2);
      },
    );
  });

  describe('heap limit probe', () => {
    // Under a process-wide --max-old-space-size=N the threads get N MB whatever the pool asked:
    // checkHeapLimit then reports actualMb ≈ N and enforced: false (measured: 64 MB asked, 512 MB
    // by NODE_OPTIONS → heap_size_limit 560 MB). The TaskExecutor logs that; it is not tested here.
    it('reports the thread limit as enforced when the pool asked for one', async function () {
      if (processWideHeapFlag) this.skip();
      const check = await pool.checkHeapLimit();
      expect(check.expectedMb).to.equal(64);
      expect(check.enforced, JSON.stringify(check)).to.equal(true);
      expect(check.actualMb).to.be.within(57.6, 70.4);
      expect(check.heapSizeLimitMb).to.be.above(check.actualMb); // it includes the young generation
    });

    it('reports enforced for a pool without a limit, and refuses runs once closed (close is idempotent)', async () => {
      const unlimited = new SlotTaskPool({ name: 'slot-unlimited', log: () => {} });
      try {
        const check = await unlimited.checkHeapLimit();
        expect(check).to.include({ expectedMb: null, enforced: true });
        expect(check.actualMb).to.be.above(64);
      } finally {
        await unlimited.close();
        await unlimited.close();
      }
      try {
        await unlimited.run(invocation('ok'));
        expect.fail('expected a refusal');
      } catch (error) {
        expect(error).to.be.instanceOf(IllegalStateError);
        expect(isSlotwiseError(error)).to.equal(true);
      }
    });
  });

  // Last (mocha runs a suite's own tests before its nested suites): the counters after everything above.
  it(
    'keeps many outstanding runs apart (more than its first 64 ' +
      "started flags): each output and log line is its own run's",
    async () => {
      const invocations = Array.from({ length: 150 }, (_, i) =>
        invocation('ok', { inputs: [i, 1], vertexName: 'many', subtaskIndex: i }),
      );
      const runs = invocations.map((inv) => pool.run(inv, { signal: new AbortController().signal }));
      const { running, queued } = pool.stats;
      expect(running + queued).to.equal(150);
      const results = await Promise.all(runs);
      expect(results.map((r) => (r.output as { sum: number }).sum)).to.deep.equal(invocations.map((_, i) => i + 1));
      for (const inv of invocations) {
        const lines = logs.filter(
          (e) => e.source === 'task' && e.executionAttemptId === inv.context.executionAttemptId,
        );
        expect(lines.map((e) => [e.message, e.subtaskIndex])).to.deep.equal([
          ['summing 2 inputs', inv.context.subtaskIndex],
        ]);
      }
      expect(pool.stats).to.include({ running: 0, queued: 0 });
    },
  );

  describe('stats', () => {
    it('counts what it ran, and never saw an unclaimed pool error', () => {
      const stats = pool.stats;
      expect(stats.completed).to.be.at.least(7);
      expect(stats.failed).to.be.at.least(13);
      expect(stats.canceled).to.equal(7); // five through signals, two by ExecutionAttemptID
      expect(stats).to.include({ running: 0, queued: 0, poolErrors: 0, threads: 1 });
    });
  });
});

/**
 * Runs waiting for a thread go to it several per pool call (a batch). With one thread the pool keeps
 * two batches out and splits the waiting runs over them: n runs submitted in one turn to an idle
 * pool make a batch of ceil(n / 2) and one of the rest, which is how these tests put runs together.
 */
describe('SlotTaskPool batches (real threads)', function () {
  this.timeout(30_000);

  const logs: SlotTaskPoolLogEntry[] = [];
  let pool: SlotTaskPool;

  before(() => {
    pool = new SlotTaskPool({ name: 'slot-batches', cancelGraceMs: 300, log: (entry) => logs.push(entry) });
  });

  // Each test waits for its own runs' log lines.
  beforeEach(() => {
    logs.length = 0;
  });

  after(async () => {
    await pool.close();
  });

  const linesOf = (inv: TaskInvocation) =>
    logs.filter((e) => e.source === 'task' && e.executionAttemptId === inv.context.executionAttemptId);
  /** Records the order in which runs settle. */
  const track = <T>(order: string[], name: string, run: Promise<T>): Promise<T> => {
    run.then(
      () => order.push(name),
      () => order.push(name),
    );
    return run;
  };

  it('sends runs waiting together in one pool call, and isolates them: one that throws fails alone', async () => {
    const before = pool.stats.batches;
    const names = ['ok', 'throws', 'ok', 'ok', 'ok', 'ok'];
    const invocations = names.map((name, i) =>
      invocation(name, { inputs: [i], vertexName: `isolated-${i}`, subtaskIndex: i }),
    );
    const runs = invocations.map((inv) => pool.run(inv));
    const results = await Promise.allSettled(runs);
    // Six runs, two pool calls: [ok, throws, ok] and [ok, ok, ok].
    await new Promise(setImmediate); // the runs go out a microtask after they are submitted
    expect(pool.stats.batches - before).to.equal(2);
    expect(results.map((r) => r.status)).to.deep.equal([
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
    ]);
    await failsWith(runs[1]!, 'threw');
    results.forEach((r, i) => {
      if (i !== 1) expect((r as PromiseFulfilledResult<{ output: { sum: number } }>).value.output.sum).to.equal(i);
    });
    expect(pool.stats).to.include({ running: 0, queued: 0, poolErrors: 0 });
  });

  it(
    'settles each run of a batch as it ends: a fast run resolves ' +
      'while the slow one after it in the same batch still runs',
    async () => {
      const before = pool.stats.batches;
      const order: string[] = [];
      const controller = new AbortController();
      const fast = track(order, 'fast', pool.run(invocation('ok', { inputs: [1], vertexName: 'fast' })));
      const slow = track(
        order,
        'slow',
        pool.run(invocation('spin', { config: { cooperative: true, checkEvery: 10_000 }, vertexName: 'slow' }), {
          signal: controller.signal,
        }),
      );
      const third = track(order, 'third', pool.run(invocation('ok', { inputs: [3], vertexName: 'third' })));
      // [fast, slow] and [third].
      await new Promise(setImmediate); // the runs go out a microtask after they are submitted
      expect(pool.stats.batches - before).to.equal(2);
      expect((await fast).output).to.have.property('sum', 1);
      await logged(logs, /spinning cooperatively/);
      expect(order).to.deep.equal(['fast']);
      expect(pool.stats).to.include({ running: 1, queued: 1 });
      controller.abort('enough');
      expect((await failsWith(slow, 'canceled')).details).to.include({ stoppedBy: 'cooperative' });
      expect((await third).output).to.have.property('sum', 3);
      expect(order).to.deep.equal(['fast', 'slow', 'third']);
    },
  );

  it(
    'tells each run when it starts: one at a time, in order, each ' +
      'before its own end, the second only after the first ended',
    async () => {
      const completedBefore = pool.stats.completed;
      const events: string[] = [];
      /** Runs settled when each start was told. */
      const settledAtStart: Record<string, number> = {};
      const submit = (name: string, inv: TaskInvocation) => {
        const started = () => {
          events.push(`${name} started`);
          settledAtStart[name] = pool.stats.completed - completedBefore;
        };
        const run = pool.run(inv, { listener: { started } });
        run.then(
          () => events.push(`${name} ended`),
          () => events.push(`${name} ended`),
        );
        return run;
      };
      // One thread, two places: [slow, second] and [third].
      const runs = [
        submit('slow', invocation('sleep', { config: { ms: 150 }, vertexName: 'slow' })),
        submit('second', invocation('ok', { inputs: [2], vertexName: 'second' })),
        submit('third', invocation('ok', { inputs: [3], vertexName: 'third' })),
      ];
      await new Promise(setImmediate);
      expect(events).to.deep.equal(['slow started']);
      await Promise.all(runs);
      await new Promise(setImmediate);
      expect(events.filter((e) => e.endsWith('started'))).to.deep.equal([
        'slow started',
        'second started',
        'third started',
      ]);
      for (const name of ['slow', 'second', 'third'])
        expect(events.indexOf(`${name} started`)).to.be.below(events.indexOf(`${name} ended`));
      expect(settledAtStart).to.deep.include({ slow: 0 });
      expect(settledAtStart['second']).to.equal(1); // the slow one had ended
      expect(settledAtStart['third']).to.be.at.least(1);
    },
  );

  it(
    'cancels a run queued in a batch behind a running ' + 'one without running it; the rest of the batch runs',
    async () => {
      const blocker = new AbortController();
      const queuedController = new AbortController();
      const invocations = [
        invocation('spin', { config: { cooperative: true, checkEvery: 10_000 }, vertexName: 'blocker' }),
        invocation('ok', { inputs: [1], vertexName: 'skipped' }),
        invocation('ok', { inputs: [2], vertexName: 'after-skipped' }),
        invocation('ok', { inputs: [3], vertexName: 'next-batch' }),
      ];
      const before = pool.stats.batches;
      const running = pool.run(invocations[0]!, { signal: blocker.signal });
      const skipped = pool.run(invocations[1]!, { signal: queuedController.signal });
      const others = [pool.run(invocations[2]!), pool.run(invocations[3]!)];
      // [blocker, skipped] and [after-skipped, next-batch].
      await new Promise(setImmediate); // the runs go out a microtask after they are submitted
      expect(pool.stats.batches - before).to.equal(2);
      await logged(logs, /spinning cooperatively/);
      queuedController.abort('not needed');
      const error = await failsWith(skipped, 'canceled');
      expect(error.details).to.include({ stoppedBy: 'before-start' });
      blocker.abort();
      await failsWith(running, 'canceled');
      expect((await Promise.all(others)).map((r) => (r.output as { sum: number }).sum)).to.deep.equal([2, 3]);
      expect(linesOf(invocations[1]!)).to.have.lengthOf(0); // it never ran
      expect(pool.stats).to.include({ running: 0, queued: 0 });
    },
  );

  it(
    're-queues the runs of a batch whose thread was ' + 'terminated to stop one of them; they run once and finish',
    async () => {
      const controller = new AbortController();
      const invocations = [
        invocation('spin', { config: { cooperative: false }, vertexName: 'stuck' }),
        ...Array.from({ length: 5 }, (_, i) =>
          invocation('ok', { inputs: [i + 1], vertexName: `requeued-${i}`, subtaskIndex: i }),
        ),
      ];
      const before = pool.stats.batches;
      const threadsBefore = pool.threadIds();
      const stuck = pool.run(invocations[0]!, { signal: controller.signal });
      const oks = invocations.slice(1).map((inv) => pool.run(inv));
      // [stuck, requeued-0, requeued-1] and [requeued-2 … 4].
      await new Promise(setImmediate); // the runs go out a microtask after they are submitted
      expect(pool.stats.batches - before).to.equal(2);
      await logged(logs, /spinning forever/);
      controller.abort('slot freed');
      const error = await failsWith(stuck, 'canceled');
      expect(error.details).to.include({ stoppedBy: 'forced', graceMs: 300 });
      expect((await Promise.all(oks)).map((r) => (r.output as { sum: number }).sum)).to.deep.equal([1, 2, 3, 4, 5]);
      for (const inv of invocations.slice(1))
        expect(linesOf(inv).map((e) => e.message)).to.deep.equal(['summing 1 inputs']);
      expect(pool.threadIds()).to.not.deep.equal(threadsBefore); // the stuck run's thread was replaced
      expect(pool.stats).to.include({ running: 0, queued: 0, poolErrors: 0 });
    },
  );

  it('gives a thread-ending run its error and re-queues the runs after it in its batch', async () => {
    const invocations = [
      invocation('exits', { vertexName: 'exits' }),
      invocation('ok', { inputs: [1], vertexName: 'after-exit' }),
      invocation('ok', { inputs: [2], vertexName: 'other-batch' }),
    ];
    const before = pool.stats.batches;
    const [exits, afterExit, other] = invocations.map((inv) => pool.run(inv));
    // [exits, after-exit] and [other-batch].
    await new Promise(setImmediate); // the runs go out a microtask after they are submitted
    expect(pool.stats.batches - before).to.equal(2);
    expect((await failsWith(exits!, 'thread-exited')).details).to.include({ exitCode: 1 });
    expect((await afterExit!).output).to.have.property('sum', 1);
    expect((await other!).output).to.have.property('sum', 2);
    expect(linesOf(invocations[1]!)).to.have.lengthOf(1);
  });

  it('refuses only the run that cannot be sent to a thread when it came in a batch', async () => {
    const runs = [
      pool.run(invocation('ok', { inputs: [1] })),
      pool.run(invocation('ok', { inputs: [() => 2] })),
      pool.run(invocation('ok', { inputs: [3] })),
      pool.run(invocation('ok', { inputs: [4] })),
    ];
    const results = await Promise.allSettled(runs);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).to.be.instanceOf(IllegalArgumentError);
  });
});
