/**
 * The package as an application gets it: `npm pack` (its prepack builds dist/, once), the tarball
 * installed into a new application outside this repository with production dependencies only (no
 * tsx, no TypeScript), then, under plain node there: the README's quick start as written (its
 * `.mjs` blocks), a deep import refused, `require('slotwise')`, a task on a TaskExecutor thread and
 * in a TaskExecutor process through `slotwise/internals` and the task module checker's worker entry
 * (tsc's output differs from tsx's: a class that named itself in a static initializer once broke
 * only there), and a TypeScript consumer
 * type-checked with `moduleResolution: nodenext` and `skipLibCheck: false`.
 *
 * The install is offline: the application's lockfile is this repository's, less its development
 * packages, so npm takes every tarball from its cache (`npm ci` filled it). Should the cache miss
 * one, the install goes to the registry once.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startJobManagerChild } from '../cli/support.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a command to its end (never rejects: the code says how it went). Plain node: no tsx hooks inherited from mocha.
 */
function run(
  command: string,
  args: readonly string[],
  cwd: string,
  timeout = 120_000,
  extraEnv: Record<string, string> = {},
): Promise<Run> {
  const env = { ...process.env, NODE_OPTIONS: '', ...extraEnv };
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd, env, timeout, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

async function succeed(command: string, args: readonly string[], cwd: string, timeout = 120_000): Promise<Run> {
  const result = await run(command, args, cwd, timeout);
  if (result.code !== 0)
    throw new Error(`${command} ${args.join(' ')} failed (${result.code}):\n${result.stderr}\n${result.stdout}`);
  return result;
}

/** The `.mjs` blocks of the README's quick start, by the file name their first line gives. */
function quickStartFiles(): Map<string, string> {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(
    readme.indexOf('## Quick start'),
    readme.indexOf('\n## ', readme.indexOf('## Quick start') + 1),
  );
  const files = new Map<string, string>();
  for (const [, code] of section.matchAll(/```js\n([\s\S]*?)```/g)) {
    const name = /^\/\/ ([\w.-]+\.mjs)\b/.exec(code!)?.[1];
    if (name !== undefined) files.set(name, code!);
  }
  return files;
}

/** The application's lockfile: slotwise from the tarball, its dependencies as this repository pins them. */
function applicationLock(tarball: string): object {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    version: string;
    license: string;
    dependencies: Record<string, string>;
    engines: object;
    bin: Record<string, string>;
  };
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean }>;
  };
  const packages: Record<string, unknown> = {
    '': { name: 'app', dependencies: { slotwise: `file:${tarball}` } },
    'node_modules/slotwise': {
      version: pkg.version,
      resolved: `file:${tarball}`,
      license: pkg.license,
      dependencies: pkg.dependencies,
      engines: pkg.engines,
      bin: pkg.bin,
    },
  };
  for (const [path, entry] of Object.entries(lock.packages))
    if (path !== '' && entry.dev !== true) packages[path] = entry;
  return { name: 'app', lockfileVersion: 3, requires: true, packages };
}

const CONSUMER_TS = `
import {
  ConfigurationError, JobGraphError, MiniCluster, ResourceProfile, type ClusterOverview, type InspectionRecord,
  type JobEvent, type JobResult, type JobStatusChangedEvent, type Logger, type MiniClusterOptions, type SerializedError,
  type TaskContext, type TaskFunction, type TaskStateChangedEvent, type VertexParallelismDecidedEvent,
} from 'slotwise';
import { machines } from 'slotwise/machines';
import { LocalResourceManagerDriver, ResourceManager } from 'slotwise/internals';

export const square: TaskFunction = async (context: TaskContext) => context.subtaskIndex * context.subtaskIndex;
const logger: Logger = {
  debug() {},
  info: (fields, message) =>
    console.log(fields.jobId, fields.vertexId, fields.subtaskIndex, fields.resourceId, message),
  warn() {},
  error() {},
};
const options: MiniClusterOptions = {
  taskExecutors: 1,
  logger,
  inspect: (record: InspectionRecord) => void record.origin,
};

export async function main(): Promise<number> {
  await using cluster = await MiniCluster.start(options);
  const controller = new AbortController();
  const square = { id: 'square', taskModule: new URL('./square.mjs', import.meta.url), parallelism: 2 };
  const job = await cluster.submitJob({ name: 'typed', vertices: [square] }, { signal: controller.signal });
  job.onEvent((event: JobEvent) => {
    if (event.type === 'status') { const status: JobStatusChangedEvent = event; void status.cause; }
    else if (event.type === 'task') { const task: TaskStateChangedEvent = event; void task.resourceId; }
    else { const decided: VertexParallelismDecidedEvent = event; void decided.reason; }
  });
  const result: JobResult = await job.result;
  const error: SerializedError | null = result.error;
  const overview: ClusterOverview = cluster.overview();
  const cores: number = overview.taskExecutors[0]?.slots[0]?.resources.cpuCores ?? 0;
  const index: number | null = overview.taskExecutors[0]?.slots[0]?.index ?? null;
  void [error, index, machines.taskSlot, ResourceManager, LocalResourceManagerDriver, ResourceProfile.ZERO];
  return cores;
}

export function refused(error: unknown): string | undefined {
  if (error instanceof JobGraphError) return error.reason;
  return error instanceof ConfigurationError ? (error.details['option'] as string) : undefined;
}
`;

/** Runs the lines as an .mjs file of the application under plain node; what it printed, as JSON. */
async function probeJson(app: string, file: string, lines: readonly string[]): Promise<unknown> {
  writeFileSync(join(app, file), lines.join('\n'));
  const { code, stdout, stderr } = await run(process.execPath, [file], app, 30_000);
  expect(code, stderr).to.equal(0);
  return JSON.parse(stdout.trim());
}

/** tsc on the consumer, as the application would run it. */
function startTypeCheck(app: string): Promise<Run> {
  writeFileSync(join(app, 'consumer.ts'), CONSUMER_TS);
  const tsconfig = {
    compilerOptions: {
      target: 'ES2022',
      module: 'nodenext',
      moduleResolution: 'nodenext',
      lib: ['ES2023'],
      types: ['node'],
      // The application has no @types/node of its own (production install): borrow ours.
      typeRoots: [join(ROOT, 'node_modules/@types')],
      strict: true,
      skipLibCheck: false,
      noEmit: true,
    },
    files: ['consumer.ts'],
  };
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
  return run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], app, 200_000);
}

describe('the package, installed from its tarball into an application', function () {
  this.timeout(240_000);
  let dir: string;
  let app: string;
  let packed: Array<{ filename: string; files: Array<{ path: string }> }>;
  /** What `npm pack` printed on stderr: its lifecycle scripts' banners and output. */
  let packLog: string;
  let typeCheck: Promise<Run>;

  before(async function () {
    this.timeout(300_000);
    dir = mkdtempSync(join(tmpdir(), 'slotwise-package-'));
    app = join(dir, 'app');
    mkdirSync(app);
    // One build (prepack); under load it takes a minute or more.
    const pack = await succeed(NPM, ['pack', '--json', '--pack-destination', dir], ROOT, 180_000);
    packed = JSON.parse(pack.stdout) as typeof packed;
    packLog = pack.stderr;
    const tarball = `../${packed[0]!.filename}`;
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify(
        { name: 'app', private: true, type: 'module', dependencies: { slotwise: `file:${tarball}` } },
        null,
        2,
      ),
    );
    writeFileSync(join(app, 'package-lock.json'), JSON.stringify(applicationLock(tarball), null, 2));
    const install = ['ci', '--omit=dev', '--no-audit', '--no-fund'];
    const offline = await run(NPM, [...install, '--offline'], app);
    if (offline.code !== 0) {
      if (!/ENOTCACHED/.test(offline.stderr)) throw new Error(`npm ci failed (${offline.code}):\n${offline.stderr}`);
      await succeed(NPM, [...install, '--prefer-offline'], app);
    }
    for (const [name, code] of quickStartFiles()) writeFileSync(join(app, name), code);
    // The slowest step (it checks every declaration file, @types/node's too): it runs while the other tests do.
    typeCheck = startTypeCheck(app);
  });

  after(async () => {
    await typeCheck;
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('holds dist/lib, dist/machines, the README and the docs it links to, LICENSE and package.json only', () => {
    const paths = packed[0]!.files.map((f) => f.path);
    const allowed = [
      /^dist\/(lib|machines)\/.+\.(js|d\.ts)$/,
      /^dist\/lib\/taskexecutor\/taskExecutorStart\.(cjs|d\.cts)$/,
      /^dist\/lib\/taskexecutor\/taskExecutorMain\.bundle\.cjs((\.[\w=.-]+)?\.codecache)?$/,
      /^dist\/lib\/dashboard\/page\/(index\.html|dashboard\.css)$/,
      /^(README\.md|LICENSE|package\.json)$/,
      /^docs\/[\w-]+\.md$/,
    ];
    expect(paths.filter((p) => !allowed.some((pattern) => pattern.test(p)))).to.deep.equal([]);
    for (const entry of [
      'dist/lib/index.js',
      'dist/lib/index.d.ts',
      'dist/lib/internals.js',
      'dist/machines/index.js',
      'dist/lib/taskexecutor/taskExecutorMain.js',
      'dist/lib/taskexecutor/taskWorker.js',
      'dist/lib/taskexecutor/taskExecutorStart.cjs',
      'dist/lib/taskexecutor/taskExecutorMain.bundle.cjs',
      'dist/lib/taskexecutor/taskExecutorMain.bundle.cjs.codecache',
      // The README links to docs/: its reference pages come with it.
      'docs/runtime.md',
      'docs/configuration.md',
    ]) {
      expect(paths).to.include(entry);
    }
    expect(readFileSync(join(app, 'node_modules/slotwise/LICENSE'), 'utf8')).to.contain(
      'Apache License\n                           Version 2.0, January 2004',
    );
  });

  it("was built once by npm pack, and ships no script that would run in the application's install", () => {
    // npm pack runs prepack and prepare (and a build in each would build twice); an install runs
    // preinstall, install, postinstall and, for a git or local directory dependency, prepare.
    expect(packLog.match(/^> slotwise@\S+ build$/gm), packLog).to.have.length(1);
    const shipped = JSON.parse(readFileSync(join(app, 'node_modules/slotwise/package.json'), 'utf8')) as {
      scripts?: Record<string, string>;
    };
    const installTime = ['preinstall', 'install', 'postinstall', 'prepare'];
    expect(Object.keys(shipped.scripts ?? {}).filter((name) => installTime.includes(name))).to.deep.equal([]);
  });

  it("serves the dashboard's page and assets from the installed package (nothing from a CDN)", async () => {
    const probe = [
      "import { MiniCluster } from 'slotwise';",
      'const cluster = await MiniCluster.start({ taskExecutors: 0, dashboard: { port: 0 } });',
      'const url = new URL(cluster.dashboardUrl);',
      "const paths = ['/', '/dashboard/assets/dashboard.js', '/dashboard/assets/dashboard.css', " +
        "'/dashboard/assets/uPlot.iife.min.js', '/dashboard/assets/uPlot.min.css', '/metrics'];",
      'const statuses = [];',
      'for (const path of paths) statuses.push((await fetch(url.origin + path + url.search)).status);',
      'await cluster.close();',
      'console.log(JSON.stringify(statuses));',
    ];
    expect(await probeJson(app, 'dashboard.mjs', probe)).to.deep.equal([200, 200, 200, 200, 200, 200]);
  });

  it('was installed with its production dependencies only: no tsx, no TypeScript', () => {
    for (const dev of ['tsx', 'typescript', 'mocha', '@types/node'])
      expect(existsSync(join(app, 'node_modules', dev)), dev).to.equal(false);
    expect(existsSync(join(app, 'node_modules/xstate'))).to.equal(true);
  });

  it("runs the README's quick start as plain .mjs files and prints the sum of the squares of 1..100", async () => {
    expect([...quickStartFiles().keys()].sort()).to.deep.equal(['main.mjs', 'square.mjs', 'sum.mjs']);
    const { code, stdout, stderr } = await run(process.execPath, ['main.mjs'], app, 60_000);
    expect(code, stderr).to.equal(0);
    expect(stdout).to.contain('finished [ 338350 ]');
    expect(stdout.match(/^square#\d runs on taskexecutor-/gm)).to.have.length(4);
    // Nothing went wrong, so the default logger printed nothing.
    expect(stderr).to.equal('');
  });

  it('refuses a deep import, resolves the documented subpaths, and require() gets the same module', async () => {
    const probe = [
      "import { createRequire } from 'node:module';",
      "const deep = await import('slotwise/dist/lib/MiniCluster.js').then(() => 'resolved', (e) => e.code);",
      "const { MiniCluster } = await import('slotwise');",
      "const { machines } = await import('slotwise/machines');",
      "const { ResourceManager } = await import('slotwise/internals');",
      "const { startRestServer } = await import('slotwise/rest');",
      "const required = createRequire(import.meta.url)('slotwise');",
      'console.log(JSON.stringify({ deep, machines: Object.keys(machines).sort(), internals: typeof ' +
        'ResourceManager, rest: typeof startRestServer, sameClass: required.MiniCluster === MiniCluster }));',
    ];
    expect(await probeJson(app, 'probe.mjs', probe)).to.deep.equal({
      deep: 'ERR_PACKAGE_PATH_NOT_EXPORTED',
      machines: [
        'jobStatus',
        'leaderElection',
        'resourceSlot',
        'slotManager',
        'taskSlot',
        'taskSlotTable',
        'workerLifecycle',
      ],
      internals: 'function',
      rest: 'function',
      sameClass: true,
    });
  });

  it(
    'installs the slotwise command: jobmanager --local-taskmanagers serves ' +
      "a cluster, run submits the README's job file of the quick start's tasks",
    async () => {
      // The README's job file, beside the quick start's task modules.
      const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
      const cli = readme.slice(readme.indexOf('## CLI'), readme.indexOf('\n## ', readme.indexOf('## CLI') + 1));
      const job = /```js\n(\/\/ sumOfSquares\.job\.mjs[\s\S]*?)```/.exec(cli)?.[1];
      expect(job, "the README's CLI section shows sumOfSquares.job.mjs").to.be.a('string');
      writeFileSync(join(app, 'sumOfSquares.job.mjs'), job!);
      const bin = join(app, 'node_modules/.bin/slotwise');
      const jm = await startJobManagerChild([bin], ['--local-taskmanagers', '1', '--rest-port', '0'], app, {
        ...process.env,
        NODE_OPTIONS: '',
      });
      try {
        const { code, stdout, stderr } = await run(
          bin,
          ['run', '--jobmanager', jm.url, '--json', 'sumOfSquares.job.mjs'],
          app,
          60_000,
        );
        expect(code, stderr).to.equal(0);
        expect(JSON.parse(stdout.trim())).to.deep.include({ status: 'finished', outputs: { sum: [338350] } });
        const refused = await run(bin, ['cancel', '--jobmanager', jm.url, 'nope'], app, 30_000);
        expect(refused.code).to.equal(2);
        expect(refused.stderr.trim()).to.equal(
          'slotwise cancel: JOB_ID must be 32 lowercase hex characters, as slotwise list shows it, got "nope"',
        );
      } finally {
        expect(await jm.stop()).to.equal(0);
      }
    },
  );

  it(
    'runs a task on a TaskExecutor thread and in a TaskExecutor ' +
      'process, and checks task modules, from the compiled build',
    async () => {
      for (const name of ['smoke.mjs', 'sumTask.mjs', 'noDefault.mjs'])
        copyFileSync(fileURLToPath(new URL(`../fixtures/compiled/${name}`, import.meta.url)), join(app, name));
      const { code, stdout, stderr } = await run(process.execPath, ['smoke.mjs'], app, 60_000);
      expect(code, stderr).to.equal(0);
      const lines = stdout
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as unknown);
      expect(lines).to.deep.equal([
        { mode: 'thread', state: 'finished', output: { sum: 6, vertex: 'sum' }, error: null },
        { mode: 'process', state: 'finished', output: { sum: 6, vertex: 'sum' }, error: null },
        { checked: './sumTask.mjs', problem: null },
        { checked: './noDefault.mjs', problem: 'no-default-export' },
      ]);
    },
  );

  it('starts a TaskExecutor thread from the one-file bundle, with the code cache it ships accepted by V8', async () => {
    for (const name of ['smoke.mjs', 'sumTask.mjs', 'noDefault.mjs'])
      copyFileSync(fileURLToPath(new URL(`../fixtures/compiled/${name}`, import.meta.url)), join(app, name));
    const { code, stderr } = await run(process.execPath, ['smoke.mjs'], app, 60_000, { SLOTWISE_DEBUG: '1' });
    expect(code, stderr).to.equal(0);
    const starts = stderr.split('\n').filter((line) => line.startsWith('slotwise: a TaskExecutor '));
    expect(
      starts.filter(
        (line) =>
          line.includes(' thread runs ') &&
          line.includes('node_modules/slotwise/dist/lib/taskexecutor/taskExecutorMain.bundle.cjs'),
      ),
    ).to.have.length.greaterThan(0);
    expect(
      starts.filter((line) => line.includes(' thread runs ')).every((line) => line.endsWith(': accepted')),
      starts.join('\n'),
    ).to.equal(true);
    // A process's cache is made for the default heap limit only; any other is compiled from source, never wrongly used.
    expect(
      starts.some((line) => line.includes(' process runs ')),
      starts.join('\n'),
    ).to.equal(true);
    // The bundle's one ES module import (the worker inspector, asked for by `inspect`) loads from there too.
    const probe = [
      "import { MiniCluster } from 'slotwise';",
      'const origins = new Set();',
      'const cluster = await MiniCluster.start({ taskExecutors: 1, slotsPerTaskExecutor: ' +
        "2, inspect: (event) => origins.add(String(event.origin).split('-')[0]) });",
      'await cluster.close();',
      'console.log(JSON.stringify([...origins].sort()));',
    ];
    expect(await probeJson(app, 'inspectBundle.mjs', probe)).to.deep.equal(['main', 'taskexecutor']);
  });

  it(
    'type-checks a TypeScript consumer with moduleResolution ' +
      'nodenext, lib ES2023 and skipLibCheck false (no DOM types needed)',
    async () => {
      const { code, stdout, stderr } = await typeCheck;
      expect(stdout + stderr).to.equal('');
      expect(code).to.equal(0);
    },
  );
});
