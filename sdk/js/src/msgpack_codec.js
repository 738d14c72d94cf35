// PROTOCOL.md "Binary encoding: MessagePack" on @msgpack/msgpack: binary
// frames, subprotocol parley.v1.msgpack. The application sees the bodies a
// JSON connection would: a `bin` inside a body is {"$bin": "<standard base64,
// padded>"}, and such an object (one key, canonical base64) in a body the
// application sends goes out as `bin` (so do Uint8Arrays). Malformed server
// input throws, and the client reports it as a `bad_frame` error; the bounds
// are the server's: values nest at most 1,024 deep (a scalar counting as a
// level), no declared count or length past what the frame could hold, map
// keys str only, no ext, floats finite, `bin` only inside a body.
//
// One limit of the library: strings with invalid UTF-8 decode with U+FFFD in
// place of the bad bytes (TextDecoder's default) rather than failing the frame.
import { Decoder, Encoder } from '@msgpack/msgpack';
import { binBytes, toBase64 } from './codec.js';

const MAX_DEPTH = 1024;

// Decoders by power-of-two frame size: a declared count or length above the
// size is refused before anything is set aside for it (the library allocates
// an array of the declared count).
const decoders = new Map();
function decoderFor(size) {
  let cap = 64;
  while (cap < size) cap *= 2;
  let d = decoders.get(cap);
  if (!d) {
    d = new Decoder({
      maxStrLength: cap, maxBinLength: cap, maxArrayLength: cap, maxMapLength: cap, maxExtLength: 0,
      mapKeyConverter: (key) => {
        if (typeof key !== 'string') throw new Error('map keys must be strings');
        return key;
      },
    });
    decoders.set(cap, d);
  }
  return d;
}

const encoder = new Encoder({ ignoreUndefined: true });

// What the decoder gave, checked and with bins inside bodies as {$bin}:
// returns the value to use (the same one unless it is a bin).
function fromWire(v, depth, body) {
  if (depth > MAX_DEPTH) throw new Error('values nest too deep');
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error('floats must be finite');
    return v;
  }
  if (v instanceof Uint8Array) {
    if (!body) throw new Error('bin is allowed only inside a body');
    return { $bin: toBase64(v) };
  }
  if (Array.isArray(v)) {
    for (let k = 0; k < v.length; k++) v[k] = fromWire(v[k], depth + 1, body);
    return v;
  }
  // Anything else the library makes (a Date of the timestamp ext, ExtData) is an ext.
  if (typeof v !== 'object' || Object.getPrototypeOf(v) !== Object.prototype) throw new Error('ext values are not allowed');
  for (const k in v) v[k] = fromWire(v[k], depth + 1, body || k === 'body');
  return v;
}

// What goes on the wire for `v`: inside a body a canonical {$bin} becomes a
// Uint8Array (bin); values with toJSON (Date) become what JSON would send.
// Copies only what changes.
function toWire(v, depth, body) {
  if (depth > MAX_DEPTH) throw new Error('values nest too deep');
  if (v === null || typeof v !== 'object' || v instanceof Uint8Array) return v;
  if (typeof v.toJSON === 'function') return toWire(v.toJSON(), depth, body);
  if (Array.isArray(v)) {
    let out = v;
    for (let k = 0; k < v.length; k++) {
      const w = toWire(v[k], depth + 1, body);
      if (w !== v[k]) {
        if (out === v) out = v.slice();
        out[k] = w;
      }
    }
    return out;
  }
  if (body) {
    const bytes = binBytes(v);
    if (bytes) return bytes;
  }
  let out = v;
  for (const k in v) {
    const w = toWire(v[k], depth + 1, body || k === 'body');
    if (w !== v[k]) {
      if (out === v) out = { ...v };
      out[k] = w;
    }
  }
  return out;
}

export const msgpackCodec = {
  name: 'msgpack',
  binary: true,
  subprotocol: 'parley.v1.msgpack',
  /** The frame as MessagePack (a Uint8Array). */
  encode: (frame) => encoder.encode(toWire(frame, 0, false)),
  /** One server frame: a map, or an array of maps. Throws on malformed input. */
  decode(data) {
    if (typeof data === 'string') throw new Error('a text frame on a MessagePack connection');
    const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
    const v = decoderFor(bytes.length).decode(bytes);
    if (v === null || typeof v !== 'object' || v instanceof Uint8Array) throw new Error('a frame is a map or an array of maps');
    if (Array.isArray(v)) {
      for (const e of v) {
        if (e === null || typeof e !== 'object' || Array.isArray(e) || e instanceof Uint8Array) {
          throw new Error('a batch holds maps only');
        }
      }
    }
    return fromWire(v, 1, false);
  },
};

