/**
 * A session cluster's TaskExecutors reading each other's result partitions over NATS (the ResultPartitions'
 * PartitionPeers of a TaskManager): each serves its own on `slotwise.<clusterId>.data.<resourceId>`
 * (PartitionStreamServer) and reads the others' from theirs (PartitionStreamReader), in chunks below `max_payload`
 * with credit-based flow control — on the TaskManager's data connection, never on the Link its control messages take.
 */
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import type { Clock } from '../core/clock.js';
import type { ResourceID } from '../core/ids.js';
import type { PartitionPeers } from '../taskexecutor/ResultPartitions.js';
import { PartitionStreamReader } from './PartitionStreamReader.js';
import { PartitionStreamServer } from './PartitionStreamServer.js';
import { type DataBus, dataInSubject, dataSubject } from './partitionStreamWire.js';

/** A NATS connection as the data plane uses it. */
export function natsDataBus(connection: NatsConnection): DataBus {
  return {
    get maxPayload() {
      return connection.info?.max_payload ?? 1024 * 1024;
    },
    publish(subject, body, fields) {
      const headers = natsHeaders();
      for (const [name, value] of Object.entries(fields)) headers.set(name, value);
      connection.publish(subject, body, { headers });
    },
    subscribe(subject, onMessage) {
      return connection.subscribe(subject, {
        callback: (error, msg) => {
          // A subscription error (permissions) ends it: the reads it would have answered time out, naming the producer.
          if (error === null) onMessage(msg.data, (name) => msg.headers?.get(name) ?? '');
        },
      });
    },
  };
}

export interface NatsPartitionPeersOptions {
  readonly bus: DataBus;
  readonly clusterId: string;
  readonly resourceId: ResourceID;
  readonly clock: Clock;
  /** How long a stream this TaskExecutor serves waits for its reader's credit (default 30 s). */
  readonly idleTimeoutMs?: number;
  /** Chunks a read grants (default 8). */
  readonly credit?: number;
  /** A chunk's bytes at most (default 512 KiB, below `max_payload`). */
  readonly chunkBytes?: number;
  readonly log?: (message: string) => void;
}

export interface NatsPartitionPeers extends PartitionPeers {
  readonly server: PartitionStreamServer;
  readonly reader: PartitionStreamReader;
}

export function natsPartitionPeers(o: NatsPartitionPeersOptions): NatsPartitionPeers {
  const server = new PartitionStreamServer({
    bus: o.bus,
    subject: dataSubject(o.clusterId, o.resourceId),
    clock: o.clock,
    idleTimeoutMs: o.idleTimeoutMs ?? 30_000,
    ...(o.chunkBytes === undefined ? {} : { chunkBytes: o.chunkBytes }),
    ...(o.log === undefined ? {} : { log: o.log }),
  });
  const reader = new PartitionStreamReader({
    bus: o.bus,
    subject: dataInSubject(o.clusterId, o.resourceId),
    clock: o.clock,
    ...(o.credit === undefined ? {} : { credit: o.credit }),
  });
  return {
    server,
    reader,
    serve: (lookup) => server.serve(lookup),
    fetch: (input, timeoutMs) => reader.read(dataSubject(o.clusterId, input.resourceId), input, timeoutMs),
    close() {
      reader.close();
      server.close();
    },
  };
}
