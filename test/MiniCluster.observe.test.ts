/**
 * `MiniCluster.start({ metrics, dashboard })` at the door: bad options refused naming the option,
 * with nothing started; a dashboard port in use refused the same way; two clusters, two registries.
 */
import { expect } from 'chai';
import { createServer } from 'node:net';
import { Registry } from 'prom-client';
import { ConfigurationError } from '../lib/core/errors.js';
import { MiniCluster } from '../lib/MiniCluster.js';
import { startRefusal } from './support/startRefusal.js';

describe('MiniCluster metrics and dashboard options', function () {
  this.timeout(30_000);

  it('refuses bad metrics and dashboard options naming the option, and leaves the registry empty', async () => {
    const registry = new Registry();
    const cases: Array<[object, string, RegExp]> = [
      [{ metrics: { registry: 'prom' } }, 'metrics.registry', /must be a prom-client Registry/],
      [{ metrics: { registry, prefix: 'my-app' } }, 'metrics.prefix', /Prometheus name/],
      [{ dashboard: { port: 1.5 } }, 'dashboard.port', /integer in \[0, 65535\]/],
      [{ dashboard: { host: 7 } }, 'dashboard.host', /non-empty host/],
      [
        { metrics: { registry }, dashboard: { colour: 'blue' } },
        'dashboard.colour',
        /unknown dashboard option 'colour'/,
      ],
    ];
    for (const [options, option, message] of cases) {
      const error = await startRefusal({ taskExecutors: 0, ...options });
      expect(error, option).to.be.instanceOf(ConfigurationError);
      expect((error as ConfigurationError).details['option'], option).to.equal(option);
      expect((error as Error).message, option).to.match(message);
    }
    expect(registry.getMetricsAsArray()).to.deep.equal([]);
  });

  it('refuses a dashboard port in use with a ConfigurationError, closing what it had started', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as { port: number }).port;
    const registry = new Registry();
    try {
      const error = await startRefusal({ taskExecutors: 1, metrics: { registry }, dashboard: { port } });
      expect(error).to.be.instanceOf(ConfigurationError);
      expect((error as Error).message).to.match(
        new RegExp(`cannot listen on 127.0.0.1:${port} \\(EADDRINUSE\\); choose another dashboard.port, or 0`),
      );
      expect(registry.getMetricsAsArray(), 'the cluster it closed took its metrics out').to.deep.equal([]);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it('gives each cluster its own registry by default, and no dashboard unless asked', async () => {
    const a = await MiniCluster.start({ taskExecutors: 0 });
    const b = await MiniCluster.start({ taskExecutors: 0 });
    try {
      expect(a.metricsRegistry).to.not.equal(b.metricsRegistry);
      expect(a.dashboardUrl).to.equal(null);
      expect((await a.metrics()).numRegisteredTaskManagers).to.equal(0);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
    await a.metrics().then(
      () => expect.fail('metrics() of a closed cluster'),
      (error: Error) => expect(error.message).to.match(/MiniCluster.metrics: the cluster is closed/),
    );
  });

  it('serves the dashboard on a free port with a token when asked for port 0', async () => {
    const cluster = await MiniCluster.start({ taskExecutors: 0, dashboard: { port: 0 } });
    try {
      const url = new URL(cluster.dashboardUrl!);
      expect(url.hostname).to.equal('127.0.0.1');
      expect(Number(url.port)).to.be.greaterThan(0);
      expect(url.searchParams.get('token')).to.match(/^[A-Za-z0-9_-]{24}$/);
      expect((await fetch(url)).status).to.equal(200);
      expect((await fetch(`${url.origin}/metrics`)).status).to.equal(403);
      const metrics = await fetch(`${url.origin}/metrics?token=${url.searchParams.get('token')}`);
      expect(await metrics.text()).to.match(/^slotwise_jobmanager_numRegisteredTaskManagers 0$/m);
    } finally {
      await cluster.close();
    }
  });
});
