/**
 * A stalled coordinator on real worker threads (issue 10 B): the embedding application blocks the
 * main thread well past heartbeat.timeout, and the cluster it comes back to still has its
 * TaskExecutors — the same ones — and runs the next job.
 */
import { expect } from 'chai';
import { MiniCluster } from '../../lib/MiniCluster.js';

const fixture = (name: string) => new URL(`../fixtures/tasks/${name}.ts`, import.meta.url);

/** What the embedding application does: a long synchronous computation on the main thread. */
function blockMainThread(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // busy: no timer, no message, no heartbeat is handled meanwhile
  }
}

describe('a stalled coordinator (worker threads)', function () {
  this.timeout(60_000);

  it(
    'keeps its TaskExecutors through a main-thread block longer ' +
      'than heartbeat.timeout, and runs the next job on them',
    async () => {
      const lines: string[] = [];
      const cluster = await MiniCluster.start({
        taskExecutors: 2,
        slotsPerTaskExecutor: 1,
        resources: { cpuCores: 1, taskHeapMemory: '128m', managedMemory: '16m', networkMemory: '16m' },
        // A short timeout (the TaskExecutors' own watchdogs fire during the block, so they register
        // again); a slot request timeout that fails the job well before the test's own timeout.
        configuration: { 'heartbeat.interval': '200 ms', 'heartbeat.timeout': '2 s', 'slot.request.timeout': '20 s' },
        log: (message) => lines.push(message),
      });
      try {
        const before = cluster
          .overview()
          .taskExecutors.map((te) => te.resourceId)
          .sort();
        expect(before).to.have.length(2);
        // Blocked in a callback of its own (setImmediate): the event loop's next turn then runs its
        // overdue timers — the heartbeat monitor's among them — before it reads the messages that
        // queued up meanwhile (the TaskExecutors' heartbeat answers and registrations).
        await new Promise<void>((resolve) => setImmediate(() => (blockMainThread(5_000), resolve())));
        // At once: the TaskExecutors may still be registering again (they heard nothing for 5 s);
        // until they are, they refuse slot requests and the SlotManager asks again.
        const job = await cluster.submitJob({
          name: 'after the stall',
          vertices: [{ id: 'sum', taskModule: fixture('ok'), parallelism: 2 }],
        });
        const result = await job.result;
        expect(result.status, result.error?.message).to.equal('finished');
        expect(
          cluster
            .overview()
            .taskExecutors.map((te) => te.resourceId)
            .sort(),
        ).to.deep.equal(before);
        expect(lines.filter((m) => / lost: |refused the registration|started .* in its place/.test(m))).to.deep.equal(
          [],
        );
      } finally {
        await cluster.close();
      }
    },
  );
});
