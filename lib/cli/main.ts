#!/usr/bin/env node
/** The `slotwise` command (package.json `bin`): runCli over this process's streams and environment. */
import { runCli } from './runCli.js';

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (line) => process.stdout.write(`${line}\n`),
  stderr: (line) => process.stderr.write(`${line}\n`),
  env: process.env,
  cwd: process.cwd(),
});
