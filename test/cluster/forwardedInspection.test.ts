/**
 * A TaskManager's statecharts to its JobManager (forwardedInspection.ts), on a channel stand-in: nothing is sent
 * until the JobManager asks; asked, the table and the slots alive now are announced with their current state,
 * then every event follows in batches; a new leader stops it until that one asks.
 */
import { expect } from 'chai';
import { SimulatedClock } from '../../lib/core/clock.js';
import { InspectionForwarder, isInspectionBatch, type InspectionBatch } from '../../lib/cluster/forwardedInspection.js';
import type { Channel, ChannelListener } from '../../lib/rpc/Link.js';
import { TaskSlotTable } from '../../lib/taskexecutor/TaskSlotTable.js';
import { AllocationID, JobID, ResourceProfile, profile } from '../support/fixtures.js';
import { until } from '../support/eventually.js';

interface Sent {
  readonly type: string;
  readonly name?: string;
  readonly sessionId: string;
  readonly definition?: string;
  readonly snapshot?: { readonly value?: unknown; readonly context?: unknown };
  readonly event?: { readonly type: string };
}

/** The TaskManager's end of the inspect channel: what was posted, and a way to deliver the JobManager's messages. */
function channelStandIn() {
  const posted: InspectionBatch[] = [];
  const listeners: ChannelListener[] = [];
  const channel = {
    name: 'inspect',
    closed: false,
    listenerCount: 0,
    postMessage: (message: unknown) => {
      expect(isInspectionBatch(message), 'a batch').to.equal(true);
      posted.push(message as InspectionBatch);
    },
    postWithNext: () => expect.fail('inspection batches go out at once'),
    addEventListener: (_type: string, listener: ChannelListener) => listeners.push(listener),
    removeEventListener: () => {},
    onClose: () => () => {},
    onUndeliverable: () => () => {},
    close: () => {},
  } satisfies Channel;
  const ask = (detail?: 'full' | 'actors') => {
    const data = detail === undefined ? { type: 'inspect' } : { type: 'inspect', detail };
    for (const l of listeners) (typeof l === 'function' ? l : l.handleEvent.bind(l))({ data });
  };
  const events = () => posted.flatMap((b) => b.events as Sent[]);
  return { channel, posted, ask, events };
}

function tableWith(forwarder: InspectionForwarder): TaskSlotTable {
  const table = new TaskSlotTable({
    totalResourceProfile: profile(2, 200, 128),
    numberSlots: 2,
    pageSize: 64 * 1024,
    clock: new SimulatedClock(), // slot timeouts never fire here
    inspect: forwarder.inspect,
  });
  forwarder.attach(() => table.actor);
  table.start();
  return table;
}

const allocate = (table: TaskSlotTable, index: number) =>
  table.allocateSlot({
    index,
    jobId: JobID.generate(),
    allocationId: AllocationID.generate(),
    resourceProfile: ResourceProfile.UNKNOWN,
  });

describe('InspectionForwarder (a TaskManager’s statecharts to its JobManager)', () => {
  it('sends nothing while nobody asked', async () => {
    const { channel, posted } = channelStandIn();
    const forwarder = new InspectionForwarder(channel, () => {});
    const table = tableWith(forwarder);
    allocate(table, 0);
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(posted).to.deep.equal([]);
    expect(forwarder.forwarding).to.equal(false);
  });

  it('asked, announces the table and the slots alive now with their state, then forwards every event', async () => {
    const { channel, ask, events } = channelStandIn();
    const forwarder = new InspectionForwarder(channel, () => {});
    const table = tableWith(forwarder);
    allocate(table, 1); // before anyone asked: only the announcement tells of it
    ask();
    await until('the announcements', () => (events().length >= 2 ? true : undefined));
    const announced = events().filter((e) => e.type === '@xstate.actor');
    expect(announced.map((e) => e.name)).to.have.members(['taskSlotTable', 'slot-1']);
    const slot = announced.find((e) => e.name === 'slot-1')!;
    expect(slot.snapshot?.value).to.equal('allocated');

    allocate(table, 0);
    await until('the new slot and the table’s event', () =>
      events().some((e) => e.type === '@xstate.actor' && e.name === 'slot-0') &&
      events().some((e) => e.type === '@xstate.event' && e.event?.type === 'ALLOCATE_SLOT')
        ? true
        : undefined,
    );
  });

  it('stops when a new leader takes over, until that one asks', async () => {
    const { channel, ask, events } = channelStandIn();
    const forwarder = new InspectionForwarder(channel, () => {});
    const table = tableWith(forwarder);
    ask();
    await until('forwarding', () => (forwarder.forwarding ? true : undefined));
    forwarder.stop();
    const before = events().length;
    allocate(table, 0);
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(events().length).to.equal(before);

    ask();
    await until('the new leader’s announcements', () =>
      events()
        .slice(before)
        .some((e) => e.type === '@xstate.actor' && e.name === 'slot-0')
        ? true
        : undefined,
    );
  });

  it('drops a start that a stop overtook', async () => {
    const { channel, ask, posted } = channelStandIn();
    const forwarder = new InspectionForwarder(channel, () => {});
    const table = tableWith(forwarder);
    ask();
    forwarder.stop(); // before the inspector loaded
    allocate(table, 0);
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(forwarder.forwarding).to.equal(false);
    expect(posted).to.deep.equal([]);
  });

  it('asked for the actors only (a dashboard is all that watches), sends what the dashboard reads', async () => {
    const { channel, ask, events } = channelStandIn();
    const forwarder = new InspectionForwarder(channel, () => {});
    const table = tableWith(forwarder);
    allocate(table, 1);
    ask('actors');
    await until('forwarding', () => (forwarder.forwarding ? true : undefined));
    allocate(table, 0);
    await until('the new slot and its snapshot', () =>
      events().some((e) => e.type === '@xstate.snapshot' && e.event?.type === 'ALLOCATE_SLOT') ? true : undefined,
    );
    const announced = events().filter((e) => e.type === '@xstate.actor');
    expect(announced.map((e) => e.name)).to.have.members(['taskSlotTable', 'slot-1', 'slot-0']);
    expect(announced.find((e) => e.name === 'slot-1')!.snapshot).to.deep.equal({
      value: 'allocated',
      status: 'active',
    });
    // No machine definitions, no contexts, no events apart from the snapshots': the full records carry all three.
    expect(events().some((e) => e.definition !== undefined || e.snapshot?.context !== undefined)).to.equal(false);
    expect(events().some((e) => e.type === '@xstate.event')).to.equal(false);
  });

  it('asked for full records, sends the machines and their contexts', async () => {
    const { channel, ask, events } = channelStandIn();
    const forwarder = new InspectionForwarder(channel, () => {});
    tableWith(forwarder);
    ask('full');
    await until('the table announced', () => (events().length >= 1 ? true : undefined));
    const [table] = events();
    expect(table!.definition).to.be.a('string');
    expect(table!.snapshot?.context).to.be.an('object');
  });
});
