/**
 * A strict reader of the Prometheus text exposition format (version 0.0.4), for tests: every line
 * is a `# HELP`, a `# TYPE`, a blank line or a sample `name{label="value",…} number`; anything else
 * fails the test, so a malformed exposition cannot pass.
 */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Exposition {
  readonly types: ReadonlyMap<string, string>;
  readonly help: ReadonlyMap<string, string>;
  readonly samples: readonly Sample[];
  /** The value of the one sample of `name` whose labels include `labels`; throws when there is not exactly one. */
  value(name: string, labels?: Record<string, string>): number;
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)$`);
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/;

export function parsePrometheusText(text: string): Exposition {
  const types = new Map<string, string>();
  const help = new Map<string, string>();
  const samples: Sample[] = [];
  text.split('\n').forEach((line, i) => {
    if (line === '') return;
    const comment = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (comment) {
      if (comment[1] === 'TYPE' && !['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(comment[3]!))
        throw new Error(`line ${i + 1}: unknown type ${comment[3]}`);
      (comment[1] === 'HELP' ? help : types).set(comment[2]!, comment[3]!);
      return;
    }
    const sample = SAMPLE.exec(line);
    if (!sample) throw new Error(`line ${i + 1} is not Prometheus text: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    let rest = sample[2] ?? '';
    while (rest !== '') {
      const label = LABEL.exec(rest);
      if (!label) throw new Error(`line ${i + 1}: bad labels ${JSON.stringify(sample[2])}`);
      labels[label[1]!] = label[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
      rest = rest.slice(label[0].length);
    }
    const raw = sample[3]!;
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : raw === 'NaN' ? NaN : Number(raw);
    if (Number.isNaN(value) && raw !== 'NaN') throw new Error(`line ${i + 1}: bad value ${raw}`);
    const family = [...types.keys()].find((name) => sample[1] === name || sample[1]!.startsWith(`${name}_`));
    if (family === undefined) throw new Error(`line ${i + 1}: sample ${sample[1]} before its # TYPE`);
    samples.push({ name: sample[1]!, labels, value });
  });
  return {
    types,
    help,
    samples,
    value(name, wanted = {}) {
      const found = samples.filter(
        (s) => s.name === name && Object.entries(wanted).every(([k, v]) => s.labels[k] === v),
      );
      if (found.length !== 1)
        throw new Error(`${found.length} samples of ${name} ${JSON.stringify(wanted)}, expected 1`);
      return found[0]!.value;
    },
  };
}
