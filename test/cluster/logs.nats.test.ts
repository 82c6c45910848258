/**
 * A session-cluster task's log lines reach people (forwardedLogs.ts), over a real nats-server: what a task
 * logs with `context.log(...)` on a TaskManager is printed there and forwarded to the JobManager, which
 * answers it under the job (`GET /jobs/:id/logs`, with the subtask it came from) and under the TaskManager
 * (Flink's `GET /taskmanagers/:id/logs` and its log file), and `slotwise logs JOBID` prints it. A
 * MiniCluster keeps no task logs (they go to its logger): its route is 404. Skipped with a line saying so
 * when nats-server is not installed.
 */
import { expect } from 'chai';
import type { JobManager } from '../../lib/cluster/JobManager.js';
import type { TaskManager } from '../../lib/cluster/TaskManager.js';
import type { LogRecord } from '../../lib/core/Logger.js';
import type { LogPage } from '../../lib/rest/RestTarget.js';
import { cliInProcess } from '../cli/support.js';
import { until } from '../support/eventually.js';
import { startOneTaskManagerCluster, type OneTaskManagerCluster } from './support/oneTaskManager.js';

const CLUSTER = 'logged';
const ok = new URL('../fixtures/tasks/ok.ts', import.meta.url);

describe("a session-cluster task's log lines (over NATS)", function () {
  this.timeout(60_000);
  let cluster: OneTaskManagerCluster | undefined;
  let jobManager: JobManager | undefined;
  let taskManager: TaskManager | undefined;
  const printed: LogRecord[] = [];

  before(async function () {
    cluster = await startOneTaskManagerCluster(this, "a session-cluster task's log lines", {
      clusterId: CLUSTER,
      taskManager: { logger: (record) => printed.push(record) },
    });
    ({ jobManager, taskManager } = cluster);
  });

  after(async () => cluster?.close());

  it('prints them on the TaskManager and answers them under the job, the TaskManager and slotwise logs', async () => {
    const job = await jobManager!.submitJob({
      name: 'logs',
      vertices: [{ id: 'sum', taskModule: ok, parallelism: 2 }],
    });
    expect((await job.result).status).to.equal('finished');
    const url = jobManager!.restUrl!;
    const mine = (records: readonly LogRecord[]) =>
      records.filter((r) => r.source === 'task' && r.message === 'summing 0 inputs');
    // Printed where the task ran, with the attempt it came from.
    expect(
      mine(printed)
        .map((r) => r.subtaskIndex)
        .sort(),
    ).to.deep.equal([0, 1]);
    expect(mine(printed)[0]).to.deep.include({ jobId: job.jobId, vertexId: 'sum', attemptNumber: 0 });

    const page = await until('the lines to reach the JobManager', async () => {
      const answer = (await (await fetch(`${url}/jobs/${job.jobId}/logs`)).json()) as LogPage;
      return mine(answer.records).length === 2 ? answer : undefined;
    });
    expect(mine(page.records)[0]).to.deep.include({
      jobId: job.jobId,
      vertexId: 'sum',
      resourceId: taskManager!.resourceId,
      level: 'info',
    });
    expect(page.first).to.equal(0);
    expect(page.next).to.equal(page.records.length);
    const later = (await (await fetch(`${url}/jobs/${job.jobId}/logs?from=${page.next}`)).json()) as LogPage;
    expect(later).to.deep.equal({ records: [], next: page.next, first: 0 });

    const list = (await (await fetch(`${url}/taskmanagers/${taskManager!.resourceId}/logs`)).json()) as {
      logs: Array<{ name: string; size: number; mtime: number }>;
    };
    expect(list.logs.map((l) => l.name)).to.deep.equal(['taskmanager.log']);
    expect(list.logs[0]!.size).to.be.above(0);
    const file = await (await fetch(`${url}/taskmanagers/${taskManager!.resourceId}/logs/taskmanager.log`)).text();
    expect(file.match(/ INFO task job \w{8} sum#[01]: summing 0 inputs\n/g)).to.have.length(2);

    const cli = await cliInProcess(['logs', '--jobmanager', url, job.jobId]);
    expect(cli.code, cli.stderr).to.equal(0);
    expect(
      cli.lines.stdout.filter((l) => / info sum#[01] on taskmanager-\w+: summing 0 inputs$/.test(l)),
    ).to.have.length(2);
    const followed = await cliInProcess(['logs', '--jobmanager', url, job.jobId, '--follow']);
    expect(followed.code, followed.stderr).to.equal(0);
    expect(followed.lines.stdout).to.deep.equal(cli.lines.stdout);
  });

  it('refuses an unknown job and an unknown TaskManager with 404', async () => {
    const url = jobManager!.restUrl!;
    expect((await fetch(`${url}/jobs/${'0'.repeat(32)}/logs`)).status).to.equal(404);
    expect((await fetch(`${url}/taskmanagers/taskmanager-nobody/logs`)).status).to.equal(404);
    const other = await fetch(`${url}/taskmanagers/${taskManager!.resourceId}/logs/other.log`);
    expect(other.status).to.equal(404);
  });
});
