/**
 * The public entry (`slotwise`) and the internals entry (`slotwise/internals`): every error class the
 * README and the docs/ pages name is importable by name, and the runtime's internals stay out of the public
 * entry.
 * (That the types resolve for an application is checked on the packed tarball: test/integration/package.test.ts.)
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { ERROR_CLASSES } from '../lib/core/errors.js';
import * as internals from '../lib/internals.js';
import * as slotwise from '../lib/index.js';

const DOCS = new URL('../docs/', import.meta.url);
/** The README and every page under docs/ (the reference the README links to), as one text. */
const DOCUMENTATION = [
  readFileSync(new URL('../README.md', import.meta.url), 'utf8'),
  ...readdirSync(DOCS)
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => readFileSync(new URL(name, DOCS), 'utf8')),
].join('\n');
/**
 * Names the README and docs/ give that are not slotwise error classes: the platform's AbortError and
 * SyntaxError (in a message quoted), the SerializedError type (checked by the package test's type check).
 */
const NOT_CLASSES = ['AbortError', 'SyntaxError', 'SerializedError'];

describe('the public entry', () => {
  it('exports every error class the README and docs/ name, by name, as the class the runtime throws', () => {
    const named = [...new Set(DOCUMENTATION.match(/\b[A-Z][A-Za-z]+Error\b/g) ?? [])].filter(
      (name) => !NOT_CLASSES.includes(name),
    );
    expect(named).to.include('JobGraphError');
    const exported = slotwise as unknown as Record<string, unknown>;
    const missing = named.filter((name) => typeof exported[name] !== 'function');
    expect(missing, 'named in the README or docs/ but not exported').to.deep.equal([]);
    for (const name of named) expect(exported[name], name).to.equal((ERROR_CLASSES as Record<string, unknown>)[name]);
  });

  it('exports every class of the error family', () => {
    for (const [name, cls] of Object.entries(ERROR_CLASSES))
      expect((slotwise as Record<string, unknown>)[name], name).to.equal(cls);
  });

  it('keeps the runtime internals (endpoints, RPC, task pools) out of it; slotwise/internals has them', () => {
    const inside = [
      'Link',
      'MainThreadExecutor',
      'SlotTaskPool',
      'connectGateway',
      'serveGateway',
      'GATEWAY',
      'DeadlineScheduler',
      'TaskManagerTracker',
      'DefaultResourceTracker',
      'ResourceManager',
      'TaskExecutor',
      'JobMaster',
      'Dispatcher',
      'LocalResourceManagerDriver',
      'DefaultTaskModuleChecker',
    ];
    expect(inside.filter((name) => name in slotwise)).to.deep.equal([]);
    expect(inside.filter((name) => !(name in internals))).to.deep.equal([]);
  });

  it('has what the quick start and the README and docs/ sections use', () => {
    for (const name of [
      'MiniCluster',
      'JobGraph',
      'ResourceProfile',
      'TaskSlotTable',
      'MemoryManager',
      'FineGrainedSlotManager',
      'ResourceBudgetManager',
      'machines',
      'JobID',
      'AllocationID',
      'SimulatedClock',
      'resolveOptions',
    ]) {
      expect(slotwise, name).to.have.property(name);
    }
  });
});
