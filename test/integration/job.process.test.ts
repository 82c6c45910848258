/** The word count with TaskExecutors in child processes: the same answer as on threads. */
import { expect } from 'chai';
import { MiniCluster } from '../../lib/MiniCluster.js';
import { countWords, generatedText } from '../../examples/wordcount/text.js';
import { wordCountJob, type WordCountResult } from '../../examples/wordcount/wordCountJob.js';

describe('jobs on a MiniCluster (child processes)', function () {
  this.timeout(60_000);

  it('runs the word count in process mode and gets the exact counts', async () => {
    const cluster = await MiniCluster.start({
      mode: 'process',
      taskExecutors: 2,
      slotsPerTaskExecutor: 2,
      resources: { cpuCores: 2, taskHeapMemory: '1g', managedMemory: '64m', networkMemory: '32m' },
    });
    try {
      expect(cluster.overview().taskExecutors.map((te) => te.mode)).to.deep.equal(['process', 'process']);
      const job = await cluster.submitJob(wordCountJob({ input: { lines: 500, seed: 3 } }));
      const result = await job.result;
      expect(result.status, result.error?.message).to.equal('finished');
      expect((result.outputs['sink']![0] as WordCountResult).counts).to.deep.equal(countWords(generatedText(3, 500)));
    } finally {
      await cluster.close();
    }
  });
});
