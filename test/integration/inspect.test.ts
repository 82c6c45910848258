/**
 * Inspection end to end: with `inspect`, the events of every statechart reach the callback — the
 * SlotManager and the job status on the main thread, each TaskExecutor's TaskSlotTable and TaskSlots
 * from its worker thread, with session ids that do not collide — or the Stately inspector's relay.
 */
import { expect } from 'chai';
import type { StatelyInspectionEvent } from '@statelyai/inspect';
import { WebSocket } from 'ws';
import { MiniCluster } from '../../lib/MiniCluster.js';
import type { InspectionRecord } from '../../lib/inspect.js';
import { ConfigurationError } from '../../lib/core/errors.js';
import { eventually } from '../support/eventually.js';

const sleep = new URL('../fixtures/tasks/sleep.ts', import.meta.url);
const job = {
  name: 'inspected',
  vertices: [{ id: 'nap', taskModule: sleep, parallelism: 2, config: { ms: 10 }, slotSharingGroup: 'apart' }],
};

describe('inspection of a MiniCluster', function () {
  this.timeout(60_000);

  it('delivers the events of every actor, main thread and workers, to a callback', async () => {
    const events: InspectionRecord[] = [];
    const cluster = await MiniCluster.start({
      taskExecutors: 1,
      slotsPerTaskExecutor: 2,
      inspect: (event) => events.push(event),
    });
    expect(cluster.inspectorUrl).to.equal(null);
    let executor: string;
    try {
      executor = cluster.resourceManager.taskExecutors[0]!;
      const result = await (await cluster.submitJob(job)).result;
      expect(result.status).to.equal('finished');
      // Inspection events are converted on a later tick: wait for the slots' last snapshots.
      await eventually(
        () =>
          events.filter(
            (e) =>
              e.type === '@xstate.snapshot' &&
              e.origin === executor &&
              (e.snapshot as { value?: unknown }).value === 'done',
          ).length >= 2,
        "the slots' last snapshots",
      );
    } finally {
      await cluster.close();
    }
    const actors = events.filter(
      (e): e is Extract<InspectionRecord, { type: '@xstate.actor' }> => e.type === '@xstate.actor',
    );
    const names = actors.map((a) => `${a.origin}: ${a.name}`);
    expect(names).to.include.members([
      'main: slotManager',
      'main: jobStatus',
      `${executor}: taskSlotTable @ ${executor}`,
    ]);
    const slots = actors.filter((a) => a.origin === executor && /^slot-\d+ @ /.test(a.name));
    expect(slots).to.have.length(2);
    // Worker session ids carry the executor, so they cannot collide with the main thread's.
    const sessions = actors.map((a) => a.sessionId);
    expect(new Set(sessions).size).to.equal(sessions.length);
    for (const slot of slots) {
      expect(slot.sessionId.startsWith(`${executor}/`)).to.equal(true);
      const table = actors.find((a) => a.name.startsWith('taskSlotTable'))!;
      expect(slot.parentId).to.equal(table.sessionId);
      // Each slot's whole life arrived, in order.
      const values = events
        .filter((e) => e.type === '@xstate.snapshot' && e.sessionId === slot.sessionId)
        .map((e) => JSON.stringify((e as { snapshot: { value: unknown } }).snapshot.value));
      const distinct = values.filter((v, i) => v !== values[i - 1]);
      expect(distinct).to.deep.equal(['"allocated"', '"active"', '"done"']);
    }
    const jobStates = events
      .filter(
        (e) => e.type === '@xstate.snapshot' && e.sessionId === actors.find((a) => a.name === 'jobStatus')!.sessionId,
      )
      .map((e) => (e as { snapshot: { value: unknown } }).snapshot.value)
      .filter((v, i, all) => v !== all[i - 1]);
    expect(jobStates).to.deep.equal(['created', 'running', 'finished']);
  });

  it(
    'relays them to the Stately inspector: the page at cluster.inspectorUrl, ' +
      'the past to a late client, the live events, and close() ends its connection',
    async () => {
      const cluster = await MiniCluster.start({
        taskExecutors: 1,
        slotsPerTaskExecutor: 2,
        inspect: { stately: { port: 0 } },
      });
      const url = cluster.inspectorUrl!;
      expect(url).to.match(/^http:\/\/localhost:\d+\/\?token=/);
      let client: WebSocket | null = null;
      try {
        const page = await (await fetch(url)).text();
        expect(page).to.contain('https://stately.ai/inspect');
        expect((await (await cluster.submitJob(job)).result).status).to.equal('finished');
        // Connected only now: the relay sends what happened before, then what happens next.
        const received: StatelyInspectionEvent[] = [];
        client = new WebSocket(url.replace(/^http:/, 'ws:'));
        client.on('message', (data) => received.push(JSON.parse(data.toString()) as StatelyInspectionEvent));
        await new Promise((resolve, reject) => client!.once('open', resolve).once('error', reject));
        const names = () => received.filter((e) => e.type === '@xstate.actor').map((e) => (e as { name: string }).name);
        await eventually(
          () => names().some((n) => n.startsWith('taskSlotTable @ taskexecutor-')),
          'the TaskSlotTable of the executor',
        );
        expect(names()).to.include('slotManager');
        expect(names()).to.include('jobStatus');
        const before = names().filter((n) => n === 'jobStatus').length;
        expect((await (await cluster.submitJob(job)).result).status).to.equal('finished');
        await eventually(
          () => names().filter((n) => n === 'jobStatus').length === before + 1,
          'the second job’s status actor',
        );
      } finally {
        const closed = client && new Promise((resolve) => client!.once('close', (code) => resolve(code)));
        await cluster.close();
        // An open inspector page does not keep the process alive: the relay ended the connection, going away.
        expect(await closed).to.equal(1001);
      }
      const refused = await fetch(url).then(
        () => 'served',
        () => 'refused',
      );
      expect(refused).to.equal('refused');
    },
  );

  it('refuses a busy port and a malformed option at the door', async () => {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const first = await MiniCluster.start({ taskExecutors: 0, inspect: { stately: { port } } });
    try {
      let error: unknown;
      await MiniCluster.start({ taskExecutors: 0, inspect: { stately: { port } } }).catch((e: unknown) => (error = e));
      expect(error).to.be.instanceOf(ConfigurationError);
      expect((error as Error).message).to.contain(`port ${port} is not free`);
    } finally {
      await first.close();
    }
    for (const [inspect, message] of [
      [
        { stately: { port: -1 } },
        /inspect.stately.port must be an integer in \[0, 65535\] \(0: any free port\), got -1/,
      ],
      [{ stately: { port: 0, open: 'yes' } }, /inspect.stately.open must be a boolean, got yes/],
      ['yes', /inspect must be a function/],
    ] as const) {
      const refused = await MiniCluster.start({ inspect: inspect as never }).catch((e: unknown) => e);
      expect(refused).to.be.instanceOf(ConfigurationError);
      expect((refused as Error).message).to.match(message);
    }
  });
});
