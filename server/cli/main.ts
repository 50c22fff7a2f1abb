#!/usr/bin/env node
// The operator's command line: `vault-standalone <command> [options]`.
// Exit codes: 0 ok, 1 failure, 2 usage error.
import { runCli } from './run.js';

const code = await runCli(process.argv.slice(2));
// Let stdout and stderr drain, then exit even if a library left a handle open.
await new Promise<void>((done) => process.stdout.write('', () => done()));
await new Promise<void>((done) => process.stderr.write('', () => done()));
process.exit(code);
