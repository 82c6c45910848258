/**
 * The ResourceManager-side slot statechart (`machines/resourceSlot.machine.ts`), compiled once at
 * module load into a state × event lookup table, so the SlotManager can apply it to 100,000 plain
 * slot records: one `transitionResourceSlot` is a couple of Map lookups and one typed-array read,
 * against ~20–30 µs for XState's pure `transition()` (measured on this project's machines).
 *
 * The table is read from the machine's own definition (each state node's `transitions` map), never
 * written by hand, so the statechart stays the single source of truth for which moves are legal;
 * `test/machines/resourceSlot.machine.test.ts` walks the machine with @xstate/graph and checks the
 * table agrees on every (state, event) pair.
 *
 * The compiler handles exactly what a table can reproduce: flat atomic states; unguarded,
 * action-free transitions with exactly one target, declared on a state or on the root (a state's
 * own transition wins, as in XState). Anything else — a guard, a fallback list of candidates,
 * several targets or none, actions, entry/exit actions, `always`, `after`, `invoke`, nested
 * states, wildcard or unknown event types — makes the compiler throw at module load, so a change
 * to the machine that the table would silently ignore cannot ship.
 */
import { IllegalArgumentError, IllegalStateError } from '../../core/errors.js';
import {
  RESOURCE_SLOT_EVENTS,
  RESOURCE_SLOT_STATES,
  resourceSlotMachine,
  type ResourceSlotEventType,
  type ResourceSlotState,
} from '../../../machines/resourceSlot.machine.js';

/** The parts of an XState state node the compiler reads (structural, so tests can pass any machine). */
interface StateNodeView {
  readonly key: string;
  readonly id: string;
  readonly type: string;
  readonly parent?: StateNodeView | undefined;
  readonly states: Readonly<Record<string, StateNodeView>>;
  readonly transitions: ReadonlyMap<string, ReadonlyArray<TransitionView>>;
  readonly always?: readonly unknown[] | undefined;
  readonly after?: readonly unknown[] | undefined;
  readonly invoke: readonly unknown[];
  readonly entry: readonly unknown[];
  readonly exit: readonly unknown[];
}

interface TransitionView {
  readonly target?: ReadonlyArray<StateNodeView> | undefined;
  readonly guard?: unknown;
  readonly actions: readonly unknown[];
}

/** A flat statechart compiled into a table: `next[s * events.length + e]` is the target index, or -1. */
export interface CompiledStateTable<S extends string, E extends string> {
  readonly machineId: string;
  readonly states: readonly S[];
  readonly events: readonly E[];
  readonly next: Int8Array;
}

function refuse(machineId: string, message: string): never {
  throw new IllegalArgumentError(
    'invalid-value',
    `cannot compile machine '${machineId}' into a transition table: ${message}`,
    {
      argument: 'machine',
      machineId,
    },
  );
}

function guardName(guard: unknown): string {
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') return guard.name || 'an inline function';
  if (typeof guard === 'object' && guard !== null && typeof (guard as { type?: unknown }).type === 'string')
    return (guard as { type: string }).type;
  return String(guard);
}

/**
 * Compiles a flat machine into a {@link CompiledStateTable}. `states` and `events` fix the index
 * order and must name exactly the machine's top-level states and (at least) every event type its
 * transitions use. Throws {@link IllegalArgumentError} naming the first construct a table cannot
 * reproduce. Runs once per machine, at module load.
 */
export function compileStateTable<S extends string, E extends string>(
  machine: { readonly id: string; readonly root: unknown },
  states: readonly S[],
  events: readonly E[],
): CompiledStateTable<S, E> {
  const root = machine.root as StateNodeView;
  const id = machine.id;
  if (states.length === 0 || states.length > 127) refuse(id, `needs 1..127 states, got ${states.length}`);
  if (new Set(states).size !== states.length) refuse(id, `the state list repeats a name: ${states.join(', ')}`);
  if (new Set(events).size !== events.length) refuse(id, `the event list repeats a type: ${events.join(', ')}`);

  // Effects a table cannot run, on the root or on any state.
  const noEffects = (node: StateNodeView, where: string) => {
    if (node.always !== undefined && node.always.length > 0) refuse(id, `${where} has eventless (always) transitions`);
    // XState compiles `after` into a delayed raise on entry and a cancel on exit, plus an
    // `xstate.after.*` transition: name it before those show up as anonymous entry actions.
    if (node.after !== undefined && node.after.length > 0) refuse(id, `${where} has delayed (after) transitions`);
    if (node.invoke.length > 0) refuse(id, `${where} invokes actors`);
    if (node.entry.length > 0 || node.exit.length > 0) refuse(id, `${where} has entry or exit actions`);
  };
  noEffects(root, 'the root');

  const declared = Object.keys(root.states);
  const missing = states.filter((s) => !declared.includes(s));
  const extra = declared.filter((s) => !(states as readonly string[]).includes(s));
  if (missing.length > 0 || extra.length > 0) {
    refuse(id, `its states are [${declared.join(', ')}], expected [${states.join(', ')}]`);
  }

  const stateIndex = new Map<string, number>(states.map((s, i) => [s, i]));
  const eventIndex = new Map<string, number>(events.map((e, i) => [e, i]));
  const next = new Int8Array(states.length * events.length).fill(-1);

  /** The table cell for one (state, event) given the candidates XState would consider. */
  const targetOf = (eventType: string, candidates: ReadonlyArray<TransitionView>, where: string): number => {
    if (candidates.length !== 1)
      refuse(
        id,
        `${where} on ${eventType} has ${candidates.length} candidate transitions (guarded fallbacks are not supported)`,
      );
    const transition = candidates[0]!;
    if (transition.guard !== undefined)
      refuse(id, `${where} on ${eventType} has a guard (${guardName(transition.guard)})`);
    if (transition.actions.length > 0) refuse(id, `${where} on ${eventType} has actions`);
    const targets = transition.target;
    // A targetless transition consumes the event yet XState's `can()` calls it impossible: legal or
    // not would be a guess, so the table refuses it (a self-transition `target: '<state>'` is fine).
    if (targets === undefined || targets.length === 0) refuse(id, `${where} on ${eventType} has no target`);
    if (targets.length !== 1) refuse(id, `${where} on ${eventType} has ${targets.length} targets`);
    const target = targets[0]!;
    const index = target.parent === root ? stateIndex.get(target.key) : undefined;
    if (index === undefined)
      refuse(id, `${where} on ${eventType} targets ${target.id}, which is not a top-level state`);
    return index;
  };

  const checkEventType = (eventType: string, where: string): number => {
    const e = eventIndex.get(eventType);
    if (e === undefined) {
      const kind = eventType.includes('*')
        ? 'a wildcard'
        : eventType.startsWith('xstate.')
          ? 'a built-in (after/done/error)'
          : 'an unknown';
      refuse(id, `${where} handles ${kind} event type '${eventType}' (known: ${events.join(', ')})`);
    }
    return e;
  };
  for (const eventType of root.transitions.keys()) checkEventType(eventType, 'the root');

  for (const [s, name] of states.entries()) {
    const node = root.states[name]!;
    const where = `state '${name}'`;
    if (node.type !== 'atomic') refuse(id, `${where} is ${node.type}; only flat, atomic states are supported`);
    noEffects(node, where);
    for (const eventType of node.transitions.keys()) checkEventType(eventType, where);
    for (const [e, eventType] of events.entries()) {
      // XState takes the innermost state's transition first, then its ancestors' (here: the root's).
      const own = node.transitions.get(eventType);
      const inherited = own === undefined ? root.transitions.get(eventType) : undefined;
      if (own !== undefined) next[s * events.length + e] = targetOf(eventType, own, where);
      else if (inherited !== undefined) next[s * events.length + e] = targetOf(eventType, inherited, 'the root');
    }
  }
  return { machineId: id, states, events, next };
}

// ------------------------------------------------------------------------------ resourceSlot

const TABLE = compileStateTable(resourceSlotMachine, RESOURCE_SLOT_STATES, RESOURCE_SLOT_EVENTS);
const NEXT = TABLE.next;
const EVENT_COUNT = RESOURCE_SLOT_EVENTS.length;
const STATE_INDEX = new Map<string, number>(RESOURCE_SLOT_STATES.map((s, i) => [s, i]));
const EVENT_INDEX = new Map<string, number>(RESOURCE_SLOT_EVENTS.map((e, i) => [e, i]));
/** Per event index: the states in which it is legal, for error messages. */
const ALLOWED_IN: ReadonlyArray<readonly ResourceSlotState[]> = RESOURCE_SLOT_EVENTS.map((_, e) =>
  Object.freeze(RESOURCE_SLOT_STATES.filter((_, s) => NEXT[s * EVENT_COUNT + e]! >= 0)),
);

/**
 * The state a slot in `state` moves to on `event`, or undefined when the machine does not allow
 * the event there (or either name is unknown). Allocation-free; safe on the hot path.
 */
export function nextResourceSlotState(
  state: ResourceSlotState,
  event: ResourceSlotEventType,
): ResourceSlotState | undefined {
  const s = STATE_INDEX.get(state);
  const e = EVENT_INDEX.get(event);
  if (s === undefined || e === undefined) return undefined;
  const t = NEXT[s * EVENT_COUNT + e]!;
  return t < 0 ? undefined : RESOURCE_SLOT_STATES[t];
}

/** The states in which `event` is legal, in the machine's state order (empty for an unknown event). */
export function resourceSlotStatesAllowing(event: ResourceSlotEventType): readonly ResourceSlotState[] {
  const e = EVENT_INDEX.get(event);
  return e === undefined ? [] : ALLOWED_IN[e]!;
}

/**
 * Applies `event` to a plain slot record: sets `record.state` to the machine's target, or throws
 * {@link IllegalStateError} and leaves the record untouched — Flink's TaskManagerSlot's
 * `checkState(state == FREE)` and `checkState(state == PENDING)`. `what` names the slot in the
 * message (e.g. its SlotID): "slot te-1/0: COMPLETE_ALLOCATION is not allowed in state free
 * (allowed in: pending)".
 */
export function transitionResourceSlot(
  record: { state: ResourceSlotState },
  event: ResourceSlotEventType,
  what: string | (() => string),
): void {
  const target = nextResourceSlotState(record.state, event);
  // `what` names the slot in the error; a function builds that name only when it is needed.
  if (target === undefined) throw illegalTransition(record.state, event, typeof what === 'function' ? what() : what);
  record.state = target;
}

function illegalTransition(state: ResourceSlotState, event: ResourceSlotEventType, what: string): IllegalStateError {
  const component = `slot ${what}`;
  const allowed = resourceSlotStatesAllowing(event);
  const message = !EVENT_INDEX.has(event)
    ? `${component}: unknown event ${String(event)} (events: ${RESOURCE_SLOT_EVENTS.join(', ')})`
    : !STATE_INDEX.has(state)
      ? `${component}: unknown state ${String(state)} (states: ${RESOURCE_SLOT_STATES.join(', ')})`
      : `${component}: ${event} is not allowed in state ${state} (allowed in: ${allowed.join(', ')})`;
  return new IllegalStateError(message, { component, operation: event, state: String(state), allowed: [...allowed] });
}
