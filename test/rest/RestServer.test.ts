/**
 * The REST API over an in-process MiniCluster (one TaskExecutor thread, two slots), through real
 * HTTP with Node's fetch: every route in Flink's shape, and every refusal with its status and typed
 * body, changing nothing.
 */
import { expect } from 'chai';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MiniCluster } from '../../lib/MiniCluster.js';
import { miniClusterTarget } from '../../lib/rest/miniClusterTarget.js';
import { startRestServer, type RestServer } from '../../lib/rest/RestServer.js';
import type { RestTarget } from '../../lib/rest/RestTarget.js';
import { until } from '../support/eventually.js';
import { call, SLEEP, sumOfSquaresBody, upload, type Answer } from './support.js';

const UNKNOWN_JOB = '0123456789abcdef0123456789abcdef';

describe('REST API (startRestServer over a MiniCluster)', function () {
  this.timeout(60_000);
  let cluster: MiniCluster;
  let target: RestTarget;
  let server: RestServer;
  let codeDir: string;
  const api = (method: string, path: string, body?: unknown, raw?: { body: string; type: string }) =>
    call(server.url, method, path, body, raw);
  const expectRefusal = (answer: Answer, status: number, tag: string, reason: string) => {
    expect(answer.status, JSON.stringify(answer.json)).to.equal(status);
    expect(answer.json).to.include({ _tag: tag, reason });
    expect(answer.json.message).to.be.a('string').and.not.equal('');
    expect(answer.json.errors).to.deep.equal([answer.json.message]);
  };
  const jobCount = async () => (await api('GET', '/jobs')).json.jobs.length as number;

  before(async () => {
    codeDir = mkdtempSync(join(tmpdir(), 'slotwise-rest-test-'));
    cluster = await MiniCluster.start({ taskExecutors: 1, slotsPerTaskExecutor: 2 });
    target = miniClusterTarget(cluster, { taskCodeDir: codeDir });
    server = await startRestServer({ target, port: 0 });
  });

  after(async () => {
    await server?.close();
    await cluster?.close();
    rmSync(codeDir, { recursive: true, force: true });
  });

  it('listens on loopback at a free port with port 0', () => {
    expect(server.url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.url).not.to.equal('http://127.0.0.1:0');
  });

  it("GET /overview: Flink's ClusterOverview counts, as numbers", async () => {
    const { status, json } = await api('GET', '/overview');
    expect(status).to.equal(200);
    expect(json).to.include({
      taskmanagers: 1,
      'slots-total': 2,
      'slots-available': 2,
      'jobs-running': 0,
      'jobs-failed': 0,
    });
    expect(json.pendingRequests).to.deep.equal([]);
  });

  it('GET /taskmanagers and /taskmanagers/:id: the TaskExecutor, its resources and its slots', async () => {
    const list = await api('GET', '/taskmanagers');
    expect(list.status).to.equal(200);
    expect(list.json.taskmanagers).to.have.length(1);
    const tm = list.json.taskmanagers[0];
    expect(tm).to.include({ slotsNumber: 2, freeSlots: 2, mode: 'thread' });
    expect(tm.id).to.match(/^taskexecutor-/);
    expect(tm.totalResource.cpuCores).to.equal(2);
    expect(tm.totalResource.taskHeapMemory).to.equal(256);
    const detail = await api('GET', `/taskmanagers/${tm.id}`);
    expect(detail.status).to.equal(200);
    expect(detail.json.slots.map((s: { slot: string; state: string }) => `${s.slot}:${s.state}`)).to.deep.equal([
      '0:free',
      '1:free',
    ]);
    expect(detail.json.allocatedSlots).to.deep.equal([]);
  });

  it('refuses an unknown TaskManager (404) and a malformed ResourceID (404: no route names it)', async () => {
    expectRefusal(await api('GET', '/taskmanagers/taskexecutor-nothere'), 404, 'RestError', 'unknown-taskmanager');
    const bad = await api('GET', `/taskmanagers/${encodeURIComponent('bad id!')}`);
    expectRefusal(bad, 404, 'RestError', 'not-found');
    expect(bad.json.message).to.contain('params.taskmanagerid must be a ResourceID');
  });

  it("POST /jobs runs uploaded code; /jobs, /jobs/:id, /result and /events report it in Flink's shape", async () => {
    const submitted = await api('POST', '/jobs', sumOfSquaresBody(100, 4));
    expect(submitted.status, JSON.stringify(submitted.json)).to.equal(202);
    const jobId: string = submitted.json.jobid;
    expect(jobId).to.match(/^[0-9a-f]{32}$/);
    expect(submitted.json.jobUrl).to.equal(`/jobs/${jobId}`);

    const result = await until('the job result', async () => {
      const answer = await api('GET', `/jobs/${jobId}/result`);
      return answer.json.status.id === 'COMPLETED' ? answer : undefined;
    });
    expect(result.json['job-execution-result']).to.deep.include({
      id: jobId,
      'application-status': 'SUCCEEDED',
      status: 'finished',
      outputs: { sum: [338350] },
      error: null,
      restarts: 0,
    });
    expect(result.json['job-execution-result']['net-runtime']).to.be.a('number');

    expect((await api('GET', '/jobs')).json.jobs).to.deep.include({
      id: jobId,
      name: 'sum of squares',
      status: 'FINISHED',
    });

    const details = await api('GET', `/jobs/${jobId}`);
    expect(details.status).to.equal(200);
    expect(details.json).to.include({ jid: jobId, name: 'sum of squares', state: 'FINISHED', restarts: 0 });
    expect(details.json['end-time']).to.be.at.least(details.json['start-time']);
    expect(
      details.json.vertices.map((v: { id: string; parallelism: number; status: string }) => [
        v.id,
        v.parallelism,
        v.status,
      ]),
    ).to.deep.equal([
      ['square', 4, 'FINISHED'],
      ['sum', 1, 'FINISHED'],
    ]);
    expect(details.json.vertices[0].tasks.FINISHED).to.equal(4);
    expect(details.json.subtasks).to.have.length(5);
    const tm = (await api('GET', '/taskmanagers')).json.taskmanagers[0].id;
    for (const subtask of details.json.subtasks)
      expect(subtask).to.include({ status: 'FINISHED', 'taskmanager-id': tm });

    const events = await api('GET', `/jobs/${jobId}/events`);
    expect(events.status).to.equal(200);
    const statuses = events.json.events
      .filter((e: { type: string }) => e.type === 'status')
      .map((e: { status: string }) => e.status);
    expect(statuses).to.deep.equal(['created', 'running', 'finished']);
    const finishedTasks = events.json.events.filter(
      (e: { type: string; state: string }) => e.type === 'task' && e.state === 'finished',
    );
    expect(finishedTasks).to.have.length(5);
    expect(events.json.events.map((e: { seq: number }) => e.seq)).to.deep.equal([...events.json.events.keys()]);
    expect(events.json).to.include({ complete: true, first: 0, next: events.json.events.length });

    const page = await api('GET', `/jobs/${jobId}/events?from=2&limit=1`);
    expect(page.json.events.map((e: { seq: number }) => e.seq)).to.deep.equal([2]);
    expect(page.json).to.include({ next: 3, complete: false });
  });

  it('serves a job submitted in code too: its details, and its status events from the start', async () => {
    const job = await cluster.submitJob({
      name: 'in code',
      vertices: [
        { id: 'sum', taskModule: fileURLToPath(new URL('../fixtures/tasks/ok.ts', import.meta.url)), parallelism: 1 },
      ],
    });
    await job.result;
    const details = await api('GET', `/jobs/${job.jobId}`);
    expect(details.json).to.include({ jid: job.jobId, name: 'in code', state: 'FINISHED' });
    const events = await api('GET', `/jobs/${job.jobId}/events`);
    expect(events.json.events.map((e: { type: string; status?: string }) => e.status)).to.deep.equal([
      'created',
      'running',
      'finished',
    ]);
    expect(events.json.complete).to.equal(true);
  });

  it('stores uploaded code once, content-addressed by its SHA-256', async () => {
    const files = readdirSync(codeDir).sort();
    expect(files).to.have.length(2);
    for (const file of files) expect(file).to.match(/^[0-9a-f]{64}\.mjs$/);
    expect((await api('POST', '/jobs', sumOfSquaresBody(10, 2))).status).to.equal(202);
    expect(readdirSync(codeDir).sort()).to.deep.equal(files);
  });

  it("GET /jobs/:id/exceptions: a failed job's root cause and every failed attempt, in Flink's shape", async () => {
    const throws =
      'export default async function throws(context) {\n' +
      '  throw new RangeError("no luck in #" + context.attemptNumber);\n}\n';
    const submitted = await api('POST', '/jobs', {
      job: {
        name: 'unlucky',
        vertices: [{ id: 'throws', taskModule: 'throws.mjs', parallelism: 1 }],
        restartStrategy: { type: 'fixed-delay', attempts: 1, delay: 0 },
      },
      taskCode: [upload('throws.mjs', throws)],
    });
    const jobId: string = submitted.json.jobid;
    await until('the failed result', async () => {
      const answer = await api('GET', `/jobs/${jobId}/result`);
      return answer.json.status.id === 'COMPLETED' ? answer : undefined;
    });
    const tm = (await api('GET', '/taskmanagers')).json.taskmanagers[0].id;
    const answer = await api('GET', `/jobs/${jobId}/exceptions`);
    expect(answer.status).to.equal(200);
    const { entries } = answer.json.exceptionHistory;
    expect(
      entries.map((e: { taskName: string; exceptionName: string }) => [e.taskName, e.exceptionName]),
    ).to.deep.equal([
      ['throws (1/1)#1', 'TaskExecutionError'],
      ['throws (1/1)#0', 'TaskExecutionError'],
    ]);
    expect(entries[0]).to.include({ taskManagerId: tm, location: tm, attemptNumber: 1, subtaskIndex: 0 });
    expect(entries[0].allocationId).to.match(/^[0-9a-f]{32}$/);
    expect(entries[0].stacktrace).to.contain('Caused by: RangeError: no luck in #1\n    at throws (');
    expect(answer.json['root-exception']).to.equal(entries[0].stacktrace);
    expect(answer.json.timestamp).to.equal(entries[0].timestamp);
    const newest = await api('GET', `/jobs/${jobId}/exceptions?maxExceptions=1`);
    expect(newest.json.exceptionHistory.entries).to.have.length(1);
    expect(newest.json.exceptionHistory.truncated).to.equal(true);
  });

  it('GET /jobs/:id/exceptions: why a job no TaskExecutor can hold failed; none when it never failed', async () => {
    const body = sumOfSquaresBody(10, 1);
    const submitted = await api('POST', '/jobs', {
      ...body,
      job: {
        ...body.job,
        vertices: [
          { ...body.job.vertices[0], resources: { cpuCores: 64 }, slotSharingGroup: 'big' },
          body.job.vertices[1],
        ],
      },
    });
    const jobId: string = submitted.json.jobid;
    await until('the refused job to end', async () =>
      (await api('GET', `/jobs/${jobId}`)).json.state === 'FAILED' ? true : undefined,
    );
    const answer = await api('GET', `/jobs/${jobId}/exceptions`);
    const [root] = answer.json.exceptionHistory.entries;
    expect(root).to.include({ exceptionName: 'SlotRequestError' });
    expect(root).not.to.have.property('taskName');
    expect(answer.json['root-exception']).to.contain('which no TaskExecutor can ever hold');

    const fine = (await api('GET', '/jobs')).json.jobs.find(
      (j: { name: string; status: string }) => j.status === 'FINISHED',
    );
    const none = await api('GET', `/jobs/${fine.id}/exceptions`);
    expect(none.json).to.deep.include({
      'root-exception': null,
      timestamp: null,
      'all-exceptions': [],
      truncated: false,
    });
    expect(none.json.exceptionHistory).to.deep.equal({ entries: [], truncated: false });
  });

  it('PATCH /jobs/:id?mode=cancel cancels a running job (202), then refuses it as ended (409)', async () => {
    const submitted = await api('POST', '/jobs', {
      job: {
        name: 'sleeper',
        vertices: [{ id: 'sleep', taskModule: 'sleep.mjs', parallelism: 1, config: { ms: 60_000 } }],
      },
      taskCode: [upload('sleep.mjs', SLEEP)],
    });
    expect(submitted.status).to.equal(202);
    const jobId = submitted.json.jobid;
    await until(
      'the sleeper running',
      async () => (await api('GET', `/jobs/${jobId}`)).json.subtasks[0]?.status === 'RUNNING',
    );
    expect((await api('GET', `/jobs/${jobId}/result`)).json).to.deep.equal({ status: { id: 'IN_PROGRESS' } });
    expect((await api('GET', '/overview')).json['jobs-running']).to.equal(1);
    const canceled = await api('PATCH', `/jobs/${jobId}?mode=cancel`);
    expect(canceled.status).to.equal(202);
    const result = await until('the canceled result', async () => {
      const answer = await api('GET', `/jobs/${jobId}/result`);
      return answer.json.status.id === 'COMPLETED' ? answer.json['job-execution-result'] : undefined;
    });
    expect(result).to.include({ 'application-status': 'CANCELED', status: 'canceled' });
    expect((await api('GET', `/jobs/${jobId}`)).json.state).to.equal('CANCELED');
    expectRefusal(await api('PATCH', `/jobs/${jobId}`), 409, 'RestError', 'job-ended');
  });

  it('answers 404 for a path segment that is no JobID and for an unknown job, on every job route', async () => {
    for (const [method, path] of [
      ['GET', '/jobs/nothex'],
      ['GET', '/jobs/nothex/result'],
      ['GET', '/jobs/nothex/events'],
      ['PATCH', '/jobs/nothex?mode=cancel'],
    ] as const) {
      const answer = await api(method, path);
      expectRefusal(answer, 404, 'RestError', 'not-found');
      expect(answer.json.message).to.contain('params.jobid must be a JobID: 32 lowercase hex characters, got "nothex"');
    }
    for (const [method, path] of [
      ['GET', `/jobs/${UNKNOWN_JOB}`],
      ['GET', `/jobs/${UNKNOWN_JOB}/result`],
      ['GET', `/jobs/${UNKNOWN_JOB}/events`],
      ['PATCH', `/jobs/${UNKNOWN_JOB}?mode=cancel`],
    ] as const) {
      const answer = await api(method, path);
      expectRefusal(answer, 404, 'RestError', 'unknown-job');
      expect(answer.json.details.jobId).to.equal(UNKNOWN_JOB);
    }
  });

  it('refuses a bad cancel mode and bad event paging (400)', async () => {
    const jobId = (await api('GET', '/jobs')).json.jobs[0].id;
    const mode = await api('PATCH', `/jobs/${jobId}?mode=stop`);
    expectRefusal(mode, 400, 'RestError', 'bad-request');
    expect(mode.json.message).to.equal('querystring.mode must be one of "cancel", got "stop"');
    expectRefusal(await api('GET', `/jobs/${jobId}/events?from=-1`), 400, 'RestError', 'bad-request');
    expectRefusal(await api('GET', `/jobs/${jobId}/events?limit=0`), 400, 'RestError', 'bad-request');
    const unknown = await api('GET', `/jobs/${jobId}/events?since=3`);
    expect(unknown.json.message).to.equal("querystring has an unknown field 'since'");
  });

  it('refuses bad POST /jobs bodies with 4xx and a typed body, and starts no job', async () => {
    const before = await jobCount();
    const good = sumOfSquaresBody();
    const cases: Array<[string, Answer, number, string, string, string]> = [
      [
        'sha mismatch',
        await api('POST', '/jobs', {
          ...good,
          taskCode: [{ ...good.taskCode[0]!, code: `${good.taskCode[0]!.code} ` }, good.taskCode[1]!],
        }),
        400,
        'IllegalArgumentError',
        'invalid-value',
        'hashes to sha256',
      ],
      [
        'missing code',
        await api('POST', '/jobs', { ...good, taskCode: [good.taskCode[0]!] }),
        400,
        'RestError',
        'bad-request',
        "names task module 'sum.mjs', which is not in body.taskCode (square.mjs)",
      ],
      [
        'duplicate name',
        await api('POST', '/jobs', { ...good, taskCode: [good.taskCode[0]!, good.taskCode[0]!] }),
        400,
        'RestError',
        'bad-request',
        "names 'square.mjs' twice",
      ],
      [
        'no taskCode',
        await api('POST', '/jobs', { job: good.job }),
        400,
        'RestError',
        'bad-request',
        "body is missing 'taskCode'",
      ],
      [
        'unknown field',
        await api('POST', '/jobs', { ...good, extra: 1 }),
        400,
        'RestError',
        'bad-request',
        "body has an unknown field 'extra'",
      ],
      [
        'bad sha format',
        await api('POST', '/jobs', { ...good, taskCode: [{ ...good.taskCode[0]!, sha256: 'abc' }, good.taskCode[1]!] }),
        400,
        'RestError',
        'bad-request',
        'body.taskCode.0.sha256 must be the SHA-256',
      ],
      [
        'parallelism 0',
        await api('POST', '/jobs', {
          ...good,
          job: { ...good.job, vertices: [{ ...good.job.vertices[0]!, parallelism: 0 }, good.job.vertices[1]!] },
        }),
        400,
        'JobGraphError',
        'invalid-parallelism',
        'square',
      ],
      [
        'no parallelism, the cluster running the default scheduler',
        await api('POST', '/jobs', {
          ...good,
          job: {
            ...good.job,
            vertices: [{ id: 'square', taskModule: good.job.vertices[0]!.taskModule }, good.job.vertices[1]!],
          },
        }),
        400,
        'JobGraphError',
        'invalid-parallelism',
        "only the adaptive scheduler (scheduler: 'adaptive'",
      ],
      [
        'parallelism text',
        await api('POST', '/jobs', {
          ...good,
          job: { ...good.job, vertices: [{ ...good.job.vertices[0]!, parallelism: '4' }, good.job.vertices[1]!] },
        }),
        400,
        'RestError',
        'bad-request',
        'body.job.vertices.0.parallelism must be integer, got string',
      ],
      [
        'no default export',
        await api('POST', '/jobs', {
          job: { name: 'x', vertices: [{ id: 'a', taskModule: 'a.mjs', parallelism: 1 }] },
          taskCode: [upload('a.mjs', 'export const a = 1;\n')],
        }),
        400,
        'JobGraphError',
        'invalid-task-module',
        'default export',
      ],
      [
        'not JSON',
        await api('POST', '/jobs', undefined, { body: 'job=1', type: 'text/plain' }),
        415,
        'RestError',
        'unsupported-media-type',
        'application/json',
      ],
      [
        'broken JSON',
        await api('POST', '/jobs', undefined, { body: '{"job": ', type: 'application/json' }),
        400,
        'RestError',
        'bad-request',
        'not valid JSON',
      ],
      [
        'empty body',
        await api('POST', '/jobs', undefined, { body: '', type: 'application/json' }),
        400,
        'RestError',
        'bad-request',
        'not valid JSON',
      ],
    ];
    for (const [what, answer, status, tag, reason, text] of cases) {
      expect(answer.status, `${what}: ${JSON.stringify(answer.json)}`).to.equal(status);
      expect(answer.json, what).to.include({ _tag: tag, reason });
      expect(answer.json.message, what).to.contain(text);
    }
    expect(await jobCount()).to.equal(before);
  });

  it('stores no uploaded code for a graph JobGraph refuses', async () => {
    const before = readdirSync(codeDir).sort();
    const fresh = upload('fresh.mjs', 'export default async () => 1; // never stored\n');
    const answer = await api('POST', '/jobs', {
      job: {
        name: 'cyclic',
        vertices: [
          { id: 'a', taskModule: 'fresh.mjs', parallelism: 1 },
          { id: 'b', taskModule: 'fresh.mjs', parallelism: 1 },
        ],
        edges: [
          { from: 'a', to: 'b', pattern: 'all-to-all' },
          { from: 'b', to: 'a', pattern: 'all-to-all' },
        ],
      },
      taskCode: [fresh],
    });
    expectRefusal(answer, 400, 'JobGraphError', 'cycle');
    expect(readdirSync(codeDir).sort()).to.deep.equal(before);
  });

  it('refuses a body over the limit with 413', async () => {
    const small = await startRestServer({ target, port: 0, bodyLimit: 1024 });
    try {
      const answer = await call(small.url, 'POST', '/jobs', {
        job: { name: 'big', vertices: [{ id: 'a', taskModule: 'a.mjs', parallelism: 1 }] },
        taskCode: [upload('a.mjs', `export default async () => '${'x'.repeat(4096)}';`)],
      });
      expectRefusal(answer, 413, 'RestError', 'body-too-large');
    } finally {
      await small.close();
    }
  });

  it('answers a wrong method with 405 and Allow, an unknown path with 404', async () => {
    const del = await api('DELETE', '/jobs');
    expectRefusal(del, 405, 'RestError', 'method-not-allowed');
    expect(del.headers.get('allow')).to.equal('GET, POST, HEAD');
    const put = await api('PUT', `/jobs/${UNKNOWN_JOB}`);
    expectRefusal(put, 405, 'RestError', 'method-not-allowed');
    expect(put.headers.get('allow')).to.equal('GET, PATCH, HEAD');
    expectRefusal(await api('POST', '/overview', {}), 405, 'RestError', 'method-not-allowed');
    const none = await api('GET', '/nothing/here');
    expectRefusal(none, 404, 'RestError', 'not-found');
    expect(none.json.message).to.contain('/overview');
  });

  it('refuses bad options at start, naming the option, and a port in use', async () => {
    const refused = async (options: unknown) => {
      try {
        await startRestServer(options as never);
      } catch (error) {
        return error as { _tag: string; details: { argument: string }; message: string };
      }
      throw new Error('startRestServer accepted bad options');
    };
    expect((await refused({ target, port: -1 })).details.argument).to.equal('port');
    expect((await refused({ target, port: 1.5 })).details.argument).to.equal('port');
    expect((await refused({ target, address: 'not an address' })).details.argument).to.equal('address');
    expect((await refused({ target, colour: 'red' })).details.argument).to.equal('colour');
    const noTarget = await refused({ target: { overview: () => 1 } });
    expect(noTarget.details.argument).to.equal('target');
    expect(noTarget.message).to.contain('storeTaskCode, submitJob');
    const busy = await refused({ target, port: Number(new URL(server.url).port) });
    expect(busy).to.include({ _tag: 'IllegalArgumentError' });
    expect(busy.message).to.contain('the port is in use');
  });
});
