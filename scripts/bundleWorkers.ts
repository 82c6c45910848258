/**
 * Part of `npm run build`, after tsc: bundles the TaskExecutor's worker entry (dist/lib/taskexecutor/
 * taskExecutorMain.js) and everything it imports but piscina into one file beside it,
 * taskExecutorMain.bundle.js, which the driver starts from a compiled build (spawnWorker.ts).
 *
 * Why: a worker resolves, reads and compiles each of its ~40 modules on its own, every time it
 * starts, and that was most of a TaskExecutor's start (~190–210 ms of CPU per TaskExecutor
 * thread on a loaded 2-core machine; ~110–150 ms bundled). piscina stays a package import: its
 * own worker file is found next to its dist/. The worker's inspector module, loaded only when
 * inspection is asked for, stays a file of its own too (`../workerInspector.js`, next to the
 * bundle's directory), so `@statelyai/inspect` is not in the bundle.
 */
import { build } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const dir = join(root, 'dist', 'lib', 'taskexecutor');

await build({
  entryPoints: [join(dir, 'taskExecutorMain.js')],
  outfile: join(dir, 'taskExecutorMain.bundle.js'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['piscina', '../workerInspector.js'],
  logLevel: 'warning',
});
