/**
 * A session cluster's JobManager watched as a MiniCluster is: over a real nats-server, with two
 * TaskManagers in this process, its REST port serves Prometheus text at `/metrics` whose slot
 * figures equal its overview after a job, refuses the dashboard and `/metrics` without the token
 * (the API's routes stay open), and — in headless Chromium, when installed — its dashboard lists the
 * TaskManagers with their slots, shows a submitted job turn finished with each subtask's TaskManager
 * named whole, and a subtask's log panel shows the line its task logged on a TaskManager.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { startJobManager, type JobManager } from '../../lib/cluster/JobManager.js';
import { startTaskManager } from '../../lib/cluster/TaskManager.js';
import { IllegalArgumentError } from '../../lib/core/errors.js';
import { type Browser, chromiumOrSkip, launchChromium } from '../support/chromium.js';
import { until } from '../support/eventually.js';
import { natsServerOrSkip, startNatsServer, type NatsServer } from '../support/natsServer.js';
import { parsePrometheusText } from '../support/prometheusText.js';

const configuration = { 'heartbeat.interval': 1_000, 'heartbeat.timeout': 5_000 };
const ok = new URL('../fixtures/tasks/ok.ts', import.meta.url);
const sleep = new URL('../fixtures/tasks/sleep.ts', import.meta.url);

describe("a session cluster JobManager's metrics and dashboard (over NATS)", function () {
  this.timeout(120_000);
  let server: NatsServer;
  let jobManager: JobManager;
  const registry = new Registry();
  const taskManagers: Array<Awaited<ReturnType<typeof startTaskManager>>> = [];
  const cacheDirs: string[] = [];

  before(async function () {
    const binary = natsServerOrSkip(this, "JobManager's metrics and dashboard");
    server = await startNatsServer(binary);
    jobManager = await startJobManager({
      nats: server.url,
      clusterId: 'observed',
      configuration,
      metrics: { registry },
      rest: { port: 0 },
    });
    for (let i = 0; i < 2; i++) {
      cacheDirs.push(mkdtempSync(join(tmpdir(), 'slotwise-tm-cache-')));
      taskManagers.push(
        await startTaskManager({
          nats: server.url,
          clusterId: 'observed',
          cacheDir: cacheDirs[i]!,
          slots: 2,
          taskHeap: '512m',
          configuration,
        }),
      );
    }
    await until('both TaskManagers registered', () => jobManager.overview().taskExecutors.length === 2, 60_000);
  });

  after(async () => {
    for (const taskManager of taskManagers) await taskManager.close();
    await jobManager?.close();
    await server?.stop();
    for (const dir of cacheDirs) rmSync(dir, { recursive: true, force: true });
  });

  it('tells its REST and dashboard URLs: loopback, the same port, the dashboard with a token', () => {
    const rest = new URL(jobManager.restUrl!);
    const dashboard = new URL(jobManager.dashboardUrl!);
    expect(rest.hostname).to.equal('127.0.0.1');
    expect(dashboard.origin).to.equal(rest.origin);
    expect(dashboard.pathname).to.equal('/');
    expect(dashboard.searchParams.get('token')).to.match(/^[\w-]{20,}$/);
  });

  it("after a job, GET /metrics parses as Prometheus text and its slot figures equal the overview's", async () => {
    const job = await jobManager.submitJob({
      name: 'counted',
      vertices: [
        { id: 'src', taskModule: ok, parallelism: 3 },
        { id: 'sink', taskModule: ok, parallelism: 1 },
      ],
      edges: [{ from: 'src', to: 'sink', pattern: 'all-to-all' }],
    });
    const result = await job.result;
    expect(result.status, result.error?.message).to.equal('finished');
    // Slots go back to the SlotManager a moment after the job ends; compare once they are all free.
    await until('every slot free again', () =>
      jobManager.overview().taskExecutors.every((te) => te.slots.every((slot) => slot.state === 'free')),
    );
    const token = new URL(jobManager.dashboardUrl!).searchParams.get('token')!;
    // As a Prometheus scraper asks: the token as a bearer.
    const response = await fetch(`${jobManager.restUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    expect(response.status).to.equal(200);
    expect(response.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
    const text = parsePrometheusText(await response.text());
    const overview = jobManager.overview();
    const slots = overview.taskExecutors.flatMap((te) => te.slots);
    expect(text.value('slotwise_jobmanager_taskSlotsTotal')).to.equal(slots.length).and.equal(4);
    expect(text.value('slotwise_jobmanager_taskSlotsAvailable')).to.equal(
      slots.filter((s) => s.state === 'free').length,
    );
    for (const state of ['free', 'pending', 'allocated', 'unavailable'] as const)
      expect(text.value('slotwise_task_slots', { state }), state).to.equal(
        slots.filter((s) => s.state === state).length,
      );
    expect(text.value('slotwise_jobmanager_numRegisteredTaskManagers')).to.equal(2);
    expect(text.value('slotwise_jobmanager_numPendingTaskManagers')).to.equal(overview.pendingWorkers);
    expect(text.value('slotwise_jobmanager_numRunningJobs')).to.equal(0);
    expect(text.value('slotwise_jobmanager_job_numRestarts', { job_id: job.jobId, job_name: 'counted' })).to.equal(0);
    expect(text.value('slotwise_jobmanager_job_uptime', { job_id: job.jobId }), 'ended: -1').to.equal(-1);
    expect(text.value('slotwise_subtasks_ended_total', { state: 'finished' })).to.equal(4);
    expect(text.value('slotwise_slot_allocation_latency_seconds_count')).to.equal(4);
    expect(text.value('slotwise_subtask_deploy_latency_seconds_count')).to.equal(4);
    // Run and wait times per TaskExecutor, measured at the JobManager from the state updates that crossed NATS.
    const runCounts = taskManagers.map((tm) => {
      const sample = text.samples.find(
        (s) => s.name === 'slotwise_task_run_time_seconds_count' && s.labels['resource_id'] === tm.resourceId,
      );
      return sample?.value ?? 0;
    });
    expect(runCounts.reduce((a, b) => a + b, 0)).to.equal(4);
    // The same figures from code, from the same registry (the one passed in).
    expect(jobManager.metricsRegistry).to.equal(registry);
    const snapshot = await jobManager.metrics();
    expect(snapshot.taskSlotsTotal).to.equal(4);
  });

  it('refuses the dashboard and /metrics without the token (the REST API stays open)', async () => {
    const origin = new URL(jobManager.restUrl!).origin;
    for (const path of ['/', '/metrics', '/dashboard/view']) {
      const response = await fetch(`${origin}${path}`);
      expect(response.status, path).to.equal(403);
      expect(await response.text(), path).to.match(/token/);
    }
    const wrong = await fetch(`${origin}/metrics`, { headers: { authorization: 'Bearer not-the-token' } });
    expect(wrong.status).to.equal(403);
    expect((await fetch(`${origin}/overview`)).status, 'the API has its own rule').to.equal(200);
  });

  it('refuses bad rest options with a typed error naming the option, before connecting', async () => {
    for (const [rest, named] of [
      [{ port: 70_000 }, 'options.rest.port'],
      [{ address: 'a b' }, 'options.rest.address'],
      [{ host: '127.0.0.1' }, "unknown option 'host'"],
    ] as const) {
      const error = await startJobManager({ nats: server.url, clusterId: 'refused', rest: rest as never }).then(
        () => expect.fail('started'),
        (e: unknown) => e,
      );
      expect(error, named).to.be.instanceOf(IllegalArgumentError);
      expect((error as Error).message).to.contain(named);
    }
  });

  describe('its dashboard in headless Chromium', () => {
    let browser: Browser;

    before(async function () {
      chromiumOrSkip(this);
      browser = await launchChromium();
    });

    after(() => browser?.close());

    it("lists the TaskManagers and their slots, shows a job turn finished, and a subtask's log line", async () => {
      const { page } = browser;
      const response = await page.goto(jobManager.dashboardUrl!);
      expect(response!.status()).to.equal(200);
      await page.locator('[data-testid=connection]', { hasText: 'live' }).waitFor();
      await page.locator('[data-testid=executor]').nth(1).waitFor();
      const shown = await page.locator('[data-testid=executor]').evaluateAll((nodes) =>
        nodes.map((n) => ({
          id: n.getAttribute('data-resource-id'),
          slots: [...n.querySelectorAll('[data-testid=slot]')].map((s) => s.getAttribute('data-slot')),
        })),
      );
      expect(shown.map((e) => e.id).sort()).to.deep.equal(taskManagers.map((tm) => tm.resourceId).sort());
      for (const executor of shown) expect(executor.slots).to.deep.equal(['0', '1']);
      expect(await page.locator('[data-testid=overview-slots-total] .value').textContent()).to.equal('4');

      const job = await jobManager.submitJob({
        name: 'watched',
        vertices: [
          { id: 'nap', taskModule: sleep, parallelism: 2, config: { ms: 1_500 } },
          { id: 'tell', taskModule: ok, parallelism: 1 },
        ],
        edges: [{ from: 'nap', to: 'tell', pattern: 'all-to-all' }],
      });
      const box = page.locator(`[data-testid=job][data-job-id="${job.jobId}"]`);
      await box.waitFor();
      expect(await box.locator('[data-testid=job-name]').textContent()).to.equal('watched');
      expect((await job.result).status).to.equal('finished');
      await page.locator(`[data-testid=job][data-job-id="${job.jobId}"][data-status=finished]`).waitFor();
      expect(await box.locator('[data-testid=subtask][data-state=finished]').count()).to.equal(3);
      await box.locator('[data-testid=job-summary]').click();
      // Each ended subtask names its TaskManager whole (not `taskmana`).
      const executors = await box.locator('[data-testid=subtask] [data-testid=subtask-executor]').allTextContents();
      expect(executors).to.have.length(3);
      for (const name of executors) expect(taskManagers.map((tm) => tm.resourceId)).to.include(name);
      // The sink's log panel shows the line its task logged on a TaskManager (forwarded to the JobManager).
      const tell = box.locator('[data-testid=subtask][data-vertex=tell]');
      await tell.locator('[data-testid=subtask-logs-toggle]').click();
      await box.locator('[data-testid=subtask-logs]', { hasText: 'INFO summing 0 inputs' }).waitFor();
      const origin = new URL(jobManager.dashboardUrl!).origin;
      for (const url of browser.requested) expect(new URL(url).origin, url).to.equal(origin);
    });
  });
});
