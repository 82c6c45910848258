/**
 * Bundling a task module for a cluster (bundleTaskModule.ts): the bundle carries its source map
 * inline, naming the user's files where they are, and the same files bundle to the same hash; a
 * syntax error in the module or in a file it imports is refused naming file, line and column.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { bundleJob } from '../../lib/cli/jobFile.js';
import { bundleTaskModule } from '../../lib/cluster/bundleTaskModule.js';
import { JobGraphError } from '../../lib/core/errors.js';
import { sourceMappingURLOf } from '../../lib/taskexecutor/sourceMaps.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/sourceMaps/', import.meta.url));

describe('bundling a task module for a cluster (bundleTaskModule)', () => {
  let dir: string;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'slotwise-bundle-'));
    writeFileSync(
      join(dir, 'task.mjs'),
      "import { helper } from './helper.mjs';\nexport default async () => helper();\n",
    );
    writeFileSync(join(dir, 'helper.mjs'), 'export function helper() {\n  return [1, 2]];\n}\n');
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  it("carries an inline source map naming the user's files by file: URL, and hashes the same each time", async () => {
    const bundle = await bundleTaskModule(join(FIXTURES, 'fails.mjs'));
    const reference = sourceMappingURLOf(bundle.code);
    expect(reference).to.match(/^data:application\/json;base64,/);
    const map = JSON.parse(Buffer.from(reference!.slice(reference!.indexOf(',') + 1), 'base64').toString('utf8')) as {
      sourceRoot: string;
      sources: string[];
      sourcesContent?: unknown;
    };
    const sources = map.sources.map((source) => fileURLToPath(new URL(map.sourceRoot + source)));
    expect(sources).to.have.members([join(FIXTURES, 'fails.mjs'), join(FIXTURES, 'check.ts')]);
    expect(map.sourcesContent, 'the map points; it does not carry the sources').to.equal(undefined);
    expect((await bundleTaskModule(pathToFileURL(join(FIXTURES, 'fails.mjs')))).sha256).to.equal(bundle.sha256);
  });

  it('refuses a syntax error in a file the module imports, naming file, line and column', async () => {
    const refusal = await bundleTaskModule(join(dir, 'task.mjs')).then(
      () => expect.fail('bundled'),
      (error: unknown) => error,
    );
    expect(refusal).to.be.instanceOf(JobGraphError);
    const error = refusal as JobGraphError;
    expect(error.reason).to.equal('invalid-task-module');
    expect(error.message).to.equal(
      `task module ${join(dir, 'task.mjs')} could not be bundled: ` +
        `${join(dir, 'helper.mjs')}:2:16: Expected ";" but found "]"`,
    );
    expect(error.details).to.deep.include({ file: join(dir, 'helper.mjs'), line: 2, column: 16 });
  });

  it("slotwise run's bundling names the vertex too", async () => {
    const refusal = await bundleJob(
      { name: 'x', vertices: [{ id: 'broken', taskModule: join(dir, 'task.mjs'), parallelism: 1 }] },
      dir,
    ).then(
      () => expect.fail('bundled'),
      (error: unknown) => error as JobGraphError,
    );
    expect(refusal.message).to.equal(
      `task module ${join(dir, 'task.mjs')} of vertex 'broken' could not be bundled: ` +
        `${join(dir, 'helper.mjs')}:2:16: Expected ";" but found "]"`,
    );
    expect(refusal.details).to.deep.include({ vertexId: 'broken', problem: 'not-bundled' });
  });
});
