import { expect } from 'chai';
import fc from 'fast-check';
import { IllegalStateError } from '../../lib/core/errors.js';
import { ResourceProfile } from '../../lib/core/ResourceProfile.js';
import { ExecutionGraph, ExecutionVertexID } from '../../lib/jobmaster/ExecutionGraph.js';
import { JobGraph, type JobEdgeSpec, type JobGraphSpec, type JobVertexSpec } from '../../lib/jobmaster/JobGraph.js';
import {
  LocalInputPreferredSlotSharingStrategy,
  type ExecutionSlotSharingGroup,
} from '../../lib/jobmaster/slotsharing/SlotSharingStrategy.js';

const OK = new URL('../fixtures/tasks/ok.ts', import.meta.url);
const v = (id: string, parallelism: number, extra: Partial<JobVertexSpec> = {}): JobVertexSpec => ({
  id,
  taskModule: OK,
  parallelism,
  ...extra,
});
const e = (from: string, to: string, pattern: JobEdgeSpec['pattern'] = 'pointwise'): JobEdgeSpec => ({
  from,
  to,
  pattern,
});

function strategyOf(vertices: JobVertexSpec[], edges: JobEdgeSpec[] = [], extra: Partial<JobGraphSpec> = {}) {
  const graph = new ExecutionGraph(JobGraph.create({ name: 'test', vertices, edges, ...extra }));
  return new LocalInputPreferredSlotSharingStrategy(graph);
}

/** Every group as `id: member, member, …`. */
const layout = (strategy: LocalInputPreferredSlotSharingStrategy) =>
  strategy.getExecutionSlotSharingGroups().map((g) => `${g.id}: ${g.members.map(ExecutionVertexID.key).join(', ')}`);

const groupOf = (strategy: LocalInputPreferredSlotSharingStrategy, key: string): ExecutionSlotSharingGroup =>
  strategy.getExecutionSlotSharingGroup(ExecutionVertexID.parse(key))!;

describe('LocalInputPreferredSlotSharingStrategy', () => {
  it('puts subtask i of a source -> map -> sink chain of equal parallelism in group i', () => {
    const strategy = strategyOf([v('source', 3), v('map', 3), v('sink', 3)], [e('source', 'map'), e('map', 'sink')]);
    expect(layout(strategy)).to.deep.equal([
      'default[0]: source#0, map#0, sink#0',
      'default[1]: source#1, map#1, sink#1',
      'default[2]: source#2, map#2, sink#2',
    ]);
  });

  it('gives an all-to-all consumer the first producer group still free of it', () => {
    const strategy = strategyOf([v('source', 2), v('tokenize', 2)], [e('source', 'tokenize', 'all-to-all')]);
    expect(layout(strategy)).to.deep.equal(['default[0]: source#0, tokenize#0', 'default[1]: source#1, tokenize#1']);
  });

  it('never puts subtasks of two slot sharing groups in one group', () => {
    const strategy = strategyOf(
      [v('source', 2, { slotSharingGroup: 'a' }), v('map', 2, { slotSharingGroup: 'b' })],
      [e('source', 'map')],
    );
    expect(layout(strategy)).to.deep.equal(['a[0]: source#0', 'a[1]: source#1', 'b[0]: map#0', 'b[1]: map#1']);
    for (const group of strategy.getExecutionSlotSharingGroups()) {
      expect(new Set(group.members.map((m) => m.vertexId)).size, group.id).to.equal(group.members.length);
    }
  });

  it('fans out with p_up < p_down: producer groups first to every subtask, then new groups for the rest', () => {
    // Two passes: map#1 must not take default[1] before map#2 (which reads source#1) gets to it.
    const strategy = strategyOf([v('source', 2), v('map', 4)], [e('source', 'map')]);
    expect(layout(strategy)).to.deep.equal([
      'default[0]: source#0, map#0',
      'default[1]: source#1, map#2',
      'default[2]: map#1',
      'default[3]: map#3',
    ]);
  });

  it('fans in with p_up > p_down: each consumer joins the group of the first producer of its block', () => {
    const strategy = strategyOf(
      [v('source', 4), v('map', 2), v('sink', 1)],
      [e('source', 'map'), e('map', 'sink', 'all-to-all')],
    );
    expect(layout(strategy)).to.deep.equal([
      'default[0]: source#0, map#0, sink#0',
      'default[1]: source#1',
      'default[2]: source#2, map#1',
      'default[3]: source#3',
    ]);
  });

  it('fills free groups before opening new ones for a vertex without inputs', () => {
    const strategy = strategyOf([v('a', 3), v('b', 2), v('c', 4)]);
    expect(layout(strategy)).to.deep.equal([
      'default[0]: a#0, b#0, c#0',
      'default[1]: a#1, b#1, c#1',
      'default[2]: a#2, c#2',
      'default[3]: c#3',
    ]);
  });

  it('puts co-located subtasks in the same group, before any producer preference', () => {
    // source (4) -> reduce (2) fans in, so reduce#1 sits in default[2]; tail reads reduce pointwise.
    const vertices = (coLocate: boolean) => [
      v('head', 2, coLocate ? { coLocationGroup: 'g' } : {}),
      v('source', 4),
      v('reduce', 2),
      v('tail', 2, coLocate ? { coLocationGroup: 'g' } : {}),
    ];
    const edges = [e('source', 'reduce'), e('reduce', 'tail')];

    const free = strategyOf(vertices(false), edges);
    expect(groupOf(free, 'tail#1').id).to.equal(groupOf(free, 'reduce#1').id);
    expect(groupOf(free, 'tail#1').id).to.not.equal(groupOf(free, 'head#1').id);

    const coLocated = strategyOf(vertices(true), edges);
    for (const i of [0, 1])
      expect(groupOf(coLocated, `tail#${i}`), `subtask ${i}`).to.equal(groupOf(coLocated, `head#${i}`));
  });

  describe('group profiles', () => {
    const cpu = (cores: number) => ({ cpuCores: cores, taskHeapMemory: `${cores * 100}m` });

    it("sums the members' profiles", () => {
      const strategy = strategyOf(
        [v('source', 2, { resources: cpu(1) }), v('map', 1, { resources: cpu(0.5) })],
        [e('source', 'map')],
      );
      expect(groupOf(strategy, 'source#0').resourceProfile.equals(ResourceProfile.fromSpec(cpu(1.5)))).to.equal(true);
      expect(groupOf(strategy, 'source#1').resourceProfile.equals(ResourceProfile.fromSpec(cpu(1)))).to.equal(true);
    });

    it('is UNKNOWN when any member is UNKNOWN (ResourceProfile.merge, as in Flink)', () => {
      const strategy = strategyOf([v('source', 1, { resources: cpu(1) }), v('map', 1)], [e('source', 'map')]);
      expect(groupOf(strategy, 'map#0').resourceProfile.isUnknown()).to.equal(true);
    });

    it("takes the slot sharing group's configured profile over the sum", () => {
      const strategy = strategyOf(
        [v('source', 2, { resources: cpu(1) }), v('map', 2, { resources: cpu(1), slotSharingGroup: 'heavy' })],
        [e('source', 'map')],
        { slotSharingGroups: { heavy: cpu(4) } },
      );
      expect(groupOf(strategy, 'map#1').resourceProfile.equals(ResourceProfile.fromSpec(cpu(4)))).to.equal(true);
      expect(groupOf(strategy, 'source#1').resourceProfile.equals(ResourceProfile.fromSpec(cpu(1)))).to.equal(true);
    });
  });

  it('is deterministic: the same graph gives the same groups', () => {
    const spec = () =>
      strategyOf(
        [v('s', 3), v('t', 5), v('u', 2, { slotSharingGroup: 'x' }), v('w', 5)],
        [e('s', 't', 'all-to-all'), e('t', 'u', 'all-to-all'), e('t', 'w')],
      );
    expect(layout(spec())).to.deep.equal(layout(spec()));
  });

  it('groups a vertex the adaptive scheduler initialized later; once every vertex is grouped, refuses more', () => {
    const vertices = [v('a', 2), { id: 'b', taskModule: OK }];
    const graph = new ExecutionGraph(
      JobGraph.create({ name: 'test', scheduler: 'adaptive', vertices, edges: [e('a', 'b')] }),
    );
    const strategy = new LocalInputPreferredSlotSharingStrategy(graph);
    graph.initialize('b', 2);
    strategy.addJobVertex('b');
    expect(layout(strategy)).to.deep.equal(['default[0]: a#0, b#0', 'default[1]: a#1, b#1']);
    expect(() => strategy.addJobVertex('b')).to.throw(IllegalStateError, /every vertex of the job is grouped already/);
  });

  it('answers undefined for a subtask the graph does not have', () => {
    expect(strategyOf([v('a', 1)]).getExecutionSlotSharingGroup(ExecutionVertexID.of('a', 1))).to.equal(undefined);
  });

  it(
    'on random DAGs: one subtask per vertex per group, one slot sharing ' +
      'group per group, co-location kept, as many groups as the widest vertex',
    () => {
      const dag = fc
        .array(
          fc.record({
            parallelism: fc.integer({ min: 1, max: 6 }),
            ssg: fc.constantFrom('a', 'b'),
            inputs: fc.array(fc.nat(), { maxLength: 2 }),
            allToAll: fc.boolean(),
          }),
          { minLength: 1, maxLength: 7 },
        )
        .map((specs) => {
          const vertices = specs.map((s, i) => v(`v${i}`, s.parallelism, { slotSharingGroup: s.ssg }));
          const edges: JobEdgeSpec[] = [];
          specs.forEach((s, i) => {
            for (const from of new Set(s.inputs.filter(() => i > 0).map((n) => n % i))) {
              const [up, down] = [specs[from]!.parallelism, s.parallelism];
              const divides = Math.max(up, down) % Math.min(up, down) === 0;
              edges.push(e(`v${from}`, `v${i}`, s.allToAll || !divides ? 'all-to-all' : 'pointwise'));
            }
          });
          // co-locate the last vertex with the first if they agree on group and parallelism
          const [first, last] = [vertices[0]!, vertices[vertices.length - 1]!];
          if (
            vertices.length > 1 &&
            first.slotSharingGroup === last.slotSharingGroup &&
            first.parallelism === last.parallelism
          ) {
            first.coLocationGroup = 'co';
            last.coLocationGroup = 'co';
          }
          return { vertices, edges };
        });
      fc.assert(
        fc.property(dag, ({ vertices, edges }) => {
          const strategy = strategyOf(vertices, edges);
          const groups = strategy.getExecutionSlotSharingGroups();
          for (const group of groups) {
            expect(new Set(group.members.map((m) => m.vertexId)).size).to.equal(group.members.length);
            for (const m of group.members)
              expect(vertices.find((x) => x.id === m.vertexId)!.slotSharingGroup).to.equal(group.slotSharingGroup);
          }
          for (const ssg of ['a', 'b']) {
            const widest = Math.max(
              0,
              ...vertices.filter((x) => x.slotSharingGroup === ssg).map((x) => x.parallelism!),
            );
            expect(groups.filter((g) => g.slotSharingGroup === ssg)).to.have.length(widest);
          }
          const coLocated = vertices.filter((x) => x.coLocationGroup === 'co');
          if (coLocated.length === 2) {
            for (let i = 0; i < coLocated[0]!.parallelism!; i++)
              expect(groupOf(strategy, `${coLocated[0]!.id}#${i}`)).to.equal(
                groupOf(strategy, `${coLocated[1]!.id}#${i}`),
              );
          }
          const total = groups.reduce((n, g) => n + g.members.length, 0);
          expect(total).to.equal(vertices.reduce((n, x) => n + x.parallelism!, 0));
        }),
        { seed: 2002, numRuns: 300 },
      );
    },
  );
});
