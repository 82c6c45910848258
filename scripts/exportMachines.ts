/**
 * `npm run machines [-- --out <dir>]`: writes each statechart's config as JSON that pastes into the
 * Stately visualizer (stately.ai/viz), every guard, action, delay and actor by its name
 * (scripts/visualizerJSON.ts; context, input and output factories are dropped: the visualizer
 * needs only the shape). test/scripts/visualizerJSON.test.ts walks each exported file alone.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { machines } from '../machines/index.js';
import { machineToVisualizerJSON } from './visualizerJSON.js';

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
    writeFileSync(file, `${machineToVisualizerJSON(machine)}\n`);
    console.log(`${name.padEnd(16)} → ${file}`);
  }
  console.log('\nPaste a file into https://stately.ai/viz (Import → JSON) to see the statechart.');
}

main(process.argv.slice(2));
