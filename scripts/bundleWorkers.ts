/**
 * Part of `npm run build`, after tsc: bundles the TaskExecutor's worker entry (dist/lib/taskexecutor/
 * taskExecutorMain.js) and everything it imports but piscina into one CommonJS file beside it,
 * taskExecutorMain.bundle.cjs, then takes V8's code cache of it from a warm-up start
 * (taskExecutorMain.bundle.cjs.codecache for threads, and one for a child process with the default
 * heap limit, whose `--max-old-space-size` V8 counts in a cache's validity). A compiled build starts a TaskExecutor on
 * taskExecutorStart.cjs, which runs the bundle through that cache (spawnWorker.ts).
 *
 * Why: a worker resolves, reads and compiles each of its ~40 modules on its own, every time it
 * starts, and that was most of a TaskExecutor's start (~190–210 ms of CPU per TaskExecutor
 * thread on a loaded 2-core machine; ~110–150 ms bundled as an ES module). CommonJS because only a
 * classic script takes a code cache on Node 20, and a `.cjs` start skips the ES module loader.
 * piscina stays a package import (`require`d when the first task thread is made): its own worker
 * file is found next to its dist/. The worker's inspector module, loaded only when inspection is
 * asked for, stays a file of its own too (`../workerInspector.js`), so `@statelyai/inspect` is not
 * in the bundle.
 *
 * The warm-up: a MiniCluster of one TaskExecutor from dist/ in each mode, with a slot allocated, a
 * task run and the cluster closed, with SLOTWISE_WRITE_CODE_CACHE set; the worker writes the cache as it exits,
 * so it holds every function a start (and a first task) compiles. If the warm-up fails, the build
 * goes on without a cache (a start then compiles from source) and says so.
 */
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const dir = join(root, 'dist', 'lib', 'taskexecutor');
const bundle = join(dir, 'taskExecutorMain.bundle.cjs');
const codeCache = `${bundle}.codecache`;

await build({
  entryPoints: [join(dir, 'taskExecutorMain.js')],
  outfile: bundle,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  minify: true,
  // taskExecutorStart.cjs passes the URL of the unbundled entry, whose siblings the code finds.
  define: { 'import.meta.url': '__importMetaUrl' },
  external: ['piscina', '../workerInspector.js'],
  logLevel: 'warning',
});

for (const file of readdirSync(dir)) if (file.endsWith('.codecache')) rmSync(join(dir, file), { force: true });
const index = pathToFileURL(join(root, 'dist', 'lib', 'index.js')).href;
// A trivial task module of the warm-up's own, outside the package.
const scratch = mkdtempSync(join(tmpdir(), 'slotwise-code-cache-'));
const task = pathToFileURL(join(scratch, 'task.mjs')).href;
writeFileSync(fileURLToPath(task), 'export default (context) => context.subtaskIndex;\n');
const warmUp = `
const { MiniCluster } = await import(${JSON.stringify(index)});
for (const mode of ['thread', 'process']) {
  const configuration = { 'taskmanager.task-threads.spare': 0 };
  const cluster = await MiniCluster.start({ mode, taskExecutors: 1, configuration });
  try {
    const vertex = { id: 'v', taskModule: ${JSON.stringify(task)}, parallelism: 1 };
    const job = await cluster.submitJob({ name: 'code cache warm-up', vertices: [vertex], edges: [] });
    await job.result;
  } finally {
    await cluster.close();
  }
}
`;
try {
  // A file, not `-e`: workers started by the cluster inherit this process's execArgv.
  const script = join(scratch, 'warmUp.mjs');
  writeFileSync(script, warmUp);
  execFileSync(process.execPath, [script], {
    cwd: root,
    env: { ...process.env, SLOTWISE_WRITE_CODE_CACHE: '1' },
    stdio: ['ignore', 'ignore', 'inherit'],
    timeout: 60_000,
  });
} catch (error) {
  console.warn(
    `the TaskExecutor's warm-up for its code cache failed: ${error instanceof Error ? error.message : String(error)}`,
  );
}
rmSync(scratch, { recursive: true, force: true });
if (!existsSync(codeCache)) console.warn(`no ${codeCache}: TaskExecutors will compile their bundle at each start`);
