// The real server for the SDK's tests: one owner, the conformance harness's.
// serverForFile() is the per-file set-up the test files share.
import { before, after } from 'node:test';
import { WebSocket } from 'ws';
import { ParleyClient } from '../../src/index.js';
import { ParleyServer, token } from '../../../conformance/lib/server.mjs';

export * from '../../../conformance/lib/server.mjs';

/**
 * One real server for a test file (`opts`: ParleyServer's, e.g. `tenants`),
 * started before its first test and disposed after its last, with every
 * client `client()` made (or `track()` was given) closed first, so a test
 * that fails before its own close() leaves nothing running.
 * `file.server` is the ParleyServer once started.
 */
export function serverForFile(opts = {}) {
  const clients = [];
  const file = {
    server: null,
    /** A client of `user` on this file's server (`opts`: ParleyClient options). */
    client(user, clientOpts = {}) {
      return file.track(new ParleyClient({ url: file.server.url, token: token(user), WebSocket, ...clientOpts }));
    },
    /** Closes `c` (any ParleyClient, e.g. one on a scripted server) after the file's tests. */
    track(c) {
      clients.push(c);
      return c;
    },
  };
  before(async () => {
    file.server = new ParleyServer(opts); // set first: disposed even when it fails to start
    await file.server.start();
  });
  after(async () => {
    for (const c of clients) c.close();
    await file.server?.dispose();
  });
  return file;
}
