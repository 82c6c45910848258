/**
 * JSON schemas of the REST API's inputs (path parameters, query strings, the POST /jobs body),
 * checked by fastify (ajv) before a handler runs, so a refused request never reaches the cluster.
 * Each constrained field has a `description`: the 400 message names the field and says what is
 * allowed in those words. The job graph itself is checked only for its frame here; its rules
 * (parallelism, cycles, resources, …) are JobGraph's, whose JobGraphError names them better.
 */

export const JOB_ID_PATTERN = '^[0-9a-f]{32}$';

const jobId = { type: 'string', pattern: JOB_ID_PATTERN, description: 'a JobID: 32 lowercase hex characters' } as const;

export const jobParams = {
  type: 'object',
  required: ['jobid'],
  properties: { jobid: jobId },
} as const;

/** A job's vertex: the id the job graph gave it (Flink's is a JobVertexID; ours are the graph's own ids). */
export const vertexParams = {
  type: 'object',
  required: ['jobid', 'vertexid'],
  properties: {
    jobid: jobId,
    vertexid: {
      type: 'string',
      pattern: '^[\\w.:-]{1,200}$',
      description: 'a vertex id of the job (letters, digits, _ . : -)',
    },
  },
} as const;

/** GET /jobs/metrics?get=…&agg=…&jobs=… (Flink's JobsAggregatingMetricsHandler parameters). */
export const jobsMetricsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    get: { type: 'string', description: 'metric names, comma separated' },
    agg: { type: 'string', description: 'aggregations (min, max, sum, avg, skew), comma separated' },
    jobs: { type: 'string', description: 'JobIDs, comma separated' },
  },
} as const;

export const taskManagerParams = {
  type: 'object',
  required: ['taskmanagerid'],
  properties: {
    taskmanagerid: {
      type: 'string',
      pattern: '^[A-Za-z0-9][\\w.:-]{0,199}$',
      description: 'a ResourceID (letters, digits, _ . : -, e.g. taskexecutor-3f9a1c)',
    },
  },
} as const;

/** GET /taskmanagers/:taskmanagerid/logs/:filename (Flink's log file of a TaskManager). */
export const taskManagerLogParams = {
  type: 'object',
  required: ['taskmanagerid', 'filename'],
  properties: {
    taskmanagerid: taskManagerParams.properties.taskmanagerid,
    filename: { type: 'string', pattern: '^[\\w.-]{1,100}$', description: 'a log file name (taskmanager.log)' },
  },
} as const;

/** PATCH /jobs/:jobid?mode=cancel (Flink's TerminationModeQueryParameter; only `cancel` here, and the default). */
export const cancelQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { mode: { type: 'string', enum: ['cancel'], description: "the termination mode: 'cancel'" } },
} as const;

/** GET /jobs/:jobid/events?from=N&limit=M (query values are strings: no type coercion anywhere). */
export const eventsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    from: {
      type: 'string',
      pattern: '^(0|[1-9][0-9]{0,14})$',
      description: 'the first sequence number wanted: an integer >= 0',
    },
    limit: {
      type: 'string',
      pattern: '^([1-9][0-9]{0,3}|10000)$',
      description: 'how many events at most: an integer from 1 to 10000',
    },
  },
} as const;

/** GET /jobs/:jobid/exceptions?maxExceptions=N (Flink's UpperLimitExceptionParameter). */
export const exceptionsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    maxExceptions: {
      type: 'string',
      pattern: '^[1-9][0-9]{0,5}$',
      description: 'how many history entries at most: an integer >= 1',
    },
  },
} as const;

/** An empty query string for the routes that take none. */
export const noQuery = { type: 'object', additionalProperties: false, properties: {} } as const;

const taskCode = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'code', 'sha256'],
  properties: {
    name: {
      type: 'string',
      minLength: 1,
      maxLength: 256,
      description: 'the name vertices use in taskModule: 1 to 256 characters',
    },
    code: { type: 'string', description: "the bundled ES module's source text" },
    sha256: {
      type: 'string',
      pattern: '^[0-9a-f]{64}$',
      description: 'the SHA-256 of the UTF-8 bytes of code: 64 lowercase hex characters',
    },
  },
} as const;

/**
 * POST /jobs: `{ job, taskCode }`. `job` is a JobGraphSpec whose vertices' `taskModule` each name an
 * entry of `taskCode` (a module bundled with its imports, with its SHA-256).
 */
export const submitJobBody = {
  type: 'object',
  additionalProperties: false,
  required: ['job', 'taskCode'],
  properties: {
    job: {
      type: 'object',
      required: ['name', 'vertices'],
      properties: {
        name: { type: 'string' },
        vertices: {
          type: 'array',
          minItems: 1,
          maxItems: 10000,
          items: {
            type: 'object',
            required: ['id', 'taskModule'],
            properties: {
              id: { type: 'string' },
              taskModule: { type: 'string', minLength: 1, description: 'the name of an entry of taskCode' },
              parallelism: { type: 'integer', description: 'unset: decided by the adaptive scheduler (only then)' },
              minParallelism: { type: 'integer' },
              maxParallelism: { type: 'integer' },
            },
          },
        },
        edges: { type: 'array', maxItems: 100000, items: { type: 'object' } },
      },
    },
    taskCode: { type: 'array', minItems: 1, maxItems: 1000, items: taskCode },
  },
} as const;

export interface SubmitJobBody {
  readonly job: {
    readonly name: string;
    readonly vertices: ReadonlyArray<
      { readonly id: string; readonly taskModule: string; readonly parallelism?: number } & Record<string, unknown>
    >;
  } & Record<string, unknown>;
  readonly taskCode: ReadonlyArray<{ readonly name: string; readonly code: string; readonly sha256: string }>;
}
