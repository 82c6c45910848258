// The spec reporter, plus one plain closing line that CI can read: "N passed, N failed".
// (mocha's own closing lines are coloured and split; a run that executed no test must show "0 passed".)
'use strict';
const Mocha = require('mocha');

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    runner.once('end', () => {
      const { passes = 0, failures = 0, pending = 0 } = runner.stats ?? {};
      const skipped = pending > 0 ? `, ${pending} pending` : '';
      process.stdout.write(`\n${passes} passed, ${failures} failed${skipped}\n`);
    });
  }
}

module.exports = SummaryReporter;
