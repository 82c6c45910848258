/**
 * A job's restart strategy (JobGraphSpec.restartStrategy) resolved: one of Flink's strategies —
 * `fixed-delay`, `exponential-delay`, `failure-rate`, `none` — each field by the rule of the
 * `restart-strategy.<type>.*` option it stands for (read by that option's own parser), a field left
 * out taken from that option, or the whole strategy from the options when the graph names none. A
 * bad one throws JobGraphError `invalid-restart-strategy` naming the field, what is wrong and what is
 * allowed.
 */
import { formatDuration } from '../core/Duration.js';
import { describeValue } from '../core/errors.js';
import { OPTIONS, type OptionName, type ResolvedOptions, type RestartStrategyType } from '../core/options.js';
import type { RestartBackoffTimeStrategy } from '../../machines/jobStatus.machine.js';
import { isRecord, refuse } from './jobGraphRules.js';

/** The fields of each strategy in a job graph, and the option each stands for (and defaults to). */
const FIELDS = {
  'fixed-delay': {
    attempts: 'restart-strategy.fixed-delay.attempts',
    delay: 'restart-strategy.fixed-delay.delay',
  },
  'exponential-delay': {
    initialBackoff: 'restart-strategy.exponential-delay.initial-backoff',
    maxBackoff: 'restart-strategy.exponential-delay.max-backoff',
    backoffMultiplier: 'restart-strategy.exponential-delay.backoff-multiplier',
    resetBackoffThreshold: 'restart-strategy.exponential-delay.reset-backoff-threshold',
    jitterFactor: 'restart-strategy.exponential-delay.jitter-factor',
    attemptsBeforeResetBackoff: 'restart-strategy.exponential-delay.attempts-before-reset-backoff',
  },
  'failure-rate': {
    maxFailuresPerInterval: 'restart-strategy.failure-rate.max-failures-per-interval',
    failureRateInterval: 'restart-strategy.failure-rate.failure-rate-interval',
    delay: 'restart-strategy.failure-rate.delay',
  },
  none: {},
} as const satisfies Record<RestartStrategyType, Record<string, OptionName>>;

const TYPES = Object.keys(FIELDS) as RestartStrategyType[];
const ALLOWED_TYPES = TYPES.map((type) => `'${type}'`).join(', ');

/** The job's strategy: `spec` checked and completed from `options`, or the options' own when `spec` is undefined. */
export function resolveRestartStrategy(spec: unknown, options: ResolvedOptions): RestartBackoffTimeStrategy {
  if (spec === undefined) {
    const type = options['restart-strategy.type'];
    return build(type, (field) => options[(FIELDS[type] as Record<string, OptionName>)[field]!] as number, null);
  }
  if (!isRecord(spec))
    return refuse(
      'invalid-restart-strategy',
      `restartStrategy must be an object { type, ...its fields } with type one of ${ALLOWED_TYPES}, ` +
        `got ${describeValue(spec)}`,
      { field: 'restartStrategy', allowed: TYPES },
    );
  const type = spec.type as RestartStrategyType;
  if (!TYPES.includes(type))
    return refuse(
      'invalid-restart-strategy',
      `restartStrategy.type must be one of ${ALLOWED_TYPES}, got ${describeValue(spec.type)}`,
      { field: 'restartStrategy.type', allowed: TYPES },
    );
  const fields = FIELDS[type] as Record<string, OptionName>;
  const allowed = ['type', ...Object.keys(fields)];
  const unknown = Object.keys(spec).find((key) => !allowed.includes(key));
  if (unknown !== undefined)
    refuse(
      'invalid-restart-strategy',
      `restartStrategy has an unknown field ${JSON.stringify(unknown)}; a ${type} strategy takes ` +
        `${allowed.join(', ')}`,
      { field: unknown, allowed },
    );
  const given: Record<string, number> = {};
  for (const [field, option] of Object.entries(fields)) {
    if (spec[field] === undefined) continue;
    const parsed = (OPTIONS[option] as { parse: (input: unknown) => ParsedNumber }).parse(spec[field]);
    if (!parsed.ok)
      refuse('invalid-restart-strategy', `restartStrategy.${field} ${parsed.problem}`, {
        field: `restartStrategy.${field}`,
        option,
      });
    given[field] = parsed.value;
  }
  return build(type, (field) => given[field] ?? (options[fields[field]!] as number), given);
}

type ParsedNumber = { ok: true; value: number } | { ok: false; problem: string };

/** The resolved strategy of `type`, its fields read by `value`; `given` (null: all from options) names their source. */
function build(
  type: RestartStrategyType,
  value: (field: string) => number,
  given: Record<string, number> | null,
): RestartBackoffTimeStrategy {
  switch (type) {
    case 'none':
      return Object.freeze({ type });
    case 'fixed-delay':
      return Object.freeze({ type, attempts: value('attempts'), delayMs: value('delay') });
    case 'failure-rate':
      return Object.freeze({
        type,
        maxFailuresPerInterval: value('maxFailuresPerInterval'),
        failureRateIntervalMs: value('failureRateInterval'),
        delayMs: value('delay'),
      });
    case 'exponential-delay': {
      const initialBackoffMs = value('initialBackoff');
      const maxBackoffMs = value('maxBackoff');
      // Flink's ExponentialDelayRestartBackoffTimeStrategy: the initial backoff may not exceed the max.
      if (initialBackoffMs > maxBackoffMs) {
        const where = (field: string) =>
          given !== null && given[field] !== undefined
            ? `restartStrategy.${field}`
            : `'${FIELDS['exponential-delay'][field as 'initialBackoff' | 'maxBackoff']}'`;
        refuse(
          'invalid-restart-strategy',
          `${where('initialBackoff')} (${formatDuration(initialBackoffMs)}) must not be longer than ` +
            `${where('maxBackoff')} (${formatDuration(maxBackoffMs)})`,
          { field: 'restartStrategy.initialBackoff' },
        );
      }
      return Object.freeze({
        type,
        initialBackoffMs,
        maxBackoffMs,
        backoffMultiplier: value('backoffMultiplier'),
        resetBackoffThresholdMs: value('resetBackoffThreshold'),
        jitterFactor: value('jitterFactor'),
        attemptsBeforeResetBackoff: value('attemptsBeforeResetBackoff'),
      });
    }
  }
}
