/**
 * The REST API's routes, Flink's paths: each checks its input by schema (restSchemas.ts), asks the
 * RestTarget under a deadline, and renders Flink's shape (restViews.ts). A refused request starts
 * nothing: POST /jobs checks that every vertex names uploaded code, and the graph's rules, before
 * storing any of it (a module refused by the task module checker stays in the code cache).
 */
import type { FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RestError } from '../core/errors.js';
import type { JobID } from '../core/ids.js';
import { JobGraph, type JobGraphSpec, PRECHECK_OPTIONS } from '../jobmaster/JobGraph.js';
import { jsonBody } from './jsonStream.js';
import type { ForwardedRecord, RestTarget } from './RestTarget.js';
import {
  cancelQuery,
  eventsQuery,
  exceptionsQuery,
  jobsMetricsQuery,
  vertexParams,
  jobParams,
  noQuery,
  submitJobBody,
  taskManagerLogParams,
  taskManagerParams,
  type SubmitJobBody,
} from './restSchemas.js';
import {
  clusterOverviewView,
  dashboardConfigView,
  jobPlanView,
  jobsOverviewView,
  jobVertexView,
  jobDetailsView,
  jobExceptionsView,
  jobResultBody,
  jobsView,
  taskManagerDetailsView,
  taskManagerView,
} from './restViews.js';

/** Every route's path and methods (the server answers 405 for the others). */
export const ROUTES: Readonly<Record<string, readonly string[]>> = {
  '/config': ['GET'],
  '/overview': ['GET'],
  '/taskmanagers': ['GET'],
  '/taskmanagers/:taskmanagerid': ['GET'],
  '/taskmanagers/:taskmanagerid/logs': ['GET'],
  '/taskmanagers/:taskmanagerid/logs/:filename': ['GET'],
  '/jobs': ['GET', 'POST'],
  '/jobs/overview': ['GET'],
  '/jobs/metrics': ['GET'],
  '/jobs/:jobid': ['GET', 'PATCH'],
  '/jobs/:jobid/result': ['GET'],
  '/jobs/:jobid/execution-result': ['GET'],
  '/jobs/:jobid/plan': ['GET'],
  '/jobs/:jobid/vertices/:vertexid': ['GET'],
  '/jobs/:jobid/events': ['GET'],
  '/jobs/:jobid/exceptions': ['GET'],
  '/jobs/:jobid/logs': ['GET'],
};

const ENDED: ReadonlySet<string> = new Set(['finished', 'failed', 'canceled']);

let version: string | undefined;
/** This package's version (GET /config's `flink-version`), from the nearest package.json named slotwise. */
function packageVersion(): string {
  if (version !== undefined) return version;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 5; depth++, dir = dirname(dir)) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (manifest.name === 'slotwise' && typeof manifest.version === 'string') return (version = manifest.version);
    } catch {
      // No package.json here: look one level up.
    }
  }
  return (version = 'unknown');
}

export function registerRoutes(app: FastifyInstance, target: RestTarget, requestTimeoutMs: number): void {
  /** A target call under the request deadline: 504 rather than a request that never answers. */
  const ask = <T>(operation: string, call: () => Promise<T>): Promise<T> => {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new RestError('timed-out', `the cluster did not answer ${operation} within ${requestTimeoutMs} ms`, {
              status: 504,
              operation,
              timeoutMs: requestTimeoutMs,
            }),
          ),
        requestTimeoutMs,
      );
    });
    return Promise.race([call(), deadline]).finally(() => clearTimeout(timer));
  };
  const unknownJob = (jobId: string) =>
    new RestError(
      'unknown-job',
      `no job ${jobId} in this cluster (ended jobs are kept for ` +
        `jobstore.expiration-time, at most jobstore.max-capacity)`,
      { status: 404, jobId },
    );
  const jobIdOf = (request: { params: unknown }) => (request.params as { jobid: string }).jobid as JobID;

  app.get('/config', { schema: { querystring: noQuery } }, async () =>
    dashboardConfigView(Date.now(), packageVersion()),
  );

  app.get('/overview', { schema: { querystring: noQuery } }, async () =>
    clusterOverviewView(await ask('overview', () => target.overview()), packageVersion()),
  );

  app.get('/taskmanagers', { schema: { querystring: noQuery } }, async () => ({
    taskmanagers: (await ask('overview', () => target.overview())).taskExecutors.map(taskManagerView),
  }));

  app.get(
    '/taskmanagers/:taskmanagerid',
    { schema: { params: taskManagerParams, querystring: noQuery } },
    async (request) => {
      const id = (request.params as { taskmanagerid: string }).taskmanagerid;
      const te = (await ask('overview', () => target.overview())).taskExecutors.find((t) => t.resourceId === id);
      if (te === undefined)
        throw new RestError(
          'unknown-taskmanager',
          `no TaskManager ${id} is registered (GET /taskmanagers lists them)`,
          { status: 404, resourceId: id },
        );
      return taskManagerDetailsView(te);
    },
  );

  // Flink's LogListInfo: one log per TaskManager here, its forwarded records (forwardedLogs.ts).
  app.get(
    '/taskmanagers/:taskmanagerid/logs',
    { schema: { params: taskManagerParams, querystring: noQuery } },
    async (request) => {
      const id = (request.params as { taskmanagerid: string }).taskmanagerid;
      const page = await taskManagerLog(id);
      const size = page.records.reduce((bytes, record) => bytes + Buffer.byteLength(logLine(record)), 0);
      return { logs: [{ name: TASKMANAGER_LOG, size, mtime: page.records.at(-1)?.time ?? 0 }] };
    },
  );

  app.get(
    '/taskmanagers/:taskmanagerid/logs/:filename',
    { schema: { params: taskManagerLogParams, querystring: noQuery } },
    async (request, reply) => {
      const { taskmanagerid: id, filename } = request.params as { taskmanagerid: string; filename: string };
      if (filename !== TASKMANAGER_LOG)
        throw new RestError('not-found', `TaskManager ${id} has one log, ${TASKMANAGER_LOG}, not ${filename}`, {
          status: 404,
        });
      const page = await taskManagerLog(id);
      void reply.type('text/plain; charset=utf-8');
      return page.records.map(logLine).join('');
    },
  );

  /** A TaskManager's kept records; 404 when the cluster keeps none or knows no such TaskManager. */
  const taskManagerLog = async (id: string) => {
    const taskManagerLogs = target.taskManagerLogs?.bind(target);
    if (taskManagerLogs === undefined) throw noLogs();
    const page = await ask('taskManagerLogs', () => taskManagerLogs(id, 0, 10_000));
    if (page !== undefined) return page;
    const known = (await ask('overview', () => target.overview())).taskExecutors.some((t) => t.resourceId === id);
    if (!known)
      throw new RestError('unknown-taskmanager', `no TaskManager ${id} is registered (GET /taskmanagers lists them)`, {
        status: 404,
        resourceId: id,
      });
    return { records: [], next: 0, first: 0 };
  };

  app.get('/jobs', { schema: { querystring: noQuery } }, async () =>
    jobsView(await ask('listJobs', () => target.listJobs())),
  );

  // Static paths win over /jobs/:jobid (find-my-way matches static segments first).
  app.get('/jobs/overview', { schema: { querystring: noQuery } }, async () => {
    const jobs = await ask('listJobs', () => target.listJobs());
    const details = await Promise.all(jobs.map((job) => ask('jobDetails', () => target.jobDetails(job.jobId))));
    return jobsOverviewView(
      details.filter((d) => d !== undefined),
      Date.now(),
    );
  });

  // Flink's JobsAggregatingMetricsHandler: no job metric is aggregated here, so the list of what can be asked is empty.
  app.get('/jobs/metrics', { schema: { querystring: jobsMetricsQuery } }, async () => []);

  app.post('/jobs', { schema: { body: submitJobBody, querystring: noQuery } }, async (request, reply) => {
    const { job, taskCode } = request.body as SubmitJobBody;
    const names = new Set<string>();
    for (const code of taskCode) {
      if (names.has(code.name))
        throw new RestError(
          'bad-request',
          `body.taskCode names '${code.name}' twice; each uploaded module needs its own name`,
          { status: 400, name: code.name },
        );
      names.add(code.name);
    }
    for (const [i, vertex] of job.vertices.entries()) {
      if (!names.has(vertex.taskModule)) {
        throw new RestError(
          'bad-request',
          `body.job.vertices.${i} (${vertex.id}) names task module ` +
            `'${vertex.taskModule}', which is not in body.taskCode (${[...names].join(', ')})`,
          { status: 400, vertex: vertex.id, taskModule: vertex.taskModule },
        );
      }
    }
    // The graph's own rules first, with stand-in paths: a graph JobGraph refuses stores no code.
    JobGraph.create(
      {
        ...job,
        vertices: job.vertices.map((v) => ({
          ...v,
          taskModule: `/slotwise-upload/${v.taskModule.replace(/[^\w.-]/g, '_')}`,
        })),
      } as unknown as JobGraphSpec,
      PRECHECK_OPTIONS,
    );
    const stored = new Map<string, string>();
    for (const code of taskCode)
      stored.set(code.name, (await ask('storeTaskCode', () => target.storeTaskCode(code))).taskModule);
    const spec = {
      ...job,
      vertices: job.vertices.map((v) => ({ ...v, taskModule: stored.get(v.taskModule)! })),
    } as unknown as JobGraphSpec;
    const jobId = await ask('submitJob', () => target.submitJob(spec));
    return reply.code(202).send({ jobid: jobId, jobUrl: `/jobs/${jobId}` });
  });

  app.get('/jobs/:jobid', { schema: { params: jobParams, querystring: noQuery } }, async (request) => {
    const jobId = jobIdOf(request);
    const details = await ask('jobDetails', () => target.jobDetails(jobId));
    if (details === undefined) throw unknownJob(jobId);
    return jobDetailsView(details, Date.now());
  });

  app.patch('/jobs/:jobid', { schema: { params: jobParams, querystring: cancelQuery } }, async (request, reply) => {
    const jobId = jobIdOf(request);
    const details = await ask('jobDetails', () => target.jobDetails(jobId));
    if (details === undefined) throw unknownJob(jobId);
    if (ENDED.has(details.status))
      throw new RestError('job-ended', `job ${jobId} has already ${details.status}: there is nothing to cancel`, {
        status: 409,
        jobId,
        jobStatus: details.status,
      });
    try {
      await ask('cancelJob', () => target.cancelJob(jobId));
    } catch (error) {
      // The job store may have dropped it between the lookup and the cancel.
      if (error instanceof Error && (error as { _tag?: string })._tag === 'IllegalArgumentError')
        throw unknownJob(jobId);
      throw error;
    }
    return reply.code(202).send({});
  });

  // `/result` is ours from before; `/execution-result` is Flink's path for the same JobExecutionResultResponseBody.
  // The body is written as the client takes it (jsonStream.ts): a result of 100 MB of bytes is never one string of
  // JSON here, and other requests are answered while it goes out. One that fits in a chunk goes in one write.
  for (const path of ['/jobs/:jobid/result', '/jobs/:jobid/execution-result'])
    app.get(path, { schema: { params: jobParams, querystring: noQuery } }, async (request, reply) => {
      const jobId = jobIdOf(request);
      const result = await ask('jobResult', () => target.jobResult(jobId));
      if (result === undefined) throw unknownJob(jobId);
      const body = jsonBody(jobResultBody(result), { stallTimeoutMs: requestTimeoutMs });
      return reply.type('application/json; charset=utf-8').send(body);
    });

  app.get('/jobs/:jobid/plan', { schema: { params: jobParams, querystring: noQuery } }, async (request) => {
    const jobId = jobIdOf(request);
    const details = await ask('jobDetails', () => target.jobDetails(jobId));
    if (details === undefined) throw unknownJob(jobId);
    return jobPlanView(details);
  });

  app.get(
    '/jobs/:jobid/vertices/:vertexid',
    { schema: { params: vertexParams, querystring: noQuery } },
    async (request) => {
      const jobId = jobIdOf(request);
      const vertexId = (request.params as { vertexid: string }).vertexid;
      const details = await ask('jobDetails', () => target.jobDetails(jobId));
      if (details === undefined) throw unknownJob(jobId);
      const view = jobVertexView(details, vertexId, Date.now());
      if (view === undefined)
        throw new RestError(
          'unknown-vertex',
          `job ${jobId} has no vertex ${JSON.stringify(vertexId)}; ` +
            `its vertices: ${details.vertices.map((v) => v.id).join(', ')}`,
          { status: 404, jobId, vertexId },
        );
      return view;
    },
  );

  app.get(
    '/jobs/:jobid/exceptions',
    { schema: { params: jobParams, querystring: exceptionsQuery } },
    async (request) => {
      const jobId = jobIdOf(request);
      const history = await ask('jobExceptions', () => target.jobExceptions(jobId));
      if (history === undefined) throw unknownJob(jobId);
      const { maxExceptions } = request.query as { maxExceptions?: string };
      return jobExceptionsView(history, maxExceptions === undefined ? Number.MAX_SAFE_INTEGER : Number(maxExceptions));
    },
  );

  app.get('/jobs/:jobid/logs', { schema: { params: jobParams, querystring: eventsQuery } }, async (request) => {
    const jobId = jobIdOf(request);
    const query = request.query as { from?: string; limit?: string };
    const jobLogs = target.jobLogs?.bind(target);
    if (jobLogs === undefined) throw noLogs();
    const page = await ask('jobLogs', () => jobLogs(jobId, Number(query.from ?? 0), Number(query.limit ?? 1000)));
    if (page === undefined) throw unknownJob(jobId);
    return page;
  });

  app.get('/jobs/:jobid/events', { schema: { params: jobParams, querystring: eventsQuery } }, async (request) => {
    const jobId = jobIdOf(request);
    const query = request.query as { from?: string; limit?: string };
    const page = await ask('jobEvents', () =>
      target.jobEvents(jobId, Number(query.from ?? 0), Number(query.limit ?? 1000)),
    );
    if (page === undefined) throw unknownJob(jobId);
    return page;
  });
}

const TASKMANAGER_LOG = 'taskmanager.log';

/** 404 from a cluster that keeps no task logs: a MiniCluster's records go to its logger. */
function noLogs(): RestError {
  return new RestError(
    'not-found',
    "this cluster keeps no task logs (a MiniCluster's records go to the logger given to MiniCluster.start)",
    { status: 404 },
  );
}

/** A forwarded record as a line of a TaskManager's log file. */
export function logLine(record: ForwardedRecord): string {
  const attempt = record.attemptNumber ? ` (attempt ${record.attemptNumber})` : '';
  const where = record.vertexId === undefined ? '' : ` ${record.vertexId}#${record.subtaskIndex ?? '?'}${attempt}`;
  const job = record.jobId === undefined ? '' : ` job ${record.jobId.slice(0, 8)}`;
  const time = new Date(record.time).toISOString();
  return `${time} ${record.level.toUpperCase()} ${record.source}${job}${where}: ${record.message}\n`;
}
