/**
 * The data plane of a session cluster: how a consumer's TaskManager reads a result partition from the producer's over
 * NATS (Flink's credit-based network stack: PartitionRequest, AddCredit, BufferResponse, CancelPartitionRequest).
 * Data never crosses a Link: each TaskExecutor serves its partitions on a subject of its own,
 * `slotwise.<clusterId>.data.<resourceId>`, and takes the chunks of what it reads on `….data.<resourceId>.in`, over a
 * NATS connection of its own (TaskManager.ts), so heartbeats, slot reports and RPC never wait behind data.
 *
 * A read is one stream: the reader asks (`request`, granting `credit` chunks), the producer sends chunks numbered from
 * 0 while it has credit, the reader grants more as it copies them (`credit`) and says `cancel` when it gives up; a
 * producer that holds no such partition answers `refused`. Every field travels as a NATS header; a chunk's body is
 * the bytes. Only this file's types cross between PartitionStreamServer and PartitionStreamReader.
 */

/** What a reader or a server needs of NATS: publish with headers, subscribe, the server's largest message. */
export interface DataBus {
  /** The server's `max_payload`, in bytes: a chunk and its headers stay below it. */
  readonly maxPayload: number;
  /** Sends `body` with `fields` as headers; throws when the connection is closed. */
  publish(subject: string, body: Uint8Array, fields: Readonly<Record<string, string>>): void;
  /** Calls `onMessage` with each message's body and a header reader ('' for a header not there). */
  subscribe(
    subject: string,
    onMessage: (body: Uint8Array, header: (name: string) => string) => void,
  ): { unsubscribe(): void };
}

export const HEADER_KIND = 'Slotwise-Data';
/** The reader's id of the stream: unique among its reads. */
export const HEADER_STREAM = 'Slotwise-Stream';
/** The subject the reader takes chunks on (a request's). */
export const HEADER_REPLY = 'Slotwise-Reply';
export const HEADER_PARTITION = 'Slotwise-Partition';
export const HEADER_SUBPARTITION = 'Slotwise-Subpartition';
/** Chunks granted (a request's initial credit, or more). */
export const HEADER_CREDIT = 'Slotwise-Credit';
/** A chunk's number, from 0, and how many there are and how many bytes in all. */
export const HEADER_SEQ = 'Slotwise-Seq';
export const HEADER_CHUNKS = 'Slotwise-Chunks';
export const HEADER_TOTAL = 'Slotwise-Total';
/** Why a request was refused: `not-found`, `not-serializable`. */
export const HEADER_REASON = 'Slotwise-Reason';

export type DataMessageKind = 'request' | 'credit' | 'cancel' | 'chunk' | 'refused';

/** The most chunks a reader may grant at once; a request granting more is granted this many. */
export const MAX_CREDIT = 64;
/** Chunks a reader grants by default (Flink: 2 exclusive buffers per channel plus 8 floating per gate). */
export const DEFAULT_CREDIT = 8;
/** A chunk's bytes by default; smaller when the server's `max_payload` asks for it. */
export const DEFAULT_CHUNK_BYTES = 512 * 1024;
/** Room left below `max_payload` for a chunk's subject and headers. */
const HEADER_ROOM = 4 * 1024;

/** The bytes of one chunk on a server whose largest message is `maxPayload`. */
export function chunkBytesFor(maxPayload: number, wanted = DEFAULT_CHUNK_BYTES): number {
  return Math.max(1024, Math.min(wanted, maxPayload - HEADER_ROOM));
}

/** The subject a TaskExecutor serves its partitions on (requests, credit, cancels). */
export const dataSubject = (clusterId: string, resourceId: string): string =>
  `slotwise.${clusterId}.data.${resourceId}`;

/** The subject a TaskExecutor takes the chunks of its reads on. */
export const dataInSubject = (clusterId: string, resourceId: string): string =>
  `${dataSubject(clusterId, resourceId)}.in`;
