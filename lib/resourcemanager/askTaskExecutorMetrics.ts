/**
 * Each TaskExecutor's figures, asked of it now (TaskExecutorGateway.requestMetrics); one that does
 * not answer within its call's deadline (rpc.ask.timeout) is left out rather than failing the lot.
 */
import type { TaskExecutorGateway } from '../rpc/gateways.js';
import type { TaskExecutorMetricsWire } from '../rpc/protocol.js';

export async function askTaskExecutorMetrics(
  gateways: ReadonlyArray<TaskExecutorGateway | undefined>,
): Promise<TaskExecutorMetricsWire[]> {
  const asked = gateways.flatMap((gateway) => (gateway === undefined ? [] : [gateway.requestMetrics()]));
  const answers = await Promise.allSettled(asked);
  return answers.flatMap((answer) => (answer.status === 'fulfilled' ? [answer.value] : []));
}
