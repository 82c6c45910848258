/**
 * The rules a JobGraphSpec must keep, one function per part of the spec: each resolves its part
 * (defaults filled in, paths absolute, profiles built) or throws JobGraphError naming what is wrong
 * and what is allowed. JobGraph.create runs them in order and adds the whole-graph rules (cycles,
 * pointwise parallelisms).
 */
import { isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeValue, isSlotwiseError, JobGraphError } from '../core/errors.js';
import { ResourceProfile, type ResourceSpec } from '../core/ResourceProfile.js';
import type { JobEdge, JobVertex } from './JobGraph.js';

const VERTEX_ID = /^[A-Za-z0-9][\w.:-]{0,127}$/;
const MAX_PARALLELISM = 32_768;
export const GRAPH_FIELDS = ['name', 'vertices', 'edges', 'restartStrategy', 'slotSharingGroups', 'scheduler'];
const VERTEX_FIELDS = [
  'id',
  'taskModule',
  'parallelism',
  'minParallelism',
  'maxParallelism',
  'resources',
  'slotSharingGroup',
  'coLocationGroup',
  'config',
];
const EDGE_FIELDS = ['from', 'to', 'pattern'];

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function refuse(
  reason: ConstructorParameters<typeof JobGraphError>[0],
  message: string,
  details: Record<string, unknown> = {},
): never {
  throw new JobGraphError(reason, message, details);
}

export function checkFields(where: string, value: Record<string, unknown>, allowed: readonly string[]): void {
  const unknown = Object.keys(value).find((key) => !allowed.includes(key));
  if (unknown !== undefined)
    refuse(
      'unknown-field',
      `${where} has an unknown field ${JSON.stringify(unknown)}; allowed fields are ${allowed.join(', ')}`,
      { field: unknown, allowed: [...allowed] },
    );
}

function checkGroupName(where: string, field: string, value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '')
    refuse('invalid-name', `${where}: ${field} must be a non-empty string, got ${describeValue(value)}`, { field });
  return value;
}

export function resolveProfile(where: string, spec: unknown): ResourceProfile {
  let profile: ResourceProfile;
  try {
    profile = ResourceProfile.fromSpec(spec as ResourceSpec);
  } catch (error) {
    if (!isSlotwiseError(error)) throw error;
    return refuse('invalid-resources', `${where}: ${error.message}`, { cause: error.message });
  }
  if (profile.isAny())
    refuse('invalid-resources', `${where}: ANY is a slot's offer, not a requirement; give amounts or 'UNKNOWN'`);
  return profile;
}

function resolveTaskModule(where: string, value: unknown): string {
  const allowed = `an absolute path or a file: URL, e.g. new URL('./tasks/tokenize.ts', import.meta.url)`;
  try {
    if (value instanceof URL || (typeof value === 'string' && value.startsWith('file:'))) return fileURLToPath(value);
  } catch {
    // fall through: not a file URL
  }
  if (typeof value === 'string' && isAbsolute(value)) return value;
  return refuse('invalid-task-module', `${where}: taskModule must be ${allowed}; got ${describeValue(value)}`, {
    taskModule: describeValue(value),
  });
}

const isParallelism = (p: unknown): p is number =>
  typeof p === 'number' && Number.isSafeInteger(p) && p >= 1 && p <= MAX_PARALLELISM;

/**
 * The vertex's parallelism, or its bounds when it leaves it to the adaptive scheduler (`adaptive`): a fixed
 * parallelism, or null with the bounds it may set (each null: the option's).
 */
function resolveParallelism(
  where: string,
  id: string,
  spec: Record<string, unknown>,
  adaptive: boolean,
): Pick<JobVertex, 'parallelism' | 'minParallelism' | 'maxParallelism'> {
  const p = spec.parallelism;
  const bounds = (['minParallelism', 'maxParallelism'] as const).filter((f) => spec[f] !== undefined);
  if (p === undefined && adaptive) {
    for (const field of bounds)
      if (!isParallelism(spec[field]))
        refuse(
          'invalid-parallelism',
          `${where}: ${field} must be an integer from 1 to ${MAX_PARALLELISM}, got ${describeValue(spec[field])}`,
          { vertex: id, field },
        );
    const min = (spec.minParallelism as number | undefined) ?? null;
    const max = (spec.maxParallelism as number | undefined) ?? null;
    if (min !== null && max !== null && min > max)
      refuse('invalid-parallelism', `${where}: minParallelism (${min}) must not be above maxParallelism (${max})`, {
        vertex: id,
        field: 'minParallelism',
      });
    return { parallelism: null, minParallelism: min, maxParallelism: max };
  }
  if (p === undefined)
    refuse(
      'invalid-parallelism',
      `${where}: parallelism must be set (an integer from 1 to ${MAX_PARALLELISM}); only the adaptive scheduler ` +
        `(scheduler: 'adaptive', or the option jobmanager.scheduler) decides a parallelism left unset`,
      { vertex: id },
    );
  if (!isParallelism(p))
    refuse(
      'invalid-parallelism',
      `${where}: parallelism must be an integer from 1 to ${MAX_PARALLELISM}, got ${describeValue(p)}`,
      { vertex: id },
    );
  if (bounds.length > 0)
    refuse(
      'invalid-parallelism',
      `${where}: ${bounds.join(' and ')} bound a parallelism the adaptive scheduler decides; ` +
        `this vertex sets parallelism ${p} — leave it unset (with scheduler 'adaptive') or drop the bounds`,
      { vertex: id, field: bounds[0] },
    );
  return { parallelism: p, minParallelism: null, maxParallelism: null };
}

export function resolveVertex(spec: unknown, index: number, adaptive = false): JobVertex {
  if (!isRecord(spec))
    return refuse(
      'no-vertices',
      `vertices[${index}] must be an object { id, taskModule, parallelism?, ... }, got ${describeValue(spec)}`,
    );
  if (typeof spec.id !== 'string' || !VERTEX_ID.test(spec.id)) {
    refuse(
      'invalid-name',
      `vertices[${index}].id must be 1-128 letters, digits, '_', '.', ` +
        `':' or '-', starting with a letter or digit; got ${describeValue(spec.id)}`,
      { index },
    );
  }
  const id = spec.id;
  const where = `vertex '${id}'`;
  checkFields(where, spec, VERTEX_FIELDS);
  const parallelism = resolveParallelism(where, id, spec, adaptive);
  // Kept as a clone: a caller changing its object later does not change the job.
  let config: unknown;
  if (spec.config !== undefined) {
    try {
      config = structuredClone(spec.config);
    } catch (error) {
      refuse(
        'invalid-config',
        `${where}: config must survive a structured clone (it is ` +
          `sent to the task's thread): ${(error as Error).message}`,
        { vertex: id },
      );
    }
  }
  return Object.freeze({
    id,
    taskModule: resolveTaskModule(where, spec.taskModule),
    ...parallelism,
    resourceProfile:
      spec.resources === undefined ? ResourceProfile.UNKNOWN : resolveProfile(`${where}: resources`, spec.resources),
    slotSharingGroup:
      spec.slotSharingGroup === undefined
        ? 'default'
        : checkGroupName(where, 'slotSharingGroup', spec.slotSharingGroup),
    coLocationGroup:
      spec.coLocationGroup === undefined ? null : checkGroupName(where, 'coLocationGroup', spec.coLocationGroup),
    config,
  });
}

export function resolveEdge(spec: unknown, index: number, vertices: ReadonlyMap<string, JobVertex>): JobEdge {
  if (!isRecord(spec))
    return refuse(
      'invalid-edge',
      `edges[${index}] must be an object { from, to, pattern }, got ${describeValue(spec)}`,
    );
  checkFields(`edges[${index}]`, spec, EDGE_FIELDS);
  for (const end of ['from', 'to'] as const) {
    if (typeof spec[end] !== 'string' || !vertices.has(spec[end])) {
      refuse(
        'unknown-vertex',
        `edges[${index}].${end} names ${describeValue(spec[end])}, which is ` +
          `not a vertex; vertices are ${[...vertices.keys()].join(', ')}`,
        { edge: index, vertex: describeValue(spec[end]) },
      );
    }
  }
  if (spec.pattern !== 'pointwise' && spec.pattern !== 'all-to-all' && spec.pattern !== 'hash') {
    refuse(
      'invalid-edge',
      `edges[${index}] (${String(spec.from)} -> ${String(spec.to)}): ` +
        `pattern must be 'pointwise', 'all-to-all' or 'hash', got ${describeValue(spec.pattern)}`,
      { edge: index },
    );
  }
  return Object.freeze({ from: spec.from as string, to: spec.to as string, pattern: spec.pattern });
}

/** Co-located vertices must share one slot sharing group and have equal parallelism (Flink's rule). */
export function checkCoLocation(vertices: readonly JobVertex[]): void {
  const groups = new Map<string, JobVertex[]>();
  for (const v of vertices)
    if (v.coLocationGroup !== null) groups.set(v.coLocationGroup, [...(groups.get(v.coLocationGroup) ?? []), v]);
  for (const [group, members] of groups) {
    const list = (f: (v: JobVertex) => unknown) => members.map((v) => `${v.id} ${describeValue(f(v))}`).join(', ');
    if (new Set(members.map((v) => v.slotSharingGroup)).size > 1) {
      refuse(
        'invalid-co-location',
        `co-location group '${group}' spans slot sharing groups ` +
          `(${list((v) => v.slotSharingGroup)}); co-located vertices must be in one slot sharing group`,
        { group },
      );
    }
    const adaptive = members.find((v) => v.parallelism === null);
    if (adaptive !== undefined)
      refuse(
        'invalid-co-location',
        `vertex '${adaptive.id}' leaves its parallelism to the adaptive scheduler but is in co-location group ` +
          `'${group}', whose members must have equal parallelism; give it a parallelism or leave the group`,
        { group, vertex: adaptive.id },
      );
    if (new Set(members.map((v) => v.parallelism)).size > 1) {
      refuse(
        'invalid-co-location',
        `co-location group '${group}' has unequal parallelism ` +
          `(${list((v) => v.parallelism)}); co-located vertices must have equal parallelism`,
        { group },
      );
    }
  }
}
