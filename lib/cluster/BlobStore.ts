/**
 * BlobStore (Flink's BlobServer, on JetStream's object store): task code stored content-addressed
 * by its SHA-256, and the messages too large for one NATS message (natsTransport.ts), both in
 * buckets of the cluster (`slotwise-<clusterId>-code`, `slotwise-<clusterId>-messages`).
 *
 * Code is put once per hash (a second put of the same bytes finds it there) and verified on every
 * get: bytes that do not hash to their name are refused, never run. A large message is read once
 * and then removed.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { Objm, type ObjectStore } from '@nats-io/obj';
import { IllegalArgumentError } from '../core/errors.js';
import type { LargeMessageStore } from '../rpc/natsTransport.js';
import { openedDespiteRace, retriedWhileElecting } from './jetStreamErrors.js';

const SHA256 = /^[0-9a-f]{64}$/;

/** Lowercase hex SHA-256 of `bytes`. */
export function sha256Hex(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Throws an IllegalArgumentError unless `value` is a lowercase hex SHA-256. */
export function checkSha256(value: unknown, argument: string): string {
  if (typeof value !== 'string' || !SHA256.test(value)) {
    throw new IllegalArgumentError(
      'invalid-value',
      `${argument} must be a SHA-256 as 64 lowercase hex digits, got ${JSON.stringify(value)}`,
      { argument, value },
    );
  }
  return value;
}

export class BlobStore {
  readonly #code: ObjectStore;
  readonly #messages: ObjectStore;
  /** Hashes known to be stored (by us or found there): a put of the same code costs no round trip. */
  readonly #known = new Set<string>();

  private constructor(code: ObjectStore, messages: ObjectStore) {
    this.#code = code;
    this.#messages = messages;
  }

  /**
   * Opens (creating if need be, with `replicas`: high-availability.nats.replicas) the cluster's buckets. Needs
   * JetStream on the server.
   */
  static async open(connection: NatsConnection, clusterId: string, replicas = 1): Promise<BlobStore> {
    const objm = new Objm(connection);
    try {
      const [code, messages] = await Promise.all([
        openedDespiteRace(() => objm.create(`slotwise-${clusterId}-code`, { replicas })),
        openedDespiteRace(() => objm.create(`slotwise-${clusterId}-messages`, { replicas })),
      ]);
      return new BlobStore(code, messages);
    } catch (error) {
      throw new IllegalArgumentError(
        'invalid-value',
        `cannot open the object store of cluster '${clusterId}' (is JetStream enabled on the NATS ` +
          `server? start it with -js): ${error instanceof Error ? error.message : String(error)}`,
        {
          argument: 'nats',
        },
      );
    }
  }

  /** Stores task code under its SHA-256 (once); resolves with the hash. */
  async putCode(bytes: Uint8Array): Promise<string> {
    const hash = sha256Hex(bytes);
    if (this.#known.has(hash)) return hash;
    const name = `sha256-${hash}`;
    if ((await this.#code.info(name)) === null) await this.#code.putBlob({ name }, bytes);
    this.#known.add(hash);
    return hash;
  }

  /**
   * The code stored under `sha256`, verified; IllegalArgumentError when absent ('missing') or corrupt
   * ('invalid-value').
   */
  async getCode(sha256: string): Promise<Uint8Array> {
    checkSha256(sha256, 'sha256');
    const bytes = await retriedWhileElecting(() => this.#code.getBlob(`sha256-${sha256}`));
    if (bytes === null)
      throw new IllegalArgumentError('missing', `task code sha256-${sha256} is not in the cluster's object store`, {
        argument: 'sha256',
        value: sha256,
      });
    const actual = sha256Hex(bytes);
    if (actual !== sha256)
      throw new IllegalArgumentError(
        'invalid-value',
        `task code sha256-${sha256} came back from the object store with SHA-256 ${actual}: refused, not run`,
        { argument: 'sha256', value: sha256, actual },
      );
    return bytes;
  }

  /** The store natsTransport.ts sends messages over max_payload through. */
  readonly messages: LargeMessageStore = {
    put: async (bytes) => {
      const name = `message-${randomUUID()}`;
      await this.#messages.putBlob({ name }, bytes);
      return name;
    },
    take: async (key) => {
      const bytes = await this.#messages.getBlob(key);
      if (bytes === null) throw new Error(`large message ${key} is not in the object store`);
      // Read once: removing it is housekeeping, not worth failing the delivery for.
      void this.#messages.delete(key).catch(() => {});
      return bytes;
    },
  };
}
