/**
 * `slotwise cancel [--jobmanager URL] JOB_ID`: cancels a job (PATCH /jobs/:id?mode=cancel); returns once the cancel was
 * taken.
 */
import { jobIdArgument, jobManagerUrls, parseFlags, type CliIo } from '../flags.js';
import { CLIENT_FLAGS, CLIENT_FLAGS_USAGE, jobManagerClient } from '../accessFlags.js';

export const CANCEL_USAGE = `Usage: slotwise cancel [--jobmanager URL] [--token-file FILE] [--ca FILE] JOB_ID

Cancels the job JOB_ID (32 hex characters, as slotwise list shows it).

  --jobmanager URL  the REST API (default $SLOTWISE_JOBMANAGER, else http://127.0.0.1:8081); several
                    JobManagers: URL1,URL2 (the one that answers is used)
${CLIENT_FLAGS_USAGE}`;

export async function cancel(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseFlags('cancel', args, { jobmanager: { type: 'string' }, ...CLIENT_FLAGS }, true);
  if (values['help']) return (io.stdout(CANCEL_USAGE), 0);
  const jobId = jobIdArgument('cancel', positionals);
  const client = jobManagerClient(jobManagerUrls(values['jobmanager'] as string | undefined, io.env), values, io);
  await client.patch(`/jobs/${jobId}?mode=cancel`);
  io.stdout(`canceling job ${jobId}`);
  return 0;
}
