/**
 * A session cluster's TaskManagers' statecharts reach its JobManager's inspection (forwardedInspection.ts), over a
 * real nats-server: the `inspect` callback of startJobManager receives the TaskSlotTable a TaskManager started
 * before anyone asked (announced with its state) and the slots a job allocates there, named and stamped with the
 * TaskManager's ResourceID, as a MiniCluster's workers' are; the dashboard's actor view lists them too. A wrong
 * `inspect` is refused before anything connects. Skipped with a line saying so when nats-server is not installed.
 */
import { expect } from 'chai';
import { startJobManager, type JobManager } from '../../lib/cluster/JobManager.js';
import type { TaskManager } from '../../lib/cluster/TaskManager.js';
import { ConfigurationError } from '../../lib/core/errors.js';
import type { ActorSummary } from '../../lib/dashboard/ActorDirectory.js';
import type { InspectionRecord } from '../../lib/InspectionRecord.js';
import { until } from '../support/eventually.js';
import { startOneTaskManagerCluster, type OneTaskManagerCluster } from './support/oneTaskManager.js';

const CLUSTER = 'inspected';
const ok = new URL('../fixtures/tasks/ok.ts', import.meta.url);

describe("a session cluster's TaskManagers' statecharts in the JobManager's inspection (over NATS)", function () {
  this.timeout(60_000);
  let cluster: OneTaskManagerCluster | undefined;
  let jobManager: JobManager | undefined;
  let taskManager: TaskManager | undefined;
  const records: InspectionRecord[] = [];

  before(async function () {
    // The TaskManager first: its table exists before any JobManager could ask for it.
    cluster = await startOneTaskManagerCluster(this, "the TaskManagers' statecharts in the JobManager's inspection", {
      clusterId: CLUSTER,
      taskManagerFirst: true,
      jobManager: { inspect: (record) => records.push(record) },
    });
    ({ jobManager, taskManager } = cluster);
  });

  after(async () => cluster?.close());

  it('announces the table the TaskManager started before it was asked, and the slots a job allocates', async () => {
    const resourceId = taskManager!.resourceId;
    const mine = () => records.filter((r) => r.origin === resourceId);
    const table = await until('the TaskSlotTable announced', () =>
      mine().find((r) => r.type === '@xstate.actor' && r.name === `taskSlotTable @ ${resourceId}`),
    );
    expect(table.sessionId.startsWith(`${resourceId}/`), table.sessionId).to.equal(true);
    expect(table.type === '@xstate.actor' && table.snapshot.value).to.equal('running');
    // The JobManager's own statecharts are there too, from 'main'.
    expect(records.some((r) => r.origin === 'main' && r.type === '@xstate.actor' && r.name === 'slotManager')).to.equal(
      true,
    );

    const job = await jobManager!.submitJob({
      name: 'inspected',
      vertices: [{ id: 'v', taskModule: ok, parallelism: 2 }],
    });
    expect((await job.result).status).to.equal('finished');
    // Each slot: announced allocated, then active, then released to its final state.
    const slots = await until('both slots announced and released', () => {
      const announced = mine().filter((r) => r.type === '@xstate.actor' && /^slot-\d @ /.test(r.name));
      const released = announced.filter((slot) =>
        mine().some(
          (r) => r.type === '@xstate.snapshot' && r.sessionId === slot.sessionId && r.snapshot.status === 'done',
        ),
      );
      return announced.length === 2 && released.length === 2 ? announced : undefined;
    });
    const values = (sessionId: string) =>
      mine().flatMap((r) => (r.type === '@xstate.snapshot' && r.sessionId === sessionId ? [r.snapshot.value] : []));
    for (const slot of slots) expect(values(slot.sessionId)).to.include.members(['allocated', 'active', 'done']);
    for (const slot of slots) expect(slot.type === '@xstate.actor' && slot.parentId).to.equal(table.sessionId);

    // The dashboard's actor view lists the TaskManager's table, by its name and where it runs.
    const token = new URL(jobManager!.dashboardUrl!).searchParams.get('token')!;
    const view = (await (
      await fetch(`${jobManager!.restUrl}/dashboard/view`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as { actors: ActorSummary[] };
    expect(view.actors.find((a) => a.name === `taskSlotTable @ ${resourceId}`)).to.deep.include({
      origin: resourceId,
      value: 'running',
    });
  });

  it('refuses a wrong inspect option before connecting', async () => {
    let error: unknown;
    try {
      await startJobManager({
        nats: cluster!.server.url,
        clusterId: 'never',
        inspect: { stately: { port: 70_000 } } as never,
      });
    } catch (e) {
      error = e;
    }
    expect(error).to.be.instanceOf(ConfigurationError);
    expect((error as Error).message).to.match(/inspect\.stately\.port must be an integer in \[0, 65535\]/);
  });
});
