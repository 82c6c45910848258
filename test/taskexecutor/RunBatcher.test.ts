/**
 * RunBatcher without threads: its `send` is a fake pool whose calls the test ends by hand, a fake
 * thread claims the runs' started flags as the real one does (taskWorker.ts), outcomes travel on a
 * fake channel that `readPosted` drains, and a SimulatedClock times the cancel grace.
 */
import { expect } from 'chai';
import { IllegalArgumentError, TaskExecutionError } from '../../lib/core/errors.js';
import { SimulatedClock } from '../../lib/core/clock.js';
import { RunBatcher } from '../../lib/taskexecutor/RunBatcher.js';
import { RUN_QUEUED, RUN_STARTED, RunFlags } from '../../lib/taskexecutor/runFlags.js';
import type { TaskInvocation } from '../../lib/taskexecutor/TaskInvocation.js';
import type {
  TaskWorkerBatch,
  TaskWorkerBatchItem,
  TaskWorkerBatchResult,
  TaskWorkerOutcome,
} from '../../lib/taskexecutor/taskThreadProtocol.js';

/** One pool call the fake pool holds until the test ends it. */
interface Call {
  readonly batch: TaskWorkerBatch;
  readonly resolve: (result: TaskWorkerBatchResult) => void;
  readonly reject: (error: unknown) => void;
}

const ok = (output: unknown): TaskWorkerOutcome => ({ ok: true, output, leakedPagesReleased: 0 });

function invocation(name: string, memory: TaskInvocation['memory'] = null): TaskInvocation {
  return {
    taskModule: `/tasks/${name}.mjs`,
    context: {
      jobId: 'job',
      jobName: 'batcher',
      vertexId: name,
      vertexName: name,
      subtaskIndex: 0,
      parallelism: 1,
      attemptNumber: 0,
      executionAttemptId: `attempt-${name}`,
      allocationId: 'alloc',
    },
    inputs: null,
    config: undefined,
    memory,
  };
}

/** Lets the batcher's microtasks (dispatch, start notices) run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function harness(options: { graceMs?: number } = {}) {
  const clock = new SimulatedClock();
  const calls: Call[] = [];
  const posted: Array<{ run: number; outcome: TaskWorkerOutcome }> = [];
  const aborts: Array<{ run: number; reason: string }> = [];
  const logs: string[] = [];
  let terminated = 0;
  let exitCode: number | null = null;
  /** The thread's copy of the started flags (sent with a batch when it may not have them). */
  let threadFlags: Int32Array | null = null;
  const batcher: RunBatcher = new RunBatcher({
    scope: { pool: 'te/0', heapLimitMb: 64, cancelGraceMs: options.graceMs ?? 300 },
    pool: 'test-pool',
    flags: new RunFlags(),
    send: (batch) =>
      new Promise<TaskWorkerBatchResult>((resolve, reject) => {
        if (batch.started !== undefined) threadFlags = new Int32Array(batch.started);
        calls.push({ batch, resolve, reject });
      }),
    readPosted: () => {
      for (const message of posted.splice(0)) batcher.outcome(message.run, message.outcome);
    },
    postAbort: (run, reason) => aborts.push({ run, reason }),
    terminateThread: () => terminated++,
    threadExitCode: () => exitCode,
    log: (level, message) => logs.push(`${level}: ${message}`),
    clock,
  });
  /** The thread claims an item's flag (false: the pool canceled it first, the thread skips it). */
  const claim = (item: TaskWorkerBatchItem): boolean => {
    if (threadFlags === null) throw new Error('the thread was never sent its started flags');
    return Atomics.compareExchange(threadFlags, item.index, RUN_QUEUED, RUN_STARTED) === RUN_QUEUED;
  };
  return {
    batcher,
    calls,
    clock,
    aborts,
    logs,
    claim,
    terminated: () => terminated,
    setExitCode: (code: number | null) => (exitCode = code),
    /** A run of a batch ends and its thread posts its outcome (not the last of its batch). */
    post: (item: TaskWorkerBatchItem, outcome: TaskWorkerOutcome) => posted.push({ run: item.run, outcome }),
    sizes: () => calls.map((call) => call.batch.items.length),
  };
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  return expect.fail('expected the run to reject');
}

describe('RunBatcher (no threads)', () => {
  it(
    'sends nothing until opened, then a run to an idle pool ' +
      'alone at once, and runs submitted together in shared batches',
    async () => {
      const h = harness();
      const first = h.batcher.submit(invocation('a'), undefined, undefined);
      await settle();
      expect(h.calls, 'no threads yet').to.have.length(0);
      h.batcher.open();
      await settle();
      expect(h.sizes()).to.deep.equal([1]);
      // Five more in one turn: one call is out of the two a thread may have, so one more of them goes now.
      const more = ['b', 'c', 'd', 'e', 'f'].map((name) => h.batcher.submit(invocation(name), undefined, undefined));
      await settle();
      expect(h.sizes()).to.deep.equal([1, 5]);
      expect(h.batcher.counts).to.include({ queued: 6, running: 0, batches: 2 });
      const [a] = h.calls[0]!.batch.items;
      expect(h.claim(a!)).to.equal(true);
      h.calls[0]!.resolve({ run: a!.run, outcome: ok('A') });
      expect((await first).output).to.equal('A');
      const second = h.calls[1]!.batch;
      for (const item of second.items.slice(0, -1)) {
        h.claim(item);
        h.post(item, ok(item.context.vertexName));
      }
      const last = second.items.at(-1)!;
      h.claim(last);
      h.calls[1]!.resolve({ run: last.run, outcome: ok('f') });
      expect((await Promise.all(more)).map((r) => r.output)).to.deep.equal(['b', 'c', 'd', 'e', 'f']);
      expect(h.batcher.counts).to.include({ completed: 6, failed: 0, queued: 0, batches: 2 });
    },
  );

  it('splits a queue over the free places, 16 runs at most per call, and keeps two calls out', async () => {
    const h = harness();
    h.batcher.open();
    const runs = Array.from({ length: 40 }, (_, i) => h.batcher.submit(invocation(`r${i}`), undefined, undefined));
    await settle();
    expect(h.sizes()).to.deep.equal([16, 16]);
    // The first call returns (every run of it posted but the last): the next 8 go out.
    const [call] = h.calls;
    for (const item of call!.batch.items.slice(0, -1)) {
      h.claim(item);
      h.post(item, ok(item.run));
    }
    const last = call!.batch.items.at(-1)!;
    h.claim(last);
    call!.resolve({ run: last.run, outcome: ok(last.run) });
    await settle();
    expect(h.sizes()).to.deep.equal([16, 16, 8]);
    // The thread keeps the buffers it was sent: later calls on one thread do not carry them again.
    expect(h.calls[0]!.batch.started).to.be.instanceOf(SharedArrayBuffer);
    expect(h.calls[1]!.batch).to.not.have.property('started');
    expect(runs).to.have.length(40);
    h.batcher.close();
  });

  it(
    'never mixes two managed memories in one batch (a batch ' +
      "carries one): a run of another slot's memory starts the next",
    async () => {
      const h = harness();
      const memory = (): TaskInvocation['memory'] => ({
        data: new SharedArrayBuffer(8),
        control: new SharedArrayBuffer(8),
        pageSize: 8,
        totalPages: 1,
      });
      const [a, b] = [memory(), memory()];
      h.batcher.open();
      for (const [name, m] of [
        ['a1', a],
        ['a2', a],
        ['a3', a],
        ['b1', b],
      ] as const)
        void h.batcher.submit(invocation(name, m), undefined, undefined);
      await settle();
      expect(h.sizes()).to.deep.equal([2, 1]);
      expect(h.calls[0]!.batch.memory).to.equal(a);
      expect(h.calls[1]!.batch.items.map((item) => item.context.vertexName)).to.deep.equal(['a3']);
      // The first call returns: b1 goes, with its own memory.
      const items = h.calls[0]!.batch.items;
      for (const item of items) h.claim(item);
      h.post(items[0]!, ok(1));
      h.calls[0]!.resolve({ run: items[1]!.run, outcome: ok(2) });
      await settle();
      expect(h.calls[2]!.batch.memory).to.equal(b);
      h.batcher.close();
    },
  );

  it(
    'settles each run as its outcome is posted, and tells starts ' +
      'in order: the next run only after the one before it ended',
    async () => {
      const h = harness();
      h.batcher.open();
      const heard: string[] = [];
      const listener = (name: string) => ({ started: () => heard.push(`start ${name}`) });
      const runs = ['a', 'b', 'c'].map((name) =>
        h.batcher
          .submit(invocation(name), undefined, listener(name))
          .then((r) => heard.push(`end ${String(r.output)}`)),
      );
      await settle();
      expect(h.sizes()).to.deep.equal([2, 1]);
      expect(heard, 'the first batch goes to an idle thread: its first run starts').to.deep.equal(['start a']);
      const [a, b] = h.calls[0]!.batch.items;
      h.claim(a!);
      // Its outcome arrives on the channel while the batch goes on.
      h.batcher.outcome(a!.run, ok('a'));
      await settle();
      expect(heard).to.deep.equal(['start a', 'end a', 'start b']);
      h.claim(b!);
      h.calls[0]!.resolve({ run: b!.run, outcome: ok('b') });
      await settle();
      expect(heard, 'the thread takes the waiting batch when it returns one').to.deep.equal([
        'start a',
        'end a',
        'start b',
        'end b',
        'start c',
      ]);
      const [c] = h.calls[1]!.batch.items;
      h.claim(c!);
      h.calls[1]!.resolve({ run: c!.run, outcome: ok('c') });
      await Promise.all(runs);
      expect(heard.at(-1)).to.equal('end c');
    },
  );

  it(
    'cancels a queued run, and one queued in a sent batch, ' +
      'without running them (the thread skips the claimed flag)',
    async () => {
      const h = harness();
      const waiting = h.batcher.submit(invocation('waiting'), undefined, undefined);
      expect(h.batcher.cancel('attempt-waiting', 'job canceled')).to.equal(true);
      const early = await rejection(waiting);
      expect(early).to.be.instanceOf(TaskExecutionError);
      expect((early as TaskExecutionError).details).to.include({ stoppedBy: 'before-start' });
      h.batcher.open();
      // Three to an idle thread: two in the first call, one in the second.
      const running = h.batcher.submit(invocation('running'), undefined, undefined);
      const behind = h.batcher.submit(invocation('behind'), undefined, undefined);
      const third = h.batcher.submit(invocation('third'), undefined, undefined);
      await settle();
      expect(h.sizes()).to.deep.equal([2, 1]);
      const [first, second] = h.calls[0]!.batch.items;
      h.claim(first!);
      expect(h.batcher.cancel('attempt-behind', 'not needed')).to.equal(true);
      expect(((await rejection(behind)) as TaskExecutionError).details).to.include({ stoppedBy: 'before-start' });
      expect(h.claim(second!), 'the thread finds the flag taken').to.equal(false);
      h.calls[0]!.resolve({ run: first!.run, outcome: ok('done') });
      expect((await running).output).to.equal('done');
      expect(h.batcher.cancel('attempt-running', 'late')).to.equal(false);
      const [t] = h.calls[1]!.batch.items;
      h.claim(t!);
      h.calls[1]!.resolve({ run: t!.run, outcome: ok('third') });
      expect((await third).output).to.equal('third');
      expect(h.aborts, 'nothing ran that had to be told').to.deep.equal([]);
      expect(h.batcher.counts).to.include({ completed: 2, failed: 2, canceled: 2 });
    },
  );

  it(
    'asks a running run to stop, terminates its thread after the ' +
      "grace, and re-queues the batch's runs behind it with new flags",
    async () => {
      const h = harness();
      h.batcher.open();
      const stubborn = h.batcher.submit(invocation('stubborn'), undefined, undefined);
      const next = h.batcher.submit(invocation('next'), undefined, undefined);
      void h.batcher.submit(invocation('third'), undefined, undefined);
      await settle();
      expect(h.sizes()).to.deep.equal([2, 1]);
      const [s, n] = h.calls[0]!.batch.items;
      h.claim(s!);
      h.batcher.cancel('attempt-stubborn', 'job canceled');
      expect(h.aborts).to.deep.equal([{ run: s!.run, reason: 'job canceled' }]);
      h.clock.increment(299);
      expect(h.terminated()).to.equal(0);
      h.clock.increment(1);
      expect(h.terminated(), 'one thread: terminated directly').to.equal(1);
      expect(h.logs.some((line) => line.startsWith('warn:') && line.includes('did not stop within 300 ms'))).to.equal(
        true,
      );
      h.setExitCode(1);
      h.calls[0]!.reject(new Error('worker exited with code: 1'));
      const error = (await rejection(stubborn)) as TaskExecutionError;
      expect(error.reason).to.equal('canceled');
      expect(error.details).to.include({ stoppedBy: 'forced', graceMs: 300 });
      await settle();
      expect(h.sizes(), 'the run behind it goes again').to.deep.equal([2, 1, 1]);
      const again = h.calls[2]!.batch;
      expect(again.started, 'a replaced thread is sent the buffers again').to.be.instanceOf(SharedArrayBuffer);
      expect(again.items[0]!.run).to.equal(n!.run);
      expect(again.items[0]!.index, 'not the flag the lost thread may still read').to.not.equal(n!.index);
      h.claim(again.items[0]!);
      h.calls[2]!.resolve({ run: n!.run, outcome: ok('ran once') });
      expect((await next).output).to.equal('ran once');
    },
  );

  it(
    "gives a lost thread's running run its exit code, and fails a run " +
      're-queued more than 3 times with the error that lost its thread',
    async () => {
      const h = harness();
      h.batcher.open();
      h.setExitCode(7);
      const exits = h.batcher.submit(invocation('exits'), undefined, undefined);
      const unlucky = h.batcher.submit(invocation('unlucky'), undefined, undefined);
      await settle();
      h.claim(h.calls[0]!.batch.items[0]!);
      h.calls[0]!.reject(new Error('worker exited with code: 7'));
      const exited = (await rejection(exits)) as TaskExecutionError;
      expect(exited.reason).to.equal('thread-exited');
      expect(exited.details).to.include({ exitCode: 7 });
      // Lost three more times before it started: re-queued each time, then failed.
      for (let loss = 1; loss <= 4; loss++) {
        await settle();
        expect(h.calls, `call ${loss + 1}`).to.have.length(loss + 1);
        h.calls[loss]!.reject(new Error('worker exited with code: 7'));
      }
      const failed = (await rejection(unlucky)) as TaskExecutionError;
      expect(failed.reason).to.equal('thread-exited');
      expect(failed.details).to.include({ exitCode: 7 });
      expect(h.batcher.counts).to.include({ failed: 2, canceled: 0, queued: 0 });
    },
  );

  it(
    're-sends a batch that cannot be cloned one run per ' + 'call, so only the run that cannot be sent is refused',
    async () => {
      const h = harness();
      h.batcher.open();
      const good = h.batcher.submit(invocation('good'), undefined, undefined);
      const bad = h.batcher.submit(invocation('bad'), undefined, undefined);
      const other = h.batcher.submit(invocation('other'), undefined, undefined);
      await settle();
      expect(h.sizes()).to.deep.equal([2, 1]);
      const clone = new DOMException('function could not be cloned', 'DataCloneError');
      h.calls[0]!.reject(clone);
      await settle();
      expect(h.sizes(), 'good alone, in the one free place').to.deep.equal([2, 1, 1]);
      const [g] = h.calls[2]!.batch.items;
      expect(g!.context.vertexName).to.equal('good');
      h.claim(g!);
      h.calls[2]!.resolve({ run: g!.run, outcome: ok('sent') });
      expect((await good).output).to.equal('sent');
      await settle();
      expect(h.sizes(), 'then bad alone').to.deep.equal([2, 1, 1, 1]);
      expect(h.calls[3]!.batch.items[0]!.context.vertexName).to.equal('bad');
      h.calls[3]!.reject(clone);
      expect(await rejection(bad)).to.be.instanceOf(IllegalArgumentError);
      const [o] = h.calls[1]!.batch.items;
      h.claim(o!);
      h.calls[1]!.resolve({ run: o!.run, outcome: ok('other') });
      expect((await other).output).to.equal('other');
    },
  );

  it(
    'fails the runs not sent when closed (canceled, pool-closed), ' +
      'and a run submitted with its signal already aborted at once',
    async () => {
      const h = harness();
      const queued = h.batcher.submit(invocation('queued'), undefined, undefined);
      h.batcher.close();
      const closed = (await rejection(queued)) as TaskExecutionError;
      expect(closed.reason).to.equal('canceled');
      expect(closed.details).to.include({ stoppedBy: 'pool-closed' });
      const controller = new AbortController();
      controller.abort('too late');
      const aborted = (await rejection(
        h.batcher.submit(invocation('aborted'), controller.signal, undefined),
      )) as TaskExecutionError;
      expect(aborted.message).to.contain('canceled before it started: too late');
      h.batcher.open();
      await settle();
      expect(h.calls, 'a closed batcher sends nothing').to.have.length(0);
      expect(h.batcher.counts).to.include({ failed: 2, canceled: 2 });
    },
  );
});
