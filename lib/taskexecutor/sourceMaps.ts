/**
 * A task's stack in terms of the user's files: the frames of a module that carries a source map (a
 * bundle uploaded to a cluster, `sha256-….mjs` with its map inline; a `.js` compiled with its
 * `.js.map`) are rewritten to the file, line and column the map names, as `node --enable-source-maps`
 * writes them.
 *
 * Node cannot do it here: task threads compile ES modules as `vm.SourceTextModule`s (jobModules.ts),
 * which Node's source map support never sees, even when enabled. So the thread notes each module's
 * `sourceMappingURL` when it first reads its file, and maps the stack of an error that leaves a task
 * ({@link mapStack}), where the error was made, before it crosses to the TaskExecutor, the JobMaster
 * and every view of it (exception history, REST, dashboard, `slotwise run`).
 *
 * What it costs: at a file's first read, one backward search of its text for the comment; nothing on
 * a task's run; a map is read and parsed only when a stack first has a frame in its module, and is
 * then kept for the thread. A task that does not throw pays nothing.
 *
 * Imports only Node built-ins: it runs in task threads (taskWorker.ts).
 */
import { readFileSync } from 'node:fs';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { fileURLToPath } from 'node:url';

/** A module's source map: where its comment points, and the map once read (null: unreadable). */
interface NotedMap {
  readonly reference: string;
  read: ReadMap | null | undefined;
}

/** A parsed map, its sources' root, and the URL they are relative to. */
interface ReadMap {
  readonly map: SourceMap;
  readonly sourceRoot: string;
  readonly base: string;
}

/** By module URL (the `file:` URL a stack frame names). */
const maps = new Map<string, NotedMap>();

const MAGIC = 'sourceMappingURL=';

/**
 * The `sourceMappingURL` of a module's source (its last `//# sourceMappingURL=…` comment, nothing but
 * the URL after it), or null when it has none.
 */
export function sourceMappingURLOf(source: string): string | null {
  const at = source.lastIndexOf(MAGIC);
  if (at < 4) return null;
  const lead = source.slice(at - 4, at);
  if (lead !== '//# ' && lead !== '//@ ') return null;
  const reference = source.slice(at + MAGIC.length).trim();
  return reference === '' || /\s/.test(reference) ? null : reference;
}

/** Notes the source map of the module at `url` (a `file:` URL), or forgets the one it had. */
export function noteSourceMap(url: string, reference: string | null): void {
  if (reference === null) {
    maps.delete(url);
    return;
  }
  const known = maps.get(url);
  if (known?.reference !== reference) maps.set(url, { reference, read: undefined });
}

/** A frame's location at the end of its line: `    at f (file:///…:4:9)` or `    at file:///…:4:9`. */
const FRAME = /^(\s*at (?:.*? \()?)(file:\/\/[^\s]*?):(\d+):(\d+)(\)?)$/;

/** The stack with every frame in a module that has a source map rewritten to the original file and line. */
export function mapStack(stack: string): string {
  if (maps.size === 0 || !stack.includes('file://')) return stack;
  const lines = stack.split('\n');
  let changed = false;
  for (let i = 0; i < lines.length; i++) {
    const match = FRAME.exec(lines[i]!);
    if (match === null) continue;
    const [, before, url, line, column, close] = match as unknown as [string, string, string, string, string, string];
    const original = originalPosition(url, Number(line), Number(column));
    if (original === null) continue;
    lines[i] = `${before}${original}${close}`;
    changed = true;
  }
  return changed ? lines.join('\n') : stack;
}

/** `file:line:column` (1-based; a path for a `file:` source) that a generated position comes from, or null. */
function originalPosition(url: string, line: number, column: number): string | null {
  const noted = maps.get(url);
  if (noted === undefined) return null;
  if (noted.read === undefined) noted.read = readMap(url, noted.reference);
  const read = noted.read;
  if (read === null) return null;
  const entry = read.map.findEntry(line - 1, column - 1) as Partial<{
    generatedLine: number;
    originalSource: string;
    originalLine: number;
    originalColumn: number;
  }>;
  // findEntry answers the nearest mapping before the position, maybe on an earlier line: a frame on a line
  // the map does not cover (a bundle's banner) stays as it is.
  if (entry.generatedLine !== line - 1 || entry.originalSource === undefined || entry.originalLine === undefined)
    return null;
  let source: string;
  try {
    const resolved = new URL(read.sourceRoot + entry.originalSource, read.base);
    source = resolved.protocol === 'file:' ? fileURLToPath(resolved) : resolved.href;
  } catch {
    source = entry.originalSource;
  }
  return `${source}:${entry.originalLine + 1}:${(entry.originalColumn ?? 0) + 1}`;
}

/** The map a module's comment points to: inline (a `data:` URL) or a file beside it; null when it cannot be read. */
function readMap(url: string, reference: string): ReadMap | null {
  try {
    let text: string;
    let base = url;
    if (reference.startsWith('data:')) {
      const comma = reference.indexOf(',');
      const header = reference.slice(5, comma);
      const body = reference.slice(comma + 1);
      text = header.endsWith(';base64') ? Buffer.from(body, 'base64').toString('utf8') : decodeURIComponent(body);
    } else {
      const at = new URL(reference, url);
      if (at.protocol !== 'file:') return null;
      text = readFileSync(at, 'utf8');
      base = at.href;
    }
    const payload = JSON.parse(text) as SourceMapPayload;
    if (payload === null || typeof payload !== 'object' || !Array.isArray(payload.sources)) return null;
    const sourceRoot = typeof payload.sourceRoot === 'string' ? payload.sourceRoot : '';
    const root = sourceRoot === '' || sourceRoot.endsWith('/') ? sourceRoot : `${sourceRoot}/`;
    return { map: new SourceMap(payload), sourceRoot: root, base };
  } catch {
    // A broken or missing map leaves the stack as V8 wrote it.
    return null;
  }
}
