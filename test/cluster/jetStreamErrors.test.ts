/**
 * How a session cluster opens its streams when other processes open them at the same moment
 * (lib/cluster/jetStreamErrors.ts): a create that lost the race to add a stream is tried once more, any
 * other refusal is not.
 */
import { JetStreamApiError } from '@nats-io/jetstream';
import { expect } from 'chai';
import { openedDespiteRace } from '../../lib/cluster/jetStreamErrors.js';
import { rejection } from '../rpc/support/transports.js';

/** JetStream's refusal `errCode` as the client raises it. */
const refusal = (errCode: number, description: string) =>
  new JetStreamApiError({ code: 400, err_code: errCode, description });

describe('openedDespiteRace', () => {
  for (const [errCode, description] of [
    [10065, 'subjects overlap with an existing stream'],
    [10058, 'stream name already in use with a different configuration'],
  ] as const) {
    it(`opens again after "${description}" (another process added the stream first)`, async () => {
      let tries = 0;
      const opened = await openedDespiteRace(async () => {
        if (++tries === 1) throw refusal(errCode, description);
        return 'the stream the other process added';
      });
      expect([opened, tries]).to.deep.equal(['the stream the other process added', 2]);
    });
  }

  /** What openedDespiteRace rejects with, and how often it tried, when every try is refused with `errCode`. */
  async function alwaysRefused(errCode: number, description: string): Promise<[string, number]> {
    let tries = 0;
    const error = await rejection(
      openedDespiteRace(async () => {
        tries++;
        throw refusal(errCode, description);
      }),
    );
    return [error.message, tries];
  }

  it('tries once more only: a second refusal is the caller’s', async () => {
    const description = 'subjects overlap with an existing stream';
    expect(await alwaysRefused(10065, description)).to.deep.equal([description, 2]);
  });

  it('does not try again after any other refusal (JetStream not enabled, a wrong name)', async () => {
    const description = 'jetstream not enabled for account';
    expect(await alwaysRefused(10039, description)).to.deep.equal([description, 1]);
  });
});
