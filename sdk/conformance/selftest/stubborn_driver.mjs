#!/usr/bin/env node
// A driver that will not go (for the harness's own test): it says ready,
// starts a child in its process group, ignores `exit`, SIGTERM and the end of
// stdin, and keeps running. Its pid and its child's go to STUBBORN_PIDS.
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';

const child = spawn('sleep', ['300'], { stdio: 'ignore' });
if (process.env.STUBBORN_PIDS) appendFileSync(process.env.STUBBORN_PIDS, `${process.pid} ${child.pid}\n`);
process.on('SIGTERM', () => {});
process.stdin.on('data', () => {});
process.stdin.on('end', () => {});
setInterval(() => {}, 1000);
process.stdout.write(`${JSON.stringify({ ev: 'ready', sdk: 'stubborn', version: '0' })}\n`);
