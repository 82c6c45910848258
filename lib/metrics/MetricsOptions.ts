/**
 * `MiniCluster.start({ metrics })`, checked at the door: the prom-client Registry the cluster's
 * metrics go to (default: a Registry of its own, so two clusters in one process never collide)
 * and the prefix of their names (default `slotwise`, as Flink's Prometheus reporter puts `flink`).
 */
import { Registry } from 'prom-client';
import { ConfigurationError } from '../core/errors.js';

export interface MetricsOptions {
  /**
   * The app's prom-client Registry (`new Registry()` or prom-client's global `register`); default
   * a new one, which `cluster.metricsRegistry` gives. The cluster's metrics leave it when it closes.
   */
  readonly registry?: Registry;
  /** The first word of every metric name: letters, digits and `_`, starting with a letter (default `slotwise`). */
  readonly prefix?: string;
}

export interface ResolvedMetricsOptions {
  readonly registry: Registry;
  readonly prefix: string;
}

const KNOWN = ['registry', 'prefix'];
const PREFIX = /^[a-zA-Z][a-zA-Z0-9_]*$/;

export function resolveMetricsOptions(options: MetricsOptions | undefined): ResolvedMetricsOptions {
  if (options === undefined) return { registry: new Registry(), prefix: 'slotwise' };
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw invalid(
      'metrics',
      `metrics must be an object { registry?, prefix? }, ` +
        `got ${options === null ? 'null' : Array.isArray(options) ? 'an array' : typeof options}`,
    );
  }
  const unknown = Object.keys(options).find((key) => !KNOWN.includes(key));
  if (unknown !== undefined)
    throw new ConfigurationError('unknown-option', `unknown metrics option '${unknown}'; known: ${KNOWN.join(', ')}`, {
      option: `metrics.${unknown}`,
    });
  const { registry, prefix } = options;
  // Duck-typed: an app may load its own copy of prom-client, whose Registry is another class.
  if (registry !== undefined && !isRegistry(registry)) {
    throw invalid(
      'metrics.registry',
      "metrics.registry must be a prom-client Registry (new Registry() or prom-client's register): " +
        'it needs registerMetric, getSingleMetric, removeSingleMetric, metrics and getMetricsAsJSON',
    );
  }
  if (prefix !== undefined && (typeof prefix !== 'string' || !PREFIX.test(prefix))) {
    throw invalid(
      'metrics.prefix',
      `metrics.prefix must start with a letter and hold only letters, ` +
        `digits and _ (a Prometheus name), got ${JSON.stringify(prefix)}`,
    );
  }
  return { registry: registry ?? new Registry(), prefix: prefix ?? 'slotwise' };
}

function isRegistry(value: unknown): value is Registry {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Record<string, unknown>;
  return ['registerMetric', 'getSingleMetric', 'removeSingleMetric', 'metrics', 'getMetricsAsJSON'].every(
    (method) => typeof r[method] === 'function',
  );
}

function invalid(option: string, message: string): ConfigurationError {
  return new ConfigurationError('invalid-value', message, { option });
}
