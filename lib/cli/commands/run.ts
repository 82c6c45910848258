/**
 * `slotwise run [--jobmanager URL] JOB_FILE [--detached] [--json]`: loads the job file, bundles its
 * task modules, submits spec and code with POST /jobs, then follows the job's events
 * (GET /jobs/:id/events) as progress lines and prints its result (GET /jobs/:id/result). Exit code
 * 0 when the job finished, 1 when it failed or was canceled; `--detached` prints the JobID and
 * returns at once; `--json` prints the result as one JSON line on stdout (progress goes to stderr);
 * `--output FILE` writes that line to FILE instead. Without either, each sink's outputs are one line
 * of at most {@link OUTPUT_LINE_CHARS} characters, bytes shown by their size: a large result never
 * floods the terminal, and is all there with `--json` or `--output`.
 */
import { createWriteStream } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { IllegalArgumentError, RestError } from '../../core/errors.js';
import { JsonStream, jsonChunks } from '../../rest/jsonStream.js';
import type { JobEventPage, SequencedJobEvent } from '../../rest/RestTarget.js';
import { bundleJob, loadJobFile } from '../jobFile.js';
import { CLIENT_FLAGS, CLIENT_FLAGS_USAGE, jobManagerClient } from '../accessFlags.js';
import { jobManagerUrls, parseFlags, type CliIo } from '../flags.js';
import type { JobManagerClient } from '../JobManagerClient.js';
import { RestRefusal } from '../RestClient.js';

export const RUN_USAGE = `Usage: slotwise run [--jobmanager URL] JOB_FILE [--detached] [--json] [--output FILE]
                    [--token-file FILE] [--ca FILE]

Submits the job JOB_FILE exports (a JobGraphSpec, or a function returning one), its task modules
bundled with their imports, to the JobManager's REST API; prints task events, then the result.
Exit code 0: finished; 1: failed or canceled; 2: bad input or no JobManager.

  --jobmanager URL  the REST API (default $SLOTWISE_JOBMANAGER, else http://127.0.0.1:8081); several
                    JobManagers: URL1,URL2 (the one that answers is used)
  --detached        print the JobID and return once the job is submitted
  --json            print the result as one JSON line (progress on stderr)
  --output FILE     write that JSON line to FILE (a result too large to read on a terminal); without
                    --json or --output each sink's outputs print as one line of at most 1,000
                    characters, bytes as their size
${CLIENT_FLAGS_USAGE}`;

/** How long a submit may take: the JobManager loads and checks every task module. */
const SUBMIT_TIMEOUT_MS = 120_000;
const POLL_MS = 200;
/** A JobManager that stays unreachable this long while a job runs is given up on. */
const LOST_AFTER_MS = 30_000;
/** The most a sink's outputs take of the terminal without --json or --output. */
const OUTPUT_LINE_CHARS = 1_000;
/**
 * How long the result may take to start coming, and then each pause of it (it is streamed: a large one takes as long
 * as the link needs): a JobManager reads a result a leader before it stored from its job store first.
 */
const RESULT_TIMEOUT_MS = 60_000;

interface ExecutionResult {
  readonly id: string;
  readonly name: string;
  readonly status: 'finished' | 'failed' | 'canceled';
  readonly outputs: Record<string, unknown[]>;
  readonly error: { readonly _tag?: string; readonly name: string; readonly message: string } | null;
  readonly restarts: number;
  readonly 'net-runtime': number;
}

export async function run(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(
    'run',
    args,
    {
      jobmanager: { type: 'string' },
      detached: { type: 'boolean' },
      json: { type: 'boolean' },
      output: { type: 'string' },
      ...CLIENT_FLAGS,
    },
    true,
  );
  if (values['help']) return (io.stdout(RUN_USAGE), 0);
  if (positionals.length !== 1)
    throw new IllegalArgumentError(
      'missing',
      `run takes one JOB_FILE, got ${positionals.length === 0 ? 'none' : positionals.join(' ')} (slotwise run --help)`,
      { argument: 'JOB_FILE' },
    );
  const urls = jobManagerUrls(values['jobmanager'] as string | undefined, io.env);
  const json = values['json'] === true;
  const output = values['output'] as string | undefined;
  if (output !== undefined && (output === '' || values['detached']))
    throw new IllegalArgumentError(
      'invalid-value',
      output === '' ? '--output takes a file name' : '--output writes the result: it cannot go with --detached',
      { argument: '--output' },
    );
  const file = positionals[0]!;
  const spec = await loadJobFile(file, io.cwd);
  const client = jobManagerClient(urls, values, io);
  // Reach the JobManager first (bounded), so a wrong URL is told before anything is bundled.
  await client.get('/overview');
  const submission = await bundleJob(spec, dirname(resolve(io.cwd, file)));
  const { jobid } = await client.post<{ jobid: string }>('/jobs', submission, SUBMIT_TIMEOUT_MS);
  if (values['detached']) {
    io.stdout(json ? JSON.stringify({ jobId: jobid, name: spec.name }) : jobid);
    return 0;
  }
  const progress = json ? io.stderr : io.stdout;
  progress(`submitted job '${spec.name}' as ${jobid}`);
  await follow(client, jobid, progress);
  const answer = await client.getLarge<{ 'job-execution-result': ExecutionResult }>(
    `/jobs/${jobid}/result`,
    RESULT_TIMEOUT_MS,
  );
  const result = answer['job-execution-result'];
  const line = {
    jobId: result.id,
    name: result.name,
    status: result.status,
    outputs: result.outputs,
    error: result.error,
    restarts: result.restarts,
    durationMs: result['net-runtime'],
  };
  if (output !== undefined) {
    const path = resolve(io.cwd, output);
    const bytes = await writeJsonLine(path, line);
    progress(`result written to ${path} (${bytes} bytes of JSON)`);
  }
  if (json) io.stdout(JSON.stringify(line));
  else {
    const failure = result.error ? `: ${result.error._tag ?? result.error.name}: ${result.error.message}` : '';
    const restarts = `${result.restarts} restart${result.restarts === 1 ? '' : 's'}`;
    io.stdout(`job ${result.status} in ${result['net-runtime']} ms (${restarts})${failure}`);
    for (const [vertex, outputs] of Object.entries(result.outputs)) io.stdout(outputLine(vertex, outputs));
  }
  if (result.status === 'failed') await printRootCause(client, jobid, progress);
  return result.status === 'finished' ? 0 : 1;
}

/**
 * Writes `value` to `path` as one line of JSON, chunk by chunk as the file takes them (jsonStream.ts): a large result
 * is never a second string of it all beside the one parsed. Resolves with the bytes written.
 */
async function writeJsonLine(path: string, value: unknown): Promise<number> {
  const file = createWriteStream(path);
  await pipeline(new JsonStream(withNewline(value)), file);
  return file.bytesWritten;
}

function* withNewline(value: unknown): Generator<string, void, undefined> {
  yield* jsonChunks(value);
  yield '\n';
}

/** A sink's outputs on one line: bytes (REST's `{ base64 }`) as their size, cut at OUTPUT_LINE_CHARS. */
export function outputLine(vertex: string, outputs: readonly unknown[]): string {
  const text = JSON.stringify(outputs, (_key, value: unknown) =>
    isBytes(value) ? `<${Math.floor((value.base64.length * 3) / 4) - padding(value.base64)} bytes>` : value,
  );
  const line = `${vertex}: ${text}`;
  return line.length <= OUTPUT_LINE_CHARS
    ? line
    : `${line.slice(0, OUTPUT_LINE_CHARS)}… (${text.length} characters; --json or --output FILE for all of it)`;
}

const isBytes = (value: unknown): value is { base64: string } =>
  typeof value === 'object' &&
  value !== null &&
  Object.keys(value).length === 1 &&
  typeof (value as { base64?: unknown }).base64 === 'string';
const padding = (base64: string) => (base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0);

/** Stack frames of the root cause printed under it; the rest is one GET /jobs/:id/exceptions away. */
const ROOT_CAUSE_FRAMES = 5;

interface ExceptionsAnswer {
  readonly exceptionHistory: {
    readonly entries: ReadonlyArray<{
      readonly exceptionName: string;
      readonly message?: string;
      readonly stacktrace: string;
      readonly taskName?: string;
      readonly taskManagerId?: string;
      readonly allocationId?: string | null;
    }>;
  };
}

/**
 * A failed job's root cause (Flink's exception history, newest entry): one line — task, TaskExecutor and slot, the
 * error — then the first frames of its stack. A JobManager without the route prints nothing more.
 */
async function printRootCause(client: JobManagerClient, jobId: string, print: (line: string) => void): Promise<void> {
  let answer: ExceptionsAnswer;
  try {
    answer = await client.get<ExceptionsAnswer>(`/jobs/${jobId}/exceptions?maxExceptions=1`);
  } catch (error) {
    if (error instanceof RestRefusal) return;
    throw error;
  }
  const root = answer.exceptionHistory.entries[0];
  if (root === undefined) return;
  const lines = root.stacktrace.split('\n');
  const frames = lines.filter((line) => /^\s+at /.test(line));
  const headline =
    root.message === undefined ? (lines[0] ?? root.exceptionName) : `${root.exceptionName}: ${root.message}`;
  const slot = root.allocationId ? `, slot ${root.allocationId.slice(0, 8)}` : '';
  const where = root.taskName === undefined ? 'the job' : `${root.taskName} on ${root.taskManagerId ?? '?'}${slot}`;
  print(`root cause (${where}): ${headline.split('\n')[0]}`);
  for (const frame of frames.slice(0, ROOT_CAUSE_FRAMES)) print(frame);
  if (frames.length > ROOT_CAUSE_FRAMES)
    print(`    … ${frames.length - ROOT_CAUSE_FRAMES} more (GET /jobs/${jobId}/exceptions)`);
}

/** Prints the job's events until its log is complete; rides out a JobManager that is briefly away. */
async function follow(client: JobManagerClient, jobId: string, print: (line: string) => void): Promise<void> {
  let from = 0;
  /** The id of the event log read so far. */
  let log: string | null = null;
  let unreachableSince: number | null = null;
  for (;;) {
    let page: JobEventPage;
    try {
      page = await client.get<JobEventPage>(`/jobs/${jobId}/events?from=${from}`);
      unreachableSince = null;
    } catch (error) {
      // Unreachable, or a JobManager that is taking over or stands by while nobody leads (503): wait for a leader.
      const away =
        (error instanceof RestRefusal && error.status === 503) ||
        (error instanceof RestError && (error.reason === 'unreachable' || error.reason === 'timed-out'));
      if (!away) throw error;
      unreachableSince ??= Date.now();
      if (Date.now() - unreachableSince > LOST_AFTER_MS) {
        throw new RestError(
          'unreachable',
          `lost the JobManager(s) at ${client.baseUrl} for ${LOST_AFTER_MS / 1000} s while ` +
            `job ${jobId} ran (${error.message}); the job may still run: slotwise list`,
          { jobId },
        );
      }
      await sleep(POLL_MS * 5);
      continue;
    }
    if (log !== null && page.log !== log) {
      // A new leader recovered the job: its log numbers the events afresh, and we read it from its start.
      print(`(job ${jobId} is now run by the JobManager at ${client.baseUrl}, which recovered it)`);
      log = page.log;
      from = 0;
      continue;
    }
    log = page.log;
    if (page.first > from) print(`(${page.first - from} earlier events were dropped by the JobManager's event log)`);
    for (const event of page.events) {
      const line = describeEvent(event);
      if (line !== null) print(line);
    }
    from = page.next;
    if (page.complete) return;
    if (page.events.length === 0) await sleep(POLL_MS);
  }
}

function describeEvent(event: SequencedJobEvent): string | null {
  if (event.type === 'status') return `job ${event.status}${event.cause ? `: ${event.cause}` : ''}`;
  if (event.type === 'parallelism') return `${event.vertexId}: parallelism ${event.parallelism} (${event.reason})`;
  if (!['running', 'finished', 'failed', 'canceled'].includes(event.state)) return null;
  const attempt = event.attemptNumber > 0 ? ` (attempt ${event.attemptNumber})` : '';
  const where = event.resourceId && event.state === 'running' ? ` on ${event.resourceId}` : '';
  const failure = event.error ? `: ${event.error.message}` : '';
  return `${event.vertexId}#${event.subtaskIndex}${attempt} ${event.state}${where}${failure}`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
