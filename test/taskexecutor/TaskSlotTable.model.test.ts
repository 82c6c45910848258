/**
 * Model-based test of the TaskSlotTable class against the taskSlotTable statechart.
 *
 * The table machine cannot be traversed purely: its guards read its slot actors' snapshots, and a
 * pure transition never delivers anything to children. So the model EXECUTES the machine: a small
 * ActorLogic whose snapshot is the list of events applied so far plus a projected view, and whose
 * transition replays them, and the new one, on a fresh live actor. @xstate/graph explores that
 * logic (every state reachable with the alphabet below: ~400 states, ~8 k transitions), and every
 * transition it finds is then walked on the TaskSlotTable class. After each call:
 *
 *   - the view changed            → the method succeeded, and returned what it should;
 *   - the machine's guards refused → the method threw a SlotwiseError and describe() is unchanged;
 *   - the guards let it through, nothing visible changed → one of Flink's accepted no-ops
 *     (identical repeat allocation → false, activating an active slot → true, …), never an error;
 *   - and the class's describe() (state; slots by index, allocation, job, state, tasks) is the view.
 *
 * ADD_TASK is no table event (a task changes no table-wide record): the model adds a task as the
 * class does, through the table's rule `addTaskRefusalIn` and then the TaskSlot actor's ADD_TASK.
 *
 * A slot's memory is shut down within the call that lets the slot go (as Flink's TaskSlot.closeAsync
 * when no task is left), so every step runs synchronously on both sides.
 */
import { getAdjacencyMap, getShortestPaths, type AdjacencyMap, type StatePath } from '@xstate/graph';
import { AssertionError, expect } from 'chai';
import { createActor, type ActorLogic } from 'xstate';
import { SimulatedClock } from '../../lib/core/clock.js';
import { SlotwiseError } from '../../lib/core/errors.js';
import { AllocationID, ExecutionAttemptID, JobID } from '../../lib/core/ids.js';
import { ResourceBudgetManager } from '../../lib/core/ResourceBudgetManager.js';
import { ResourceProfile } from '../../lib/core/ResourceProfile.js';
import { MemoryManager } from '../../lib/taskexecutor/MemoryManager.js';
import { TaskSlotTable, type FreeSlotResult, type TaskSlotPayload } from '../../lib/taskexecutor/TaskSlotTable.js';
import {
  addTaskRefusalIn,
  slotOf,
  slotState,
  taskSlotTableMachine,
  type TaskSlotRef,
  type TaskSlotTableEvent,
} from '../../machines/taskSlotTable.machine.js';
import { fakeTask, flushMicrotasks, profile } from '../support/fixtures.js';

// ------------------------------------------------------------------------------ the fixed world

const JOBS = { J1: JobID.generate(), J2: JobID.generate() } as const;
const ALLOCATIONS = { A1: AllocationID.generate(), A2: AllocationID.generate() } as const;
const TASKS = {
  T1: { id: ExecutionAttemptID.generate(), job: 'J1', allocation: 'A1' },
  T2: { id: ExecutionAttemptID.generate(), job: 'J1', allocation: 'A2' },
} as const;
type JobLabel = keyof typeof JOBS;
type AllocationLabel = keyof typeof ALLOCATIONS;
type TaskLabel = keyof typeof TASKS;

const labelOf = new Map<string, string>(
  [
    ...Object.entries(JOBS),
    ...Object.entries(ALLOCATIONS),
    ...Object.entries(TASKS).map(([label, t]) => [t.id, label] as const),
  ].map(([l, id]) => [id, l]),
);
const label = (id: string) => labelOf.get(id) ?? `?${id.slice(0, 8)}`;

const NUMBER_SLOTS = 2;
const TOTAL = profile(2, 200);
const DEFAULT_SLOT = profile(1, 100);
const OVERSIZED = profile(3, 300);
const SLOT_TIMEOUT = 10_000;
const RELEASE_TIMEOUT = 180_000;

/** The model's alphabet: labels instead of IDs, so paths read well and events serialize small. */
type ModelEvent =
  | { type: 'START' }
  | { type: 'CLOSE' }
  | { type: 'ALLOCATE_SLOT'; allocation: AllocationLabel; index: number; job: JobLabel; oversized?: true }
  | { type: 'MARK_SLOT_ACTIVE' | 'MARK_SLOT_INACTIVE' | 'FREE_SLOT'; allocation: AllocationLabel }
  | { type: 'ADD_TASK'; task: TaskLabel }
  | { type: 'REMOVE_TASK'; task: TaskLabel };

const EVENTS: readonly ModelEvent[] = [
  { type: 'START' },
  { type: 'CLOSE' },
  ...(['A1', 'A2'] as const).flatMap((allocation) =>
    [0, 1, -1].map((index) => ({ type: 'ALLOCATE_SLOT' as const, allocation, index, job: 'J1' as const })),
  ),
  // The same AllocationID for another job: a conflict while A1 is held, a fresh allocation otherwise.
  { type: 'ALLOCATE_SLOT', allocation: 'A1', index: 0, job: 'J2' },
  // A1 again, asking for more than the whole TaskExecutor: refused as an allocation conflict while
  // A1 is held, as a taken index while A2 holds 0, for want of resources otherwise — never allocated.
  { type: 'ALLOCATE_SLOT', allocation: 'A1', index: 0, job: 'J1', oversized: true },
  ...(['MARK_SLOT_ACTIVE', 'MARK_SLOT_INACTIVE', 'FREE_SLOT'] as const).flatMap((type) =>
    (['A1', 'A2'] as const).map((allocation) => ({ type, allocation })),
  ),
  ...(['T1', 'T2'] as const).map((task) => ({ type: 'ADD_TASK' as const, task })),
  ...(['T1', 'T2'] as const).map((task) => ({ type: 'REMOVE_TASK' as const, task })),
];

function describeEvent(event: ModelEvent): string {
  switch (event.type) {
    case 'ALLOCATE_SLOT':
      return `ALLOCATE_SLOT(${event.allocation}@${event.index},${event.job}${event.oversized ? ',oversized' : ''})`;
    case 'MARK_SLOT_ACTIVE':
    case 'MARK_SLOT_INACTIVE':
    case 'FREE_SLOT':
      return `${event.type}(${event.allocation})`;
    case 'ADD_TASK':
    case 'REMOVE_TASK':
      return `${event.type}(${event.task})`;
    default:
      return event.type;
  }
}

const allocationRequest = (event: Extract<ModelEvent, { type: 'ALLOCATE_SLOT' }>) => ({
  index: event.index,
  jobId: JOBS[event.job],
  allocationId: ALLOCATIONS[event.allocation],
  resourceProfile: event.oversized ? OVERSIZED : ResourceProfile.UNKNOWN,
});
const taskPayload = (task: TaskLabel) =>
  fakeTask(JOBS[TASKS[task].job], ALLOCATIONS[TASKS[task].allocation], TASKS[task].id);

// ------------------------------------------------------------------------------ the view both sides project to

interface SlotView {
  readonly index: number;
  readonly allocation: string;
  readonly job: string;
  readonly state: string;
  readonly tasks: readonly string[];
}

interface TableView {
  readonly state: string;
  readonly slots: readonly SlotView[];
}

const serializeView = ({ state, slots }: TableView) => JSON.stringify({ state, slots });

// ------------------------------------------------------------------------------ the model: the machine, executed

/** The model's events that are the table machine's own (ADD_TASK is a TaskSlot event: see addTaskToSlot). */
type TableModelEvent = Exclude<ModelEvent, { type: 'ADD_TASK' }>;

function toMachineEvent(event: TableModelEvent): TaskSlotTableEvent {
  switch (event.type) {
    case 'ALLOCATE_SLOT':
      return { type: 'ALLOCATE_SLOT', ...allocationRequest(event) };
    case 'MARK_SLOT_ACTIVE':
    case 'MARK_SLOT_INACTIVE':
    case 'FREE_SLOT':
      return { type: event.type, allocationId: ALLOCATIONS[event.allocation] };
    case 'REMOVE_TASK':
      return { type: 'REMOVE_TASK', executionAttemptId: TASKS[event.task].id };
    default:
      return { type: event.type };
  }
}

/**
 * The table machine has no task-adding event (adding a task changes no table-wide record): a task
 * is added as the class adds it — allowed while the table runs and the table-wide rules
 * (`addTaskRefusalIn`) let it in, then ADD_TASK to its TaskSlot actor. Returns whether it was let in.
 */
function addTaskToSlot(actor: TableActor, label: TaskLabel, deliver: boolean): boolean {
  const { value, context } = actor.getSnapshot();
  const task = taskPayload(label);
  if (value !== 'running' || addTaskRefusalIn(context, task) !== undefined) return false;
  if (deliver) slotOf(context, task.allocationId)!.send({ type: 'ADD_TASK', task });
  return true;
}

type TableActor = ReturnType<typeof startModelTable>;

function startModelTable() {
  return createActor(taskSlotTableMachine, {
    clock: new SimulatedClock(),
    input: {
      numberSlots: NUMBER_SLOTS,
      budget: new ResourceBudgetManager(TOTAL),
      defaultSlotProfile: DEFAULT_SLOT,
      slotTimeout: SLOT_TIMEOUT,
      releaseTimeout: RELEASE_TIMEOUT,
      createMemoryManager: (p) => MemoryManager.create(p.managedMemory, 4096),
    },
  }).start();
}

function deliver(actor: TableActor, event: ModelEvent): void {
  if (event.type === 'ADD_TASK') addTaskToSlot(actor, event.task, true);
  else actor.send(toMachineEvent(event));
}

function project(actor: TableActor): TableView {
  const { value, context } = actor.getSnapshot();
  return {
    state: value,
    slots: Object.values(context.slots)
      .map((slot) => {
        const c = slot.getSnapshot().context;
        return {
          index: c.index,
          allocation: label(c.allocationId),
          job: label(c.jobId),
          state: slotState(slot),
          tasks: c.tasks.ids().map(label).sort(),
        };
      })
      .sort((a, b) => a.index - b.index),
  };
}

/** Every snapshot in the actor tree: if none is a new object, the last event did nothing at all. */
function snapshotsOf(actor: TableActor): unknown[] {
  const table = actor.getSnapshot();
  return [table, ...(Object.values(table.children) as TaskSlotRef[]).map((slot) => slot.getSnapshot())];
}

const sameSnapshots = (a: unknown[], b: unknown[]) => a.length === b.length && a.every((x, i) => x === b[i]);

interface TableModelSnapshot {
  readonly status: 'active';
  readonly output: undefined;
  readonly error: undefined;
  /** The events applied so far: the state is whatever the machine makes of them. */
  readonly events: readonly ModelEvent[];
  readonly view: TableView;
  /** Whether the machine's guards let the last event through (a transition was enabled). */
  readonly accepted: boolean;
}

const historyKey = (events: readonly ModelEvent[]) => events.map(describeEvent).join(' ');

/**
 * The machine, executed: a state is the events applied so far, its view what a fresh actor makes of
 * them. Two shortcuts keep it fast without changing any answer: the live actor of the state being
 * expanded is reused for its next event as long as the last one left every snapshot in the tree
 * untouched (the machine ignored it); and answers are memoized by history, because
 * getShortestPaths explores the very same histories again.
 */
function createTableModel(): ActorLogic<TableModelSnapshot, ModelEvent, undefined> & { dispose(): void } {
  const memo = new Map<string, TableModelSnapshot>();
  let live: { key: string; actor: TableActor } | undefined;
  return {
    getInitialSnapshot: (): TableModelSnapshot => {
      const actor = startModelTable();
      const view = project(actor);
      actor.stop();
      return { status: 'active', output: undefined, error: undefined, events: [], view, accepted: true };
    },
    transition: (snapshot: TableModelSnapshot, event: ModelEvent): TableModelSnapshot => {
      const events = [...snapshot.events, event];
      const known = memo.get(historyKey(events));
      if (known !== undefined) return known;
      const key = historyKey(snapshot.events);
      if (live?.key !== key) {
        live?.actor.stop();
        const actor = startModelTable();
        for (const e of snapshot.events) deliver(actor, e);
        live = { key, actor };
      }
      const accepted =
        event.type === 'ADD_TASK'
          ? addTaskToSlot(live.actor, event.task, false)
          : taskSlotTableMachine.getTransitionData(live.actor.getSnapshot(), toMachineEvent(event)).length > 0;
      const before = snapshotsOf(live.actor);
      deliver(live.actor, event);
      const next: TableModelSnapshot = { ...snapshot, events, view: project(live.actor), accepted };
      if (!sameSnapshots(before, snapshotsOf(live.actor))) {
        live.actor.stop();
        live = undefined;
      }
      memo.set(historyKey(events), next);
      return next;
    },
    getPersistedSnapshot: (snapshot: TableModelSnapshot) => snapshot,
    dispose: () => {
      live?.actor.stop();
      memo.clear();
    },
  };
}

const traversal = {
  events: EVENTS,
  serializeState: (snapshot: TableModelSnapshot) => serializeView(snapshot.view),
  serializeEvent: describeEvent,
  // A safety net, not a cap: the whole graph is ~400 states × 20 events; an explosion fails loudly.
  limit: 50_000,
};

// ------------------------------------------------------------------------------ the implementation

function viewOf({ state, slots }: ReturnType<TaskSlotTable['describe']>): TableView {
  return {
    state,
    slots: slots.map((s) => ({
      index: s.index,
      allocation: label(s.allocationId),
      job: label(s.jobId),
      state: s.state,
      tasks: s.tasks.map(label).sort(),
    })),
  };
}

type Outcome = { kind: 'done'; value: unknown } | { kind: 'refused'; error: SlotwiseError };

/** Per-walk memory of what the class returned earlier, for the "same promise again" no-ops. */
interface WalkMemory {
  closed?: Promise<void>;
  readonly releasing: Map<AllocationLabel, FreeSlotResult>;
}

/** Calls the class method the event stands for. */
function call(table: TaskSlotTable, event: ModelEvent): Outcome {
  try {
    return { kind: 'done', value: invoke(table, event) };
  } catch (error) {
    if (error instanceof SlotwiseError) return { kind: 'refused', error };
    throw error;
  }
}

function invoke(table: TaskSlotTable, event: ModelEvent): unknown {
  switch (event.type) {
    case 'START':
      return table.start();
    case 'CLOSE': {
      const closed = table.closeAsync();
      closed.catch(() => {});
      return closed;
    }
    case 'ALLOCATE_SLOT':
      return table.allocateSlot(allocationRequest(event));
    case 'MARK_SLOT_ACTIVE':
      return table.markSlotActive(ALLOCATIONS[event.allocation]);
    case 'MARK_SLOT_INACTIVE':
      return table.markSlotInactive(ALLOCATIONS[event.allocation]);
    case 'FREE_SLOT': {
      const result = table.freeSlot(ALLOCATIONS[event.allocation]);
      result.closed.catch(() => {});
      return result;
    }
    case 'ADD_TASK':
      return table.addTask(taskPayload(event.task));
    case 'REMOVE_TASK':
      return table.removeTask(TASKS[event.task].id);
  }
}

const slotIn = (view: TableView, allocation: AllocationLabel) => view.slots.find((s) => s.allocation === allocation);

/**
 * Why a call the machine answered without a visible change may still succeed, or undefined if it
 * must have been refused. These are the accepted no-ops of Flink's API.
 */
function acceptedNoOp(event: ModelEvent, before: TableView, value: unknown, memory: WalkMemory): string | undefined {
  const slot = 'allocation' in event ? slotIn(before, event.allocation) : undefined;
  switch (event.type) {
    case 'ALLOCATE_SLOT':
      return value === false ? 'an identical repeat of an allocation returns false' : undefined;
    case 'MARK_SLOT_ACTIVE':
      if (slot?.state === 'active' && value === true) return 'marking an active slot active returns true';
      if (slot?.state === 'releasing' && value === false) return 'a releasing slot cannot be activated: false';
      return undefined;
    case 'MARK_SLOT_INACTIVE':
      if (slot?.state === 'allocated' && value === true)
        return 'an allocated slot marked inactive re-arms its timeout (invisible here): true';
      if (slot?.state === 'releasing' && value === false) return 'a releasing slot cannot be deactivated: false';
      return undefined;
    case 'FREE_SLOT': {
      // The same closing as an earlier freeSlot, when there was one (a slot released by closeAsync has none to
      // compare).
      const result = value as FreeSlotResult;
      const earlier = memory.releasing.get(event.allocation);
      return slot?.state === 'releasing' &&
        result.state === 'releasing' &&
        (earlier === undefined || result.closed === earlier.closed)
        ? 'freeing a releasing slot again returns the same closing'
        : undefined;
    }
    case 'CLOSE':
      return (before.state === 'closing' || before.state === 'closed') &&
        memory.closed !== undefined &&
        value === memory.closed
        ? 'closing a closing or closed table returns the same promise'
        : undefined;
    default:
      return undefined;
  }
}

/** What a call the machine accepted with a visible change must have returned. */
function checkSuccess(event: ModelEvent, after: TableView, value: unknown): void {
  const what = `${describeEvent(event)} returns`;
  switch (event.type) {
    case 'ALLOCATE_SLOT':
    case 'MARK_SLOT_ACTIVE':
    case 'MARK_SLOT_INACTIVE':
      return same(what, String(value), 'true');
    case 'FREE_SLOT':
      return same(
        what,
        (value as FreeSlotResult).state,
        slotIn(after, event.allocation) === undefined ? 'freed' : 'releasing',
      );
    case 'REMOVE_TASK':
      return same(what, (value as TaskSlotPayload).executionAttemptId, TASKS[event.task].id);
    case 'CLOSE':
      if (!(value instanceof Promise)) fail(`${what} ${String(value)}, not a promise`);
      return;
    default:
      return;
  }
}

function newTable(): TaskSlotTable {
  return new TaskSlotTable({
    totalResourceProfile: TOTAL,
    numberSlots: NUMBER_SLOTS,
    defaultSlotResourceProfile: DEFAULT_SLOT,
    slotTimeout: SLOT_TIMEOUT,
    releaseTimeout: RELEASE_TIMEOUT,
    clock: new SimulatedClock(),
    pageSize: 4096,
  });
}

// Plain checks: chai's expect costs microseconds a call, and a walk makes ~25 k steps.
function fail(message: string): never {
  throw new AssertionError(message);
}

function same(what: string, actual: string, expected: string): void {
  if (actual !== expected)
    throw new AssertionError(`${what}: expected ${expected}, got ${actual}`, { actual, expected });
}

/** A TaskSlotTable being walked along the model, checking each call's outcome and the table after it. */
class Walk {
  readonly table = newTable();
  readonly #memory: WalkMemory = { releasing: new Map() };
  readonly #trail: string[] = [];
  #view: TableView;
  /** JSON of the table's describe() after the last step. */
  #described: string;

  constructor(initial: TableView) {
    this.#view = initial;
    const described = this.table.describe();
    this.#described = JSON.stringify(described);
    expect(serializeView(viewOf(described)), 'a new table').to.equal(serializeView(initial));
  }

  /** Calls the method `event` stands for; the model says the table is then in `after`. */
  step(event: ModelEvent, { view: after, accepted }: Pick<TableModelSnapshot, 'view' | 'accepted'>): void {
    this.#trail.push(describeEvent(event));
    this.#check(event, after, accepted, call(this.table, event));
  }

  #check(event: ModelEvent, after: TableView, accepted: TableModelSnapshot['accepted'], outcome: Outcome): void {
    try {
      const before = this.#view;
      const description = this.table.describe();
      const described = JSON.stringify(description);
      const what = describeEvent(event);
      if (serializeView(after) !== serializeView(before)) {
        if (outcome.kind === 'refused')
          fail(
            `the machine accepted ${what}, so must the class, ` +
              `but it threw ${outcome.error._tag}: ${outcome.error.message}`,
          );
        checkSuccess(event, after, outcome.value);
      } else if (accepted === false && event.type !== 'CLOSE') {
        if (outcome.kind === 'done')
          fail(`the machine's guards refused ${what}, so must the class; it returned ${String(outcome.value)}`);
        same(`a refused ${what} changes nothing`, described, this.#described);
      } else {
        // The guards let the event through and nothing visible changed (or it is closeAsync, idempotent
        // in the class whatever the machine does): one of Flink's accepted no-ops, never an error.
        if (outcome.kind === 'refused')
          fail(
            `the machine took ${what} without a visible change, so the class must accept it, ` +
              `but it threw ${outcome.error._tag}: ${outcome.error.message}`,
          );
        if (acceptedNoOp(event, before, outcome.value, this.#memory) === undefined)
          fail(`${what} is not an accepted no-op here; it returned ${String(outcome.value)}`);
      }
      this.#remember(event, outcome, after);
      same(`describe() after ${what}`, serializeView(viewOf(description)), serializeView(after));
      this.#view = after;
      this.#described = described;
    } catch (error) {
      // Mocha prints only the text before ": expected" when it shows a diff: show the whole message.
      Object.assign(error as Error, {
        showDiff: false,
        message: `${(error as Error).message}\n  walk: ${this.#trail.join(' → ')}`,
      });
      throw error;
    }
  }

  #remember(event: ModelEvent, outcome: Outcome, after: TableView): void {
    const memory = this.#memory;
    if (outcome.kind === 'done' && event.type === 'CLOSE') memory.closed ??= outcome.value as Promise<void>;
    if (
      outcome.kind === 'done' &&
      event.type === 'FREE_SLOT' &&
      (outcome.value as FreeSlotResult).state === 'releasing' &&
      !memory.releasing.has(event.allocation)
    ) {
      memory.releasing.set(event.allocation, outcome.value as FreeSlotResult);
    }
    // A slot that left the table may come back under the same AllocationID: forget its old closing.
    for (const allocation of memory.releasing.keys())
      if (slotIn(after, allocation)?.state !== 'releasing') memory.releasing.delete(allocation);
  }
}

interface Edge {
  readonly from: string;
  readonly event: ModelEvent;
  readonly to: string;
  readonly view: TableView;
  readonly accepted: TableModelSnapshot['accepted'];
}

/**
 * Walks every edge of the model on TaskSlotTables, each edge once, in as few walks as it can. At
 * each state, the events the machine ignores are tried in place first (a refusal leaves the table
 * as it was, and every step checks that); then an untried event that moves the table is taken; with
 * none left here, the walk goes by known edges to the nearest state with untried events, or, from a
 * dead end (closed), a new walk starts on a fresh table along the shortest path to one.
 */
function coverEveryEdge(
  adjacency: AdjacencyMap<TableModelSnapshot, ModelEvent>,
  shortestPaths: ReadonlyArray<StatePath<TableModelSnapshot, ModelEvent>>,
) {
  const loops = new Map<string, Edge[]>();
  const moves = new Map<string, Edge[]>();
  for (const [from, entry] of Object.entries(adjacency)) {
    for (const { event, state } of Object.values(entry.transitions) as Array<{
      event: ModelEvent;
      state: TableModelSnapshot;
    }>) {
      const edge = { from, event, to: serializeView(state.view), view: state.view, accepted: state.accepted };
      const into = edge.to === from ? loops : moves;
      into.set(from, [...(into.get(from) ?? []), edge]);
    }
  }
  const untried = new Map([...moves].map(([from, edges]) => [from, [...edges]]));
  const loopsLeft = new Set(loops.keys());
  const hasWork = (state: string) => loopsLeft.has(state) || (untried.get(state)?.length ?? 0) > 0;
  /** Marks the move `event` from `from` as tried; true if it had not been. */
  const take = (from: string, event: ModelEvent) => {
    const left = untried.get(from) ?? [];
    const i = left.findIndex((edge) => describeEvent(edge.event) === describeEvent(event));
    if (i >= 0) left.splice(i, 1);
    return i >= 0;
  };
  /** Known edges from `from` to the nearest state with work, or undefined if none is reachable. */
  const routeFrom = (from: string): Edge[] | undefined => {
    const cameBy = new Map<string, Edge | null>([[from, null]]);
    const queue = [from];
    for (const state of queue) {
      if (state !== from && hasWork(state)) {
        const route: Edge[] = [];
        for (let edge = cameBy.get(state); edge; edge = cameBy.get(edge.from)) route.unshift(edge);
        return route;
      }
      for (const edge of moves.get(state) ?? []) {
        if (!cameBy.has(edge.to)) {
          cameBy.set(edge.to, edge);
          queue.push(edge.to);
        }
      }
    }
    return undefined;
  };

  let walks = 0;
  let steps = 0;
  let edges = 0;
  // A state may keep untried moves after a walk left it for good (e.g. the initial state, left by
  // START, still has CLOSE): pass over the starts again until a pass takes no new edge.
  const starts = function* () {
    for (let before = -1; before !== edges; ) {
      before = edges;
      yield* shortestPaths;
    }
  };
  for (const start of starts()) {
    if (!hasWork(serializeView(start.state.view))) continue;
    walks++;
    const [init, ...toStart] = start.steps; // the first step is xstate.init, ending in the initial state
    const walker = new Walk(init!.state.view);
    let here = serializeView(init!.state.view);
    const go = (event: ModelEvent, to: Pick<TableModelSnapshot, 'view' | 'accepted'>): void => {
      walker.step(event, to);
      steps++;
      if (take(here, event)) edges++;
      here = serializeView(to.view);
    };
    const route: Array<Pick<Edge, 'event' | 'view' | 'accepted'>> = toStart.map(({ event, state }) => ({
      event,
      ...state,
    }));
    for (;;) {
      for (const step of route) go(step.event, step);
      route.length = 0;
      if (loopsLeft.delete(here)) {
        route.push(...loops.get(here)!);
        edges += route.length;
        continue;
      }
      const next = untried.get(here)?.[0];
      const onward = next !== undefined ? [next] : routeFrom(here);
      if (onward === undefined) break;
      route.push(...onward);
    }
  }
  expect([...moves.keys(), ...loops.keys()].filter(hasWork), 'states with untried events').to.deep.equal([]);
  return { walks, steps, edges };
}

// ------------------------------------------------------------------------------ the tests

describe('TaskSlotTable, model-based against the taskSlotTable machine', () => {
  const tableModel = createTableModel();
  let adjacency: AdjacencyMap<TableModelSnapshot, ModelEvent>;
  let shortestPaths: StatePath<TableModelSnapshot, ModelEvent>[];

  before(function () {
    this.timeout(30_000);
    adjacency = getAdjacencyMap(tableModel, traversal);
    shortestPaths = getShortestPaths(tableModel, traversal);
    tableModel.dispose();
  });

  it('explores the table: every table state, every slot state, dynamic slots', () => {
    const views = shortestPaths.map((p) => p.state.view);
    expect(shortestPaths.length).to.equal(Object.keys(adjacency).length);
    // 395 today (2 slots × 2 allocations × jobs × tasks × slot states): a collapsed model has far fewer.
    expect(views.length).to.be.at.least(350);
    expect(new Set(views.map((v) => v.state))).to.have.all.keys('created', 'running', 'closing', 'closed');
    expect(new Set(views.flatMap((v) => v.slots.map((s) => s.state)))).to.have.all.keys(
      'allocated',
      'active',
      'releasing',
    );
    expect(views.some((v) => v.slots.some((s) => s.index >= NUMBER_SLOTS))).to.equal(true);
    expect(views.some((v) => v.slots.length === 2 && v.slots.every((s) => s.state === 'releasing'))).to.equal(true);
    expect(views.some((v) => v.slots.some((s) => s.job === 'J2'))).to.equal(true);
  });

  it(
    'walks every transition of the model, accepted or refused, ' + 'on TaskSlotTables: their answers are the machine’s',
    function () {
      this.timeout(30_000);
      const { edges } = coverEveryEdge(adjacency, shortestPaths);
      expect(edges).to.equal(
        Object.values(adjacency).reduce((n, entry) => n + Object.keys(entry.transitions).length, 0),
      );
    },
  );

  it('closeAsync on a created table closes it at once (Flink: CREATED → CLOSED)', async () => {
    const table = newTable();
    let settled = false;
    void table.closeAsync().then(() => (settled = true));
    await flushMicrotasks();
    expect(table.state).to.equal('closed');
    expect(settled).to.equal(true);
  });
});
