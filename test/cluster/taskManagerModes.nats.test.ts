/**
 * A session cluster reports how each TaskManager's TaskExecutor really runs (issue 24 item 7): one
 * in the TaskManager's own process ('thread') and one in a child process ('process'), as each said
 * when it registered — in the REST API's GET /taskmanagers and /taskmanagers/:id, in the dashboard's
 * view and in `slotwise overview`. Every TaskManager used to be reported as 'process'. A real
 * nats-server, skipped with a line saying so when it is not installed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { startJobManager, type JobManager } from '../../lib/cluster/JobManager.js';
import { startTaskManager } from '../../lib/cluster/TaskManager.js';
import { runCli } from '../../lib/cli/runCli.js';
import { until } from '../support/eventually.js';
import { natsServerOrSkip, startNatsServer, type NatsServer } from '../support/natsServer.js';

const SOURCE_MAPS = fileURLToPath(new URL('../fixtures/sourceMaps/', import.meta.url));
const configuration = { 'heartbeat.interval': 1_000, 'heartbeat.timeout': 5_000 };

describe('a session cluster reports how each TaskManager runs (over NATS)', function () {
  this.timeout(120_000);
  let server: NatsServer | undefined;
  let jobManager: JobManager | undefined;
  const taskManagers: Array<Awaited<ReturnType<typeof startTaskManager>>> = [];
  const cacheDirs: string[] = [];
  /** The mode each TaskManager was started in, by its ResourceID. */
  const started = new Map<string, 'thread' | 'process'>();

  before(async function () {
    const binary = natsServerOrSkip(this, 'TaskManager modes');
    server = await startNatsServer(binary);
    jobManager = await startJobManager({ nats: server.url, clusterId: 'modes', configuration, rest: { port: 0 } });
    for (const mode of ['thread', 'process'] as const) {
      const cacheDir = mkdtempSync(join(tmpdir(), 'slotwise-tm-cache-'));
      cacheDirs.push(cacheDir);
      const taskManager = await startTaskManager({
        nats: server.url,
        clusterId: 'modes',
        cacheDir,
        slots: 1,
        taskHeap: '128m',
        mode,
        configuration,
      });
      taskManagers.push(taskManager);
      await until(`the ${mode} TaskManager to register`, () => taskManager.registered, 60_000);
      started.set(taskManager.resourceId, mode);
    }
    await until('both TaskManagers in the SlotManager', () => jobManager!.overview().taskExecutors.length === 2);
  });

  after(async () => {
    for (const taskManager of taskManagers) await taskManager.close();
    await jobManager?.close();
    await server?.stop();
    for (const dir of cacheDirs) rmSync(dir, { recursive: true, force: true });
  });

  it('GET /taskmanagers and /taskmanagers/:id give each its own mode: thread and process', async () => {
    const { taskmanagers } = (await (await fetch(`${jobManager!.restUrl}/taskmanagers`)).json()) as {
      taskmanagers: Array<{ id: string; mode: string }>;
    };
    expect(new Map(taskmanagers.map((tm) => [tm.id, tm.mode]))).to.deep.equal(started);
    for (const [id, mode] of started) {
      const details = (await (await fetch(`${jobManager!.restUrl}/taskmanagers/${id}`)).json()) as { mode: string };
      expect(details.mode, id).to.equal(mode);
    }
  });

  it("the dashboard's view and the overview say the same", async () => {
    const view = new URL('/dashboard/view', jobManager!.dashboardUrl!);
    view.search = new URL(jobManager!.dashboardUrl!).search;
    const body = (await (await fetch(view)).json()) as {
      overview: { taskExecutors: Array<{ resourceId: string; mode: string }> };
    };
    expect(new Map(body.overview.taskExecutors.map((te) => [te.resourceId, te.mode]))).to.deep.equal(started);
    expect(new Map(jobManager!.overview().taskExecutors.map((te) => [te.resourceId, te.mode]))).to.deep.equal(started);
  });

  it('slotwise overview prints each TaskManager with its mode', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(['overview', '--jobmanager', jobManager!.restUrl!], {
      stdout: (line) => out.push(...line.split('\n')),
      stderr: (line) => err.push(line),
      env: {},
      cwd: process.cwd(),
    });
    expect(code, err.join('\n')).to.equal(0);
    for (const [id, mode] of started) {
      const line = out.find((l) => l.trimStart().startsWith(id));
      expect(line, `a line for ${id} in:\n${out.join('\n')}`).to.match(
        new RegExp(`^ +${id} +${mode} +utilization \\d+ %$`),
      );
    }
  });

  it("a failing task's stack names the user's files and lines on both, not the uploaded bundle", async () => {
    // slotwise run bundles fails.mjs with check.ts (its inline source map naming them); each TaskManager runs one
    // subtask from its cached sha256-….mjs, and maps the stack where the error is made.
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(['run', '--jobmanager', jobManager!.restUrl!, 'fails.job.mjs'], {
      stdout: (line) => out.push(...line.split('\n')),
      stderr: (line) => err.push(line),
      env: {},
      cwd: SOURCE_MAPS,
    });
    const printed = out.join('\n');
    expect(code, `${printed}\n${err.join('\n')}`).to.equal(1);
    const rootCause = out.findIndex((line) => line.startsWith('root cause'));
    expect(out.slice(rootCause + 1, rootCause + 3), printed).to.deep.equal([
      `    at check (${SOURCE_MAPS}check.ts:7:9)`,
      `    at fails (${SOURCE_MAPS}fails.mjs:5:10)`,
    ]);
    expect(printed).not.to.contain('sha256-');

    const jobId = /^submitted job 'fails' as ([0-9a-f]{32})$/m.exec(printed)![1]!;
    interface Entry {
      stacktrace: string;
      taskManagerId?: string;
      concurrentExceptions?: Entry[];
    }
    const { exceptionHistory } = (await (await fetch(`${jobManager!.restUrl}/jobs/${jobId}/exceptions`)).json()) as {
      exceptionHistory: { entries: Entry[] };
    };
    const failures = exceptionHistory.entries.flatMap((entry) => [entry, ...(entry.concurrentExceptions ?? [])]);
    expect(new Set(failures.map((entry) => entry.taskManagerId)), 'a failure on each TaskManager').to.deep.equal(
      new Set(started.keys()),
    );
    for (const { stacktrace, taskManagerId } of failures) {
      const where = `the stack from the ${started.get(taskManagerId!)} TaskManager:\n${stacktrace}`;
      expect(stacktrace, where).to.contain(`\n    at check (${SOURCE_MAPS}check.ts:7:9)\n`);
      expect(stacktrace, where).to.contain(`\n    at fails (${SOURCE_MAPS}fails.mjs:5:10)\n`);
      expect(stacktrace, where).not.to.contain('sha256-');
    }

    // The dashboard shows the same exception history.
    const view = new URL('/dashboard/view', jobManager!.dashboardUrl!);
    view.search = new URL(jobManager!.dashboardUrl!).search;
    const body = (await (await fetch(view)).json()) as {
      jobs: Array<{ jobId: string; exceptions: { rootCause: Entry | null } }>;
    };
    const shown = body.jobs.find((job) => job.jobId === jobId)?.exceptions.rootCause?.stacktrace;
    expect(shown).to.contain(`\n    at check (${SOURCE_MAPS}check.ts:7:9)\n`).and.not.contain('sha256-');
  });
});
