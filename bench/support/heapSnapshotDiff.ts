/**
 * Two V8 heap snapshots (`v8.writeHeapSnapshot`, e.g. the soak's SOAK_SNAPSHOTS) compared by what grew: objects
 * counted and sized by constructor (a node's name for objects, its type otherwise), the largest growths first.
 *
 *   node --import tsx bench/support/heapSnapshotDiff.ts before.heapsnapshot after.heapsnapshot [rows]
 *
 * With SNAPSHOT_RETAINERS=<name> it also prints, for the objects of that constructor in the later snapshot, who
 * holds them (edge name and holder's constructor, counted): where to look for what keeps them.
 */
import { readFileSync } from 'node:fs';

interface Snapshot {
  readonly snapshot: {
    readonly meta: {
      readonly node_fields: readonly string[];
      readonly node_types: readonly [readonly string[], ...unknown[]];
      readonly edge_fields: readonly string[];
      readonly edge_types: readonly [readonly string[], ...unknown[]];
    };
  };
  readonly nodes: readonly number[];
  readonly edges: readonly number[];
  readonly strings: readonly string[];
}

interface Tally {
  count: number;
  bytes: number;
}

function read(path: string): Snapshot {
  return JSON.parse(readFileSync(path, 'utf8')) as Snapshot;
}

function keyOf(s: Snapshot, at: number): string {
  const { node_fields, node_types } = s.snapshot.meta;
  const type = node_types[0][s.nodes[at + node_fields.indexOf('type')]!]!;
  const name = s.strings[s.nodes[at + node_fields.indexOf('name')]!]!;
  return type === 'object' || type === 'closure' ? `${type}:${name}` : type;
}

function tally(s: Snapshot): Map<string, Tally> {
  const fields = s.snapshot.meta.node_fields.length;
  const sizeAt = s.snapshot.meta.node_fields.indexOf('self_size');
  const byKey = new Map<string, Tally>();
  for (let at = 0; at < s.nodes.length; at += fields) {
    const key = keyOf(s, at);
    const t = byKey.get(key) ?? { count: 0, bytes: 0 };
    t.count++;
    t.bytes += s.nodes[at + sizeAt]!;
    byKey.set(key, t);
  }
  return byKey;
}

function retainers(s: Snapshot, name: string): Map<string, number> {
  const nf = s.snapshot.meta.node_fields;
  const ef = s.snapshot.meta.edge_fields;
  const fields = nf.length;
  const edgeCountAt = nf.indexOf('edge_count');
  const toAt = ef.indexOf('to_node');
  const edgeNameAt = ef.indexOf('name_or_index');
  const edgeTypeAt = ef.indexOf('type');
  const held = new Map<string, number>();
  let edge = 0;
  for (let at = 0; at < s.nodes.length; at += fields) {
    const holder = keyOf(s, at);
    const edges = s.nodes[at + edgeCountAt]!;
    for (let e = 0; e < edges; e++, edge += ef.length) {
      const to = s.edges[edge + toAt]!;
      if (keyOf(s, to) !== `object:${name}`) continue;
      const type = s.snapshot.meta.edge_types[0][s.edges[edge + edgeTypeAt]!]!;
      const label = type === 'element' || type === 'hidden' ? `[${type}]` : s.strings[s.edges[edge + edgeNameAt]!];
      const key = `${holder} .${label}`;
      held.set(key, (held.get(key) ?? 0) + 1);
    }
  }
  return held;
}

const [beforePath, afterPath, rowsArg] = process.argv.slice(2);
if (beforePath === undefined || afterPath === undefined) {
  console.error('usage: heapSnapshotDiff.ts before.heapsnapshot after.heapsnapshot [rows]');
  process.exit(2);
}
const rows = Number(rowsArg ?? 30);
const before = tally(read(beforePath));
const afterSnapshot = read(afterPath);
const after = tally(afterSnapshot);
const grown = [...after]
  .map(([key, t]) => {
    const b = before.get(key) ?? { count: 0, bytes: 0 };
    return { key, count: t.count - b.count, bytes: t.bytes - b.bytes };
  })
  .sort((x, y) => y.bytes - x.bytes)
  .slice(0, rows);
for (const g of grown)
  console.log(`${(g.bytes / 1024).toFixed(0).padStart(9)} KB ${String(g.count).padStart(9)} ×  ${g.key}`);
const name = process.env['SNAPSHOT_RETAINERS'];
if (name !== undefined) {
  console.log(`\nheld ${name} in the later snapshot, by holder and edge:`);
  for (const [key, n] of [...retainers(afterSnapshot, name)].sort((x, y) => y[1] - x[1]).slice(0, rows))
    console.log(`${String(n).padStart(9)}  ${key}`);
}
