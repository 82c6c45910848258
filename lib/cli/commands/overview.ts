/**
 * `slotwise overview [--jobmanager URL] [--json]`: the cluster's counts (GET /overview) and the slot
 * table the demo prints, from each TaskManager's slots (GET /taskmanagers/:id).
 */
import type { ResourceAmounts } from '../../ClusterOverview.js';
import { CLIENT_FLAGS, CLIENT_FLAGS_USAGE, jobManagerClient } from '../accessFlags.js';
import { jobManagerUrls, parseFlags, type CliIo } from '../flags.js';
import { RestRefusal } from '../RestClient.js';
import { renderSlotTable, type SlotTableInput } from '../slotTable.js';

export const OVERVIEW_USAGE = `Usage: slotwise overview [--jobmanager URL] [--json] [--token-file FILE] [--ca FILE]

Prints the cluster's TaskManagers (each with how it runs: thread or process, and its utilization),
slots and jobs, and the slot table: which subtasks run in which slot of which TaskManager, and the
requests that wait, with why.

  --jobmanager URL  the REST API (default $SLOTWISE_JOBMANAGER, else http://127.0.0.1:8081); several
                    JobManagers: URL1,URL2 (the one that answers is used)
  --json            one JSON line: { overview, taskmanagers }
${CLIENT_FLAGS_USAGE}`;

interface OverviewBody {
  readonly taskmanagers: number;
  readonly 'slots-total': number;
  readonly 'slots-available': number;
  readonly 'jobs-running': number;
  readonly pendingRequests: SlotTableInput['pendingRequests'];
}

interface TaskManagerDetails {
  readonly id: string;
  /** How its TaskExecutor runs: 'thread' (a thread, or its TaskManager's own process), 'process' (a child process). */
  readonly mode: string;
  readonly utilization: number;
  readonly slots: ReadonlyArray<{
    readonly slot: string;
    readonly state: string;
    readonly resources: ResourceAmounts;
    readonly tasks: readonly string[];
  }>;
}

export async function overview(args: readonly string[], io: CliIo): Promise<number> {
  const { values } = parseFlags(
    'overview',
    args,
    { jobmanager: { type: 'string' }, json: { type: 'boolean' }, ...CLIENT_FLAGS },
    false,
  );
  if (values['help']) return (io.stdout(OVERVIEW_USAGE), 0);
  const client = jobManagerClient(jobManagerUrls(values['jobmanager'] as string | undefined, io.env), values, io);
  const counts = await client.get<OverviewBody>('/overview');
  const { taskmanagers } = await client.get<{ taskmanagers: Array<{ id: string }> }>('/taskmanagers');
  const details: TaskManagerDetails[] = [];
  for (const tm of taskmanagers) {
    try {
      details.push(await client.get<TaskManagerDetails>(`/taskmanagers/${encodeURIComponent(tm.id)}`));
    } catch (error) {
      // Gone between the list and its details: it is not in the cluster any more.
      if (!(error instanceof RestRefusal && error.status === 404)) throw error;
    }
  }
  if (values['json']) return (io.stdout(JSON.stringify({ overview: counts, taskmanagers: details })), 0);
  io.stdout(
    `${counts.taskmanagers} TaskManager(s), ${counts['slots-total']} slots ` +
      `(${counts['slots-available']} free), ${counts['jobs-running']} job(s) running`,
  );
  // Each TaskManager with how it runs, as the dashboard shows it.
  const idWidth = Math.max(0, ...details.map((d) => d.id.length));
  for (const d of details)
    io.stdout(`  ${d.id.padEnd(idWidth)}  ${d.mode.padEnd(7)}  utilization ${Math.round(d.utilization * 100)} %`);
  io.stdout(
    renderSlotTable({
      taskExecutors: details.map((d) => ({ resourceId: d.id, slots: d.slots })),
      pendingRequests: counts.pendingRequests,
    }).trimEnd(),
  );
  return 0;
}
