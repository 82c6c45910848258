/**
 * The scheduling strategies' decisions, on plain execution records (no JobMaster, no slots): which subtasks are
 * scheduled at the start, after a finish, at a restart, and which go back to wait when an input is lost.
 */
import { expect } from 'chai';
import { ExecutionAttempts, type ExecutionRecord } from '../../lib/jobmaster/ExecutionAttempts.js';
import {
  EagerSchedulingStrategy,
  PipelinedRegionSchedulingStrategy,
  schedulingStrategyOf,
} from '../../lib/jobmaster/SchedulingStrategy.js';
import { edge, jobOf, vertex } from './support.js';

/** A join: `left` ×2 all-to-all and `right` ×1 pointwise into `join` ×2 (each join reads both edges). */
function join() {
  const { graph } = jobOf(
    [vertex('left', 2), vertex('right', 1), vertex('join', 2)],
    [edge('left', 'join', 'all-to-all'), edge('right', 'join', 'pointwise')],
  );
  const executions = new ExecutionAttempts(graph, 16);
  const of = (key: string) => executions.of(graph.vertex(key));
  const finish = (key: string) => {
    const record = of(key);
    record.state = 'finished';
    record.hasOutput = true;
    return record;
  };
  return { graph, executions, of, finish, region: new PipelinedRegionSchedulingStrategy(graph, executions) };
}

const keys = (records: Iterable<ExecutionRecord>) => [...records].map((r) => r.vertex.key);

describe('SchedulingStrategy', () => {
  describe('region (PipelinedRegionSchedulingStrategy)', () => {
    it('starts with the sources only, in topological order', () => {
      const { region } = join();
      expect(keys(region.startScheduling())).to.deep.equal(['left#0', 'left#1', 'right#0']);
    });

    it('starts a job without edges whole', () => {
      const { graph } = jobOf([vertex('a', 3), vertex('b', 2)]);
      const executions = new ExecutionAttempts(graph, 16);
      const start = new PipelinedRegionSchedulingStrategy(graph, executions).startScheduling();
      expect(keys(start)).to.deep.equal(['a#0', 'a#1', 'a#2', 'b#0', 'b#1']);
    });

    it('schedules a consumer once every producer of every input edge has finished, and only once', () => {
      const { region, finish, of } = join();
      expect(keys(region.onFinished(finish('left#0')))).to.deep.equal([]);
      expect(keys(region.onFinished(finish('right#0')))).to.deep.equal([]);
      expect(keys(region.onFinished(finish('left#1')))).to.deep.equal(['join#0', 'join#1']);
      // Scheduled (no longer created): a later look does not schedule it again.
      of('join#0').state = 'scheduled';
      expect(keys(region.onFinished(of('left#1')))).to.deep.equal(['join#1']);
    });

    it('schedules at a restart the subtasks whose inputs are there, the others wait', () => {
      const { region, finish, of } = join();
      finish('left#0');
      finish('left#1');
      expect(keys(region.restartTasks([of('right#0'), of('join#0'), of('join#1')]))).to.deep.equal(['right#0']);
      finish('right#0');
      expect(keys(region.restartTasks([of('join#1')]))).to.deep.equal(['join#1']);
    });

    it('sends back the consumers of lost producers that are scheduled, each once; deployed ones stay', () => {
      const { region, of } = join();
      of('join#0').state = 'scheduled';
      of('join#1').state = 'running';
      expect(keys(region.onInputsLost([of('left#0'), of('left#1')]))).to.deep.equal(['join#0']);
    });
  });

  describe('region, co-located subtasks (one region: subtask i of each member shares a slot)', () => {
    it('schedules a co-located consumer with its producer, to wait for it in their shared slot', () => {
      const { graph } = jobOf(
        [vertex('a', 2, { coLocationGroup: 'loop' }), vertex('b', 2, { coLocationGroup: 'loop' })],
        [edge('a', 'b')],
      );
      const region = new PipelinedRegionSchedulingStrategy(graph, new ExecutionAttempts(graph, 16));
      expect(keys(region.startScheduling())).to.deep.equal(['a#0', 'b#0', 'a#1', 'b#1']);
    });

    it('waits with the whole region for an input from outside it', () => {
      const { graph } = jobOf(
        [vertex('a', 1, { coLocationGroup: 'loop' }), vertex('c', 1), vertex('b', 1, { coLocationGroup: 'loop' })],
        [edge('a', 'b'), edge('c', 'b')],
      );
      const executions = new ExecutionAttempts(graph, 16);
      const region = new PipelinedRegionSchedulingStrategy(graph, executions);
      expect(keys(region.startScheduling())).to.deep.equal(['c#0']);
      const c = executions.of(graph.vertex('c#0'));
      c.state = 'finished';
      c.hasOutput = true;
      expect(keys(region.onFinished(c))).to.deep.equal(['a#0', 'b#0']);
    });
  });

  describe('eager', () => {
    it('schedules every subtask at the start and at a restart; nothing after a finish; keeps waiting slots', () => {
      const { executions, of } = join();
      const eager = new EagerSchedulingStrategy(executions);
      expect(keys(eager.startScheduling())).to.deep.equal(['left#0', 'left#1', 'right#0', 'join#0', 'join#1']);
      expect(keys(eager.restartTasks([of('join#0'), of('right#0')]))).to.deep.equal(['join#0', 'right#0']);
      expect(eager.onFinished()).to.deep.equal([]);
      of('join#0').state = 'scheduled';
      expect(eager.onInputsLost()).to.deep.equal([]);
    });
  });

  it('is chosen by jobmanager.scheduler.scheduling-strategy', () => {
    const { graph, executions } = join();
    expect(schedulingStrategyOf('region', graph, executions).name).to.equal('region');
    expect(schedulingStrategyOf('eager', graph, executions).name).to.equal('eager');
  });
});
