/**
 * The metrics of a real MiniCluster (worker threads): after a job, the Prometheus text parses, its
 * slot figures equal overview()'s, and what the job did is counted; an app's registry gets them.
 */
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { MiniCluster } from '../../lib/MiniCluster.js';
import { parsePrometheusText } from '../support/prometheusText.js';
import { until } from '../support/eventually.js';

const ok = new URL('../fixtures/tasks/ok.ts', import.meta.url);
const throws = new URL('../fixtures/tasks/throws.ts', import.meta.url);
const sleep = new URL('../fixtures/tasks/sleep.ts', import.meta.url);

describe('the metrics of a MiniCluster (worker threads)', function () {
  this.timeout(90_000);
  let cluster: MiniCluster;
  const registry = new Registry();
  before(async () => {
    cluster = await MiniCluster.start({ taskExecutors: 2, slotsPerTaskExecutor: 2, metrics: { registry } });
  });
  after(() => cluster?.close());

  it("after a job, the app's registry parses as Prometheus text and its slot figures equal overview()'s", async () => {
    const job = await cluster.submitJob({
      name: 'counted',
      vertices: [
        { id: 'src', taskModule: ok, parallelism: 3 },
        { id: 'sink', taskModule: ok, parallelism: 1 },
      ],
      edges: [{ from: 'src', to: 'sink', pattern: 'all-to-all' }],
    });
    const result = await job.result;
    expect(result.status).to.equal('finished');
    // Slots go back to the SlotManager a moment after the job ends, and a scrape asks the TaskExecutors
    // for their partition figures: compare once every slot is back.
    await until('every slot free', () =>
      cluster.overview().taskExecutors.every((te) => te.slots.every((slot) => slot.state === 'free')),
    );
    const text = parsePrometheusText(await registry.metrics());
    const overview = cluster.overview();
    const slots = overview.taskExecutors.flatMap((te) => te.slots);
    expect(cluster.metricsRegistry).to.equal(registry);
    expect(text.value('slotwise_jobmanager_taskSlotsTotal')).to.equal(slots.length).and.equal(4);
    expect(text.value('slotwise_jobmanager_taskSlotsAvailable')).to.equal(
      slots.filter((s) => s.state === 'free').length,
    );
    for (const state of ['free', 'pending', 'allocated', 'unavailable'] as const)
      expect(text.value('slotwise_task_slots', { state }), state).to.equal(
        slots.filter((s) => s.state === state).length,
      );
    expect(text.value('slotwise_jobmanager_numRegisteredTaskManagers'))
      .to.equal(overview.taskExecutors.length)
      .and.equal(2);
    expect(text.value('slotwise_jobmanager_numPendingTaskManagers')).to.equal(overview.pendingWorkers);
    expect(text.value('slotwise_jobmanager_numRunningJobs')).to.equal(0);
    expect(
      text.value('slotwise_jobmanager_job_uptime', { job_id: job.jobId, job_name: 'counted' }),
      'ended: -1',
    ).to.equal(-1);
    expect(text.value('slotwise_jobmanager_job_numRestarts', { job_id: job.jobId })).to.equal(0);
    expect(text.value('slotwise_subtasks_ended_total', { state: 'finished' })).to.equal(4);
    expect(text.value('slotwise_slot_allocation_latency_seconds_count'), 'one slot assignment per subtask').to.equal(4);
    expect(text.value('slotwise_subtask_deploy_latency_seconds_count')).to.equal(4);
    const runCounts = text.samples.filter((s) => s.name === 'slotwise_task_run_time_seconds_count');
    expect(runCounts.reduce((n, s) => n + s.value, 0)).to.equal(4);
    expect(
      runCounts
        .map((s) => s.labels['resource_id'])
        .every((id) => overview.taskExecutors.some((te) => te.resourceId === id)),
    ).to.equal(true);
    // The producers' partitions, as their TaskExecutors count them: kept and read, released at the job's end.
    const perExecutor = (name: string) => text.samples.filter((s) => s.name === name);
    const sum = (name: string) => perExecutor(name).reduce((n, s) => n + s.value, 0);
    expect(perExecutor('slotwise_result_partitions').map((s) => s.labels['resource_id'])).to.have.members(
      overview.taskExecutors.map((te) => te.resourceId),
    );
    expect(sum('slotwise_result_partitions'), 'released at the end').to.equal(0);
    expect(sum('slotwise_result_partition_bytes')).to.equal(0);
    const produced = sum('slotwise_result_partition_produced_bytes_total');
    expect(produced, '3 producers').to.be.greaterThan(0);
    expect(sum('slotwise_result_partition_consumed_bytes_total'), 'one consumer read every byte').to.equal(produced);
    expect(sum('slotwise_result_partition_spilled_bytes_total')).to.equal(0);
    const snapshot = await cluster.metrics();
    expect(Object.values(snapshot.resultPartitions).reduce((n, te) => n + te.producedBytes, 0)).to.equal(produced);
  });

  it(
    'metrics() gives the same figures as plain numbers: ' + 'restarts, failures, a running job and its uptime',
    async () => {
      const failing = await cluster.submitJob({
        name: 'fails',
        vertices: [{ id: 'boom', taskModule: throws, parallelism: 1 }],
        restartStrategy: { type: 'fixed-delay', attempts: 2, delay: 0 },
      });
      expect((await failing.result).status).to.equal('failed');
      const running = await cluster.submitJob({
        name: 'sleeps',
        vertices: [{ id: 'nap', taskModule: sleep, parallelism: 1, config: { ms: 60_000 } }],
      });
      await until('the sleeping subtask to run', () =>
        cluster
          .overview()
          .taskExecutors.some((te) => te.slots.some((s) => s.tasks.some((t) => t.includes('(running)')))),
      );
      const snapshot = await cluster.metrics();
      expect(snapshot.numRunningJobs).to.equal(1);
      expect(snapshot.jobs.find((j) => j.jobId === failing.jobId)).to.deep.equal({
        jobId: failing.jobId,
        jobName: 'fails',
        numRestarts: 2,
        uptime: -1,
        numSlowExecutionVertices: 0,
        numEffectiveSpeculativeExecutions: 0,
      });
      expect(snapshot.jobs.find((j) => j.jobId === running.jobId)!.uptime).to.be.greaterThan(0);
      expect(snapshot.subtasksEnded['failed'], 'three attempts failed').to.equal(3);
      expect(snapshot.taskSlots['allocated']).to.equal(
        cluster
          .overview()
          .taskExecutors.flatMap((te) => te.slots)
          .filter((s) => s.state === 'allocated').length,
      );
      await running.cancel();
      expect((await running.result).status).to.equal('canceled');
      await until('the cancel to be counted', async () => (await cluster.metrics()).subtasksEnded['canceled'] === 1);
    },
  );

  it('counts a TaskExecutor killed as lost because its worker exited', async () => {
    const victim = cluster.overview().taskExecutors[0]!.resourceId;
    cluster.killTaskExecutor(victim);
    const snapshot = await until('the loss to be counted', async () => {
      const s = await cluster.metrics();
      return s.taskExecutorsLost['worker-exited'] === 1 ? s : undefined;
    });
    expect(snapshot.taskExecutorsLost).to.deep.equal({
      'worker-exited': 1,
      'heartbeat-timeout': 0,
      disconnected: 0,
      rejected: 0,
    });
  });

  it('takes the metrics out of the registry when the cluster closes', async () => {
    await cluster.close();
    expect((await registry.getMetricsAsJSON()).map((m) => m.name)).to.deep.equal([]);
  });
});
