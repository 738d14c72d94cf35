// The harness's own robustness (sdk/conformance/README.md): a driver that
// ignores `exit`, SIGTERM and the end of stdin is killed with its process
// group; a scenario that never finishes fails by its own deadline, with a
// message naming it and the drivers killed, instead of hanging its file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Driver } from '../lib/driver.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const STUBBORN = `node ${join(here, 'stubborn_driver.mjs')}`;

// Running, not a zombie waiting for its new parent to reap it.
function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

function withoutTestContext(env) {
  const copy = { ...env };
  delete copy.NODE_TEST_CONTEXT;
  return copy;
}

function pids(file) {
  return readFileSync(file, 'utf8').trim().split(/\s+/).map(Number);
}

test('a driver that will not exit is killed with its process group', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'harness-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  process.env.STUBBORN_PIDS = join(dir, 'pids');
  const d = new Driver('stubborn', STUBBORN);
  await d.start();
  const [driverPid, childPid] = pids(process.env.STUBBORN_PIDS);
  assert.ok(alive(driverPid) && alive(childPid));
  const t0 = Date.now();
  const r = await d.stop(500);
  assert.equal(r.signal, 'SIGKILL', 'killed, not exited');
  assert.ok(Date.now() - t0 < 3000, `stop took ${Date.now() - t0} ms`);
  await new Promise((res) => setTimeout(res, 100));
  assert.ok(!alive(childPid), 'the child the driver started went with its group');
});

test('a scenario that hangs fails by its deadline and leaves nothing running', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'harness-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const pidFile = join(dir, 'pids');
  const t0 = Date.now();
  const { code, out } = await new Promise((res) => {
    execFile(process.execPath, ['--test', '--test-reporter=spec', join(here, 'fixtures', 'hangs.test.mjs')], {
      // Without node:test's NODE_TEST_CONTEXT: the child is a run of its own.
      env: { ...withoutTestContext(process.env), SDK_DRIVER: STUBBORN, STUBBORN_PIDS: pidFile },
      timeout: 30000,
    }, (err, stdout, stderr) => res({ code: err ? err.code : 0, out: stdout + stderr }));
  });
  const took = Date.now() - t0;
  assert.notEqual(code, 0, 'the hanging scenario failed');
  assert.match(out, /scenario "a scenario that hangs" did not finish within 1500 ms/);
  assert.match(out, /killing the process groups of the drivers still running: stubborn/);
  assert.ok(took < 15000, `the file took ${took} ms`);
  const [driverPid, childPid] = pids(pidFile);
  await new Promise((res) => setTimeout(res, 100));
  assert.ok(!alive(driverPid) && !alive(childPid), 'the driver and its child are gone');
});
