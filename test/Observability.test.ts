import { expect } from 'chai';
import { createActor, createMachine } from 'xstate';
import type { ClusterOverview } from '../lib/ClusterOverview.js';
import type { InspectionRecord } from '../lib/InspectionRecord.js';
import { resolveMetricsOptions } from '../lib/metrics/MetricsOptions.js';
import { Observability } from '../lib/Observability.js';
import { until } from './support/eventually.js';

const overview = (): ClusterOverview => ({ taskExecutors: [], pendingWorkers: 0, pendingRequests: [], jobs: [] });
const machine = createMachine({ id: 'toggle', initial: 'off', states: { off: { on: { FLIP: 'on' } }, on: {} } });

describe('Observability (what a coordinator wires for metrics and the dashboard)', () => {
  it('without a dashboard or inspect, turns no inspection stream on', async () => {
    const o = new Observability({ metrics: resolveMetricsOptions(undefined), dashboard: false, overview });
    expect(o.actors).to.equal(null);
    expect(o.inspectionSink(undefined)).to.equal(null);
    await o.close();
  });

  it(
    "with a dashboard, the statecharts' events reach its " + "actors, and the application's inspect callback as well",
    async () => {
      const o = new Observability({ metrics: resolveMetricsOptions(undefined), dashboard: true, overview });
      const received: InspectionRecord[] = [];
      const sink = o.inspectionSink((record) => received.push(record))!;
      const actor = createActor(machine, { inspect: sink.inspect }).start();
      actor.send({ type: 'FLIP' });
      // The dashboard reads the events as they happen, inside send().
      const shown = o.actors!.list().find((a) => a.id === actor.sessionId && a.value === 'on');
      expect(shown?.name).to.equal('toggle');
      expect(o.actors!.get(actor.sessionId)!.recent.map((e) => e.type)).to.include('FLIP');
      // The Stately inspector hands them to the callback a moment later.
      await until('the callback to get the same events', () =>
        received.some((r) => r.type === '@xstate.snapshot' && r.snapshot.value === 'on'),
      );
      actor.stop();
      await sink.close();
      await o.close();
    },
  );

  it('asks the workers for full records only when the application inspects: the dashboard reads less', async () => {
    const o = new Observability({ metrics: resolveMetricsOptions(undefined), dashboard: true, overview });
    expect(o.inspectionSink(undefined)!.detail).to.equal('actors');
    expect(o.inspectionSink(() => {})!.detail).to.equal('full');
    const alone = new Observability({ metrics: resolveMetricsOptions(undefined), dashboard: false, overview });
    expect(alone.inspectionSink(() => {})!.detail).to.equal('full');
    await o.close();
    await alone.close();
  });

  it('counts what the Dispatcher and the ResourceManager tell it, and leaves the registry on close', async () => {
    const metrics = resolveMetricsOptions(undefined);
    const o = new Observability({ metrics, dashboard: false, overview });
    o.onTaskExecutorLost('taskexecutor-1' as never, 'worker-exited');
    o.jobObserver.onSlotAssigned!('j' as never, {
      vertexId: 'v',
      subtaskIndex: 0,
      attemptNumber: 0,
      resourceId: 'taskexecutor-1' as never,
      allocationId: 'a' as never,
      requestedAt: 10,
      timestamp: 30,
    });
    const snapshot = await o.metrics.snapshot();
    expect(snapshot.taskExecutorsLost['worker-exited']).to.equal(1);
    expect(snapshot.slotAllocationLatency).to.deep.include({ count: 1, sum: 0.02 });
    await o.close();
    expect(metrics.registry.getMetricsAsArray()).to.deep.equal([]);
  });
});
