/**
 * Holds the line of the design (docs/layout.md): statecharts in machines/ are pure — they import
 * only xstate, each other and the pure modules of lib/core/, which in turn import no Node built-in
 * — so a machine runs anywhere (a worker, a browser, the Stately inspector). Effects come in
 * through `machine.provide(...)` from lib/. And a worker loads only what runs in a worker: the
 * import closure of the TaskExecutor's worker entry (and of a task thread's) holds no server,
 * socket, browser opener or inspector package. Every line of source, too, stays within the
 * formatter's width (biome.json's lineWidth): Biome breaks code there, but not strings, templates
 * or comments.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MACHINES = join(ROOT, 'machines');
const CORE = join(ROOT, 'lib', 'core');
const LIB = join(ROOT, 'lib');
/** The endpoint wings (docs/layout.md): side by side on rpc/, core/ and machines/, never importing each other. */
const WINGS = ['taskexecutor', 'resourcemanager', 'jobmaster'].map((wing) => join(LIB, wing));
/** Folders that hold no source of ours wherever they are: installed packages and build output. */
const NOT_SOURCE = /(^|[/\\])(node_modules|dist)([/\\]|$)/;

/**
 * Every source file under `dir` whose name ends with one of `extensions` (by default .ts), in path order;
 * declaration files and whatever is under node_modules/ or dist/ excluded.
 */
function sourceFiles(dir: string, extensions: readonly string[] = ['.ts']): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && extensions.some((extension) => entry.name.endsWith(extension)))
    .filter((entry) => !/\.d\.[cm]?ts$/.test(entry.name))
    .filter((entry) => !NOT_SOURCE.test(relative(dir, entry.parentPath)))
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

/**
 * The module specifiers a source imports or re-exports: `import … from '…'`, `import '…'`,
 * `import type … from '…'`, `export … from '…'` and `import('…')`. Comments are dropped first, so
 * an example in a doc comment is not an import.
 */
function importSpecifiers(source: string): string[] {
  const code = source.replace(/^\s*\/\*[\s\S]*?\*\//gm, '').replace(/(^|\s)\/\/.*$/gm, '$1');
  const found: string[] = [];
  // The clause between the keyword and `from` holds only names, braces, commas and `*`: it cannot
  // run on into another statement (no `=`, `(`, `;` or quote).
  for (const m of code.matchAll(/\b(?:import|export)\s+(?:[\w$*\s{},]+?\s+from\s*)?(['"])([^'"\n]+)\1/g))
    found.push(m[2]!);
  for (const m of code.matchAll(/\bimport\s*\(\s*(['"])([^'"\n]+)\1\s*\)/g)) found.push(m[2]!);
  return found;
}

/** An import that is there when the module runs: `import type` and `export type … from` are erased. */
interface RuntimeImport {
  readonly specifier: string;
  /** `import('…')`: loaded when that code runs, not with the module. */
  readonly dynamic: boolean;
}

/** The imports of a source that load a module at run time (type-only ones are erased by the compiler). */
function runtimeImports(source: string): RuntimeImport[] {
  const code = source.replace(/^\s*\/\*[\s\S]*?\*\//gm, '').replace(/(^|\s)\/\/.*$/gm, '$1');
  const found: RuntimeImport[] = [];
  for (const m of code.matchAll(/\b(import|export)\s+(type\s+)?(?:[\w$*\s{},]+?\s+from\s*)?(['"])([^'"\n]+)\3/g)) {
    if (m[2] === undefined) found.push({ specifier: m[4]!, dynamic: false });
  }
  for (const m of code.matchAll(/\bimport\s*\(\s*(['"])([^'"\n]+)\1\s*\)/g))
    found.push({ specifier: m[2]!, dynamic: true });
  return found;
}

/** A package or built-in a module closure reaches, and the file of the closure that imports it. */
interface ExternalImport extends RuntimeImport {
  readonly from: string;
}

/**
 * Walks the run-time import closure of `entry` (static and dynamic imports of relative modules,
 * `.js` specifiers resolved to the `.ts` sources); returns its files and the packages and
 * built-ins they import.
 */
function importClosure(entry: string): { files: string[]; externals: ExternalImport[] } {
  const seen = new Set<string>();
  const externals: ExternalImport[] = [];
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const found of runtimeImports(readFileSync(file, 'utf8'))) {
      if (found.specifier.startsWith('.')) visit(resolve(dirname(file), found.specifier).replace(/\.js$/, '.ts'));
      else externals.push({ ...found, from: rel(file) });
    }
  };
  visit(entry);
  return { files: [...seen].map(rel).sort(), externals };
}

/** What no worker may load: servers and sockets, the browser opener, the inspector package. */
const NOT_IN_A_WORKER = [
  'ws',
  'node:http',
  'http',
  'node:https',
  'https',
  'node:child_process',
  'child_process',
  '@statelyai/inspect',
  '@statelyai/inspect/server',
];
/** The one exception, by name: the worker side of inspection loads the inspector when inspection is asked for. */
const LAZY_INSPECTOR: ExternalImport = {
  from: 'lib/workerInspector.ts',
  specifier: '@statelyai/inspect',
  dynamic: true,
};

/** The forbidden imports of a closure, as lines; the lazy inspector allowed. */
function workerViolations(externals: readonly ExternalImport[]): string[] {
  return externals
    .filter((e) => NOT_IN_A_WORKER.includes(e.specifier))
    .filter((e) => !(e.from === LAZY_INSPECTOR.from && e.specifier === LAZY_INSPECTOR.specifier && e.dynamic))
    .map((e) => `${e.from} ${e.dynamic ? 'loads' : 'imports'} '${e.specifier}'`);
}

const isNodeBuiltin = (specifier: string) => specifier.startsWith('node:') || isBuiltin(specifier);
const isUnder = (path: string, dir: string) => path === dir || path.startsWith(dir + sep);
const rel = (path: string) => relative(ROOT, path).split(sep).join('/');

/** biome.json's formatter.lineWidth: where Biome breaks code, and the most columns any line of source may have. */
const LINE_WIDTH = (JSON.parse(readFileSync(join(ROOT, 'biome.json'), 'utf8')) as { formatter: { lineWidth: number } })
  .formatter.lineWidth;

/**
 * The lines of `source` wider than `width` columns, each as `file:line (N columns)`; a character is a column, as grep
 * and editors count (not a byte, not a UTF-16 unit).
 */
function wideLines(file: string, source: string, width: number): string[] {
  return source.split('\n').flatMap((line, index) => {
    const columns = [...line.replace(/\r$/, '')].length;
    return columns > width ? [`${file}:${index + 1} (${columns} columns)`] : [];
  });
}

/** Where our source lives, and what a source file is. */
const SOURCE_FOLDERS = ['lib', 'machines', 'test', 'bench', 'examples', 'scripts'];
const SOURCE_EXTENSIONS = ['.ts', '.cts', '.mts', '.js', '.mjs', '.cjs'];

/**
 * Citations of what is not in the repository: the design seeds by number and the design, style and
 * toolchain notes it was written from. A comment cites Flink's class names, or a file under docs/.
 */
const OUTSIDE_CITATIONS = [/\bseeds? 0\d\d\b/i, /\bthe seed(?:s|'s)\b/i, /\b(?:DESIGN|STYLE|TOOLCHAIN)\.md\b/];

/** Each line of `source` that cites what is not in the repository, as `file:line: text`. */
function outsideCitations(file: string, source: string): string[] {
  return source
    .split('\n')
    .flatMap((line, index) =>
      OUTSIDE_CITATIONS.some((pattern) => pattern.test(line)) ? [`${file}:${index + 1}: ${line.trim()}`] : [],
    );
}

/** Issue 11: no module under lib/ or machines/ longer than this; most are 50–300 lines. */
const MAX_MODULE_LINES = 500;

/** Lines as an editor numbers them: a final newline ends the last line, it does not start another. */
function lineCount(source: string): number {
  return source.split('\n').length - (source.endsWith('\n') ? 1 : 0);
}

/**
 * The body of a Markdown section whose heading line is `heading` (`# Layout`, `## A`), up to the next heading of
 * its level (empty when there is none).
 */
function markdownSection(markdown: string, heading: string): string {
  const lines = markdown.split('\n');
  const start = lines.indexOf(heading);
  if (start < 0) return '';
  const level = `${heading.slice(0, heading.indexOf(' '))} `;
  const end = lines.findIndex((line, index) => index > start && line.startsWith(level));
  return lines.slice(start + 1, end < 0 ? undefined : end).join('\n');
}

/** How docs/layout.md names a module: its file name without the extension and without `.machine`. */
function moduleName(file: string): string {
  return basename(file)
    .replace(/\.[cm]?[jt]s$/, '')
    .replace(/\.machine$/, '');
}

/** Whether `text` names `name` as a whole word (`taskModule` is not named by `taskModuleChecker`). */
function namesModule(text: string, name: string): boolean {
  return new RegExp(`(?<![\\w$])${name.replace(/[$]/g, '\\$&')}(?![\\w$])`).test(text);
}

/** Why `file` (in machines/) may not import `specifier`, or undefined when it may. */
function machineImportViolation(file: string, specifier: string): string | undefined {
  if (specifier === 'xstate') return undefined;
  if (isNodeBuiltin(specifier)) return 'a Node built-in';
  if (!specifier.startsWith('.')) return `a package other than 'xstate'`;
  const target = resolve(dirname(file), specifier);
  if (isUnder(target, MACHINES) || isUnder(target, CORE)) return undefined;
  return `${rel(target)}, outside machines/ and lib/core/`;
}

function violations(files: string[], rule: (file: string, specifier: string) => string | undefined): string[] {
  return files.flatMap((file) =>
    importSpecifiers(readFileSync(file, 'utf8')).flatMap((specifier) => {
      const broken = rule(file, specifier);
      return broken === undefined ? [] : [`${rel(file)} imports '${specifier}' (${broken})`];
    }),
  );
}

describe('architecture', () => {
  const machineFiles = sourceFiles(MACHINES);
  const coreFiles = sourceFiles(CORE);

  describe('the import scanner', () => {
    it('finds every form of import and re-export, across lines, and ignores comments', () => {
      const source = [
        `/** Example: import { readFileSync } from 'node:fs'; */`,
        `// import worker from 'node:worker_threads';`,
        `import { assign, setup } from 'xstate';`,
        `import type { AllocationID } from '../lib/core/ids.js';`,
        `import {`,
        `  a,`,
        `  type B,`,
        `} from './other.machine.js';`,
        `import Default, * as ns from "comlink";`,
        `import './side-effect.js';`,
        `export { x } from '../lib/rpc/protocol.js';`,
        `export * from './all.js';`,
        `const lazy = () => import('node:os');`,
        `const url = 'https://example.org'; // import from 'nowhere'`,
        `export const from = 'not an import';`,
      ].join('\n');
      expect(importSpecifiers(source)).to.deep.equal([
        'xstate',
        '../lib/core/ids.js',
        './other.machine.js',
        'comlink',
        './side-effect.js',
        '../lib/rpc/protocol.js',
        './all.js',
        'node:os',
      ]);
    });

    it('reads real imports from the machines (every machine imports xstate)', () => {
      expect(machineFiles, 'no .ts files found in machines/').to.not.be.empty;
      for (const file of machineFiles.filter((f) => f.endsWith('.machine.ts'))) {
        expect(importSpecifiers(readFileSync(file, 'utf8')), rel(file)).to.include('xstate');
      }
    });

    it('tells allowed machine imports from forbidden ones', () => {
      const file = join(MACHINES, 'example.machine.ts');
      for (const ok of ['xstate', './taskSlot.machine.js', '../lib/core/ids.js', '../machines/x.js']) {
        expect(machineImportViolation(file, ok), ok).to.equal(undefined);
      }
      for (const bad of [
        'node:fs',
        'fs',
        'worker_threads',
        'fs/promises',
        'comlink',
        'xstate/dev',
        '../lib/rpc/connect.js',
        '../lib/core/../rpc/connect.js',
        '../lib/coreish.js',
        '../test/support/fixtures.js',
      ]) {
        expect(machineImportViolation(file, bad), bad).to.be.a('string');
      }
    });
  });

  describe('imports', () => {
    it(`machines/ imports only 'xstate', other files in machines/ and lib/core/`, () => {
      const found = violations(machineFiles, machineImportViolation);
      expect(found, `machines must stay pure; offending imports:\n  ${found.join('\n  ')}\n`).to.deep.equal([]);
    });

    it(
      'lib/core/ imports only lib/core/: no Node built-in, no package, ' +
        'no other lib/ folder, so the machines that use it run anywhere',
      () => {
        expect(coreFiles, 'no .ts files found in lib/core/').to.not.be.empty;
        const found = violations(coreFiles, (file, specifier) => {
          if (isNodeBuiltin(specifier)) return 'a Node built-in';
          if (!specifier.startsWith('.')) return 'a package';
          const target = resolve(dirname(file), specifier);
          return isUnder(target, CORE) ? undefined : `${rel(target)}, outside lib/core/`;
        });
        expect(found, `lib/core must stay pure; offending imports:\n  ${found.join('\n  ')}\n`).to.deep.equal([]);
      },
    );
  });

  describe('what a worker loads', () => {
    const TASK_EXECUTOR_ENTRY = join(LIB, 'taskexecutor', 'taskExecutorMain.ts');
    const TASK_THREAD_ENTRY = join(LIB, 'taskexecutor', 'taskWorker.ts');

    it('tells run-time imports from type-only ones, and dynamic from static', () => {
      const source = [
        `import type { StatelyInspectionEvent } from '@statelyai/inspect';`,
        `export type { X } from './types.js';`,
        `import { type A, b } from './mixed.js';`,
        `import { spawn } from 'node:child_process';`,
        `export { y } from './y.js';`,
        `const lazy = await import('../workerInspector.js');`,
      ].join('\n');
      expect(runtimeImports(source)).to.deep.equal([
        { specifier: './mixed.js', dynamic: false },
        { specifier: 'node:child_process', dynamic: false },
        { specifier: './y.js', dynamic: false },
        { specifier: '../workerInspector.js', dynamic: true },
      ]);
    });

    it('finds what the main side of inspection loads (the walk reaches the relay and its packages)', () => {
      const { files, externals } = importClosure(join(LIB, 'inspect.ts'));
      expect(files).to.include.members(['lib/inspect.ts', 'lib/inspectRelay.ts', 'lib/workerInspector.ts']);
      const found = workerViolations(externals);
      for (const specifier of ['ws', 'node:http', 'node:child_process', '@statelyai/inspect']) {
        expect(
          found.some((line) => line.endsWith(`'${specifier}'`)),
          `${specifier} in ${found.join('; ')}`,
        ).to.equal(true);
      }
    });

    it(
      `the TaskExecutor worker entry's closure (static and dynamic imports) has no ws, http, child_process ` +
        `or inspector; the inspector is loaded only when asked, by the one dynamic import allowed by name`,
      () => {
        const { files, externals } = importClosure(TASK_EXECUTOR_ENTRY);
        expect(files, 'the walk reached the TaskExecutor').to.include.members([
          'lib/taskexecutor/TaskExecutor.ts',
          'lib/rpc/Link.ts',
        ]);
        expect(files, 'the worker side of inspection is in the closure (loaded when asked)').to.include(
          'lib/workerInspector.ts',
        );
        expect(files, 'the main side of inspection is not').to.not.include.members([
          'lib/inspect.ts',
          'lib/inspectRelay.ts',
        ]);
        const found = workerViolations(externals);
        expect(found, `a worker must not load these:\n  ${found.join('\n  ')}\n`).to.deep.equal([]);
        expect(externals, 'the lazy inspector import is where it is allowed').to.deep.include(LAZY_INSPECTOR);
      },
    );

    it(`a task thread's worker file loads none of them either`, () => {
      const found = workerViolations(importClosure(TASK_THREAD_ENTRY).externals);
      expect(found, `a task thread must not load these:\n  ${found.join('\n  ')}\n`).to.deep.equal([]);
    });
  });

  describe('wings', () => {
    it('taskexecutor/, resourcemanager/ and jobmaster/ do not import each other; rpc/ imports none of them', () => {
      const wingOf = (path: string) => WINGS.find((wing) => isUnder(path, wing));
      const libFiles = sourceFiles(LIB);
      const found = violations(libFiles, (file, specifier) => {
        if (!specifier.startsWith('.')) return undefined;
        const target = resolve(dirname(file), specifier);
        const [from, to] = [wingOf(file), wingOf(target)];
        if (to === undefined) return undefined;
        if (isUnder(file, join(LIB, 'rpc')) || isUnder(file, CORE)) return `${rel(to)} is an endpoint wing`;
        return from !== undefined && from !== to ? `another wing, ${rel(to)}` : undefined;
      });
      expect(found, `wings must talk through rpc/ only; offending imports:\n  ${found.join('\n  ')}\n`).to.deep.equal(
        [],
      );
    });
  });

  describe('line width', () => {
    it('names each line wider than the width with its length, counting a character as one column', () => {
      const source = ['a'.repeat(10), '→'.repeat(10), 'b'.repeat(11), '', `${'µ'.repeat(11)}\r`, 'é'.repeat(10)];
      expect(wideLines('x.ts', source.join('\n'), 10)).to.deep.equal(['x.ts:3 (11 columns)', 'x.ts:5 (11 columns)']);
      expect(wideLines('x.ts', 'a'.repeat(10), 10)).to.deep.equal([]);
    });

    it(
      `keeps every line of lib/, machines/, test/, bench/, examples/ and scripts/ within ${LINE_WIDTH} columns ` +
        `(biome.json's lineWidth; Biome does not break strings, templates or comments)`,
      () => {
        expect(LINE_WIDTH, 'formatter.lineWidth in biome.json').to.be.a('number');
        const files = SOURCE_FOLDERS.flatMap((folder) => sourceFiles(join(ROOT, folder), SOURCE_EXTENSIONS));
        expect(files.map(rel), 'the walk reaches every kind of source file').to.include.members([
          'lib/index.ts',
          'lib/taskexecutor/taskExecutorStart.cts',
          'lib/dashboard/page/dashboard.js',
          'test/fixtures/compiled/smoke.mjs',
          'test/support/leakCheck.cjs',
          'scripts/bundleWorkers.ts',
        ]);
        const found = files.flatMap((file) => wideLines(rel(file), readFileSync(file, 'utf8'), LINE_WIDTH));
        expect(
          found,
          `lines wider than ${LINE_WIDTH} columns (split the string, name a part first or wrap the comment):\n  ` +
            `${found.join('\n  ')}\n`,
        ).to.deep.equal([]);
      },
    );
  });

  describe('citations', () => {
    it('finds a design seed by number and the design, style and toolchain notes; not a random seed', () => {
      // Put together here, so that this file cites none of them itself.
      const md = (name: string) => `${name}.md`;
      const cited = ['(seed 0' + '00)', 'seeds 0' + '01 and 004', "the seed'" + 's 30 s', md('DESIGN'), md('STYLE')];
      for (const text of [...cited, md('TOOLCHAIN')]) expect(outsideCitations('x.ts', text), text).to.have.length(1);
      const fine = ['--seed 7', 'fixed seeds by default', 'prints the seed and the shrunk sequence', 'docs/layout.md'];
      for (const text of fine) expect(outsideCitations('x.ts', text), text).to.deep.equal([]);
    });

    it(
      'cites nothing outside the repository from lib/, machines/, test/, bench/, examples/, scripts/, ' +
        'the README or docs/',
      () => {
        const files = [
          ...SOURCE_FOLDERS.flatMap((folder) => sourceFiles(join(ROOT, folder), SOURCE_EXTENSIONS)),
          join(ROOT, 'README.md'),
          ...sourceFiles(join(ROOT, 'docs'), ['.md']),
        ];
        expect(files.map(rel)).to.include.members(['lib/index.ts', 'README.md', 'docs/layout.md']);
        const found = files.flatMap((file) => outsideCitations(rel(file), readFileSync(file, 'utf8')));
        expect(
          found,
          `cite Flink's class names or a file under docs/ instead:\n  ${found.join('\n  ')}\n`,
        ).to.deep.equal([]);
      },
    );
  });

  describe('files a maintainer can carry', () => {
    const MODULE_EXTENSIONS = ['.ts', '.cts', '.mts', '.js', '.mjs'];
    const modules = [...sourceFiles(LIB, MODULE_EXTENSIONS), ...sourceFiles(MACHINES, MODULE_EXTENSIONS)];

    it(`keeps every module under lib/ and machines/ within ${MAX_MODULE_LINES} lines (one concept per file)`, () => {
      const long = modules.flatMap((file) => {
        const lines = lineCount(readFileSync(file, 'utf8'));
        return lines > MAX_MODULE_LINES ? [`${rel(file)} (${lines} lines)`] : [];
      });
      expect(
        long,
        `modules over ${MAX_MODULE_LINES} lines (split by concept):\n  ${long.join('\n  ')}\n`,
      ).to.deep.equal([]);
    });

    it(`names every module under lib/ and machines/ in docs/layout.md's Layout section`, () => {
      const layout = markdownSection(readFileSync(join(ROOT, 'docs', 'layout.md'), 'utf8'), '# Layout');
      expect(layout, `docs/layout.md's '# Layout' section`).to.not.equal('');
      const unnamed = modules.filter((file) => !namesModule(layout, moduleName(file))).map(rel);
      expect(unnamed, `modules docs/layout.md does not name:\n  ${unnamed.join('\n  ')}\n`).to.deep.equal([]);
    });

    it('reads a Markdown section up to the next heading of its level, and a module by its name', () => {
      const markdown = ['# t', '## A', 'a text', '### sub', 'more', '## B', 'b text', '# u'].join('\n');
      expect(markdownSection(markdown, '## A')).to.equal('a text\n### sub\nmore');
      expect(markdownSection(markdown, '# t')).to.equal('## A\na text\n### sub\nmore\n## B\nb text');
      expect(markdownSection(markdown, '## C')).to.equal('');
      expect(moduleName(join(LIB, 'core', 'ids.ts'))).to.equal('ids');
      expect(moduleName(join(MACHINES, 'taskSlot.machine.ts'))).to.equal('taskSlot');
      expect(moduleName(join(LIB, 'taskexecutor', 'taskExecutorStart.cts'))).to.equal('taskExecutorStart');
      expect(namesModule('`taskModuleChecker` and `TaskSlotTable`', 'taskModule')).to.equal(false);
      expect(namesModule('`taskModule` (how a task thread loads it)', 'taskModule')).to.equal(true);
      expect(lineCount('a\nb\n')).to.equal(2);
      expect(lineCount('a\nb')).to.equal(2);
    });
  });

  describe('machine exports', () => {
    const machineModules = machineFiles.filter((file) => file.endsWith('.machine.ts'));

    for (const file of machineModules) {
      const base = file.slice(file.lastIndexOf(sep) + 1, -'.machine.ts'.length);
      const name = `${base}Machine`;

      it(`${rel(file)} exports a const machine named ${name}`, async () => {
        expect(readFileSync(file, 'utf8'), `${rel(file)} has no 'export const ${name}'`).to.match(
          new RegExp(`^export const ${name}\\b`, 'm'),
        );
        const module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
        expect(module, `${rel(file)} exports ${Object.keys(module).join(', ')}`).to.have.property(name);
        const machine = module[name] as { config?: unknown; id?: unknown };
        expect(machine.config, `${name}.config`).to.be.an('object');
        expect(machine.id, `${name}.id`).to.be.a('string').and.not.equal('');
      });
    }
  });
});
