// The real server for the SDK's tests: one owner, the conformance harness's.
export * from '../../../conformance/lib/server.mjs';
