/**
 * A session cluster over a real nats-server, its JobManager and two TaskManagers in this process
 * (each TaskManager's tasks on its own task threads): they register, a job's code travels through
 * the object store, and the result is exact. The child-process cluster is cluster.process.test.ts.
 */
import { expect } from 'chai';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startJobManager, type JobManager } from '../../lib/cluster/JobManager.js';
import { startTaskManager } from '../../lib/cluster/TaskManager.js';
import { TaskManagerProcess } from '../../lib/cluster/TaskManagerProcess.js';
import type { WordCountResult } from '../../examples/wordcount/wordCountJob.js';
import { wordCountJob } from '../../examples/wordcount/wordCountJob.js';
import { until } from '../support/eventually.js';
import { IllegalArgumentError, JobGraphError } from '../../lib/core/errors.js';
import { sha256Hex } from '../../lib/cluster/BlobStore.js';
import { bundleTaskModule } from '../../lib/cluster/bundleTaskModule.js';
import { rejection } from '../rpc/support/transports.js';
import { natsServerOrSkip, startNatsServer, type NatsServer } from '../support/natsServer.js';

const configuration = { 'heartbeat.interval': 1_000, 'heartbeat.timeout': 5_000 };

describe('a session cluster over NATS (JobManager and TaskManagers in this process)', function () {
  this.timeout(60_000);
  let server: NatsServer;
  let jobManager: JobManager;
  const taskManagers: Array<Awaited<ReturnType<typeof startTaskManager>>> = [];
  /** Each TaskManager's cache of fetched task code. */
  const cacheDirs: string[] = [];

  before(async function () {
    const binary = natsServerOrSkip(this, 'session cluster over NATS');
    server = await startNatsServer(binary);
    jobManager = await startJobManager({ nats: server.url, clusterId: 'inproc', configuration });
    for (let i = 0; i < 2; i++) {
      cacheDirs.push(mkdtempSync(join(tmpdir(), 'slotwise-tm-cache-')));
      taskManagers.push(
        await startTaskManager({
          nats: server.url,
          clusterId: 'inproc',
          cacheDir: cacheDirs[i]!,
          slots: 2,
          cpuCores: 2,
          taskHeap: '1g',
          managedMemory: '64m',
          networkMemory: '32m',
          configuration,
        }),
      );
    }
    await until(
      'both TaskManagers registered with their slots',
      () => jobManager.overview().taskExecutors.length === 2,
    );
  });

  after(async () => {
    for (const taskManager of taskManagers) await taskManager.close();
    await jobManager?.close();
    await server?.stop();
    for (const dir of cacheDirs) rmSync(dir, { recursive: true, force: true });
  });

  it('registers both TaskManagers under their ResourceIDs with 2 slots each', () => {
    const overview = jobManager.overview();
    expect(overview.taskExecutors.map((te) => te.resourceId).sort()).to.deep.equal(
      taskManagers.map((tm) => tm.resourceId).sort(),
    );
    expect(overview.taskExecutors.every((te) => te.slots.length === 2)).to.equal(true);
  });

  it('runs the word count with its code fetched from the object store, and the answer is exact', async () => {
    const text = ['The slot and the task.', 'A task, a slot; THE END', '', 'end'];
    const job = await jobManager.submitJob(wordCountJob({ input: { text }, parallelism: 2, counters: 2 }));
    const ran = new Set<string>();
    job.onEvent((event) => {
      if (event.type === 'task' && event.state === 'running' && event.resourceId !== null) ran.add(event.resourceId);
    });
    const result = await job.result;
    expect(result.status, result.error?.message).to.equal('finished');
    const answer = result.outputs['sink']![0] as WordCountResult;
    expect(answer.counts).to.deep.equal({ the: 3, slot: 2, and: 1, task: 2, a: 2, end: 2 });
    expect(answer.totalWords).to.equal(12);
    expect([...ran].every((id) => taskManagers.some((tm) => tm.resourceId === id))).to.equal(true);
  });

  it('refuses uploaded code whose SHA-256 does not match, and stores nothing', async () => {
    const code = 'export default () => 1;\n';
    const error = await rejection(
      jobManager.storeTaskCode({ name: 'one.mjs', code, sha256: sha256Hex('something else') }),
    );
    expect(error).to.be.instanceOf(IllegalArgumentError);
    expect(error.message).to.contain(`but its code hashes to ${sha256Hex(code)}: refused`);
  });

  it('runs a job on uploaded code (the bundle a client sends), named by what storeTaskCode returned', async () => {
    const bundle = await bundleTaskModule(new URL('../fixtures/tasks/ok.ts', import.meta.url));
    const stored = await jobManager.storeTaskCode(bundle);
    expect(stored.sha256).to.equal(bundle.sha256);
    expect(await jobManager.storeTaskCode(bundle)).to.deep.equal(stored); // the same code again: a no-op
    const job = await jobManager.submitJob({
      name: 'uploaded',
      vertices: [{ id: 'ok', taskModule: stored.taskModule, parallelism: 3, config: { answer: 42 } }],
    });
    const result = await job.result;
    expect(result.status, result.error?.message).to.equal('finished');
    const outputs = result.outputs['ok'] as Array<{ config: unknown; seen: { subtaskIndex: number; jobName: string } }>;
    expect(outputs.map((o) => o.seen.subtaskIndex)).to.deep.equal([0, 1, 2]);
    expect(
      outputs.every((o) => o.seen.jobName === 'uploaded' && (o.config as { answer: number }).answer === 42),
    ).to.equal(true);
    // The TaskManagers ran it from their own caches, fetched from the object store by its hash.
    const fetched = cacheDirs.filter((dir) => existsSync(join(dir, `sha256-${bundle.sha256}.mjs`)));
    expect(fetched.length).to.be.at.least(1);
    for (const dir of fetched)
      expect(readFileSync(join(dir, `sha256-${bundle.sha256}.mjs`), 'utf8')).to.equal(bundle.code);
  });

  it('refuses a job whose task module does not exist with JobGraphError, before anything runs', async () => {
    const error = await rejection(
      jobManager.submitJob({
        name: 'missing',
        vertices: [{ id: 'x', taskModule: '/nonexistent/task.mjs', parallelism: 1 }],
      }),
    );
    expect(error).to.be.instanceOf(JobGraphError);
    expect((error as JobGraphError).reason).to.equal('invalid-task-module');
    expect(jobManager.listJobs().some((job) => job.name === 'missing')).to.equal(false);
  });

  it('fails a vertex asking for more cores than any TaskManager has, naming what the TaskManagers offer', async () => {
    const bundle = await bundleTaskModule(new URL('../fixtures/tasks/ok.ts', import.meta.url));
    const stored = await jobManager.storeTaskCode(bundle);
    const job = await jobManager.submitJob({
      name: 'too big',
      vertices: [{ id: 'big', taskModule: stored.taskModule, parallelism: 1, resources: { cpuCores: 64 } }],
    });
    const result = await job.result;
    expect(result.status).to.equal('failed');
    expect(result.error).to.include({ _tag: 'SlotRequestError', reason: 'never-satisfiable' });
    // The JobManager's own options describe a worker of 1 core, which it never starts: not named.
    const [a, b] = taskManagers.map((tm) => tm.resourceId).sort();
    expect(result.error!.message).to.satisfy(
      (message: string) =>
        message.includes(`(${a}: cpuCores has 2, asked 64; ${b}: cpuCores has 2, asked 64)`) ||
        message.includes(`(${b}: cpuCores has 2, asked 64; ${a}: cpuCores has 2, asked 64)`),
      result.error!.message,
    );
    expect(result.error!.message).to.match(/the 2 registered TaskExecutors fall short .*; none is started on demand$/);
  });

  it(
    'runs a TaskManager in mode process: its TaskExecutor in a ' +
      'child process, started again under a new ResourceID when killed',
    async function () {
      this.timeout(120_000);
      // Its child is killed below: the cache it would have removed at close is the test's to remove.
      const cacheDir = mkdtempSync(join(tmpdir(), 'slotwise-inproc-process-'));
      const tm = await startTaskManager({
        nats: server.url,
        clusterId: 'inproc',
        cacheDir,
        mode: 'process',
        slots: 1,
        taskHeap: '256m',
        managedMemory: '32m',
        networkMemory: '16m',
        configuration,
      });
      const registrations: Array<{ resourceId: string; previous: string | null }> = [];
      tm.onRegistered((event) => registrations.push(event));
      try {
        expect(tm).to.be.instanceOf(TaskManagerProcess);
        const listed = () => jobManager.overview().taskExecutors.map((te) => te.resourceId as string);
        await until(
          'the process TaskManager registered',
          () => tm.registered && listed().includes(tm.resourceId),
          60_000,
        );
        const first = tm.resourceId;
        process.kill((tm as TaskManagerProcess).pid!, 'SIGKILL');
        await until(
          'a fresh TaskExecutor registered in a new child',
          () => tm.registered && tm.resourceId !== first && listed().includes(tm.resourceId),
          90_000,
        );
        expect(tm.incarnations).to.equal(2);
        // Its listeners heard the fresh TaskExecutor's registration, and which one it followed.
        await until('the fresh registration told', () => registrations.at(-1)?.resourceId === tm.resourceId);
        expect(registrations.at(-1)).to.deep.equal({ resourceId: tm.resourceId, previous: first });
        await until('the killed one to be gone', () => !listed().includes(first), 60_000);
      } finally {
        await tm.close();
        rmSync(cacheDir, { recursive: true, force: true });
      }
    },
  );
});
