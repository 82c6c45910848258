/**
 * What `npm run machines` exports is enough to walk each statechart: every machine is recreated
 * from its JSON alone (the named guards, actions, delays and actors provided as stubs — guards all
 * true in one walk, all false in another), explored with pure `transition()`, and must reach every
 * state of the real machine with the same events in every state.
 */
import { expect } from 'chai';
import {
  createMachine,
  fromPromise,
  initialTransition,
  transition,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  type AnyStateNode,
} from 'xstate';
import { machines } from '../../machines/index.js';
import { machineToVisualizerJSON } from '../../scripts/visualizerJSON.js';

type Kind = 'guards' | 'actions' | 'delays' | 'actors';
type Names = Record<Kind, Set<string>>;

/**
 * Every implementation the JSON names: guards, actions (transitions, entry, exit), delays (after), actors (invoke src).
 */
function referencedNames(config: unknown): Names {
  const names: Names = { guards: new Set(), actions: new Set(), delays: new Set(), actors: new Set() };
  const addActions = (actions: unknown) => {
    for (const action of [actions].flat()) {
      if (typeof action === 'string') names.actions.add(action);
      else if (typeof action === 'object' && action !== null && 'type' in action)
        names.actions.add(String(action.type));
    }
  };
  const visitTransitions = (transitions: unknown) => {
    for (const t of [transitions].flat()) {
      if (typeof t !== 'object' || t === null) continue;
      const { guard, actions } = t as { guard?: unknown; actions?: unknown };
      if (typeof guard === 'string') names.guards.add(guard);
      addActions(actions);
    }
  };
  const visitNode = (node: Record<string, unknown>) => {
    addActions(node['entry']);
    addActions(node['exit']);
    for (const transitions of Object.values((node['on'] ?? {}) as Record<string, unknown>))
      visitTransitions(transitions);
    for (const [delay, transitions] of Object.entries((node['after'] ?? {}) as Record<string, unknown>)) {
      if (!/^\d+$/.test(delay)) names.delays.add(delay);
      visitTransitions(transitions);
    }
    visitTransitions(node['always']);
    for (const invoke of [node['invoke'] ?? []].flat() as Array<Record<string, unknown>>) {
      if (typeof invoke['src'] === 'string') names.actors.add(invoke['src']);
      visitTransitions(invoke['onDone']);
      visitTransitions(invoke['onError']);
    }
    for (const child of Object.values((node['states'] ?? {}) as Record<string, Record<string, unknown>>))
      visitNode(child);
  };
  visitNode(config as Record<string, unknown>);
  return names;
}

function stateNodes(node: AnyStateNode): AnyStateNode[] {
  return [node, ...Object.values(node.states).flatMap(stateNodes)];
}

const leafIds = (machine: AnyStateMachine) =>
  stateNodes(machine.root)
    .filter((n) => n.type === 'atomic' || n.type === 'final')
    .map((n) => n.id)
    .sort();

const eventsOf = (node: AnyStateNode) => [...node.transitions.keys()].sort();

/** The machine rebuilt from the JSON, its named implementations stubbed; guards answer `guardsAnswer`. */
function fromJSON(json: unknown, names: Names, guardsAnswer: boolean): AnyStateMachine {
  const stub = <T>(set: Set<string>, value: T) => Object.fromEntries([...set].map((name) => [name, value]));
  return createMachine(
    json as never,
    {
      guards: stub(names.guards, () => guardsAnswer),
      actions: stub(names.actions, () => {}),
      delays: stub(names.delays, 0),
      actors: stub(
        names.actors,
        fromPromise(() => new Promise<never>(() => {})),
      ),
    } as never,
  ) as unknown as AnyStateMachine;
}

/**
 * Breadth-first over every event any active state node takes: the leaf states reached, and the events seen per node.
 */
function walk(machine: AnyStateMachine): { leaves: Set<string>; eventsByNode: Map<string, string[]> } {
  const leaves = new Set<string>();
  const eventsByNode = new Map<string, string[]>();
  const seen = new Set<string>();
  const queue: AnyMachineSnapshot[] = [initialTransition(machine)[0] as AnyMachineSnapshot];
  while (queue.length > 0) {
    const snapshot = queue.shift()!;
    const key = JSON.stringify(snapshot.value);
    if (seen.has(key)) continue;
    seen.add(key);
    const active = snapshot._nodes as AnyStateNode[];
    for (const node of active) {
      if (node.type === 'atomic' || node.type === 'final') leaves.add(node.id);
      eventsByNode.set(node.id, eventsOf(node));
    }
    for (const type of new Set(active.flatMap(eventsOf))) {
      const [next] = transition(machine, snapshot, { type } as never);
      queue.push(next as AnyMachineSnapshot);
    }
  }
  return { leaves, eventsByNode };
}

const EXPECTED_LEAVES: Record<keyof typeof machines, string[]> = {
  taskSlot: ['allocated', 'active', 'releasing', 'done'],
  taskSlotTable: ['created', 'running', 'closing', 'closed'],
  resourceSlot: ['free', 'pending', 'allocated'],
  slotManager: ['suspended', 'started.idle', 'started.checkSoon', 'started.cooling', 'started.checkScheduled'],
  jobStatus: ['created', 'running', 'failing', 'restarting', 'finished', 'failed', 'canceling', 'canceled'],
  leaderElection: [
    'contending.claiming',
    'contending.waiting',
    'leading.lease.held',
    'leading.renewal.scheduled',
    'closed',
  ],
  workerLifecycle: ['starting', 'registered', 'lost', 'stopping', 'released', 'stale'],
};

describe('npm run machines: the exported statecharts', () => {
  for (const [name, machine] of Object.entries(machines) as Array<[keyof typeof machines, AnyStateMachine]>) {
    describe(name, () => {
      // Exported inside each test, so a machine the exporter refuses fails its tests instead of the run.
      const exported = () => {
        const json = JSON.parse(machineToVisualizerJSON(machine)) as unknown;
        return { json, names: referencedNames(json) };
      };

      it('names every guard, action, delay and actor it uses, each one the machine implements in setup()', () => {
        const { json, names } = exported();
        for (const kind of ['guards', 'actions', 'delays', 'actors'] as const) {
          const implemented = Object.keys(machine.implementations[kind] ?? {});
          expect(
            [...names[kind]].filter((n) => !implemented.includes(n)),
            `${kind} named in the JSON but not in setup()`,
          ).to.deep.equal([]);
        }
        // Every named decision and delay shows in the chart (an action or actor may be used only from code, e.g.
        // spawn).
        expect(Object.keys(machine.implementations.guards).sort()).to.deep.equal([...names.guards].sort());
        expect(Object.keys(machine.implementations.delays).sort()).to.deep.equal([...names.delays].sort());
        expect(JSON.stringify(json)).not.to.match(/"type":"(assign|inline|input|params)"/);
      });

      it(
        'walked from its JSON alone with pure transition(), reaches ' +
          'every state of the machine with the same events in each',
        () => {
          const { json, names } = exported();
          const walks = [walk(fromJSON(json, names, true)), walk(fromJSON(json, names, false))];
          const reached = [...new Set(walks.flatMap((w) => [...w.leaves]))].sort();
          const real = leafIds(machine);
          expect(reached).to.deep.equal(real);
          expect(real).to.deep.equal(EXPECTED_LEAVES[name].map((leaf) => `${machine.id}.${leaf}`).sort());
          for (const w of walks) {
            for (const [id, events] of w.eventsByNode)
              expect(events, `events of ${id}`).to.deep.equal(eventsOf(machine.getStateNodeById(id)));
          }
        },
      );
    });
  }

  it('refuses to export a machine with an inline implementation, naming where it is', () => {
    const inline = createMachine({
      id: 'inline',
      initial: 'a',
      states: { a: { on: { GO: { target: 'b', actions: function bump() {} } } }, b: {} },
    });
    expect(() => machineToVisualizerJSON(inline)).to.throw(
      TypeError,
      /^inline\.states\.a\.on\.GO\.actions is an inline 'bump' function/,
    );
  });
});
