/**
 * `slotwise logs [--jobmanager URL] JOB_ID [--follow]`: what a job's tasks logged on a session cluster's
 * TaskManagers, as they forwarded it to the JobManager (GET /jobs/:id/logs), one line per record; with
 * `--follow`, new lines as they come until the job has ended and its last lines are in.
 */
import type { ForwardedRecord, LogPage } from '../../rest/RestTarget.js';
import { CLIENT_FLAGS, CLIENT_FLAGS_USAGE, jobManagerClient } from '../accessFlags.js';
import { jobIdArgument, jobManagerUrls, parseFlags, type CliIo } from '../flags.js';

export const LOGS_USAGE = `Usage: slotwise logs [--jobmanager URL] JOB_ID [--follow] [--token-file FILE] [--ca FILE]

Prints what the job's tasks logged (context.log) and the runtime's warnings about it, as the session
cluster's TaskManagers forwarded them (the last 1,000 lines of each job are kept).

  --jobmanager URL  the REST API (default $SLOTWISE_JOBMANAGER, else http://127.0.0.1:8081); several
                    JobManagers: URL1,URL2 (the one that answers is used)
  --follow          keep printing new lines until the job has ended
${CLIENT_FLAGS_USAGE}`;

const POLL_MS = 500;
const ENDED = new Set(['finished', 'failed', 'canceled']);

export async function logs(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags(
    'logs',
    args,
    { jobmanager: { type: 'string' }, follow: { type: 'boolean' }, ...CLIENT_FLAGS },
    true,
  );
  if (values['help']) return (io.stdout(LOGS_USAGE), 0);
  const jobId = jobIdArgument('logs', positionals);
  const client = jobManagerClient(jobManagerUrls(values['jobmanager'] as string | undefined, io.env), values, io);
  let from = 0;
  for (;;) {
    const page = await client.get<LogPage>(`/jobs/${jobId}/logs?from=${from}`);
    if (page.first > from) io.stdout(`(${page.first - from} earlier lines are no longer kept)`);
    for (const record of page.records) io.stdout(line(record));
    from = page.next;
    if (values['follow'] !== true) return 0;
    if (page.records.length > 0) continue;
    const { jobs } = await client.get<{ jobs: Array<{ id: string; status: string }> }>('/jobs');
    const status = jobs.find((job) => job.id === jobId)?.status.toLowerCase();
    // Ended (or no longer listed): one more look for lines still on their way, then done.
    if (status === undefined || ENDED.has(status)) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      const last = await client.get<LogPage>(`/jobs/${jobId}/logs?from=${from}`);
      for (const record of last.records) io.stdout(line(record));
      return 0;
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** `12:00:01.234 info map#2 on taskmanager-1a2b: the message` */
function line(record: ForwardedRecord): string {
  const time = new Date(record.time).toISOString().slice(11, 23);
  const where = record.vertexId === undefined ? '' : ` ${record.vertexId}#${record.subtaskIndex ?? '?'}`;
  const attempt = record.attemptNumber ? ` (attempt ${record.attemptNumber})` : '';
  const on = record.resourceId === undefined ? '' : ` on ${record.resourceId}`;
  return `${time} ${record.level}${where}${attempt}${on}: ${record.message}`;
}
