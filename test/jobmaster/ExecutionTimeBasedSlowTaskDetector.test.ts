/**
 * Flink's ExecutionTimeBasedSlowTaskDetector rule, pure: a vertex is looked at once `ratio` of its subtasks finished;
 * its baseline is the median of the first round(n × ratio) finished times, times the multiplier; an attempt of an
 * unfinished subtask that has run at least the baseline and the lower bound is slow.
 */
import { expect } from 'chai';
import type { ExecutionAttemptID } from '../../lib/core/ids.js';
import {
  baselineOf,
  findSlowTasks,
  type SubtaskAttempts,
} from '../../lib/jobmaster/speculative/ExecutionTimeBasedSlowTaskDetector.js';

const FLINK = { lowerBoundMs: 0, ratio: 0.75, multiplier: 1.5 };
const id = (s: string) => s as ExecutionAttemptID;

/** A subtask that ran from `start` to `end` (-1: still running), finished when it has an end. */
function subtask(key: string, start: number, end = -1, state = end < 0 ? 'running' : 'finished'): SubtaskAttempts {
  return {
    key,
    finished: state === 'finished',
    attempts: [{ executionAttemptId: id(`${key}/0`), state, startTime: start, endTime: end }],
  };
}

describe('ExecutionTimeBasedSlowTaskDetector', () => {
  it('takes the median of the first round(n × ratio) finished, times the multiplier, as the baseline', () => {
    // 8 subtasks, 6 finished (0.75): the 6 fastest of 1..6 s, median index 3 → 4 s, × 1.5 = 6 s.
    const vertex = [1, 2, 3, 4, 5, 6].map((s, i) => subtask(`v#${i}`, 0, s * 1_000));
    vertex.push(subtask('v#6', 0), subtask('v#7', 0));
    expect(baselineOf(vertex, 10_000, FLINK)).to.equal(6_000);
  });

  it('looks at no vertex before ratio of its subtasks finished, nor at one that finished whole', () => {
    const running = [subtask('v#0', 0, 1_000), subtask('v#1', 0, 1_000), subtask('v#2', 0), subtask('v#3', 0)];
    expect(baselineOf(running, 60_000, FLINK)).to.equal(null);
    expect(findSlowTasks([running], 60_000, FLINK).size).to.equal(0);
    const done = [0, 1, 2, 3].map((i) => subtask(`v#${i}`, 0, 1_000));
    expect(baselineOf(done, 60_000, FLINK)).to.equal(null);
  });

  it('finds the attempt that has run 1.5× the median slow, not before', () => {
    const vertex = [subtask('v#0', 0, 1_000), subtask('v#1', 0, 1_000), subtask('v#2', 0, 1_000), subtask('v#3', 0)];
    expect(findSlowTasks([vertex], 1_499, FLINK).size).to.equal(0);
    expect([...findSlowTasks([vertex], 1_500, FLINK)]).to.deep.equal([['v#3', [id('v#3/0')]]]);
  });

  it('finds nothing slow before the lower bound, however far past the baseline', () => {
    const vertex = [subtask('v#0', 0, 100), subtask('v#1', 0, 100), subtask('v#2', 0, 100), subtask('v#3', 0)];
    const bounded = { ...FLINK, lowerBoundMs: 60_000 };
    expect(findSlowTasks([vertex], 59_999, bounded).size).to.equal(0);
    expect(findSlowTasks([vertex], 60_000, bounded).size).to.equal(1);
  });

  it('counts time from deploying: an attempt created or not deployed yet is never slow', () => {
    const waiting: SubtaskAttempts = {
      key: 'v#3',
      finished: false,
      attempts: [{ executionAttemptId: id('v#3/0'), state: 'created', startTime: -1, endTime: -1 }],
    };
    const vertex = [subtask('v#0', 0, 100), subtask('v#1', 0, 100), subtask('v#2', 0, 100), waiting];
    expect(findSlowTasks([vertex], 10_000, FLINK).size).to.equal(0);
    // An ExecutionRecord's times are null until they are (the detector reads records as they are).
    const record = { executionAttemptId: id('v#3/0'), state: 'scheduled', startTime: null, endTime: null };
    expect(findSlowTasks([[...vertex.slice(0, 3), { ...waiting, attempts: [record] }]], 10_000, FLINK).size).to.equal(
      0,
    );
  });

  it('names every slow attempt of a subtask, and none that ended', () => {
    const twice: SubtaskAttempts = {
      key: 'v#3',
      finished: false,
      attempts: [
        { executionAttemptId: id('v#3/0'), state: 'running', startTime: 0, endTime: -1 },
        { executionAttemptId: id('v#3/1'), state: 'running', startTime: 0, endTime: -1 },
        { executionAttemptId: id('v#3/2'), state: 'canceled', startTime: 0, endTime: 500 },
      ],
    };
    const vertex = [subtask('v#0', 0, 100), subtask('v#1', 0, 100), subtask('v#2', 0, 100), twice];
    expect(findSlowTasks([vertex], 1_000, FLINK).get('v#3')).to.deep.equal([id('v#3/0'), id('v#3/1')]);
  });
});
