import { expect } from 'chai';
import { assign, createActor, createMachine, setup, type InspectionEvent } from 'xstate';
import { createInspectionSink } from '../../lib/inspect.js';
import { ActorDirectory, ENDED_KEPT, RECENT_EVENTS } from '../../lib/dashboard/ActorDirectory.js';
import type { InspectionRecord } from '../../lib/InspectionRecord.js';
import type { ClusterOverview } from '../../lib/ClusterOverview.js';
import { POINTS, SeriesRecorder } from '../../lib/dashboard/SeriesRecorder.js';

const base = {
  rootId: undefined,
  createdAt: String(Date.UTC(2026, 0, 1)),
  id: 'e',
  _version: '1',
  origin: 'taskexecutor-1',
};
const actor = (sessionId: string, name: string, value: unknown): InspectionRecord => ({
  ...base,
  type: '@xstate.actor',
  sessionId,
  name,
  parentId: undefined,
  definition: undefined,
  snapshot: { value, status: 'active' },
});
const snapshot = (sessionId: string, type: string, value: unknown, status = 'active'): InspectionRecord => ({
  ...base,
  type: '@xstate.snapshot',
  sessionId,
  event: { type },
  snapshot: { value, status },
});

describe('ActorDirectory (the actors the dashboard shows)', () => {
  it("keeps each actor's current state and its recent events, and tells watchers of new ones", () => {
    const directory = new ActorDirectory();
    const seen: string[] = [];
    directory.subscribe((id, event) => seen.push(`${id}:${event.type}`));
    directory.record(actor('t/x:1', 'slot-0 @ taskexecutor-1', 'allocated'));
    directory.record(snapshot('t/x:1', 'MARK_ACTIVE', 'active'));
    directory.record({
      ...base,
      type: '@xstate.event',
      sessionId: 't/x:1',
      sourceId: undefined,
      event: { type: 'MARK_ACTIVE' },
    });
    expect(directory.list()).to.deep.equal([
      {
        id: 't/x:1',
        name: 'slot-0 @ taskexecutor-1',
        origin: 'taskexecutor-1',
        parentId: null,
        value: 'active',
        status: 'active',
        events: 1,
      },
    ]);
    expect(directory.get('t/x:1')!.recent, 'the stamp (Date.now() as text) as ISO 8601').to.deep.equal([
      { at: '2026-01-01T00:00:00.000Z', type: 'MARK_ACTIVE', value: 'active' },
    ]);
    expect(seen).to.deep.equal(['t/x:1:MARK_ACTIVE']);
    expect(directory.get('nobody')).to.equal(undefined);
  });

  it(`keeps ${RECENT_EVENTS} events per actor and forgets stopped actors beyond the last ${ENDED_KEPT}`, () => {
    const directory = new ActorDirectory();
    directory.record(actor('a', 'busy', 's0'));
    for (let i = 1; i <= RECENT_EVENTS + 5; i++) directory.record(snapshot('a', `E${i}`, `s${i}`));
    const recent = directory.get('a')!.recent;
    expect(recent).to.have.length(RECENT_EVENTS);
    expect(recent[0]!.type).to.equal('E6');
    for (let i = 0; i <= ENDED_KEPT; i++) {
      directory.record(actor(`s${i}`, `slot-${i}`, 'allocated'));
      directory.record(snapshot(`s${i}`, 'xstate.stop', 'released', 'stopped'));
    }
    expect(directory.get('s0'), 'the oldest stopped actor is gone').to.equal(undefined);
    expect(directory.get('s1')!.status).to.equal('stopped');
    expect(directory.get('a'), 'live actors stay').to.not.equal(undefined);
  });
});

describe("ActorDirectory.observer (this thread's actors, straight off XState's events)", () => {
  /** A parent with nested states and a context, and a child it invokes that ends: what the SlotManager and jobs are. */
  const child = createMachine({
    id: 'child',
    initial: 'working',
    states: { working: { on: { DONE: 'done' } }, done: { type: 'final' } },
  });
  const parent = setup({ actors: { child } }).createMachine({
    id: 'parent',
    context: { n: 0 },
    initial: 'idle',
    invoke: { src: 'child', id: 'worker' },
    states: {
      idle: { on: { GO: { target: 'busy.one', actions: assign({ n: ({ context }) => context.n + 1 }) } } },
      busy: { initial: 'one', states: { one: { on: { NEXT: 'two' } }, two: {} } },
    },
  });

  /** Runs the same actors with `inspect`, then stops them. */
  function run(inspect: (event: InspectionEvent) => void) {
    const actor = createActor(parent, { inspect }).start();
    actor.send({ type: 'GO' });
    actor.send({ type: 'NEXT' });
    actor.getSnapshot().children['worker']!.send({ type: 'DONE' });
    actor.stop();
  }

  it('keeps what the Stately inspection records would: names, parents, values, statuses, events', async () => {
    const viaRecords = new ActorDirectory();
    const sink = createInspectionSink((record) => viaRecords.record({ ...record, origin: 'main' }));
    run(sink.inspect);
    const direct = new ActorDirectory();
    run(direct.observer('main'));
    // The Stately inspector converts on a timer per event.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const shape = (directory: ActorDirectory) =>
      directory.list().map(({ id: _id, parentId, ...actor }) => ({
        ...actor,
        hasParent: parentId !== null,
        recent: directory.get(_id)!.recent.map(({ at: _at, ...event }) => event),
      }));
    expect(shape(direct)).to.deep.equal(shape(viaRecords));
    expect(shape(direct)[0]!.recent.map((event) => event.type)).to.include.members(['GO', 'NEXT']);
    expect(shape(direct).map(({ name, value, status, hasParent }) => [name, value, status, hasParent])).to.deep.equal([
      ['parent', { busy: 'two' }, 'stopped', false],
      ['worker', 'done', 'done', true],
    ]);
    const [root, worker] = direct.list();
    expect(worker!.parentId).to.equal(root!.id);
  });
});

describe('SeriesRecorder (the live charts)', () => {
  const overview = (states: Array<'free' | 'pending' | 'allocated'>): ClusterOverview =>
    ({
      taskExecutors: [{ slots: states.map((state) => ({ state })) }],
      pendingWorkers: 0,
      pendingRequests: [],
      jobs: [],
    }) as unknown as ClusterOverview;

  it(
    'takes a point per sample: slots in use and total, and the mean ' +
      'and max allocation latency of that second (null when none came)',
    () => {
      const series = new SeriesRecorder();
      series.recordAllocation(10);
      series.recordAllocation(30);
      series.sample(1_000, overview(['allocated', 'pending', 'free']));
      series.sample(2_000, overview(['free', 'free', 'free']));
      expect(series.snapshot()).to.deep.equal({
        time: [1, 2],
        slotsInUse: [2, 0],
        slotsTotal: [3, 3],
        allocationLatencyMean: [20, null],
        allocationLatencyMax: [30, null],
      });
    },
  );

  it(`keeps the last ${POINTS} points`, () => {
    const series = new SeriesRecorder();
    for (let i = 0; i < POINTS + 3; i++) series.sample(i * 1000, overview([]));
    const { time } = series.snapshot();
    expect(time).to.have.length(POINTS);
    expect(time[0]).to.equal(3);
  });
});
