/**
 * Configuration: Flink's option names (where Flink has one), Flink's defaults unless an option's
 * description says otherwise, one table (docs/configuration.md). `resolveOptions` validates every
 * key at the door — an unknown name or a value outside its rule is a ConfigurationError naming the
 * option and the rule — and returns the fully resolved, frozen options. Durations resolve to
 * milliseconds, sizes to bytes. The rules each kind of value is read by are optionSpecs.ts'.
 */
import { formatDuration } from './Duration.js';
import { ConfigurationError, describeValue } from './errors.js';
import { formatMemorySize } from './MemorySize.js';
import {
  boolean,
  boundedNumber,
  derivedChoice,
  directories,
  derivedInteger,
  derivedNumber,
  duration,
  integer,
  memory,
  oneOf,
  positiveNumber,
  resources,
  restartStrategyType,
  schedulerType,
  type OptionSpec,
} from './optionSpecs.js';

export type { RestartStrategyType } from './optionSpecs.js';

const isPowerOfTwoPageSize = (bytes: number) =>
  bytes >= 4096 && bytes <= 16 * 1024 * 1024 && (bytes & (bytes - 1)) === 0
    ? undefined
    : `must be a power of two from 4 kb to 16 mb, got ${formatMemorySize(bytes)}`;

/** Every option slotwise knows: its default, its rule and what it means. */
export const OPTIONS = {
  'taskmanager.numberOfTaskSlots': integer(
    1,
    'Static slots per TaskExecutor; the default slot profile is the total divided by this.',
    1,
  ),
  'taskmanager.cpu.cores': derivedNumber(
    'number of slots',
    'CPU cores a TaskExecutor offers (bookkeeping for matching; Flink does not isolate CPU).',
  ),
  'taskmanager.memory.task.heap.size': memory(
    256 * 1024 * 1024,
    "Task heap a TaskExecutor offers; a slot's share bounds its task threads' heap.",
  ),
  'taskmanager.memory.task.off-heap.size': memory(0, 'Task off-heap memory a TaskExecutor offers.'),
  'taskmanager.memory.managed.size': memory(
    128 * 1024 * 1024,
    'Managed memory a TaskExecutor offers; each slot gets its share as MemoryManager pages.',
  ),
  'taskmanager.memory.network.size': memory(
    64 * 1024 * 1024,
    'Network memory a TaskExecutor offers (Flink derives it from network.min/max/fraction; here it is one size).',
  ),
  'io.tmp.dirs': directories(
    "Directories for temporary files (Flink's): a TaskExecutor spills result partitions past its network " +
      'memory to a directory of its own under the first; empty: the OS temporary directory.',
  ),
  'taskmanager.network.spill.max-size': memory(
    16 * 2 ** 30,
    'The most a TaskExecutor spills to disk at once: a producer whose output would go past it fails ' +
      "with PartitionError('spill-limit') (its job may restart it elsewhere).",
    undefined,
    true,
  ),
  'taskmanager.extended-resources': resources(
    'Extended resources a TaskExecutor offers, e.g. { gpu: 2 } (Flink: external-resource.<name>.amount).',
  ),
  'taskmanager.memory.segment-size': memory(32 * 1024, "Page size of a slot's MemoryManager.", isPowerOfTwoPageSize),
  'taskmanager.slot.timeout': duration(10_000, 'An allocated slot not activated by then is reported for freeing.'),
  'task.cancellation.timeout': duration(
    180_000,
    'A releasing slot whose tasks have not terminated by then is reported as stuck.',
  ),
  'slot.request.timeout': duration(300_000, 'A slot request not fulfilled by then fails with its reason.'),
  'slot.idle.timeout': duration(
    50_000,
    'How long a JobMaster keeps a slot its subtasks no longer use, ' +
      "for the job's next subtasks, before giving it back (0: at once).",
    0,
  ),
  'jobmanager.scheduler.scheduling-strategy': oneOf(
    ['region', 'eager'] as const,
    'region',
    'When a subtask gets its slot: `region` once every producer it reads has finished (sources at the start; ' +
      'a consumer holds no slot while it waits, so a job larger than the cluster runs in waves), `eager` all at ' +
      "the job's start (a consumer holds its slot while it waits; Flink 1.12 called it `legacy`). A job without " +
      'edges starts whole either way.',
  ),
  'jobmanager.scheduler': schedulerType(
    "Which scheduler runs a job: 'default' (every vertex's parallelism is the job's) or 'adaptive' (Flink's " +
      "AdaptiveBatch scheduler; 'AdaptiveBatch' and 'adaptive-batch' are accepted too): a vertex may leave its " +
      'parallelism unset, and it is decided when its producers have finished, from the bytes they produced. A ' +
      "job's graph may choose its own (`scheduler`).",
  ),
  'execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task': memory(
    16 * 2 ** 20,
    'The adaptive scheduler gives a vertex one subtask per this many bytes its producers produced (within the ' +
      'min and max parallelism).',
    (bytes) => (bytes < 1 ? 'must be at least 1b' : undefined),
  ),
  'execution.batch.adaptive.auto-parallelism.min-parallelism': integer(
    1,
    'The least parallelism the adaptive scheduler decides for a vertex (a vertex may set its own bounds).',
    1,
  ),
  'execution.batch.adaptive.auto-parallelism.max-parallelism': integer(
    128,
    'The most parallelism the adaptive scheduler decides for a vertex (a vertex may set its own bounds; ' +
      'slotmanager.number-of-slots.max caps it too).',
    1,
  ),
  'execution.batch.adaptive.auto-parallelism.default-source-parallelism': integer(
    1,
    'The parallelism the adaptive scheduler gives a source vertex (one without inputs) that leaves it unset.',
    1,
  ),
  'execution.batch.speculative.enabled': boolean(
    false,
    "Speculative execution (Flink's SpeculativeScheduler): a subtask running much longer than its finished " +
      'siblings (the slow-task-detector.* options) gets another attempt on another TaskExecutor; the first to ' +
      'finish wins, the others are canceled. Only jobs the adaptive scheduler runs: true needs ' +
      "jobmanager.scheduler 'adaptive'.",
  ),
  'execution.batch.speculative.max-concurrent-executions': integer(
    2,
    'The most attempts of one subtask that run at once, the original included (at least 2).',
    2,
  ),
  'execution.batch.speculative.block-slow-node-duration': duration(
    60_000,
    'How long a TaskExecutor a slow attempt runs on takes no new slots (0: not blocked; a speculative attempt ' +
      'may then land there too).',
    0,
  ),
  'slow-task-detector.check-interval': duration(1_000, 'How often the slow task detector looks for slow subtasks.'),
  'slow-task-detector.execution-time.baseline-lower-bound': duration(
    60_000,
    'An attempt is never slow before it has run this long.',
    0,
  ),
  'slow-task-detector.execution-time.baseline-ratio': boundedNumber(
    0.75,
    "The share of a vertex's subtasks that must have finished before its others can be found slow; the median " +
      'execution time of the first round(parallelism x ratio) finished is the baseline.',
    { atLeast: 0, below: 1 },
  ),
  'slow-task-detector.execution-time.baseline-multiplier': boundedNumber(
    1.5,
    'An attempt is slow once it has run this many times the baseline.',
    { above: 0 },
  ),
  'taskmanager.task-threads.spare': derivedInteger(
    'number of slots',
    'Task threads a TaskExecutor keeps idle, per task-heap limit, so that a new slot allocation does not ' +
      'wait for a thread to boot: booted ahead of need, or given back by an allocation that ended ' +
      '(0: none; every allocation boots its own and it ends with it).',
    0,
  ),
  'taskmanager.task-threads.max-jobs': integer(
    10_000,
    'Slot allocations (jobs) a task thread serves before it retires and a new one boots in its place; ' +
      'each job imports its task modules afresh either way (a new thread costs its boot and the warm-up of ' +
      'its isolate, ~0.25 s of CPU: at 1,000 that was ~10 % of a stream of small jobs). ' +
      "1: a thread never serves a second job (no job sees another's globals).",
    1,
    true,
  ),
  'taskmanager.task-threads.max-heap-after-job': memory(
    64 * 2 ** 20,
    'A task thread whose heap in use is above this when its allocation ends (garbage not yet collected ' +
      'included) retires instead of serving another job.',
    (bytes) => (bytes < 1 ? 'must be at least 1b' : undefined),
    true,
  ),
  'heartbeat.interval': duration(10_000, 'How often heartbeats are sent.'),
  'heartbeat.timeout': duration(30_000, "A peer silent for this long is lost (30 s here; Flink's default is 50 s)."),
  'resourcemanager.taskmanager-timeout': duration(30_000, 'An idle TaskExecutor is released after this.'),
  'slotmanager.requirement-check.delay': duration(
    0,
    '0: every requirement change is checked at once (a check here is incremental, microseconds; ' +
      "Flink's default of 50 ms made every job wait for it). Above 0: a change after a quiet period " +
      'is checked at once (next turn), later ones within this window coalesced into one trailing check; ' +
      'a JobMaster declares its requirements at most once per this window too (and that it needs fewer while it ' +
      'still waits for slots at most once per 50 ms, whatever this is).',
    0,
  ),
  'slotmanager.number-of-slots.max': integer(Infinity, 'The most slots the cluster may hold.', 1, true),
  'slotmanager.max-total-resource.cpu': positiveNumber(
    Infinity,
    'The most CPU cores all TaskExecutors may offer together.',
    true,
  ),
  'slotmanager.max-total-resource.memory': memory(
    Infinity,
    'The most memory all TaskExecutors may offer together.',
    undefined,
    true,
  ),
  'slotmanager.redundant-taskmanager-num': integer(0, 'Spare TaskExecutors kept for fast failover.', 0),
  'taskmanager.load-balance.mode': oneOf(
    ['none', 'slots'] as const,
    'none',
    '`slots` spreads slots over TaskExecutors by least utilisation.',
  ),
  'slotmanager.placement-policy': derivedChoice(
    ['first-fit', 'spread', 'pack'] as const,
    'from taskmanager.load-balance.mode',
    'Which TaskExecutor gets a slot: first-fit (registration order), spread (least utilised), pack ' +
      '(most utilised that fits). Unset: spread if the load-balance mode is `slots`, else first-fit.',
  ),
  'cluster.registration.initial-timeout': duration(
    100,
    "How long a TaskExecutor's first registration attempt waits for an answer before the next; doubles per " +
      'attempt up to the max timeout (Flink: also the backoff after a failed attempt).',
  ),
  'cluster.registration.max-timeout': duration(30_000, 'Longest wait between registration attempts.'),
  'taskmanager.registration.timeout': duration(
    300_000,
    'A TaskExecutor that cannot register within this gives up and stops.',
  ),
  'task.cancellation.grace-period': duration(
    5_000,
    'How long a canceled task may take to stop on its AbortSignal before its thread is terminated (ours).',
  ),
  'rpc.ask.timeout': duration(
    10_000,
    'Deadline of a call to another endpoint, e.g. a slot request to a TaskExecutor (Flink: pekko.ask.timeout).',
  ),
  'resourcemanager.start-worker.max-failure-rate': positiveNumber(
    10,
    'Worker start failures allowed per minute before starts are delayed.',
  ),
  'restart-strategy.type': restartStrategyType(
    "How failed tasks are restarted: 'fixed-delay', 'exponential-delay', 'failure-rate' or 'none' " +
      "(Flink's other spellings too: 'fixeddelay', 'exponentialdelay', 'failurerate', 'off', 'disable').",
  ),
  'restart-strategy.fixed-delay.attempts': integer(
    3,
    'Restart attempts before the job fails: every failure counts, one during a restart delay too.',
    0,
  ),
  'restart-strategy.fixed-delay.delay': duration(10_000, 'Delay between a failure and its restart.', 0),
  'restart-strategy.exponential-delay.initial-backoff': duration(
    1_000,
    'Backoff of the first restart (and of the first after a reset); at most max-backoff.',
  ),
  'restart-strategy.exponential-delay.max-backoff': duration(60_000, 'The longest backoff between restarts.'),
  'restart-strategy.exponential-delay.backoff-multiplier': boundedNumber(
    1.5,
    'The backoff is multiplied by this after every restart, up to max-backoff.',
    { above: 1 },
  ),
  'restart-strategy.exponential-delay.reset-backoff-threshold': duration(
    3_600_000,
    'A job that ran this long past its last restart without a failure starts again from the initial ' +
      'backoff, its restarts counted from 0.',
  ),
  'restart-strategy.exponential-delay.jitter-factor': boundedNumber(
    0.1,
    'Up to this fraction of the backoff is added or taken off at random, so that jobs failing together ' +
      'do not all restart at once.',
    { atLeast: 0, atMost: 1 },
  ),
  'restart-strategy.exponential-delay.attempts-before-reset-backoff': integer(
    Infinity,
    'Restarts before the job fails, counted since the backoff was last reset; failures that arrive ' +
      'before the restart due are merged into it, not counted.',
    1,
    true,
  ),
  'restart-strategy.failure-rate.max-failures-per-interval': integer(
    1,
    'Failures allowed within failure-rate-interval; one more within it fails the job.',
    1,
  ),
  'restart-strategy.failure-rate.failure-rate-interval': duration(
    60_000,
    'The window over which failure-rate counts failures.',
  ),
  'restart-strategy.failure-rate.delay': duration(1_000, 'Delay between a failure and its restart.', 0),
  'jobstore.expiration-time': duration(
    3_600_000,
    'How long the Dispatcher keeps an ended job (its status and result) after it ended.',
  ),
  'jobstore.max-capacity': integer(
    1_000,
    'The most ended jobs the Dispatcher keeps (in memory: Flink keeps them on disk by default); the oldest go first.',
    0,
    true,
  ),
  'high-availability.type': oneOf(
    ['nats', 'none'],
    'nats',
    "A session cluster's jobs survive its JobManager: 'nats' keeps each submitted job's graph and each ended " +
      "job's result in the cluster's JetStream, and a new leader recovers the jobs that had not ended; 'none' " +
      'keeps them in the JobManager only. Leadership itself is always elected (one JobManager leads a cluster id).',
  ),
  'high-availability.nats.replicas': integer(
    1,
    'Replicas of each JetStream stream and object store a session cluster makes (its lease, jobs, results, task ' +
      'code, large messages): 3 on a 3-node NATS cluster, so that losing one node loses nothing. Ours.',
    1,
  ),
  'high-availability.leader-election.lease-duration': duration(
    15_000,
    "How long a JobManager's lease on its cluster lasts unrenewed: a standby takes over at most this long after " +
      'the leader died (Flink: high-availability.kubernetes.leader-election.lease-duration).',
    1_000,
  ),
  'high-availability.leader-election.renew-deadline': duration(
    10_000,
    'A leader that could not renew its lease for this long steps down (before the lease could lapse and be taken); ' +
      'must be shorter than lease-duration.',
    1,
  ),
  'high-availability.leader-election.retry-period': duration(
    1_000,
    'How often a leader renews its lease and a standby tries to take it; must be shorter than renew-deadline.',
    1,
  ),
  'web.exception-history-size': integer(
    16,
    "The most failures a job's exception history keeps (the newest; a failure during a pending restart joins " +
      "that restart's entry), kept while the job is listed.",
    0,
  ),
  'jobmanager.execution.attempts-history-size': integer(
    16,
    'The most ended attempts of a subtask kept beside its current one (each with its TaskExecutor, slot, start ' +
      'and end), for the dashboard and the REST API; the oldest go first.',
    0,
  ),
  'dispatcher.task-module-check.timeout': duration(
    10_000,
    'How long a task module may take to load in the checker worker (a short-lived thread, or a child process ' +
      'in process mode, never the main thread) before its submit fails with invalid-task-module, timed-out (ours).',
  ),
} as const;

export type OptionName = keyof typeof OPTIONS;
type InputOf<S> = S extends OptionSpec<infer In, infer _Out> ? In : never;
type OutputOf<S> = S extends OptionSpec<unknown, infer Out> ? Out : never;

/** What a user passes: any subset of the options, durations and sizes with or without units. */
export type SlotwiseOptions = { readonly [K in OptionName]?: InputOf<(typeof OPTIONS)[K]> };
/** Every option present and resolved: durations in ms, sizes in bytes. */
export type ResolvedOptions = { readonly [K in OptionName]: OutputOf<(typeof OPTIONS)[K]> };

/** The default of every option. */
export const DEFAULTS: ResolvedOptions = Object.freeze(
  Object.fromEntries(Object.entries(OPTIONS).map(([name, spec]) => [name, spec.default])) as unknown as ResolvedOptions,
);

/**
 * Validates `options` and fills in the defaults. Throws ConfigurationError for an unknown option
 * (suggesting the nearest name) or a value outside its rule (naming the rule); nothing is
 * half-applied because nothing is applied until every option passed.
 */
export function resolveOptions(options: SlotwiseOptions | ResolvedOptions = {}): ResolvedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError(
      'invalid-value',
      `options must be an object of option name -> value, got ${describeValue(options)}`,
      { option: '(options)' },
    );
  }
  const resolved: Record<string, unknown> = { ...DEFAULTS };
  for (const [name, input] of Object.entries(options)) {
    // Own keys only: 'toString' or a JSON '__proto__' key must be an unknown option, not Object.prototype's.
    const spec = Object.hasOwn(OPTIONS, name)
      ? (OPTIONS as Record<string, OptionSpec<unknown, unknown>>)[name]
      : undefined;
    if (spec === undefined) {
      const hint = nearestOption(name);
      throw new ConfigurationError(
        'unknown-option',
        `unknown option '${name}'${hint ? `; did you mean '${hint}'?` : ''} (known options: see OPTIONS)`,
        {
          option: name,
          suggestion: hint,
        },
      );
    }
    if (input === undefined) continue;
    const parsed = spec.parse(input);
    if (!parsed.ok)
      throw new ConfigurationError('invalid-value', `option '${name}' ${parsed.problem}`, {
        option: name,
        value: describeValue(input),
      });
    resolved[name] = parsed.value;
  }
  if ((resolved['heartbeat.timeout'] as number) <= (resolved['heartbeat.interval'] as number)) {
    throw new ConfigurationError(
      'invalid-value',
      `option 'heartbeat.timeout' (${formatDuration(resolved['heartbeat.timeout'] as number)}) must be ` +
        `longer than 'heartbeat.interval' (${formatDuration(resolved['heartbeat.interval'] as number)})`,
      { option: 'heartbeat.timeout' },
    );
  }
  const lease = resolved['high-availability.leader-election.lease-duration'] as number;
  const renewDeadline = resolved['high-availability.leader-election.renew-deadline'] as number;
  const retryPeriod = resolved['high-availability.leader-election.retry-period'] as number;
  if (!(retryPeriod < renewDeadline && renewDeadline < lease)) {
    throw new ConfigurationError(
      'invalid-value',
      `options 'high-availability.leader-election.*' must keep retry-period (${formatDuration(retryPeriod)}) < ` +
        `renew-deadline (${formatDuration(renewDeadline)}) < lease-duration (${formatDuration(lease)}): a leader ` +
        'steps down before its lease could be taken',
      { option: 'high-availability.leader-election.renew-deadline' },
    );
  }
  const initial = resolved['restart-strategy.exponential-delay.initial-backoff'] as number;
  const max = resolved['restart-strategy.exponential-delay.max-backoff'] as number;
  if (initial > max) {
    throw new ConfigurationError(
      'invalid-value',
      `option 'restart-strategy.exponential-delay.initial-backoff' (${formatDuration(initial)}) must not be ` +
        `longer than 'restart-strategy.exponential-delay.max-backoff' (${formatDuration(max)})`,
      { option: 'restart-strategy.exponential-delay.initial-backoff' },
    );
  }
  const minParallelism = resolved['execution.batch.adaptive.auto-parallelism.min-parallelism'] as number;
  const maxParallelism = resolved['execution.batch.adaptive.auto-parallelism.max-parallelism'] as number;
  if (minParallelism > maxParallelism) {
    throw new ConfigurationError(
      'invalid-value',
      `option 'execution.batch.adaptive.auto-parallelism.min-parallelism' (${minParallelism}) must not be above ` +
        `'execution.batch.adaptive.auto-parallelism.max-parallelism' (${maxParallelism})`,
      { option: 'execution.batch.adaptive.auto-parallelism.min-parallelism' },
    );
  }
  if (resolved['execution.batch.speculative.enabled'] === true && resolved['jobmanager.scheduler'] !== 'adaptive') {
    throw new ConfigurationError(
      'invalid-value',
      "option 'execution.batch.speculative.enabled' is true but 'jobmanager.scheduler' is " +
        `'${resolved['jobmanager.scheduler']}': speculative execution needs the adaptive scheduler (as Flink's ` +
        "SpeculativeScheduler is an AdaptiveBatchScheduler); set 'jobmanager.scheduler' to 'adaptive'",
      { option: 'execution.batch.speculative.enabled' },
    );
  }
  return Object.freeze(resolved) as unknown as ResolvedOptions;
}

/** One line per option: name, default, meaning (for docs/configuration.md and `--help`). */
export function describeOptions(): Array<{ name: OptionName; default: string; doc: string }> {
  return (Object.keys(OPTIONS) as OptionName[]).map((name) => {
    const spec = OPTIONS[name] as OptionSpec<unknown, unknown>;
    return { name, default: spec.format(spec.default), doc: spec.doc };
  });
}

function nearestOption(name: string): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of Object.keys(OPTIONS)) {
    const d = editDistance(name, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return bestDistance <= Math.max(3, Math.floor(name.length / 4)) ? best : undefined;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
