/**
 * Model-based test of the TaskSlot statechart: @xstate/graph walks the machine's paths, and every
 * path is replayed on a real, running TaskSlot actor — timers on a SimulatedClock — checking after
 * each step that the actor is where the statechart says.
 *
 * `createTestModel` refuses machines with `after` (pure traversal cannot fire them), so the model is
 * a thin ActorLogic over xstate's pure `transition()`. Besides the machine snapshot it keeps what the
 * statechart has *scheduled* — delayed events raised and not yet cancelled — read from the actions
 * `transition()` returns. Those events are offered to the traversal beside the ordinary ones, each
 * only while it can really happen (a slot timeout fires once per registration), so the graph is
 * finite and every edge of it is something the implementation can be made to do. Whether the memory
 * manager's shutdown throws is part of the world the model walks: an event (`WORLD.SHUTDOWN_FAILS`)
 * makes every later shutdown throw, in the model and on the real slot alike.
 */
import { getAdjacencyMap, getShortestPaths, getSimplePaths, type AdjacencyMap, type StatePath } from '@xstate/graph';
import { expect } from 'chai';
import { createActor, initialTransition, transition, type ActorLogic, type SnapshotFrom } from 'xstate';
import { SimulatedClock } from '../../lib/core/clock.js';
import { AllocationID, JobID } from '../../lib/core/ids.js';
import {
  currentTicket,
  taskSlotMachine,
  type SlotMemoryLeakReport,
  type TaskSlotEvent,
  type TaskSlotInput,
  type TaskSlotNotification,
  type TaskSlotPayload,
  type TaskSet,
} from '../../machines/taskSlot.machine.js';
import { fakeTask, profile, type FakeTask } from '../support/fixtures.js';

// ------------------------------------------------------------------------------ the fixed world

const jobId = JobID.generate();
const allocationId = AllocationID.generate();
const otherJobId = JobID.generate();
const SLOT_TIMEOUT = 10_000;
const SHORT_SLOT_TIMEOUT = 5_000;
const RELEASE_TIMEOUT = 180_000;
const LEAKS: SlotMemoryLeakReport = { leakedPages: 2, leakedBytes: 2 * 4096, owners: [{ owner: 'first', pages: 2 }] };
const SHUTDOWN_FAILURE = new Error('pages still mapped');

/** The event types the statechart raises on its own; checked against the machine below. */
const AFTER_SLOT_TIMEOUT = 'xstate.after.slotTimeout.taskSlot.allocated';
const AFTER_RELEASE_TIMEOUT = 'xstate.after.releaseTimeout.taskSlot.releasing';
/** Not the statechart's: from now on the memory manager's shutdown throws. */
const SHUTDOWN_FAILS = 'WORLD.SHUTDOWN_FAILS';

const first = fakeTask(jobId, allocationId);
const second = fakeTask(jobId, allocationId);
const foreign = fakeTask(otherJobId, allocationId);
const repeat = fakeTask(jobId, allocationId, first.executionAttemptId);
const taskNames = new Map<TaskSlotPayload, string>([
  [first, 'first'],
  [second, 'second'],
  [foreign, 'foreign'],
  [repeat, 'repeat-of-first'],
]);
const idNames = new Map<string, string>([
  [first.executionAttemptId, 'first'],
  [second.executionAttemptId, 'second'],
  [foreign.executionAttemptId, 'foreign'],
]);

type ModelEvent =
  | TaskSlotEvent
  | { type: typeof AFTER_SLOT_TIMEOUT | typeof AFTER_RELEASE_TIMEOUT }
  | { type: typeof SHUTDOWN_FAILS };

const ORDINARY_EVENTS: readonly ModelEvent[] = [
  { type: 'MARK_ACTIVE' },
  { type: 'MARK_INACTIVE' },
  { type: 'MARK_INACTIVE', slotTimeout: SHORT_SLOT_TIMEOUT },
  ...[first, second, foreign, repeat].map((task) => ({ type: 'ADD_TASK' as const, task })),
  ...[first, second, foreign].map((task) => ({
    type: 'REMOVE_TASK' as const,
    executionAttemptId: task.executionAttemptId,
  })),
  { type: 'CLOSE', cause: 'released' },
];

function describeEvent(event: ModelEvent): string {
  switch (event.type) {
    case 'ADD_TASK':
      return `ADD_TASK(${taskNames.get(event.task)})`;
    case 'REMOVE_TASK':
      return `REMOVE_TASK(${idNames.get(event.executionAttemptId)})`;
    case 'MARK_INACTIVE':
      return event.slotTimeout === undefined ? 'MARK_INACTIVE' : `MARK_INACTIVE(${event.slotTimeout})`;
    default:
      return event.type;
  }
}

const input = (memoryManager: TaskSlotInput['memoryManager']): TaskSlotInput => ({
  index: 0,
  resourceProfile: profile(1, 100, 1),
  jobId,
  allocationId,
  memoryManager,
  slotTimeout: SLOT_TIMEOUT,
  releaseTimeout: RELEASE_TIMEOUT,
  ticketPrefix: 's.',
});

// ------------------------------------------------------------------------------ the model

/** The statechart with its parent notifications as plain named actions, so `transition()` lists them. */
const modelMachine = taskSlotMachine.provide({
  actions: { notifySlotTimedOut: () => {}, notifyReleaseTimedOut: () => {} },
});
type MachineSnapshot = SnapshotFrom<typeof modelMachine>;

interface ScheduledTimer {
  readonly event: ModelEvent;
  readonly delay: number;
}

interface SlotModelSnapshot {
  readonly status: 'active';
  readonly output: undefined;
  readonly error: undefined;
  readonly machine: MachineSnapshot;
  /** Delayed events raised and not yet cancelled or delivered, by send id. */
  readonly timers: Readonly<Record<string, ScheduledTimer>>;
  /** Whether the memory manager's shutdown throws from now on. */
  readonly shutdownFails: boolean;
  /** The named actions and scheduling the last transition asked for (in order). */
  readonly actions: readonly { type: string; id?: string }[];
}

function schedule(
  previous: Pick<SlotModelSnapshot, 'timers'>,
  event: ModelEvent | undefined,
  actions: ReadonlyArray<{ type: string; params?: unknown }>,
) {
  const timers = { ...previous.timers };
  // The event itself consumes what produced it: a fired timer.
  if (event !== undefined) {
    for (const [id, timer] of Object.entries(timers)) if (timer.event.type === event.type) delete timers[id];
  }
  const seen: { type: string; id?: string }[] = [];
  for (const action of actions) {
    const params = action.params as Record<string, unknown> | undefined;
    if (action.type === 'xstate.raise' && typeof params?.delay === 'number') {
      timers[params.id as string] = { event: params.event as ModelEvent, delay: params.delay };
      seen.push({ type: 'schedule', id: params.id as string });
    } else if (action.type === 'xstate.cancel') {
      delete timers[params!.sendId as string];
      seen.push({ type: 'cancel', id: params!.sendId as string });
    } else if (!action.type.startsWith('xstate.')) {
      seen.push({ type: action.type });
    }
  }
  return { timers, actions: seen };
}

/** What the model's memory manager does on shutdown: set from the model state before each pure transition. */
let modelShutdownFails = false;
const modelMemoryManager = {
  shutdown: (): SlotMemoryLeakReport => {
    if (modelShutdownFails) throw SHUTDOWN_FAILURE;
    return LEAKS;
  },
};

const slotModel: ActorLogic<SlotModelSnapshot, ModelEvent, undefined> = {
  getInitialSnapshot: () => {
    const [machine, actions] = initialTransition(modelMachine, input(modelMemoryManager));
    return {
      status: 'active',
      output: undefined,
      error: undefined,
      machine,
      shutdownFails: false,
      ...schedule({ timers: {} }, undefined, actions),
    };
  },
  transition: (snapshot, event) => {
    if (event.type === SHUTDOWN_FAILS) return { ...snapshot, shutdownFails: true, actions: [] };
    modelShutdownFails = snapshot.shutdownFails;
    const [machine, actions] = transition(modelMachine, snapshot.machine, event as TaskSlotEvent);
    return { ...snapshot, machine, ...schedule(snapshot, event, actions) };
  },
  getPersistedSnapshot: (snapshot) => snapshot,
};

/** Ordinary events in every live state, plus the scheduled events that can fire now. A finished slot takes nothing. */
function eventsFor(snapshot: SlotModelSnapshot): ModelEvent[] {
  if (snapshot.machine.status === 'done') return [];
  return [
    ...ORDINARY_EVENTS,
    ...Object.values(snapshot.timers).map((timer) => timer.event),
    ...(snapshot.shutdownFails ? [] : [{ type: SHUTDOWN_FAILS } as const]),
  ];
}

const sortedTaskNames = (tasks: TaskSet<TaskSlotPayload>) =>
  tasks
    .ids()
    .map((id) => idNames.get(id) ?? id)
    .sort();

/** What identifies a model state: everything that decides what can happen next. */
function serializeModel(snapshot: SlotModelSnapshot): string {
  const { value, context, status } = snapshot.machine;
  return JSON.stringify({
    value,
    tasks: sortedTaskNames(context.tasks),
    slotTimeout: context.slotTimeout,
    timers: Object.keys(snapshot.timers).sort(),
    shutdownFails: snapshot.shutdownFails,
    ending: status === 'done' ? (context.shutdownError === null ? 'leaks-reported' : 'shutdown-failed') : undefined,
  });
}

const traversal = {
  events: eventsFor,
  serializeState: serializeModel,
  serializeEvent: (event: ModelEvent) => describeEvent(event),
};

/**
 * Simple paths use a smaller alphabet: with every event the loop-free paths run into the millions,
 * nearly all reorderings of refused events (which the transition walk covers one by one). These
 * five, plus the scheduled events, give ~300 paths: every loop-free way through activation, a
 * changed timeout, one task, its removal and closing — each walked once with a memory manager whose
 * shutdown works and once with one whose shutdown throws (the world is chosen before the first event).
 */
const SIMPLE_PATH_EVENTS = new Set([
  'MARK_ACTIVE',
  `MARK_INACTIVE(${SHORT_SLOT_TIMEOUT})`,
  'ADD_TASK(first)',
  'REMOVE_TASK(first)',
  'CLOSE',
]);

function reducedEventsFor(snapshot: SlotModelSnapshot): ModelEvent[] {
  const { value, context } = snapshot.machine;
  const initial = value === 'allocated' && context.timeoutRegistrations === 1 && context.slotTimeout === SLOT_TIMEOUT;
  return eventsFor(snapshot).filter((event) =>
    event.type === SHUTDOWN_FAILS
      ? initial && Object.keys(snapshot.timers).length === 1
      : !ORDINARY_EVENTS.includes(event) || SIMPLE_PATH_EVENTS.has(describeEvent(event)),
  );
}

// ------------------------------------------------------------------------------ the implementation

/** A real TaskSlot actor on a simulated clock, its notifications recorded, its memory manager told when to fail. */
function startRealSlot() {
  const clock = new SimulatedClock();
  const notifications: TaskSlotNotification[] = [];
  const memoryManager = {
    fails: false,
    shutdown(): SlotMemoryLeakReport {
      if (this.fails) throw SHUTDOWN_FAILURE;
      return LEAKS;
    },
  };
  const machine = taskSlotMachine.provide({
    actions: {
      notifySlotTimedOut: ({ context }) =>
        notifications.push({
          type: 'SLOT_TIMED_OUT',
          allocationId: context.allocationId,
          ticket: currentTicket(context),
        }),
      notifyReleaseTimedOut: ({ context }) =>
        notifications.push({
          type: 'SLOT_RELEASE_TIMED_OUT',
          allocationId: context.allocationId,
          executionAttemptIds: context.tasks.ids(),
        }),
    },
  });
  const actor = createActor(machine, { clock, input: input(memoryManager) }).start();
  // Fresh payloads per walk, so one walk's failExternally calls are not seen by the next.
  const payloads = new Map<TaskSlotPayload, FakeTask>(
    [...taskNames.keys()].map((task) => [task, fakeTask(task.jobId, task.allocationId, task.executionAttemptId)]),
  );
  return { actor, clock, notifications, payloads, memoryManager };
}

type RealSlot = ReturnType<typeof startRealSlot>;

/** Makes the real slot do what the model's event stands for. */
function apply(
  real: RealSlot,
  before: SlotModelSnapshot,
  event: ModelEvent,
  armedAt: ReadonlyMap<string, number>,
): void {
  switch (event.type) {
    case AFTER_SLOT_TIMEOUT:
    case AFTER_RELEASE_TIMEOUT: {
      const [id, timer] = Object.entries(before.timers).find(([, t]) => t.event.type === event.type)!;
      real.clock.advanceTo(armedAt.get(id)! + timer.delay);
      return;
    }
    case SHUTDOWN_FAILS:
      real.memoryManager.fails = true;
      return;
    case 'ADD_TASK':
      real.actor.send({ type: 'ADD_TASK', task: real.payloads.get(event.task)! });
      return;
    default:
      real.actor.send(event);
  }
}

/** What the real slot must have reported during a step, derived from the actions the statechart took. */
function expectedNotifications(after: SlotModelSnapshot): TaskSlotNotification[] {
  const { context } = after.machine;
  return after.actions.flatMap((action): TaskSlotNotification[] => {
    if (action.type === 'notifySlotTimedOut')
      return [{ type: 'SLOT_TIMED_OUT', allocationId, ticket: currentTicket(context) }];
    if (action.type === 'notifyReleaseTimedOut') {
      return [{ type: 'SLOT_RELEASE_TIMED_OUT', allocationId, executionAttemptIds: context.tasks.ids() }];
    }
    return [];
  });
}

const failures = (real: RealSlot) => [...real.payloads.values()].reduce((n, task) => n + task.failed.length, 0);

/**
 * Replays a model path on a fresh real slot. The model side is recomputed step by step (the graph's
 * step states are representatives of their serialized class), and must serialize as the path says.
 */
function walk(path: StatePath<SlotModelSnapshot, ModelEvent>): void {
  const [init, ...steps] = path.steps; // the first step is xstate.init, ending in the initial state
  const real = startRealSlot();
  let model = slotModel.getInitialSnapshot(null as never, undefined);
  expect(serializeModel(model)).to.equal(serializeModel(init!.state));
  expect(real.actor.getSnapshot().value).to.deep.equal(model.machine.value);
  const armedAt = new Map<string, number>(Object.keys(model.timers).map((id) => [id, real.clock.now()]));
  let expectedFailures = 0;
  const trail: string[] = [];
  for (const step of steps) {
    const next = slotModel.transition(model, step.event, null as never);
    trail.push(describeEvent(step.event));
    const where = `after ${trail.join(' → ')}`;
    expect(serializeModel(next), `the path is a chain of the model, ${where}`).to.equal(serializeModel(step.state));

    const reported = real.notifications.length;
    apply(real, model, step.event, armedAt);
    for (const action of next.actions) if (action.type === 'schedule') armedAt.set(action.id!, real.clock.now());
    if (next.actions.some((action) => action.type === 'failTasks')) expectedFailures += next.machine.context.tasks.size;
    model = next;

    const snapshot = real.actor.getSnapshot();
    expect(snapshot.value, `state value ${where}`).to.deep.equal(model.machine.value);
    expect(snapshot.status, `status ${where}`).to.equal(model.machine.status);
    expect(sortedTaskNames(snapshot.context.tasks), `tasks ${where}`).to.deep.equal(
      sortedTaskNames(model.machine.context.tasks),
    );
    expect(snapshot.context.slotTimeout, `slot timeout ${where}`).to.equal(model.machine.context.slotTimeout);
    expect(real.notifications.slice(reported), `notifications ${where}`).to.deep.equal(expectedNotifications(model));
    expect(real.clock.pendingTimers, `pending timers ${where}`).to.equal(Object.keys(model.timers).length);
    expect(failures(real), `tasks failed ${where}`).to.equal(expectedFailures);
    if (snapshot.status === 'done') {
      expect(snapshot.output?.leaks, `leak report ${where}`).to.deep.equal(
        model.machine.context.leaks ?? { leakedPages: 0, leakedBytes: 0, owners: [] },
      );
      expect(snapshot.output?.shutdownError, `shutdown error ${where}`).to.equal(model.machine.context.shutdownError);
    }
  }
}

const describePath = (path: StatePath<SlotModelSnapshot, ModelEvent>) =>
  path.steps
    .slice(1)
    .map((s) => describeEvent(s.event))
    .join(' → ') || '(initial)';

function walkAll(paths: ReadonlyArray<StatePath<SlotModelSnapshot, ModelEvent>>): void {
  for (const path of paths) {
    try {
      walk(path);
    } catch (error) {
      // Mocha prints only the text before ": expected" when it shows a diff: show the whole message.
      Object.assign(error as Error, {
        showDiff: false,
        message: `${(error as Error).message}\n  path: ${describePath(path)}`,
      });
      throw error;
    }
  }
}

// ------------------------------------------------------------------------------ the tests

describe('taskSlot machine, model-based', () => {
  let adjacency: AdjacencyMap<SlotModelSnapshot, ModelEvent>;
  let states: SlotModelSnapshot[];
  let shortestPaths: StatePath<SlotModelSnapshot, ModelEvent>[];
  let simplePaths: StatePath<SlotModelSnapshot, ModelEvent>[];

  before(() => {
    adjacency = getAdjacencyMap(slotModel, traversal);
    states = Object.values(adjacency).map((entry) => entry.state);
    shortestPaths = getShortestPaths(slotModel, traversal);
    simplePaths = getSimplePaths(slotModel, { ...traversal, events: reducedEventsFor });
  });

  it('uses the delayed event types the statechart really declares', () => {
    const declared = new Set<string>();
    const collect = (node: typeof taskSlotMachine.root) => {
      for (const type of node.transitions.keys()) declared.add(type);
      for (const child of Object.values(node.states)) collect(child);
    };
    collect(taskSlotMachine.root);
    for (const type of [AFTER_SLOT_TIMEOUT, AFTER_RELEASE_TIMEOUT]) expect([...declared]).to.include(type);
  });

  it('reaches every state of the statechart, with and without tasks, timers armed and spent', () => {
    const values = new Set(states.map((s) => JSON.stringify(s.machine.value)));
    expect([...values]).to.have.members(['"allocated"', '"active"', '"releasing"', '"done"']);
    // allocated × {0,1,2 tasks} × {timeout 10 s, 5 s} × {armed, spent} and so on: a collapsed model has far fewer.
    expect(states.length).to.be.at.least(40);
    expect(states.some((s) => s.machine.value === 'allocated' && Object.keys(s.timers).length === 0)).to.equal(true);
    expect(states.some((s) => s.machine.status === 'done' && s.machine.context.shutdownError !== null)).to.equal(true);
  });

  it('walks the shortest path to every state on a real slot actor', () => {
    expect(shortestPaths.length).to.equal(states.length);
    walkAll(shortestPaths);
  });

  it('walks every transition (including ignored events) on a real slot actor', () => {
    const byState = new Map(shortestPaths.map((path) => [serializeModel(path.state), path]));
    const edges: StatePath<SlotModelSnapshot, ModelEvent>[] = [];
    for (const [key, entry] of Object.entries(adjacency)) {
      const prefix = byState.get(key)!;
      for (const { event, state } of Object.values(entry.transitions) as Array<{
        event: ModelEvent;
        state: SlotModelSnapshot;
      }>) {
        edges.push({ state, weight: prefix.weight + 1, steps: [...prefix.steps, { event, state }] });
      }
    }
    expect(edges.length).to.be.at.least(states.length * ORDINARY_EVENTS.length * 0.8);
    walkAll(edges);
  });

  it('walks every simple path of the smaller alphabet on a real slot actor', () => {
    expect(simplePaths.length).to.be.within(500, 5_000);
    walkAll(simplePaths);
  });
});
