// The npm `ws` package for the bench's Node clients: bench/node_modules (bench/setup.sh,
// which also brings Bun) or, on a machine that only ran scripts/setup.sh (record.sh
// --quick in the test suite), tests/node/node_modules, pinned to the same version.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export function loadWs() {
  for (const p of ['./node_modules/ws', '../tests/node/node_modules/ws']) {
    try { return require(p); } catch { /* next */ }
  }
  throw new Error('npm ws not found (bench/setup.sh or scripts/setup_node.sh)');
}
