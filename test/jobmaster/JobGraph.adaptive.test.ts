/**
 * The job graph under the adaptive scheduler: which vertices may leave their parallelism unset, with which bounds, and
 * what is refused (typed JobGraphError naming the vertex and why); the scheduler chosen by option or per job, in
 * Flink's spellings too.
 */
import { expect } from 'chai';
import { ConfigurationError, IllegalArgumentError, JobGraphError } from '../../lib/core/errors.js';
import { resolveOptions, type SlotwiseOptions } from '../../lib/core/options.js';
import { JobGraph, type JobGraphSpec, type JobVertexSpec } from '../../lib/jobmaster/JobGraph.js';
import { ExecutionGraph } from '../../lib/jobmaster/ExecutionGraph.js';

const OK = new URL('../fixtures/tasks/ok.ts', import.meta.url);
const v = (id: string, extra: Partial<JobVertexSpec> = {}): JobVertexSpec => ({ id, taskModule: OK, ...extra });
const adaptive = (spec: Omit<JobGraphSpec, 'name'>): JobGraphSpec => ({ name: 'job', scheduler: 'adaptive', ...spec });

function refusal(spec: unknown, options: SlotwiseOptions = {}): JobGraphError {
  try {
    JobGraph.create(spec as JobGraphSpec, resolveOptions(options));
  } catch (error) {
    expect(error).to.be.instanceOf(JobGraphError);
    return error as JobGraphError;
  }
  throw new Error('expected JobGraph.create to refuse the spec');
}

describe('JobGraph under the adaptive scheduler', () => {
  it('refuses a vertex without parallelism under the default scheduler, naming the adaptive one', () => {
    const error = refusal({ name: 'job', vertices: [v('src')] });
    expect(error.reason).to.equal('invalid-parallelism');
    expect(error.details).to.deep.include({ vertex: 'src' });
    expect(error.message).to.contain("vertex 'src': parallelism must be set").and.contain("scheduler: 'adaptive'");
  });

  it("accepts Flink's spellings, per job or by the option jobmanager.scheduler; the default stays 'default'", () => {
    for (const scheduler of ['adaptive', 'AdaptiveBatch', 'adaptive-batch'] as const) {
      const graph = JobGraph.create({ name: 'job', scheduler, vertices: [v('src')] });
      expect(graph.scheduler).to.equal('adaptive');
      expect(graph.vertex('src').parallelism).to.equal(null);
    }
    const byOption = JobGraph.create(
      { name: 'job', vertices: [v('src')] },
      resolveOptions({ 'jobmanager.scheduler': 'AdaptiveBatch' }),
    );
    expect(byOption.scheduler).to.equal('adaptive');
    // A job may choose the default scheduler on an adaptive cluster: then every parallelism is needed.
    expect(
      refusal({ name: 'job', scheduler: 'default', vertices: [v('src')] }, { 'jobmanager.scheduler': 'adaptive' }),
    ).to.have.property('reason', 'invalid-parallelism');
    expect(JobGraph.create({ name: 'job', vertices: [v('src', { parallelism: 2 })] }).scheduler).to.equal('default');
  });

  it('refuses an unknown scheduler, by option (ConfigurationError) and per job (JobGraphError)', () => {
    const error = refusal(adaptive({ scheduler: 'speculative' as 'adaptive', vertices: [v('src')] }));
    expect(error.reason).to.equal('invalid-scheduler');
    expect(error.message).to.contain("scheduler must be 'default' or 'adaptive'").and.contain('speculative');
    expect(() => resolveOptions({ 'jobmanager.scheduler': 'fast' })).to.throw(
      ConfigurationError,
      "option 'jobmanager.scheduler' must be 'default' or 'adaptive'",
    );
    expect(() =>
      resolveOptions({
        'execution.batch.adaptive.auto-parallelism.min-parallelism': 8,
        'execution.batch.adaptive.auto-parallelism.max-parallelism': 4,
      }),
    ).to.throw(ConfigurationError, 'min-parallelism');
  });

  it('takes bounds only for a parallelism left unset, each 1 to 32768, min not above max', () => {
    const graph = JobGraph.create(adaptive({ vertices: [v('src', { minParallelism: 2, maxParallelism: 6 })] }));
    expect(graph.vertex('src')).to.deep.include({ parallelism: null, minParallelism: 2, maxParallelism: 6 });
    const both = refusal(adaptive({ vertices: [v('src', { parallelism: 4, maxParallelism: 6 })] }));
    expect(both.reason).to.equal('invalid-parallelism');
    expect(both.message).to.contain('maxParallelism bound a parallelism the adaptive scheduler decides');
    expect(refusal(adaptive({ vertices: [v('src', { minParallelism: 0 })] })).message).to.contain(
      'minParallelism must be an integer from 1 to 32768, got 0',
    );
    expect(refusal(adaptive({ vertices: [v('src', { minParallelism: 5, maxParallelism: 2 })] })).message).to.contain(
      'minParallelism (5) must not be above maxParallelism (2)',
    );
  });

  it("takes an adaptive consumer of a hash edge: its producers write its max parallelism's subpartitions", () => {
    const graph = JobGraph.create(
      adaptive({
        vertices: [v('src', { parallelism: 4 }), v('sink', { maxParallelism: 12 })],
        edges: [{ from: 'src', to: 'sink', pattern: 'hash' }],
      }),
    );
    expect(() => new ExecutionGraph(graph)).to.throw(IllegalArgumentError, 'no maxParallelismOf was given');
    const execution = new ExecutionGraph(graph, { maxParallelismOf: (id) => graph.vertex(id).maxParallelism ?? 128 });
    expect(execution.subpartitionsOf('src')).to.equal(12);
    expect(execution.subpartitionsOf('sink')).to.equal(null);
    // A parallelism above the subpartitions, or ranges that do not cover them in order, change nothing.
    expect(() => execution.initialize('sink', 13)).to.throw('above the 12 subpartitions');
    for (const ranges of [
      [
        [0, 6],
        [7, 12],
      ],
      [
        [0, 6],
        [6, 11],
      ],
      [[0, 12]],
      [
        [0, 0],
        [0, 12],
      ],
    ] as const)
      expect(() => execution.initialize('sink', 2, ranges), JSON.stringify(ranges)).to.throw(
        'must be 2 non-empty contiguous ranges covering [0, 12) in order',
      );
    expect(execution.isInitialized('sink')).to.equal(false);
    execution.initialize('sink', 3, [
      [0, 2],
      [2, 9],
      [9, 12],
    ]);
    expect(execution.inputsOf('sink#1')[0]!.subpartitions).to.deep.equal([2, 9]);
    expect(execution.inputsOf('sink#2')[0]!.producers.map((p) => p.key)).to.deep.equal([
      'src#0',
      'src#1',
      'src#2',
      'src#3',
    ]);
    // Without ranges: split evenly by count.
    const evenly = new ExecutionGraph(graph, { maxParallelismOf: () => 12 });
    evenly.initialize('sink', 5);
    expect(evenly.subtasksOf('sink').map((s) => evenly.inputsOf(s)[0]!.subpartitions)).to.deep.equal([
      [0, 2],
      [2, 4],
      [4, 7],
      [7, 9],
      [9, 12],
    ]);
  });

  it('refuses an adaptive vertex in a co-location group', () => {
    const error = refusal(
      adaptive({ vertices: [v('a', { parallelism: 2, coLocationGroup: 'c' }), v('b', { coLocationGroup: 'c' })] }),
    );
    expect(error.reason).to.equal('invalid-co-location');
    expect(error.message).to.contain("vertex 'b' leaves its parallelism to the adaptive scheduler");
  });

  it('leaves a pointwise edge with an adaptive end to the decision (no divisibility check at submit)', () => {
    const graph = JobGraph.create(
      adaptive({
        vertices: [v('src', { parallelism: 7 }), v('sink')],
        edges: [{ from: 'src', to: 'sink', pattern: 'pointwise' }],
      }),
    );
    // Not initialized until the scheduler decides; initialize refuses a parallelism that breaks divisibility.
    const execution = new ExecutionGraph(graph);
    expect(execution.isInitialized('sink')).to.equal(false);
    expect(execution.subtasksOf('sink')).to.deep.equal([]);
    expect(() => execution.initialize('sink', 3)).to.throw("does not divide, nor is divided by, src's 7");
    expect(execution.isInitialized('sink')).to.equal(false);
    expect(execution.initialize('sink', 7)).to.have.length(7);
    expect(execution.consumersOf('src#3').map((c) => c.key)).to.deep.equal(['sink#3']);
    expect(() => execution.initialize('sink', 7)).to.throw('it has its parallelism (7) already');
  });
});
