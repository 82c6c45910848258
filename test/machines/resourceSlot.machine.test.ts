/**
 * The ResourceManager-side slot statechart (Flink's TaskManagerSlot) and the table the SlotManager
 * compiles from it. The machine is checked on live actors; the table is checked against the machine
 * by walking it with @xstate/graph from every state, so the two cannot drift apart.
 */
import { getAdjacencyMap, getShortestPaths, getSimplePaths } from '@xstate/graph';
import { expect } from 'chai';
import { createActor, setup, transition, type SnapshotFrom } from 'xstate';
import { IllegalArgumentError, IllegalStateError } from '../../lib/core/errors.js';
import {
  compileStateTable,
  nextResourceSlotState,
  resourceSlotStatesAllowing,
  transitionResourceSlot,
} from '../../lib/resourcemanager/slotmanager/ResourceSlotTransitions.js';
import { machines } from '../../machines/index.js';
import {
  RESOURCE_SLOT_EVENTS,
  RESOURCE_SLOT_STATES,
  resourceSlotMachine,
  type ResourceSlotEvent,
  type ResourceSlotEventType,
  type ResourceSlotState,
} from '../../machines/resourceSlot.machine.js';

type Snapshot = SnapshotFrom<typeof resourceSlotMachine>;

/** The legal moves, as Flink's TaskManagerSlot makes them: the one hand-written list, for the live-actor tests. */
const LEGAL: ReadonlyArray<[ResourceSlotState, ResourceSlotEventType, ResourceSlotState]> = [
  ['free', 'ASSIGN_PENDING', 'pending'],
  ['free', 'ADOPT', 'allocated'],
  ['pending', 'COMPLETE_ALLOCATION', 'allocated'],
  ['pending', 'FAIL_ALLOCATION', 'free'],
  ['pending', 'FREE', 'free'],
  ['allocated', 'FREE', 'free'],
];
const isLegal = (state: ResourceSlotState, event: ResourceSlotEventType) =>
  LEGAL.some(([s, e]) => s === state && e === event);
const ILLEGAL = RESOURCE_SLOT_STATES.flatMap((state) =>
  RESOURCE_SLOT_EVENTS.filter((event) => !isLegal(state, event)).map((event) => [state, event] as const),
);
const ALL_EVENTS: ResourceSlotEvent[] = RESOURCE_SLOT_EVENTS.map((type) => ({ type }));

const snapshotIn = (state: ResourceSlotState): Snapshot =>
  resourceSlotMachine.resolveState({ value: state, context: {} });
const actorIn = (state: ResourceSlotState) => createActor(resourceSlotMachine, { snapshot: snapshotIn(state) }).start();

describe('resourceSlot machine', () => {
  it('starts free, has no final state and no context', () => {
    const actor = createActor(resourceSlotMachine).start();
    expect(actor.getSnapshot().value).to.equal('free');
    expect(actor.getSnapshot().status).to.equal('active');
    for (const state of RESOURCE_SLOT_STATES)
      expect(resourceSlotMachine.root.states[state]!.type, state).to.equal('atomic');
    expect(actor.getSnapshot().context ?? {}).to.deep.equal({});
  });

  it('lists exactly its states and event types in RESOURCE_SLOT_STATES / RESOURCE_SLOT_EVENTS', () => {
    expect(Object.keys(resourceSlotMachine.root.states)).to.deep.equal([...RESOURCE_SLOT_STATES]);
    expect([...new Set(resourceSlotMachine.root.events)].sort()).to.deep.equal([...RESOURCE_SLOT_EVENTS].sort());
  });

  it('is registered in machines/index as resourceSlot', () => {
    expect(machines.resourceSlot).to.equal(resourceSlotMachine);
  });

  describe('legal transitions (on a live actor)', () => {
    for (const [from, event, to] of LEGAL) {
      it(`${from} --${event}--> ${to}`, () => {
        const actor = actorIn(from);
        expect(actor.getSnapshot().can({ type: event })).to.equal(true);
        actor.send({ type: event });
        expect(actor.getSnapshot().value).to.equal(to);
        actor.stop();
      });
    }

    it('walks a TaskManagerSlot’s lifecycle: free → pending → allocated → free, a refused request back to free', () => {
      const actor = createActor(resourceSlotMachine).start();
      const seen: string[] = [actor.getSnapshot().value];
      actor.subscribe((snapshot) => seen.push(snapshot.value));
      for (const type of [
        'ASSIGN_PENDING',
        'COMPLETE_ALLOCATION',
        'FREE',
        'ASSIGN_PENDING',
        'FAIL_ALLOCATION',
        'ADOPT',
        'FREE',
      ] as const)
        actor.send({ type });
      expect(seen).to.deep.equal(['free', 'pending', 'allocated', 'free', 'pending', 'free', 'allocated', 'free']);
    });

    it('is pure: no transition carries an action', () => {
      for (const state of RESOURCE_SLOT_STATES) {
        for (const event of ALL_EVENTS)
          expect(transition(resourceSlotMachine, snapshotIn(state), event)[1], `${state} ${event.type}`).to.deep.equal(
            [],
          );
      }
    });
  });

  describe('illegal (state, event) pairs leave the state unchanged (Flink’s TaskManagerSlot checkState)', () => {
    it('has nine of them', () => expect(ILLEGAL).to.have.length(9));

    for (const [state, event] of ILLEGAL) {
      it(`${event} in ${state}`, () => {
        const actor = actorIn(state);
        expect(actor.getSnapshot().can({ type: event })).to.equal(false);
        actor.send({ type: event });
        expect(actor.getSnapshot().value).to.equal(state);
        expect(actor.getSnapshot().status).to.equal('active');
        actor.stop();
      });
    }
  });
});

describe('ResourceSlotTransitions (the table compiled from the machine)', () => {
  describe('agrees with the machine', () => {
    /** Checks one (state, event) pair against the machine's own answer; returns the pair's name. */
    function agree(snapshot: Snapshot, event: ResourceSlotEvent, next: Snapshot): string {
      const state = snapshot.value;
      const legal = snapshot.can(event);
      const expected = legal ? next.value : undefined;
      expect(nextResourceSlotState(state, event.type), `${state} × ${event.type}`).to.equal(expected);
      if (!legal) expect(next.value, `the machine ignores ${event.type} in ${state}`).to.equal(state);
      // The machine's own pure transition says the same as the graph's edge.
      expect(transition(resourceSlotMachine, snapshot, event)[0].value).to.equal(next.value);
      return `${state}×${event.type}`;
    }

    it('on every (state, event) pair the graph reaches or refuses, from every start state', () => {
      const checked = new Set<string>();
      for (const start of RESOURCE_SLOT_STATES) {
        const adjacency = getAdjacencyMap(resourceSlotMachine, { events: ALL_EVENTS, fromState: snapshotIn(start) });
        const reached = Object.values(adjacency).map(({ state }) => state.value);
        expect(new Set(reached), `states reachable from ${start}`).to.deep.equal(new Set(RESOURCE_SLOT_STATES));
        for (const { state, transitions } of Object.values(adjacency)) {
          // The adjacency map is keyed by branded strings, which Object.values does not see through.
          const edges = Object.values(transitions) as Array<{ event: ResourceSlotEvent; state: Snapshot }>;
          for (const { event, state: next } of edges) checked.add(agree(state, event, next));
        }
      }
      expect(checked.size, 'every state × event pair').to.equal(
        RESOURCE_SLOT_STATES.length * RESOURCE_SLOT_EVENTS.length,
      );
    });

    it('along every shortest and simple path from every start state, replayed on a plain record', () => {
      let paths = 0;
      for (const start of RESOURCE_SLOT_STATES) {
        const fromState = snapshotIn(start);
        const all = [
          ...getShortestPaths(resourceSlotMachine, { events: ALL_EVENTS, fromState }),
          ...getSimplePaths(resourceSlotMachine, { events: ALL_EVENTS, fromState }),
        ];
        for (const path of all) {
          const record: { state: ResourceSlotState } = { state: start };
          let previous = fromState;
          for (const step of path.steps.slice(1)) {
            // The first step is xstate.init into the start state.
            agree(previous, step.event, step.state);
            transitionResourceSlot(record, step.event.type, 'te-1/0');
            expect(record.state).to.equal(step.state.value);
            previous = step.state;
          }
          expect(record.state).to.equal(path.state.value);
          paths++;
        }
      }
      expect(paths).to.be.greaterThan(RESOURCE_SLOT_STATES.length * 2);
    });

    it('from the machine’s initial state (no fromState), every state is reached by the table too', () => {
      const paths = getShortestPaths(resourceSlotMachine, { events: ALL_EVENTS });
      expect(paths.map((p) => p.state.value).sort()).to.deep.equal([...RESOURCE_SLOT_STATES].sort());
      for (const path of paths) {
        const record: { state: ResourceSlotState } = { state: 'free' };
        for (const step of path.steps.slice(1)) transitionResourceSlot(record, step.event.type, 'te-1/0');
        expect(record.state).to.equal(path.state.value);
      }
    });
  });

  describe('transitionResourceSlot', () => {
    it('moves a record through every legal transition', () => {
      for (const [from, event, to] of LEGAL) {
        const record = { state: from };
        transitionResourceSlot(record, event, 'te-1/0');
        expect(record.state, `${from} ${event}`).to.equal(to);
      }
    });

    it(
      'refuses an illegal transition with an IllegalStateError naming ' +
        'slot, event, state and where it is allowed; the record is unchanged',
      () => {
        const record: { state: ResourceSlotState } = { state: 'free' };
        let caught: unknown;
        try {
          transitionResourceSlot(record, 'COMPLETE_ALLOCATION', 'te-1/0');
        } catch (e) {
          caught = e;
        }
        expect(caught).to.be.instanceOf(IllegalStateError);
        const error = caught as IllegalStateError;
        expect(error.message).to.equal(
          'slot te-1/0: COMPLETE_ALLOCATION is not allowed in state free (allowed in: pending)',
        );
        expect(error.reason).to.equal('wrong-state');
        expect(error.details).to.deep.equal({
          component: 'slot te-1/0',
          operation: 'COMPLETE_ALLOCATION',
          state: 'free',
          allowed: ['pending'],
        });
        expect(record.state).to.equal('free');
      },
    );

    it('throws on every illegal pair and changes nothing', () => {
      for (const [state, event] of ILLEGAL) {
        const record = { state };
        expect(() => transitionResourceSlot(record, event, 'te-2/1'), `${state} ${event}`).to.throw(
          IllegalStateError,
          `slot te-2/1: ${event} is not allowed in state ${state} ` +
            `(allowed in: ${resourceSlotStatesAllowing(event).join(', ')})`,
        );
        expect(record.state).to.equal(state);
      }
    });

    it('names every state an event is allowed in (FREE: pending and allocated)', () => {
      expect(() => transitionResourceSlot({ state: 'free' }, 'FREE', 'te-1/3')).to.throw(
        'slot te-1/3: FREE is not allowed in state free (allowed in: pending, allocated)',
      );
      expect(resourceSlotStatesAllowing('ASSIGN_PENDING')).to.deep.equal(['free']);
      expect(resourceSlotStatesAllowing('ADOPT')).to.deep.equal(['free']);
    });

    it('answers undefined for names it does not know (untyped callers), and says so when applying them', () => {
      expect(nextResourceSlotState('releasing' as ResourceSlotState, 'FREE')).to.equal(undefined);
      expect(nextResourceSlotState('free', 'RELEASE' as ResourceSlotEventType)).to.equal(undefined);
      expect(nextResourceSlotState('constructor' as ResourceSlotState, 'toString' as ResourceSlotEventType)).to.equal(
        undefined,
      );
      expect(resourceSlotStatesAllowing('RELEASE' as ResourceSlotEventType)).to.deep.equal([]);
      expect(() => transitionResourceSlot({ state: 'free' }, 'RELEASE' as ResourceSlotEventType, 'te-1/0')).to.throw(
        IllegalStateError,
        /unknown event RELEASE \(events: ASSIGN_PENDING/,
      );
      expect(() => transitionResourceSlot({ state: 'gone' as ResourceSlotState }, 'FREE', 'te-1/0')).to.throw(
        IllegalStateError,
        /unknown state gone \(states: free, pending, allocated\)/,
      );
    });
  });

  describe('the compiler', () => {
    const S = ['a', 'b'] as const;
    const E = ['GO', 'BACK'] as const;
    const compile = (machine: { id: string; root: unknown }) => compileStateTable(machine, S, E);
    const refusal = (machine: { id: string; root: unknown }, pattern: RegExp) => {
      expect(() => compile(machine)).to.throw(IllegalArgumentError, pattern);
    };

    it('compiles a flat machine, inheriting root transitions unless a state defines its own', () => {
      const machine = setup({}).createMachine({
        id: 'flat',
        initial: 'a',
        on: { BACK: '.a' },
        states: { a: { on: { GO: 'b' } }, b: { on: { GO: 'b' } } },
      });
      const table = compile(machine);
      expect([...table.next]).to.deep.equal([1, 0, 1, 0]);
    });

    it('refuses a guarded transition', () => {
      const machine = setup({ guards: { isReady: () => true } }).createMachine({
        id: 'guarded',
        initial: 'a',
        states: { a: { on: { GO: { target: 'b', guard: 'isReady' } } }, b: {} },
      });
      refusal(machine, /state 'a' on GO has a guard \(isReady\)/);
    });

    it('refuses a list of candidate transitions (a guarded fallback)', () => {
      const machine = setup({}).createMachine({
        id: 'fallback',
        initial: 'a',
        states: { a: { on: { GO: [{ target: 'b', guard: () => false }, { target: 'a' }] } }, b: {} },
      });
      refusal(machine, /state 'a' on GO has 2 candidate transitions/);
    });

    it('refuses a transition with several targets, or with none', () => {
      const root = fakeRoot();
      root.states.a!.transitions.set('GO', [{ target: [root.states.a!, root.states.b!], actions: [] }]);
      refusal({ id: 'fake', root }, /state 'a' on GO has 2 targets/);
      const targetless = setup({}).createMachine({
        id: 'targetless',
        initial: 'a',
        states: { a: { on: { GO: {} } }, b: {} },
      });
      refusal(targetless, /state 'a' on GO has no target/);
    });

    it('refuses a target that is not a top-level state', () => {
      const root = fakeRoot();
      const nested = { ...root.states.b!, key: 'inner', id: 'fake.b.inner', parent: root.states.b! };
      root.states.a!.transitions.set('GO', [{ target: [nested], actions: [] }]);
      refusal({ id: 'fake', root }, /targets fake\.b\.inner, which is not a top-level state/);
    });

    it('refuses actions, entry/exit actions, always, after, invoke and nested states', () => {
      const withActions = setup({}).createMachine({
        id: 'm',
        initial: 'a',
        states: { a: { on: { GO: { target: 'b', actions: () => {} } } }, b: {} },
      });
      refusal(withActions, /on GO has actions/);
      const withEntry = setup({}).createMachine({ id: 'm', initial: 'a', states: { a: { entry: () => {} }, b: {} } });
      refusal(withEntry, /state 'a' has entry or exit actions/);
      const withAlways = setup({}).createMachine({ id: 'm', initial: 'a', states: { a: { always: 'b' }, b: {} } });
      refusal(withAlways, /state 'a' has eventless \(always\) transitions/);
      const withAfter = setup({}).createMachine({
        id: 'm',
        initial: 'a',
        states: { a: { after: { 1000: 'b' } }, b: {} },
      });
      refusal(withAfter, /state 'a' has delayed \(after\) transitions/);
      const withInvoke = setup({ actors: { noop: setup({}).createMachine({}) } }).createMachine({
        id: 'm',
        initial: 'a',
        states: { a: { invoke: { src: 'noop' } }, b: {} },
      });
      refusal(withInvoke, /state 'a' invokes actors/);
      const nestedStates = setup({}).createMachine({
        id: 'm',
        initial: 'a',
        states: { a: { initial: 'x', states: { x: {} } }, b: {} },
      });
      refusal(nestedStates, /state 'a' is compound/);
    });

    it('refuses wildcard and unknown event types, and states other than the listed ones', () => {
      refusal(
        setup({}).createMachine({ id: 'm', initial: 'a', states: { a: { on: { '*': 'b' } }, b: {} } }),
        /a wildcard event type '\*'/,
      );
      refusal(
        setup({}).createMachine({ id: 'm', initial: 'a', states: { a: { on: { JUMP: 'b' } }, b: {} } }),
        /an unknown event type 'JUMP' \(known: GO, BACK\)/,
      );
      const done = setup({}).createMachine({
        id: 'm',
        initial: 'a',
        states: { a: { on: { 'xstate.done.actor.x': 'b' } }, b: {} },
      });
      refusal(done, /a built-in \(after\/done\/error\) event type 'xstate\.done\.actor\.x'/);
      refusal(
        setup({}).createMachine({ id: 'm', initial: 'a', on: { JUMP: '.b' }, states: { a: {}, b: {} } }),
        /the root handles an unknown event type 'JUMP'/,
      );
      refusal(
        setup({}).createMachine({ id: 'm', initial: 'a', states: { a: {}, c: {} } }),
        /its states are \[a, c\], expected \[a, b\]/,
      );
    });
  });
});

/** A structural stand-in for a machine root with flat states a and b (for shapes XState itself will not build). */
function fakeRoot() {
  type Node = {
    key: string;
    id: string;
    type: string;
    parent?: Node;
    states: Record<string, Node>;
    transitions: Map<string, Array<{ target?: Node[]; guard?: unknown; actions: unknown[] }>>;
    invoke: unknown[];
    entry: unknown[];
    exit: unknown[];
  };
  const node = (key: string, id: string, type: string): Node => ({
    key,
    id,
    type,
    states: {},
    transitions: new Map(),
    invoke: [],
    entry: [],
    exit: [],
  });
  const root = node('fake', 'fake', 'compound');
  root.states = {
    a: { ...node('a', 'fake.a', 'atomic'), parent: root },
    b: { ...node('b', 'fake.b', 'atomic'), parent: root },
  };
  return root;
}
