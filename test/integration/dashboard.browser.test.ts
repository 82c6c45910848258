/**
 * The dashboard in headless Chromium (Debian's chromium, driven by playwright-core), on a real
 * MiniCluster: the page loads with no request leaving localhost, lists the TaskExecutors and their
 * slots, shows a job page (its graph, its subtasks and slots, collapsed once it finished, still saying
 * the TaskExecutor and slot each subtask ran in), cancels a running job with its
 * button, shows a failed job's exceptions, shows a chosen actor's state and events, and refuses a
 * request without the token. A
 * screenshot is saved under test-artifacts/. Skips, saying why, when chromium is not installed.
 */
import { expect } from 'chai';
import { mkdirSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { MiniCluster } from '../../lib/MiniCluster.js';
import { type Browser, chromiumOrSkip, launchChromium } from '../support/chromium.js';

const ARTIFACTS = new URL('../../test-artifacts/', import.meta.url);
const sleep = new URL('../fixtures/tasks/sleep.ts', import.meta.url);
const throws = new URL('../fixtures/tasks/throws.ts', import.meta.url);

describe('the dashboard in a browser (headless Chromium)', function () {
  this.timeout(120_000);
  let cluster: MiniCluster;
  let browser: Browser;
  let page: Page;

  before(async function () {
    chromiumOrSkip(this);
    cluster = await MiniCluster.start({ taskExecutors: 2, slotsPerTaskExecutor: 2, dashboard: { port: 0 } });
    browser = await launchChromium();
    page = browser.page;
  });

  after(async () => {
    await browser?.close();
    await cluster?.close();
  });

  it('loads with no request leaving localhost', async () => {
    const response = await page.goto(cluster.dashboardUrl!);
    expect(response!.status()).to.equal(200);
    await page.locator('[data-testid=connection]', { hasText: 'live' }).waitFor();
    await page.locator('[data-testid=executor]').first().waitFor();
    const origin = new URL(cluster.dashboardUrl!).origin;
    expect(browser.requested.length, 'the page, its assets and its stream').to.be.greaterThanOrEqual(5);
    for (const url of browser.requested) expect(new URL(url).origin, url).to.equal(origin);
  });

  it('lists the TaskExecutors and their slots', async () => {
    const overview = cluster.overview();
    await page.locator('[data-testid=executor]').nth(1).waitFor();
    const shown = await page.locator('[data-testid=executor]').evaluateAll((nodes) =>
      nodes.map((n) => ({
        id: n.getAttribute('data-resource-id'),
        slots: [...n.querySelectorAll('[data-testid=slot]')].map(
          (s) => `${s.getAttribute('data-slot')}:${s.getAttribute('data-state')}`,
        ),
      })),
    );
    expect(shown).to.deep.equal(
      overview.taskExecutors.map((te) => ({ id: te.resourceId, slots: ['0:free', '1:free'] })),
    );
    expect(await page.locator('[data-testid=overview-slots-total] .value').textContent()).to.equal('4');
  });

  it(
    'shows a job page: the graph with its edges and parallelism, each subtask where it runs, ' +
      'and once ended, collapsed, with the TaskExecutor and slot each subtask ran in',
    async () => {
      const job = await cluster.submitJob({
        name: 'shown',
        vertices: [
          { id: 'nap', taskModule: sleep, parallelism: 2, config: { ms: 3_000 } },
          { id: 'gather', taskModule: sleep, parallelism: 1, config: { ms: 10 } },
        ],
        edges: [{ from: 'nap', to: 'gather', pattern: 'all-to-all' }],
      });
      const box = page.locator(`[data-testid=job][data-job-id="${job.jobId}"]`);
      await box.locator('[data-testid=subtask][data-state=running]').nth(1).waitFor();
      expect(await box.locator('[data-testid=job-name]').textContent()).to.equal('shown');
      expect(await box.evaluate((n) => n.hasAttribute('open')), 'a running job is open').to.equal(true);
      const graph = box.locator('[data-testid=job-graph]');
      expect(
        await graph
          .locator('[data-testid=graph-vertex]')
          .evaluateAll((nodes) =>
            nodes.map((n) => `${n.getAttribute('data-vertex')}×${n.getAttribute('data-parallelism')}`),
          ),
      ).to.deep.equal(['nap×2', 'gather×1']);
      const edge = graph.locator('[data-testid=graph-edge]');
      expect(await edge.count()).to.equal(1);
      expect(await edge.getAttribute('data-from')).to.equal('nap');
      expect(await edge.getAttribute('data-to')).to.equal('gather');
      expect(await edge.textContent()).to.equal('all-to-all');
      const running = await box.locator('[data-testid=subtask][data-state=running]').evaluateAll((nodes) =>
        nodes.map((n) => ({
          te: n.getAttribute('data-resource-id'),
          allocation: n.getAttribute('data-allocation-id'),
        })),
      );
      expect(running).to.have.length(2);
      for (const { te, allocation } of running) {
        // The subtask's slot is in its TaskExecutor's table, allocated to the job.
        const slot = page.locator(
          `[data-testid=executor][data-resource-id="${te}"] [data-testid=slot][data-allocation-id="${allocation}"]`,
        );
        expect(await slot.getAttribute('data-state')).to.equal('allocated');
        expect(await slot.locator('[data-testid=slot-tasks]').textContent()).to.match(/^nap#[01] \(running\)$/);
      }
      const placed = new Map(running.map(({ te, allocation }) => [allocation, te]));

      expect((await job.result).status).to.equal('finished');
      await page.locator(`[data-testid=job][data-job-id="${job.jobId}"][data-status=finished]`).waitFor();
      expect(await box.evaluate((n) => n.hasAttribute('open')), 'an ended job is collapsed').to.equal(false);
      expect(await box.locator('[data-testid=cancel-job]').count(), 'no cancel button on an ended job').to.equal(0);
      await box.locator('[data-testid=job-summary]').click();
      const nap = box.locator('[data-testid=subtask][data-vertex=nap]');
      await nap.nth(1).waitFor();
      // Ended, each subtask still says where it ran: its TaskExecutor whole, its slot, when and how long.
      for (let i = 0; i < 2; i++) {
        const row = nap.nth(i);
        expect(await row.getAttribute('data-state')).to.equal('finished');
        const allocation = (await row.getAttribute('data-allocation-id'))!;
        expect(placed.get(allocation), 'the slot it ran in').to.be.a('string');
        expect(await row.locator('[data-testid=subtask-executor]').textContent()).to.equal(placed.get(allocation));
        const slot = await row.locator('[data-testid=subtask-slot]').textContent();
        expect(slot).to.match(/^slot [01] · [0-9a-f]{8}$/);
        expect(await row.locator('[data-testid=subtask-slot]').getAttribute('title')).to.equal(
          `AllocationID ${allocation}`,
        );
        expect(await row.locator('td:nth-child(8)').textContent()).to.match(/^\d+(\.\d)? s$/);
      }
      expect(await box.locator('[data-testid=job-times]').textContent()).to.match(/→ .* · \d+(\.\d)? s$/);
      expect(await graph.locator('[data-testid=graph-vertex][data-state=finished]').count()).to.equal(2);
      // A MiniCluster keeps no task records: its panel says where they go.
      await nap.first().locator('[data-testid=subtask-logs-toggle]').click();
      await box.locator('[data-testid=subtask-logs]', { hasText: 'MiniCluster.start' }).waitFor();
      // The producers' partitions, as their TaskExecutors tell them: read and released, their bytes counted.
      await page
        .locator('[data-testid=executor-partitions]', {
          hasText: /^result partitions: 0 held, 0 b in memory, 0 b on disk · produced [1-9]/,
        })
        .first()
        .waitFor();
    },
  );

  it('cancels a running job with its cancel button (and shows what waits for slots, and why)', async () => {
    // Six subtasks on four slots: four run, two wait for slots no TaskExecutor has.
    const job = await cluster.submitJob({
      name: 'to cancel',
      vertices: [{ id: 'long', taskModule: sleep, parallelism: 6, config: { ms: 120_000 } }],
    });
    const box = page.locator(`[data-testid=job][data-job-id="${job.jobId}"]`);
    await box.locator('[data-testid=subtask][data-state=running]').nth(3).waitFor();
    await page.locator('[data-testid=pending-request]').first().waitFor();
    expect(await page.locator('[data-testid=pending-request]').first().getAttribute('data-reason')).to.equal(
      'insufficient-resources',
    );
    // For the picture (not an assertion): the SlotManager's statechart shown, two more chart points.
    const select = page.locator('[data-testid=actor-select]');
    await select.selectOption(
      (await select.locator('option', { hasText: 'slotManager' }).first().getAttribute('value'))!,
    );
    await page.waitForTimeout(1_500);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: new URL('dashboard.png', ARTIFACTS).pathname, fullPage: true });
    await box.locator('[data-testid=cancel-job]').click();
    expect((await job.result).status).to.equal('canceled');
    await page.locator(`[data-testid=job][data-job-id="${job.jobId}"][data-status=canceled]`).waitFor();
  });

  it("shows a failed job's Exceptions: the root cause with its stack, each failed attempt and where", async () => {
    const job = await cluster.submitJob({
      name: 'unlucky',
      vertices: [{ id: 'boom', taskModule: throws, parallelism: 1 }],
      restartStrategy: { type: 'fixed-delay', attempts: 1, delay: 0 },
    });
    expect((await job.result).status).to.equal('failed');
    const box = page.locator(`[data-testid=job][data-job-id="${job.jobId}"][data-status=failed]`);
    await box.locator('[data-testid=job-summary]').click();
    await box.locator('[data-testid=exception]').nth(1).waitFor();
    const root = await box.locator('[data-testid=root-cause]').textContent();
    expect(root).to.contain('TaskExecutionError').and.contain('boom in boom #0');
    // The user's file and the line of the throw (throws.ts:5), not a compiled or cached copy.
    expect(root).to.match(
      /Caused by: RangeError: boom in boom #0\s+at throws \(\/\S*\/test\/fixtures\/tasks\/throws\.ts:5:17\)/,
    );
    expect(await box.locator('[data-testid=exception-task]').allTextContents()).to.deep.equal([
      'boom (1/1)#1',
      'boom (1/1)#0',
    ]);
    // The subtask's first attempt stays listed under its second, with the TaskExecutor it ran on.
    const prior = box.locator('[data-testid=prior-attempt]');
    expect(await prior.count()).to.equal(1);
    expect(await prior.locator('td:nth-child(2)').textContent()).to.equal('#0');
    expect(await prior.locator('[data-testid=subtask-executor]').textContent()).to.match(/^taskexecutor-[0-9a-f]+$/);
    const where = await box.locator('[data-testid=exception] td:nth-child(3)').first().textContent();
    expect(where).to.match(/^taskexecutor-[0-9a-f]+ \/ [0-9a-f]{8}$/);
    mkdirSync(ARTIFACTS, { recursive: true });
    // The page renders the jobs anew with every view the server pushes: a box replaced while it was being captured
    // ("not attached to the DOM") is captured again.
    for (let attempt = 1; ; attempt++) {
      try {
        await box.screenshot({ path: new URL('dashboard-exceptions.png', ARTIFACTS).pathname });
        break;
      } catch (error) {
        if (attempt === 3) throw error;
      }
    }
  });

  it("shows a chosen actor's state and recent events, from the inspection stream", async () => {
    const select = page.locator('[data-testid=actor-select]');
    const slotManager = await select.locator('option', { hasText: 'slotManager' }).first().getAttribute('value');
    expect(slotManager, 'the SlotManager is listed').to.be.a('string').and.not.equal('');
    await select.selectOption(slotManager!);
    await page.locator('[data-testid=actor-name]', { hasText: 'slotManager' }).waitFor();
    expect(await page.locator('[data-testid=actor-state]').textContent()).to.match(/started/);
    expect(await page.locator('[data-testid=actor-events] li').count()).to.be.greaterThan(0);
    const tables = select.locator('option', { hasText: 'taskSlotTable @ taskexecutor-' });
    expect(await tables.count(), 'one TaskSlotTable per TaskExecutor').to.equal(2);
    // A worker's actor (its id names the TaskExecutor: `taskexecutor-…/x:1`), watched the same way.
    await select.selectOption((await tables.first().getAttribute('value'))!);
    await page.locator('[data-testid=actor-name]', { hasText: 'taskSlotTable @ taskexecutor-' }).waitFor();
    expect(await page.locator('[data-testid=actor-state]').textContent()).to.equal('running');
  });

  it('refuses a request without the token', async () => {
    const url = new URL(cluster.dashboardUrl!);
    const response = await page.goto(`${url.origin}/`);
    expect(response!.status()).to.equal(403);
    expect(await page.textContent('body')).to.match(/token/);
    const metrics = await fetch(`${url.origin}/metrics`);
    expect(metrics.status).to.equal(403);
  });
});
