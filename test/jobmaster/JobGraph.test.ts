import { expect } from 'chai';
import { fileURLToPath } from 'node:url';
import { JobGraphError } from '../../lib/core/errors.js';
import { resolveOptions, type SlotwiseOptions } from '../../lib/core/options.js';
import { ResourceProfile } from '../../lib/core/ResourceProfile.js';
import { JobGraph, type JobGraphSpec, type JobVertexSpec } from '../../lib/jobmaster/JobGraph.js';

const OK = new URL('../fixtures/tasks/ok.ts', import.meta.url);
const v = (id: string, parallelism = 1, extra: Partial<JobVertexSpec> = {}): JobVertexSpec => ({
  id,
  taskModule: OK,
  parallelism,
  ...extra,
});

/** Runs `create` and returns the JobGraphError it throws (failing the test if it throws none or another). */
function refusal(spec: unknown, options?: SlotwiseOptions): JobGraphError {
  try {
    JobGraph.create(spec as JobGraphSpec, options === undefined ? undefined : resolveOptions(options));
  } catch (error) {
    expect(error).to.be.instanceOf(JobGraphError);
    return error as JobGraphError;
  }
  throw new Error('expected JobGraph.create to refuse the spec');
}

async function asyncRefusal(promise: Promise<unknown>): Promise<JobGraphError> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(JobGraphError);
    return error as JobGraphError;
  }
  throw new Error('expected a JobGraphError');
}

describe('JobGraph', () => {
  describe('a valid graph', () => {
    it(
      'resolves defaults: UNKNOWN resources, slot sharing group ' +
        '"default", no co-location, absolute task module path',
      () => {
        const graph = JobGraph.create({ name: 'one', vertices: [v('source', 2)] });
        const [source] = graph.vertices;
        expect(source!.id).to.equal('source');
        expect(source!.parallelism).to.equal(2);
        expect(source!.resourceProfile).to.equal(ResourceProfile.UNKNOWN);
        expect(source!.slotSharingGroup).to.equal('default');
        expect(source!.coLocationGroup).to.equal(null);
        expect(source!.taskModule).to.equal(fileURLToPath(OK));
        expect(graph.edges).to.deep.equal([]);
      },
    );

    it('accepts a task module as an absolute path or a file: URL string', () => {
      const path = fileURLToPath(OK);
      const graph = JobGraph.create({
        name: 'paths',
        vertices: [v('a', 1, { taskModule: path }), v('b', 1, { taskModule: OK.href })],
      });
      expect(graph.vertices.map((x) => x.taskModule)).to.deep.equal([path, path]);
    });

    it('builds resources from a spec and keeps a ResourceProfile as given', () => {
      const profile = ResourceProfile.newBuilder().setCpuCores(2).build();
      const graph = JobGraph.create({
        name: 'r',
        vertices: [
          v('a', 1, { resources: { cpuCores: 0.5, taskHeapMemory: '64m' } }),
          v('b', 1, { resources: profile }),
          v('c', 1, { resources: 'UNKNOWN' }),
        ],
      });
      expect(
        graph
          .vertex('a')
          .resourceProfile.equals(ResourceProfile.fromSpec({ cpuCores: 0.5, taskHeapMemory: 64 * 1024 * 1024 })),
      ).to.equal(true);
      expect(graph.vertex('b').resourceProfile).to.equal(profile);
      expect(graph.vertex('c').resourceProfile.isUnknown()).to.equal(true);
    });

    it('orders vertices topologically, ties in declaration order (Kahn)', () => {
      const graph = JobGraph.create({
        name: 'diamond',
        vertices: [v('sink'), v('right'), v('left'), v('source'), v('lonely')],
        edges: [
          { from: 'source', to: 'left', pattern: 'all-to-all' },
          { from: 'source', to: 'right', pattern: 'all-to-all' },
          { from: 'left', to: 'sink', pattern: 'all-to-all' },
          { from: 'right', to: 'sink', pattern: 'all-to-all' },
        ],
      });
      // Ready at first: source and lonely, source declared first. Then right and left (right was
      // declared first); once left is done, sink is ready and was declared before lonely.
      expect(graph.vertices.map((x) => x.id)).to.deep.equal(['source', 'right', 'left', 'sink', 'lonely']);
    });

    it('gives the inputs and outputs of a vertex in declaration order, with their pattern', () => {
      const graph = JobGraph.create({
        name: 'io',
        vertices: [v('a', 2), v('b', 4), v('c', 2)],
        edges: [
          { from: 'a', to: 'c', pattern: 'all-to-all' },
          { from: 'a', to: 'b', pattern: 'pointwise' },
          { from: 'b', to: 'c', pattern: 'pointwise' },
        ],
      });
      expect(graph.outputsOf('a')).to.deep.equal([
        { from: 'a', to: 'c', pattern: 'all-to-all' },
        { from: 'a', to: 'b', pattern: 'pointwise' },
      ]);
      expect(graph.inputsOf('c').map((e) => e.from)).to.deep.equal(['a', 'b']);
      expect(graph.inputsOf('a')).to.deep.equal([]);
      expect(() => graph.inputsOf('zzz'))
        .to.throw(JobGraphError)
        .with.property('reason', 'unknown-vertex');
    });

    it('accepts pointwise edges whose parallelisms divide, in both directions', () => {
      const graph = JobGraph.create({
        name: 'pw',
        vertices: [v('a', 6), v('b', 2), v('c', 4)],
        edges: [
          { from: 'a', to: 'b', pattern: 'pointwise' },
          { from: 'b', to: 'c', pattern: 'pointwise' },
        ],
      });
      expect(graph.edges).to.have.length(2);
    });

    it('defaults the restart strategy to fixed-delay, 3 attempts, 10 s apart', () => {
      expect(JobGraph.create({ name: 'd', vertices: [v('a')] }).restartStrategy).to.deep.equal({
        type: 'fixed-delay',
        attempts: 3,
        delayMs: 10_000,
      });
    });

    it("takes the default restart strategy from resolved options 'restart-strategy.*'", () => {
      const options = resolveOptions({
        'restart-strategy.fixed-delay.attempts': 7,
        'restart-strategy.fixed-delay.delay': '2 s',
      });
      expect(JobGraph.create({ name: 'd', vertices: [v('a')] }, options).restartStrategy).to.deep.equal({
        type: 'fixed-delay',
        attempts: 7,
        delayMs: 2000,
      });
      expect(
        JobGraph.create({ name: 'd', vertices: [v('a')] }, resolveOptions({ 'restart-strategy.type': 'none' }))
          .restartStrategy,
      ).to.deep.equal({ type: 'none' });
    });

    it('resolves a given restart strategy, its delay as a duration', () => {
      expect(
        JobGraph.create({
          name: 'd',
          vertices: [v('a')],
          restartStrategy: { type: 'fixed-delay', attempts: 0, delay: '1.5 s' },
        }).restartStrategy,
      ).to.deep.equal({ type: 'fixed-delay', attempts: 0, delayMs: 1500 });
      expect(
        JobGraph.create({ name: 'd', vertices: [v('a')], restartStrategy: { type: 'none' } }).restartStrategy,
      ).to.deep.equal({ type: 'none' });
    });

    it("resolves an exponential-delay strategy, each field by its option's rule, the rest from the options", () => {
      const options = resolveOptions({ 'restart-strategy.exponential-delay.jitter-factor': 0.25 });
      expect(
        JobGraph.create(
          {
            name: 'd',
            vertices: [v('a')],
            restartStrategy: {
              type: 'exponential-delay',
              initialBackoff: '10 s',
              maxBackoff: '2 min',
              backoffMultiplier: 1.4,
              attemptsBeforeResetBackoff: 10,
            },
          },
          options,
        ).restartStrategy,
      ).to.deep.equal({
        type: 'exponential-delay',
        initialBackoffMs: 10_000,
        maxBackoffMs: 120_000,
        backoffMultiplier: 1.4,
        resetBackoffThresholdMs: 3_600_000,
        jitterFactor: 0.25,
        attemptsBeforeResetBackoff: 10,
      });
    });

    it('resolves a failure-rate strategy, and takes either new strategy as the default from the options', () => {
      expect(
        JobGraph.create({
          name: 'd',
          vertices: [v('a')],
          restartStrategy: { type: 'failure-rate', maxFailuresPerInterval: 3, failureRateInterval: '5 min' },
        }).restartStrategy,
      ).to.deep.equal({
        type: 'failure-rate',
        maxFailuresPerInterval: 3,
        failureRateIntervalMs: 300_000,
        delayMs: 1_000,
      });
      const byOptions = (options: SlotwiseOptions) =>
        JobGraph.create({ name: 'd', vertices: [v('a')] }, resolveOptions(options)).restartStrategy;
      expect(
        byOptions({ 'restart-strategy.type': 'failurerate', 'restart-strategy.failure-rate.delay': '2 s' }),
      ).to.deep.equal({
        type: 'failure-rate',
        maxFailuresPerInterval: 1,
        failureRateIntervalMs: 60_000,
        delayMs: 2_000,
      });
      expect(byOptions({ 'restart-strategy.type': 'exponential-delay' })).to.deep.include({
        type: 'exponential-delay',
        initialBackoffMs: 1_000,
        maxBackoffMs: 60_000,
        backoffMultiplier: 1.5,
        attemptsBeforeResetBackoff: Infinity,
      });
    });

    it('keeps configured slot sharing group profiles, leaving UNKNOWN ones out', () => {
      const graph = JobGraph.create({
        name: 's',
        vertices: [v('a', 1, { slotSharingGroup: 'big' }), v('b')],
        slotSharingGroups: { big: { cpuCores: 4 }, default: 'UNKNOWN' },
      });
      expect([...graph.slotSharingGroups.keys()]).to.deep.equal(['big']);
      expect(graph.slotSharingGroups.get('big')!.cpuCores).to.equal(4);
    });

    it('is immutable, and keeps its own copy of each config', () => {
      const config = { words: ['a'] };
      const graph = JobGraph.create({ name: 'f', vertices: [v('a', 1, { config })] });
      config.words.push('b');
      expect(graph.vertex('a').config).to.deep.equal({ words: ['a'] });
      expect(Object.isFrozen(graph.vertices)).to.equal(true);
      expect(Object.isFrozen(graph.vertices[0])).to.equal(true);
      expect(Object.isFrozen(graph.inputsOf('a'))).to.equal(true);
    });
  });

  describe('refusals (JobGraphError, typed, saying what is wrong and what is allowed)', () => {
    it('refuses a graph without vertices', () => {
      for (const vertices of [[], undefined, 'a']) {
        const error = refusal({ name: 'empty', vertices });
        expect(error.reason).to.equal('no-vertices');
        expect(error.message).to.match(/at least one vertex/);
      }
    });

    it('refuses a missing or empty name', () => {
      expect(refusal({ name: ' ', vertices: [v('a')] }).reason).to.equal('invalid-name');
      expect(refusal({ vertices: [v('a')] }).reason).to.equal('invalid-name');
    });

    it('refuses a vertex id that cannot label an ExecutionAttemptID', () => {
      const error = refusal({ name: 'n', vertices: [v('has space')] });
      expect(error.reason).to.equal('invalid-name');
      expect(error.message).to.match(/vertices\[0\]\.id must be .*letters, digits/);
    });

    it('refuses a duplicate vertex id, naming it', () => {
      const error = refusal({ name: 'dup', vertices: [v('a'), v('a')] });
      expect(error.reason).to.equal('duplicate-vertex');
      expect(error.message).to.match(/'a' is declared twice/);
      expect(error.details).to.deep.equal({ vertex: 'a' });
    });

    it('refuses an edge to or from an unknown vertex, listing the vertices', () => {
      const error = refusal({ name: 'u', vertices: [v('a')], edges: [{ from: 'a', to: 'b', pattern: 'all-to-all' }] });
      expect(error.reason).to.equal('unknown-vertex');
      expect(error.message).to.match(/edges\[0\]\.to names "b", which is not a vertex; vertices are a/);
      expect(
        refusal({ name: 'u', vertices: [v('a')], edges: [{ from: 'x', to: 'a', pattern: 'all-to-all' }] }).reason,
      ).to.equal('unknown-vertex');
    });

    it('refuses a bad edge pattern and a duplicate edge', () => {
      const bad = refusal({
        name: 'e',
        vertices: [v('a'), v('b')],
        edges: [{ from: 'a', to: 'b', pattern: 'broadcast' }],
      });
      expect(bad.reason).to.equal('invalid-edge');
      expect(bad.message).to.match(/'pointwise', 'all-to-all' or 'hash'/);
      const twice = { from: 'a', to: 'b', pattern: 'all-to-all' };
      expect(refusal({ name: 'e', vertices: [v('a'), v('b')], edges: [twice, twice] }).reason).to.equal('invalid-edge');
    });

    it('refuses a cycle, naming its vertices in edge order', () => {
      const error = refusal({
        name: 'loop',
        vertices: [v('source'), v('a'), v('b'), v('c')],
        edges: [
          { from: 'source', to: 'a', pattern: 'all-to-all' },
          { from: 'a', to: 'b', pattern: 'all-to-all' },
          { from: 'b', to: 'c', pattern: 'all-to-all' },
          { from: 'c', to: 'a', pattern: 'all-to-all' },
        ],
      });
      expect(error.reason).to.equal('cycle');
      expect(error.message).to.equal('the edges form a cycle: a -> b -> c -> a; a job graph must be acyclic');
      expect(error.details).to.deep.equal({ vertices: ['a', 'b', 'c', 'a'] });
    });

    it('refuses a self-loop as a cycle', () => {
      const error = refusal({
        name: 'self',
        vertices: [v('a')],
        edges: [{ from: 'a', to: 'a', pattern: 'pointwise' }],
      });
      expect(error.reason).to.equal('cycle');
      expect(error.message).to.match(/a -> a/);
    });

    it('refuses a parallelism below 1, fractional, or above 32768', () => {
      for (const parallelism of [0, -1, 1.5, 32_769, Number.NaN]) {
        const error = refusal({ name: 'p', vertices: [v('a', parallelism)] });
        expect(error.reason, String(parallelism)).to.equal('invalid-parallelism');
        expect(error.message).to.match(/vertex 'a': parallelism must be an integer from 1 to 32768/);
      }
    });

    it('refuses a pointwise edge whose parallelisms do not divide, naming both', () => {
      const error = refusal({
        name: 'pw',
        vertices: [v('a', 3), v('b', 2)],
        edges: [{ from: 'a', to: 'b', pattern: 'pointwise' }],
      });
      expect(error.reason).to.equal('incompatible-parallelism');
      expect(error.message).to.match(
        /a \(parallelism 3\) -> b \(parallelism 2\) needs one parallelism to divide the other; .*'all-to-all'/,
      );
      // all-to-all connects any parallelisms
      expect(() =>
        JobGraph.create({
          name: 'ok',
          vertices: [v('a', 3), v('b', 2)],
          edges: [{ from: 'a', to: 'b', pattern: 'all-to-all' }],
        }),
      ).to.not.throw();
    });

    it('refuses a co-location group spanning two slot sharing groups', () => {
      const error = refusal({
        name: 'co',
        vertices: [v('a', 2, { coLocationGroup: 'g' }), v('b', 2, { coLocationGroup: 'g', slotSharingGroup: 'other' })],
      });
      expect(error.reason).to.equal('invalid-co-location');
      expect(error.message).to.match(/'g' spans slot sharing groups \(a "default", b "other"\)/);
    });

    it('refuses a co-location group with unequal parallelism', () => {
      const error = refusal({
        name: 'co',
        vertices: [v('a', 2, { coLocationGroup: 'g' }), v('b', 3, { coLocationGroup: 'g' })],
      });
      expect(error.reason).to.equal('invalid-co-location');
      expect(error.message).to.match(
        /unequal parallelism \(a 2, b 3\); co-located vertices must have equal parallelism/,
      );
    });

    it('refuses bad resource values, passing on what the profile rule says', () => {
      const negative = refusal({ name: 'r', vertices: [v('a', 1, { resources: { cpuCores: -1 } })] });
      expect(negative.reason).to.equal('invalid-resources');
      expect(negative.message).to.match(/vertex 'a': resources: cpuCores must be a finite non-negative number/);
      expect(refusal({ name: 'r', vertices: [v('a', 1, { resources: { gpus: 1 } as never })] }).message).to.match(
        /unknown resource field "gpus"/,
      );
      expect(refusal({ name: 'r', vertices: [v('a', 1, { resources: 'ANY' as never })] }).message).to.match(
        /ANY is a slot's offer/,
      );
      expect(
        refusal({ name: 'r', vertices: [v('a')], slotSharingGroups: { default: { taskHeapMemory: 'lots' } } }).reason,
      ).to.equal('invalid-resources');
    });

    it('refuses a slot sharing group profile for a group no vertex is in', () => {
      const error = refusal({ name: 'r', vertices: [v('a')], slotSharingGroups: { defualt: { cpuCores: 1 } } });
      expect(error.reason).to.equal('invalid-resources');
      expect(error.message).to.match(/'defualt', which no vertex is in; groups in use: default/);
    });

    it('refuses a relative task module path or a non-file URL, saying what is allowed', () => {
      for (const taskModule of ['tasks/ok.ts', 'https://example.org/task.js', 42, '']) {
        const error = refusal({ name: 't', vertices: [v('a', 1, { taskModule: taskModule as never })] });
        expect(error.reason).to.equal('invalid-task-module');
        expect(error.message).to.match(/an absolute path or a file: URL/);
      }
    });

    it('refuses a bad restart strategy', () => {
      const specs = [
        { type: 'exponential' },
        { type: 'exponential-delay', backoffMultiplier: 1 },
        { type: 'failure-rate', failureRateInterval: 0 },
        { type: 'fixed-delay', attempts: -1, delay: 0 },
        { type: 'fixed-delay', attempts: 2, delay: 'soon' },
        { type: 'fixed-delay', attempts: 2, delay: 0, backoff: 2 },
        'none',
      ];
      for (const restartStrategy of specs)
        expect(
          refusal({ name: 'r', vertices: [v('a')], restartStrategy }).reason,
          JSON.stringify(restartStrategy),
        ).to.equal('invalid-restart-strategy');
    });

    it('names what is wrong with a restart strategy and what is allowed', () => {
      const refused = (restartStrategy: unknown, options?: SlotwiseOptions) => {
        const error = refusal({ name: 'r', vertices: [v('a')], restartStrategy }, options);
        expect(error.reason).to.equal('invalid-restart-strategy');
        return error;
      };
      const type = refused({ type: 'exponential' });
      expect(type.message).to.equal(
        "restartStrategy.type must be one of 'fixed-delay', 'exponential-delay', 'failure-rate', 'none', " +
          'got "exponential"',
      );
      expect(type.details).to.deep.include({ field: 'restartStrategy.type' });
      const field = refused({ type: 'failure-rate', attempts: 3 });
      expect(field.message).to.equal(
        'restartStrategy has an unknown field "attempts"; a failure-rate strategy takes type, ' +
          'maxFailuresPerInterval, failureRateInterval, delay',
      );
      expect(refused({ type: 'exponential-delay', jitterFactor: 2 }).message).to.equal(
        'restartStrategy.jitterFactor must be a finite number >= 0 and <= 1, got 2',
      );
      const multiplier = refused({ type: 'exponential-delay', backoffMultiplier: 0.5 });
      expect(multiplier.message).to.equal('restartStrategy.backoffMultiplier must be a finite number > 1, got 0.5');
      expect(multiplier.details).to.deep.include({
        field: 'restartStrategy.backoffMultiplier',
        option: 'restart-strategy.exponential-delay.backoff-multiplier',
      });
      expect(refused({ type: 'failure-rate', maxFailuresPerInterval: 0 }).message).to.equal(
        'restartStrategy.maxFailuresPerInterval must be an integer >= 1, got 0',
      );
      expect(refused({ type: 'exponential-delay', initialBackoff: '2 min' }).message).to.equal(
        'restartStrategy.initialBackoff (2 min) must not be longer than ' +
          "'restart-strategy.exponential-delay.max-backoff' (1 min)",
      );
      expect(refused({ type: 'exponential-delay', initialBackoff: '2 s', maxBackoff: '1 s' }).message).to.equal(
        'restartStrategy.initialBackoff (2 s) must not be longer than restartStrategy.maxBackoff (1 s)',
      );
    });

    it('refuses unknown fields, so a typo is not silently ignored', () => {
      const error = refusal({ name: 'typo', vertices: [{ ...v('a'), slotSharingGoup: 'x' }] });
      expect(error.reason).to.equal('unknown-field');
      expect(error.message).to.match(/vertex 'a' has an unknown field "slotSharingGoup"; allowed fields are/);
      expect(refusal({ name: 'typo', vertices: [v('a')], edge: [] }).reason).to.equal('unknown-field');
    });

    it('refuses a config that cannot be sent to a task thread', () => {
      const error = refusal({ name: 'c', vertices: [v('a', 1, { config: { fn: () => 1 } })] });
      expect(error.reason).to.equal('invalid-config');
      expect(error.message).to.match(/structured clone/);
    });
  });

  describe('validateTaskModules', function () {
    // Each call without a checker starts a checker worker of its own (~0.3-1 s under tsx).
    this.timeout(30_000);

    it('accepts modules whose default export is a function', async () => {
      await JobGraph.create({ name: 'ok', vertices: [v('a'), v('b')] }).validateTaskModules();
    });

    it('refuses a module without a default export, naming the vertex, the module and its exports', async () => {
      const graph = JobGraph.create({
        name: 'nd',
        vertices: [v('a'), v('b', 1, { taskModule: new URL('../fixtures/tasks/noDefault.ts', import.meta.url) })],
      });
      const error = await asyncRefusal(graph.validateTaskModules());
      expect(error.reason).to.equal('invalid-task-module');
      expect(error.message).to.match(
        /vertex 'b': task module .*noDefault\.ts has no default export function \(it exports notATask\)/,
      );
      expect(error.details).to.deep.include({ vertex: 'b', problem: 'no-default-export' });
    });

    it('refuses a module that does not exist', async () => {
      const graph = JobGraph.create({
        name: 'missing',
        vertices: [v('a', 1, { taskModule: new URL('../fixtures/tasks/nope.ts', import.meta.url) })],
      });
      const error = await asyncRefusal(graph.validateTaskModules());
      expect(error.reason).to.equal('invalid-task-module');
      expect(error.message).to.match(/vertex 'a': task module .*nope\.ts does not exist/);
      expect(error.details).to.have.property('problem', 'not-found');
    });

    it('refuses a directory', async () => {
      const graph = JobGraph.create({
        name: 'dir',
        vertices: [v('a', 1, { taskModule: new URL('../fixtures/tasks/', import.meta.url) })],
      });
      expect((await asyncRefusal(graph.validateTaskModules())).reason).to.equal('invalid-task-module');
    });

    it('never runs a module on this thread: a top-level throw is refused as threw, naming the vertex', async () => {
      const graph = JobGraph.create({
        name: 'tt',
        vertices: [v('a'), v('b', 1, { taskModule: new URL('../fixtures/tasks/throwsOnLoad.ts', import.meta.url) })],
      });
      const error = await asyncRefusal(graph.validateTaskModules());
      expect(error.reason).to.equal('invalid-task-module');
      expect(error.details).to.deep.include({ vertex: 'b', problem: 'threw' });
      expect(error.message).to.match(
        /vertex 'b': task module .*throwsOnLoad\.ts cannot be loaded: its top-level code threw Error: refusing to load/,
      );
    });
  });
});
