/**
 * `npm run machines [-- --out <dir>]`: writes each statechart's config as JSON that pastes into the
 * Stately visualizer (stately.ai/viz). Named guards, actions, actors and delays stay as their
 * names; inline functions become `{ "type": "<name>" }`; context and output factories are dropped
 * (the visualizer needs only the shape).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { machines } from '../machines/index.js';

function machineToVisualizerJSON(config: object): string {
  return JSON.stringify(
    config,
    (key, value) => {
      if ((key === 'context' || key === 'output') && typeof value === 'function') return undefined;
      if (typeof value === 'function') return { type: value.name || 'inline' };
      return value;
    },
    2,
  );
}

function main(argv: string[]): void {
  const at = argv.indexOf('--out');
  const outDir = resolve(at >= 0 && argv[at + 1] ? argv[at + 1]! : 'statecharts');
  if (argv.includes('--help')) {
    console.log('usage: npm run machines [-- --out <dir>]   (default dir: ./statecharts)');
    return;
  }
  mkdirSync(outDir, { recursive: true });
  for (const [name, machine] of Object.entries(machines)) {
    const file = join(outDir, `${name}.json`);
    writeFileSync(file, machineToVisualizerJSON(machine.config) + '\n');
    console.log(`${name.padEnd(16)} → ${file}`);
  }
  console.log('\nPaste a file into https://stately.ai/viz (Import → JSON) to see the statechart.');
}

main(process.argv.slice(2));
