import { MiniCluster, type MiniClusterOptions } from '../../lib/MiniCluster.js';

/** What `MiniCluster.start(options)` rejected with, or undefined when it started (the cluster is closed again). */
export async function startRefusal(options: MiniClusterOptions): Promise<unknown> {
  return MiniCluster.start(options).then(
    async (cluster) => {
      await cluster.close();
      return undefined;
    },
    (error: unknown) => error,
  );
}
