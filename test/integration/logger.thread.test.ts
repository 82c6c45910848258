/**
 * The application's logger on a MiniCluster with a real TaskExecutor thread: a task's
 * `context.log(...)` line, a slot pool's warning and the TaskExecutor's own messages all reach it as
 * `logger[level](fields, message)`, with the job, vertex, subtask and TaskExecutor they concern; the
 * plain `log` option gets the same as lines of text; pino's records carry its numeric level only; a
 * failed attempt is a warning, which reaches stderr when the cluster was given no logger.
 */
import { expect } from 'chai';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Logger, LoggerFields } from '../../lib/core/Logger.js';
import { MiniCluster } from '../../lib/MiniCluster.js';
import { until } from '../support/eventually.js';

const fixture = (name: string) => new URL(`../fixtures/tasks/${name}.ts`, import.meta.url);
const ONE_SLOT = { cpuCores: 1, taskHeapMemory: '256m', managedMemory: '16m', networkMemory: '16m' };

type Call = { readonly method: keyof Logger; readonly fields: LoggerFields; readonly message: string };

function recordingLogger(calls: Call[]): Logger {
  const method = (name: keyof Logger) => (fields: LoggerFields, message: string) =>
    calls.push({ method: name, fields, message });
  return { debug: method('debug'), info: method('info'), warn: method('warn'), error: method('error') };
}

describe('the logger of a MiniCluster (worker threads)', function () {
  this.timeout(60_000);

  it(
    "receives a task's log line, its slot pool's warning " + "and the TaskExecutor's messages, each with its fields",
    async () => {
      const calls: Call[] = [];
      // A short grace period: the spinning task ignores its signal, so the pool warns and terminates its thread.
      const cluster = await MiniCluster.start({
        taskExecutors: 1,
        slotsPerTaskExecutor: 1,
        resources: ONE_SLOT,
        logger: recordingLogger(calls),
        configuration: { 'task.cancellation.grace-period': '100 ms', 'restart-strategy.type': 'none' },
      });
      let resourceId: string | undefined;
      try {
        resourceId = cluster.overview().taskExecutors[0]!.resourceId;
        const job = await cluster.submitJob({
          name: 'spinner',
          vertices: [{ id: 'spin', taskModule: fixture('spin'), parallelism: 1 }],
        });
        const line = await until('the task to log', () => calls.find((c) => c.fields.source === 'task'));
        expect(line).to.deep.include({ method: 'info', message: 'spinning forever' });
        expect(line.fields).not.to.have.property('level');
        expect(line.fields).to.deep.include({
          source: 'task',
          jobId: job.jobId,
          vertexId: 'spin',
          vertexName: 'spin',
          subtaskIndex: 0,
          resourceId,
          slotId: `${resourceId}/0`,
        });
        expect(line.fields.executionAttemptId).to.be.a('string');

        await job.cancel();
        expect((await job.result).status).to.equal('canceled');
        const warning = await until('the pool to warn', () => calls.find((c) => c.fields.source === 'pool'));
        expect(warning.method).to.equal('warn');
        expect(warning.message).to.match(/did not stop within 100 ms of its cancel: terminating its thread/);
        expect(warning.fields).to.deep.include({
          source: 'pool',
          jobId: job.jobId,
          vertexId: 'spin',
          subtaskIndex: 0,
          resourceId,
        });
      } finally {
        await cluster.close();
      }
      const runtime = calls.find(
        (c) => c.fields.source === 'runtime' && c.message === 'shutting down: the cluster is closing',
      );
      expect(runtime?.fields).to.deep.equal({ source: 'runtime', resourceId });
    },
  );

  it('gives the plain `log` option the same as lines: the task line with its TaskExecutor and subtask', async () => {
    const lines: string[] = [];
    const cluster = await MiniCluster.start({
      taskExecutors: 1,
      slotsPerTaskExecutor: 1,
      resources: ONE_SLOT,
      log: (line) => lines.push(line),
    });
    try {
      const resourceId = cluster.overview().taskExecutors[0]!.resourceId;
      const job = await cluster.submitJob({
        name: 'ok',
        vertices: [{ id: 'adder', taskModule: fixture('ok'), parallelism: 1 }],
      });
      expect((await job.result).status).to.equal('finished');
      await until('the task line', () => lines.includes(`[${resourceId}] adder#0 summing 0 inputs`));
    } finally {
      await cluster.close();
    }
  });

  it("with pino: pino's numeric level only; a failed attempt at warn with its subtask and TaskExecutor", async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(
          ...chunk
            .toString()
            .split('\n')
            .filter((line) => line !== ''),
        );
        done();
      },
    });
    const cluster = await MiniCluster.start({
      taskExecutors: 1,
      slotsPerTaskExecutor: 1,
      resources: ONE_SLOT,
      logger: pino({ level: 'debug' }, destination),
    });
    try {
      const resourceId = cluster.overview().taskExecutors[0]!.resourceId;
      const job = await cluster.submitJob({
        name: 'unlucky',
        vertices: [{ id: 'boom', taskModule: fixture('throws'), parallelism: 1 }],
        restartStrategy: { type: 'fixed-delay', attempts: 1, delay: 0 },
      });
      expect((await job.result).status).to.equal('failed');
      for (const line of lines) expect(line.match(/"level":/g), line).to.have.length(1);
      const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      for (const record of records) expect(record['level'], JSON.stringify(record)).to.be.a('number');
      const failure = records.find((r) => String(r['msg']).startsWith('attempt 0 failed:'));
      expect(failure).to.deep.include({
        level: 40,
        source: 'runtime',
        jobId: job.jobId,
        jobName: 'unlucky',
        vertexId: 'boom',
        subtaskIndex: 0,
        attemptNumber: 0,
        resourceId,
      });
      expect(records.find((r) => String(r['msg']).startsWith('restarts as attempt 1'))).to.include({ level: 30 });
      expect(records.find((r) => String(r['msg']).startsWith('job unlucky failed'))).to.include({ level: 50 });
    } finally {
      await cluster.close();
    }
  });

  it('without a logger writes a failed attempt and the failed job to stderr', async () => {
    const written: string[] = [];
    const cluster = await MiniCluster.start({ taskExecutors: 1, slotsPerTaskExecutor: 1, resources: ONE_SLOT });
    const write = process.stderr.write;
    process.stderr.write = ((chunk: string | Uint8Array) => written.push(String(chunk)) > 0) as typeof write;
    try {
      const job = await cluster.submitJob({
        name: 'unlucky',
        vertices: [{ id: 'boom', taskModule: fixture('throws'), parallelism: 1 }],
        restartStrategy: { type: 'none' },
      });
      expect((await job.result).status).to.equal('failed');
    } finally {
      process.stderr.write = write;
      await cluster.close();
    }
    const resourceId = /\[(taskexecutor-[0-9a-f]+)\]/.exec(written.join(''))?.[1];
    expect(written.find((l) => l.includes('attempt 0 failed'))).to.match(
      new RegExp(`^slotwise \\[${resourceId}\\] \\[unlucky\\] boom#0 warn: attempt 0 failed: .*boom in boom #0`),
    );
    expect(written.find((l) => l.includes('job unlucky failed'))).to.match(
      /^slotwise \[unlucky\] error: job unlucky failed/,
    );
  });
});
