/**
 * The routes slotwise shares with Flink's REST API answer in Flink's shape (flink-shapes/shapes.json,
 * written from Flink's message classes), for a finished job and a failed one; Flink's paths that
 * `/jobs/:jobid` used to swallow (`/jobs/overview`, `/jobs/metrics`) resolve; an unknown path is 404.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MiniCluster } from '../../lib/MiniCluster.js';
import { miniClusterTarget } from '../../lib/rest/miniClusterTarget.js';
import { startRestServer, type RestServer } from '../../lib/rest/RestServer.js';
import { until } from '../support/eventually.js';
import { departures, FLINK_SHAPES } from './flinkShape.js';
import { call, sumOfSquaresBody, upload } from './support.js';

describe("REST API: Flink's routes in Flink's shape", function () {
  this.timeout(60_000);
  let cluster: MiniCluster;
  let server: RestServer;
  let codeDir: string;
  const jobs: { finished: string; failed: string } = { finished: '', failed: '' };
  const get = (path: string) => call(server.url, 'GET', path);

  before(async () => {
    codeDir = mkdtempSync(join(tmpdir(), 'slotwise-flink-routes-'));
    cluster = await MiniCluster.start({ taskExecutors: 1, slotsPerTaskExecutor: 2 });
    server = await startRestServer({ target: miniClusterTarget(cluster, { taskCodeDir: codeDir }), port: 0 });
    jobs.finished = (await call(server.url, 'POST', '/jobs', sumOfSquaresBody(10, 2))).json.jobid;
    jobs.failed = (
      await call(server.url, 'POST', '/jobs', {
        job: {
          name: 'unlucky',
          vertices: [{ id: 'boom', taskModule: 'boom.mjs', parallelism: 1 }],
          restartStrategy: { type: 'fixed-delay', attempts: 1, delay: 0 },
        },
        taskCode: [upload('boom.mjs', 'export default async function boom() {\n  throw new Error("boom");\n}\n')],
      })
    ).json.jobid;
    for (const jobId of Object.values(jobs))
      await until('the job to end', async () =>
        (await get(`/jobs/${jobId}/execution-result`)).json.status.id === 'COMPLETED' ? true : undefined,
      );
  });

  after(async () => {
    await server?.close();
    await cluster?.close();
    rmSync(codeDir, { recursive: true, force: true });
  });

  for (const route of Object.keys(FLINK_SHAPES.routes)) {
    it(`GET ${route} answers 200 in Flink's shape`, async () => {
      const paths = route.includes(':jobid')
        ? Object.values(jobs).map((jobId) =>
            route.replace(':jobid', jobId).replace(':vertexid', jobId === jobs.failed ? 'boom' : 'square'),
          )
        : [route];
      for (const path of paths) {
        const answer = await get(path);
        expect(answer.status, `${path}: ${JSON.stringify(answer.json)}`).to.equal(200);
        expect(departures(answer.json, FLINK_SHAPES.routes[route]!), path).to.deep.equal([]);
      }
    });
  }

  it("gives memory under Flink's keys in MiB, as Flink's ResourceProfileInfo", async () => {
    const [tm] = (await get('/taskmanagers')).json.taskmanagers;
    // The default TaskExecutor: 1 core per slot, 256 mb of task heap.
    expect(tm.totalResource).to.include({ cpuCores: 2, taskHeapMemory: 256 });
    expect(tm.totalResourceBytes.taskHeapMemory).to.equal(256 * 1024 * 1024);
  });

  it('a finished job in /jobs/overview with its task counts, its vertices with when each subtask ran', async () => {
    const overview = (await get('/jobs/overview')).json.jobs.find((j: { jid: string }) => j.jid === jobs.finished);
    expect(overview).to.include({ name: 'sum of squares', state: 'FINISHED' });
    expect(overview.tasks).to.include({ total: 3, finished: 3 });
    const vertex = (await get(`/jobs/${jobs.finished}/vertices/square`)).json;
    expect(vertex.subtasks.map((s: { subtask: number; status: string }) => [s.subtask, s.status])).to.deep.equal([
      [0, 'FINISHED'],
      [1, 'FINISHED'],
    ]);
    for (const subtask of vertex.subtasks) {
      expect(subtask['end-time']).to.be.at.least(subtask['start-time']);
      expect(subtask['start-time']).to.be.greaterThan(0);
      expect(subtask['taskmanager-id']).to.match(/^taskexecutor-/);
    }
    const plan = (await get(`/jobs/${jobs.finished}/plan`)).json.plan;
    expect(plan.nodes.map((n: { id: string }) => n.id)).to.deep.equal(['square', 'sum']);
    expect(plan.nodes[1].inputs).to.deep.equal([
      { num: 0, id: 'square', ship_strategy: 'ALL_TO_ALL', exchange: 'blocking' },
    ]);
  });

  it('answers 404 for an unknown path, a path segment that is no JobID, and an unknown vertex', async () => {
    for (const path of ['/jobs/overviewx', '/jobs/nothex/plan', '/nothing', `/jobs/${jobs.finished}/vertices/nope`]) {
      const answer = await get(path);
      expect(answer.status, path).to.equal(404);
      expect(answer.json.errors).to.deep.equal([answer.json.message]);
    }
    expect((await get('/jobs/overviewx')).json.message).to.contain('params.jobid must be a JobID');
  });

  it("answers 404 for a MiniCluster's task logs, saying where they go", async () => {
    const taskManager = cluster.overview().taskExecutors[0]!.resourceId;
    for (const path of [`/jobs/${jobs.finished}/logs`, `/taskmanagers/${taskManager}/logs`]) {
      const answer = await get(path);
      expect(answer.status, path).to.equal(404);
      expect(answer.json.message, path).to.contain("a MiniCluster's records go to the logger");
    }
  });
});
