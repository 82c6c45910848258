/**
 * A statechart's config as JSON for the Stately visualizer (stately.ai/viz): guards, actions,
 * delays and actors appear by the names the machine gives them in `setup()`; the factories the
 * visualizer does not need (`context`, `input`, `output`) are dropped. Any other function in the
 * config is an inline implementation the JSON could only show as `{ "type": "<fn name>" }` (an
 * inline `assign` reads `{"type":"assign"}`): it is refused, naming where it is, so a machine is
 * exported only when every effect and decision in it has a name.
 */
import type { AnyStateMachine } from 'xstate';

/** Keys whose function values are factories of data, not behaviour: left out of the export. */
const FACTORIES = new Set(['context', 'input', 'output']);

export function machineToVisualizerJSON(machine: AnyStateMachine): string {
  return JSON.stringify(toPlain(machine.config, machine.id), null, 2);
}

function toPlain(value: unknown, path: string): unknown {
  if (typeof value === 'function') {
    throw new TypeError(
      `${path} is an inline ${value.name ? `'${value.name}' ` : ''}function: ` +
        `name it in the machine's setup() so the exported statechart names it`,
    );
  }
  if (Array.isArray(value)) return value.map((item, i) => toPlain(item, `${path}[${i}]`));
  if (typeof value !== 'object' || value === null) return value;
  const plain: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (FACTORIES.has(key) && typeof item === 'function') continue;
    plain[key] = toPlain(item, `${path}.${key}`);
  }
  return plain;
}
