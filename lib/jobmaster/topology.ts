/**
 * Order and cycles of a graph of vertex ids: the two graph walks JobGraph validation needs, kept
 * apart so they can be read (and tested through JobGraph) on their own.
 */

interface Edge {
  readonly from: string;
  readonly to: string;
}

/**
 * Kahn's algorithm, deterministic: whenever several vertices are ready, the one declared first
 * goes next. Returns fewer ids than given when the edges hold a cycle (the vertices on or behind
 * a cycle are left out).
 */
export function topologicalOrder(ids: readonly string[], edges: readonly Edge[]): string[] {
  const position = new Map(ids.map((id, i) => [id, i]));
  const inDegree = new Map(ids.map((id) => [id, 0]));
  const outputs = new Map<string, string[]>(ids.map((id) => [id, []]));
  for (const e of edges) {
    inDegree.set(e.to, inDegree.get(e.to)! + 1);
    outputs.get(e.from)!.push(e.to);
  }
  // The ready set as declaration positions, kept sorted: the smallest is the next vertex.
  const ready = ids.filter((id) => inDegree.get(id) === 0).map((id) => position.get(id)!);
  const order: string[] = [];
  while (ready.length > 0) {
    const id = ids[ready.shift()!]!;
    order.push(id);
    for (const next of outputs.get(id)!) {
      const remaining = inDegree.get(next)! - 1;
      inDegree.set(next, remaining);
      if (remaining === 0) insertSorted(ready, position.get(next)!);
    }
  }
  return order;
}

function insertSorted(sorted: number[], value: number): void {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  sorted.splice(lo, 0, value);
}

/**
 * One cycle among `remaining` — the vertices Kahn's algorithm could not order, each of which has
 * a predecessor among them — as `[a, b, c, a]` (edges a -> b -> c -> a). Walks predecessors from
 * the first remaining vertex until one repeats; deterministic (first edge in declaration order).
 */
export function findCycle(remaining: readonly string[], edges: readonly Edge[]): string[] {
  const left = new Set(remaining);
  const predecessor = new Map<string, string>();
  for (const e of edges)
    if (left.has(e.from) && left.has(e.to) && !predecessor.has(e.to)) predecessor.set(e.to, e.from);
  const path: string[] = [];
  const seenAt = new Map<string, number>();
  let current = remaining[0];
  while (current !== undefined && !seenAt.has(current)) {
    seenAt.set(current, path.length);
    path.push(current);
    current = predecessor.get(current);
  }
  if (current === undefined) return [...remaining];
  // path runs backwards along the edges: path[i + 1] -> path[i]. Read the repeating part forwards.
  const loop = path.slice(seenAt.get(current)!);
  return [loop[0]!, ...loop.slice(1).reverse(), loop[0]!];
}
