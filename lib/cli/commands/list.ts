/** `slotwise list [--jobmanager URL] [--json]`: the cluster's jobs (GET /jobs), running and kept ended ones. */
import { jobManagerUrls, parseFlags, type CliIo } from '../flags.js';
import { CLIENT_FLAGS, CLIENT_FLAGS_USAGE, jobManagerClient } from '../accessFlags.js';

export const LIST_USAGE = `Usage: slotwise list [--jobmanager URL] [--json] [--token-file FILE] [--ca FILE]

Lists the JobManager's jobs: JobID, status, name.

  --jobmanager URL  the REST API (default $SLOTWISE_JOBMANAGER, else http://127.0.0.1:8081); several
                    JobManagers: URL1,URL2 (the one that answers is used)
  --json            one JSON line: [{ id, name, status }]
${CLIENT_FLAGS_USAGE}`;

export async function list(args: readonly string[], io: CliIo): Promise<number> {
  const { values } = parseFlags(
    'list',
    args,
    { jobmanager: { type: 'string' }, json: { type: 'boolean' }, ...CLIENT_FLAGS },
    false,
  );
  if (values['help']) return (io.stdout(LIST_USAGE), 0);
  const client = jobManagerClient(jobManagerUrls(values['jobmanager'] as string | undefined, io.env), values, io);
  const { jobs } = await client.get<{ jobs: Array<{ id: string; name: string; status: string }> }>('/jobs');
  if (values['json']) return (io.stdout(JSON.stringify(jobs)), 0);
  if (jobs.length === 0) return (io.stdout('no jobs'), 0);
  const width = Math.max(6, ...jobs.map((job) => job.status.length));
  io.stdout(`${'JOB ID'.padEnd(32)}  ${'STATUS'.padEnd(width)}  NAME`);
  for (const job of jobs) io.stdout(`${job.id}  ${job.status.padEnd(width)}  ${job.name}`);
  return 0;
}
