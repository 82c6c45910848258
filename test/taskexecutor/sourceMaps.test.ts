/**
 * A task's stack mapped back to the user's files (sourceMaps.ts), without threads: frames of a
 * bundle as a cluster runs it (`sha256-….mjs`, its map inline) and of a compiled file with its
 * `.map` beside it become the original file, line and column; everything else stays as V8 wrote it.
 * The real path, a task thread running an uploaded bundle, is in test/cluster/taskManagerModes.nats.test.ts.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { bundleTaskModule } from '../../lib/cluster/bundleTaskModule.js';
import { mapStack, noteSourceMap, sourceMappingURLOf } from '../../lib/taskexecutor/sourceMaps.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/sourceMaps/', import.meta.url));

/** The 1-based line and column of `needle` in `code`. */
function positionOf(code: string, needle: string): { line: number; column: number } {
  const lines = code.split('\n');
  const line = lines.findIndex((l) => l.includes(needle));
  expect(line, `${needle} in the generated code`).to.be.at.least(0);
  return { line: line + 1, column: lines[line]!.indexOf(needle) + 1 };
}

describe('a task stack mapped to the source files (sourceMaps)', () => {
  let dir: string;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'slotwise-source-maps-'));
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  it("rewrites a bundle's frames to the user's files and lines, leaving other frames alone", async () => {
    const bundle = await bundleTaskModule(join(FIXTURES, 'fails.mjs'));
    const path = join(dir, `sha256-${bundle.sha256}.mjs`);
    writeFileSync(path, bundle.code);
    const url = pathToFileURL(path).href;
    noteSourceMap(url, sourceMappingURLOf(bundle.code));

    const thrown = positionOf(bundle.code, 'new RangeError');
    const called = positionOf(bundle.code, 'return check(');
    const stack = [
      'RangeError: subtask 0 refused',
      `    at check (${url}:${thrown.line}:${thrown.column})`,
      `    at fails (${url}:${called.line}:${called.column + 'return '.length})`,
      '    at runOne (file:///elsewhere/taskWorker.js:309:20)',
      `    at ${url}:1:1`,
    ].join('\n');
    expect(mapStack(stack).split('\n')).to.deep.equal([
      'RangeError: subtask 0 refused',
      `    at check (${join(FIXTURES, 'check.ts')}:7:9)`,
      `    at fails (${join(FIXTURES, 'fails.mjs')}:5:10)`,
      '    at runOne (file:///elsewhere/taskWorker.js:309:20)',
      // The banner (line 1) is code of no source file: its frame stays as it is.
      `    at ${url}:1:1`,
    ]);
  });

  it("maps a compiled module's frames through the .map file its comment names", async () => {
    const { build } = await import('esbuild');
    const out = join(dir, 'compiled.js');
    const result = await build({
      entryPoints: [join(FIXTURES, 'check.ts')],
      outfile: out,
      format: 'esm',
      sourcemap: 'linked',
      write: false,
      logLevel: 'silent',
    });
    for (const file of result.outputFiles) writeFileSync(file.path, file.text);
    const code = result.outputFiles.find((file) => file.path === out)!.text;
    expect(sourceMappingURLOf(code)).to.equal('compiled.js.map');
    const url = pathToFileURL(out).href;
    noteSourceMap(url, sourceMappingURLOf(code));
    const { line, column } = positionOf(code, 'new RangeError');
    expect(mapStack(`Error\n    at check (${url}:${line}:${column})`)).to.equal(
      `Error\n    at check (${join(FIXTURES, 'check.ts')}:7:9)`,
    );
  });

  it('leaves the stack as it is when the map cannot be read, or the module has none', () => {
    const missing = pathToFileURL(join(dir, 'missing.js')).href;
    noteSourceMap(missing, 'missing.js.map');
    const broken = pathToFileURL(join(dir, 'broken.mjs')).href;
    noteSourceMap(broken, 'data:application/json;base64,bm90IGpzb24=');
    const none = pathToFileURL(join(dir, 'none.mjs')).href;
    noteSourceMap(none, null);
    const stack = `Error: x\n    at a (${missing}:3:4)\n    at b (${broken}:1:1)\n    at ${none}:2:2`;
    expect(mapStack(stack)).to.equal(stack);
  });

  it('finds the sourceMappingURL comment only at the end of a module', () => {
    expect(sourceMappingURLOf('export default 1;\n//# sourceMappingURL=data:application/json;base64,e30=\n')).to.equal(
      'data:application/json;base64,e30=',
    );
    expect(sourceMappingURLOf('x();\n//@ sourceMappingURL=x.js.map')).to.equal('x.js.map');
    expect(sourceMappingURLOf('export default 1;\n')).to.equal(null);
    expect(sourceMappingURLOf("const s = '//# sourceMappingURL=a.map';\nexport default s;\n")).to.equal(null);
    expect(sourceMappingURLOf('const s = "sourceMappingURL=a.map";')).to.equal(null);
  });
});
