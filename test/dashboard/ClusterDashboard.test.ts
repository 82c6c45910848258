/**
 * The dashboard's source asks the TaskExecutors for their partition figures only while a page views it (its views, at
 * most once a second), never on its own timer: an idle dashboard costs a session cluster no control calls.
 */
import { expect } from 'chai';
import { Registry } from 'prom-client';
import type { ClusterOverview } from '../../lib/ClusterOverview.js';
import { ClusterDashboard } from '../../lib/dashboard/ClusterDashboard.js';
import { ClusterMetrics } from '../../lib/metrics/ClusterMetrics.js';
import { resolveMetricsOptions } from '../../lib/metrics/MetricsOptions.js';
import type { TaskExecutorMetricsWire } from '../../lib/rpc/protocol.js';

const OVERVIEW: ClusterOverview = { taskExecutors: [], pendingWorkers: 0, pendingRequests: [], jobs: [] };

describe('ClusterDashboard', () => {
  it('asks the TaskExecutors for figures only while viewed, at most once a second; drops stale ones', async () => {
    let now = 0;
    let asked = 0;
    const figures = (partitions: number) =>
      ({
        resourceId: 'taskexecutor-a',
        partitions: { partitions, bytes: 10, spilledBytes: 0, producedBytes: 10, consumedBytes: 0, spilledTotal: 0 },
      }) as unknown as TaskExecutorMetricsWire;
    const dashboard = new ClusterDashboard({
      overview: () => OVERVIEW,
      dispatcher: {
        listJobs: () => [],
        getJobView: () => undefined,
        getJob: () => undefined,
        cancelJob: async () => {},
      },
      metrics: new ClusterMetrics(resolveMetricsOptions({ registry: new Registry() }), {
        overview: () => OVERVIEW,
        now: () => now,
      }),
      actors: null,
      now: () => now,
      taskExecutorMetrics: async () => [figures(++asked)],
    });
    dashboard.start();
    try {
      // Started, and its charts sampled: nobody asked the TaskExecutors.
      expect(asked).to.equal(0);
      expect(dashboard.view().partitions).to.deep.equal({});
      expect(asked).to.equal(1);
      await Promise.resolve();
      expect(dashboard.view().partitions['taskexecutor-a']).to.include({ partitions: 1 });
      // Views four times a second ask once a second.
      for (let i = 0; i < 8; i++) {
        now += 250;
        dashboard.view();
        await Promise.resolve();
      }
      expect(asked).to.equal(3);
      // Nobody viewed for a minute: the old figures are not shown as current.
      now += 60_000;
      expect(dashboard.view().partitions).to.deep.equal({});
      await Promise.resolve();
      expect(dashboard.view().partitions['taskexecutor-a']).to.include({ partitions: 4 });
    } finally {
      dashboard.close();
    }
  });
});
