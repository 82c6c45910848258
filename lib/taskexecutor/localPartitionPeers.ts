/**
 * How the TaskExecutors of a MiniCluster reach each other's result partitions (ResultPartitions.ts'
 * PartitionPeers): threads of one process over BroadcastChannels, processes of one host over Unix
 * sockets. A session cluster's TaskManagers use NATS instead (lib/cluster/natsPartitionPeers.ts).
 */
import { rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { BroadcastChannel } from 'node:worker_threads';
import type { Clock, TimerHandle } from '../core/clock.js';
import { ExecutionAttemptID, type ResourceID } from '../core/ids.js';
import type { PartitionInputWire } from '../rpc/protocol.js';
import { notFound, type PartitionPart, type PartitionPeers, partitionError, timedOut } from './ResultPartitions.js';

// ---------------------------------------------------------------------------- in one process

const channelOf = (resourceId: string) => `slotwise.partitions/${resourceId}`;
const repliesOf = (resourceId: string) => `slotwise.partitions/${resourceId}/replies`;

interface FetchRequest {
  readonly id: number;
  readonly from: string;
  readonly partitionId: string;
  readonly subpartition: number;
}
interface FetchReply {
  readonly id: number;
  readonly part?: PartitionPart;
}

/**
 * Peers that are threads of this process (a thread-mode MiniCluster's TaskExecutors): each listens
 * on a BroadcastChannel named by its ResourceID for reads and on one more for the answers to its own;
 * a part crosses as a SharedArrayBuffer-backed view (shared, not copied).
 */
export function broadcastPartitionPeers(resourceId: ResourceID, clock: Clock): PartitionPeers {
  const requests = new BroadcastChannel(channelOf(resourceId));
  const replies = new BroadcastChannel(repliesOf(resourceId));
  // Channels to the others, opened at first use and kept: one per peer, not one per message.
  const toConsumers = new Map<string, BroadcastChannel>();
  const toProducers = new Map<string, BroadcastChannel>();
  const pending = new Map<number, { resolve: (part: PartitionPart) => void; fail: () => void; timer: TimerHandle }>();
  let nextId = 0;
  let lookup: (partitionId: string, subpartition: number) => PartitionPart | undefined = () => undefined;
  let closed = false;

  requests.onmessage = (event) => {
    const { id, from, partitionId, subpartition } = (event as { data: FetchRequest }).data;
    let channel = toConsumers.get(from);
    if (channel === undefined) toConsumers.set(from, (channel = new BroadcastChannel(repliesOf(from))));
    const part = lookup(partitionId, subpartition);
    channel.postMessage((part === undefined ? { id } : { id, part }) satisfies FetchReply);
  };
  replies.onmessage = (event) => {
    const { id, part } = (event as { data: FetchReply }).data;
    const call = pending.get(id);
    if (call === undefined) return;
    pending.delete(id);
    clock.clearTimeout(call.timer);
    if (part === undefined) call.fail();
    else call.resolve(part);
  };

  return {
    serve(serveLookup) {
      lookup = serveLookup;
    },
    fetch(input, timeoutMs) {
      if (closed) return Promise.reject(notFound(input));
      return new Promise<PartitionPart>((resolve, reject) => {
        const id = ++nextId;
        const timer = clock.setTimeout(() => {
          pending.delete(id);
          reject(timedOut(input, timeoutMs));
        }, timeoutMs);
        pending.set(id, { resolve, fail: () => reject(notFound(input)), timer });
        const request: FetchRequest = {
          id,
          from: resourceId,
          partitionId: input.partitionId,
          subpartition: input.subpartition,
        };
        let channel = toProducers.get(input.resourceId);
        if (channel === undefined)
          toProducers.set(input.resourceId, (channel = new BroadcastChannel(channelOf(input.resourceId))));
        channel.postMessage(request);
      });
    },
    close() {
      if (closed) return;
      closed = true;
      requests.close();
      replies.close();
      for (const channel of [...toConsumers.values(), ...toProducers.values()]) channel.close();
      toConsumers.clear();
      toProducers.clear();
      for (const [id, call] of pending) {
        pending.delete(id);
        clock.clearTimeout(call.timer);
        call.fail();
      }
    },
  };
}

// ---------------------------------------------------------------------------- between processes of one host

/** The socket a TaskExecutor serves its partitions on, in its cluster's directory: named by its ResourceID. */
export const partitionSocketOf = (directory: string, resourceId: string): string =>
  join(directory, `${resourceId}.sock`);

/** A reply's status: the part's bytes follow, none held, or held but not serializable across processes. */
const FOUND = 0;
/** The most a read request may take (its JSON: an id, a partition id, a subpartition). */
const MAX_REQUEST_BYTES = 4096;
const NOT_HELD = 1;
const NOT_SERIALIZABLE = 2;

/**
 * Peers that are processes of this host (a process-mode MiniCluster's TaskExecutors): each serves its
 * partitions on a Unix socket in `directory` named by its ResourceID, and reads the others' over one
 * connection per peer. A read is a frame `[u32 length][JSON { id, partitionId, subpartition }]`; its
 * answer `[u32 id][u8 status][u32 length][bytes]`. The bytes land in a SharedArrayBuffer, which the
 * consumer's task thread shares. A part kept as a value (not serializable by v8: a view of managed
 * memory) cannot cross processes: its read fails saying so.
 */
export function socketPartitionPeers(directory: string, resourceId: ResourceID, clock: Clock): PartitionPeers {
  let lookup: (partitionId: string, subpartition: number) => PartitionPart | undefined = () => undefined;
  let closed = false;
  const server = createServer((socket) => {
    socket.on('error', () => socket.destroy());
    let buffered: Buffer<ArrayBufferLike> = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      while (buffered.length >= 4) {
        const length = buffered.readUInt32LE(0);
        // A read asks for one subpartition in a few dozen bytes: anything else is not one of ours.
        if (length > MAX_REQUEST_BYTES) return void socket.destroy();
        if (buffered.length < 4 + length) break;
        let request: { id: number; partitionId: string; subpartition: number };
        try {
          request = JSON.parse(buffered.subarray(4, 4 + length).toString('utf8'));
        } catch {
          return void socket.destroy();
        }
        buffered = buffered.subarray(4 + length);
        const part = lookup(request.partitionId, request.subpartition);
        const header = Buffer.alloc(9);
        header.writeUInt32LE(request.id, 0);
        if (part instanceof Uint8Array) {
          header.writeUInt8(FOUND, 4);
          header.writeUInt32LE(part.byteLength, 5);
          socket.write(header);
          // A SharedArrayBuffer-backed view is written as is (the socket copies it into the kernel).
          socket.write(part);
        } else {
          header.writeUInt8(part === undefined ? NOT_HELD : NOT_SERIALIZABLE, 4);
          header.writeUInt32LE(0, 5);
          socket.write(header);
        }
      }
    });
  });
  const path = partitionSocketOf(directory, resourceId);
  rmSync(path, { force: true });
  server.listen(path);
  server.unref();

  interface Call {
    readonly input: PartitionInputWire;
    readonly resolve: (part: PartitionPart) => void;
    readonly reject: (error: Error) => void;
    readonly timer: TimerHandle;
  }
  /** One connection per peer, and what is read from it: a reply's header, then its bytes into `into`. */
  interface Connection {
    readonly socket: Socket;
    readonly pending: Map<number, Call>;
    header: Buffer<ArrayBufferLike>;
    current: { call: Call | undefined; into: Uint8Array; filled: number } | null;
  }
  const connections = new Map<string, Connection>();
  let nextId = 0;

  const failAll = (connection: Connection, error: (input: PartitionInputWire) => Error) => {
    for (const [id, call] of connection.pending) {
      connection.pending.delete(id);
      clock.clearTimeout(call.timer);
      call.reject(error(call.input));
    }
  };
  const unreachable = (reason: string) => (input: PartitionInputWire) =>
    partitionError(
      'unreachable',
      input,
      `cannot read result partition ${ExecutionAttemptID.short(input.partitionId)} (subpartition ` +
        `${input.subpartition}) from TaskExecutor ${input.resourceId}: ${reason}`,
    );

  const connectionTo = (peer: string): Connection => {
    let connection = connections.get(peer);
    if (connection !== undefined) return connection;
    const socket = connect(partitionSocketOf(directory, peer));
    const made: Connection = { socket, pending: new Map(), header: Buffer.alloc(0), current: null };
    connection = made;
    connections.set(peer, made);
    const drop = (reason: string) => {
      if (connections.get(peer) === made) connections.delete(peer);
      failAll(made, unreachable(reason));
    };
    socket.on('error', (error) => drop(error.message));
    socket.on('close', () => drop('its connection closed'));
    socket.on('data', (chunk: Buffer) => {
      let offset = 0;
      while (offset < chunk.length) {
        if (made.current === null) {
          const need = 9 - made.header.length;
          made.header = Buffer.concat([made.header, chunk.subarray(offset, offset + need)]);
          offset += Math.min(need, chunk.length - offset);
          if (made.header.length < 9) return;
          const id = made.header.readUInt32LE(0);
          const status = made.header.readUInt8(4);
          const length = made.header.readUInt32LE(5);
          made.header = Buffer.alloc(0);
          const call = made.pending.get(id);
          made.pending.delete(id);
          if (call !== undefined) clock.clearTimeout(call.timer);
          if (status !== FOUND) {
            if (call !== undefined)
              call.reject(
                status === NOT_HELD
                  ? notFound(call.input)
                  : unreachable('it holds it as a value that cannot cross processes (a view of managed memory)')(
                      call.input,
                    ),
              );
            continue;
          }
          made.current = { call, into: new Uint8Array(new SharedArrayBuffer(length)), filled: 0 };
        }
        const current = made.current;
        const take = Math.min(current.into.byteLength - current.filled, chunk.length - offset);
        current.into.set(chunk.subarray(offset, offset + take), current.filled);
        current.filled += take;
        offset += take;
        if (current.filled === current.into.byteLength) {
          made.current = null;
          current.call?.resolve(current.into);
        }
      }
    });
    return made;
  };

  return {
    serve(serveLookup) {
      lookup = serveLookup;
    },
    fetch(input, timeoutMs) {
      if (closed) return Promise.reject(notFound(input));
      return new Promise<PartitionPart>((resolve, reject) => {
        const connection = connectionTo(input.resourceId);
        const id = (nextId = (nextId + 1) >>> 0);
        const timer = clock.setTimeout(() => {
          // Its answer may still come: it is dropped (its id is no longer pending).
          connection.pending.delete(id);
          reject(timedOut(input, timeoutMs));
        }, timeoutMs);
        connection.pending.set(id, { input, resolve, reject, timer });
        const body = Buffer.from(
          JSON.stringify({ id, partitionId: input.partitionId, subpartition: input.subpartition }),
        );
        const frame = Buffer.alloc(4 + body.length);
        frame.writeUInt32LE(body.length, 0);
        body.copy(frame, 4);
        connection.socket.write(frame);
      });
    },
    close() {
      if (closed) return;
      closed = true;
      server.close();
      rmSync(path, { force: true });
      for (const connection of connections.values()) {
        failAll(connection, unreachable('this TaskExecutor is closing'));
        connection.socket.destroy();
      }
      connections.clear();
    },
  };
}
