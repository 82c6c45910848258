import { expect } from 'chai';
import { IllegalArgumentError } from '../../lib/core/errors.js';
import { ExecutionAttemptID } from '../../lib/core/ids.js';
import {
  createExecution,
  ExecutionGraph,
  ExecutionVertexID,
  pointwiseProducerRange,
  type ExecutionVertex,
} from '../../lib/jobmaster/ExecutionGraph.js';
import { JobGraph, type JobEdgeSpec, type JobVertexSpec } from '../../lib/jobmaster/JobGraph.js';

const OK = new URL('../fixtures/tasks/ok.ts', import.meta.url);
const v = (id: string, parallelism: number): JobVertexSpec => ({ id, taskModule: OK, parallelism });
const keys = (vertices: readonly ExecutionVertex[]) => vertices.map((x) => x.key);

function graphOf(vertices: JobVertexSpec[], edges: JobEdgeSpec[] = []): ExecutionGraph {
  return new ExecutionGraph(JobGraph.create({ name: 'test', vertices, edges }));
}

describe('ExecutionGraph', () => {
  describe('ExecutionVertexID', () => {
    it('reads as <vertex>#<subtask> and parses back', () => {
      const id = ExecutionVertexID.of('tokenize', 3);
      expect(ExecutionVertexID.key(id)).to.equal('tokenize#3');
      expect(ExecutionVertexID.parse('tokenize#3')).to.deep.equal(id);
      for (const bad of ['tokenize', '#3', 'tokenize#', 'tokenize#-1', 'tokenize#x'])
        expect(() => ExecutionVertexID.parse(bad), bad).to.throw(IllegalArgumentError);
    });
  });

  it('has one execution vertex per subtask, in topological order of job vertices, subtasks ascending', () => {
    const graph = graphOf([v('sink', 1), v('source', 2)], [{ from: 'source', to: 'sink', pattern: 'all-to-all' }]);
    expect(graph.size).to.equal(3);
    expect(keys(graph.verticesInTopologicalOrder())).to.deep.equal(['source#0', 'source#1', 'sink#0']);
    expect(keys(graph.subtasksOf('source'))).to.deep.equal(['source#0', 'source#1']);
    expect(graph.vertex('source#1').jobVertex.parallelism).to.equal(2);
    expect(graph.vertex(ExecutionVertexID.of('sink', 0)).key).to.equal('sink#0');
  });

  it('refuses a subtask it does not have, listing the vertices', () => {
    const graph = graphOf([v('a', 2)]);
    expect(() => graph.vertex('a#2')).to.throw(IllegalArgumentError, /no subtask a#2 in job 'test' \(vertices: a x2\)/);
  });

  it('finds a subtask by the exact text of its key only, as a Map by key would', () => {
    const graph = graphOf([v('a', 2)]);
    expect(graph.size).to.equal(2);
    expect(graph.vertex('a#1')).to.equal(graph.vertex(ExecutionVertexID.of('a', 1)));
    // A subtask is its own ID; its fields alone are a plain one.
    const a1 = graph.vertex('a#1');
    expect(a1.id).to.equal(a1);
    expect(ExecutionVertexID.fieldsOf(a1.id)).to.deep.equal(ExecutionVertexID.of('a', 1));
    expect(ExecutionVertexID.key(a1.id)).to.equal('a#1');
    for (const key of ['a#01', 'a#1.0', 'a#-0', 'a#', 'a#length', 'a#__proto__', 'a#constructor', 'a', '#1'])
      expect(() => graph.vertex(key), key).to.throw(IllegalArgumentError, `no subtask ${key} in job`);
    for (const subtaskIndex of [2, -1, 0.5, Number.NaN])
      expect(() => graph.vertex({ vertexId: 'a', subtaskIndex })).to.throw(IllegalArgumentError);
    const textual = { vertexId: 'a', subtaskIndex: '1' } as unknown as ExecutionVertexID;
    expect(graph.vertex(textual).key).to.equal('a#1');
    const named = { vertexId: 'a', subtaskIndex: 'length' } as unknown as ExecutionVertexID;
    expect(() => graph.vertex(named)).to.throw(IllegalArgumentError, 'no subtask a#length');
  });

  it('connects all-to-all: every downstream subtask consumes every upstream subtask', () => {
    const graph = graphOf([v('up', 3), v('down', 2)], [{ from: 'up', to: 'down', pattern: 'all-to-all' }]);
    for (const down of graph.subtasksOf('down'))
      expect(keys(graph.producersOf(down))).to.deep.equal(['up#0', 'up#1', 'up#2']);
    for (const up of graph.subtasksOf('up')) expect(keys(graph.consumersOf(up))).to.deep.equal(['down#0', 'down#1']);
    // one shared producer list for the whole edge: O(p), not O(p²)
    expect(graph.inputsOf('down#0')[0]!.producers).to.equal(graph.inputsOf('down#1')[0]!.producers);
  });

  it('gives each consumer of a hash edge with a set parallelism its own subpartition of every producer', () => {
    const graph = graphOf([v('up', 3), v('down', 2)], [{ from: 'up', to: 'down', pattern: 'hash' }]);
    expect(graph.subpartitionsOf('up')).to.equal(2);
    expect(graph.subpartitionsOf('down')).to.equal(null);
    expect(graph.subtasksOf('down').map((d) => graph.inputsOf(d)[0]!.subpartitions)).to.deep.equal([
      [0, 1],
      [1, 2],
    ]);
    expect(keys(graph.producersOf('down#1'))).to.deep.equal(['up#0', 'up#1', 'up#2']);
    // Other edges read the one output a producer writes.
    const broadcast = graphOf([v('up', 3), v('down', 2)], [{ from: 'up', to: 'down', pattern: 'all-to-all' }]);
    expect(broadcast.inputsOf('down#1')[0]!.subpartitions).to.deep.equal([0, 1]);
  });

  it('connects pointwise with p_up > p_down: downstream i consumes a contiguous block of p_up / p_down', () => {
    const graph = graphOf([v('up', 6), v('down', 2)], [{ from: 'up', to: 'down', pattern: 'pointwise' }]);
    expect(keys(graph.producersOf('down#0'))).to.deep.equal(['up#0', 'up#1', 'up#2']);
    expect(keys(graph.producersOf('down#1'))).to.deep.equal(['up#3', 'up#4', 'up#5']);
    expect(keys(graph.consumersOf('up#4'))).to.deep.equal(['down#1']);
  });

  it('connects pointwise with p_up < p_down: upstream j feeds a contiguous block of p_down / p_up', () => {
    const graph = graphOf([v('up', 2), v('down', 6)], [{ from: 'up', to: 'down', pattern: 'pointwise' }]);
    expect(keys(graph.consumersOf('up#0'))).to.deep.equal(['down#0', 'down#1', 'down#2']);
    expect(keys(graph.consumersOf('up#1'))).to.deep.equal(['down#3', 'down#4', 'down#5']);
    for (let i = 0; i < 6; i++) expect(keys(graph.producersOf(`down#${i}`))).to.deep.equal([`up#${i < 3 ? 0 : 1}`]);
  });

  it('connects pointwise with equal parallelism one to one', () => {
    const graph = graphOf([v('up', 3), v('down', 3)], [{ from: 'up', to: 'down', pattern: 'pointwise' }]);
    for (let i = 0; i < 3; i++) expect(keys(graph.producersOf(`down#${i}`))).to.deep.equal([`up#${i}`]);
  });

  it("follows Flink's pointwise ranges for parallelisms that do not divide too", () => {
    // Flink's EdgeManagerBuildUtil: 3 -> 5 feeds {0,1}, {2,3}, {4}; 5 -> 3 reads [0,1), [1,3), [3,5).
    expect([0, 1, 2, 3, 4].map((i) => pointwiseProducerRange(3, 5, i)[0])).to.deep.equal([0, 0, 1, 1, 2]);
    expect([0, 1, 2].map((i) => pointwiseProducerRange(5, 3, i))).to.deep.equal([
      [0, 1],
      [1, 3],
      [3, 5],
    ]);
  });

  it('keeps one input per edge, in declaration order, and producers over all inputs', () => {
    const graph = graphOf(
      [v('a', 2), v('b', 1), v('c', 2)],
      [
        { from: 'b', to: 'c', pattern: 'all-to-all' },
        { from: 'a', to: 'c', pattern: 'pointwise' },
      ],
    );
    const inputs = graph.inputsOf('c#1');
    expect(inputs.map((i) => i.edge.from)).to.deep.equal(['b', 'a']);
    expect(keys(graph.producersOf('c#1'))).to.deep.equal(['b#0', 'a#1']);
    expect(keys(graph.consumersOf('b#0'))).to.deep.equal(['c#0', 'c#1']);
  });

  it('lists the sinks: the subtasks of vertices without outputs', () => {
    const graph = graphOf(
      [v('source', 2), v('sideSink', 1), v('map', 2), v('sink', 3)],
      [
        { from: 'source', to: 'map', pattern: 'pointwise' },
        { from: 'source', to: 'sideSink', pattern: 'all-to-all' },
        { from: 'map', to: 'sink', pattern: 'all-to-all' },
      ],
    );
    expect(keys(graph.sinks())).to.deep.equal(['sideSink#0', 'sink#0', 'sink#1', 'sink#2']);
    expect(graph.producersOf('source#0')).to.deep.equal([]);
  });

  it('creates attempts with a labelled ExecutionAttemptID, state created', () => {
    const execution = createExecution(ExecutionVertexID.of('tokenize', 3), 1);
    expect(execution.state).to.equal('created');
    expect(execution.attemptNumber).to.equal(1);
    expect(ExecutionAttemptID.is(execution.attemptId)).to.equal(true);
    expect(execution.attemptId.endsWith('_tokenize_3_1')).to.equal(true);
  });
});
